//! Plain requests on an established `/mcp` session answered inline (`inline.rs`), over raw
//! HTTP and rmcp's own client: a call comes back as `application/json` with its id, with a
//! progress token too when no step came before its answer; a call's steps come on its own
//! answer's SSE stream, in order, before its answer, and a client gone mid-stream cancels it
//! upstream; a client the gateway could ask mid-call still goes through rmcp as SSE; an
//! unknown or another identity's session is 404;
//! an oversize body is 413 and a deep or broken one a client error, the session serving on;
//! a client's `notifications/cancelled` ends a call answered inline.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::net::IpAddr;
use std::time::{Duration, Instant};

use mcpmux_gateway::GatewayOptions;
use serde_json::{Value, json};
use support::*;

fn echo(id: u64, text: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "mcp__t__echo", "arguments": {"text": text}}})
}

fn content_type(answer: &reqwest::Response) -> String {
    answer.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_string()
}

async fn served() -> Served {
    Served::start(
        vec![fast_testserver("t", &[])],
        GatewayOptions::default(),
        |http| http.max_body_bytes = 64 * 1024,
    )
    .await
}

#[tokio::test]
async fn a_plain_call_on_an_established_session_is_answered_as_json() {
    let served = served().await;
    let client = reqwest::Client::new();
    let id = open_session(&client, &served.url, &[]).await;
    for n in 0..3 {
        let answer = post_by(
            &client,
            &served.url,
            &echo(10 + n, "plain"),
            &in_session(&id),
        )
        .await;
        assert_eq!(answer.status(), 200);
        assert_eq!(content_type(&answer), "application/json");
        // Whole, with its length in the head: not chunked.
        assert!(
            answer.headers().get("transfer-encoding").is_none(),
            "{:?}",
            answer.headers()
        );
        let length = answer.headers()["content-length"]
            .to_str()
            .unwrap()
            .to_owned();
        let bytes = answer.bytes().await.unwrap();
        assert_eq!(length, bytes.len().to_string());
        let body: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(body["id"], 10 + n, "{body}");
        assert_eq!(body["result"]["content"][0]["text"], "plain", "{body}");
    }
    let list = json!({"jsonrpc": "2.0", "id": "l", "method": "tools/list"});
    let answer = post_by(&client, &served.url, &list, &in_session(&id)).await;
    assert_eq!(content_type(&answer), "application/json");
    let body: Value = answer.json().await.unwrap();
    assert_eq!(body["id"], "l");
    assert!(
        body["result"]["tools"].as_array().unwrap().len() > 1,
        "{body}"
    );
    // An unknown tool: a JSON-RPC answer of its own, not a transport failure.
    let unknown = json!({"jsonrpc": "2.0", "id": 99, "method": "tools/call",
        "params": {"name": "mcp__t__nope", "arguments": {}}});
    let answer = post_by(&client, &served.url, &unknown, &in_session(&id)).await;
    assert_eq!(answer.status(), 200);
    let body: Value = answer.json().await.unwrap();
    assert_eq!(body["id"], 99);
    assert!(
        body.get("error").is_some() || body["result"]["isError"] == true,
        "{body}"
    );
    served.stop().await;
}

