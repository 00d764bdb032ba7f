//! A model endpoint is someone else's server: answers built to break the client — an endless
//! line, thousands of tool calls, JSON nested past any parser's stack, control characters in
//! a tool name — end in a bounded error or a bounded turn, never a hang, a panic or unbounded
//! memory. The endpoint here is a raw socket on 127.0.0.1 writing exactly these bytes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use mcpmux_agent::provider::{Anthropic, OpenAi, Provider, ProviderConfig, RetryPolicy};
use mcpmux_agent::{Agent, AgentEvent, AgentOptions, ProviderError, StopReason, Transcript};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// Serves every connection `head` (status line and headers) then `body`, the body made by a
/// function so that a huge one is streamed, not held.
async fn raw_endpoint(head: &'static str, body: fn(&mut Vec<u8>, usize) -> bool) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut request = vec![0u8; 64 * 1024];
                let _ = socket.read(&mut request).await;
                if socket.write_all(head.as_bytes()).await.is_err() {
                    return;
                }
                let mut chunk = Vec::new();
                for n in 0.. {
                    chunk.clear();
                    let more = body(&mut chunk, n);
                    if socket.write_all(&chunk).await.is_err() || !more {
                        break;
                    }
                }
            });
        }
    });
    format!("http://{addr}")
}

const SSE_HEAD: &str =
    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";

fn provider(base: String, anthropic: bool) -> Arc<dyn Provider> {
    let base = if anthropic {
        base
    } else {
        format!("{base}/v1")
    };
    let config = ProviderConfig::new("m", base)
        .with_retry(RetryPolicy::none())
        .with_idle_timeout(Duration::from_secs(5));
    if anthropic {
        Arc::new(Anthropic::new(config).unwrap())
    } else {
        Arc::new(OpenAi::new(config).unwrap())
    }
}

async fn run_against(provider: Arc<dyn Provider>) -> (mcpmux_agent::RunOutcome, Vec<AgentEvent>) {
    let hub = support::hub().await;
    let agent = Agent::new(
        hub.clone(),
        provider,
        AgentOptions::default().with_max_iterations(1),
    );
    let outcome = support::run(&agent, &mut Transcript::new(), Some("hi")).await;
    hub.shutdown().await;
    outcome
}

#[tokio::test]
async fn an_endless_event_is_cut_at_the_event_bound() {
    let base = raw_endpoint(SSE_HEAD, |chunk, n| {
        if n == 0 {
            chunk.extend_from_slice(b"data: ");
        }
        chunk.extend(std::iter::repeat_n(b'x', 1 << 20));
        n < 64
    })
    .await;
    let (outcome, _) = run_against(provider(base, false)).await;
    match &outcome.stop {
        StopReason::Provider(ProviderError::Malformed { message, .. }) => {
            assert!(
                message.contains("an event is longer than 1 MiB"),
                "{message}"
            );
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn an_endless_stream_of_small_events_is_cut_at_the_answer_bound() {
    let base = raw_endpoint(SSE_HEAD, |chunk, _| {
        chunk.extend_from_slice(b": keep-alive comment, over and over\n");
        true
    })
    .await;
    let (outcome, _) = run_against(provider(base, true)).await;
    match &outcome.stop {
        StopReason::Provider(ProviderError::Malformed { message, .. }) => {
            assert!(message.contains("larger than 16 MiB"), "{message}");
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn thousands_of_tool_calls_in_one_turn_are_capped() {
    let base = raw_endpoint(SSE_HEAD, |chunk, n| {
        if n < 5000 {
            let delta = serde_json::json!({"choices": [{"index": 0, "delta": {"tool_calls": [
                {"index": n, "id": format!("call_{n}"), "type": "function",
                 "function": {"name": "mcp__t__echo", "arguments": "{\"text\":\"x\"}"}}]}}]});
            chunk.extend_from_slice(format!("data: {delta}\n\n").as_bytes());
            true
        } else {
            chunk.extend_from_slice(b"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n");
            false
        }
    })
    .await;
    let (outcome, events) = run_against(provider(base, false)).await;
    assert_eq!(outcome.stop, StopReason::IterationLimit { max: 1 });
    assert_eq!(outcome.tool_calls, 128);
    let results = events
        .iter()
        .filter(|e| matches!(e, AgentEvent::ToolResult { .. }))
        .count();
    assert_eq!(results, 128);
}

#[tokio::test]
async fn json_nested_past_the_parsers_limit_is_an_error_not_a_stack_overflow() {
    let base = raw_endpoint(SSE_HEAD, |chunk, _| {
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        chunk.extend_from_slice(
            format!(
                "event: message_start\ndata: {{\"type\":\"message_start\",\"message\":{deep}}}\n\n"
            )
            .as_bytes(),
        );
        false
    })
    .await;
    let (outcome, _) = run_against(provider(base, true)).await;
    assert!(
        matches!(
            &outcome.stop,
            StopReason::Provider(ProviderError::Malformed { .. })
        ),
        "{:?}",
        outcome.stop
    );
}

#[tokio::test]
async fn a_tool_name_with_terminal_escapes_comes_back_escaped_in_the_error() {
    let base = raw_endpoint(SSE_HEAD, |chunk, _| {
        let delta = serde_json::json!({"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "id": "call_1", "type": "function",
             "function": {"name": "evil\u{1b}]0;pwned\u{7}", "arguments": "{}"}}]}, "finish_reason": "tool_calls"}]});
        chunk.extend_from_slice(format!("data: {delta}\n\ndata: [DONE]\n\n").as_bytes());
        false
    })
    .await;
    let (_, events) = run_against(provider(base, false)).await;
    let text = events
        .iter()
        .find_map(|e| match e {
            AgentEvent::ToolResult { text, .. } => Some(text.clone()),
            _ => None,
        })
        .unwrap();
    assert!(text.contains("no tool named"), "{text}");
    assert!(!text.contains('\u{1b}'), "{text:?}");
}

#[tokio::test]
async fn an_endpoint_that_never_answers_is_a_timeout_not_a_hang() {
    // Headers, then silence with the connection held open.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut request = vec![0u8; 64 * 1024];
                let _ = socket.read(&mut request).await;
                let _ = socket.write_all(SSE_HEAD.as_bytes()).await;
                tokio::time::sleep(Duration::from_secs(30)).await;
            });
        }
    });
    let provider = {
        let config = ProviderConfig::new("m", format!("{base}/v1"))
            .with_retry(RetryPolicy::none())
            .with_idle_timeout(Duration::from_millis(300));
        Arc::new(OpenAi::new(config).unwrap()) as Arc<dyn Provider>
    };
    let (outcome, _) = run_against(provider).await;
    assert!(
        matches!(
            &outcome.stop,
            StopReason::Provider(ProviderError::Timeout { .. })
        ),
        "{:?}",
        outcome.stop
    );
}
