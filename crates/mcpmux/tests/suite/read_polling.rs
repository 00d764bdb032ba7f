//! How a hub reads a stdio server's answers, polling or not (`HubOptions::read_spin`): calls
//! are answered either way, and a budget asked far too large is capped, so a poll never holds
//! the runtime past a call's deadline. These tests run on a current-thread runtime, where a
//! poll holds the only thread.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::time::{Duration, Instant};

use mcpmux::{CallOptions, Error};
use serde_json::json;
use support::*;

/// A hub polling `spin` answers sequential and concurrent calls, and a hanging call still
/// times out at its deadline.
async fn answers_and_keeps_deadlines(spin: Duration) {
    let hub = started_with(
        vec![fast_testserver("p", &[])],
        hub_options().with_read_spin(spin),
    )
    .await;
    for i in 0..50 {
        let text = format!("call {i}");
        assert_eq!(echo(&hub, "p", &text).await.unwrap(), text);
    }
    let texts: Vec<String> = (0..8).map(|i| format!("c{i}")).collect();
    let calls = texts.iter().map(|text| echo(&hub, "p", text));
    let answers = futures::future::join_all(calls).await;
    for (text, answer) in texts.iter().zip(answers) {
        assert_eq!(&answer.unwrap(), text);
    }
    let sent = Instant::now();
    let err = hub
        .call_with(
            "mcp__p__hang",
            json!({}),
            CallOptions::default().with_timeout(ms(300)),
        )
        .await
        .unwrap_err();
    let elapsed = sent.elapsed();
    assert!(matches!(err, Error::Timeout { .. }), "{err}");
    assert!(elapsed >= ms(300) && elapsed < ms(2000), "{elapsed:?}");
    assert_eq!(echo(&hub, "p", "after").await.unwrap(), "after");
    hub.shutdown().await;
}

#[tokio::test]
async fn with_polling_off_calls_are_answered_and_deadlines_hold() {
    answers_and_keeps_deadlines(Duration::ZERO).await;
}

#[tokio::test]
async fn a_budget_of_an_hour_is_capped_and_holds_no_deadline_back() {
    answers_and_keeps_deadlines(Duration::from_secs(3600)).await;
}
