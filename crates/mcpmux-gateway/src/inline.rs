//! A plain request on an established `/mcp` session answered from its POST's own task, as
//! `application/json`, without rmcp's session worker and serve loop (issue 39): the body is
//! parsed once, the session's handler is called in place and its answer written with the
//! head. rmcp serves such a request through three tasks and four channels (the POST to the
//! worker, the worker to the serve loop, the serve loop to a handler task, the answer back the
//! same way), then as an SSE stream. Only what cannot need another stream is answered here:
//! `tools/call`, `prompts/get`, `resources/read`, the lists and `ping`, without a per-request
//! protocol version or SEP-2243 headers, on a handshake-era session of the caller's
//! (`Sessions::inline_handler`) whose client declared nothing the gateway could ask of it
//! mid-call (`Session::inline_peer`). A progress token is answered here too (rmcp's and other
//! SDKs' clients send one with every call): its steps go on the call's own answer, which
//! turns into an SSE stream at the first step (`progress::InlineProgress`); a call with no
//! step before its answer is still one JSON answer. Everything else — the handshake, other
//! methods, notifications, answers, GET and DELETE, a body that does not parse — goes to rmcp
//! as it came, which keeps one owner per request: a request is answered here or there, never
//! both. A `notifications/cancelled` naming a request answered here cancels it (and still
//! reaches rmcp, which ignores what it does not know).

use std::borrow::Cow;
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use axum::{
    body::{Body, Bytes},
    extract::{Request, State},
    http::{HeaderMap, HeaderValue, Method, StatusCode, header, request::Parts},
    middleware::Next,
    response::{IntoResponse, Response},
};
use http_body::Body as _;
use rmcp::{
    RoleServer, Service,
    model::{
        CallToolRequest, CallToolRequestParams, ClientJsonRpcMessage, ClientNotification,
        ClientRequest, ErrorData, GetExtensions, GetMeta, JsonRpcRequest, ProgressNotification,
        ProgressNotificationParam, RequestId, ServerJsonRpcMessage, ServerNotification,
        ServerResult,
    },
    service::{Peer, RequestContext},
};
use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::handler::Gateway;
use crate::post_head::{EVENT_STREAM, JSON, PROTOCOL_VERSION, SESSION_ID, plain};
use crate::progress::InlineProgress;
use crate::sessions::Sessions;

/// What the middleware needs: the sessions, and the largest body read.
pub(crate) struct Inline {
    pub sessions: Arc<Sessions>,
    pub max_body_bytes: usize,
}

/// The middleware in front of rmcp's `/mcp` service.
pub(crate) async fn answer_inline(
    State(inline): State<Arc<Inline>>,
    request: Request,
    next: Next,
) -> Response {
    if request.method() != Method::POST {
        return next.run(request).await;
    }
    let Some(session) = plain_post(request.headers()) else {
        return next.run(request).await;
    };
    let handler = inline.sessions.inline_handler(&session);
    let Some(handler) = handler.and_then(|made| made.downcast_ref::<Gateway>().cloned()) else {
        return next.run(request).await;
    };
    let (parts, body) = request.into_parts();
    let declared = parts
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|n| n.to_str().ok()?.parse::<u64>().ok());
    if declared.is_some_and(|n| n > inline.max_body_bytes as u64) {
        return too_large(inline.max_body_bytes);
    }
    let bytes = match read(body, inline.max_body_bytes).await {
        Ok(bytes) => bytes,
        Err(refused) => return refused,
    };
    let passed_on = |parts: Parts, bytes: Bytes| Request::from_parts(parts, Body::from(bytes));
    match sort(&bytes) {
        Sorted::Plain(request) => match handler.own_session().inline_peer() {
            Some(peer) => answer(&inline.sessions, session, handler, peer, *request, parts).await,
            None => next.run(passed_on(parts, bytes)).await,
        },
        Sorted::Cancelled(id) => {
            inline.sessions.cancel_inline(&session, &id);
            next.run(passed_on(parts, bytes)).await
        }
        Sorted::Other => next.run(passed_on(parts, bytes)).await,
    }
}

/// The session a POST names, when nothing in its head asks more than a plain answer: JSON
/// in, both JSON and SSE accepted (rmcp answers 406 otherwise), no protocol version past the
/// handshake era nor an unknown one (rmcp checks those), no SEP-2243 header.
fn plain_post(headers: &HeaderMap) -> Option<String> {
    let session = headers.get(SESSION_ID)?.to_str().ok()?;
    let version_ok = headers.get_all(PROTOCOL_VERSION).iter().all(|v| {
        v.to_str().is_ok_and(|v| {
            v < rmcp::model::ProtocolVersion::V_2026_07_28.as_str()
                && rmcp::model::ProtocolVersion::KNOWN_VERSIONS
                    .iter()
                    .any(|known| known.as_str() == v)
        })
    });
    (plain(headers) && version_ok).then(|| session.to_owned())
}

