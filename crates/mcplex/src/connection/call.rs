//! The call path of one server: breaker admission, waiting for a reconnecting server, our own
//! progress-extended deadline, cancellation on drop, safe retries, and errors that say what
//! happened (exit status, stderr tail).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientRequest, JsonObject, RequestId, ServerResult,
};
use rmcp::service::{Peer, PeerRequestOptions, RoleClient, ServiceError};
use tokio::sync::Notify;
use tokio::time::Instant;

use super::breaker::Admission;
use super::client::{self, ProgressRoutes};
use super::handshake::{STDERR_DRAIN, wait_exit};
use super::{Connection, Live, ServerState};
use crate::content::ToolResult;
use crate::defaults;
use crate::error::Error;
use crate::hub::CallOptions;

impl Connection {
    /// Calls `tool` (its raw name) with `arguments`: waits for a reconnecting server within the
    /// deadline (unless the caller asked to fail fast), respects the circuit breaker, and
    /// retries a `safe` (read-only or idempotent) tool after a lost connection.
    pub(crate) async fn call(
        &self,
        tool: &str,
        arguments: Option<JsonObject>,
        safe: bool,
        options: &CallOptions,
    ) -> Result<ToolResult, Error> {
        let timeout = options.timeout.unwrap_or(self.spec.call_timeout);
        let deadline = Instant::now() + timeout;
        let retries = if safe {
            self.spec.options.max_retries
        } else {
            0
        };
        // Only a call that may be sent twice keeps a copy of its arguments.
        let spare = (retries > 0).then(|| arguments.clone());
        let mut arguments = Some(arguments);
        let mut attempt = 0;
        let mut failed_session: Option<Arc<Live>> = None;
        loop {
            if let Admission::Open { .. } = self.breaker.admit() {
                return Err(Error::CircuitOpen {
                    server: self.spec.name.clone(),
                    message: self.breaker.describe(),
                });
            }
            let live = self
                .live_or_wait(deadline, options, failed_session.as_ref())
                .await?;
            let args = match arguments.take() {
                Some(args) => args,
                None => spare.clone().flatten(),
            };
            let result = self.call_once(&live, tool, args, options, timeout).await;
            // A lost session is the supervisor's to repair (it reconnects); the breaker counts
            // failures of a server that is up.
            let session_lost = matches!(result, Err(Error::ConnectionLost { .. })) && live.ended();
            match &result {
                Ok(_) => self.breaker.record_success(),
                Err(e) if e.counts_against_server() && !session_lost => {
                    if self.breaker.record_failure(&e.to_string()) {
                        tracing::warn!(server = %self.spec.name, "circuit breaker opened: {}", self.breaker.describe());
                        // The listing withholds this server's tools from now on.
                        self.generation.fetch_add(1, Ordering::AcqRel);
                    }
                }
                Err(_) => {}
            }
            match result {
                // Only a safe call, only once the session is gone, and only on a new session.
                Err(Error::ConnectionLost { .. })
                    if session_lost && attempt < retries && Instant::now() < deadline =>
                {
                    attempt += 1;
                    failed_session = Some(live);
                    tracing::debug!(server = %self.spec.name, tool, attempt, "retrying a safe call on a new session");
                }
                other => return other,
            }
        }
    }

    /// The live session, or, while the server is (re)connecting, the session once it is up —
    /// within `deadline` and unless the caller asked to fail fast.
    async fn live_or_wait(
        &self,
        deadline: Instant,
        options: &CallOptions,
        not: Option<&Arc<Live>>,
    ) -> Result<Arc<Live>, Error> {
        loop {
            let mut watch = self.state_watch();
            watch.mark_unchanged();
            if let Some(live) = self.live()
                && !not.is_some_and(|old| Arc::ptr_eq(old, &live))
            {
                return Ok(live);
            }
            let state = self.state();
            let waiting = matches!(state, ServerState::Pending { .. })
                || matches!(state, ServerState::Connected { .. })
                || not.is_some();
            if !waiting || options.fail_fast {
                return Err(self.unavailable(state));
            }
            if tokio::time::timeout_at(deadline, watch.changed())
                .await
                .is_err()
            {
                return Err(Error::Timeout {
                    server: self.spec.name.clone(),
                    what: "waiting for the server to reconnect".into(),
                    after: options.timeout.unwrap_or(self.spec.call_timeout),
                });
            }
        }
    }