#[tokio::test]
async fn a_call_asking_for_progress_gets_its_steps_on_its_own_answer_then_the_answer() {
    let dir = tempfile::tempdir().unwrap();
    let (served, log) = served_with_call_log(dir.path()).await;
    let client = reqwest::Client::new();
    let id = open_session(&client, &served.url, &[]).await;
    // No step before the answer: plain JSON, as without a token.
    let mut call = echo(5, "progress");
    call["params"]["_meta"] = json!({"progressToken": "p"});
    let answer = post_by(&client, &served.url, &call, &in_session(&id)).await;
    assert_eq!(answer.status(), 200);
    assert_eq!(content_type(&answer), "application/json");
    let body: Value = answer.json().await.unwrap();
    assert_eq!(body["result"]["content"][0]["text"], "progress", "{body}");
    // Three steps: each on the call's own stream, in order, then the answer, last.
    let slow = json!({"jsonrpc": "2.0", "id": 6, "method": "tools/call",
        "params": {"name": "mcp__t__slow", "arguments": {"ms": 300, "steps": 3},
                   "_meta": {"progressToken": "s"}}});
    let answer = post_by(&client, &served.url, &slow, &in_session(&id)).await;
    assert!(content_type(&answer).starts_with("text/event-stream"));
    let text = answer.text().await.unwrap();
    let events: Vec<Value> = text
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter(|data| !data.trim().is_empty())
        .map(|data| serde_json::from_str(data.trim()).unwrap())
        .collect();
    let steps: Vec<_> = events
        .iter()
        .filter(|e| e["method"] == "notifications/progress")
        .map(|e| {
            assert_eq!(e["params"]["progressToken"], "s", "{e}");
            e["params"]["progress"].as_f64().unwrap()
        })
        .collect();
    assert_eq!(steps, [1.0, 2.0, 3.0], "{text}");
    let last = events.last().unwrap();
    assert_eq!(last["id"], 6, "{text}");
    assert_eq!(last["result"]["content"][0]["text"], "done after 3 steps");
    // A client gone after the first step: the call is cancelled upstream.
    let long = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "mcp__t__slow", "arguments": {"ms": 60_000, "steps": 600},
                   "_meta": {"progressToken": "l"}}});
    let mut answer = post_by(&client, &served.url, &long, &in_session(&id)).await;
    assert!(content_type(&answer).starts_with("text/event-stream"));
    let first = answer.chunk().await.unwrap().unwrap();
    assert!(
        String::from_utf8_lossy(&first).contains("notifications/progress"),
        "{first:?}"
    );
    drop(answer);
    wait_log(&log, Duration::from_secs(20), |calls| {
        calls.iter().any(|c| c["cancelled"] == "slow")
    })
    .await;
    // The session serves on.
    let fine = post_by(&client, &served.url, &echo(8, "fine"), &in_session(&id)).await;
    assert!(fine.text().await.unwrap().contains(r#""text":"fine""#));
    served.stop().await;
}

#[tokio::test]
async fn a_client_the_gateway_could_ask_mid_call_still_goes_through_rmcp_as_sse() {
    let served = served().await;
    let client = reqwest::Client::new();
    // A client that declared elicitation may be asked mid-call: its calls are rmcp's.
    let asker = open_session_declaring(&client, &served.url, json!({"elicitation": {}})).await;
    let answer = post_by(&client, &served.url, &echo(6, "asked"), &in_session(&asker)).await;
    assert!(content_type(&answer).starts_with("text/event-stream"));
    assert!(answer.text().await.unwrap().contains(r#""text":"asked""#));
    served.stop().await;
}

#[tokio::test]
async fn an_unknown_or_another_identity_s_session_is_not_found() {
    let served = served().await;
    let alice = reqwest::Client::builder()
        .local_address("127.0.0.1".parse::<IpAddr>().unwrap())
        .build()
        .unwrap();
    let mallory = reqwest::Client::builder()
        .local_address("127.0.0.2".parse::<IpAddr>().unwrap())
        .build()
        .unwrap();
    let id = open_session(&alice, &served.url, &[]).await;
    let stolen = post_by(&mallory, &served.url, &echo(1, "x"), &in_session(&id)).await;
    assert_eq!(stolen.status(), 404);
    let unknown = post_by(&alice, &served.url, &echo(1, "x"), &in_session("no-such")).await;
    assert_eq!(unknown.status(), 404);
    // The owner is still served inline.
    let mine = post_by(&alice, &served.url, &echo(2, "mine"), &in_session(&id)).await;
    assert_eq!(content_type(&mine), "application/json");
    served.stop().await;
}

#[tokio::test]
async fn oversize_deep_and_broken_bodies_are_refused_and_the_session_serves_on() {
    let served = served().await;
    let client = reqwest::Client::new();
    let id = open_session(&client, &served.url, &[]).await;
    let huge = echo(1, &"x".repeat(100 * 1024));
    let answer = post_by(&client, &served.url, &huge, &in_session(&id)).await;
    assert_eq!(answer.status(), 413);
    // The same, without a length: read until the limit, not further.
    let chunks = futures::stream::iter((0..100).map(|_| Ok::<_, std::io::Error>(vec![b' '; 1024])));
    let mut request = client
        .post(&served.url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(reqwest::Body::wrap_stream(chunks));
    for (name, value) in in_session(&id) {
        request = request.header(name, value);
    }
    assert_eq!(request.send().await.unwrap().status(), 413);
    let deep = format!(
        r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{{"name":"mcp__t__echo","arguments":{{"text":{}1{}}}}}}}"#,
        "[".repeat(5000),
        "]".repeat(5000)
    );
    let mut request = client
        .post(&served.url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(deep);
    for (name, value) in in_session(&id) {
        request = request.header(name, value);
    }
    let answer = request.send().await.unwrap();
    assert!(answer.status().is_client_error(), "{}", answer.status());
    let broken = client
        .post(&served.url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", &id)
        .body(&b"\xff{not json"[..])
        .send()
        .await
        .unwrap();
    assert!(broken.status().is_client_error(), "{}", broken.status());
    let fine = post_by(&client, &served.url, &echo(4, "fine"), &in_session(&id)).await;
    assert_eq!(fine.status(), 200);
    assert!(fine.text().await.unwrap().contains(r#""text":"fine""#));
    served.stop().await;
}

#[tokio::test]
async fn a_client_s_cancellation_ends_a_call_answered_inline() {
    let served = served().await;
    let client = reqwest::Client::new();
    let id = open_session(&client, &served.url, &[]).await;
    let slow = json!({"jsonrpc": "2.0", "id": 41, "method": "tools/call",
        "params": {"name": "mcp__t__slow", "arguments": {"ms": 60_000}}});
    let started = Instant::now();
    let headers = in_session(&id);
    let url = served.url.clone();
    let call = post_by(&client, &url, &slow, &headers);
    tokio::pin!(call);
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 41, "reason": "test"}});
    // The call's start is not observable from here: the cancellation is sent until the call
    // ends (a notice for a request not running yet is ignored).
    let answer = loop {
        tokio::select! {
            answer = &mut call => break answer,
            sent = post_by(&client, &url, &cancel, &headers) => {
                assert_eq!(sent.status(), 202);
            }
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "never cancelled"
        );
    };
    assert_eq!(answer.status(), 200);
    assert!(started.elapsed() < Duration::from_secs(30));
    let body = answer.text().await.unwrap();
    assert!(body.contains(r#""id":41"#), "{body}");
    served.stop().await;
}