/// What a POST's body is, to this path.
enum Sorted {
    /// A request answered here.
    Plain(Box<JsonRpcRequest<ClientRequest>>),
    /// `notifications/cancelled` naming a request.
    Cancelled(RequestId),
    /// Anything else: rmcp's.
    Other,
}

fn sort(bytes: &[u8]) -> Sorted {
    if let Some(call) = tool_call(bytes) {
        return if is_plain(&call.request) {
            Sorted::Plain(Box::new(call))
        } else {
            Sorted::Other
        };
    }
    // serde_json's own depth limit bounds a deep body; what does not parse is rmcp's to answer.
    let Ok(message) = serde_json::from_slice::<ClientJsonRpcMessage>(bytes) else {
        return Sorted::Other;
    };
    match message {
        ClientJsonRpcMessage::Request(request) if is_plain(&request.request) => {
            Sorted::Plain(Box::new(request))
        }
        ClientJsonRpcMessage::Notification(notification) => match notification.notification {
            ClientNotification::CancelledNotification(cancelled) => cancelled
                .params
                .request_id
                .map_or(Sorted::Other, Sorted::Cancelled),
            _ => Sorted::Other,
        },
        _ => Sorted::Other,
    }
}

/// A JSON-RPC request's envelope, its params left unread.
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow)]
    jsonrpc: Cow<'a, str>,
    id: RequestId,
    #[serde(borrow)]
    method: Cow<'a, str>,
    #[serde(borrow)]
    params: &'a RawValue,
}

/// A `tools/call` read straight into its request. rmcp's message types are untagged and
/// flattened enums, which serde reads through a buffered copy and a trial of each variant
/// (a fifth of the gateway's instructions per call, by callgrind); the method nearly every
/// POST carries is read here field by field, as rmcp would read it (`_meta` kept in the
/// extensions, tested against rmcp's reading). Anything else, or anything this reading
/// refuses, takes rmcp's full parse.
fn tool_call(bytes: &[u8]) -> Option<JsonRpcRequest<ClientRequest>> {
    let envelope: Envelope = serde_json::from_slice(bytes).ok()?;
    if envelope.jsonrpc != "2.0" || envelope.method != "tools/call" {
        return None;
    }
    let params: CallToolRequestParams = serde_json::from_str(envelope.params.get()).ok()?;
    let mut request = CallToolRequest::new(params);
    if let Some(meta) = request.params.meta.take() {
        request.extensions.insert(meta);
    }
    Some(JsonRpcRequest::new(
        envelope.id,
        ClientRequest::CallToolRequest(request),
    ))
}

/// A method answered here, asked in a way that needs no stream beside its answer's.
fn is_plain(request: &ClientRequest) -> bool {
    let method = matches!(
        request,
        ClientRequest::CallToolRequest(_)
            | ClientRequest::GetPromptRequest(_)
            | ClientRequest::ReadResourceRequest(_)
            | ClientRequest::ListToolsRequest(_)
            | ClientRequest::ListPromptsRequest(_)
            | ClientRequest::ListResourcesRequest(_)
            | ClientRequest::ListResourceTemplatesRequest(_)
            | ClientRequest::PingRequest(_)
    );
    let meta = request.get_meta();
    method && meta.protocol_version().is_none()
}

