//! Answers too big to read (#32): a message over a transport's cap is skipped unread, and the
//! request it answers fails at once with "answer over …" — never at its deadline. Over stdio
//! (the line cap, 64 MiB, the real default: a few hundred milliseconds of pipe), streamable
//! HTTP (a JSON body over rmcp's 16 MiB, an SSE event over 64 MiB) and legacy SSE. A server
//! whose tool list is over the cap fails its start at once; after a call's answer was too big,
//! the server's next call works.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::time::{Duration, Instant};

use mcpmux::{CallOptions, Hub, ServerSpec};
use serde_json::json;

/// The line cap of a stdio server (`defaults::MAX_STDIO_FRAME`).
const LINE_CAP: usize = 64 << 20;

/// What each call and start is given: an answer that waited for it would show.
const DEADLINE: Duration = Duration::from_secs(20);

/// Well under [`DEADLINE`]: what a failure "at once" takes, 64 MiB of pipe included.
const AT_ONCE: Duration = Duration::from_secs(8);

/// Calls `huge_result` for `bytes` bytes under [`DEADLINE`]: the error, and how long it took.
async fn huge_call(hub: &Hub, server: &str, bytes: usize) -> (String, Duration) {
    let started = Instant::now();
    let outcome = hub
        .call_with(
            &format!("mcp__{server}__huge_result"),
            json!({ "bytes": bytes }),
            CallOptions::default().with_timeout(DEADLINE),
        )
        .await;
    let took = started.elapsed();
    match outcome {
        Err(error) => (error.to_string(), took),
        Ok(result) => panic!(
            "an answer over the cap was read ({} bytes of text)",
            result.to_text().len()
        ),
    }
}

fn stdio(args: &[&str]) -> ServerSpec {
    support::stdio_testserver("ts", args)
        .with_call_timeout(DEADLINE)
        .with_startup_timeout(DEADLINE)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_result_over_the_line_cap_fails_that_call_at_once_and_the_next_call_works() {
    let hub = support::started(vec![stdio(&["--huge-result"])]).await;
    let (error, took) = huge_call(&hub, "ts", LINE_CAP + 1024).await;
    assert!(took < AT_ONCE, "waited {took:?}: {error}");
    assert!(error.contains("answer over 64 MiB"), "{error}");
    assert_eq!(
        support::echo(&hub, "ts", "still here").await.unwrap(),
        "still here"
    );
    // A large answer under the cap is read (and cut to `max_result_bytes`, spilled whole).
    let result = hub
        .call("mcp__ts__huge_result", json!({ "bytes": 1 << 20 }))
        .await
        .unwrap();
    assert!(
        result.to_text().starts_with("AAAA"),
        "{}",
        &result.to_text()[..100]
    );
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_whose_tool_list_is_over_the_line_cap_fails_its_start_at_once() {
    let padding = (LINE_CAP + 1).to_string();
    let (state, took) = support::settled(stdio(&["--padded-tools-list", &padding])).await;
    let error = support::failed(state);
    assert!(took < AT_ONCE, "took {took:?} to fail: {error}");
    assert!(error.contains("tools/list failed"), "{error}");
    assert!(error.contains("answer over 64 MiB"), "{error}");
}
