//! Access logs: one `tracing` event per HTTP request, target `mcpmux::access`, sent when its
//! answer has been sent in full (or the peer left): method, path, status, duration, peer,
//! a hash of the session id (never the id), the client the door admitted (never a token), and the JSON-RPC method and tool
//! name of a small POST. Every value a peer chose is cut short and its control characters
//! escaped. How the event is written (text, JSON, where) is the subscriber's. Knows nothing of
//! authentication.

use std::borrow::Cow;
use std::net::SocketAddr;
use std::time::Instant;

use axum::{
    body::{Body, HttpBody},
    extract::{ConnectInfo, Request},
    http::{HeaderMap, HeaderValue, Method, header},
    middleware::Next,
    response::Response,
};
use futures::StreamExt;

/// The `tracing` target of access log events.
pub const TARGET: &str = "mcpmux::access";
/// Longest value logged from a peer (a path, a session id, a tool name).
const MAX_VALUE_CHARS: usize = 256;
/// Largest POST body read for its JSON-RPC method (MCP requests are a few hundred bytes; a
/// larger one is logged without it rather than held twice in memory).
pub(crate) const MAX_PEEK_BYTES: u64 = 64 * 1024;

/// What the door learnt of a request, left in the answer's extensions for the log line.
#[derive(Debug, Clone, Default)]
pub(crate) struct Learnt {
    /// Who it comes from (`sub:…`, `client:…`, `token`, `ip:…`).
    pub client: Option<String>,
    /// The JSON-RPC method of a single request.
    pub rpc: Option<String>,
    /// The tool of a `tools/call`.
    pub tool: Option<String>,
}

/// `text` fit for a log line: control and bidi characters escaped (newlines and tabs too: a
/// peer must not start a line of its own), at most 256 characters.
pub(crate) fn clean(text: &str) -> String {
    let escaped = mcpmux::cli_support::terminal::escape_controls(text);
    let escaped = if escaped.contains(['\n', '\t']) {
        Cow::Owned(escaped.replace('\n', "\\n").replace('\t', "\\t"))
    } else {
        escaped
    };
    match escaped.char_indices().nth(MAX_VALUE_CHARS) {
        Some((end, _)) => format!("{}…", &escaped[..end]),
        None => escaped.into_owned(),
    }
}

/// The JSON-RPC method (and tool) of a request body, when it is one small request.
pub(crate) fn peek(body: &[u8], learnt: &mut Learnt) {
    #[derive(serde::Deserialize)]
    struct Message<'a> {
        #[serde(borrow)]
        method: Option<Cow<'a, str>>,
        params: Option<Params<'a>>,
    }
    #[derive(serde::Deserialize)]
    struct Params<'a> {
        #[serde(borrow)]
        name: Option<Cow<'a, str>>,
    }
    /// The same without its params, for params that are not an object with a string name.
    #[derive(serde::Deserialize)]
    struct MethodOnly<'a> {
        #[serde(borrow)]
        method: Option<Cow<'a, str>>,
    }
    let (method, params) = match serde_json::from_slice::<Message>(body) {
        Ok(message) => (message.method, message.params),
        Err(_) => match serde_json::from_slice::<MethodOnly>(body) {
            Ok(message) => (message.method, None),
            Err(_) => return,
        },
    };
    let Some(method) = method else {
        return;
    };
    if method == "tools/call" {
        learnt.tool = params.and_then(|p| p.name).map(|n| clean(&n));
    }
    learnt.rpc = Some(clean(&method));
}

/// The session a request belongs to: the answer's `Mcp-Session-Id` (a new session), else the
/// request's, as a hash: the id is what a client shows to use the session, so a log reader
/// must not learn it, yet lines of one session still match.
fn session(request: &HeaderMap, answer: &HeaderMap) -> Option<String> {
    answer
        .get("mcp-session-id")
        .or_else(|| request.get("mcp-session-id"))
        .map(|id| session_hash(id.as_bytes()))
}

/// The first 64 bits of a session id's SHA-256, in hex.
pub(crate) fn session_hash(id: &[u8]) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(id);
    digest[..8].iter().map(|b| format!("{b:02x}")).collect()
}

