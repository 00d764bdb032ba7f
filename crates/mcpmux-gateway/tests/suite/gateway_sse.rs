//! Legacy HTTP+SSE (`GET /sse`, `POST /message?sessionId=…`) in this process, with raw HTTP
//! and with mcpmux's own legacy SSE client: a session's answers come on its stream; what a
//! hostile client cannot do (guess or reuse a session, open past the cap, pass the door, send
//! garbage, stall the gateway by not reading); a session ends with its stream; a call in
//! flight finishes at shutdown. The official SDK clients over `/sse`, against `mcpmux serve`, are in
//! `serve_sse.rs`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::pin::Pin;
use std::time::Duration;

use futures::{Stream, StreamExt};
use mcpmux_gateway::{GatewayOptions, HttpOptions, SseOptions, Token};
use serde_json::{Value, json};
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Longest any one wait in these tests may take.
const WITHIN: Duration = Duration::from_secs(10);

type Body = Pin<Box<dyn Stream<Item = reqwest::Result<axum::body::Bytes>> + Send>>;

/// One legacy SSE session, read event by event.
struct Session {
    client: reqwest::Client,
    /// The absolute URL of its `endpoint` event.
    endpoint: String,
    body: Body,
    buffer: String,
    headers: Vec<(String, String)>,
}

impl Session {
    async fn open(base: &str) -> Session {
        Self::open_with(base, &[]).await
    }

    /// `GET /sse` with `headers`; panics unless it opens and names its endpoint.
    async fn open_with(base: &str, headers: &[(&str, &str)]) -> Session {
        let response = get_sse(base, headers).await;
        assert_eq!(response.status(), 200, "{:?}", response.text().await);
        assert!(
            response.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with("text/event-stream")
        );
        let mut session = Session {
            client: reqwest::Client::new(),
            endpoint: String::new(),
            body: Box::pin(response.bytes_stream()),
            buffer: String::new(),
            headers: headers
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect(),
        };
        let (event, data) = session.event().await.expect("no endpoint event");
        assert_eq!(event, "endpoint");
        assert!(data.starts_with("/message?sessionId="), "{data}");
        session.endpoint = format!("{base}{data}");
        session
    }

    /// The next event (name, data), skipping comments; `None` when the stream ended.
    async fn event(&mut self) -> Option<(String, String)> {
        tokio::time::timeout(WITHIN, self.next_event())
            .await
            .expect("no event in time")
    }

    async fn next_event(&mut self) -> Option<(String, String)> {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let (mut event, mut data) = ("message".to_string(), Vec::new());
                for line in block.lines() {
                    if let Some(name) = line.strip_prefix("event:") {
                        event = name.trim().to_string();
                    } else if let Some(value) = line.strip_prefix("data:") {
                        data.push(value.strip_prefix(' ').unwrap_or(value).to_string());
                    }
                }
                if data.is_empty() {
                    continue; // a keep-alive comment
                }
                return Some((event, data.join("\n")));
            }
            let chunk = self.body.next().await?.ok()?;
            self.buffer.push_str(&String::from_utf8_lossy(&chunk));
        }
    }

    /// The message on the stream answering request `id` (notifications before it skipped).
    async fn answer(&mut self, id: u64) -> Value {
        loop {
            let (event, data) = self.event().await.expect("the stream ended");
            assert_eq!(event, "message");
            let message: Value = serde_json::from_str(&data).unwrap();
            if message["id"] == id {
                return message;
            }
        }
    }

    async fn post(&self, message: &Value) -> reqwest::Response {
        let mut request = self
            .client
            .post(&self.endpoint)
            .header("content-type", "application/json")
            .body(message.to_string());
        for (name, value) in &self.headers {
            request = request.header(name, value);
        }
        request.send().await.unwrap()
    }

    /// Posts `message`, which must be accepted.
    async fn send(&self, message: Value) {
        let response = self.post(&message).await;
        assert_eq!(response.status(), 202, "{:?}", response.text().await);
    }

    async fn handshake(&mut self) -> Value {
        self.send(initialize()).await;
        let answer = self.answer(1).await;
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        answer
    }

    async fn call(&mut self, id: u64, name: &str, arguments: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                          "params": {"name": name, "arguments": arguments}}))
            .await;
        self.answer(id).await
    }
}

async fn get_sse(base: &str, headers: &[(&str, &str)]) -> reqwest::Response {
    let mut request = reqwest::Client::new()
        .get(format!("{base}/sse"))
        .header("accept", "text/event-stream");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request.send().await.unwrap()
}

