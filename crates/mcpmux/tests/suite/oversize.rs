//! Answers too big to read (#32): a message over a transport's cap is skipped unread, and the
//! request it answers fails at once with "answer over …" — never at its deadline. Over stdio,
//! streamable HTTP (an SSE event over the cap, a JSON body over rmcp's 16 MiB) and legacy SSE.
//! A server whose tool list is over the cap fails its start at once (the real 64 MiB cap:
//! spaces through a pipe take a fraction of a second); after a call's answer was too big, the
//! server's next call works. The calls run under a cap of 1 MiB
//! (`HubOptions::max_message_bytes`): 64 MiB through a debug build of rmcp's serialiser takes
//! seconds on a loaded machine, which a bound on "at once" would measure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::time::{Duration, Instant};

use mcpmux::{CallOptions, Hub, ServerSpec};
use serde_json::json;

/// The default cap on one message (`defaults::MAX_STDIO_FRAME`).
const DEFAULT_CAP: usize = 64 << 20;

/// The cap the calls run under.
const CAP: usize = 1 << 20;

/// What each call and start is given: an answer that waited for it would show.
const DEADLINE: Duration = Duration::from_secs(20);

/// Well under [`DEADLINE`]: what a failure "at once" takes.
const AT_ONCE: Duration = Duration::from_secs(5);

/// One of these tests at a time: each moves megabytes, and run together on two cores they
/// measure each other.
static HEAVY: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// A hub on `spec` reading messages of at most [`CAP`].
async fn capped(spec: ServerSpec) -> Hub {
    let options = support::hub_options().with_max_message_bytes(CAP);
    support::started_with(vec![spec], options).await
}

/// The server's next call works, and an answer just under the cap is read whole.
async fn still_works(hub: &Hub, server: &str) {
    assert_eq!(
        support::echo(hub, server, "still here").await.unwrap(),
        "still here"
    );
    let result = hub
        .call_with(
            &format!("mcp__{server}__huge_result"),
            json!({ "bytes": CAP - 1024 }),
            CallOptions::default().with_timeout(DEADLINE),
        )
        .await
        .unwrap();
    assert!(result.to_text().starts_with("AAAA"));
}

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
    let _one = HEAVY.lock().await;
    let hub = capped(stdio(&["--huge-result"])).await;
    let (error, took) = huge_call(&hub, "ts", CAP + 1024).await;
    assert!(took < AT_ONCE, "waited {took:?}: {error}");
    assert!(error.contains("answer over 1 MiB"), "{error}");
    still_works(&hub, "ts").await;
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_whose_tool_list_is_over_the_line_cap_fails_its_start_at_once() {
    let _one = HEAVY.lock().await;
    let padding = (DEFAULT_CAP + 1).to_string();
    let (state, took) = support::settled(stdio(&["--padded-tools-list", &padding])).await;
    let error = support::failed(state);
    assert!(took < AT_ONCE, "took {took:?} to fail: {error}");
    assert!(error.contains("tools/list failed"), "{error}");
    assert!(error.contains("answer over 64 MiB"), "{error}");
}

