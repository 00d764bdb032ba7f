//! The transports beyond stdio and streamable HTTP, against real servers on 127.0.0.1:
//! server-everything in its legacy HTTP+SSE mode, our test server over WebSocket, and a few
//! hand-written raw-socket servers for what no real server does on purpose (an endpoint on
//! another origin, no endpoint at all).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use futures::{SinkExt, StreamExt};
use mcpmux::config::ServerOptions;
use mcpmux::{Era, Error, ServerSpec, ServerState, TransportSpec};
use serde_json::json;
use support::RawReply;
use support::{started, state};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::handshake::server::{Request, Response};

fn sse(name: &str, url: &str) -> ServerSpec {
    ServerSpec::new(
        name,
        TransportSpec::Sse {
            url: url.to_string(),
            headers: BTreeMap::new(),
        },
    )
}

fn ws(name: &str, url: &str) -> ServerSpec {
    ServerSpec::new(
        name,
        TransportSpec::Ws {
            url: url.to_string(),
            headers: BTreeMap::new(),
        },
    )
}

/// server-everything in `sse` mode: `GET /sse`, messages POSTed to `/message?sessionId=…`.
fn everything_sse() -> support::ServerProcess {
    support::node_http(&support::everything_script(), &["sse"], "/sse")
}

/// Our test server over WebSocket on 127.0.0.1, with its URL.
fn testserver_ws(args: &[&str]) -> support::ServerProcess {
    let server = support::testserver_listening("--ws", args);
    assert!(server.url.starts_with("ws://127.0.0.1:"), "{}", server.url);
    server
}

/// No retry of a "safe" call after a lost connection: the test measures the failure itself,
/// not the wait for a reconnect that cannot come.
fn no_retries(spec: ServerSpec) -> ServerSpec {
    let mut options = ServerOptions::default();
    options.max_retries = 0;
    spec.with_options(options)
}

fn text(result: &mcpmux::ToolResult) -> String {
    result.to_text()
}

// ── legacy HTTP+SSE ──────────────────────────────────────────────────────────────────────────

#[tokio::test]
async fn everything_over_legacy_sse_lists_and_calls() {
    let server = everything_sse();
    let hub = started(vec![sse("everything", &server.url)]).await;
    let ServerState::Connected { era, tools, .. } = state(&hub, "everything") else {
        panic!("{:?}", state(&hub, "everything"));
    };
    assert_eq!(era, Era::Handshake);
    assert!(tools >= 5, "only {tools} tools");
    assert!(hub.tool("mcp__everything__echo").is_some());

    let echo = hub
        .call("mcp__everything__echo", json!({"message": "over sse"}))
        .await
        .unwrap();
    assert_eq!(text(&echo), "Echo: over sse");
    let sum = hub
        .call("mcp__everything__get-sum", json!({"a": 20, "b": 22}))
        .await
        .unwrap();
    assert!(text(&sum).contains("42"), "{}", text(&sum));

    // Concurrent calls share the one stream and each gets its own answer.
    let calls = (0..20).map(|i| {
        let hub = hub.clone();
        async move {
            let result = hub
                .call("mcp__everything__echo", json!({"message": format!("n{i}")}))
                .await
                .unwrap();
            assert_eq!(text(&result), format!("Echo: n{i}"));
        }
    });
    futures::future::join_all(calls).await;
    hub.shutdown().await;
}

