//! Legacy HTTP+SSE (protocol 2024-11-05), our own client: rmcp dropped theirs.
//!
//! `GET` the SSE URL and wait for the `endpoint` event (resolved against the SSE URL, same
//! origin only); then every JSON-RPC message we send is a `POST` to that endpoint, and every
//! message of the server arrives as a `message` event on the one SSE stream. Nothing
//! reconnects here: when the stream ends the session ends, and the supervisor decides. A `POST`
//! refused with HTTP 401 ends the session too: the credentials are no longer good, and only a
//! new connection (its `headersHelper` run again) can bring new ones; if it is refused as well
//! the server is left needing auth.
//!
//! Knows HTTP and the SSE wire format; nothing of tools, calls or the hub.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use reqwest::header::{ACCEPT, AUTHORIZATION, CACHE_CONTROL, CONTENT_TYPE, HeaderMap, HeaderValue};
use reqwest::{StatusCode, Url};
use rmcp::RoleClient;
use rmcp::model::{JsonRpcMessage, ServerJsonRpcMessage, ServerResult};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio_util::sync::CancellationToken;

use super::{OpenFailure, unauthorized_advice};
use crate::defaults;
use crate::error::{Error, fmt_duration};
use crate::redact::{redact_reqwest, redact_text, redact_url};

/// Largest SSE event accepted (field names and data together): the same bound as one stdio
/// line, so a result that fits one transport fits the other.
const MAX_EVENT_BYTES: usize = defaults::MAX_STDIO_FRAME;
/// How much of an error body we read to quote it.
const BODY_PREVIEW_BYTES: usize = 2048;
/// How much of a success body (`Accepted`) we read, so the pooled connection can be reused.
const DRAIN_BYTES: usize = 64 * 1024;
/// Headers this transport sets itself.
const RESERVED_HEADERS: &[&str] = &["accept", "content-type", "mcp-protocol-version"];

/// Why sending a message failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SseError {
    #[error("cannot encode the message: {0}")]
    Encode(#[source] serde_json::Error),
    #[error("POST to the message endpoint {} failed: {source}", redact_url(endpoint.as_str()))]
    Request {
        endpoint: Url,
        #[source]
        source: reqwest::Error,
    },
    /// HTTP 401: the server wants credentials (see [`super::HandshakeRefusal::Unauthorized`]).
    #[error(
        "POST to the message endpoint {} answered HTTP 401 Unauthorized{}; {}",
        redact_url(endpoint.as_str()),
        preview_suffix(.body),
        unauthorized_advice(*.sent_authorization)
    )]
    Unauthorized {
        endpoint: Url,
        /// Whether the request carried an `Authorization` header (then it was refused).
        sent_authorization: bool,
        body: String,
    },
    #[error(
        "POST to the message endpoint {} answered HTTP {status}{}",
        redact_url(endpoint.as_str()),
        preview_suffix(.body)
    )]
    Status {
        endpoint: Url,
        status: StatusCode,
        body: String,
    },
    #[error("the SSE transport is closed")]
    Closed,
}

fn preview_suffix(body: &str) -> String {
    if body.is_empty() {
        String::new()
    } else {
        format!(": {body}")
    }
}

/// Where and how messages are posted; shared by the concurrent sends.
struct PostTarget {
    server: String,
    client: reqwest::Client,
    endpoint: Url,
    headers: HeaderMap,
    /// Set from the `initialize` result; sent as `MCP-Protocol-Version` afterwards, as the
    /// TypeScript SDK does.
    protocol_version: OnceLock<HeaderValue>,
}

/// A connected legacy SSE session: the open event stream and the endpoint to post to.
pub(crate) struct SseTransport {
    server: String,
    target: Arc<PostTarget>,
    /// The event stream; `None` once closed.
    stream: Option<reqwest::Response>,
    parser: EventParser,
    /// Cancels the `POST`s in flight when the transport is closed or dropped.
    closed: CancellationToken,
}

impl Drop for SseTransport {
    fn drop(&mut self) {
        self.closed.cancel();
    }
}

