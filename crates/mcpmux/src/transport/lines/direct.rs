//! Requests sent beside rmcp's session task rather than through it: the connection's own
//! (`connection/outgoing.rs` sends every request it makes on a lines transport here). rmcp
//! passes each request to its session task over a channel, spawns a task to write it, and
//! hands the answer back from that session task: a request pays two task hops and a spawn,
//! on two cores often a wake of the other core. A direct request is queued by its caller in
//! the transport's own outbox (in order with everything rmcp sends) and written there; its
//! answer, read by the same reader as every other message, is handed over when rmcp's
//! `receive` reaches it, so the progress read before it still reaches the caller first. The
//! answer to a `tools/call` is read straight into a tool result (`call_result.rs`).
//!
//! Ids and progress tokens are numbered from 2³², a range rmcp's u32 counters (its handshake,
//! and the few requests still its own) never reach, so the two never answer each other's
//! requests. A request whose caller gives up forgets its id; a transport that ends (its
//! stream's end, or dropped) fails every request still waiting at once. Knows nothing of
//! which requests are sent this way: the connection decides.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use rmcp::model::{
    ClientJsonRpcMessage, ClientRequest, GetMeta, NumberOrString, ProgressToken, RequestId,
    RequestMetaObject, ServerResult,
};
use rmcp::service::ServiceError;
use rmcp::transport::DynamicTransportError;
use tokio::sync::oneshot;

use crate::transport::busy_pipe::Kick;

/// The answer to one call, as rmcp would hand it over.
pub(crate) type Answer = Result<ServerResult, ServiceError>;

/// The first id (and progress token): above every number rmcp's u32 counters give, well
/// within what a JavaScript server reads exactly (2⁵³).
const FIRST_ID: i64 = 1 << 32;

/// Writing one queued line: done at once when the pipe takes it, else finished by a task.
pub(super) type Write = Pin<Box<dyn Future<Output = std::io::Result<()>> + Send>>;

/// Where a direct call's line goes: the transport's outbox.
pub(super) trait Line: Send + Sync {
    /// Queues `bytes` after everything sent before; the future writes them.
    fn send(&self, bytes: Vec<u8>) -> Write;
}

/// The direct calls of one transport: how they are sent, and which are awaited.
pub(crate) struct Direct {
    line: Box<dyn Line>,
    /// Armed once each call is written: the reader may poll for its answer.
    kick: Option<Arc<Kick>>,
    next: AtomicI64,
    awaited: Mutex<Awaited>,
}

struct Awaited {
    /// Each request's waiter, and whether it is a `tools/call` (its answer a tool result).
    calls: HashMap<RequestId, (oneshot::Sender<Answer>, bool)>,
    /// The transport ended: nothing more is sent or answered.
    closed: bool,
}

impl Direct {
    pub(super) fn new(line: Box<dyn Line>, kick: Option<Arc<Kick>>) -> Self {
        Self {
            line,
            kick,
            next: AtomicI64::new(FIRST_ID),
            awaited: Mutex::new(Awaited {
                calls: HashMap::new(),
                closed: false,
            }),
        }
    }

    /// The id and progress token of the next call, taken before it is sent: whatever routes
    /// the call's progress must be in place before the server can answer.
    pub(crate) fn ticket(&self) -> Ticket {
        let number = self.next.fetch_add(1, Ordering::Relaxed);
        Ticket {
            id: NumberOrString::Number(number),
            progress_token: ProgressToken(NumberOrString::Number(number)),
        }
    }

