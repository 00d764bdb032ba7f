//! A `/mcp` session's handshake answered without rmcp's worker (issue 39): the session is
//! born parked (`sessions`' record: owner, `initialize` parameters, outbox, clock) and its
//! first request that needs a worker brings one back through the seam a parked session uses
//! (rmcp asks the `Store`, `restore_session` replays the handshake into a fresh handler). A
//! session that only does its handshake and holds its `GET` stream never has a worker: rmcp
//! makes one per session (its task, channels, serve loop and handler: 78–80 KiB an idle session
//! with parking off), and one made only to be let go later leaves the session's long-lived
//! pieces scattered among its freed pages (44.0 KiB an idle session holding its `GET` stream
//! when rmcp made it and it was parked; about 20 born parked, BENCHMARKS.md).
//!
//! The answer is the one rmcp's worker gives: the session's handler's `initialize` result
//! (startup waited for, the protocol version negotiated alike), as SSE with rmcp's priming
//! event, under a fresh `Mcp-Session-Id`, with the same caps (503 and `Retry-After` past
//! one), owner and handshake deadline. Only a plain `initialize` is answered here — JSON in,
//! JSON and SSE accepted, an allowed `Host`, no SEP-2243 header nor a per-request version,
//! an `MCP-Protocol-Version` header absent or the one in its parameters — and the session's
//! `notifications/initialized` while it is still parked. A request on a parked session of the
//! caller's first brings its worker back with a `ping` through rmcp (whose answer is dropped),
//! so the request itself is served as on a live session (`inline` among it: a session's first
//! call is answered as JSON, as before). Everything else, and everything when parking is
//! off, goes to rmcp as it came.

use std::borrow::Cow;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::{
    body::{Body, Bytes},
    extract::{Request, State},
    http::{HeaderValue, Method, StatusCode, header, request::Parts},
    middleware::Next,
    response::{IntoResponse, Response},
};
use rmcp::model::{
    ClientJsonRpcMessage, ClientNotification, ClientRequest, GetMeta, ServerJsonRpcMessage,
    ServerResult,
};
use serde::Deserialize;
use serde_json::value::RawValue;
use sse_stream::{Sse, SseBody};

use crate::guard;
use crate::handler::Gateway;
use crate::identity::{Identity, ServedRequest};
use crate::post_head::{EVENT_STREAM, PROTOCOL_VERSION, SESSION_ID, plain};
use crate::sessions::Sessions;

/// What the middleware needs.
pub(crate) struct Handshake {
    pub gateway: Gateway,
    pub sessions: Arc<Sessions>,
    /// rmcp's `Host` allowlist (empty: any).
    pub allowed_hosts: Vec<String>,
    /// rmcp's priming event's retry hint (its `sse_retry`).
    pub sse_retry: Option<Duration>,
    pub max_body_bytes: usize,
}

