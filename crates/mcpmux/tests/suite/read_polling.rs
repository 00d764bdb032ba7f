//! How a hub reads a stdio server's answers, polling or not (`HubOptions::read_spin`): calls
//! are answered either way, and a budget asked far too large is capped, so a poll never holds
//! the runtime past a call's deadline. These tests run on a current-thread runtime, where a
//! poll holds the only thread.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::time::Duration;

use mcpmux::Error;
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
    echo_many(&hub, "p", 8).await;
    let (result, elapsed) = timed_hang(&hub, "p", ms(300)).await;
    let err = result.unwrap_err();
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