fn echo_server() -> Vec<mcpmux::ServerSpec> {
    vec![fast_testserver("t", &[])]
}

fn with_sse(sse: SseOptions) -> impl FnOnce(&mut HttpOptions) {
    move |http| http.sse = sse
}

fn sse_options(max_sessions: usize, queue_messages: usize, queue_bytes: usize) -> SseOptions {
    let mut options = SseOptions::default();
    options.max_sessions = max_sessions;
    options.queue_messages = queue_messages;
    options.queue_bytes = queue_bytes;
    options
}

#[tokio::test]
async fn a_legacy_sse_session_lists_and_calls_with_the_answers_on_its_stream() {
    let served = Served::start(echo_server(), GatewayOptions::default(), |_| {}).await;
    let mut session = Session::open(&served.base).await;
    let initialized = session.handshake().await;
    assert_eq!(initialized["result"]["serverInfo"]["name"], "mcpmux");
    session
        .send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))
        .await;
    let listed = session.answer(2).await;
    let names: Vec<&str> = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"mcp__t__echo"), "{names:?}");
    let echoed = session
        .call(3, "mcp__t__echo", json!({"text": "over legacy sse"}))
        .await;
    assert_eq!(echoed["result"]["content"][0]["text"], "over legacy sse");
    // Counted among the open sessions /metrics shows.
    let metrics = reqwest::get(format!("{}/metrics", served.base))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.lines().any(|l| l == "mcpmux_gateway_sessions 1"),
        "{metrics}"
    );
    // A second session is a different one: its id and its answers are its own.
    let mut other = Session::open(&served.base).await;
    assert_ne!(other.endpoint, session.endpoint);
    other.handshake().await;
    let theirs = other
        .call(3, "mcp__t__echo", json!({"text": "the other"}))
        .await;
    let mine = session
        .call(4, "mcp__t__echo", json!({"text": "mine"}))
        .await;
    assert_eq!(theirs["result"]["content"][0]["text"], "the other");
    assert_eq!(mine["result"]["content"][0]["text"], "mine");
    served.stop().await;
}

#[tokio::test]
async fn mcpmux_own_legacy_sse_client_lists_and_calls_through_the_gateway() {
    let served = Served::start(echo_server(), GatewayOptions::default(), |_| {}).await;
    let spec = mcpmux::ServerSpec::new(
        "gw",
        mcpmux::TransportSpec::Sse {
            url: format!("{}/sse", served.base),
            headers: Default::default(),
        },
    )
    .with_startup_timeout(WITHIN);
    let client = mcpmux::Hub::start(vec![spec], hub_options()).unwrap();
    client.wait_ready().await.unwrap();
    let names: Vec<String> = client.tools().into_iter().map(|t| t.name).collect();
    assert!(
        names.contains(&"mcp__gw__mcp__t__echo".to_string()),
        "{names:?}"
    );
    let result = client
        .call("mcp__gw__mcp__t__echo", json!({"text": "hub to hub"}))
        .await
        .unwrap();
    assert_eq!(result.to_text(), "hub to hub");
    client.shutdown().await;
    served.stop().await;
}

#[tokio::test]
async fn a_session_id_that_is_unknown_or_missing_is_refused() {
    let served = Served::start(echo_server(), GatewayOptions::default(), |_| {}).await;
    let client = reqwest::Client::new();
    let post = |url: String| {
        client
            .post(url)
            .header("content-type", "application/json")
            .body(initialize().to_string())
            .send()
    };
    let unknown = post(format!(
        "{}/message?sessionId=00000000000000000000000000000000",
        served.base
    ))
    .await
    .unwrap();
    assert_eq!(unknown.status(), 404);
    assert!(unknown.text().await.unwrap().contains("GET /sse"));
    let missing = post(format!("{}/message", served.base)).await.unwrap();
    assert_eq!(missing.status(), 400);
    assert!(missing.text().await.unwrap().contains("sessionId"));
    served.stop().await;
}

#[tokio::test]
async fn a_session_ends_when_its_stream_is_dropped() {
    let served = Served::start(echo_server(), GatewayOptions::default(), |_| {}).await;
    let mut session = Session::open(&served.base).await;
    session.handshake().await;
    let client = session.client.clone();
    let endpoint = session.endpoint.clone();
    drop(session);
    let gone = eventually_async(WITHIN, ms(10), || async {
        let status = client
            .post(&endpoint)
            .header("content-type", "application/json")
            .body(json!({"jsonrpc": "2.0", "id": 9, "method": "tools/list"}).to_string())
            .send()
            .await
            .ok()?
            .status();
        (status == 404).then_some(())
    })
    .await;
    assert!(gone.is_some(), "the session outlived its stream");
    served.stop().await;
}

