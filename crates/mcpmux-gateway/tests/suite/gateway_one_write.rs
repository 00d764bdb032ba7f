//! A `POST /mcp` answer in one write, with raw HTTP: a call that ends at once comes back as
//! one body of known length (not chunked), and a long call's progress still reaches the
//! client as it happens, before the call's answer. The clients declare elicitation, which
//! sends their calls through rmcp's SSE answers (the inline path's own are `gateway_inline`).

use crate::support;

use std::time::{Duration, Instant};

use mcpmux_gateway::GatewayOptions;
use serde_json::json;
use support::*;

#[tokio::test]
async fn a_call_answered_at_once_comes_back_as_one_body_of_known_length() {
    // A window no call of the test server outlasts, even on a loaded machine.
    let served = Served::start(
        vec![fast_testserver("t", &[])],
        GatewayOptions::default(),
        |http| http.one_write_window = Duration::from_secs(5),
    )
    .await;
    let client = reqwest::Client::new();
    let id = open_session_declaring(&client, &served.url, json!({"elicitation": {}})).await;
    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "mcp__t__echo", "arguments": {"text": "whole"},
                   "_meta": {"progressToken": "w"}}});
    let answer = post_by(&client, &served.url, &call, &in_session(&id)).await;
    assert_eq!(answer.status(), 200);
    let headers = answer.headers().clone();
    assert!(
        headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream"),
        "{headers:?}"
    );
    assert!(headers.get("transfer-encoding").is_none(), "{headers:?}");
    let length: usize = headers["content-length"].to_str().unwrap().parse().unwrap();
    let body = answer.text().await.unwrap();
    assert_eq!(body.len(), length);
    assert!(body.contains(r#""text":"whole""#), "{body}");
    served.stop().await;
}

#[tokio::test]
async fn a_long_call_s_progress_reaches_the_client_before_its_answer() {
    // The default window, far shorter than the call's first step.
    let served = Served::hosted(vec![fast_testserver("t", &[])], GatewayOptions::default()).await;
    let client = reqwest::Client::new();
    let id = open_session_declaring(&client, &served.url, json!({"elicitation": {}})).await;
    let call = json!({"jsonrpc": "2.0", "id": 8, "method": "tools/call",
        "params": {"name": "mcp__t__slow", "arguments": {"ms": 800, "steps": 2},
                   "_meta": {"progressToken": "p1"}}});
    let started = Instant::now();
    let mut answer = post_by(&client, &served.url, &call, &in_session(&id)).await;
    assert_eq!(answer.status(), 200);
    let (mut seen, mut progress_at, mut answer_at) = (String::new(), None, None);
    while let Some(chunk) = tokio::time::timeout(Duration::from_secs(10), answer.chunk())
        .await
        .unwrap()
        .unwrap()
    {
        seen.push_str(&String::from_utf8_lossy(&chunk));
        if progress_at.is_none() && seen.contains("notifications/progress") {
            progress_at = Some(started.elapsed());
        }
        if answer_at.is_none() && seen.contains(r#""id":8"#) {
            answer_at = Some(started.elapsed());
        }
    }
    let (progress_at, answer_at) = (progress_at.expect(&seen), answer_at.expect(&seen));
    // The first step comes at about 400 ms of 800: long before the answer, not with it.
    assert!(
        progress_at + Duration::from_millis(200) < answer_at,
        "progress at {progress_at:?}, answer at {answer_at:?}: {seen}"
    );
    served.stop().await;
}