    /// Sends `request` under `ticket`, with `meta` and its progress token added to its
    /// `_meta`, as rmcp adds a session's and a request's own: the call, whose answer it
    /// awaits. Fails at once if the transport has ended or the line cannot be written.
    pub(crate) async fn call(
        self: &Arc<Self>,
        ticket: Ticket,
        mut request: ClientRequest,
        meta: Option<RequestMetaObject>,
    ) -> Result<DirectCall, ServiceError> {
        let Ticket { id, progress_token } = ticket;
        let tool_call = matches!(request, ClientRequest::CallToolRequest(_));
        if let Some(meta) = meta {
            request.get_meta_mut().extend(meta);
        }
        request.get_meta_mut().set_progress_token(progress_token);
        let message = ClientJsonRpcMessage::request(request, id.clone());
        let bytes = super::encode(&message).map_err(|error| {
            ServiceError::TransportSend(DynamicTransportError::from_parts(
                "lines",
                std::any::TypeId::of::<Self>(),
                Box::new(error),
            ))
        })?;
        let (tx, rx) = oneshot::channel();
        let alone;
        {
            let mut awaited = crate::sync::lock(&self.awaited);
            if awaited.closed {
                return Err(ServiceError::TransportClosed);
            }
            awaited.calls.insert(id.clone(), (tx, tool_call));
            alone = awaited.calls.len() == 1;
        }
        let call = DirectCall {
            id: id.clone(),
            answer: rx,
            direct: self.clone(),
            settled: false,
        };
        // Polled once here, without yielding: the caller may give up at any await, but a line
        // half written would end the session. What the pipe does not take at once is finished
        // by a task of its own.
        let mut write = self.line.send(bytes);
        let first = std::future::poll_fn(|cx| Poll::Ready(write.as_mut().poll(cx))).await;
        match first {
            Poll::Ready(Ok(())) => {
                // Only for a lone call: with others in flight answers keep coming anyway, and
                // a spinning reader would keep the callers of the next ones from the CPU.
                if alone && let Some(kick) = &self.kick {
                    kick.arm();
                }
            }
            Poll::Ready(Err(error)) => {
                tracing::debug!(%error, "writing a tool call failed");
                self.forget(&id);
            }
            Poll::Pending => {
                let direct = Arc::downgrade(self);
                tokio::spawn(async move {
                    if let Err(error) = write.await {
                        tracing::debug!(%error, "writing a tool call failed");
                        if let Some(direct) = direct.upgrade() {
                            direct.forget(&id);
                        }
                    }
                });
            }
        }
        Ok(call)
    }

    /// Whether any call awaits its answer: while none does, a line needs no look for one.
    pub(super) fn awaits_any(&self) -> bool {
        !crate::sync::lock(&self.awaited).calls.is_empty()
    }

    /// Whether the `tools/call` `id` awaits its answer (a tool result, read as one).
    pub(super) fn awaits_tool_call(&self, id: &RequestId) -> bool {
        crate::sync::lock(&self.awaited)
            .calls
            .get(id)
            .is_some_and(|(_, tool_call)| *tool_call)
    }

    /// The waiter of request `id`, which its answer is now for.
    pub(super) fn take(&self, id: &RequestId) -> Option<oneshot::Sender<Answer>> {
        crate::sync::lock(&self.awaited)
            .calls
            .remove(id)
            .map(|(tx, _)| tx)
    }

    /// The waiters of every request awaited, which one answer too large to read may be for.
    pub(super) fn take_all(&self) -> Vec<oneshot::Sender<Answer>> {
        let calls = std::mem::take(&mut crate::sync::lock(&self.awaited).calls);
        calls.into_values().map(|(tx, _)| tx).collect()
    }

    /// Drops the waiter of call `id`: its answer, if it comes, is ignored; its caller, if
    /// still waiting, learns the session is lost.
    fn forget(&self, id: &RequestId) {
        crate::sync::lock(&self.awaited).calls.remove(id);
    }

    /// The transport ended: every call still waiting fails now, and no more are sent.
    pub(super) fn close(&self) {
        let calls = {
            let mut awaited = crate::sync::lock(&self.awaited);
            awaited.closed = true;
            std::mem::take(&mut awaited.calls)
        };
        drop(calls);
    }
}

/// The id and progress token of one direct call, before it is sent.
pub(crate) struct Ticket {
    /// The request's id, as the server will see it.
    pub(crate) id: RequestId,
    /// The progress token its `_meta` will carry.
    pub(crate) progress_token: ProgressToken,
}

/// One direct call in flight: resolves to its answer, or to an error once the transport has
/// ended. Dropped before its answer, it forgets its id.
pub(crate) struct DirectCall {
    /// The request's id, as the server sees it.
    pub(crate) id: RequestId,
    answer: oneshot::Receiver<Answer>,
    direct: Arc<Direct>,
    settled: bool,
}

