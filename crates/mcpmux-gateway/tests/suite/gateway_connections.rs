//! The connection layer under abuse, in this process, over real sockets on loopback (a peer
//! is told apart by binding its socket to another 127/8 address): a head or a body sent too
//! slowly, a kept-alive connection left idle, an answer nobody reads, a head too large, too
//! many connections from one peer and overall, many SSE streams — each refused or closed in
//! bounded time, while
//! `/healthz` answers at once and a well-behaved MCP client lists and calls.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use mcpmux_gateway::{GatewayOptions, HttpOptions};
use serde_json::json;
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

/// Longest any one wait in these tests may take.
const WITHIN: Duration = Duration::from_secs(10);
/// The short timeouts the tests set.
const SHORT: Duration = Duration::from_millis(300);

async fn served(http: impl FnOnce(&mut HttpOptions)) -> (Served, SocketAddr) {
    let served = Served::start(
        vec![fast_testserver("t", &[])],
        GatewayOptions::default(),
        http,
    )
    .await;
    let addr = served.base.trim_start_matches("http://").parse().unwrap();
    (served, addr)
}

/// A connection to `to` from the loopback address `from`.
async fn connect_from(from: &str, to: SocketAddr) -> TcpStream {
    let socket = TcpSocket::new_v4().unwrap();
    socket
        .bind(SocketAddr::new(from.parse::<IpAddr>().unwrap(), 0))
        .unwrap();
    socket.connect(to).await.unwrap()
}

/// Reads `stream` until the gateway closes it (end of stream or reset), for at most `within`:
/// what was read, and when it closed counted from `since`; `None` while it stays open.
async fn closed_within(
    stream: &mut TcpStream,
    since: Instant,
    within: Duration,
) -> Option<(String, Duration)> {
    let mut read = Vec::new();
    let mut buf = [0u8; 4096];
    let reading = async {
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => read.extend_from_slice(&buf[..n]),
            }
        }
    };
    tokio::time::timeout(within, reading).await.ok()?;
    Some((String::from_utf8_lossy(&read).into_owned(), since.elapsed()))
}

/// Reads `stream` until what was read contains `wanted`, for at most [`WITHIN`].
async fn read_until(stream: &mut TcpStream, wanted: &str) -> String {
    let mut read = Vec::new();
    let mut buf = [0u8; 4096];
    let reading = async {
        while !String::from_utf8_lossy(&read).contains(wanted) {
            let n = stream.read(&mut buf).await.unwrap();
            assert!(
                n > 0,
                "closed before {wanted:?}: {}",
                String::from_utf8_lossy(&read)
            );
            read.extend_from_slice(&buf[..n]);
        }
    };
    tokio::time::timeout(WITHIN, reading)
        .await
        .unwrap_or_else(|_| panic!("no {wanted:?} in time"));
    String::from_utf8_lossy(&read).into_owned()
}

/// `GET /healthz` on a new connection from `from`: how long the answer took (connect
/// included); panics unless it is 200 within [`WITHIN`].
async fn healthz(to: SocketAddr, from: &str) -> Duration {
    let started = Instant::now();
    let mut stream = connect_from(from, to).await;
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n")
        .await
        .unwrap();
    let (answer, _) = closed_within(&mut stream, started, WITHIN)
        .await
        .expect("/healthz did not answer");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    started.elapsed()
}

/// A connection past a cap is closed at once, with a 503 when the peer can still read it.
#[track_caller]
fn assert_refused(closed: Option<(String, Duration)>) {
    let (answer, after) = closed.expect("a connection past the cap was kept open");
    assert!(
        answer.is_empty() || answer.starts_with("HTTP/1.1 503"),
        "{answer}"
    );
    assert!(
        after < Duration::from_secs(2),
        "closed only after {after:?}"
    );
}