/// The middleware in front of rmcp's `/mcp` service.
pub(crate) async fn answer_handshake(
    State(handshake): State<Arc<Handshake>>,
    request: Request,
    next: Next,
) -> Response {
    if request.method() != Method::POST || !handshake.sessions.parks() {
        return next.run(request).await;
    }
    let host = request
        .headers()
        .get(header::HOST)
        .map(HeaderValue::as_bytes);
    if !plain(request.headers()) || !guard::host_allowed(host, &handshake.allowed_hosts) {
        return next.run(request).await;
    }
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|n| n.to_str().ok()?.parse::<usize>().ok());
    // A body of unknown or too large a length is rmcp's to read (and to refuse: 413).
    if declared.is_none_or(|n| n > handshake.max_body_bytes) {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let bytes = match axum::body::to_bytes(body, handshake.max_body_bytes).await {
        Ok(bytes) => bytes,
        Err(_) => {
            return (
                StatusCode::BAD_REQUEST,
                "Bad Request: the body could not be read",
            )
                .into_response();
        }
    };
    let passed_on = |parts: Parts, bytes: Bytes| Request::from_parts(parts, Body::from(bytes));
    // Nearly every POST is a call on a live session, none of this module's: its method and
    // whether it has an id decide that, read without rmcp's parse (untagged enums read through
    // a buffered copy, a trial of each variant and an error made for each failed one: a fifth
    // of the gateway's instructions a call over stdio, by callgrind). rmcp's parse is kept for
    // the few this module may answer, so what it answers is decided as before.
    let Ok(peek) = serde_json::from_slice::<Peek>(&bytes) else {
        return next.run(passed_on(parts, bytes)).await;
    };
    let session = parts
        .headers
        .get(SESSION_ID)
        .and_then(|id| id.to_str().ok());
    let ours = match (session, peek.method.as_deref()) {
        (None, Some("initialize")) => true,
        // Once a session: rmcp's parse decides.
        (Some(_), Some("notifications/initialized")) => peek.id.is_none(),
        (Some(session), Some(_)) => {
            peek.id.is_some() && handshake.sessions.parked_for_caller(session)
        }
        _ => false,
    };
    if !ours {
        return next.run(passed_on(parts, bytes)).await;
    }
    let Ok(message) = serde_json::from_slice::<ClientJsonRpcMessage>(&bytes) else {
        return next.run(passed_on(parts, bytes)).await;
    };
    match (session, message) {
        (None, ClientJsonRpcMessage::Request(request)) => {
            let id = request.id.clone();
            let versioned = request.request.get_meta().protocol_version().is_some();
            let ClientRequest::InitializeRequest(initialize) = request.request else {
                return next.run(passed_on(parts, bytes)).await;
            };
            // A header naming an unknown version, or another than the body, is rmcp's to
            // refuse.
            let asked = initialize.params.protocol_version.as_str();
            let header_matches = parts.headers.get_all(PROTOCOL_VERSION).iter().all(|v| {
                v.as_bytes() == asked.as_bytes()
                    && rmcp::model::ProtocolVersion::KNOWN_VERSIONS
                        .iter()
                        .any(|known| known.as_str() == asked)
            });
            if !header_matches || versioned {
                return next.run(passed_on(parts, bytes)).await;
            }
            answer(&handshake, initialize.params, id).await
        }
        (Some(session), ClientJsonRpcMessage::Notification(notification))
            if matches!(
                notification.notification,
                ClientNotification::InitializedNotification(_)
            ) && handshake.sessions.initialized_born(session) =>
        {
            StatusCode::ACCEPTED.into_response()
        }
        (Some(session), ClientJsonRpcMessage::Request(_))
            if handshake.sessions.parked_for_caller(session) =>
        {
            // Its worker brought back first, so the request itself is served as on a live
            // session (`inline` among it).
            restore(next.clone(), &parts).await;
            next.run(passed_on(parts, bytes)).await
        }
        _ => next.run(passed_on(parts, bytes)).await,
    }
}

/// What is read of every POST's body first: its method and whether it has an id, the rest
/// skipped unread.
#[derive(Deserialize)]
struct Peek<'a> {
    #[serde(borrow, default)]
    method: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
}

/// Brings back the worker of the parked session a request of `parts` names, with a `ping`
/// through rmcp (which asks the `Store` and replays the handshake), its answer dropped.
async fn restore(next: Next, parts: &Parts) {
    let ping = r#"{"jsonrpc":"2.0","id":"mcpmux-restore","method":"ping"}"#;
    let mut request = Request::new(Body::from(ping));
    *request.method_mut() = Method::POST;
    *request.uri_mut() = parts.uri.clone();
    *request.headers_mut() = parts.headers.clone();
    *request.extensions_mut() = parts.extensions.clone();
    request
        .headers_mut()
        .insert(header::CONTENT_LENGTH, HeaderValue::from(ping.len()));
    let answer = next.run(request).await;
    if !answer.status().is_success() {
        tracing::debug!(status = %answer.status(), "a parked session not brought back by a ping");
    }
    let _ = axum::body::to_bytes(answer.into_body(), 64 * 1024).await;
}

