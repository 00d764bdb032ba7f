//! The circuit breaker of one server: after `threshold` consecutive failed calls (transport
//! error, timeout, server error, the server crashing during the call — not a tool answering
//! `isError`) it opens; calls then fail at once and the server's tools are withheld. After the
//! cool-down the supervisor probes it (`tools/list`, or the reconnect of a server that crashed);
//! success half-opens the breaker — calls go out again, and the first one to fail opens it at
//! once, the first to succeed closes it — failure keeps it open for another cool-down.

use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

use crate::config::Breaker as BreakerConfig;

/// What the breaker says about a call about to be made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Admission {
    /// Go ahead.
    Allowed,
    /// Refused: open until `until`.
    Open { until: Instant },
}

#[derive(Debug, Default)]
struct BreakerState {
    consecutive_failures: u32,
    /// How many of the consecutive failures were the server crashing during a call.
    consecutive_crashes: u32,
    open_until: Option<Instant>,
    /// Half-open: a probe succeeded, and the next failed call opens the breaker again.
    trial: bool,
    last_failure: Option<String>,
}

/// Shared by the callers (who report outcomes) and the supervisor (who probes).
#[derive(Debug)]
pub(crate) struct CircuitBreaker {
    config: BreakerConfig,
    state: Mutex<BreakerState>,
    /// Signalled when the breaker opens, so the supervisor schedules its probe.
    pub(crate) opened: Notify,
}