#[tokio::test]
async fn a_head_sent_too_slowly_is_closed_after_the_header_timeout() {
    let (served, addr) = served(|http| http.connections.header_timeout = SHORT).await;
    // Nothing at all, half a head, and a head trickled a byte every 50 ms.
    let opened = Instant::now();
    let mut silent = connect_from("127.0.0.1", addr).await;
    let mut half = connect_from("127.0.0.1", addr).await;
    half.write_all(b"GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\n")
        .await
        .unwrap();
    let mut trickled = connect_from("127.0.0.1", addr).await;
    let (mut reading, mut writing) = trickled.split();
    let trickle = async {
        for byte in b"GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\nx-slow: aaaaaaaaaaaaaaaa" {
            if writing.write_all(&[*byte]).await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    let watch = async {
        let mut buf = [0u8; 64];
        let closed = tokio::time::timeout(WITHIN, reading.read(&mut buf)).await;
        (closed.is_ok(), opened.elapsed())
    };
    let ((trickle_closed, trickle_after), ()) = tokio::join!(watch, trickle);
    assert!(trickle_closed, "a trickled head was kept open");
    assert!(trickle_after >= SHORT && trickle_after < Duration::from_secs(2));
    for stream in [&mut silent, &mut half] {
        let (answer, after) = closed_within(stream, opened, WITHIN)
            .await
            .expect("a slow head was kept open");
        assert_eq!(answer, "");
        assert!(
            after >= SHORT && after < Duration::from_secs(2),
            "{after:?}"
        );
    }
    let cut = r#"mcpmux_gateway_connections_cut_total{reason="header"}"#;
    assert_eq!(metric(&served.base, cut).await, 3.0);
    served.stop().await;
}

#[tokio::test]
async fn a_body_sent_too_slowly_gets_408_and_the_connection_closes() {
    let (served, addr) = served(|http| http.connections.body_timeout = SHORT).await;
    let mut stream = connect_from("127.0.0.1", addr).await;
    let sent = Instant::now();
    stream
        .write_all(
            b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n\
              accept: application/json, text/event-stream\r\ncontent-length: 1000\r\n\r\n\
              {\"jsonrpc\": \"2.0\",",
        )
        .await
        .unwrap();
    let (answer, after) = closed_within(&mut stream, sent, WITHIN)
        .await
        .expect("a slow body was kept open");
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("did not arrive"), "{answer}");
    assert!(
        after >= SHORT && after < Duration::from_secs(3),
        "{after:?}"
    );
    let cut = r#"mcpmux_gateway_connections_cut_total{reason="body"}"#;
    assert_eq!(metric(&served.base, cut).await, 1.0);
    // A body that comes in time is read as ever.
    let answer = post(&served.url, &initialize(), &[]).await;
    assert_eq!(answer.status(), 200);
    served.stop().await;
}

#[tokio::test]
async fn a_kept_alive_connection_is_closed_once_idle_and_reused_before() {
    let (served, addr) = served(|http| http.connections.idle_timeout = SHORT).await;
    let mut stream = connect_from("127.0.0.1", addr).await;
    for _ in 0..2 {
        stream
            .write_all(b"GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n")
            .await
            .unwrap();
        let answer = read_until(&mut stream, "ok\n").await;
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    }
    let answered = Instant::now();
    let (rest, after) = closed_within(&mut stream, answered, WITHIN)
        .await
        .expect("an idle connection was kept open");
    assert_eq!(rest, "");
    assert!(
        after >= SHORT - Duration::from_millis(20) && after < Duration::from_secs(2),
        "{after:?}"
    );
    let cut = r#"mcpmux_gateway_connections_cut_total{reason="idle"}"#;
    assert_eq!(metric(&served.base, cut).await, 1.0);
    served.stop().await;
}

#[tokio::test]
async fn a_head_past_the_size_limit_gets_431() {
    let (served, addr) = served(|http| http.connections.max_header_bytes = 4096).await;
    let head = |filler: usize| {
        format!(
            "GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\nx-filler: {}\r\n\r\n",
            "a".repeat(filler)
        )
    };
    let mut large = connect_from("127.0.0.1", addr).await;
    large.write_all(head(8192).as_bytes()).await.unwrap();
    let (answer, _) = closed_within(&mut large, Instant::now(), WITHIN)
        .await
        .expect("a large head was kept open");
    assert!(answer.starts_with("HTTP/1.1 431"), "{answer}");
    // Too many headers, however short: hyper's bound of 100.
    let many: String = (0..101).map(|n| format!("x-{n}: 1\r\n")).collect();
    let mut crowded = connect_from("127.0.0.1", addr).await;
    let head_of_many = format!("GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\n{many}\r\n");
    crowded.write_all(head_of_many.as_bytes()).await.unwrap();
    let (answer, _) = closed_within(&mut crowded, Instant::now(), WITHIN)
        .await
        .expect("a head of too many headers was kept open");
    assert!(answer.starts_with("HTTP/1.1 431"), "{answer}");
    let mut fitting = connect_from("127.0.0.1", addr).await;
    fitting.write_all(head(2048).as_bytes()).await.unwrap();
    let (answer, _) = closed_within(&mut fitting, Instant::now(), WITHIN)
        .await
        .unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    served.stop().await;
}

#[tokio::test]
async fn past_its_cap_a_peer_is_refused_while_other_peers_are_served() {
    let (served, addr) = served(|http| {
        http.connections.max_connections_per_peer = 4;
        http.connections.header_timeout = WITHIN;
    })
    .await;
    let mut held = Vec::new();
    for _ in 0..4 {
        held.push(connect_from("127.0.0.2", addr).await);
    }
    let mut fifth = connect_from("127.0.0.2", addr).await;
    assert_refused(closed_within(&mut fifth, Instant::now(), WITHIN).await);
    let refused = r#"mcpmux_gateway_connections_refused_total{reason="peer"}"#;
    assert_eq!(metric(&served.base, refused).await, 1.0);
    healthz(addr, "127.0.0.3").await;
    healthz(addr, "127.0.0.1").await;
    // One of the four closes: the peer may come in again.
    drop(held.pop());
    let back = eventually_async(WITHIN, Duration::from_millis(20), || async {
        let mut stream = connect_from("127.0.0.2", addr).await;
        stream
            .write_all(b"GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n")
            .await
            .ok()?;
        let (answer, _) = closed_within(&mut stream, Instant::now(), WITHIN).await?;
        answer.starts_with("HTTP/1.1 200").then_some(())
    })
    .await;
    assert!(
        back.is_some(),
        "the peer stayed refused after a connection closed"
    );
    served.stop().await;
}

#[tokio::test]
async fn past_the_overall_cap_every_new_connection_is_refused_until_one_closes() {
    let (served, addr) = served(|http| {
        http.connections.max_connections = 6;
        http.connections.max_connections_per_peer = 0;
        http.connections.header_timeout = WITHIN;
    })
    .await;
    let mut held = Vec::new();
    for _ in 0..6 {
        held.push(connect_from("127.0.0.4", addr).await);
    }
    let mut seventh = connect_from("127.0.0.5", addr).await;
    assert_refused(closed_within(&mut seventh, Instant::now(), WITHIN).await);
    drop(held.pop());
    let answered = eventually_async(WITHIN, Duration::from_millis(20), || async {
        let mut stream = connect_from("127.0.0.1", addr).await;
        stream
            .write_all(b"GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n")
            .await
            .ok()?;
        let (answer, _) = closed_within(&mut stream, Instant::now(), WITHIN).await?;
        answer.starts_with("HTTP/1.1 200").then_some(())
    })
    .await;
    assert!(
        answered.is_some(),
        "still refused after a connection closed"
    );
    let refused = r#"mcpmux_gateway_connections_refused_total{reason="total"}"#;
    assert!(metric(&served.base, refused).await >= 1.0);
    served.stop().await;
}

/// `GET /sse` from `from`: the stream, once its `endpoint` event named the session.
async fn open_sse(to: SocketAddr, from: &str) -> (TcpStream, String) {
    let mut stream = connect_from(from, to).await;
    stream
        .write_all(b"GET /sse HTTP/1.1\r\nhost: 127.0.0.1\r\naccept: text/event-stream\r\n\r\n")
        .await
        .unwrap();
    let read = read_until(&mut stream, "sessionId=").await;
    assert!(read.starts_with("HTTP/1.1 200"), "{read}");
    let tail = &read[read.find("sessionId=").unwrap() + "sessionId=".len()..];
    let id: String = tail
        .chars()
        .take_while(char::is_ascii_alphanumeric)
        .collect();
    (stream, id)
}

#[tokio::test]
async fn sse_streams_outlive_the_idle_and_header_timeouts_and_are_bounded_by_the_caps() {
    let (served, addr) = served(|http| {
        http.connections.max_connections_per_peer = 4;
        http.connections.header_timeout = SHORT;
        http.connections.idle_timeout = SHORT;
        http.connections.body_timeout = SHORT;
    })
    .await;
    let mut streams = Vec::new();
    for _ in 0..3 {
        streams.push(open_sse(addr, "127.0.0.6").await);
    }
    let filler = connect_from("127.0.0.6", addr).await;
    let mut fifth = connect_from("127.0.0.6", addr).await;
    assert_refused(closed_within(&mut fifth, Instant::now(), WITHIN).await);
    drop(filler);
    // Well past every timeout (the filler long released), each stream still carries its
    // session's answers. The messages go from the streams' own address: a session is bound
    // to the identity (here the address) that opened it.
    tokio::time::sleep(SHORT * 3).await;
    let mut client = connect_from("127.0.0.6", addr).await;
    for (stream, id) in &mut streams {
        let body = initialize().to_string();
        let post = format!(
            "POST /message?sessionId={id} HTTP/1.1\r\nhost: 127.0.0.1\r\n\
             content-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        );
        client.write_all(post.as_bytes()).await.unwrap();
        let answer = read_until(&mut client, "\r\n\r\n").await;
        assert!(answer.starts_with("HTTP/1.1 202"), "{answer}");
        read_until(stream, "\"id\":1").await;
    }
    healthz(addr, "127.0.0.1").await;
    served.stop().await;
}

#[tokio::test]
async fn with_600_slow_connections_open_healthz_answers_at_once_and_a_client_lists_and_calls() {
    const SLOW: usize = 600;
    let slow_for = Duration::from_secs(5);
    let (served, addr) = served(|http| {
        http.connections.header_timeout = slow_for;
        http.connections.body_timeout = slow_for;
    })
    .await;
    // Half send half a head, half a head and the start of a body; spread over three peers
    // so that each stays under the default per-peer cap.
    let opened = Instant::now();
    let mut slow = Vec::with_capacity(SLOW);
    for n in 0..SLOW {
        let from = format!("127.0.0.{}", 10 + n % 3);
        let mut stream = connect_from(&from, addr).await;
        let partial: &[u8] = if n % 2 == 0 {
            b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\n"
        } else {
            b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n\
              accept: application/json, text/event-stream\r\ncontent-length: 1000\r\n\r\n{"
        };
        stream.write_all(partial).await.unwrap();
        slow.push(stream);
    }
    let opening = opened.elapsed();
    assert!(metric(&served.base, "mcpmux_gateway_connections").await >= SLOW as f64);
    let mut latencies = Vec::new();
    for _ in 0..20 {
        latencies.push(healthz(addr, "127.0.0.1").await);
    }
    latencies.sort();
    let measured = opened.elapsed();
    eprintln!(
        "{SLOW} slow connections opened in {opening:?}; /healthz p50 {:?}, max {:?}",
        latencies[latencies.len() / 2],
        latencies[latencies.len() - 1]
    );
    assert!(
        measured < slow_for,
        "the slow connections may have closed before /healthz was measured ({measured:?})"
    );
    assert!(
        latencies[latencies.len() - 1] < Duration::from_secs(1),
        "{latencies:?}"
    );
    // A well-behaved client: mcpmux's own hub, over streamable HTTP.
    let spec = mcpmux::ServerSpec::http("gw", &served.url).with_startup_timeout(WITHIN);
    let client = mcpmux::Hub::start(vec![spec], hub_options()).unwrap();
    client.wait_ready().await.unwrap();
    let names: Vec<String> = client.tools().into_iter().map(|t| t.name).collect();
    assert!(
        names.contains(&"mcp__gw__mcp__t__echo".to_string()),
        "{names:?}"
    );
    let result = client
        .call(
            "mcp__gw__mcp__t__echo",
            json!({"text": "through the crowd"}),
        )
        .await
        .unwrap();
    assert_eq!(result.to_text(), "through the crowd");
    client.shutdown().await;
    // And every slow connection is closed by the gateway in bounded time.
    let mut answers = 0;
    for stream in &mut slow {
        let (answer, _) = closed_within(stream, opened, slow_for + WITHIN)
            .await
            .expect("a slow connection was kept open");
        answers += usize::from(answer.starts_with("HTTP/1.1 408"));
    }
    assert_eq!(answers, SLOW / 2, "each slow body gets 408");
    served.stop().await;
}

#[tokio::test]
async fn an_answer_the_peer_stops_reading_is_cut_after_the_idle_timeout() {
    const ANSWER_MB: usize = 8;
    let mut spec = fast_testserver("t", &[]);
    spec.options.max_result_bytes = (2 * ANSWER_MB) << 20;
    let served = Served::start(vec![spec], GatewayOptions::default(), |http| {
        http.connections.idle_timeout = SHORT;
    })
    .await;
    let addr: SocketAddr = served.base.trim_start_matches("http://").parse().unwrap();
    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
        "name": "mcp__t__huge", "arguments": {"mb": ANSWER_MB},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "slow-reader", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {},
        },
    }})
    .to_string();
    let mut stream = connect_from("127.0.0.1", addr).await;
    let head = format!(
        "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n\
         accept: application/json, text/event-stream\r\nmcp-protocol-version: 2026-07-28\r\n\
         mcp-method: tools/call\r\nmcp-name: mcp__t__huge\r\ncontent-length: {}\r\n\r\n",
        call.len()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(call.as_bytes()).await.unwrap();
    // The result is on its way once its text starts coming; then nothing more is read, for
    // far longer than the idle timeout, while the gateway's writes wait.
    let started = read_until(&mut stream, "xxxxxxxx").await;
    tokio::time::sleep(SHORT * 6).await;
    let (rest, _) = closed_within(&mut stream, Instant::now(), WITHIN)
        .await
        .expect("an answer nobody reads kept its connection open");
    let read = started.len() + rest.len();
    assert!(
        read < ANSWER_MB << 20,
        "the whole answer ({read} bytes) was sent: nothing was cut"
    );
    let cut = r#"mcpmux_gateway_connections_cut_total{reason="unread"}"#;
    assert_eq!(metric(&served.base, cut).await, 1.0);
    healthz(addr, "127.0.0.1").await;
    served.stop().await;
}
