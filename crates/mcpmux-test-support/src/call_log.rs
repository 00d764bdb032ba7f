//! The test server's call log (`--call-log FILE`): one JSON line per call it received (`tool`,
//! `arguments`) or cancellation it saw (`cancelled`). What reached the server is read there,
//! never guessed from the client side.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use super::poll::{eventually, eventually_blocking};

/// Every line of the log at `path` (none while it does not exist yet).
pub fn call_log(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// How many calls to `tool` the log holds; with `text`, only those whose `text` argument it is.
pub fn logged_calls(path: &Path, tool: &str, text: Option<&str>) -> usize {
    call_log(path)
        .iter()
        .filter(|l| l["tool"] == tool)
        .filter(|l| text.is_none_or(|t| l["arguments"]["text"] == t))
        .count()
}

/// Waits up to `within` for the log to satisfy `pred`; panics with the log after.
pub async fn wait_log(path: &Path, within: Duration, pred: impl Fn(&[Value]) -> bool) {
    let matched = eventually(within, Duration::from_millis(5), || {
        pred(&call_log(path)).then_some(())
    })
    .await;
    assert!(
        matched.is_some(),
        "call log never matched: {:?}",
        call_log(path)
    );
}

/// Waits up to `within` for a call to `tool` in the log, off any runtime; panics after.
pub fn wait_for_call_blocking(path: &Path, tool: &str, within: Duration) {
    let called = eventually_blocking(within, Duration::from_millis(10), || {
        (logged_calls(path, tool, None) > 0).then_some(())
    });
    assert!(
        called.is_some(),
        "the server never received a call to {tool}: {:?}",
        call_log(path)
    );
}
