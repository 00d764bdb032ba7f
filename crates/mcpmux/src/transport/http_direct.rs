//! Requests to a streamable-HTTP server POSTed from their caller's task, beside rmcp's client
//! worker (`connection/outgoing.rs` decides which). Through rmcp, a request goes from its
//! caller to rmcp's session task, to the transport worker, to a task of the worker's that
//! POSTs it; its answer comes back the same way: four task hops a call, on two cores often a
//! wake of the other core. Here the caller POSTs it and reads its answer itself.
//!
//! **One owner for each request id.** Ids (and progress tokens) from 2³² are this module's, as
//! the lines transport's direct calls' are: rmcp's u32 counters never reach them. A request
//! sent here is registered under its id before it is POSTed, and its answer is taken by the
//! first of: the POST's own answer (a JSON body, or an event of its SSE stream), read by its
//! caller; or rmcp's streams (a POST answered `202 Accepted` and its answer sent on the GET
//! stream), where [`Routed`], under rmcp's service and above its worker, hands an answer with
//! a registered id to its caller and passes everything else on. Whatever else the POST's
//! stream carries — a server's request (sampling, elicitation, roots), a log, a notification,
//! another request's answer — its caller hands back ([`HttpDirect::request`]'s `other`) and
//! it is passed to rmcp's service through [`Routed`], whose handler answers a server's request
//! as always (its answer POSTed by rmcp's worker). rmcp keeps everything else: the handshake,
//! the GET stream, notifications, the answers to a server's requests, the requests not sent
//! here, and the session itself.
//!
//! **The session as rmcp keeps it.** A request is POSTed in the session rmcp's worker last
//! POSTed in, with the headers it sent (`http_client.rs` keeps them as [`Posting`]: the
//! `Mcp-Session-Id`, `MCP-Protocol-Version`, the configured headers), through the same
//! `AuthorizingClient::post` every rmcp POST takes: the token or a `headersHelper`'s headers
//! sent and a refusal answered, a stale keep-alive connection tried again (never a
//! `tools/call`), a restarting server waited for, a 404 (or the reference servers' 400) judged
//! session expired, a body or SSE event over the hub's bound failing its request with the
//! reason, errors with the URL cut to scheme, host, port and path. A session rmcp has none of
//! yet (before the handshake, or a stateless server's) sends nothing here. On a session the
//! server no longer knows, the caller has rmcp renew it and sends again
//! (`connection/outgoing.rs`). Only a handshake-era session's requests come here: from
//! 2026-07-28 rmcp adds per-request headers (`Mcp-Method`, `Mcp-Name`, a tool's `Mcp-Param-*`)
//! and checks which stream a server's request came on, which this module does not.
//!
//! A POST's SSE stream that ends before the answer is resumed with `Last-Event-ID` (SEP-1699)
//! when the server gave its events ids, as rmcp does, a bounded number of times; else the
//! request fails at once. The time a request may take is its caller's (the exchange's deadline
//! drops the future). Knows nothing of what is asked: the connection reads the answer.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::{FutureExt, StreamExt};
use rmcp::RoleClient;
use rmcp::model::GetExtensions;
use rmcp::model::ServerJsonRpcMessage;
use rmcp::model::{ClientJsonRpcMessage, NumberOrString, ProgressToken, RequestId, ServerResult};
use rmcp::service::{InboundStreamOrigin, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
};
use tokio::sync::{mpsc, oneshot};

use super::http_client::{AuthorizingClient, Posting, Request, is_tool_call};
use super::wire_tap::WireTarget;
use crate::telemetry::wire::Direction;

type HttpError = StreamableHttpError<reqwest::Error>;

/// The first id (and progress token): above every number rmcp's u32 counters give, well
/// within what a JavaScript server reads exactly (2⁵³).
const FIRST_ID: i64 = 1 << 32;

/// How long the rest of a POST's stream is read after its answer, so its connection goes back
/// to the pool (rmcp's figure).
const DRAIN: Duration = Duration::from_millis(50);

