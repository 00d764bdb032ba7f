//! Legacy HTTP+SSE and WebSocket servers that want credentials: a 401 on the SSE `GET`, on a
//! message `POST` or on the WebSocket upgrade ends the server `NeedsAuth` at once, with the
//! request named and the fix (a token in `headers` or `headersHelper`: OAuth login is for
//! streamable HTTP only); a 403 stays a plain failure that says 403. The servers are raw
//! HTTP/1.1 listeners on 127.0.0.1, because no real server refuses on cue.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::collections::BTreeMap;
use std::time::Duration;

use mcpmux::{ServerSpec, ServerState, TransportSpec};
use support::{RawReply, failed, needs_auth};
use tokio::sync::mpsc;

/// Far above what any of these servers takes to answer: settling well inside it shows that
/// nothing waited for a timeout or retried.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(20);
const QUICK: Duration = Duration::from_secs(5);

const UNAUTHORIZED: &str = "HTTP/1.1 401 Unauthorized\r\nwww-authenticate: Bearer\r\n\
                            content-length: 12\r\n\r\nno token 401";
const FORBIDDEN: &str = "HTTP/1.1 403 Forbidden\r\ncontent-length: 9\r\n\r\nforbidden";
const NOT_ALLOWED: &str =
    "HTTP/1.1 405 Method Not Allowed\r\nallow: GET\r\ncontent-length: 0\r\n\r\n";
const ENDPOINT_STREAM: &str = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
                               cache-control: no-cache\r\n\r\n\
                               event: endpoint\ndata: /message?session=1\n\n";

/// A raw HTTP/1.1 server: each request's first line (`GET /sse`, lowercased) is sent to the
/// returned receiver and answered with `answer(first_line)`. An answer without a
/// `content-length` is a stream: it is written and the socket held open. Returns the address.
async fn raw_server(
    answer: fn(&str) -> &'static str,
) -> (std::net::SocketAddr, mpsc::UnboundedReceiver<String>) {
    let (seen, requests) = mpsc::unbounded_channel();
    let addr = support::raw_http_server(move |request| {
        let head = String::from_utf8_lossy(request).to_lowercase();
        let first_line = head.lines().next().unwrap_or_default();
        let first_line = first_line.trim_end_matches(" http/1.1").to_string();
        let reply = answer(&first_line);
        let _ = seen.send(first_line);
        if reply.contains("content-length:") {
            RawReply::Answer(reply.to_string())
        } else {
            RawReply::Stream(reply.to_string())
        }
    })
    .await;
    (addr, requests)
}

fn spec(name: &str, transport: TransportSpec) -> ServerSpec {
    ServerSpec::new(name, transport).with_startup_timeout(STARTUP_TIMEOUT)
}

fn sse(url: String, headers: BTreeMap<String, String>) -> TransportSpec {
    TransportSpec::Sse { url, headers }
}

fn ws(url: String, headers: BTreeMap<String, String>) -> TransportSpec {
    TransportSpec::Ws { url, headers }
}

fn bearer() -> BTreeMap<String, String> {
    BTreeMap::from([("Authorization".to_string(), "Bearer stale".to_string())])
}

/// Starts a hub on `spec`, waits for it to settle and returns the server's state, checking
/// it settled quickly.
async fn settled(spec: ServerSpec) -> ServerState {
    let name = spec.name.clone();
    let (state, elapsed) = support::settled(spec).await;
    assert!(
        elapsed < QUICK,
        "`{name}` took {elapsed:?} to settle: {state:?}"
    );
    state
}

/// The message names the fix a legacy SSE or WebSocket server allows.
fn assert_names_the_fix(message: &str) {
    assert!(message.contains("HTTP 401"), "{message}");
    assert!(message.contains("requires authorization"), "{message}");
    assert!(message.contains("`headers`"), "{message}");
    assert!(message.contains("`headersHelper`"), "{message}");
    assert!(
        !message.contains("mcpmux auth login"),
        "OAuth login does not apply to legacy SSE or WebSocket: {message}"
    );
}

