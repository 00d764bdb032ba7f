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

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use reqwest::header::{ACCEPT, AUTHORIZATION, CACHE_CONTROL, CONTENT_TYPE, HeaderMap, HeaderValue};
use reqwest::{StatusCode, Url};
use rmcp::RoleClient;
use rmcp::model::{
    ClientJsonRpcMessage, ClientNotification, JsonRpcMessage, RequestId, ServerJsonRpcMessage,
    ServerResult,
};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio_util::sync::CancellationToken;

use super::{OpenFailure, nesting, oversize, unauthorized_advice};
use parser::{EventParser, Parsed};

mod parser;

pub use parser::{SseItem, SseParser};

/// Most requests remembered as awaiting their answers; past it (answers that never came) they
/// are forgotten.
const MAX_AWAITED: usize = 4096;
use crate::defaults;
use crate::error::{Error, fmt_duration};
use crate::redact::{redact_reqwest, redact_text, redact_url};

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
    /// The most one event may take: a larger one is skipped, and fails its request.
    max_event: usize,
    /// The requests sent whose answers have not come: what an answer too large to read
    /// fails when it names none.
    awaited: HashSet<RequestId>,
    /// Error answers made here (for answers too large to read), handed on first.
    failed: VecDeque<ServerJsonRpcMessage>,
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
    max_event: usize,
) -> Result<SseTransport, OpenFailure> {
    // Every message names the URL: shown without its query or userinfo.
    let fail = |message: String| Error::Connect {
        server: server.to_string(),
        message: redact_text(&message).into_owned(),
        stderr_tail: Vec::new(),
        source: None,
    };
    let sse_url = Url::parse(url)
        .map_err(|e| fail(format!("`{url}` is not a valid URL: {e}")).caused_by(e))?;
    if !matches!(sse_url.scheme(), "http" | "https") {
        return Err(fail(format!(
            "`{url}` is not an http:// or https:// URL (an SSE server is reached over HTTP)"
        ))
        .into());
    }
    let headers = super::header_map(server, headers, RESERVED_HEADERS)?;
    let open = open_stream(server, &sse_url, &headers, &client, max_event);
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
        max_event,
        awaited: HashSet::new(),
        failed: VecDeque::new(),
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
    max_event: usize,
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
    let mut parser = EventParser::new(max_event);
    loop {
        while let Some(parsed) = parser.next_event() {
            let Parsed::Event(event) = parsed else {
                tracing::debug!(
                    server,
                    "an SSE event over the bound before `endpoint`; ignored"
                );
                continue;
            };
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
            Ok(Some(chunk)) => parser.feed(&chunk),
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
        self.note(&item);
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
            if let Some(failure) = self.failed.pop_front() {
                return Some(failure);
            }
            while let Some(parsed) = self.parser.next_event() {
                let event = match parsed {
                    Parsed::Event(event) => event,
                    Parsed::Skipped { kind, ends } => {
                        self.skipped(&kind, &ends);
                        match self.failed.pop_front() {
                            Some(failure) => return Some(failure),
                            None => continue,
                        }
                    }
                };
                match event.kind.as_str() {
                    "message" if event.data.trim().is_empty() => {}
                    "message" => match self.read(event.data.as_bytes()) {
                        Some(Ok(message)) => {
                            self.observe(&message);
                            return Some(message);
                        }
                        None => {}
                        Some(Err(e)) => {
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
                Ok(Some(chunk)) => self.parser.feed(&chunk),
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

    /// Remembers a request sent as awaited; forgets one rmcp gave up on.
    fn note(&mut self, item: &TxJsonRpcMessage<RoleClient>) {
        match item {
            ClientJsonRpcMessage::Request(request) => {
                if self.awaited.len() >= MAX_AWAITED {
                    self.awaited.clear();
                }
                self.awaited.insert(request.id.clone());
            }
            ClientJsonRpcMessage::Notification(notification) => {
                if let ClientNotification::CancelledNotification(cancelled) =
                    &notification.notification
                    && let Some(id) = &cancelled.params.request_id
                {
                    self.awaited.remove(id);
                }
            }
            _ => {}
        }
    }

    /// One `message` event's data as a message, through the nesting screen: `None` when it
    /// is dropped there.
    fn read(&self, data: &[u8]) -> Option<Result<ServerJsonRpcMessage, serde_json::Error>> {
        let replaced;
        let data = match nesting::screen(data) {
            nesting::Screen::Pass => data,
            nesting::Screen::Answer(replacement) => {
                tracing::warn!(server = %self.server, "a response is nested too deep to decode: failing its request");
                replaced = replacement;
                &replaced[..]
            }
            nesting::Screen::Drop(reason) => {
                tracing::warn!(server = %self.server, "dropping a message: {reason}");
                return None;
            }
        };
        Some(serde_json::from_slice(data))
    }

    /// An event of type `kind` over the bound was skipped, with `ends`: the request it
    /// answers fails, or every request awaited when it names none.
    fn skipped(&mut self, kind: &str, ends: &oversize::Skipped) {
        let reason = oversize::reason(self.max_event);
        if !matches!(kind, "" | "message") {
            tracing::debug!(server = %self.server, kind, "ignoring an SSE event: {reason}");
            return;
        }
        let failed: Vec<RequestId> = match ends.verdict() {
            oversize::Verdict::FromServer => {
                tracing::warn!(server = %self.server, "dropping a message of the server's: {reason}");
                return;
            }
            oversize::Verdict::Answers(id) => {
                tracing::warn!(server = %self.server, %id, "failing the request: {reason}");
                self.awaited.remove(&id);
                vec![id]
            }
            oversize::Verdict::Unknown => {
                tracing::warn!(server = %self.server, "failing every request in flight (the answer names none): {reason}");
                self.awaited.drain().collect()
            }
        };
        for id in failed {
            let error = oversize::error(self.max_event);
            self.failed
                .push_back(ServerJsonRpcMessage::error(error, Some(id)));
        }
    }

    fn observe(&mut self, message: &ServerJsonRpcMessage) {
        match message {
            JsonRpcMessage::Response(response) => {
                self.awaited.remove(&response.id);
            }
            JsonRpcMessage::Error(error) => {
                if let Some(id) = &error.id {
                    self.awaited.remove(id);
                }
            }
            _ => {}
        }
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
async fn read_preview(response: reqwest::Response, max: usize) -> String {
    tidy_body(&crate::http_body::read_prefix(response, max, None).await)
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

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
