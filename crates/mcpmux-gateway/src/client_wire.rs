//! The wire log of the gateway's clients over HTTP (`--wire-log`), as one layer over every
//! route behind the door, knowing nothing of what serves them: each JSON-RPC message a client
//! POSTs (a batch as its messages) is logged as received, and each one in an answer — a JSON
//! body, each event's data on an SSE answer or stream (`/mcp`'s and legacy `/sse`'s) — as
//! sent. A client is named `client:<hash>`, its session id's hash as the access log shows it
//! (`access_log::session_hash`): the id is the capability to use the session, so the log holds
//! only what tells sessions apart; a request of no session (the 2026-07-28 era) is
//! `client:stateless`. No server can have either name (`:` is not allowed in one). Without a
//! wire log the layer is not mounted.

use std::task::{Context, Poll};

use axum::{
    Router,
    body::{Body, Bytes},
    extract::{Request, State},
    http::{HeaderMap, header},
    middleware::{self, Next},
    response::Response,
};
use http_body::{Body as _, Frame, SizeHint};
use mcpmux::cli_support::sse::{SseItem, SseParser};
use mcpmux::telemetry::wire::{Direction, WireLog};

/// The name of a client whose requests carry no session.
const STATELESS: &str = "client:stateless";
/// The most of one SSE event or JSON answer held to be logged: past it a JSON answer is logged
/// cut (as text, not JSON), as the servers' taps do with a line, and an event as a note.
const MAX_MESSAGE: usize = 4 << 20;

/// Where the layer logs, and the largest request body it reads whole (the one the routes
/// accept: a larger one passes on unlogged, to be refused behind it).
#[derive(Clone)]
struct Tap {
    log: WireLog,
    max_body_bytes: usize,
}

/// `router` with its clients' messages logged to `log`; untouched without one.
pub(crate) fn mount(router: Router, log: Option<&WireLog>, max_body_bytes: usize) -> Router {
    match log {
        None => router,
        Some(log) => router.layer(middleware::from_fn_with_state(
            Tap {
                log: log.clone(),
                max_body_bytes,
            },
            tap,
        )),
    }
}

/// The middleware: logs the request's messages before it is served (so a call's messages
/// upstream come after it), then taps the answer's body as it goes out.
async fn tap(State(tap): State<Tap>, request: Request, next: Next) -> Response {
    let (parts, body) = request.into_parts();
    let mut peer = session_of(&parts.headers, parts.uri.query());
    let (body, read) = read_whole(body, tap.max_body_bytes).await;
    let request = Request::from_parts(parts, body);
    // A handshake's `initialize` has no session yet: its name comes with the answer, which
    // is made without a word upstream.
    let mut deferred = None;
    if let Some(bytes) = read.filter(|b| !b.is_empty()) {
        if peer.is_none() && is_initialize(&bytes) {
            deferred = Some(bytes);
        } else {
            let name = peer.as_deref().unwrap_or(STATELESS);
            record_all(&tap.log, name, Direction::Receive, &bytes);
        }
    }
    let response = next.run(request).await;
    if peer.is_none() {
        peer = session_of(response.headers(), None);
    }
    if let Some(bytes) = deferred {
        let name = peer.as_deref().unwrap_or(STATELESS);
        record_all(&tap.log, name, Direction::Receive, &bytes);
    }
    let Some(kind) = kind_of(response.headers()) else {
        return response;
    };
    let (parts, body) = response.into_parts();
    let tapped = Tapped::new(body, tap.log, peer, kind);
    Response::from_parts(parts, Body::new(tapped))
}

/// The client's name for a session id in `headers` (`Mcp-Session-Id`) or in `query` (legacy
/// SSE's `sessionId`), if there is one.
fn session_of(headers: &HeaderMap, query: Option<&str>) -> Option<String> {
    if let Some(id) = headers.get("mcp-session-id") {
        return Some(client_name(id.as_bytes()));
    }
    let query = query?;
    url::form_urlencoded::parse(query.as_bytes())
        .find(|(key, _)| key == "sessionId")
        .map(|(_, id)| client_name(id.as_bytes()))
}

fn client_name(id: &[u8]) -> String {
    format!("client:{}", crate::access_log::session_hash(id))
}

/// Whether `bytes` are an `initialize` request (the one message that opens a session).
fn is_initialize(bytes: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct Method<'a> {
        #[serde(borrow)]
        method: Option<&'a str>,
    }
    serde_json::from_slice::<Method<'_>>(bytes).is_ok_and(|m| m.method == Some("initialize"))
}