/// Runs `request` on the session's handler in this task and answers it as JSON; a call whose
/// client asked for progress and got a step before its answer is answered as an SSE stream
/// instead, its steps and then its answer, the call running on as hyper reads it.
async fn answer(
    sessions: &Arc<Sessions>,
    session: String,
    handler: Gateway,
    peer: Peer<RoleServer>,
    request: JsonRpcRequest<ClientRequest>,
    parts: Parts,
) -> Response {
    let JsonRpcRequest {
        id, mut request, ..
    } = request;
    let mut context = RequestContext::new(id.clone(), peer);
    context.meta = std::mem::take(request.get_meta_mut());
    context.extensions = std::mem::take(request.extensions_mut());
    // What rmcp puts there, and what the handler reads (trace context, task holder).
    context.extensions.insert(parts);
    let steps = context.meta.get_progress_token().map(|_| {
        let (sender, steps) = mpsc::channel(PROGRESS_QUEUE);
        context.extensions.insert(InlineProgress(sender));
        steps
    });
    let cancel = CancellationToken::new();
    context.ct = cancel.clone();
    sessions.started(&session, id.clone(), cancel.clone());
    // The client gone (this future, or the stream that owns it, dropped) cancels the call
    // upstream, as rmcp would.
    let running = Running {
        sessions: sessions.clone(),
        session,
        id: id.clone(),
        _cancel: cancel.drop_guard(),
    };
    let Some(steps) = steps else {
        let result = handler.handle_request(request, context).await;
        drop(running);
        return as_json(&reply(result, id));
    };
    let mut answering = Answering {
        call: Some(Box::pin(async move {
            let result = handler.handle_request(request, context).await;
            drop(running);
            result
        })),
        steps,
        queued: VecDeque::new(),
        id,
    };
    answering.advance().await;
    // Ended with no step before its answer: one JSON answer, as without a token.
    if answering.call.is_none()
        && answering.queued.len() == 1
        && let Some(answer) = answering.queued.pop_front()
    {
        return as_json(&answer);
    }
    let events = futures::stream::unfold(answering, |mut answering| async move {
        loop {
            if let Some(message) = answering.queued.pop_front() {
                return Some((event(&message), answering));
            }
            answering.call.as_ref()?;
            answering.advance().await;
        }
    });
    let mut response = Response::new(Body::from_stream(events));
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(EVENT_STREAM));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// A call answered inline that asked for progress: what it has sent and not yet written, its
/// answer last.
struct Answering<F> {
    /// `None` once it has ended (its answer queued).
    call: Option<Pin<Box<F>>>,
    steps: mpsc::Receiver<ProgressNotificationParam>,
    queued: VecDeque<ServerJsonRpcMessage>,
    id: RequestId,
}

impl<F: Future<Output = Result<ServerResult, ErrorData>>> Answering<F> {
    /// Waits for the call's next step or its end. The call may queue a step and end in one
    /// poll: at its end the steps still queued are taken before its answer, so none is lost
    /// or written after it.
    async fn advance(&mut self) {
        let Some(call) = self.call.as_mut() else {
            return;
        };
        tokio::select! {
            // A step sent before the answer is passed on before it.
            biased;
            Some(step) = self.steps.recv() => self.queued.push_back(progress(step)),
            result = call => {
                while let Ok(step) = self.steps.try_recv() {
                    self.queued.push_back(progress(step));
                }
                self.queued.push_back(reply(result, self.id.clone()));
                self.call = None;
            }
        }
    }
}

/// The steps a call answered inline may have waiting for its client to read them.
const PROGRESS_QUEUE: usize = 16;

fn reply(result: Result<ServerResult, ErrorData>, id: RequestId) -> ServerJsonRpcMessage {
    match result {
        Ok(result) => ServerJsonRpcMessage::response(result, id),
        Err(error) => ServerJsonRpcMessage::error(error, Some(id)),
    }
}

fn progress(step: ProgressNotificationParam) -> ServerJsonRpcMessage {
    ServerJsonRpcMessage::notification(ServerNotification::ProgressNotification(
        ProgressNotification::new(step),
    ))
}

/// One SSE event carrying `message`.
fn event(message: &ServerJsonRpcMessage) -> Result<Bytes, serde_json::Error> {
    let json = serde_json::to_vec(message)?;
    let mut event = Vec::with_capacity(json.len() + 8);
    event.extend_from_slice(b"data: ");
    event.extend_from_slice(&json);
    event.extend_from_slice(b"\n\n");
    Ok(Bytes::from(event))
}

fn as_json(message: &ServerJsonRpcMessage) -> Response {
    match serde_json::to_vec(message) {
        Ok(body) => {
            // Said in the head: the door's wrapper around every POST's body hides its size
            // from hyper, which would otherwise send the answer chunked, in more writes.
            let length = HeaderValue::from(body.len());
            let mut response = Response::new(Body::from(body));
            let headers = response.headers_mut();
            headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(JSON));
            headers.insert(header::CONTENT_LENGTH, length);
            response
        }
        Err(error) => {
            tracing::warn!(%error, "an answer could not be written as JSON");
            StatusCode::INTERNAL_SERVER_ERROR.into_response()
        }
    }
}

/// A request answered inline, known to its session until it ends.
struct Running {
    sessions: Arc<Sessions>,
    session: String,
    id: RequestId,
    _cancel: tokio_util::sync::DropGuard,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.sessions.ended(&self.session, &self.id);
    }
}