impl CircuitBreaker {
    pub(crate) fn new(config: BreakerConfig) -> Self {
        Self {
            config,
            state: Mutex::new(BreakerState::default()),
            opened: Notify::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BreakerState> {
        crate::sync::lock(&self.state)
    }

    /// May a call go out now?
    pub(crate) fn admit(&self) -> Admission {
        match self.lock().open_until {
            Some(until) => Admission::Open { until },
            None => Admission::Allowed,
        }
    }

    /// Whether the breaker is open (tools withheld).
    pub(crate) fn is_open(&self) -> bool {
        self.lock().open_until.is_some()
    }

    /// A call reached the server and got an answer (an `isError` result counts as success).
    pub(crate) fn record_success(&self) {
        let mut state = self.lock();
        state.consecutive_failures = 0;
        state.consecutive_crashes = 0;
        state.trial = false;
    }

    /// A call failed at the transport or protocol level. Returns true when this opened it.
    pub(crate) fn record_failure(&self, reason: &str) -> bool {
        self.record(reason, false)
    }

    /// The server crashed (its session was lost) while a call was in flight on it: a failed
    /// call like any other. Returns true when this opened the breaker.
    pub(crate) fn record_crash(&self, reason: &str) -> bool {
        self.record(reason, true)
    }

    fn record(&self, reason: &str, crash: bool) -> bool {
        let mut state = self.lock();
        state.consecutive_failures += 1;
        if crash {
            state.consecutive_crashes += 1;
        }
        state.last_failure = Some(reason.to_string());
        let tripped = state.trial || state.consecutive_failures >= self.config.threshold;
        if state.open_until.is_none() && tripped {
            state.trial = false;
            state.open_until = Some(Instant::now() + self.config.cool_down);
            drop(state);
            self.opened.notify_one();
            return true;
        }
        false
    }

    /// Forget every failure: a fresh session after a loss no call caused.
    pub(crate) fn close(&self) {
        let mut state = self.lock();
        *state = BreakerState::default();
    }

    /// The probe after the cool-down succeeded: let calls out again, on trial. True when it
    /// was open.
    pub(crate) fn half_open(&self) -> bool {
        let mut state = self.lock();
        let was_open = state.open_until.take().is_some();
        if was_open {
            state.trial = true;
        }
        was_open
    }

    /// How many calls in a row have failed: the reconnect backoff of a server that keeps
    /// crashing during calls grows with it.
    pub(crate) fn streak(&self) -> u32 {
        self.lock().consecutive_failures
    }

    /// The probe failed: stay open for another cool-down.
    pub(crate) fn reopen(&self, reason: &str) {
        let mut state = self.lock();
        state.open_until = Some(Instant::now() + self.config.cool_down);
        state.last_failure = Some(reason.to_string());
    }

    /// When the next probe is due, if open.
    pub(crate) fn probe_due(&self) -> Option<Instant> {
        self.lock().open_until
    }

    /// A sentence for `mcpmux servers` and for refused calls.
    pub(crate) fn describe(&self) -> String {
        let state = self.lock();
        let last = state
            .last_failure
            .as_deref()
            .map(|f| format!(" (last: {f})"))
            .unwrap_or_default();
        let retry = state
            .open_until
            .map(|until| until.saturating_duration_since(Instant::now()))
            .unwrap_or(Duration::ZERO);
        let failures = state.consecutive_failures.max(1);
        let what = if state.consecutive_crashes >= failures {
            format!("the server crashed during {failures} consecutive calls")
        } else if state.consecutive_crashes > 0 {
            format!(
                "{failures} consecutive failed calls ({} of them crashed the server)",
                state.consecutive_crashes
            )
        } else {
            format!("{failures} consecutive failed calls")
        };
        format!(
            "circuit breaker open after {what}{last}; probing again in {}",
            crate::error::fmt_duration(retry)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn breaker() -> CircuitBreaker {
        CircuitBreaker::new(BreakerConfig {
            threshold: 3,
            cool_down: Duration::from_secs(30),
        })
    }

    #[tokio::test]
    async fn opens_after_the_threshold_and_a_success_resets_the_count() {
        let b = breaker();
        assert!(!b.record_failure("timeout"));
        assert!(!b.record_failure("timeout"));
        b.record_success();
        assert!(!b.record_failure("timeout"));
        assert!(!b.record_failure("timeout"));
        assert_eq!(b.admit(), Admission::Allowed);
        assert!(b.record_failure("server error"));
        assert!(matches!(b.admit(), Admission::Open { .. }));
        assert!(b.is_open());
        assert!(
            b.describe()
                .contains("3 consecutive failed calls (last: server error)")
        );
        // Further failures while open do not re-signal.
        assert!(!b.record_failure("x"));
    }

    #[tokio::test]
    async fn close_and_reopen() {
        let b = breaker();
        for _ in 0..3 {
            b.record_failure("boom");
        }
        let first = b.probe_due();
        assert!(first.is_some());
        b.reopen("still down");
        assert!(b.probe_due() >= first);
        b.close();
        assert_eq!(b.admit(), Admission::Allowed);
        assert!(!b.is_open());
    }

    #[tokio::test]
    async fn crashes_during_calls_open_it_and_name_the_crashes() {
        let b = breaker();
        assert!(!b.record_crash("exit status 3"));
        assert!(!b.record_crash("exit status 3"));
        assert_eq!(b.streak(), 2);
        assert!(b.record_crash("exit status 3"));
        assert!(
            b.describe()
                .contains("the server crashed during 3 consecutive calls (last: exit status 3)"),
            "{}",
            b.describe()
        );
    }

    #[tokio::test]
    async fn after_a_good_probe_one_failure_reopens_and_one_success_closes() {
        let b = breaker();
        for _ in 0..3 {
            b.record_crash("boom");
        }
        b.half_open();
        assert_eq!(b.admit(), Admission::Allowed);
        assert!(b.record_crash("boom again"));
        assert!(b.is_open());
        assert!(b.describe().contains("crashed during 4 consecutive calls"));
        b.half_open();
        b.record_success();
        assert!(!b.record_failure("timeout"));
        assert!(!b.record_failure("timeout"));
        assert!(!b.is_open());
        // Half-opening a closed breaker starts no trial.
        b.record_success();
        b.half_open();
        assert!(!b.record_failure("timeout"));
    }
}