/// Opens the SSE stream at `url` and waits (at most `within`) for the server's `endpoint`.
pub(crate) async fn connect(
    server: &str,
    url: &str,
    headers: &BTreeMap<String, String>,
    client: reqwest::Client,
    within: Duration,
) -> Result<SseTransport, OpenFailure> {
    // Every message names the URL: shown without its query or userinfo.
    let fail = |message: String| Error::Connect {
        server: server.to_string(),
        message: redact_text(&message).into_owned(),
        stderr_tail: Vec::new(),
    };
    let sse_url = Url::parse(url).map_err(|e| fail(format!("`{url}` is not a valid URL: {e}")))?;
    if !matches!(sse_url.scheme(), "http" | "https") {
        return Err(fail(format!(
            "`{url}` is not an http:// or https:// URL (an SSE server is reached over HTTP)"
        ))
        .into());
    }
    let headers = super::header_map(server, headers, RESERVED_HEADERS)?;
    let open = open_stream(server, &sse_url, &headers, &client);
    let (stream, parser, endpoint) = match tokio::time::timeout(within, open).await {
        Ok(opened) => opened.map_err(|refusal| OpenFailure {
            error: fail(refusal.message),
            unauthorized: refusal.unauthorized,
        })?,
        Err(_) => {
            return Err(fail(format!(
                "the SSE server at {sse_url} sent no `endpoint` event within the startup \
                 timeout of {} (is it a legacy HTTP+SSE server? raise `startup_timeout` if it \
                 is slow to start)",
                fmt_duration(within)
            ))
            .into());
        }
    };
    tracing::debug!(server, endpoint = %redact_url(endpoint.as_str()), "SSE session open");
    Ok(SseTransport {
        server: server.to_string(),
        target: Arc::new(PostTarget {
            server: server.to_string(),
            client,
            endpoint,
            headers,
            protocol_version: OnceLock::new(),
        }),
        stream: Some(stream),
        parser,
        closed: CancellationToken::new(),
    })
}

/// Why the SSE stream did not open: words for `Error::Connect`, and whether the `GET` was
/// answered HTTP 401.
struct Refusal {
    message: String,
    unauthorized: bool,
}

impl From<String> for Refusal {
    fn from(message: String) -> Self {
        Refusal {
            message,
            unauthorized: false,
        }
    }
}

/// The `GET` and the wait for `endpoint`.
async fn open_stream(
    server: &str,
    sse_url: &Url,
    headers: &HeaderMap,
    client: &reqwest::Client,
) -> Result<(reqwest::Response, EventParser, Url), Refusal> {
    let mut response = client
        .get(sse_url.clone())
        .headers(headers.clone())
        .header(ACCEPT, "text/event-stream")
        .header(CACHE_CONTROL, "no-cache")
        .send()
        .await
        .map_err(|e| format!("GET {sse_url} failed: {}", error_chain(&e)))?;
    let status = response.status();
    if status == StatusCode::UNAUTHORIZED {
        let body = read_preview(response, BODY_PREVIEW_BYTES).await;
        return Err(Refusal {
            message: format!(
                "GET {sse_url} answered HTTP {status}{}; {}",
                preview_suffix(&body),
                unauthorized_advice(headers.contains_key(AUTHORIZATION))
            ),
            unauthorized: true,
        });
    }
    if !status.is_success() {
        let body = read_preview(response, BODY_PREVIEW_BYTES).await;
        let hint = if status == StatusCode::FORBIDDEN {
            "the server refuses this client: check the credentials in the server's `headers` \
             or `headersHelper`"
        } else {
            "is this the server's SSE URL, often ending in /sse?"
        };
        return Err(format!(
            "GET {sse_url} answered HTTP {status}{} ({hint})",
            preview_suffix(&body)
        )
        .into());
    }
    let content_type = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    if !content_type.starts_with("text/event-stream") {
        return Err(format!(
            "GET {sse_url} answered `{content_type}`, not an SSE stream (for a streamable \
             HTTP server use type `http`)"
        )
        .into());
    }
    let mut parser = EventParser::new(MAX_EVENT_BYTES);
    loop {
        while let Some(event) = parser.next_event() {
            match event.kind.as_str() {
                "endpoint" => {
                    let endpoint = resolve_endpoint(sse_url, &event.data)?;
                    return Ok((response, parser, endpoint));
                }
                kind => {
                    tracing::debug!(server, kind, "SSE event before `endpoint`; ignored");
                }
            }
        }
        match response.chunk().await {
            Ok(Some(chunk)) => parser
                .feed(&chunk)
                .map_err(|e| format!("the SSE stream at {sse_url}: {e}"))?,
            Ok(None) => {
                return Err(format!(
                    "the SSE stream at {sse_url} ended before the server sent its `endpoint` \
                     event"
                )
                .into());
            }
            Err(e) => {
                return Err(format!(
                    "the SSE stream at {sse_url} broke before the `endpoint` event: {}",
                    error_chain(&e)
                )
                .into());
            }
        }
    }
}