/// The body, up to `max` bytes (413 past it, as rmcp answers).
async fn read(mut body: Body, max: usize) -> Result<Bytes, Response> {
    let mut read = Vec::new();
    loop {
        let frame = std::future::poll_fn(|cx| std::pin::Pin::new(&mut body).poll_frame(cx)).await;
        match frame {
            None => break,
            Some(Err(_)) => {
                return Err((
                    StatusCode::BAD_REQUEST,
                    "Bad Request: the body could not be read",
                )
                    .into_response());
            }
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    if data.len() > max.saturating_sub(read.len()) {
                        return Err(too_large(max));
                    }
                    if read.is_empty() && body.is_end_stream() {
                        return Ok(data);
                    }
                    read.extend_from_slice(&data);
                }
            }
        }
    }
    Ok(Bytes::from(read))
}

fn too_large(max: usize) -> Response {
    (
        StatusCode::PAYLOAD_TOO_LARGE,
        format!("Payload Too Large: request body exceeds {max} bytes"),
    )
        .into_response()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.append(
                axum::http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                HeaderValue::from_str(value).unwrap(),
            );
        }
        headers
    }

    const PLAIN: [(&str, &str); 3] = [
        ("mcp-session-id", "abc"),
        ("content-type", "application/json; charset=utf-8"),
        ("accept", "application/json, text/event-stream"),
    ];

    #[test]
    fn a_plain_post_names_its_session_and_anything_more_goes_to_rmcp() {
        assert_eq!(plain_post(&headers(&PLAIN)).as_deref(), Some("abc"));
        let with = |extra: (&str, &str)| {
            let mut pairs = PLAIN.to_vec();
            pairs.push(extra);
            plain_post(&headers(&pairs))
        };
        assert!(with(("mcp-protocol-version", "2025-06-18")).is_some());
        assert!(with(("mcp-protocol-version", "2026-07-28")).is_none());
        assert!(with(("mcp-protocol-version", "1999-01-01")).is_none());
        assert!(with(("mcp-method", "tools/call")).is_none());
        assert!(plain_post(&headers(&PLAIN[1..])).is_none());
        assert!(
            plain_post(&headers(&[
                PLAIN[0],
                PLAIN[1],
                ("accept", "application/json")
            ]))
            .is_none()
        );
        assert!(
            plain_post(&headers(&[
                PLAIN[0],
                ("content-type", "text/plain"),
                PLAIN[2]
            ]))
            .is_none()
        );
    }

    #[test]
    fn a_tool_call_is_read_here_as_rmcp_reads_it() {
        let bodies = [
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"a\"b"}}}"#,
            r#"{"id":"s","params":{"_meta":{"progressToken":3,"x":{"y":[1]}},"name":"t","arguments":{}},"method":"tools/call","jsonrpc":"2.0"}"#,
            r#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"n","task":{"ttl":5},"extra":true}}"#,
            r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"n"},"unknown":1}"#,
        ];
        for body in bodies {
            let fast = tool_call(body.as_bytes()).expect(body);
            let Ok(ClientJsonRpcMessage::Request(rmcp)) = serde_json::from_str(body) else {
                panic!("rmcp refused {body}");
            };
            assert_eq!(
                serde_json::to_value(&fast).unwrap(),
                serde_json::to_value(&rmcp).unwrap(),
                "{body}"
            );
            assert_eq!(fast.request.get_meta(), rmcp.request.get_meta(), "{body}");
        }
        // What it refuses, rmcp reads (or refuses) in full.
        for body in [
            r#"{"jsonrpc":"1.0","id":7,"method":"tools/call","params":{"name":"e"}}"#,
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{}}"#,
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call"}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"e"}}"#,
        ] {
            assert!(tool_call(body.as_bytes()).is_none(), "{body}");
        }
    }

    #[test]
    fn only_plain_requests_are_answered_here() {
        let call = br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{}}}"#;
        assert!(matches!(sort(call), Sorted::Plain(_)));
        // A progress token is answered here, its steps on the call's own answer.
        let progress = br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","_meta":{"progressToken":1}}}"#;
        assert!(matches!(sort(progress), Sorted::Plain(_)));
        // A per-request protocol version (2026-07-28) is rmcp's.
        let versioned = br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#;
        assert!(matches!(sort(versioned), Sorted::Other));
        let level =
            br#"{"jsonrpc":"2.0","id":7,"method":"logging/setLevel","params":{"level":"info"}}"#;
        assert!(matches!(sort(level), Sorted::Other));
        let cancelled =
            br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}"#;
        assert!(matches!(
            sort(cancelled),
            Sorted::Cancelled(RequestId::Number(7))
        ));
        let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
        let deep_call = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"e","arguments":{{"a":{}{}}}}}}}"#,
            "[".repeat(10_000),
            "]".repeat(10_000)
        );
        assert!(matches!(sort(deep_call.as_bytes()), Sorted::Other));
        assert!(matches!(sort(deep.as_bytes()), Sorted::Other));
        assert!(matches!(sort(b"{not json"), Sorted::Other));
    }
}