/// Answers `initialize` for a session born parked.
async fn answer(
    handshake: &Handshake,
    params: rmcp::model::InitializeRequestParams,
    request: rmcp::model::RequestId,
) -> Response {
    let (session, outbox) = match handshake.sessions.born(params.clone()) {
        Ok(born) => born,
        // Refused (a cap): the door answers 503 with `Retry-After`.
        Err(error) => {
            return (
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("Encounter an error when create session: {error}"),
            )
                .into_response();
        }
    };
    let handler = handshake
        .gateway
        .session_for(ServedRequest::current().unwrap_or_else(Identity::local));
    let message = match handler.answer_born(&params, outbox).await {
        Ok(result) => {
            ServerJsonRpcMessage::response(ServerResult::InitializeResult(result), request)
        }
        Err(error) => {
            // What rmcp's worker sends before it ends: the error, and no session.
            handshake.sessions.unborn(&session).await;
            ServerJsonRpcMessage::error(error, Some(request))
        }
    };
    drop(handler);
    handshake.sessions.answered(&session);
    let Ok(data) = serde_json::to_string(&message) else {
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    };
    let mut events = Vec::with_capacity(2);
    if let Some(retry) = handshake.sse_retry {
        let mut priming = Sse::default().data("");
        priming.id = Some("0".into());
        priming.retry = Some(retry.as_millis() as u64);
        events.push(Ok::<_, Infallible>(priming));
    }
    events.push(Ok(Sse::default().data(data)));
    let body = SseBody::new(futures::stream::iter(events));
    let Ok(session) = HeaderValue::from_str(&session) else {
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    };
    let mut response = Response::new(Body::new(body));
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(EVENT_STREAM));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    headers.insert(SESSION_ID, session);
    response
}

#[cfg(test)]
mod tests {
    use super::Peek;

    fn peek(body: &str) -> Option<(Option<String>, bool)> {
        let peek = serde_json::from_str::<Peek>(body).ok()?;
        Some((peek.method.map(|m| m.into_owned()), peek.id.is_some()))
    }

    #[test]
    fn the_peek_reads_the_top_level_method_and_id_and_nothing_nested() {
        let call = r#"{"jsonrpc":"2.0","params":{"method":"initialize","id":1,"arguments":{"method":"x"}},"id":7,"method":"tools/call"}"#;
        assert_eq!(peek(call), Some((Some("tools/call".into()), true)));
        let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        assert_eq!(
            peek(initialized),
            Some((Some("notifications/initialized".into()), false))
        );
        // An escaped method is read as its text, as rmcp reads it.
        let escaped = r#"{"jsonrpc":"2.0","id":"a","method":"initiali\u007ae","params":{}}"#;
        assert_eq!(peek(escaped), Some((Some("initialize".into()), true)));
        // A null id is no id (nor is it one to rmcp); an answer has none of a method.
        assert_eq!(
            peek(r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#),
            Some((Some("ping".into()), false))
        );
        assert_eq!(
            peek(r#"{"jsonrpc":"2.0","id":3,"result":{}}"#),
            Some((None, true))
        );
    }

    #[test]
    fn what_the_peek_cannot_read_is_left_to_rmcp() {
        // A batch, a duplicated key, not JSON.
        assert_eq!(
            peek(r#"[{"jsonrpc":"2.0","id":1,"method":"initialize"}]"#),
            None
        );
        assert_eq!(
            peek(r#"{"method":"ping","method":"initialize","id":1}"#),
            None
        );
        assert_eq!(peek("not json"), None);
    }

    #[test]
    fn a_deep_body_is_skipped_without_spending_the_stack() {
        // What the peek does not read is skipped, not parsed: a body nested 100 000 deep (the
        // body cap bounds its length) costs no stack, and goes on to rmcp, which refuses it.
        let deep = format!(
            r#"{{"id":1,"params":{}{}}}"#,
            "[".repeat(100_000),
            "]".repeat(100_000)
        );
        assert_eq!(peek(&deep), Some((None, true)));
    }
}
