//! The circuit breaker of one server: after `threshold` consecutive failed calls (transport
//! error, timeout, server error — not a tool answering `isError`) it opens; calls then fail at
//! once and the server's tools are withheld. After the cool-down the supervisor sends one probe
//! (`tools/list`); success closes the breaker, failure keeps it open for another cool-down.

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
    open_until: Option<Instant>,
    last_failure: Option<String>,
}

/// Shared by the callers (who report outcomes) and the supervisor (who probes).
#[derive(Debug)]
pub(crate) struct Breaker {
    config: BreakerConfig,
    state: Mutex<BreakerState>,
    /// Signalled when the breaker opens, so the supervisor schedules its probe.
    pub(crate) opened: Notify,
}

impl Breaker {
    pub(crate) fn new(config: BreakerConfig) -> Self {
        Self {
            config,
            state: Mutex::new(BreakerState::default()),
            opened: Notify::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BreakerState> {
        match self.state.lock() {
            Ok(state) => state,
            Err(poisoned) => poisoned.into_inner(),
        }
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
    }

    /// A call failed at the transport or protocol level. Returns true when this opened it.
    pub(crate) fn record_failure(&self, reason: &str) -> bool {
        let mut state = self.lock();
        state.consecutive_failures += 1;
        state.last_failure = Some(reason.to_string());
        if state.open_until.is_none() && state.consecutive_failures >= self.config.threshold {
            state.open_until = Some(Instant::now() + self.config.cool_down);
            drop(state);
            self.opened.notify_one();
            return true;
        }
        false
    }

    /// The probe after the cool-down succeeded: close.
    pub(crate) fn close(&self) {
        let mut state = self.lock();
        state.consecutive_failures = 0;
        state.open_until = None;
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
        format!(
            "circuit breaker open after {} consecutive failed calls{last}; probing again in {}",
            state.consecutive_failures.max(self.config.threshold),
            crate::error::fmt_duration(retry)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn breaker() -> Breaker {
        Breaker::new(BreakerConfig {
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
}