/// Logs `bytes` as one message, or as each of a batch's.
fn record_all(log: &WireLog, peer: &str, direction: Direction, bytes: &[u8]) {
    let trimmed = bytes.trim_ascii_start();
    if trimmed.first() == Some(&b'[')
        && let Ok(batch) = serde_json::from_slice::<Vec<&serde_json::value::RawValue>>(trimmed)
    {
        for message in batch {
            log.record(peer, direction, message.get().as_bytes());
        }
        return;
    }
    log.record(peer, direction, bytes);
}

/// The body of a request read whole when it is no larger than `max` (and its bytes, to log),
/// else what was read and the rest, passed on as they came.
async fn read_whole(mut body: Body, max: usize) -> (Body, Option<Bytes>) {
    if body.is_end_stream() {
        return (body, Some(Bytes::new()));
    }
    let mut read: Vec<Bytes> = Vec::new();
    let mut held = 0;
    loop {
        let frame = crate::one_write::next_frame(&mut body).await;
        match frame {
            None => {
                let bytes = crate::one_write::concat(read, held);
                return (Body::from(bytes.clone()), Some(bytes));
            }
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    held += data.len();
                    read.push(data);
                    if held > max {
                        break;
                    }
                }
            }
            Some(Err(error)) => {
                let read = futures::stream::iter(read.into_iter().map(Ok));
                let error = futures::stream::iter([Err(error)]);
                return (
                    Body::from_stream(futures::StreamExt::chain(read, error)),
                    None,
                );
            }
        }
    }
    let read = futures::stream::iter(read.into_iter().map(Ok::<_, axum::Error>));
    let body = futures::StreamExt::chain(read, body.into_data_stream());
    (Body::from_stream(body), None)
}

/// What an answer's body holds, as far as the log goes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    /// One JSON-RPC message or batch.
    Json,
    /// Server-sent events, each one's data a message.
    Events,
}

fn kind_of(headers: &HeaderMap) -> Option<Kind> {
    let value = headers.get(header::CONTENT_TYPE)?.to_str().ok()?;
    let essence = value.split(';').next()?.trim();
    if essence.eq_ignore_ascii_case("application/json") {
        Some(Kind::Json)
    } else if essence.eq_ignore_ascii_case("text/event-stream") {
        Some(Kind::Events)
    } else {
        None
    }
}

/// An answer's body, passed through frame by frame, each message in it logged as it goes.
struct Tapped {
    inner: Body,
    log: WireLog,
    peer: Option<String>,
    /// A JSON answer so far (bounded by `MAX_MESSAGE`), or none for an event stream.
    json: Option<Vec<u8>>,
    /// A JSON answer grew past `MAX_MESSAGE`: what was held is logged cut, as text.
    cut: bool,
    /// An event stream's events: the library's parser, each event bounded.
    events: SseParser,
    done: bool,
}

impl Tapped {
    fn new(inner: Body, log: WireLog, peer: Option<String>, kind: Kind) -> Self {
        Tapped {
            inner,
            log,
            peer,
            json: (kind == Kind::Json).then(Vec::new),
            cut: false,
            events: SseParser::new(MAX_MESSAGE),
            done: false,
        }
    }

    fn peer(&self) -> &str {
        self.peer.as_deref().unwrap_or(STATELESS)
    }

    fn passed(&mut self, bytes: &[u8]) {
        if let Some(held) = &mut self.json {
            let room = MAX_MESSAGE.saturating_sub(held.len());
            self.cut |= bytes.len() > room;
            held.extend_from_slice(&bytes[..room.min(bytes.len())]);
            return;
        }
        self.events.feed(bytes);
        while let Some(item) = self.events.next_event() {
            match item {
                SseItem::Event { kind, data } => self.event(&kind, &data),
                SseItem::TooLarge => {
                    let note = format!("(an event over {MAX_MESSAGE} bytes, not logged)");
                    self.log
                        .record(self.peer(), Direction::Send, note.as_bytes());
                }
                _ => {}
            }
        }
    }

    fn event(&mut self, kind: &str, data: &str) {
        match kind {
            // No data: a keep-alive or a priming event, no message.
            "message" if !data.is_empty() => {
                self.log
                    .record(self.peer(), Direction::Send, data.as_bytes())
            }
            // Legacy SSE: where to POST, the session's id in it; named, never logged.
            "endpoint" => {
                let query = data.split_once('?').map(|(_, query)| query);
                if let Some(name) = session_of(&HeaderMap::new(), query) {
                    self.peer = Some(name);
                }
            }
            _ => {}
        }
    }