#[tokio::test]
async fn a_refused_sse_post_ends_the_session_and_the_reconnect_runs_the_helper_again() {
    let server = everything_sse();
    // In front of server-everything: message POSTs without the token of the day get a 401.
    let accepted = std::sync::Arc::new(std::sync::Mutex::new("one".to_string()));
    let today = accepted.clone();
    let proxy = support::BreakingProxy::start(&server.url, move |request| {
        let wanted = format!("authorization: bearer {}\r\n", today.lock().unwrap());
        if request.starts_with("POST") && !request.to_lowercase().contains(&wanted) {
            support::Break::Unauthorized
        } else {
            support::Break::Relay
        }
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("token");
    std::fs::write(&file, "one").unwrap();
    let helper = format!(
        r#"printf '{{"Authorization": "Bearer %s"}}' "$(cat {})""#,
        file.display()
    );
    let mut server_options = ServerOptions::default();
    server_options.max_retries = 0;
    server_options.backoff.initial = Duration::from_millis(20);
    server_options.backoff.max = Duration::from_millis(100);
    let spec = sse("old", &proxy.url)
        .with_options(server_options)
        .with_auth(mcpmux::config::AuthSpec::default().with_headers_helper(helper));
    let hub = started(vec![spec]).await;
    let echo = |message: &'static str| {
        let hub = hub.clone();
        async move {
            hub.call("mcp__old__echo", json!({ "message": message }))
                .await
        }
    };
    assert_eq!(text(&echo("first").await.unwrap()), "Echo: first");

    // The server takes a new token, which the helper now prints: the refused call fails, the
    // session ends, and the reconnect runs the helper and works.
    *accepted.lock().unwrap() = "two".into();
    std::fs::write(&file, "two").unwrap();
    let refused = echo("refused").await.unwrap_err().to_string();
    assert!(refused.contains("server `old`"), "{refused}");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match echo("again").await {
            Ok(result) => {
                assert_eq!(text(&result), "Echo: again");
                break;
            }
            Err(e) => assert!(Instant::now() < deadline, "never came back: {e}"),
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    // The server moves on and the helper does not: the server is left needing auth, saying
    // how to give a token.
    *accepted.lock().unwrap() = "three".into();
    assert!(echo("refused again").await.is_err());
    let message =
        support::eventually(
            Duration::from_secs(10),
            Duration::from_millis(20),
            || match state(&hub, "old") {
                ServerState::NeedsAuth { message, .. } => Some(message),
                _ => None,
            },
        )
        .await
        .unwrap_or_else(|| panic!("not needing auth: {:?}", state(&hub, "old")));
    assert!(message.contains("HTTP 401"), "{message}");
    assert!(message.contains("`headersHelper`"), "{message}");
    hub.shutdown().await;
}

#[tokio::test]
async fn a_streamable_http_config_falls_back_to_legacy_sse_on_404() {
    // server-everything answers `POST /sse` with 404: the spec's signal for an old server.
    let server = everything_sse();
    let hub = started(vec![ServerSpec::http("everything", &server.url)]).await;
    assert!(
        matches!(state(&hub, "everything"), ServerState::Connected { .. }),
        "{:?}",
        state(&hub, "everything")
    );
    let echo = hub
        .call("mcp__everything__echo", json!({"message": "fallback"}))
        .await
        .unwrap();
    assert_eq!(text(&echo), "Echo: fallback");
    hub.shutdown().await;
}

#[tokio::test]
async fn an_sse_server_dying_mid_call_fails_the_call_promptly() {
    let server = everything_sse();
    let hub = started(vec![no_retries(sse("everything", &server.url))]).await;
    let pgid = server.child.id() as i32;
    let killer = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(500)).await;
        unsafe {
            libc::killpg(pgid, libc::SIGKILL);
        }
    });
    let started_at = Instant::now();
    let error = hub
        .call(
            "mcp__everything__trigger-long-running-operation",
            json!({"duration": 20, "steps": 20}),
        )
        .await
        .unwrap_err();
    killer.await.unwrap();
    assert!(
        started_at.elapsed() < Duration::from_secs(10),
        "the call took {:?}",
        started_at.elapsed()
    );
    assert!(matches!(error, Error::ConnectionLost { .. }), "{error}");
    let message = error.to_string();
    assert!(message.contains("server `everything`"), "{message}");
    drop(server);
    hub.shutdown().await;
}

