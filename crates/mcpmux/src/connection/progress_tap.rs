//! Progress delivered in the order the server sent it. rmcp hands each notification to a task
//! of its own but a response straight to its waiter, so a progress step sent just before a
//! call's answer could reach the caller after it — or never, once the call had removed its
//! route (seen under load: the gateway passed on two of three steps). This wrapper around
//! the session's transport reads each progress notification as it arrives, before rmcp sees
//! the messages after it, and hands it to its call's route there and then; a token no call
//! holds is left to rmcp. It also sees each tool call rmcp writes, before the server can
//! answer it, and marks its token, so that steps read before the call has added its route
//! wait for it (`progress_routes.rs`), even past the call's answer, which its caller reads
//! only after adding the route. A call cancelled before rmcp wrote it never adds one: its
//! cancellation, written after it, clears the mark. (Only rmcp's requests need the mark: on a
//! lines transport the connection sends its own, their routes added first, `outgoing.rs`.)
//!
//! A log message (`notifications/message`) names no call, and rmcp too hands it to a task of
//! its own, which may run once the call that caused it has ended: here, as it is read (before
//! the answer after it), it is stamped with the party whose calls alone are in flight
//! (`callers::LogParty`), so a gateway passes it to that party and no other. Knows nothing of
//! which transport it wraps.

use std::collections::HashMap;

use rmcp::RoleClient;
use rmcp::model::{
    ClientJsonRpcMessage, ClientNotification, ClientRequest, GetMeta, ProgressToken, RequestId,
    ServerJsonRpcMessage, ServerNotification,
};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;

use super::callers::{Callers, LogParty};
use super::progress_routes::ProgressRoutes;

/// A transport whose progress notifications reach their calls' routes in order, and whose log
/// messages carry the party they are for.
pub(crate) struct ProgressTap<T> {
    inner: T,
    routes: ProgressRoutes,
    /// The session's calls in flight: whose a log message is.
    callers: Callers,
    /// The tool calls written before their routes were added, until answered or cancelled.
    marked: HashMap<RequestId, ProgressToken>,
}

impl<T> ProgressTap<T> {
    /// Delivers `inner`'s progress to `routes`; stamps its logs with the party of `callers`.
    pub(crate) fn new(inner: T, routes: ProgressRoutes, callers: Callers) -> Self {
        Self {
            inner,
            routes,
            callers,
            marked: HashMap::new(),
        }
    }

    /// The request `id` is answered: no cancellation will follow to clear its mark.
    fn answered(&mut self, id: &RequestId) {
        if !self.marked.is_empty() {
            self.marked.remove(id);
        }
    }
}