#[tokio::test]
async fn an_sse_get_answered_401_needs_auth() {
    let (addr, mut requests) = raw_server(|_| UNAUTHORIZED).await;
    let url = format!("http://{addr}/sse");
    let message = needs_auth(settled(spec("locked", sse(url.clone(), BTreeMap::new()))).await);
    assert_names_the_fix(&message);
    assert!(message.contains(&format!("GET {url}")), "{message}");
    assert!(message.contains("no token 401"), "{message}");
    assert!(message.contains("give a token"), "{message}");
    // One request: a server that wants credentials is not retried.
    assert_eq!(requests.recv().await.unwrap(), "get /sse");
    assert!(requests.try_recv().is_err());

    // With a token sent, the message says it was refused.
    let message = needs_auth(settled(spec("stale", sse(url, bearer()))).await);
    assert_names_the_fix(&message);
    assert!(
        message.contains("refused the `Authorization` header"),
        "{message}"
    );
}

#[tokio::test]
async fn an_sse_get_answered_403_fails_saying_403() {
    let (addr, _requests) = raw_server(|_| FORBIDDEN).await;
    let url = format!("http://{addr}/sse");
    let error = failed(settled(spec("forbidden", sse(url.clone(), bearer()))).await);
    assert!(error.contains(&format!("GET {url}")), "{error}");
    assert!(error.contains("HTTP 403 Forbidden"), "{error}");
    assert!(error.contains("`headers`"), "{error}");
}

#[tokio::test]
async fn an_sse_post_answered_401_needs_auth() {
    // The stream opens without credentials; the first message POST is refused.
    let (addr, mut requests) = raw_server(|first_line| {
        if first_line.starts_with("post ") {
            UNAUTHORIZED
        } else {
            ENDPOINT_STREAM
        }
    })
    .await;
    let url = format!("http://{addr}/sse");
    let message = needs_auth(settled(spec("posting", sse(url, BTreeMap::new()))).await);
    assert_names_the_fix(&message);
    // The endpoint's query (a session id) is not shown.
    assert!(
        message.contains(&format!(
            "POST to the message endpoint http://{addr}/message?…"
        )),
        "{message}"
    );
    assert!(!message.contains("session=1"), "{message}");
    assert_eq!(requests.recv().await.unwrap(), "get /sse");
    assert_eq!(requests.recv().await.unwrap(), "post /message?session=1");
}

#[tokio::test]
async fn a_websocket_upgrade_answered_401_needs_auth() {
    let (addr, mut requests) = raw_server(|_| UNAUTHORIZED).await;
    let url = format!("ws://{addr}/mcp");
    let message = needs_auth(settled(spec("locked", ws(url.clone(), BTreeMap::new()))).await);
    assert_names_the_fix(&message);
    assert!(
        message.contains(&format!("the WebSocket upgrade at {url}")),
        "{message}"
    );
    assert!(message.contains("give a token"), "{message}");
    assert_eq!(requests.recv().await.unwrap(), "get /mcp");
    assert!(requests.try_recv().is_err());

    let message = needs_auth(settled(spec("stale", ws(url, bearer()))).await);
    assert_names_the_fix(&message);
    assert!(
        message.contains("refused the `Authorization` header"),
        "{message}"
    );
}

#[tokio::test]
async fn a_websocket_upgrade_answered_403_fails_saying_403() {
    let (addr, _requests) = raw_server(|_| FORBIDDEN).await;
    let url = format!("ws://{addr}/mcp");
    let error = failed(settled(spec("forbidden", ws(url.clone(), bearer()))).await);
    assert!(
        error.contains(&format!("the WebSocket upgrade at {url}")),
        "{error}"
    );
    assert!(error.contains("HTTP 403 Forbidden"), "{error}");
    assert!(error.contains("forbidden"), "{error}");
}

#[tokio::test]
async fn the_legacy_sse_fallback_does_not_hide_a_401() {
    // A streamable HTTP config whose POST is refused as an old server's would be (405), and
    // whose SSE GET then wants credentials.
    let (addr, mut requests) = raw_server(|first_line| {
        if first_line.starts_with("post ") {
            NOT_ALLOWED
        } else {
            UNAUTHORIZED
        }
    })
    .await;
    let url = format!("http://{addr}/mcp");
    let message = needs_auth(
        settled(ServerSpec::http("old", &url).with_startup_timeout(STARTUP_TIMEOUT)).await,
    );
    assert!(message.contains(&format!("GET {url}")), "{message}");
    assert_names_the_fix(&message);
    // The streamable POSTs (discover, then initialize), then the one legacy GET.
    let mut seen = Vec::new();
    while let Ok(request) = requests.try_recv() {
        seen.push(request);
    }
    assert_eq!(
        seen.last().map(String::as_str),
        Some("get /mcp"),
        "{seen:?}"
    );
    assert!(
        seen[..seen.len() - 1].iter().all(|r| r == "post /mcp"),
        "{seen:?}"
    );
}