    /// The answer ended (or was dropped): a JSON answer is logged, as far as it went.
    fn finish(&mut self) {
        if self.done {
            return;
        }
        self.done = true;
        let Some(held) = self.json.take().filter(|held| !held.is_empty()) else {
            return;
        };
        if self.cut {
            self.log.record(self.peer(), Direction::Send, &held);
        } else {
            record_all(&self.log, self.peer(), Direction::Send, &held);
        }
    }
}

impl http_body::Body for Tapped {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: std::pin::Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let this = self.get_mut();
        let polled = std::pin::Pin::new(&mut this.inner).poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    this.passed(data);
                }
                // hyper stops polling a body that says it ended.
                if this.inner.is_end_stream() {
                    this.finish();
                }
            }
            Poll::Ready(None) => this.finish(),
            _ => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for Tapped {
    fn drop(&mut self) {
        self.finish();
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn logged(path: &std::path::Path) -> Vec<Value> {
        std::fs::read_to_string(path)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    fn tapped(log: &WireLog, kind: Kind, pieces: &[&'static str]) -> Tapped {
        let stream = futures::stream::iter(
            pieces
                .iter()
                .map(|p| Ok::<_, std::io::Error>(Bytes::from_static(p.as_bytes())))
                .collect::<Vec<_>>(),
        );
        Tapped::new(Body::from_stream(stream), log.clone(), None, kind)
    }

    #[tokio::test]
    async fn each_event_s_data_is_logged_whole_however_the_stream_is_cut_and_the_body_passes_untouched()
     {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.jsonl");
        let log = WireLog::open(&path, 1 << 20).unwrap();
        let pieces = [
            "event: endpoint\ndata: /message?sessionId=abc\n\n",
            ": keep-alive\n\nid: 1\ndata:\n\n",
            "data: {\"jsonrpc\":\"2.0\",",
            "\"id\":1,\"result\":{}}\r\n\r\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"n\"}\n",
            "\ndata: [{\"id\":2}]\n\n",
        ];
        let body = Body::new(tapped(&log, Kind::Events, &pieces));
        let passed = axum::body::to_bytes(body, 1 << 20).await.unwrap();
        assert_eq!(passed, pieces.concat().as_bytes());
        let lines = logged(&path);
        let messages: Vec<&Value> = lines.iter().map(|l| &l["message"]).collect();
        assert_eq!(
            messages,
            [
                &serde_json::json!({"jsonrpc":"2.0","id":1,"result":{}}),
                &serde_json::json!({"jsonrpc":"2.0","method":"n"}),
                &serde_json::json!([{"id":2}]),
            ]
        );
        let peer = format!("client:{}", crate::access_log::session_hash(b"abc"));
        assert!(
            lines
                .iter()
                .all(|l| l["server"] == peer.as_str() && l["dir"] == "send")
        );
        assert!(!std::fs::read_to_string(&path).unwrap().contains("abc"));
    }

    #[tokio::test]
    async fn a_json_answer_is_logged_once_ended_a_batch_as_its_messages() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.jsonl");
        let log = WireLog::open(&path, 1 << 20).unwrap();
        let body = Body::new(tapped(&log, Kind::Json, &["[{\"id\":1},", " {\"id\":2}]"]));
        let _ = axum::body::to_bytes(body, 1 << 20).await.unwrap();
        let lines = logged(&path);
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0]["message"]["id"], 1);
        assert_eq!(lines[1]["message"]["id"], 2);
        assert_eq!(lines[1]["server"], STATELESS);
    }

    #[tokio::test]
    async fn a_request_body_past_the_bound_passes_on_whole_and_unread() {
        let body = Body::from(vec![b'x'; 100]);
        let (body, read) = read_whole(body, 10).await;
        assert!(read.is_none());
        assert_eq!(axum::body::to_bytes(body, 1000).await.unwrap().len(), 100);
        let (body, read) = read_whole(Body::from("{\"id\":1}"), 10).await;
        assert_eq!(read.unwrap(), "{\"id\":1}");
        assert_eq!(
            axum::body::to_bytes(body, 1000).await.unwrap(),
            "{\"id\":1}"
        );
    }

    #[test]
    fn an_initialize_is_told_from_other_messages() {
        assert!(is_initialize(
            br#"{"jsonrpc":"2.0","id":1,"method":"initialize"}"#
        ));
        assert!(!is_initialize(
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#
        ));
        assert!(!is_initialize(b"[1]"));
    }
}