#[tokio::test]
async fn a_wrong_sse_url_fails_with_the_status_and_a_hint() {
    let server = everything_sse();
    let wrong = server.url.replace("/sse", "/nope");
    let hub = started(vec![sse("everything", &wrong)]).await;
    let ServerState::Failed { error, .. } = state(&hub, "everything") else {
        panic!("{:?}", state(&hub, "everything"));
    };
    assert!(error.contains("HTTP 404"), "{error}");
    assert!(error.contains("/sse"), "{error}");
    hub.shutdown().await;
}

/// A raw HTTP/1.1 server: a `GET` gets an SSE stream of `body` (then the socket is held open
/// for a minute), a `POST` gets `202 Accepted`. Every request (head and body, lowercased) is
/// sent to the returned receiver. Returns its `/sse` URL.
async fn raw_sse_server(body: &'static str) -> (String, mpsc::UnboundedReceiver<String>) {
    let (seen, requests) = mpsc::unbounded_channel();
    let addr = support::raw_http_server(move |request| {
        let head = String::from_utf8_lossy(request).to_lowercase();
        let _ = seen.send(head.clone());
        if head.starts_with("post ") {
            return RawReply::Answer(
                "HTTP/1.1 202 Accepted\r\ncontent-length: 8\r\n\r\nAccepted".into(),
            );
        }
        RawReply::Stream(format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
             cache-control: no-cache\r\n\r\n{body}"
        ))
    })
    .await;
    (format!("http://{addr}/sse"), requests)
}

#[tokio::test]
async fn configured_headers_go_with_the_sse_get_and_every_post() {
    let (url, mut requests) = raw_sse_server("event: endpoint\ndata: /message?session=7\n\n").await;
    let mut headers = BTreeMap::new();
    headers.insert("X-Api-Key".to_string(), "secret-1".to_string());
    let spec = ServerSpec::new(
        "keyed",
        TransportSpec::Sse {
            url: url.clone(),
            headers,
        },
    )
    .with_startup_timeout(Duration::from_millis(1500));
    // This server never answers on its stream, so the handshake times out; what matters is
    // what reached it.
    let hub = started(vec![spec]).await;
    let get = requests.recv().await.unwrap();
    assert!(get.starts_with("get /sse "), "{get}");
    assert!(get.contains("x-api-key: secret-1"), "{get}");
    assert!(get.contains("accept: text/event-stream"), "{get}");
    let post = requests.recv().await.unwrap();
    assert!(post.starts_with("post /message?session=7 "), "{post}");
    assert!(post.contains("x-api-key: secret-1"), "{post}");
    assert!(post.contains("content-type: application/json"), "{post}");
    assert!(post.contains("\"jsonrpc\":\"2.0\""), "{post}");
    let ServerState::Failed { error, .. } = state(&hub, "keyed") else {
        panic!("{:?}", state(&hub, "keyed"));
    };
    assert!(error.contains("startup timeout"), "{error}");
    hub.shutdown().await;

    // A header the transport manages itself is a configuration error, named.
    let mut headers = BTreeMap::new();
    headers.insert("Accept".to_string(), "text/html".to_string());
    let hub = started(vec![ServerSpec::new(
        "clash",
        TransportSpec::Sse { url, headers },
    )])
    .await;
    let ServerState::Failed { error, .. } = state(&hub, "clash") else {
        panic!("{:?}", state(&hub, "clash"));
    };
    assert!(
        error.contains("header `Accept` is managed by the protocol"),
        "{error}"
    );
    hub.shutdown().await;
}

#[tokio::test]
async fn an_endpoint_on_another_origin_is_refused() {
    let (url, _requests) =
        raw_sse_server("event: endpoint\ndata: http://example.com/message\n\n").await;
    let hub = started(vec![sse("evil", &url)]).await;
    let ServerState::Failed { error, .. } = state(&hub, "evil") else {
        panic!("{:?}", state(&hub, "evil"));
    };
    assert!(error.contains("another origin"), "{error}");
    hub.shutdown().await;
}

