//! The era probe's deadline. rmcp's `Auto` lifecycle sends `server/discover` and waits 10 s
//! for a legacy server that ignores unknown methods; this transport wrapper answers an
//! unanswered probe itself with "method not found" after our short deadline, so rmcp falls
//! back to `initialize` on the same connection at once. A late real answer is dropped. A
//! probe answered with something other than a discover result (a legacy server that answers
//! every method with `{}`) is treated as "method not found" too.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::model::{
    ClientJsonRpcMessage, ClientRequest, ErrorCode, ErrorData, JsonRpcMessage, RequestId,
    ServerJsonRpcMessage, ServerResult,
};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;

/// Wraps a client transport; a pass-through once the probe is settled.
pub(crate) struct ProbeTransport<T> {
    inner: T,
    /// `None` outside the `Auto` lifecycle: a server known to be stateless gets the whole
    /// startup timeout to answer.
    deadline: Option<Duration>,
    server: String,
    waiting: Option<(RequestId, Pin<Box<tokio::time::Sleep>>)>,
    /// Probes given up on (by our deadline or rmcp's): their late answers are dropped, as the
    /// handshake refuses an uncorrelated error.
    abandoned: Vec<RequestId>,
    /// Set when a probe we gave up on was answered after all: the server is modern, only
    /// slow (a cold Python start), and the connection should be retried in the new era.
    late_discover: Arc<AtomicBool>,
}

impl<T> ProbeTransport<T> {
    pub(crate) fn new(
        inner: T,
        deadline: Option<Duration>,
        server: &str,
        late_discover: Arc<AtomicBool>,
    ) -> Self {
        Self {
            inner,
            deadline,
            server: server.to_string(),
            waiting: None,
            abandoned: Vec::new(),
            late_discover,
        }
    }
}

fn response_id(message: &ServerJsonRpcMessage) -> Option<&RequestId> {
    match message {
        JsonRpcMessage::Response(response) => Some(&response.id),
        JsonRpcMessage::Error(error) => error.id.as_ref(),
        _ => None,
    }
}