impl Future for DirectCall {
    type Output = Result<Answer, oneshot::error::RecvError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let polled = Pin::new(&mut self.answer).poll(cx);
        if polled.is_ready() {
            self.settled = true;
        }
        polled
    }
}

impl Drop for DirectCall {
    fn drop(&mut self) {
        if !self.settled {
            self.direct.forget(&self.id);
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use std::time::Duration;

    use futures::FutureExt;
    use rmcp::model::{CallToolRequest, CallToolRequestParams, ServerJsonRpcMessage};
    use rmcp::transport::Transport;
    use serde_json::{Value, json};
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, duplex};

    use super::super::LineTransport;
    use super::*;

    type Lines = LineTransport<DuplexStream, DuplexStream>;

    /// A transport over in-memory pipes of `room` bytes, and the server's ends of them.
    fn pair(room: usize) -> (Lines, DuplexStream, BufReader<DuplexStream>) {
        let (server_out, client_in) = duplex(1 << 20);
        let (client_out, server_in) = duplex(room);
        (
            LineTransport::new(client_in, client_out, "t", 1 << 20),
            server_out,
            BufReader::new(server_in),
        )
    }

    fn echo(text: &str) -> ClientRequest {
        let mut params = CallToolRequestParams::new("echo");
        params.arguments = json!({ "text": text }).as_object().cloned();
        ClientRequest::CallToolRequest(CallToolRequest::new(params))
    }

    /// The next request the server reads; a line that never comes fails the test.
    async fn read_request(server_in: &mut BufReader<DuplexStream>) -> Value {
        let mut line = String::new();
        tokio::time::timeout(Duration::from_secs(10), server_in.read_line(&mut line))
            .await
            .expect("a request line")
            .unwrap();
        serde_json::from_str(&line).unwrap()
    }

    /// The line of a server answering call `id` with one text block.
    fn text_answer(id: &Value, text: &str) -> String {
        let answer = json!({"jsonrpc": "2.0", "id": id,
            "result": {"content": [{"type": "text", "text": text}]}});
        format!("{answer}\n")
    }

    fn text_of(answer: &Answer) -> String {
        match answer {
            Ok(ServerResult::CallToolResult(result)) => serde_json::to_value(&result.content)
                .unwrap()[0]["text"]
                .as_str()
                .unwrap()
                .to_string(),
            other => panic!("not a tool result: {other:?}"),
        }
    }

    #[tokio::test]
    async fn a_call_is_answered_after_the_progress_read_before_it() {
        let (mut transport, mut server_out, mut server_in) = pair(1 << 20);
        let direct = transport.direct();
        let ticket = direct.ticket();
        let (ticket_id, ticket_token) = (ticket.id.clone(), ticket.progress_token.clone());
        let mut call = direct.call(ticket, echo("hi"), None).await.unwrap();
        let request = read_request(&mut server_in).await;
        assert_eq!(request["method"], "tools/call");
        assert_eq!(request["params"]["arguments"]["text"], "hi");
        let id = request["id"].as_i64().expect("a number id");
        assert!(id >= 1 << 32, "beyond rmcp's ids: {id}");
        assert_eq!(request["params"]["_meta"]["progressToken"], id);
        // The line carries what the ticket promised, so a route taken from it is the call's.
        assert_eq!(ticket_id, NumberOrString::Number(id));
        assert_eq!(ticket_token.0, NumberOrString::Number(id));
        assert_eq!(call.id, ticket_id);

        // Progress and the answer in one write: the caller must not have its answer before
        // the progress read ahead of it is handed on.
        let progress = json!({"jsonrpc": "2.0", "method": "notifications/progress",
            "params": {"progressToken": id, "progress": 1}});
        let answer = text_answer(&json!(id), "hi");
        server_out
            .write_all(format!("{progress}\n{answer}").as_bytes())
            .await
            .unwrap();
        let first = transport.receive().await.unwrap();
        assert!(
            matches!(first, ServerJsonRpcMessage::Notification(_)),
            "{first:?}"
        );
        assert!(
            (&mut call).now_or_never().is_none(),
            "answered before its progress"
        );
        // The next receive hands the answer over, then waits for more lines.
        assert!(transport.receive().now_or_never().is_none());
        let answer = (&mut call).await.unwrap();
        assert_eq!(text_of(&answer), "hi");
        assert!(!direct.awaits_any());
    }

    #[tokio::test]
    async fn a_read_sent_beside_a_tool_call_is_answered_as_a_read_not_a_tool_result() {
        let (mut transport, mut server_out, mut server_in) = pair(1 << 20);
        let direct = transport.direct();
        // A tool call in flight: the reader looks for tool results in every answer.
        let call = direct.call(direct.ticket(), echo("x"), None).await.unwrap();
        let read = ClientRequest::ReadResourceRequest(rmcp::model::ReadResourceRequest::new(
            rmcp::model::ReadResourceRequestParams::new("file:///a"),
        ));
        let read = direct.call(direct.ticket(), read, None).await.unwrap();
        let _ = read_request(&mut server_in).await;
        let request = read_request(&mut server_in).await;
        assert_eq!(request["method"], "resources/read");
        let contents = json!({"jsonrpc": "2.0", "id": request["id"],
            "result": {"contents": [{"uri": "file:///a", "text": "hello"}]}});
        server_out
            .write_all(format!("{contents}\n").as_bytes())
            .await
            .unwrap();
        let receiving = tokio::spawn(async move { while transport.receive().await.is_some() {} });
        match read.await.unwrap() {
            Ok(ServerResult::ReadResourceResult(result)) => assert_eq!(result.contents.len(), 1),
            other => panic!("not read as a read's answer: {other:?}"),
        }
        drop((call, server_out));
        receiving.await.unwrap();
    }

    #[tokio::test]
    async fn only_a_lone_call_arms_the_reader_s_poll() {
        let (_server_out, client_in) = duplex(1 << 20);
        let (client_out, server_in) = duplex(1 << 20);
        let kick = Arc::new(Kick::default());
        let transport: Lines =
            LineTransport::kicked(client_in, client_out, "t", 1 << 20, Some(kick.clone()));
        let direct = transport.direct();
        let first = direct
            .call(direct.ticket(), echo("one"), None)
            .await
            .unwrap();
        assert!(kick.take(), "a lone call polls for its answer");
        let second = direct
            .call(direct.ticket(), echo("two"), None)
            .await
            .unwrap();
        assert!(!kick.take(), "with another call in flight nobody polls");
        drop((first, second));
        let _third = direct
            .call(direct.ticket(), echo("three"), None)
            .await
            .unwrap();
        assert!(kick.take(), "alone again");
        // Each was written all the same.
        let mut server_in = BufReader::new(server_in);
        for text in ["one", "two", "three"] {
            let request = read_request(&mut server_in).await;
            assert_eq!(request["params"]["arguments"]["text"], text);
        }
    }

    #[tokio::test]
    async fn the_session_s_meta_goes_with_the_call_and_the_progress_token_is_its_own() {
        let (transport, _server_out, mut server_in) = pair(1 << 20);
        let direct = transport.direct();
        let mut meta = RequestMetaObject::new();
        meta.set_protocol_version(rmcp::model::ProtocolVersion::V_2026_07_28);
        meta.set_progress_token(ProgressToken(NumberOrString::Number(1)));
        let call = direct
            .call(direct.ticket(), echo("m"), Some(meta))
            .await
            .unwrap();
        let request = read_request(&mut server_in).await;
        let sent = &request["params"]["_meta"];
        assert_eq!(
            sent["io.modelcontextprotocol/protocolVersion"],
            "2026-07-28"
        );
        assert_eq!(sent["progressToken"], request["id"], "{sent}");
        assert_eq!(request["params"]["arguments"]["text"], "m");
        drop(call);
    }

    #[tokio::test]
    async fn an_error_answer_and_an_unreadable_one_fail_their_calls() {
        let (mut transport, mut server_out, mut server_in) = pair(1 << 20);
        let direct = transport.direct();
        let refused = direct.call(direct.ticket(), echo("a"), None).await.unwrap();
        let garbled = direct.call(direct.ticket(), echo("b"), None).await.unwrap();
        let first = read_request(&mut server_in).await["id"].clone();
        let second = read_request(&mut server_in).await["id"].clone();
        let lines = format!(
            "{}\n{}\n",
            json!({"jsonrpc": "2.0", "id": first,
                "error": {"code": -32602, "message": "no such tool"}}),
            json!({"jsonrpc": "2.0", "id": second, "error": {"code": "not a number"}}),
        );
        server_out.write_all(lines.as_bytes()).await.unwrap();
        let receiving = tokio::spawn(async move { while transport.receive().await.is_some() {} });
        match refused.await.unwrap() {
            Err(ServiceError::McpError(error)) => {
                assert_eq!(error.code.0, -32602);
                assert_eq!(error.message, "no such tool");
            }
            other => panic!("{other:?}"),
        }
        match garbled.await.unwrap() {
            Err(ServiceError::McpError(error)) => {
                assert!(error.message.contains("does not read as MCP"), "{error:?}");
            }
            other => panic!("{other:?}"),
        }
        drop(server_out);
        receiving.await.unwrap();
    }

    #[tokio::test]
    async fn the_end_of_the_stream_fails_waiting_calls_and_refuses_new_ones() {
        let (mut transport, server_out, _server_in) = pair(1 << 20);
        let direct = transport.direct();
        let call = direct.call(direct.ticket(), echo("x"), None).await.unwrap();
        drop(server_out);
        assert!(transport.receive().await.is_none());
        assert!(call.await.is_err(), "a waiting call fails at the end");
        assert!(matches!(
            direct.call(direct.ticket(), echo("y"), None).await,
            Err(ServiceError::TransportClosed)
        ));
    }

    #[tokio::test]
    async fn a_dropped_transport_fails_waiting_calls() {
        let (transport, _server_out, _server_in) = pair(1 << 20);
        let direct = transport.direct();
        let call = direct.call(direct.ticket(), echo("x"), None).await.unwrap();
        drop(transport);
        assert!(call.await.is_err());
        assert!(direct.call(direct.ticket(), echo("y"), None).await.is_err());
    }

    #[tokio::test]
    async fn a_call_given_up_forgets_its_id_and_its_late_answer_is_passed_on() {
        let (mut transport, mut server_out, mut server_in) = pair(1 << 20);
        let direct = transport.direct();
        let call = direct.call(direct.ticket(), echo("x"), None).await.unwrap();
        let id = read_request(&mut server_in).await["id"].clone();
        assert!(direct.awaits_any());
        drop(call);
        assert!(!direct.awaits_any(), "the id is forgotten");
        server_out
            .write_all(text_answer(&id, "late").as_bytes())
            .await
            .unwrap();
        // rmcp reads it as an answer nobody waits for, and drops it.
        let passed = transport.receive().await.unwrap();
        assert!(
            matches!(passed, ServerJsonRpcMessage::Response(_)),
            "{passed:?}"
        );
    }

    #[tokio::test]
    async fn a_line_the_pipe_cannot_take_at_once_is_written_whole_after_its_caller_left() {
        // A pipe of 64 bytes and a call of 200 000: the write waits for the server to read.
        let (transport, _server_out, mut server_in) = pair(64);
        let direct = transport.direct();
        let text = "z".repeat(200_000);
        let call = direct
            .call(direct.ticket(), echo(&text), None)
            .await
            .unwrap();
        // The caller gives up at once; the line must still arrive whole, and the next after it.
        drop(call);
        let next = direct
            .call(direct.ticket(), echo("after"), None)
            .await
            .unwrap();
        let first = read_request(&mut server_in).await;
        assert_eq!(
            first["params"]["arguments"]["text"].as_str(),
            Some(&text[..])
        );
        let second = read_request(&mut server_in).await;
        assert_eq!(second["params"]["arguments"]["text"], "after");
        assert_eq!(
            second["id"].as_i64().unwrap(),
            first["id"].as_i64().unwrap() + 1
        );
        drop(next);
    }
}