#[tokio::test]
async fn a_stream_without_an_endpoint_event_fails_within_the_startup_timeout() {
    let (url, _requests) = raw_sse_server(": just a comment\n\n").await;
    let spec = sse("mute", &url).with_startup_timeout(Duration::from_millis(800));
    let started_at = Instant::now();
    let hub = started(vec![spec]).await;
    assert!(started_at.elapsed() < Duration::from_secs(5));
    let ServerState::Failed { error, .. } = state(&hub, "mute") else {
        panic!("{:?}", state(&hub, "mute"));
    };
    assert!(error.contains("no `endpoint` event"), "{error}");
    hub.shutdown().await;
}

// ── WebSocket ────────────────────────────────────────────────────────────────────────────────

#[tokio::test]
async fn testserver_over_websocket_lists_and_calls() {
    let server = testserver_ws(&[]);
    let hub = started(vec![ws("sock", &server.url)]).await;
    assert!(
        matches!(state(&hub, "sock"), ServerState::Connected { .. }),
        "{:?}",
        state(&hub, "sock")
    );
    assert!(hub.tool("mcp__sock__echo").is_some());
    assert!(hub.tool("mcp__sock__add").is_some());
    let echo = hub
        .call("mcp__sock__echo", json!({"text": "over ws"}))
        .await
        .unwrap();
    assert_eq!(text(&echo), "over ws");
    let sum = hub
        .call("mcp__sock__add", json!({"a": 2, "b": 40}))
        .await
        .unwrap();
    assert_eq!(text(&sum), "42");
    hub.shutdown().await;
}