#[tokio::test]
async fn past_the_session_cap_a_new_stream_gets_503_until_one_closes() {
    let served = Served::start(
        echo_server(),
        GatewayOptions::default(),
        with_sse(sse_options(2, 64, 1 << 20)),
    )
    .await;
    let first = Session::open(&served.base).await;
    let _second = Session::open(&served.base).await;
    let refused = get_sse(&served.base, &[]).await;
    assert_eq!(refused.status(), 503);
    assert!(refused.text().await.unwrap().contains("/mcp"));
    drop(first);
    let reopened = eventually_async(WITHIN, ms(10), || async {
        let response = get_sse(&served.base, &[]).await;
        (response.status() == 200).then_some(response)
    })
    .await;
    assert!(reopened.is_some(), "a closed session kept its place");
    drop(reopened);
    served.stop().await;
}

#[tokio::test]
async fn sse_and_message_stand_behind_the_same_door_as_mcp() {
    let served = Served::start(echo_server(), GatewayOptions::default(), |http| {
        http.token = Some(Token::new("correct-horse").unwrap());
    })
    .await;
    let bearer = ("authorization", "Bearer correct-horse");
    let without = get_sse(&served.base, &[]).await;
    assert_eq!(without.status(), 401);
    assert!(without.headers().contains_key("www-authenticate"));
    let wrong = get_sse(&served.base, &[("authorization", "Bearer correct-horsf")]).await;
    assert_eq!(wrong.status(), 401);
    let origin = get_sse(&served.base, &[bearer, ("origin", "https://evil.example")]).await;
    assert_eq!(origin.status(), 403);
    let host = get_sse(&served.base, &[bearer, ("host", "evil.example")]).await;
    assert_eq!(host.status(), 403);

    let mut session = Session::open_with(&served.base, &[bearer]).await;
    session.handshake().await;
    // The session id alone does not let a POST in: the token is asked for again.
    let unauthenticated = reqwest::Client::new()
        .post(&session.endpoint)
        .header("content-type", "application/json")
        .body(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(unauthenticated.status(), 401);
    let echoed = session
        .call(3, "mcp__t__echo", json!({"text": "let in"}))
        .await;
    assert_eq!(echoed["result"]["content"][0]["text"], "let in");
    served.stop().await;
}

#[tokio::test]
async fn oversized_garbage_and_non_json_bodies_are_refused_and_the_session_goes_on() {
    let served = Served::start(echo_server(), GatewayOptions::default(), |http| {
        http.max_body_bytes = 64 * 1024;
    })
    .await;
    let mut session = Session::open(&served.base).await;
    session.handshake().await;
    let huge = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                      "params": {"name": "mcp__t__echo",
                                 "arguments": {"text": "x".repeat(100 * 1024)}}});
    assert_eq!(session.post(&huge).await.status(), 413);
    let garbage = session
        .client
        .post(&session.endpoint)
        .header("content-type", "application/json")
        .body(&b"\xff\xfe{not json"[..])
        .send()
        .await
        .unwrap();
    assert_eq!(garbage.status(), 400);
    assert!(garbage.text().await.unwrap().contains("JSON-RPC"));
    let text = session
        .client
        .post(&session.endpoint)
        .header("content-type", "text/plain")
        .body(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(text.status(), 415);
    let echoed = session
        .call(4, "mcp__t__echo", json!({"text": "still here"}))
        .await;
    assert_eq!(echoed["result"]["content"][0]["text"], "still here");
    served.stop().await;
}