/// The requests of one streamable-HTTP session sent beside rmcp's worker.
pub(crate) struct HttpDirect {
    client: AuthorizingClient,
    uri: Arc<str>,
    /// The bound on one SSE event (the hub's `max_message_bytes`).
    max_message: usize,
    next: AtomicI64,
    awaited: Mutex<Awaited>,
    /// What the POSTs' streams carried for rmcp's side, to [`Routed`].
    to_rmcp: mpsc::UnboundedSender<ServerJsonRpcMessage>,
    wire: Option<WireTarget>,
}

#[derive(Default)]
struct Awaited {
    waiters: HashMap<RequestId, oneshot::Sender<ServerJsonRpcMessage>>,
    /// rmcp's side ended: nothing more is sent here.
    closed: bool,
}

/// The id and progress token of one request, taken before it is sent.
pub(crate) struct Ticket {
    /// The request's id, as the server will see it.
    pub(crate) id: RequestId,
    /// The progress token its `_meta` will carry.
    pub(crate) progress_token: ProgressToken,
}

/// Why a request sent here got no answer.
#[derive(Debug)]
pub(crate) enum Failed {
    /// The server does not know the session any more: nothing was done; renew and send again.
    Expired,
    /// The POST failed, or its stream ended before the answer.
    Http(HttpError),
    /// The session's transport has ended.
    Closed,
}

impl HttpDirect {
    /// Requests of the session `client` serves at `uri`, and the transport wrapper that
    /// passes what they read on to rmcp (to go around `transport`).
    pub(crate) fn new<T>(
        client: AuthorizingClient,
        uri: &str,
        max_message: usize,
        wire: Option<WireTarget>,
        transport: T,
    ) -> (Arc<Self>, Routed<T>) {
        let (to_rmcp, from_direct) = mpsc::unbounded_channel();
        let direct = Arc::new(HttpDirect {
            client,
            uri: Arc::from(uri),
            max_message,
            next: AtomicI64::new(FIRST_ID),
            awaited: Mutex::default(),
            to_rmcp,
            wire,
        });
        let routed = Routed {
            inner: transport,
            direct: direct.clone(),
            from_direct,
        };
        (direct, routed)
    }

    /// The session to send in: the one rmcp last POSTed in, once it has one.
    pub(crate) fn session(&self) -> Option<Arc<Posting>> {
        self.client.posting()
    }

    /// The id and progress token of the next request.
    pub(crate) fn ticket(&self) -> Ticket {
        let number = self.next.fetch_add(1, Ordering::Relaxed);
        Ticket {
            id: NumberOrString::Number(number),
            progress_token: ProgressToken(NumberOrString::Number(number)),
        }
    }