#[tokio::test]
async fn testserver_over_websocket_in_the_handshake_era() {
    let server = testserver_ws(&["--era", "handshake", "--protocol-version", "2024-11-05"]);
    let hub = started(vec![ws("old", &server.url)]).await;
    let ServerState::Connected { era, version, .. } = state(&hub, "old") else {
        panic!("{:?}", state(&hub, "old"));
    };
    assert_eq!(era, Era::Handshake);
    assert_eq!(version, "2024-11-05");
    let echo = hub
        .call("mcp__old__echo", json!({"text": "hi"}))
        .await
        .unwrap();
    assert_eq!(text(&echo), "hi");
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_websocket_calls_get_their_own_answers() {
    let server = testserver_ws(&[]);
    let hub = started(vec![ws("sock", &server.url)]).await;
    let calls = (0..100).map(|i| {
        let hub = hub.clone();
        tokio::spawn(async move {
            let result = hub
                .call("mcp__sock__echo", json!({"text": format!("message {i}")}))
                .await
                .unwrap();
            assert_eq!(text(&result), format!("message {i}"));
        })
    });
    for call in futures::future::join_all(calls).await {
        call.unwrap();
    }
    // A result of several MiB crosses in (fragmented) frames.
    let huge = hub.call("mcp__sock__huge", json!({"mb": 3})).await.unwrap();
    assert!(!huge.is_error, "{huge:?}");
    hub.shutdown().await;
}

#[tokio::test]
async fn a_websocket_server_crashing_mid_call_fails_the_call_promptly() {
    let server = testserver_ws(&["--crash-on", "echo"]);
    let hub = started(vec![no_retries(ws("sock", &server.url))]).await;
    let started_at = Instant::now();
    let error = hub
        .call("mcp__sock__echo", json!({"text": "boom"}))
        .await
        .unwrap_err();
    assert!(
        started_at.elapsed() < Duration::from_secs(10),
        "{:?}",
        started_at.elapsed()
    );
    assert!(matches!(error, Error::ConnectionLost { .. }), "{error}");
    hub.shutdown().await;
}

#[tokio::test]
async fn a_websocket_url_that_is_not_a_websocket_fails_clearly() {
    // The streamable HTTP test server answers the upgrade request with an HTTP error.
    let http = support::testserver_http(&[]);
    let url = http.url.replacen("http://", "ws://", 1);
    let nothing = format!("ws://127.0.0.1:{}/mcp", support::free_port());
    // TLS to a plain listener: rustls is set up (no provider panic) and the failure is a value.
    let plain = testserver_ws(&[]);
    let tls = plain.url.replacen("ws://", "wss://", 1);
    let hub = started(vec![
        ws("http", &url),
        ws("nothing", &nothing),
        ws("tls", &tls),
    ])
    .await;
    let ServerState::Failed { error, .. } = state(&hub, "http") else {
        panic!("{:?}", state(&hub, "http"));
    };
    assert!(error.contains("refused with HTTP"), "{error}");
    let ServerState::Failed { error, .. } = state(&hub, "nothing") else {
        panic!("{:?}", state(&hub, "nothing"));
    };
    assert!(error.contains("cannot connect"), "{error}");
    let ServerState::Failed { error, .. } = state(&hub, "tls") else {
        panic!("{:?}", state(&hub, "tls"));
    };
    assert!(error.contains(&tls), "{error}");
    hub.shutdown().await;
}

#[tokio::test]
async fn the_websocket_upgrade_carries_the_headers_and_the_mcp_subprotocol() {
    // A raw listener that records the upgrade request and refuses it with 401.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let recorder = tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut request = Vec::new();
        let mut buf = [0u8; 1024];
        while !request.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = socket.read(&mut buf).await.unwrap();
            assert!(n > 0);
            request.extend_from_slice(&buf[..n]);
        }
        let answer = "HTTP/1.1 401 Unauthorized\r\ncontent-length: 12\r\n\r\nbad token 42";
        socket.write_all(answer.as_bytes()).await.unwrap();
        String::from_utf8_lossy(&request).to_lowercase()
    });
    let mut headers = BTreeMap::new();
    headers.insert("Authorization".to_string(), "Bearer t0ken".to_string());
    let spec = ServerSpec::new(
        "locked",
        TransportSpec::Ws {
            url: format!("ws://{addr}/mcp"),
            headers,
        },
    );
    let hub = started(vec![spec]).await;
    let request = recorder.await.unwrap();
    assert!(request.starts_with("get /mcp "), "{request}");
    assert!(request.contains("authorization: bearer t0ken"), "{request}");
    assert!(request.contains("sec-websocket-protocol: mcp"), "{request}");
    // A 401 needs credentials, not retries: remote_auth.rs covers what the message says.
    let ServerState::NeedsAuth { message: error, .. } = state(&hub, "locked") else {
        panic!("{:?}", state(&hub, "locked"));
    };
    assert!(error.contains("HTTP 401"), "{error}");
    assert!(error.contains("requires authorization"), "{error}");
    assert!(error.contains("bad token 42"), "{error}");
    hub.shutdown().await;
}

