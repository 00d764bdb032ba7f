//! Progress reaches the caller before the call's answer, every step, even when the server
//! sends its last steps and the answer back to back and many calls are in flight: over stdio,
//! over streamable HTTP in the handshake era, and in the 2026-07-28 era.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use mcpmux::{CallOptions, Hub};
use serde_json::json;
use support::*;

const CALLS: usize = 200;
const STEPS: u64 = 5;

/// `CALLS` calls of `slow` with no time between its steps and its answer, 32 at a time;
/// each must have seen all its steps, in order, when its answer arrives.
async fn every_step_arrives_before_the_answer(hub: &Hub, server: &str) {
    let tool = format!("mcp__{server}__slow");
    let mut calls = tokio::task::JoinSet::new();
    let gate = std::sync::Arc::new(tokio::sync::Semaphore::new(32));
    for i in 0..CALLS {
        let (hub, tool, gate) = (hub.clone(), tool.clone(), gate.clone());
        calls.spawn(async move {
            let _slot = gate.acquire().await.unwrap();
            let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
            let result = hub
                .call_with(
                    &tool,
                    json!({"ms": 0, "steps": STEPS}),
                    CallOptions::default().with_progress(tx),
                )
                .await
                .unwrap();
            assert_eq!(result.to_text(), format!("done after {STEPS} steps"));
            // Taken without waiting: what arrives later arrived too late.
            let mut seen = Vec::new();
            while let Ok(step) = rx.try_recv() {
                seen.push(step.progress);
            }
            let expected: Vec<f64> = (1..=STEPS).map(|s| s as f64).collect();
            assert_eq!(seen, expected, "call {i} saw these steps before its answer");
        });
    }
    while let Some(done) = calls.join_next().await {
        done.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_stdio_the_last_steps_come_before_the_answer() {
    let hub = started(vec![stdio_testserver("t", &[])]).await;
    every_step_arrives_before_the_answer(&hub, "t").await;
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_streamable_http_the_last_steps_come_before_the_answer() {
    let handshake = support::testserver_http(&["--era", "handshake"]);
    let stateless = support::testserver_http(&[]);
    let hub = started(vec![
        fast_http("old", &handshake.url),
        fast_http("new", &stateless.url),
    ])
    .await;
    every_step_arrives_before_the_answer(&hub, "old").await;
    every_step_arrives_before_the_answer(&hub, "new").await;
    hub.shutdown().await;
}
