//! A streamable-HTTP server's calls POSTed from the calling task beside rmcp's worker
//! (`transport/http_direct.rs`): what a user of the hub would notice of it. The calls carry
//! the library's own ids (from 2³²) and are in the wire log; what the server asks inside a
//! call, on the call's own SSE stream, still reaches the call's relay through rmcp's side; an
//! SSE answer over the bound fails its call with the reason and the session goes on; a JSON
//! answer (`--json-response`) is read as well as an SSE one; and a failure names no secret of
//! the URL. A session the server forgot is covered by `remote_restart.rs` and
//! `resilience_http.rs`, which now take this path.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use mcpmux::host::{HostError, Relay, Relayed};
use mcpmux::telemetry::wire::WireLog;
use mcpmux::{CallOptions, Host, ServerSpec};
use serde_json::{Value, json};
use support::*;

fn handshake_server(extra: &[&str]) -> ServerProcess {
    let mut args = vec!["--era", "handshake"];
    args.extend_from_slice(extra);
    testserver_http(&args)
}

/// A relay that answers every request the way `relay.rs`'s clients do.
struct Answering;

impl Relay for Answering {
    fn party(&self) -> u64 {
        7
    }

    fn relay(&self, request: Relayed) -> BoxFuture<'_, Result<Value, HostError>> {
        Box::pin(async move {
            match request.method.as_str() {
                "elicitation/create" => Ok(json!({"action": "accept", "content": {"name": "ada"}})),
                "sampling/createMessage" => Ok(json!({
                    "role": "assistant", "model": "ada-model",
                    "content": {"type": "text", "text": "hello from ada"}
                })),
                other => Err(HostError::new(-32601, format!("{other} not offered"))),
            }
        })
    }
}

#[tokio::test]
async fn a_call_over_streamable_http_carries_the_library_s_own_id_and_is_in_the_wire_log() {
    let server = handshake_server(&[]);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("wire.jsonl");
    let log = WireLog::open(&path, 1 << 20).unwrap();
    let hub = started_with(
        vec![fast_http("remote", &server.url)],
        hub_options().with_wire_log(log),
    )
    .await;
    assert_eq!(echo(&hub, "remote", "beside").await.unwrap(), "beside");
    hub.shutdown().await;
    let text = std::fs::read_to_string(&path).unwrap();
    let ids: Vec<i64> = text
        .lines()
        .filter(|line| line.contains("tools/call") || line.contains("\"beside\""))
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter_map(|record| {
            let message = record.get("message").cloned().unwrap_or(record);
            message.get("id").and_then(Value::as_i64)
        })
        .collect();
    assert!(
        ids.len() >= 2 && ids.iter().all(|id| *id >= 1 << 32),
        "the call and its answer, under an id from 2^32: {ids:?}\n{text}"
    );
}

#[tokio::test]
async fn what_the_server_asks_on_a_call_s_own_stream_reaches_the_call_s_relay() {
    let server = handshake_server(&[]);
    let hub = started_with(
        vec![fast_http("remote", &server.url)],
        hub_options().with_host(Host::relaying()),
    )
    .await;
    let relay: Arc<dyn Relay> = Arc::new(Answering);
    for (what, said) in [
        ("elicitation", "name: ada"),
        ("sampling", "reply: hello from ada (model ada-model)"),
    ] {
        let result = hub
            .call_with(
                "mcp__remote__ask_client",
                json!({"what": what}),
                CallOptions::default().with_relay(relay.clone()),
            )
            .await
            .unwrap();
        assert_eq!(result.to_text(), said);
    }
    assert_eq!(echo(&hub, "remote", "after").await.unwrap(), "after");
    hub.shutdown().await;
}

#[tokio::test]
async fn an_answer_over_the_bound_fails_its_call_with_the_reason_and_the_session_goes_on() {
    // An SSE event's bound is the hub's; a JSON body's is rmcp's 16 MiB (`HubOptions`).
    {
        let extra: &[&str] = &[];
        let server = handshake_server(extra);
        let hub = started_with(
            vec![fast_http("remote", &server.url)],
            hub_options().with_max_message_bytes(256 * 1024),
        )
        .await;
        let error = hub
            .call("mcp__remote__huge", json!({"mb": 1}))
            .await
            .expect_err("an answer over the bound was read");
        assert!(error.to_string().contains("over"), "{extra:?}: {error}");
        assert_eq!(
            echo(&hub, "remote", "next").await.unwrap(),
            "next",
            "{extra:?}"
        );
        hub.shutdown().await;
    }
}

#[tokio::test]
async fn a_json_answer_is_read_as_well_as_an_sse_one() {
    let server = handshake_server(&["--json-response"]);
    let hub = started(vec![fast_http("remote", &server.url)]).await;
    for i in 0..5 {
        let text = format!("json {i}");
        assert_eq!(echo(&hub, "remote", &text).await.unwrap(), text);
    }
    hub.shutdown().await;
}

#[tokio::test]
async fn a_failed_call_names_no_secret_of_the_url() {
    let server = handshake_server(&[]);
    let secret_url =
        server.url.replacen("http://", "http://user:hunter2@", 1) + "?key=sekrit-query";
    let hub = started(vec![
        ServerSpec::http("remote", &secret_url)
            .with_options(support::fast())
            .with_call_timeout(Duration::from_secs(5)),
    ])
    .await;
    assert_eq!(echo(&hub, "remote", "before").await.unwrap(), "before");
    admin(&server.url, "/admin/fail?status=500").await;
    let error = hub
        .call("mcp__remote__echo", json!({"text": "during"}))
        .await
        .expect_err("a failing server answered");
    let text = format!("{error} {error:?}");
    assert!(!text.contains("hunter2"), "{text}");
    assert!(!text.contains("sekrit"), "{text}");
    hub.shutdown().await;
}