    fn unavailable(&self, state: ServerState) -> Error {
        Error::Unavailable {
            server: self.spec.name.clone(),
            state: state.label().into(),
            reason: match state {
                ServerState::Failed { error, .. } => error,
                ServerState::Disabled { reason } => reason,
                ServerState::NeedsAuth { message } => message,
                ServerState::Pending {
                    last_error: Some(e),
                    ..
                } => format!("reconnecting after: {e}"),
                ServerState::Pending { .. } => "still connecting".into(),
                _ => "not connected".into(),
            },
        }
    }

    /// One attempt on the live session.
    async fn call_once(
        &self,
        live: &Arc<Live>,
        tool: &str,
        arguments: Option<JsonObject>,
        options: &CallOptions,
        timeout: Duration,
    ) -> Result<ToolResult, Error> {
        let server = &self.spec.name;
        let mut params = CallToolRequestParams::new(tool.to_string());
        params.arguments = arguments;
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        // Our own deadline rather than rmcp's progress-timeout machinery (an async lock, a
        // channel and two timers per call): one timer, reset by the progress routes we keep
        // anyway, capped absolutely.
        let handle = live
            .peer
            .send_cancellable_request(request, PeerRequestOptions::no_options())
            .await;
        let handle = match handle {
            Ok(handle) => handle,
            Err(e) => return Err(self.service_error(live, tool, e).await),
        };
        let mut cancel_guard = CancelOnDrop {
            peer: Some(handle.peer.clone()),
            id: handle.id.clone(),
        };
        let token = handle.progress_token.clone();
        let mut response = handle.rx;
        let bump = Arc::new(Notify::new());
        live.progress.add(
            token.clone(),
            client::Route {
                tx: options.progress.clone(),
                bump: bump.clone(),
            },
        );
        let _route = RouteGuard {
            routes: &live.progress,
            token,
        };
        let cap = Instant::now() + defaults::CALL_TIMEOUT_CAP.max(timeout);
        let sleep = tokio::time::sleep(timeout);
        tokio::pin!(sleep);
        let caller_cancel = async {
            match &options.cancel {
                Some(token) => token.cancelled().await,
                None => std::future::pending().await,
            }
        };
        tokio::pin!(caller_cancel);
        let outcome = loop {
            tokio::select! {
                biased;
                answer = &mut response => {
                    cancel_guard.peer = None;
                    break match answer {
                        Ok(Ok(result)) => Ok(result),
                        Ok(Err(e)) => Err(self.service_error(live, tool, e).await),
                        Err(_) => Err(self.lost_error(live, tool).await),
                    };
                }
                () = bump.notified() => {
                    sleep.as_mut().reset((Instant::now() + timeout).min(cap));
                }
                () = &mut sleep => {
                    // The guard stays armed: dropping it tells the server to stop.
                    break Err(Error::Timeout {
                        server: server.clone(),
                        what: format!("tools/call `{tool}`"),
                        after: if Instant::now() >= cap { defaults::CALL_TIMEOUT_CAP.max(timeout) } else { timeout },
                    });
                }
                () = live.closed.cancelled() => {
                    cancel_guard.peer = None;
                    break Err(self.lost_error(live, tool).await);
                }
                () = &mut caller_cancel => break Err(Error::Cancelled(format!(
                    "tools/call `{tool}` on server `{server}` was cancelled by the caller"
                ))),
            }
        };
        drop(cancel_guard);
        match outcome? {
            ServerResult::CallToolResult(result) => {
                let json = serde_json::to_value(&result).map_err(|e| Error::Protocol {
                    server: server.clone(),
                    message: format!("unreadable tools/call result: {e}"),
                })?;
                Ok(ToolResult::from_json(json))
            }
            other => Err(Error::Protocol {
                server: server.clone(),
                message: format!(
                    "answered tools/call `{tool}` with something that is not a tool result ({})",
                    result_kind(&other)
                ),
            }),
        }
    }