/// The `endpoint` event's URL, relative to the SSE URL; another origin is refused (a server
/// must not send our messages, and the headers with them, elsewhere).
fn resolve_endpoint(sse_url: &Url, data: &str) -> Result<Url, String> {
    let data = data.trim();
    if data.is_empty() {
        return Err("the server's `endpoint` event is empty".into());
    }
    let endpoint = sse_url
        .join(data)
        .map_err(|e| format!("the server's `endpoint` event `{data}` is not a URL: {e}"))?;
    if endpoint.origin() != sse_url.origin() {
        return Err(format!(
            "the server's `endpoint` {endpoint} is on another origin than the SSE URL \
             {sse_url}; refusing to send messages there"
        ));
    }
    Ok(endpoint)
}

impl Transport<RoleClient> for SseTransport {
    type Error = SseError;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let target = self.target.clone();
        let closed = self.closed.clone();
        let body = serde_json::to_vec(&item).map_err(SseError::Encode);
        async move {
            let result = post(&target, body?, &closed).await;
            if let Err(e) = &result
                && !matches!(e, SseError::Closed)
            {
                // The caller sees only "connection lost"; the reason is here.
                tracing::warn!(server = %target.server, "{}", error_chain(e));
                if matches!(e, SseError::Unauthorized { .. }) {
                    closed.cancel();
                }
            }
            result
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            while let Some(event) = self.parser.next_event() {
                match event.kind.as_str() {
                    "message" if event.data.trim().is_empty() => {}
                    "message" => match serde_json::from_str::<ServerJsonRpcMessage>(&event.data) {
                        Ok(message) => {
                            self.observe(&message);
                            return Some(message);
                        }
                        Err(e) => {
                            tracing::warn!(server = %self.server, error = %e, "skipping an SSE message that is not JSON-RPC");
                        }
                    },
                    "endpoint" => {
                        tracing::debug!(server = %self.server, "ignoring a second `endpoint` event");
                    }
                    kind => tracing::debug!(server = %self.server, kind, "ignoring an SSE event"),
                }
            }
            // Cancel-safe: the parser keeps its state in `self`, and a dropped `chunk()`
            // future loses no bytes.
            let stream = self.stream.as_mut()?;
            let chunk = tokio::select! {
                chunk = stream.chunk() => chunk,
                // Ended from a `send` (credentials refused): no more messages are read.
                () = self.closed.cancelled() => {
                    self.end();
                    return None;
                }
            };
            match chunk {
                Ok(Some(chunk)) => {
                    if let Err(e) = self.parser.feed(&chunk) {
                        tracing::warn!(server = %self.server, "closing the SSE session: {e}");
                        self.end();
                    }
                }
                Ok(None) => {
                    tracing::debug!(server = %self.server, "the server closed the SSE stream");
                    self.end();
                }
                Err(e) => {
                    tracing::warn!(server = %self.server, "the SSE stream broke: {}", error_chain(&e));
                    self.end();
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.end();
        Ok(())
    }
}

impl SseTransport {
    /// Drops the stream (the server sees the session end) and aborts the `POST`s in flight.
    /// Events already parsed are still delivered.
    fn end(&mut self) {
        self.stream = None;
        self.closed.cancel();
    }

    fn observe(&self, message: &ServerJsonRpcMessage) {
        if let JsonRpcMessage::Response(response) = message
            && let ServerResult::InitializeResult(init) = &response.result
            && let Ok(value) = HeaderValue::from_str(init.protocol_version.as_str())
        {
            let _ = self.target.protocol_version.set(value);
        }
    }
}

/// One message to the endpoint; `Ok` once the server has accepted it.
async fn post(
    target: &PostTarget,
    body: Vec<u8>,
    closed: &CancellationToken,
) -> Result<(), SseError> {
    let mut request = target
        .client
        .post(target.endpoint.clone())
        .headers(target.headers.clone())
        .header(CONTENT_TYPE, "application/json")
        .timeout(defaults::SSE_POST_TIMEOUT)
        .body(body);
    if let Some(version) = target.protocol_version.get() {
        request = request.header("mcp-protocol-version", version.clone());
    }
    let response = tokio::select! {
        response = request.send() => response.map_err(|source| SseError::Request {
            endpoint: target.endpoint.clone(),
            source: redact_reqwest(source),
        })?,
        () = closed.cancelled() => return Err(SseError::Closed),
    };
    let status = response.status();
    if status.is_success() {
        // Read the short `Accepted` body so the pooled connection can be reused.
        tokio::select! {
            _ = read_preview(response, DRAIN_BYTES) => {}
            () = closed.cancelled() => {}
        }
        return Ok(());
    }
    let body = read_preview(response, BODY_PREVIEW_BYTES).await;
    if status == StatusCode::UNAUTHORIZED {
        return Err(SseError::Unauthorized {
            endpoint: target.endpoint.clone(),
            sent_authorization: target.headers.contains_key(AUTHORIZATION),
            body,
        });
    }
    Err(SseError::Status {
        endpoint: target.endpoint.clone(),
        status,
        body,
    })
}

/// Reads at most `max` bytes of a body, as [`tidy_body`] shows it.
async fn read_preview(mut response: reqwest::Response, max: usize) -> String {
    let mut body = Vec::new();
    while body.len() < max {
        match response.chunk().await {
            Ok(Some(chunk)) => body.extend_from_slice(&chunk),
            _ => break,
        }
    }
    body.truncate(max);
    tidy_body(&body)
}

/// Longest error body quoted in a message, in characters.
const QUOTED_BODY_CHARS: usize = 300;

/// An error body fit for one line of an error message: HTML tags dropped (servers answer
/// errors with an HTML page), whitespace collapsed, cut to a few hundred characters.
pub(crate) fn tidy_body(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    let mut out = String::new();
    let mut in_tag = false;
    let html = text.starts_with('<');
    for c in text.chars() {
        match c {
            '<' if html => in_tag = true,
            '>' if html && in_tag => {
                in_tag = false;
                out.push(' ');
            }
            _ if in_tag => {}
            c if c.is_whitespace() => out.push(' '),
            c => out.push(c),
        }
    }
    let mut tidy = out.split_whitespace().collect::<Vec<_>>().join(" ");
    if let Some((cut, _)) = tidy.char_indices().nth(QUOTED_BODY_CHARS) {
        tidy.truncate(cut);
        tidy.push('…');
    }
    tidy
}

/// An error and its sources on one line (reqwest's own message hides the cause), every URL in
/// it without its query or userinfo.
pub(crate) fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let line = cause.to_string();
        if !text.contains(&line) {
            text.push_str(": ");
            text.push_str(&line);
        }
        source = cause.source();
    }
    redact_text(&text).into_owned()
}