/// One request's line, written when dropped: when its answer's body has been sent, or
/// dropped because the peer left.
struct Line {
    started: Instant,
    method: Method,
    path: String,
    peer: Option<SocketAddr>,
    status: u16,
    session: Option<String>,
    learnt: Learnt,
}

impl Drop for Line {
    fn drop(&mut self) {
        let micros = self.started.elapsed().as_micros();
        let peer = self.peer.map(|p| p.ip().to_string());
        tracing::info!(
            target: TARGET,
            method = %self.method,
            path = %self.path,
            status = self.status,
            duration_ms = micros as f64 / 1000.0,
            peer = peer.as_deref(),
            client = self.learnt.client.as_deref(),
            session = self.session.as_deref(),
            rpc = self.learnt.rpc.as_deref(),
            tool = self.learnt.tool.as_deref(),
            "request"
        );
    }
}

/// Around every route: notes the request, and logs it once its answer is done.
pub(crate) async fn log_requests(request: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = request.method().clone();
    let path = clean(request.uri().path());
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|info| info.0);
    let headers = request.headers().clone();
    let response = next.run(request).await;
    let line = Line {
        started,
        method,
        path,
        peer,
        status: response.status().as_u16(),
        session: session(&headers, response.headers()),
        learnt: response
            .extensions()
            .get::<Learnt>()
            .cloned()
            .unwrap_or_default(),
    };
    let (mut parts, body) = response.into_parts();
    // A body of known length keeps its Content-Length once it is a stream.
    if let Some(length) = body.size_hint().exact()
        && length > 0
        && !parts.headers.contains_key(header::CONTENT_LENGTH)
    {
        parts
            .headers
            .insert(header::CONTENT_LENGTH, HeaderValue::from(length));
    }
    let body = body.into_data_stream().map(move |chunk| {
        let _written_when_done = &line;
        chunk
    });
    Response::from_parts(parts, Body::from_stream(body))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn peer_text_is_escaped_and_cut() {
        assert_eq!(clean("/mcp"), "/mcp");
        let hostile = clean("a\u{1b}]0;owned\u{7}\r\nb\u{202e}");
        assert!(!hostile.chars().any(|c| c.is_control()), "{hostile:?}");
        assert!(!hostile.contains('\u{202e}'), "{hostile:?}");
        let long = clean(&"x".repeat(10_000));
        assert_eq!(long.chars().count(), MAX_VALUE_CHARS + 1);
    }

    #[test]
    fn a_session_is_logged_as_a_hash_never_as_its_id() {
        let id = "4b0c1f8e-0000-4000-8000-123456789abc";
        let mut request = HeaderMap::new();
        request.insert("mcp-session-id", HeaderValue::from_static(id));
        let logged = session(&request, &HeaderMap::new()).unwrap();
        assert_eq!(logged.len(), 16);
        assert!(logged.chars().all(|c| c.is_ascii_hexdigit()), "{logged}");
        assert!(
            !id.contains(&logged) && !logged.contains("4b0c"),
            "{logged}"
        );
        // The same session, the same hash: its lines still match.
        let mut answer = HeaderMap::new();
        answer.insert("mcp-session-id", HeaderValue::from_static(id));
        assert_eq!(session(&HeaderMap::new(), &answer).unwrap(), logged);
        assert_eq!(session(&HeaderMap::new(), &HeaderMap::new()), None);
    }

    #[test]
    fn the_method_and_tool_of_a_small_request_are_learnt() {
        let mut learnt = Learnt::default();
        peek(
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"mcp__t__echo","arguments":{}}}"#,
            &mut learnt,
        );
        assert_eq!(learnt.rpc.as_deref(), Some("tools/call"));
        assert_eq!(learnt.tool.as_deref(), Some("mcp__t__echo"));
        for junk in [
            &b"[1,2]"[..],
            b"\xff\xfe",
            b"{\"method\": 5}",
            &b"[".repeat(100_000),
        ] {
            let mut learnt = Learnt::default();
            peek(junk, &mut learnt);
            assert!(learnt.rpc.is_none());
        }
        let mut learnt = Learnt::default();
        peek(br#"{"method":"tools/call","params":[1]}"#, &mut learnt);
        assert_eq!(learnt.rpc.as_deref(), Some("tools/call"));
        assert_eq!(learnt.tool, None);
    }
}
