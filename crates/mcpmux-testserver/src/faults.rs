//! Fault knobs that act on the process or on a tool call: startup faults, the call log,
//! crash-after / crash-on, the per-call delay, and the HTTP failure switch.
//!
//! Every fault here is real behaviour of this process (it exits, sleeps, writes files, fails
//! HTTP requests); none of it knows about transports' framing or about individual tools.

use std::{
    fs::File,
    io::Write,
    path::Path,
    sync::{
        Mutex,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use anyhow::Context;
use rmcp::model::JsonObject;
use tokio_util::sync::CancellationToken;

/// Exit code of a deliberate crash (`--crash-after`, `--crash-on`).
pub const CRASH_EXIT_CODE: i32 = 3;

/// Write `line` to stderr and exit the process at once, without answering anything.
pub fn exit_now(line: &str, code: i32) -> ! {
    let mut stderr = std::io::stderr().lock();
    let _ = writeln!(stderr, "{line}");
    let _ = stderr.flush();
    std::process::exit(code)
}

/// Startup faults, applied in this order before any input is read: stderr lines, the startup
/// delay, then the startup exit.
pub async fn run_startup(
    stderr_lines: Option<u64>,
    startup_delay_ms: Option<u64>,
    exit_at_startup: Option<i32>,
) {
    if let Some(lines) = stderr_lines {
        let mut stderr = std::io::stderr().lock();
        for index in 1..=lines {
            let _ = writeln!(stderr, "testserver stderr line {index}");
        }
        let _ = stderr.flush();
    }
    if let Some(ms) = startup_delay_ms {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
    if let Some(code) = exit_at_startup {
        exit_now(
            &format!("testserver: exiting at startup with code {code}"),
            code,
        );
    }
}

/// `--ignore-sigterm`: only SIGKILL stops the process from now on.
pub fn ignore_sigterm() -> anyhow::Result<()> {
    // SAFETY: installing SIG_IGN for SIGTERM touches no Rust state; it is the documented way
    // to ignore a signal and is inherited by nothing we rely on.
    let previous = unsafe { libc::signal(libc::SIGTERM, libc::SIG_IGN) };
    anyhow::ensure!(previous != libc::SIG_ERR, "signal(SIGTERM, SIG_IGN) failed");
    Ok(())
}

/// `--call-log FILE`: one JSON line per `tools/call`, written before the call is handled, and
/// one `{"cancelled": TOOL}` line when `hang` or `slow` is cancelled by the client.
#[derive(Debug)]
pub struct CallLog {
    file: Mutex<File>,
}

impl CallLog {
    pub fn open(path: &Path) -> anyhow::Result<Self> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .with_context(|| format!("opening call log {}", path.display()))?;
        Ok(Self {
            file: Mutex::new(file),
        })
    }

    /// Append the call. Failures are reported on stderr, never to the client.
    pub fn record(&self, tool: &str, arguments: Option<&JsonObject>) {
        let mut line = call_log_line(tool, arguments);
        line.push('\n');
        // One write of the whole line on an O_APPEND file: lines never interleave.
        let written = match self.file.lock() {
            Ok(mut file) => file.write_all(line.as_bytes()).and_then(|()| file.flush()),
            Err(poisoned) => {
                let mut file = poisoned.into_inner();
                file.write_all(line.as_bytes()).and_then(|()| file.flush())
            }
        };
        if let Err(error) = written {
            tracing::error!(%error, "cannot write the call log");
        }
    }
}

impl CallLog {
    /// Records that the client cancelled a call of `tool` (tests prove cancellation arrived).
    pub fn record_cancelled(&self, tool: &str) {
        self.record_event("cancelled", tool);
    }

    /// Records `{KIND: WHAT}`: a cancellation, a subscription, an unsubscription.
    pub fn record_event(&self, kind: &str, what: &str) {
        let line = format!("{}\n", serde_json::json!({ kind: what }));
        let written = match self.file.lock() {
            Ok(mut file) => file.write_all(line.as_bytes()).and_then(|()| file.flush()),
            Err(poisoned) => {
                let mut file = poisoned.into_inner();
                file.write_all(line.as_bytes()).and_then(|()| file.flush())
            }
        };
        if let Err(error) = written {
            tracing::error!(%error, "cannot write the call log");
        }
    }
}

/// The call log's line for one call (without the newline).
pub fn call_log_line(tool: &str, arguments: Option<&JsonObject>) -> String {
    serde_json::json!({ "tool": tool, "arguments": arguments }).to_string()
}

/// Faults that act on every `tools/call`.
#[derive(Debug, Default)]
pub struct CallFaults {
    pub crash_after: Option<u64>,
    pub crash_on: Option<String>,
    pub slow_ms: Option<u64>,
    answered: AtomicU64,
}

impl CallFaults {
    pub fn new(crash_after: Option<u64>, crash_on: Option<String>, slow_ms: Option<u64>) -> Self {
        Self {
            crash_after,
            crash_on,
            slow_ms,
            answered: AtomicU64::new(0),
        }
    }

    /// Called when a call arrives (after the call log): exits the process when a crash is due.
    pub fn before_call(&self, tool: &str) {
        if let Some(limit) = self.crash_after
            && self.answered.load(Ordering::SeqCst) >= limit
        {
            exit_now(
                &format!("testserver: crashing after {limit} calls"),
                CRASH_EXIT_CODE,
            );
        }
        if self.crash_on.as_deref() == Some(tool) {
            exit_now(
                &format!("testserver: crashing on a call to {tool}"),
                CRASH_EXIT_CODE,
            );
        }
    }

    /// Called when a call's answer is ready: applies `--slow-ms` (stopping early on
    /// cancellation) and counts the answer.
    pub async fn after_call(&self, cancelled: &CancellationToken) {
        if let Some(ms) = self.slow_ms {
            tokio::select! {
                () = tokio::time::sleep(Duration::from_millis(ms)) => {}
                () = cancelled.cancelled() => {}
            }
        }
        self.answered.fetch_add(1, Ordering::SeqCst);
    }
}

/// The HTTP failure switch: `--http-fail`/`--http-fail-after` at startup, `POST /admin/fail`
/// and `POST /admin/heal` at run time.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct HttpFailure {
    /// The status to answer with; `None` when healthy.
    pub status: Option<u16>,
    /// Requests still let through before failing starts.
    pub pass_before_failing: u64,
    /// Failures left before healing by itself; `None` fails until healed.
    pub remaining: Option<u64>,
}

impl HttpFailure {
    /// Decide one request: `None` lets it through, `Some(status)` fails it.
    pub fn next_request(&mut self) -> Option<u16> {
        let status = self.status?;
        if self.pass_before_failing > 0 {
            self.pass_before_failing -= 1;
            return None;
        }
        match self.remaining {
            Some(0) => {
                *self = Self::default();
                return None;
            }
            Some(left) if left <= 1 => *self = Self::default(),
            Some(left) => self.remaining = Some(left - 1),
            None => {}
        }
        Some(status)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn call_log_lines_are_json() {
        let mut arguments = JsonObject::new();
        arguments.insert("text".into(), serde_json::json!("hi"));
        let line = call_log_line("echo", Some(&arguments));
        let value: serde_json::Value = serde_json::from_str(&line).unwrap_or_default();
        assert_eq!(
            value,
            serde_json::json!({"tool": "echo", "arguments": {"text": "hi"}})
        );
        let value: serde_json::Value =
            serde_json::from_str(&call_log_line("pid", None)).unwrap_or_default();
        assert_eq!(value, serde_json::json!({"tool": "pid", "arguments": null}));
    }

    #[test]
    fn http_failure_after_n_requests_then_forever() {
        let mut failure = HttpFailure {
            status: Some(500),
            pass_before_failing: 2,
            remaining: None,
        };
        let seen: Vec<_> = (0..4).map(|_| failure.next_request()).collect();
        assert_eq!(seen, [None, None, Some(500), Some(500)]);
    }

    #[test]
    fn http_failure_with_a_count_heals_itself() {
        let mut failure = HttpFailure {
            status: Some(404),
            pass_before_failing: 0,
            remaining: Some(2),
        };
        let seen: Vec<_> = (0..4).map(|_| failure.next_request()).collect();
        assert_eq!(seen, [Some(404), Some(404), None, None]);
        assert_eq!(failure, HttpFailure::default());
    }

    #[test]
    fn healthy_switch_lets_everything_through() {
        let mut failure = HttpFailure::default();
        assert_eq!(failure.next_request(), None);
    }
}