    /// POSTs `message` (a request with `id`) in `session` and reads its answer; every other
    /// message read on its way is given to `other`, and what `other` gives back is passed to
    /// rmcp. On [`Failed::Expired`] the session is forgotten here: the next is rmcp's.
    pub(crate) async fn request<F>(
        &self,
        session: &Posting,
        id: &RequestId,
        message: &ClientJsonRpcMessage,
        mut other: F,
    ) -> Result<ServerJsonRpcMessage, Failed>
    where
        F: FnMut(ServerJsonRpcMessage) -> Option<ServerJsonRpcMessage> + Send,
    {
        // A tool call's answer is read straight into a tool result, as the lines transport
        // reads one: rmcp's reading tries each of its untagged result kinds in turn.
        let tool_call = is_tool_call(message);
        let (tx, mut answer) = oneshot::channel();
        {
            let mut awaited = crate::sync::lock(&self.awaited);
            if awaited.closed {
                return Err(Failed::Closed);
            }
            awaited.waiters.insert(id.clone(), tx);
        }
        let _registered = Registered { direct: self, id };
        self.log(Direction::Send, message);
        let mut pass = |message: ServerJsonRpcMessage| {
            if let Some(message) = other(message) {
                // Unsent only once rmcp's side has ended, when nothing is to be answered.
                let _ = self.to_rmcp.send(message);
            }
        };
        let post = self.client.post(
            Request::new(
                self.uri.clone(),
                Some(session.session_id.clone()),
                session.auth_header.clone(),
                session.headers.clone(),
            ),
            message,
            Some(self.max_message),
        );
        let posted = tokio::select! {
            biased;
            answer = &mut answer => return answer.map_err(|_| Failed::Closed),
            posted = post => posted,
        };
        let events = match posted {
            Err(StreamableHttpError::SessionExpired) => {
                self.client.forget_posting(session);
                return Err(Failed::Expired);
            }
            Err(error) => return Err(Failed::Http(error)),
            Ok(StreamableHttpPostResponse::Accepted) => {
                return answer.await.map_err(|_| Failed::Closed);
            }
            Ok(StreamableHttpPostResponse::Json(message, _)) => {
                self.log(Direction::Receive, &message);
                if answers(&message, id) {
                    return Ok(message);
                }
                pass(message);
                return answer.await.map_err(|_| Failed::Closed);
            }
            Ok(StreamableHttpPostResponse::Sse(events, _)) => events,
            Ok(_) => {
                return Err(Failed::Http(StreamableHttpError::UnexpectedServerResponse(
                    "an answer of a kind this client does not read".into(),
                )));
            }
        };
        let mut resume = Resume::default();
        let mut events = events;
        loop {
            let event = tokio::select! {
                biased;
                answer = &mut answer => return answer.map_err(|_| Failed::Closed),
                event = events.next() => event,
            };
            let ended = match event {
                Some(Ok(event)) => {
                    if let Some(retry) = event.retry {
                        resume.retry = Some(Duration::from_millis(retry));
                    }
                    if let Some(event_id) = &event.id {
                        resume.last_event_id = Some(event_id.clone());
                    }
                    let Some(mut message) = read_event(&event, tool_call.then_some(id)) else {
                        continue;
                    };
                    // As rmcp marks it: a server's request on this POST's stream is this
                    // request's (SEP-2260), which is how the hub knows whose call asks.
                    if let ServerJsonRpcMessage::Request(request) = &mut message {
                        request
                            .request
                            .extensions_mut()
                            .insert(InboundStreamOrigin::OutboundRequest(id.clone()));
                    }
                    self.log(Direction::Receive, &message);
                    if answers(&message, id) {
                        drain(events);
                        return Ok(message);
                    }
                    pass(message);
                    continue;
                }
                Some(Err(error)) => Some(error),
                None => None,
            };
            // The stream ended (or broke) before the answer: resumed where the server's event
            // ids say, as rmcp resumes a POST's stream, else the request fails.
            let Some(last) = resume.next_try() else {
                return Err(Failed::Http(match ended {
                    Some(error) => StreamableHttpError::Sse(error),
                    None => StreamableHttpError::UnexpectedServerResponse(
                        "the server ended the answer's stream before answering".into(),
                    ),
                }));
            };
            tokio::time::sleep(resume.pause()).await;
            events = self
                .client
                .get_stream_with_max_sse_event_size(
                    self.uri.clone(),
                    Some(session.session_id.clone()),
                    Some(last),
                    session.auth_header.clone(),
                    session.headers.clone(),
                    self.max_message,
                )
                .await
                .map_err(Failed::Http)?;
        }
    }

    fn log(&self, direction: Direction, message: &impl serde::Serialize) {
        if let Some(target) = &self.wire
            && let Ok(bytes) = serde_json::to_vec(message)
        {
            target.record(direction, &bytes);
        }
    }

    /// Hands `message` to the request it answers, if it is the answer to one sent here;
    /// else gives it back.
    fn claim(&self, message: ServerJsonRpcMessage) -> Option<ServerJsonRpcMessage> {
        let id = match &message {
            ServerJsonRpcMessage::Response(response) => Some(&response.id),
            ServerJsonRpcMessage::Error(error) => error.id.as_ref(),
            _ => None,
        };
        let Some(id @ NumberOrString::Number(n)) = id else {
            return Some(message);
        };
        if *n < FIRST_ID {
            return Some(message);
        }
        let waiter = crate::sync::lock(&self.awaited).waiters.remove(id);
        match waiter {
            Some(waiter) => {
                let _ = waiter.send(message);
                None
            }
            None => Some(message),
        }
    }

    /// rmcp's side ended: requests waiting fail, and none is sent any more.
    fn close(&self) {
        let waiters = {
            let mut awaited = crate::sync::lock(&self.awaited);
            awaited.closed = true;
            std::mem::take(&mut awaited.waiters)
        };
        drop(waiters);
    }
}

