//! The one way a request the connection makes leaves a live session ([`Live::send`]): its
//! progress route and its caller's place are set before the server can answer, then it is
//! sent, and its answer awaited. Which engine carries it is decided here and nowhere else:
//!
//! - **A lines transport** (stdio, in-process): the connection owns the request's id, its
//!   progress token, the `_meta` it carries and the routing of its answer. It is queued in the
//!   transport's own outbox by its caller (`transport/lines/direct.rs`), numbered from 2³²,
//!   and answered in the order the transport reads: no channel to rmcp's session task, no
//!   task spawned to write it, no hop back with its answer: the tool calls, prompts and
//!   reads (`exchange.rs`), completions and the log level (`requests.rs`). rmcp keeps the
//!   handshake (its ids below 2³², all before our first), the types, the server's requests
//!   to us, the notifications, and the requests not moved here yet: the paged lists (they
//!   lean on rmcp's 2026-07-28 list cache: time to live, scope, stale answers on error), a
//!   stateless server's `subscriptions/listen` (its notices routed by the listen's id), the
//!   subscriptions and the Tasks extension's requests (`task_requests.rs`, which keeps the session a
//!   task lives in, not its `Live`).
//! - **Streamable HTTP, a handshake-era session rmcp has a session id for**: POSTed by its
//!   caller (`transport/http_direct.rs`: ids from 2³², the session and headers as rmcp's
//!   worker last POSTed them, the answer read from the POST), its progress handed to its route
//!   and its logs stamped with their party here as they are read, before its answer; what
//!   else its stream carries (a server's request, a notification) goes on to rmcp's service.
//!   A session the server no longer knows is renewed by rmcp — a `ping` through its worker
//!   meets the dead session and rmcp initializes a new one, as it would for any request of
//!   its own — and the request is POSTed again in the new one, under the same id (the server
//!   did nothing with it: it did not know the session). The paged lists, subscriptions and
//!   the Tasks extension's requests go through rmcp, as on a lines transport.
//! - **Legacy SSE, WebSocket, and a streamable-HTTP session otherwise**: through rmcp's peer.
//!   Those transports are rmcp workers: a request reaches the wire only from the worker's
//!   task, and its answer comes back from it. rmcp numbers the request and tells its token
//!   only once queued; the tap (`progress_tap.rs`) holds the steps read before the route is
//!   added.
//!
//! Knows nothing of what is asked or what the answer means: the caller reads it.

use std::pin::Pin;

use std::sync::Arc;

use rmcp::model::{
    ClientJsonRpcMessage, ClientRequest, GetMeta, PingRequest, ProgressToken, RequestId,
    RequestMetaObject, ServerJsonRpcMessage, ServerNotification, ServerResult,
};
use rmcp::service::{PeerRequestOptions, ServiceError};
use rmcp::transport::DynamicTransportError;
use rmcp::transport::streamable_http_client::StreamableHttpError;

use super::Live;
use super::callers::{Callers, InFlight, LogParty};
use super::progress_routes::{ProgressRoutes, Route};
use crate::transport::http_direct::{Failed, HttpDirect};
use crate::transport::lines::DirectCall;

/// A request on its way: its id, as the server sees it, and its answer to await. Holds its
/// progress route until dropped.
pub(super) struct Sent<'a> {
    /// The request's id.
    pub(super) id: RequestId,
    /// Its answer.
    pub(super) answer: Awaited,
    /// Removes the route however the request ends.
    pub(super) route: Option<RouteGuard<'a>>,
}

impl Live {
    /// Sends `request`, with its own `_meta` (`meta`, from `exchange::request_meta`) over the
    /// session's, its progress to `route` (if it has one), `caller` (a call made for a party)
    /// told its id before the server can ask anything for it.
    pub(super) async fn send(
        &self,
        request: ClientRequest,
        meta: Option<RequestMetaObject>,
        route: Option<Route>,
        caller: Option<&InFlight>,
    ) -> Result<Sent<'_>, ServiceError> {
        if let Some(http) = &self.http
            && self.era == crate::state::Era::Handshake
            && http.session().is_some()
        {
            let mut request = request;
            if let Some(all) = self.session_meta.clone() {
                request.get_meta_mut().extend(all);
            }
            if let Some(own) = meta {
                request.get_meta_mut().extend(own);
            }
            let ticket = http.ticket();
            request
                .get_meta_mut()
                .set_progress_token(ticket.progress_token.clone());
            let route = route.map(|route| self.route(&ticket.progress_token, route));
            if let Some(caller) = caller {
                caller.identify(ticket.id.clone());
            }
            let message = ClientJsonRpcMessage::request(request, ticket.id.clone());
            let answer = Box::pin(http_answer(
                http.clone(),
                ticket.id.clone(),
                message,
                self.progress.clone(),
                self.callers.clone(),
                self.peer.clone(),
            ));
            return Ok(Sent {
                id: ticket.id,
                answer: Awaited::Http(answer),
                route,
            });
        }
        match &self.direct {
            // The `_meta` rmcp would add: the session's, then the request's own. Its route and
            // caller are known before its line is written.
            Some(direct) => {
                let mut all = self.session_meta.clone();
                if let Some(own) = meta {
                    all.get_or_insert_default().extend(own);
                }
                let ticket = direct.ticket();
                let route = route.map(|route| self.route(&ticket.progress_token, route));
                if let Some(caller) = caller {
                    caller.identify(ticket.id.clone());
                }
                let call = direct.call(ticket, request, all).await?;
                Ok(Sent {
                    id: call.id.clone(),
                    answer: Awaited::Direct(call),
                    route,
                })
            }
            // rmcp numbers the request as it queues it for its session task, which writes it
            // later: the route is added as soon as its token is known.
            None => {
                let options = match meta {
                    Some(meta) => PeerRequestOptions::no_options().with_meta(meta),
                    None => PeerRequestOptions::no_options(),
                };
                let handle = self.peer.send_cancellable_request(request, options).await?;
                let route = route.map(|route| self.route(&handle.progress_token, route));
                if let Some(caller) = caller {
                    caller.identify(handle.id.clone());
                }
                Ok(Sent {
                    id: handle.id,
                    answer: Awaited::Session(handle.rx),
                    route,
                })
            }
        }
    }

    /// Routes `token`'s progress to `route` until the guard is dropped.
    fn route(&self, token: &ProgressToken, route: Route) -> RouteGuard<'_> {
        self.progress.add(token.clone(), route);
        RouteGuard {
            routes: &self.progress,
            token: token.clone(),
        }
    }
}