impl<T> Transport<RoleClient> for ProgressTap<T>
where
    T: Transport<RoleClient>,
{
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        match &item {
            ClientJsonRpcMessage::Request(request)
                if matches!(request.request, ClientRequest::CallToolRequest(_)) =>
            {
                if let Some(token) = request.request.get_meta().get_progress_token()
                    && self.routes.expect(&token)
                {
                    self.marked.insert(request.id.clone(), token);
                }
            }
            ClientJsonRpcMessage::Notification(notification) => {
                if let ClientNotification::CancelledNotification(cancelled) =
                    &notification.notification
                    && let Some(id) = &cancelled.params.request_id
                    && let Some(token) = self.marked.remove(id)
                {
                    self.routes.unexpect(&token);
                }
            }
            _ => {}
        }
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            let mut message = self.inner.receive().await?;
            match &mut message {
                ServerJsonRpcMessage::Notification(notification) => {
                    match &mut notification.notification {
                        ServerNotification::ProgressNotification(progress)
                            if self.routes.deliver(&progress.params) =>
                        {
                            continue;
                        }
                        #[allow(deprecated)] // Logging is SEP-2577-deprecated, yet still sent.
                        // A log read beside rmcp (`outgoing.rs`) comes stamped already.
                        ServerNotification::LoggingMessageNotification(log)
                            if log.extensions.get::<LogParty>().is_none() =>
                        {
                            let party = LogParty(self.callers.sole_party());
                            log.extensions.insert(party);
                        }
                        _ => {}
                    }
                }
                // The call's route is added before its caller reads the answer: what is
                // held for it stays.
                ServerJsonRpcMessage::Response(response) => self.answered(&response.id),
                ServerJsonRpcMessage::Error(error) => {
                    if let Some(id) = &error.id {
                        self.answered(id);
                    }
                }
                ServerJsonRpcMessage::Request(_) => {}
            }
            return Some(message);
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use std::time::Duration;

    use rmcp::model::{CallToolRequest, CallToolRequestParams, NumberOrString};
    use serde_json::json;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, duplex};

    use super::*;
    use crate::connection::progress_routes::tests::{received, route, token};
    use crate::transport::lines::LineTransport;

    type Tap = ProgressTap<LineTransport<DuplexStream, DuplexStream>>;

    /// A tap over in-memory pipes, its routes, and the server's ends of the pipes.
    fn tap() -> (Tap, ProgressRoutes, DuplexStream, BufReader<DuplexStream>) {
        let (server_out, client_in) = duplex(1 << 16);
        let (client_out, server_in) = duplex(1 << 16);
        let routes = ProgressRoutes::default();
        let lines = LineTransport::new(client_in, client_out, "t", 1 << 16);
        let tap = ProgressTap::new(lines, routes.clone(), Callers::default());
        (tap, routes, server_out, BufReader::new(server_in))
    }

    /// A tool call as rmcp writes it: id and progress token `n`.
    async fn write_call(tap: &mut Tap, server_in: &mut BufReader<DuplexStream>, n: i64) {
        let mut request = ClientRequest::CallToolRequest(CallToolRequest::new(
            CallToolRequestParams::new("slow"),
        ));
        request.get_meta_mut().set_progress_token(token(n));
        let message = ClientJsonRpcMessage::request(request, NumberOrString::Number(n));
        tap.send(message).await.unwrap();
        let mut line = String::new();
        tokio::time::timeout(Duration::from_secs(10), server_in.read_line(&mut line))
            .await
            .expect("the request line")
            .unwrap();
        assert!(line.contains("tools/call"), "{line}");
    }

    fn progress_line(n: i64, progress: u32) -> String {
        let step = json!({"jsonrpc": "2.0", "method": "notifications/progress",
            "params": {"progressToken": n, "progress": progress}});
        format!("{step}\n")
    }

    fn answer_line(n: i64) -> String {
        let answer = json!({"jsonrpc": "2.0", "id": n, "result": {"content": []}});
        format!("{answer}\n")
    }

    async fn next(tap: &mut Tap) -> ServerJsonRpcMessage {
        tokio::time::timeout(Duration::from_secs(10), tap.receive())
            .await
            .expect("a message")
            .expect("the stream goes on")
    }

    #[tokio::test]
    async fn steps_read_before_a_call_adds_its_route_wait_for_it() {
        let (mut tap, routes, mut server_out, mut server_in) = tap();
        write_call(&mut tap, &mut server_in, 3).await;
        // The server's steps and its answer, read before the caller has its route.
        let lines = progress_line(3, 1) + &progress_line(3, 2) + &answer_line(3);
        server_out.write_all(lines.as_bytes()).await.unwrap();
        assert!(matches!(
            next(&mut tap).await,
            ServerJsonRpcMessage::Response(_)
        ));
        let (route, mut rx) = route();
        routes.add(token(3), route);
        assert_eq!(received(&mut rx), [1.0, 2.0]);
    }

    #[tokio::test]
    async fn the_steps_of_a_call_cancelled_before_it_had_a_route_go_to_rmcp() {
        let (mut tap, routes, mut server_out, mut server_in) = tap();
        write_call(&mut tap, &mut server_in, 6).await;
        let cancel = ClientJsonRpcMessage::notification(ClientNotification::CancelledNotification(
            rmcp::model::CancelledNotification::new(rmcp::model::CancelledNotificationParam::new(
                Some(NumberOrString::Number(6)),
                None,
            )),
        ));
        tap.send(cancel).await.unwrap();
        server_out
            .write_all(progress_line(6, 1).as_bytes())
            .await
            .unwrap();
        assert!(
            matches!(next(&mut tap).await, ServerJsonRpcMessage::Notification(_)),
            "a step for a cancelled call is not held"
        );
        // Nothing is left waiting for a route that will not come.
        assert!(routes.expect(&token(6)));
    }

    struct Party(u64);

    impl crate::host::Relay for Party {
        fn party(&self) -> u64 {
            self.0
        }
        fn relay(
            &self,
            _request: crate::host::Relayed,
        ) -> futures::future::BoxFuture<'_, Result<serde_json::Value, crate::host::HostError>>
        {
            Box::pin(async { Ok(serde_json::Value::Null) })
        }
    }

    #[tokio::test]
    #[allow(deprecated)]
    async fn a_log_read_while_one_party_s_call_is_in_flight_is_stamped_with_that_party() {
        let (server_out, client_in) = duplex(1 << 16);
        let (client_out, _server_in) = duplex(1 << 16);
        let callers = Callers::default();
        let lines = LineTransport::new(client_in, client_out, "t", 1 << 16);
        let mut tap = ProgressTap::new(lines, ProgressRoutes::default(), callers.clone());
        let mut server_out = server_out;
        let log = json!({"jsonrpc": "2.0", "method": "notifications/message",
            "params": {"level": "info", "data": "secret"}});
        let relay: std::sync::Arc<dyn crate::host::Relay> = std::sync::Arc::new(Party(7));
        let call = callers.enter(crate::connection::callers::CallParty::of(Some(&relay)));
        server_out
            .write_all(format!("{log}\n").as_bytes())
            .await
            .unwrap();
        let party_of = |message: ServerJsonRpcMessage| match message {
            ServerJsonRpcMessage::Notification(notification) => match notification.notification {
                ServerNotification::LoggingMessageNotification(log) => {
                    log.extensions.get::<LogParty>().copied()
                }
                other => panic!("not a log: {other:?}"),
            },
            other => panic!("not a notification: {other:?}"),
        };
        assert_eq!(party_of(next(&mut tap).await), Some(LogParty(Some(7))));
        // Once the call has ended, the next log is nobody's.
        drop(call);
        server_out
            .write_all(format!("{log}\n").as_bytes())
            .await
            .unwrap();
        assert_eq!(party_of(next(&mut tap).await), Some(LogParty(None)));
    }
}