/// One dispatched SSE event.
#[derive(Debug, PartialEq, Eq)]
struct SseEvent {
    /// The `event` field; `message` when absent.
    kind: String,
    /// The `data` lines joined with `\n`.
    data: String,
}

/// An event that grew past the limit.
#[derive(Debug, thiserror::Error)]
#[error("an SSE event exceeded the maximum size of {max} bytes")]
struct EventTooLarge {
    max: usize,
}

/// The SSE wire format (WHATWG "event stream interpretation"), incremental and bounded:
/// chunks go in, whole events come out. Lines end in CRLF, LF or CR; `id` and `retry` are
/// read and ignored (nothing reconnects); comments are skipped.
struct EventParser {
    max: usize,
    /// The current line so far.
    line: Vec<u8>,
    /// The previous chunk ended in CR: a leading LF belongs to that line end.
    after_cr: bool,
    /// The first line may start with a byte order mark.
    first_line: bool,
    kind: String,
    data: String,
    has_data: bool,
    /// Bytes kept for the current event (event type and data so far).
    size: usize,
    ready: VecDeque<SseEvent>,
}

impl EventParser {
    fn new(max: usize) -> Self {
        Self {
            max,
            line: Vec::new(),
            after_cr: false,
            first_line: true,
            kind: String::new(),
            data: String::new(),
            has_data: false,
            size: 0,
            ready: VecDeque::new(),
        }
    }

