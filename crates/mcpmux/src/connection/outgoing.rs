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
//! - **HTTP, legacy SSE, WebSocket**: through rmcp's peer. Those transports are rmcp workers
//!   (streamable HTTP's session header, a POST and its SSE stream per request, resumption):
//!   a request reaches the wire only from the worker's task, and its answer comes back from
//!   it, so sending beside rmcp would save no hop and would have to own what the worker owns.
//!   rmcp numbers the request and tells its token only once queued; the tap
//!   (`progress_tap.rs`) holds the steps read before the route is added.
//!
//! Knows nothing of what is asked or what the answer means: the caller reads it.

use std::pin::Pin;

use rmcp::model::{ClientRequest, ProgressToken, RequestId, RequestMetaObject, ServerResult};
use rmcp::service::{PeerRequestOptions, ServiceError};

use super::Live;
use super::callers::InFlight;
use super::progress_routes::{ProgressRoutes, Route};
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

/// The answer awaited: beside rmcp's session task (`transport/lines/direct.rs`), or from it.
pub(super) enum Awaited {
    Session(tokio::sync::oneshot::Receiver<Result<ServerResult, ServiceError>>),
    Direct(DirectCall),
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
        }
    }
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