#[tokio::test]
async fn a_reader_that_falls_behind_is_cut_off_and_its_session_forgotten() {
    let served = Served::start(
        echo_server(),
        GatewayOptions::default(),
        with_sse(sse_options(16, 8, 128 * 1024)),
    )
    .await;
    let addr = served.base.strip_prefix("http://").unwrap().to_string();
    // A reader with a tiny receive window, that reads the endpoint event and then stops.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut stream = socket.connect(addr.parse().unwrap()).await.unwrap();
    stream
        .write_all(
            format!("GET /sse HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\n\r\n")
                .as_bytes(),
        )
        .await
        .unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !String::from_utf8_lossy(&head).contains("sessionId=") || !head.ends_with(b"\n\n") {
        tokio::time::timeout(WITHIN, stream.read_exact(&mut byte))
            .await
            .unwrap()
            .unwrap();
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let id = head.split("sessionId=").nth(1).unwrap().trim();
    let endpoint = format!("{}/message?sessionId={id}", served.base);
    let client = reqwest::Client::new();
    let post = |message: Value| {
        client
            .post(&endpoint)
            .header("content-type", "application/json")
            .body(message.to_string())
            .send()
    };
    assert_eq!(post(initialize()).await.unwrap().status(), 202);
    assert_eq!(
        post(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await
            .unwrap()
            .status(),
        202
    );
    // 60 KB answers nobody reads, one more each try: the socket's buffers fill, then the
    // queue, then the reader is cut off and its session forgotten.
    let text = "y".repeat(60 * 1024);
    let next = std::sync::atomic::AtomicU64::new(2);
    let cut = eventually_async(3 * WITHIN, ms(2), || async {
        let id = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let status = post(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                                 "params": {"name": "mcp__t__echo", "arguments": {"text": text}}}))
        .await
        .unwrap()
        .status();
        assert!(
            status == 202 || status == 503 || status == 404,
            "unexpected {status} while flooding"
        );
        (status == 404).then_some(())
    })
    .await;
    assert!(cut.is_some(), "a reader that never reads was never cut off");
    // What the socket held is read, then the stream ends: the last chunk of the answer.
    let mut tail = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    let ended = tokio::time::timeout(WITHIN, async {
        loop {
            let n = stream.read(&mut buf).await.unwrap();
            if n == 0 {
                return;
            }
            tail.extend_from_slice(&buf[..n]);
            if tail.ends_with(b"0\r\n\r\n") {
                return;
            }
            let keep = tail.len().saturating_sub(16);
            tail.drain(..keep);
        }
    })
    .await;
    assert!(ended.is_ok(), "the stream of a cut-off reader never ended");
    // The gateway serves others as before.
    let mut fresh = Session::open(&served.base).await;
    fresh.handshake().await;
    let echoed = fresh.call(2, "mcp__t__echo", json!({"text": "fine"})).await;
    assert_eq!(echoed["result"]["content"][0]["text"], "fine");
    served.stop().await;
}

#[tokio::test]
async fn shutdown_lets_a_legacy_sse_call_in_flight_finish() {
    let dir = tempfile::tempdir().unwrap();
    let (served, log) = served_with_call_log(dir.path()).await;
    let mut session = Session::open(&served.base).await;
    session.handshake().await;
    session
        .send(json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                     "params": {"name": "mcp__t__slow", "arguments": {"ms": 600, "steps": 2}}}))
        .await;
    wait_log(&log, WITHIN, |calls| {
        calls.iter().any(|c| c["tool"] == "slow")
    })
    .await;
    let stopping = tokio::spawn(served.stop());
    let answer = session.answer(7).await;
    assert_eq!(
        answer["result"]["content"][0]["text"], "done after 2 steps",
        "{answer}"
    );
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    // Then the stream ends with the session.
    assert!(session.event().await.is_none());
    stopping.await.unwrap();
}

#[tokio::test]
async fn a_legacy_sse_session_is_unknown_to_another_identity() {
    let served = Served::start(echo_server(), GatewayOptions::default(), |_| {}).await;
    let mut session = Session::open(&served.base).await;
    session.handshake().await;
    // The same endpoint posted to from another address (another identity): no such session.
    let stranger = reqwest::Client::builder()
        .local_address("127.0.0.2".parse::<std::net::IpAddr>().unwrap())
        .build()
        .unwrap();
    let posted = stranger
        .post(&session.endpoint)
        .header("content-type", "application/json")
        .body(json!({"jsonrpc": "2.0", "id": 9, "method": "tools/list"}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(posted.status(), 404);
    // Still its owner's.
    let echoed = session
        .call(3, "mcp__t__echo", json!({"text": "still mine"}))
        .await;
    assert_eq!(echoed["result"]["content"][0]["text"], "still mine");
    served.stop().await;
}

#[tokio::test]
async fn legacy_sse_sessions_past_an_identity_s_share_get_503_and_another_identity_goes_on() {
    let mut sse = SseOptions::default();
    sse.max_per_client = 1;
    let served = Served::start(echo_server(), GatewayOptions::default(), with_sse(sse)).await;
    let mut first = Session::open(&served.base).await;
    first.handshake().await;
    assert_eq!(get_sse(&served.base, &[]).await.status(), 503);
    let other = reqwest::Client::builder()
        .local_address("127.0.0.2".parse::<std::net::IpAddr>().unwrap())
        .build()
        .unwrap()
        .get(format!("{}/sse", served.base))
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    assert_eq!(other.status(), 200);
    drop(other);
    served.stop().await;
}
