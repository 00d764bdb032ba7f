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
    abandoned: Option<RequestId>,
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
            abandoned: None,
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
        if let ClientJsonRpcMessage::Request(request) = &item
            && matches!(request.request, ClientRequest::DiscoverRequest(_))
            && let Some(deadline) = self.deadline
        {
            self.waiting = Some((request.id.clone(), Box::pin(tokio::time::sleep(deadline))));
        }
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            let message = match &mut self.waiting {
                Some((id, sleep)) => {
                    tokio::select! {
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
                            self.abandoned = Some(id.clone());
                            tracing::debug!(
                                server = %self.server,
                                "server/discover unanswered after {:?}; trying the initialize handshake",
                                self.deadline
                            );
                            return Some(ServerJsonRpcMessage::error(
                                ErrorData::new(
                                    ErrorCode::METHOD_NOT_FOUND,
                                    "server/discover went unanswered (mcplex probe deadline)",
                                    None,
                                ),
                                Some(id),
                            ));
                        }
                    }
                }
                None => self.inner.receive().await,
            };
            if let (Some(abandoned), Some(message)) = (&self.abandoned, &message)
                && response_id(message) == Some(abandoned)
            {
                tracing::debug!(server = %self.server, "dropping a late answer to server/discover");
                if matches!(message, JsonRpcMessage::Response(_)) {
                    self.late_discover.store(true, Ordering::Release);
                }
                self.abandoned = None;
                continue;
            }
            return message;
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}