impl<T> Transport<RoleClient> for ProbeTransport<T>
where
    T: Transport<RoleClient>,
{
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        if let ClientJsonRpcMessage::Request(request) = &item {
            match &request.request {
                ClientRequest::DiscoverRequest(_) => {
                    if let Some(deadline) = self.deadline {
                        let sleep = Box::pin(tokio::time::sleep(deadline));
                        self.waiting = Some((request.id.clone(), sleep));
                    }
                }
                // rmcp gave up on the probe by itself: its `Auto` mode bounds the whole
                // discover exchange by 10 s, a 401 and a login included. Its answer may still
                // come, and must not reach the handshake as an uncorrelated error.
                ClientRequest::InitializeRequest(_) => {
                    if let Some((id, _)) = self.waiting.take() {
                        tracing::debug!(server = %self.server, "server/discover given up; trying the initialize handshake");
                        self.abandoned.push(id);
                    }
                }
                _ => {}
            }
        }
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            let message = match &mut self.waiting {
                Some((id, sleep)) => {
                    // An answer that is already there beats a deadline that has passed: over
                    // HTTP the probe's POST can take a whole login (a 401, then OAuth) before
                    // rmcp reads anything, so both are ready at once.
                    tokio::select! {
                        biased;
                        message = self.inner.receive() => {
                            if message.as_ref().and_then(response_id) == Some(id) {
                                let id = id.clone();
                                self.waiting = None;
                                if let Some(JsonRpcMessage::Response(response)) = &message
                                    && !matches!(response.result, ServerResult::DiscoverResult(_))
                                {
                                    // A handshake-era server that answers every method with
                                    // an empty result: as good as "method not found".
                                    tracing::debug!(server = %self.server, "server/discover answered with something else; trying the initialize handshake");
                                    return Some(ServerJsonRpcMessage::error(
                                        ErrorData::new(
                                            ErrorCode::METHOD_NOT_FOUND,
                                            "server/discover answered with a result that is not a discover result",
                                            None,
                                        ),
                                        Some(id),
                                    ));
                                }
                            }
                            message
                        }
                        () = sleep.as_mut() => {
                            let id = id.clone();
                            self.waiting = None;
                            self.abandoned.push(id.clone());
                            tracing::debug!(
                                server = %self.server,
                                "server/discover unanswered after {:?}; trying the initialize handshake",
                                self.deadline
                            );
                            return Some(ServerJsonRpcMessage::error(
                                ErrorData::new(
                                    ErrorCode::METHOD_NOT_FOUND,
                                    "server/discover went unanswered (mcpmux probe deadline)",
                                    None,
                                ),
                                Some(id),
                            ));
                        }
                    }
                }
                None => self.inner.receive().await,
            };
            if let Some(message) = &message
                && let Some(id) = response_id(message)
                && self.abandoned.contains(id)
            {
                tracing::debug!(server = %self.server, "dropping a late answer to server/discover");
                if matches!(message, JsonRpcMessage::Response(_)) {
                    self.late_discover.store(true, Ordering::Release);
                }
                continue;
            }
            return message;
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use rmcp::transport::async_rw::AsyncRwTransport;
    use serde_json::{Value, json};
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

    /// A probe over an in-memory pipe, and the far end as raw JSON lines.
    fn probe(
        deadline: Duration,
    ) -> (
        ProbeTransport<impl Transport<RoleClient>>,
        BufReader<tokio::io::ReadHalf<tokio::io::DuplexStream>>,
        tokio::io::WriteHalf<tokio::io::DuplexStream>,
        Arc<AtomicBool>,
    ) {
        let (ours, theirs) = tokio::io::duplex(64 * 1024);
        let (read, write) = tokio::io::split(ours);
        let (their_read, their_write) = tokio::io::split(theirs);
        let late = Arc::new(AtomicBool::new(false));
        let transport = ProbeTransport::new(
            AsyncRwTransport::new_client(read, write),
            Some(deadline),
            "t",
            late.clone(),
        );
        (transport, BufReader::new(their_read), their_write, late)
    }

    fn request(id: u32, method: &str, params: Value) -> ClientJsonRpcMessage {
        serde_json::from_value(
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
        )
        .unwrap()
    }

    fn discover(id: u32) -> ClientJsonRpcMessage {
        request(id, "server/discover", json!({}))
    }

    fn initialize(id: u32) -> ClientJsonRpcMessage {
        request(
            id,
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "t", "version": "1"}}),
        )
    }

    async fn answer(write: &mut tokio::io::WriteHalf<tokio::io::DuplexStream>, message: Value) {
        let mut line = serde_json::to_vec(&message).unwrap();
        line.push(b'\n');
        write.write_all(&line).await.unwrap();
    }

    fn not_found(id: u32) -> Value {
        json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "Method not found"}})
    }

    #[tokio::test]
    async fn an_answer_already_there_beats_a_passed_deadline() {
        let (mut transport, mut lines, mut write, _) = probe(Duration::from_millis(10));
        transport.send(discover(0)).await.unwrap();
        lines.read_line(&mut String::new()).await.unwrap();
        answer(&mut write, not_found(0)).await;
        // Both the answer and the expired deadline are ready when the handshake reads.
        tokio::time::sleep(Duration::from_millis(50)).await;
        let Some(JsonRpcMessage::Error(error)) = transport.receive().await else {
            panic!("expected the server's error");
        };
        assert_eq!(error.error.message, "Method not found");
    }

    #[tokio::test]
    async fn a_late_answer_to_a_probe_rmcp_gave_up_on_never_reaches_the_handshake() {
        let (mut transport, mut lines, mut write, late) = probe(Duration::from_secs(60));
        transport.send(discover(0)).await.unwrap();
        // rmcp's own limit passed: it sends `initialize` without having read an answer.
        transport.send(initialize(1)).await.unwrap();
        let mut line = String::new();
        lines.read_line(&mut line).await.unwrap();
        lines.read_line(&mut line).await.unwrap();
        answer(
            &mut write,
            json!({"jsonrpc": "2.0", "id": 0, "result": {
                "supportedVersions": ["2026-07-28"], "capabilities": {},
                "serverInfo": {"name": "s", "version": "1"}}}),
        )
        .await;
        answer(&mut write, not_found(1)).await;
        let Some(message) = transport.receive().await else {
            panic!("the stream ended");
        };
        assert_eq!(response_id(&message), Some(&RequestId::Number(1)));
        assert!(
            late.load(Ordering::Acquire),
            "a late discover result shows a stateless-era server"
        );
    }
}