fn http(url: &str) -> ServerSpec {
    ServerSpec::http("ts", url)
        .with_call_timeout(DEADLINE)
        .with_startup_timeout(DEADLINE)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_sse_event_over_the_cap_fails_that_call_at_once_and_the_next_call_works() {
    let _one = HEAVY.lock().await;
    let server = support::testserver_http(&["--huge-result"]);
    let hub = capped(http(&server.url)).await;
    let (error, took) = huge_call(&hub, "ts", CAP + 1024).await;
    assert!(took < AT_ONCE, "waited {took:?}: {error}");
    assert!(error.contains("answer over 1 MiB"), "{error}");
    still_works(&hub, "ts").await;
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_sse_event_over_rmcps_bound_and_under_ours_is_read() {
    let _one = HEAVY.lock().await;
    let server = support::testserver_http(&["--huge-result"]);
    let hub = support::started(vec![http(&server.url)]).await;
    let result = hub
        .call_with(
            "mcp__ts__huge_result",
            json!({ "bytes": 17 << 20 }),
            CallOptions::default().with_timeout(DEADLINE),
        )
        .await
        .unwrap();
    assert!(result.to_text().starts_with("AAAA"));
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_json_body_over_the_cap_fails_that_call_at_once_and_the_next_call_works() {
    let _one = HEAVY.lock().await;
    let server = support::testserver_http(&["--huge-result", "--json-response"]);
    let hub = support::started(vec![http(&server.url)]).await;
    let (error, took) = huge_call(&hub, "ts", (16 << 20) + 1024).await;
    assert!(took < AT_ONCE, "waited {took:?}: {error}");
    assert!(error.contains("answer over 16 MiB"), "{error}");
    still_works(&hub, "ts").await;
    hub.shutdown().await;
}

/// A legacy HTTP+SSE server (2024-11-05) on 127.0.0.1, raw: no real one answers on cue. It
/// lists `echo`, `huge_result` (whose answer names its id last, as the TypeScript SDK
/// writes it) and `deep` (an answer nested 300 levels deep); with `padded_list`, its `tools/list` answer comes after [`CAP`] spaces. Returns
/// the SSE URL.
async fn legacy_sse_server(padded_list: bool) -> String {
    use std::sync::{Arc, Mutex};
    use tokio::io::AsyncWriteExt;
    use tokio::sync::mpsc;

    type Events = Arc<Mutex<Option<mpsc::UnboundedSender<String>>>>;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let events: Events = Arc::default();
    let answer = move |request: &serde_json::Value| -> Option<String> {
        let id = request.get("id")?.to_string();
        let text = |text: &str| json!({"content": [{"type": "text", "text": text}]});
        let result = match request["method"].as_str().unwrap_or_default() {
            "initialize" => json!({"protocolVersion": "2024-11-05",
                "capabilities": {"tools": {}}, "serverInfo": {"name": "old", "version": "1"}}),
            "tools/list" if padded_list => {
                return Some(format!(
                    "{}{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{\"tools\":[]}}}}",
                    " ".repeat(CAP + 1)
                ));
            }
            "tools/list" => json!({"tools": [
                {"name": "echo", "inputSchema": {"type": "object"}},
                {"name": "huge_result", "inputSchema": {"type": "object"}},
                {"name": "deep", "inputSchema": {"type": "object"}}]}),
            "tools/call" if request["params"]["name"] == "huge_result" => {
                let bytes = request["params"]["arguments"]["bytes"].as_u64().unwrap() as usize;
                return Some(format!(
                    "{{\"jsonrpc\":\"2.0\",\"result\":{},\"id\":{id}}}",
                    text(&"A".repeat(bytes))
                ));
            }
            "tools/call" if request["params"]["name"] == "deep" => {
                let deep = format!("{}{}", "[".repeat(300), "]".repeat(300));
                return Some(format!(
                    "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{\"content\":[],\"structuredContent\":{{\"x\":{deep}}}}}}}"
                ));
            }
            "tools/call" => text(request["params"]["arguments"]["text"].as_str().unwrap()),
            "ping" => json!({}),
            _ => {
                return Some(
                    json!({"jsonrpc": "2.0", "id": request["id"],
                        "error": {"code": -32601, "message": "Method not found"}})
                    .to_string(),
                );
            }
        };
        Some(json!({"jsonrpc": "2.0", "id": request["id"], "result": result}).to_string())
    };
    let answer = Arc::new(answer);
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let (events, answer) = (events.clone(), answer.clone());
            tokio::spawn(async move {
                let mut buffer = Vec::new();
                while let Some(request) = support::read_http_request(&mut socket, &mut buffer).await
                {
                    let head_end = request.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
                    if request.starts_with(b"GET ") {
                        let (tx, mut rx) = mpsc::unbounded_channel::<String>();
                        *events.lock().unwrap() = Some(tx);
                        let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
                                    cache-control: no-cache\r\n\r\n\
                                    event: endpoint\ndata: /message\n\n";
                        if socket.write_all(head.as_bytes()).await.is_err() {
                            return;
                        }
                        while let Some(data) = rx.recv().await {
                            let event = format!("event: message\ndata: {data}\n\n");
                            if socket.write_all(event.as_bytes()).await.is_err() {
                                return;
                            }
                        }
                        return;
                    }
                    let accepted = "HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n";
                    if socket.write_all(accepted.as_bytes()).await.is_err() {
                        return;
                    }
                    let message: serde_json::Value =
                        serde_json::from_slice(&request[head_end..]).unwrap();
                    if let Some(data) = answer(&message) {
                        let sender = events.lock().unwrap().clone();
                        if let Some(sender) = sender {
                            let _ = sender.send(data);
                        }
                    }
                }
            });
        }
    });
    format!("http://{addr}/sse")
}

fn legacy_sse(url: String) -> ServerSpec {
    ServerSpec::new(
        "old",
        mcpmux::TransportSpec::Sse {
            url,
            headers: Default::default(),
        },
    )
    .with_call_timeout(DEADLINE)
    .with_startup_timeout(DEADLINE)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_sse_event_over_the_cap_fails_that_call_at_once_and_the_next_call_works() {
    let _one = HEAVY.lock().await;
    let url = legacy_sse_server(false).await;
    let hub = capped(legacy_sse(url)).await;
    let (error, took) = huge_call(&hub, "old", CAP + 1024).await;
    assert!(took < AT_ONCE, "waited {took:?}: {error}");
    assert!(error.contains("answer over 1 MiB"), "{error}");
    still_works(&hub, "old").await;
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_sse_server_whose_tool_list_is_over_the_cap_fails_its_start_at_once() {
    let _one = HEAVY.lock().await;
    let url = legacy_sse_server(true).await;
    let started = Instant::now();
    let hub = Hub::start(
        vec![legacy_sse(url)],
        support::hub_options().with_max_message_bytes(CAP),
    )
    .unwrap();
    hub.wait_ready().await.unwrap();
    let took = started.elapsed();
    let error = support::failed(support::only_state(&hub));
    assert!(took < AT_ONCE, "took {took:?} to fail: {error}");
    assert!(error.contains("tools/list failed"), "{error}");
    assert!(error.contains("answer over 1 MiB"), "{error}");
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_sse_answer_nested_too_deep_fails_that_call_at_once() {
    let url = legacy_sse_server(false).await;
    let hub = capped(legacy_sse(url)).await;
    let started = Instant::now();
    let error = hub
        .call_with(
            "mcp__old__deep",
            json!({}),
            CallOptions::default().with_timeout(DEADLINE),
        )
        .await
        .unwrap_err()
        .to_string();
    assert!(
        started.elapsed() < AT_ONCE,
        "waited {:?}",
        started.elapsed()
    );
    assert!(
        error.contains("nests arrays and objects deeper than 127 levels"),
        "{error}"
    );
    still_works(&hub, "old").await;
    hub.shutdown().await;
}