/// Whether `message` is the answer to request `id`.
fn answers(message: &ServerJsonRpcMessage, id: &RequestId) -> bool {
    match message {
        ServerJsonRpcMessage::Response(response) => response.id == *id,
        ServerJsonRpcMessage::Error(error) => error.id.as_ref() == Some(id),
        _ => false,
    }
}

/// The message an SSE event carries: only blank or `message` events hold one (as rmcp
/// reads them); one that does not read as MCP is skipped, as rmcp skips it. The answer to
/// `tool_call` (the id of the `tools/call` POSTed, if it is one) is read straight into a tool
/// result; what does not read so is read as rmcp reads it.
fn read_event(
    event: &sse_stream::Sse,
    tool_call: Option<&RequestId>,
) -> Option<ServerJsonRpcMessage> {
    if !matches!(event.event.as_deref(), None | Some("") | Some("message")) {
        return None;
    }
    let data = event.data.as_deref()?;
    if let Some(call) = tool_call
        && let Some((id, result)) = super::call_result::answer_parts(data.as_bytes())
        && id == *call
        && let Some(result) = super::call_result::read(result.get())
    {
        return Some(ServerJsonRpcMessage::response(
            ServerResult::CallToolResult(result),
            id,
        ));
    }
    match serde_json::from_str(data) {
        Ok(message) => Some(message),
        Err(error) => {
            tracing::debug!("an SSE event that does not read as MCP: {error}");
            None
        }
    }
}

/// The rest of a POST's stream after its answer, read so its connection is kept: at once
/// when it has ended (the common case), else by a task for a short while.
fn drain<S>(mut events: S)
where
    S: futures::Stream + Send + Unpin + 'static,
{
    loop {
        match events.next().now_or_never() {
            Some(Some(_)) => continue,
            Some(None) => return,
            None => break,
        }
    }
    tokio::spawn(async move {
        let _ = tokio::time::timeout(DRAIN, async { while events.next().await.is_some() {} }).await;
    });
}

/// Where a POST's stream resumes after it ended early.
#[derive(Default)]
struct Resume {
    last_event_id: Option<String>,
    retry: Option<Duration>,
    tries: u32,
}

impl Resume {
    /// The event id to resume after, while tries are left.
    fn next_try(&mut self) -> Option<String> {
        if self.tries >= crate::defaults::HTTP_SSE_RECONNECT_TRIES as u32 {
            return None;
        }
        self.tries += 1;
        self.last_event_id.clone()
    }

    /// The pause before a GET resumes: the server's `retry`, else the first backoff step.
    fn pause(&self) -> Duration {
        self.retry
            .unwrap_or(crate::defaults::HTTP_SSE_RECONNECT_BASE)
            .min(crate::defaults::HTTP_SSE_RECONNECT_MAX_DELAY)
    }
}

/// A request's place among those awaited, left however it ends.
struct Registered<'a> {
    direct: &'a HttpDirect,
    id: &'a RequestId,
}

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        crate::sync::lock(&self.direct.awaited)
            .waiters
            .remove(self.id);
    }
}

/// rmcp's transport with what the direct requests read passed to rmcp's service, and the
/// answers to direct requests that rmcp's streams carry taken out for them.
pub(crate) struct Routed<T> {
    inner: T,
    direct: Arc<HttpDirect>,
    from_direct: mpsc::UnboundedReceiver<ServerJsonRpcMessage>,
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for Routed<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            tokio::select! {
                biased;
                Some(message) = self.from_direct.recv() => return Some(message),
                message = self.inner.receive() => match message {
                    Some(message) => match self.direct.claim(message) {
                        Some(message) => return Some(message),
                        None => continue,
                    },
                    None => {
                        self.direct.close();
                        return None;
                    }
                },
            }
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.direct.close();
        self.inner.close()
    }
}