#[tokio::test]
async fn websocket_pings_are_answered_and_a_close_frame_ends_the_session() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        let (socket, _) = listener.accept().await.unwrap();
        // tungstenite's callback signature has a large error type; not ours to shrink.
        #[allow(clippy::result_large_err)]
        let agree = |_: &Request, mut response: Response| {
            response
                .headers_mut()
                .insert("sec-websocket-protocol", "mcp".parse().unwrap());
            Ok(response)
        };
        let mut ws = tokio_tungstenite::accept_hdr_async(socket, agree)
            .await
            .unwrap();
        ws.send(Message::Ping(b"are you there".to_vec().into()))
            .await
            .unwrap();
        let (mut pong, mut first_message) = (false, None);
        while !(pong && first_message.is_some()) {
            match ws.next().await.unwrap().unwrap() {
                Message::Pong(payload) => {
                    assert_eq!(&payload[..], b"are you there");
                    pong = true;
                }
                Message::Text(text) => first_message = Some(text.to_string()),
                other => panic!("unexpected frame {other:?}"),
            }
        }
        ws.close(None).await.unwrap();
        first_message.unwrap()
    });
    let hub = started(vec![
        ws("pinged", &format!("ws://{addr}/mcp")).with_startup_timeout(Duration::from_secs(5)),
    ])
    .await;
    let first_message = server.await.unwrap();
    // The client's first message is a JSON-RPC request in one text frame.
    let first: serde_json::Value = serde_json::from_str(&first_message).unwrap();
    assert_eq!(first["jsonrpc"], "2.0");
    assert!(first["method"].is_string(), "{first}");
    // The server closed the socket before answering: a failed connect, not a hang.
    let ServerState::Failed { error, .. } = state(&hub, "pinged") else {
        panic!("{:?}", state(&hub, "pinged"));
    };
    assert!(error.contains("closed the connection"), "{error}");
    hub.shutdown().await;
}

// ── streamable HTTP over connections that break ──────────────────────────────────────────────

/// `verdict` for the first request that contains each of `markers`; every other one is relayed.
fn break_first_of(
    markers: &[&'static str],
    verdict: support::Break,
) -> impl Fn(&str) -> support::Break + Send + Sync + 'static {
    let pending = std::sync::Mutex::new(markers.to_vec());
    move |request: &str| {
        let mut pending = pending.lock().unwrap();
        match pending.iter().position(|m| request.contains(m)) {
            Some(at) => {
                pending.remove(at);
                verdict
            }
            None => support::Break::Relay,
        }
    }
}

#[tokio::test]
async fn messages_whose_connection_breaks_unseen_are_sent_again() {
    let server = support::testserver_http(&[]);
    let proxy = support::BreakingProxy::start(
        &server.url,
        break_first_of(
            &["\"server/discover\"", "\"tools/list\"", "\"echo\""],
            support::Break::Before,
        ),
    )
    .await;
    let hub = started(vec![no_retries(ServerSpec::http("flaky", &proxy.url))]).await;
    assert!(
        matches!(state(&hub, "flaky"), ServerState::Connected { .. }),
        "{:?}",
        state(&hub, "flaky")
    );
    assert!(hub.tools().iter().any(|t| t.raw_name == "echo"));
    // A tool call the server never received is not sent again: the caller hears of it.
    let err = hub
        .call("mcp__flaky__echo", json!({"text": "hi"}))
        .await
        .expect_err("the broken call must fail");
    assert!(!matches!(err, Error::InvalidArguments { .. }), "{err}");
    let result = hub
        .call("mcp__flaky__echo", json!({"text": "hi"}))
        .await
        .unwrap();
    assert_eq!(text(&result), "hi");
    hub.shutdown().await;
}

#[tokio::test]
async fn a_tool_call_whose_connection_breaks_after_sending_runs_once() {
    let server = support::testserver_http(&[]);
    let proxy = support::BreakingProxy::start(
        &server.url,
        break_first_of(&["\"bump\""], support::Break::After),
    )
    .await;
    let hub = started(vec![no_retries(ServerSpec::http("flaky", &proxy.url))]).await;
    let err = hub
        .call("mcp__flaky__bump", json!({}))
        .await
        .expect_err("the call whose answer was lost must fail");
    assert!(!matches!(err, Error::InvalidArguments { .. }), "{err}");
    // The server bumped once; a resend would have made it 2.
    let read = hub
        .read_resource(Some("flaky"), "test://counter")
        .await
        .unwrap();
    let value = serde_json::to_value(&read).unwrap();
    assert_eq!(value[0]["text"], "1", "{value}");
    let result = hub.call("mcp__flaky__bump", json!({})).await.unwrap();
    assert_eq!(text(&result), "2");
    hub.shutdown().await;
}