    fn next_event(&mut self) -> Option<SseEvent> {
        self.ready.pop_front()
    }

    /// Parses a chunk; events it completes are queued even when it then fails.
    fn feed(&mut self, mut chunk: &[u8]) -> Result<(), EventTooLarge> {
        if self.after_cr {
            self.after_cr = false;
            if let Some(rest) = chunk.strip_prefix(b"\n") {
                chunk = rest;
            }
        }
        while !chunk.is_empty() {
            match chunk.iter().position(|b| *b == b'\n' || *b == b'\r') {
                Some(pos) => {
                    self.extend_line(&chunk[..pos])?;
                    self.end_line()?;
                    let cr = chunk[pos] == b'\r';
                    chunk = &chunk[pos + 1..];
                    if cr {
                        match chunk.first() {
                            Some(b'\n') => chunk = &chunk[1..],
                            Some(_) => {}
                            None => self.after_cr = true,
                        }
                    }
                }
                None => {
                    self.extend_line(chunk)?;
                    chunk = &[];
                }
            }
        }
        Ok(())
    }

    fn extend_line(&mut self, bytes: &[u8]) -> Result<(), EventTooLarge> {
        if self.size + self.line.len() + bytes.len() > self.max {
            return Err(self.too_large());
        }
        self.line.extend_from_slice(bytes);
        Ok(())
    }

    fn too_large(&mut self) -> EventTooLarge {
        // Drop what was buffered: the stream is unusable past this point anyway.
        self.line = Vec::new();
        self.data = String::new();
        EventTooLarge { max: self.max }
    }

