//! `mcpmux serve --http`'s legacy HTTP+SSE transport (`/sse`, MCP 2024-11-05) driven by the
//! official SDK clients for it: the TypeScript SDK's `SSEClientTransport` (1.32.2) and the
//! Python SDK's `sse_client` (2.3.0): listing and calling, progress and a cancellation on the
//! session's stream, a tool-list change heard on it. The door and the hostile cases (token,
//! unknown sessions, the cap, a reader that falls behind, bodies) are in the gateway's own
//! tests (`crates/mcpmux-gateway/tests/gateway_sse.rs`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mcpmux_test_support as support;

use std::time::Duration;

use serde_json::{Value, json};
use support::*;

/// The `/sse` address of a served gateway, as a client target.
fn sse_target(served: &Served) -> Value {
    let base = served.url.strip_suffix("/mcp").unwrap();
    json!({ "sse": format!("{base}/sse") })
}

#[test]
fn the_sdk_sse_clients_list_and_call_through_sse() {
    let sandbox = with_testserver(&[]);
    let served = Served::start(&sandbox, &[]);

    let ts = ts_client(sse_target(&served), list_and_echo());
    assert_listed_and_echoed(&ts, "TypeScript SSEClientTransport");

    let mut actions = json!([{"do": "version"}]);
    actions
        .as_array_mut()
        .unwrap()
        .extend(list_and_echo().as_array().unwrap().clone());
    let py = py_client(sse_target(&served), "legacy", actions);
    assert_eq!(py[0]["protocol"], "2025-11-25", "{py:?}");
    assert_listed_and_echoed(&py, "Python sse_client");

    let (status, stderr) = served.terminate(Duration::from_secs(10));
    assert!(status.success(), "{status}: {stderr}");
}

#[test]
fn over_sse_progress_comes_back_and_a_cancel_reaches_the_upstream_call() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls.jsonl");
    let sandbox = with_testserver(&["--call-log", log.to_str().unwrap()]);
    let served = Served::start(&sandbox, &[]);

    let slow = json!([{"do": "call", "name": "mcp__t__slow", "arguments": {"ms": 60, "steps": 3}}]);
    let lines = py_client(sse_target(&served), "legacy", slow);
    assert_eq!(
        text_of(&lines[0]["result"]),
        "done after 3 steps",
        "{lines:?}"
    );
    assert_eq!(lines[0]["progress"], 3, "{lines:?}");

    let cancel = json!([
        {"do": "progress_then_cancel", "name": "mcp__t__slow",
         "arguments": {"ms": 20000, "steps": 100}},
        {"do": "call", "name": "mcp__t__echo", "arguments": {"text": "after"}},
    ]);
    let lines = ts_client(sse_target(&served), cancel);
    assert_eq!(lines[0]["cancelled"], true, "{lines:?}");
    assert!(lines[0]["progress"].as_u64().unwrap() >= 1, "{lines:?}");
    wait_log_blocking(&log, |l| l.iter().any(|e| e["cancelled"] == "slow"));
}

#[test]
fn an_sse_session_hears_of_a_tool_list_change() {
    let sandbox = with_testserver(&[]);
    let served = Served::start(&sandbox, &[]);
    let change = json!([{"do": "call_expecting_list_changed", "name": "mcp__t__change_tools"}]);
    let lines = ts_client(sse_target(&served), change);
    assert_eq!(lines[0]["listChanged"], true, "{lines:?}");
    assert!(
        lines[0]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t == "mcp__t__extra"),
        "{lines:?}"
    );
}