    /// Maps an rmcp error. A closed transport means the session is gone (see `lost_error`);
    /// a failed send on a live session (an HTTP 5xx) keeps the transport's own words.
    async fn service_error(&self, live: &Live, tool: &str, e: ServiceError) -> Error {
        match e {
            ServiceError::TransportClosed => return self.lost_error(live, tool).await,
            ServiceError::TransportSend(error) => {
                if live.ended() {
                    return self.lost_error(live, tool).await;
                }
                return Error::ConnectionLost {
                    server: self.spec.name.clone(),
                    what: format!("tools/call `{tool}`"),
                    reason: innermost_message(&error),
                    stderr_tail: Vec::new(),
                };
            }
            _ => {}
        }
        let server = self.spec.name.clone();
        let what = format!("tools/call `{tool}`");
        match e {
            ServiceError::Timeout { timeout } => Error::Timeout {
                server,
                what,
                after: timeout,
            },
            ServiceError::McpError(data) => Error::Server {
                server,
                code: data.code.0,
                message: data.message.to_string(),
            },
            other => Error::Protocol {
                server,
                message: format!("{what}: {other}"),
            },
        }
    }

    async fn lost_error(&self, live: &Live, tool: &str) -> Error {
        let what = format!("tools/call `{tool}`");
        let reason = match &live.exit {
            Some(exit) => wait_exit(exit.clone(), Duration::from_millis(100))
                .await
                .map(|info| info.to_string())
                .unwrap_or_else(|| "the connection closed".into()),
            None => "the connection closed".into(),
        };
        if let Some(stderr) = &live.stderr {
            stderr.drained(STDERR_DRAIN).await;
        }
        Error::ConnectionLost {
            server: self.spec.name.clone(),
            what,
            reason,
            stderr_tail: tail_of(live),
        }
    }
}

/// The message at the end of an error's source chain, without the transport's type names.
fn innermost_message(error: &(dyn std::error::Error + 'static)) -> String {
    let mut current = error;
    while let Some(next) = current.source() {
        current = next;
    }
    current.to_string()
}

/// Removes a call's progress route however the call ends.
struct RouteGuard<'a> {
    routes: &'a ProgressRoutes,
    token: rmcp::model::ProgressToken,
}

impl Drop for RouteGuard<'_> {
    fn drop(&mut self) {
        self.routes.remove(&self.token);
    }
}

fn tail_of(live: &Live) -> Vec<String> {
    live.stderr
        .as_ref()
        .map(|tail| tail.last(defaults::ERROR_TAIL_LINES))
        .unwrap_or_default()
}

fn result_kind(result: &ServerResult) -> String {
    serde_json::to_value(result)
        .ok()
        .and_then(|v| {
            v.as_object()
                .map(|o| o.keys().cloned().collect::<Vec<_>>().join(","))
        })
        .unwrap_or_else(|| "unknown".into())
}

/// Sends `notifications/cancelled` when a call is abandoned by its caller (its future dropped
/// or cancelled): rmcp's raw requests do not.
struct CancelOnDrop {
    peer: Option<Peer<RoleClient>>,
    id: RequestId,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(peer) = self.peer.take() {
            let id = self.id.clone();
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                runtime.spawn(async move {
                    let notification = rmcp::model::CancelledNotification::new(
                        rmcp::model::CancelledNotificationParam::new(
                            Some(id),
                            Some("cancelled by the caller".into()),
                        ),
                    );
                    let _ = peer.send_notification(notification.into()).await;
                });
            }
        }
    }
}