impl<T> Drop for Routed<T> {
    fn drop(&mut self) {
        self.direct.close();
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn event(data: &str) -> sse_stream::Sse {
        sse_stream::Sse {
            data: Some(data.to_owned()),
            ..Default::default()
        }
    }

    fn as_rmcp_reads(data: &str) -> serde_json::Value {
        let message: ServerJsonRpcMessage = serde_json::from_str(data).unwrap();
        serde_json::to_value(message).unwrap()
    }

    #[test]
    fn a_tool_call_s_answer_is_read_straight_into_a_tool_result_meaning_what_rmcp_reads() {
        let call = NumberOrString::Number(FIRST_ID + 7);
        let answers = [
            r#"{"jsonrpc":"2.0","id":4294967303,"result":{"content":[{"type":"text","text":"hi \"there\"\n"}]}}"#,
            r#"{"jsonrpc":"2.0","id":4294967303,"result":{"content":[],"structuredContent":{"n":1},"isError":true,"_meta":{"k":"v"}}}"#,
            r#"{"result":{"content":[{"type":"image","data":"AAAA","mimeType":"image/png"}]},"id":4294967303,"jsonrpc":"2.0"}"#,
        ];
        for data in answers {
            let read = read_event(&event(data), Some(&call)).unwrap();
            let ServerJsonRpcMessage::Response(response) = &read else {
                panic!("not an answer: {read:?}");
            };
            assert!(matches!(response.result, ServerResult::CallToolResult(_)));
            assert_eq!(
                serde_json::to_value(&read).unwrap(),
                as_rmcp_reads(data),
                "{data}"
            );
        }
    }

    #[test]
    fn what_is_not_the_call_s_answer_is_read_as_rmcp_reads_it() {
        let call = NumberOrString::Number(FIRST_ID + 7);
        let others = [
            // Another request's answer, a notification, an error, a server's request.
            r#"{"jsonrpc":"2.0","id":4294967304,"result":{"content":[]}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":4294967303,"progress":1}}"#,
            r#"{"jsonrpc":"2.0","id":4294967303,"error":{"code":-32602,"message":"no such tool"}}"#,
            r#"{"jsonrpc":"2.0","id":9,"method":"roots/list"}"#,
        ];
        for data in others {
            let read = read_event(&event(data), Some(&call)).unwrap();
            assert_eq!(
                serde_json::to_value(&read).unwrap(),
                as_rmcp_reads(data),
                "{data}"
            );
        }
        // Not a call: rmcp's reading, whatever the message.
        let answer = r#"{"jsonrpc":"2.0","id":4294967303,"result":{"content":[]}}"#;
        let read = read_event(&event(answer), None).unwrap();
        assert_eq!(serde_json::to_value(&read).unwrap(), as_rmcp_reads(answer));
    }

    #[test]
    fn what_reads_as_neither_is_skipped() {
        let call = NumberOrString::Number(FIRST_ID);
        for data in [
            r#"{"jsonrpc":"2.0","id":4294967296,"result":"#,
            "[1,2]",
            "null",
        ] {
            assert!(read_event(&event(data), Some(&call)).is_none(), "{data}");
        }
        let named = sse_stream::Sse {
            event: Some("endpoint".into()),
            ..event(r#"{"jsonrpc":"2.0","id":4294967296,"result":{"content":[]}}"#)
        };
        assert!(read_event(&named, Some(&call)).is_none());
    }

    #[test]
    fn a_call_s_answer_nested_too_deep_reaches_it_as_the_screen_s_error() {
        // The direct reading skips what it does not need without a depth limit; the nesting
        // screen every event passes first (`http_screen.rs`) is what refuses a deep answer.
        let call = NumberOrString::Number(FIRST_ID);
        let depth = 100_000;
        let deep = format!(
            r#"{{"jsonrpc":"2.0","id":4294967296,"result":{{"content":[],"x":{}{}}}}}"#,
            "[".repeat(depth),
            "]".repeat(depth)
        );
        let super::super::nesting::Screen::Answer(replacement) =
            super::super::nesting::screen(deep.as_bytes())
        else {
            panic!("a 100 000-deep answer passed the nesting screen");
        };
        let screened = event(std::str::from_utf8(&replacement).unwrap());
        let read = read_event(&screened, Some(&call)).unwrap();
        let ServerJsonRpcMessage::Error(error) = read else {
            panic!("not an error: {read:?}");
        };
        assert_eq!(error.id, Some(call));
    }
}