    fn end_line(&mut self) -> Result<(), EventTooLarge> {
        let mut line = std::mem::take(&mut self.line);
        if std::mem::take(&mut self.first_line) && line.starts_with(b"\xEF\xBB\xBF") {
            line.drain(..3);
        }
        if line.is_empty() {
            self.dispatch();
            return Ok(());
        }
        if line[0] == b':' {
            return Ok(());
        }
        let (field, value) = match line.iter().position(|b| *b == b':') {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (&line[..], &[][..]),
        };
        match field {
            b"event" => {
                self.kind = String::from_utf8_lossy(value).into_owned();
                self.size += self.kind.len();
            }
            b"data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(&String::from_utf8_lossy(value));
                self.has_data = true;
                self.size += value.len() + 1;
            }
            // `id` and `retry` matter only for reconnecting, which this transport does not do.
            _ => {}
        }
        if self.size > self.max {
            return Err(self.too_large());
        }
        Ok(())
    }

    fn dispatch(&mut self) {
        let kind = std::mem::take(&mut self.kind);
        let data = std::mem::take(&mut self.data);
        if std::mem::take(&mut self.has_data) {
            let kind = if kind.is_empty() {
                "message".to_string()
            } else {
                kind
            };
            self.ready.push_back(SseEvent { kind, data });
        }
        self.size = 0;
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn events(parser: &mut EventParser) -> Vec<(String, String)> {
        std::iter::from_fn(|| parser.next_event())
            .map(|e| (e.kind, e.data))
            .collect()
    }

    fn pair(kind: &str, data: &str) -> (String, String) {
        (kind.to_string(), data.to_string())
    }

    #[test]
    fn parses_events_split_anywhere_with_any_line_ending() {
        let wire = "\u{feff}: comment\r\nevent: endpoint\r\ndata: /message?sessionId=1\r\n\r\n\
                    data: {\"a\":\ndata: 1}\n\nid: 7\rretry: 10\rdata:x\r\r";
        let whole = {
            let mut parser = EventParser::new(1024);
            parser.feed(wire.as_bytes()).unwrap();
            events(&mut parser)
        };
        assert_eq!(
            whole,
            vec![
                pair("endpoint", "/message?sessionId=1"),
                pair("message", "{\"a\":\n1}"),
                pair("message", "x"),
            ]
        );
        // Byte by byte (CR and LF in separate chunks) gives the same events.
        let mut parser = EventParser::new(1024);
        for byte in wire.as_bytes() {
            parser.feed(std::slice::from_ref(byte)).unwrap();
        }
        assert_eq!(events(&mut parser), whole);
    }

    #[test]
    fn an_event_without_data_is_not_dispatched_and_empty_data_is() {
        let mut parser = EventParser::new(1024);
        parser.feed(b"event: ping\n\ndata:\n\n").unwrap();
        assert_eq!(events(&mut parser), vec![pair("message", "")]);
    }

    #[test]
    fn an_oversized_event_is_an_error_not_a_buffer() {
        let mut parser = EventParser::new(16);
        parser.feed(b"data: small\n\n").unwrap();
        let error = parser.feed(&[b'x'; 64]).unwrap_err();
        assert_eq!(
            error.to_string(),
            "an SSE event exceeded the maximum size of 16 bytes"
        );
        assert_eq!(events(&mut parser), vec![pair("message", "small")]);
        // Many short data lines add up too.
        let mut parser = EventParser::new(16);
        assert!(
            parser
                .feed(b"data: 12345\ndata: 12345\ndata: 12345\n")
                .is_err()
        );
    }

    #[test]
    fn error_bodies_are_one_short_line() {
        let page = b"<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<title>Error</title>\n</head>\n\
                     <body>\n<pre>Cannot GET /nope</pre>\n</body>\n</html>\n";
        assert_eq!(tidy_body(page), "Error Cannot GET /nope");
        assert_eq!(
            tidy_body(b"  Not Found:\n  session <x>  "),
            "Not Found: session <x>"
        );
        let long = tidy_body(&[b'a'; 1000]);
        assert_eq!(long.chars().count(), QUOTED_BODY_CHARS + 1);
        assert!(long.ends_with('…'));
    }

    #[test]
    fn the_endpoint_resolves_against_the_sse_url_on_the_same_origin_only() {
        let sse = Url::parse("http://127.0.0.1:3001/mcp/sse?x=1").unwrap();
        assert_eq!(
            resolve_endpoint(&sse, "/message?sessionId=abc")
                .unwrap()
                .as_str(),
            "http://127.0.0.1:3001/message?sessionId=abc"
        );
        assert_eq!(
            resolve_endpoint(&sse, "messages/?session_id=1")
                .unwrap()
                .as_str(),
            "http://127.0.0.1:3001/mcp/messages/?session_id=1"
        );
        assert_eq!(
            resolve_endpoint(&sse, "http://127.0.0.1:3001/m")
                .unwrap()
                .as_str(),
            "http://127.0.0.1:3001/m"
        );
        for elsewhere in [
            "http://evil.example/message",
            "//evil.example/message",
            "https://127.0.0.1:3001/message",
            "http://127.0.0.1:3002/message",
        ] {
            let error = resolve_endpoint(&sse, elsewhere).unwrap_err();
            assert!(error.contains("another origin"), "{elsewhere}: {error}");
        }
        assert!(resolve_endpoint(&sse, "  ").is_err());
    }
}