/// What a request's answer resolves to, however it was sent.
pub(super) type Answered =
    Result<Result<ServerResult, ServiceError>, tokio::sync::oneshot::error::RecvError>;

/// The answer awaited: beside rmcp's session task (`transport/lines/direct.rs`), POSTed
/// beside rmcp's worker (`transport/http_direct.rs`), or from rmcp's session task.
pub(super) enum Awaited {
    Session(tokio::sync::oneshot::Receiver<Result<ServerResult, ServiceError>>),
    Direct(DirectCall),
    Http(Pin<Box<dyn Future<Output = Answered> + Send>>),
}

impl Future for Awaited {
    type Output = Answered;

    fn poll(
        self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        match self.get_mut() {
            Awaited::Session(rx) => Pin::new(rx).poll(cx),
            Awaited::Direct(call) => Pin::new(call).poll(cx),
            Awaited::Http(answer) => answer.as_mut().poll(cx),
        }
    }
}

/// POSTs `message` (request `id`) beside rmcp's worker and reads its answer: its progress to
/// its route and its logs stamped as they are read; a session the server lost renewed by rmcp
/// and the request POSTed again in the new one.
async fn http_answer(
    http: Arc<HttpDirect>,
    id: RequestId,
    message: ClientJsonRpcMessage,
    progress: ProgressRoutes,
    callers: Callers,
    peer: rmcp::Peer<rmcp::RoleClient>,
) -> Answered {
    let other = |mut message: ServerJsonRpcMessage| {
        if let ServerJsonRpcMessage::Notification(notification) = &mut message {
            match &mut notification.notification {
                ServerNotification::ProgressNotification(step)
                    if progress.deliver(&step.params) =>
                {
                    return None;
                }
                #[allow(deprecated)] // Logging is SEP-2577-deprecated, yet still sent.
                ServerNotification::LoggingMessageNotification(log) => {
                    log.extensions.insert(LogParty(callers.sole_party()));
                }
                _ => {}
            }
        }
        Some(message)
    };
    let Some(mut session) = http.session() else {
        return Ok(Err(ServiceError::TransportClosed));
    };
    let mut renewed = false;
    loop {
        let failed = match http.request(&session, &id, &message, other).await {
            Ok(ServerJsonRpcMessage::Response(response)) => return Ok(Ok(response.result)),
            Ok(ServerJsonRpcMessage::Error(error)) => {
                return Ok(Err(ServiceError::McpError(error.error)));
            }
            Ok(_) => return Ok(Err(ServiceError::UnexpectedResponse)),
            Err(failed) => failed,
        };
        match failed {
            Failed::Expired if !renewed => {
                renewed = true;
                // rmcp's POST of the ping meets the lost session too, initializes a new one
                // and sends the ping again in it: its answer means the session is new.
                let ping = ClientRequest::PingRequest(PingRequest::default());
                if let Err(error) = peer.send_request(ping).await {
                    return Ok(Err(error));
                }
                match http.session() {
                    Some(new) if new.session_id != session.session_id => session = new,
                    _ => return Ok(Err(http_failure(StreamableHttpError::SessionExpired))),
                }
            }
            Failed::Expired => return Ok(Err(http_failure(StreamableHttpError::SessionExpired))),
            Failed::Http(error) => return Ok(Err(http_failure(error))),
            Failed::Closed => return Ok(Err(ServiceError::TransportClosed)),
        }
    }
}

/// A failed POST as rmcp's worker reports one: the transport's own error.
fn http_failure(error: StreamableHttpError<reqwest::Error>) -> ServiceError {
    ServiceError::TransportSend(DynamicTransportError::from_parts(
        "streamable-http",
        std::any::TypeId::of::<HttpDirect>(),
        Box::new(error),
    ))
}

/// Removes a request's progress route however the request ends.
pub(super) struct RouteGuard<'a> {
    routes: &'a ProgressRoutes,
    token: ProgressToken,
}

impl Drop for RouteGuard<'_> {
    fn drop(&mut self) {
        self.routes.remove(&self.token);
    }
}
