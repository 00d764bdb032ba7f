//! The call path of one server: breaker admission, waiting for a reconnecting server, our own
//! progress-extended deadline, cancellation on drop, safe retries, and errors that say what
//! happened (exit status, stderr tail). A 2026-07-28 server may answer a call with
//! `input_required` (MRTR, SEP-2322): the call then answers its requests through the host
//! callbacks (`mrtr.rs`) and is sent again with the answers and the server's `requestState`,
//! round after round, all under the call's one deadline. A task-augmented call (SEP-2663)
//! takes the same path, declaring the Tasks extension on each round, and may end in the task
//! the server made instead of a result (`task_wire.rs`).

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientRequest, JsonObject, RequestId,
    RequestMetaObject, ServerResult,
};
use rmcp::service::{Peer, PeerRequestOptions, RoleClient, ServiceError};
use tokio::sync::{Notify, watch};
use tokio::time::{Instant, Sleep};

use super::breaker::Admission;
use super::callers::Caller;
use super::client::{self, ProgressRoutes};
use super::handshake::{STDERR_DRAIN, wait_exit};
use super::mrtr;
use super::task_wire::{self, Answer};
use super::{Connection, Live, ServerState};
use crate::call::CallOptions;
use crate::defaults;
use crate::error::Error;
use crate::result::ToolResult;
use crate::transport::ExitInfo;
use crate::transport::stdio::StderrTail;

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
        match self.call_as(tool, arguments, safe, options, false).await? {
            Answer::Result(result) => Ok(result),
            // Only a call that declared the extension takes a task (`call_once`).
            Answer::Task(task, _) => Err(Error::Protocol {
                server: self.spec.name.clone(),
                message: format!(
                    "answered tools/call `{tool}` with task `{}`, which the call did not ask for",
                    task_wire::cut(&task.id)
                ),
            }),
        }
    }

    /// [`Connection::call`], declaring the Tasks extension when `as_task`: the server may then
    /// answer with a task.
    pub(super) async fn call_as(
        &self,
        tool: &str,
        arguments: Option<JsonObject>,
        safe: bool,
        options: &CallOptions,
        as_task: bool,
    ) -> Result<Answer, Error> {
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
            let live = self
                .live_or_wait(deadline, options, failed_session.as_ref())
                .await?;
            let args = match arguments.take() {
                Some(args) => args,
                None => spare.clone().flatten(),
            };
            let flight = live.flights.start();
            let result = self
                .call_once(&live, tool, args, options, timeout, as_task)
                .await;
            let session_lost = matches!(result, Err(Error::ConnectionLost { .. })) && live.ended();
            // A session that ended under the call is the supervisor's to count (a crash during
            // a call) and to repair; the caller counts the failures of a server that is up.
            let ended_under_call = flight.land(session_lost);
            match &result {
                Ok(_) => self.breaker.record_success(),
                Err(e) if e.counts_against_server() && !ended_under_call => {
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
            // Checked at every wake-up: a breaker opened while the call waited for a new
            // session (the last one crashed under it) refuses it at once.
            if let Admission::Open { .. } = self.breaker.admit() {
                return Err(Error::CircuitOpen {
                    server: self.spec.name.clone(),
                    message: self.breaker.describe(),
                });
            }
            if let Some(live) = self.live()
                && !not.is_some_and(|old| Arc::ptr_eq(old, &live))
            {
                return Ok(live);
            }
            let state = self.state();
            if matches!(state, ServerState::Idle) {
                // A lazy server's first use.
                self.ensure_started();
                continue;
            }
            // After a lost session the state may lag the loss; a state the supervisor never
            // leaves by itself (failed, needs auth, stopped) ends the wait at once.
            let settled = matches!(
                state,
                ServerState::Failed { .. } | ServerState::NeedsAuth { .. } | ServerState::Stopped
            );
            let waiting = matches!(state, ServerState::Pending { .. })
                || matches!(state, ServerState::Connected { .. })
                || (not.is_some() && !settled);
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

    /// One attempt on the live session: the call, and, when a 2026-07-28 server answers
    /// `input_required`, the rounds of answers and re-sends until its result (or, `as_task`,
    /// its task) — all under one deadline that progress extends, up to an absolute cap.
    async fn call_once(
        &self,
        live: &Arc<Live>,
        tool: &str,
        arguments: Option<JsonObject>,
        options: &CallOptions,
        timeout: Duration,
        as_task: bool,
    ) -> Result<Answer, Error> {
        let server = &self.spec.name;
        let declaring = as_task.then(|| task_wire::declaring(&live.host));
        // Only a session that may answer `input_required` keeps the arguments to send again.
        let kept = mrtr::possible(&live.peer).then(|| arguments.clone());
        let mut params = CallToolRequestParams::new(tool.to_string());
        params.arguments = arguments;
        // Our own deadline rather than rmcp's progress-timeout machinery (an async lock, a
        // channel and two timers per call): one timer, reset by the progress routes we keep
        // anyway, capped absolutely.
        let cap = Instant::now() + defaults::CALL_TIMEOUT_CAP.max(timeout);
        let sleep = tokio::time::sleep(timeout);
        tokio::pin!(sleep);
        let mut clock = Clock {
            sleep: sleep.as_mut(),
            bump: Arc::new(Notify::new()),
            timeout,
            cap,
        };
        let mut rounds = 0;
        let mut idle_rounds = 0;
        loop {
            let answer = self
                .send_round(live, tool, params, declaring.clone(), options, &mut clock)
                .await?;
            let (asked, kept) = match (answer, &kept) {
                (ServerResult::CallToolResult(result), _) => {
                    return Ok(Answer::Result(super::tool_result::from_rmcp(result)));
                }
                (ServerResult::CreateTaskResult(created), _) if as_task => {
                    let task = task_wire::task_of(server, created.task)?;
                    return Ok(Answer::Task(task, live.clone()));
                }
                (ServerResult::InputRequiredResult(asked), Some(kept)) => (asked, kept),
                (other, _) => {
                    return Err(Error::Protocol {
                        server: server.clone(),
                        message: format!(
                            "answered tools/call `{tool}` with something that is not a tool result ({})",
                            result_kind(&other)
                        ),
                    });
                }
            };
            rounds += 1;
            if rounds > mrtr::MAX_INPUT_ROUNDS {
                return Err(Error::Protocol {
                    server: server.clone(),
                    message: format!(
                        "tools/call `{tool}` still asked for input after {} rounds; a call answers \
                         at most {} (the server keeps asking: check its logs)",
                        mrtr::MAX_INPUT_ROUNDS,
                        mrtr::MAX_INPUT_ROUNDS
                    ),
                });
            }
            let requests = asked.input_requests.unwrap_or_default();
            if requests.is_empty() && asked.request_state.is_none() {
                return Err(Error::Protocol {
                    server: server.clone(),
                    message: format!(
                        "answered tools/call `{tool}` with input_required but asked for nothing"
                    ),
                });
            }
            tracing::debug!(server = %server, tool, round = rounds, requests = requests.len(), "the server asks for input (input_required)");
            let responses = if requests.is_empty() {
                // Only a state to echo: the server asks for time (load shedding); back off.
                let pause = mrtr::state_only_pause(idle_rounds);
                idle_rounds += 1;
                if let Err(stopped) = self
                    .within(live, tool, options, &mut clock, tokio::time::sleep(pause))
                    .await
                {
                    return Err(self.stopped(live, tool, stopped).await);
                }
                None
            } else {
                idle_rounds = 0;
                let answers = mrtr::answer(live, server, tool, options, requests);
                match self.within(live, tool, options, &mut clock, answers).await {
                    Ok(answers) => Some(answers?),
                    Err(stopped) => return Err(self.stopped(live, tool, stopped).await),
                }
            };
            // The same call again, as a new request, with the answers and the server's state
            // exactly as it sent it (or none, if it sent none).
            params = CallToolRequestParams::new(tool.to_string());
            params.arguments = kept.clone();
            params.input_responses = responses;
            params.request_state = asked.request_state;
        }
    }

    /// Sends one `tools/call` request (with `meta` added to its `_meta`) and waits for its
    /// answer on `clock`, telling the server to stop if the caller gives up or the deadline
    /// passes first.
    async fn send_round(
        &self,
        live: &Arc<Live>,
        tool: &str,
        params: CallToolRequestParams,
        meta: Option<RequestMetaObject>,
        options: &CallOptions,
        clock: &mut Clock<'_>,
    ) -> Result<ServerResult, Error> {
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        // In flight before it is sent: the server may ask its caller something at once.
        let caller = live.callers.enter(Caller::of(options.relay.as_ref()));
        let mut request_options = PeerRequestOptions::no_options();
        request_options.meta = meta;
        let handle = live
            .peer
            .send_cancellable_request(request, request_options)
            .await;
        let handle = match handle {
            Ok(handle) => handle,
            Err(e) => return Err(self.service_error(live, tool, e).await),
        };
        caller.identify(handle.id.clone());
        let mut cancel_guard = CancelOnDrop {
            peer: Some(handle.peer.clone()),
            id: handle.id.clone(),
        };
        let token = handle.progress_token.clone();
        live.progress.add(
            token.clone(),
            client::Route {
                tx: options.progress.clone(),
                bump: clock.bump.clone(),
            },
        );
        let _route = RouteGuard {
            routes: &live.progress,
            token,
        };
        let answer = self.within(live, tool, options, clock, handle.rx).await;
        if !matches!(answer, Err(Stopped::Waiting(_))) {
            // Answered, or the session is gone: there is nothing left to cancel.
            cancel_guard.peer = None;
        }
        // Otherwise the guard stays armed: dropping it tells the server to stop.
        drop(cancel_guard);
        match answer {
            Ok(Ok(Ok(result))) => Ok(result),
            Ok(Ok(Err(e))) => Err(self.service_error(live, tool, e).await),
            Ok(Err(_)) => Err(self.lost_error(live, tool).await),
            Err(stopped) => Err(self.stopped(live, tool, stopped).await),
        }
    }

    async fn stopped(&self, live: &Live, tool: &str, stopped: Stopped) -> Error {
        match stopped {
            Stopped::Closed => self.lost_error(live, tool).await,
            Stopped::Waiting(error) => error,
        }
    }

    /// Runs `work` until it finishes, the deadline passes (each progress notification moves
    /// it, up to the cap), the session closes or the caller cancels.
    async fn within<T>(
        &self,
        live: &Live,
        tool: &str,
        options: &CallOptions,
        clock: &mut Clock<'_>,
        work: impl Future<Output = T>,
    ) -> Result<T, Stopped> {
        let server = &self.spec.name;
        tokio::pin!(work);
        let caller_cancel = async {
            match &options.cancel {
                Some(token) => token.cancelled().await,
                None => std::future::pending().await,
            }
        };
        tokio::pin!(caller_cancel);
        loop {
            tokio::select! {
                biased;
                done = &mut work => return Ok(done),
                () = clock.bump.notified() => {
                    let next = (Instant::now() + clock.timeout).min(clock.cap);
                    clock.sleep.as_mut().reset(next);
                }
                () = clock.sleep.as_mut() => {
                    let capped = Instant::now() >= clock.cap;
                    return Err(Stopped::Waiting(Error::Timeout {
                        server: server.clone(),
                        what: format!("tools/call `{tool}`"),
                        after: if capped { defaults::CALL_TIMEOUT_CAP.max(clock.timeout) } else { clock.timeout },
                    }));
                }
                () = live.closed.cancelled() => return Err(Stopped::Closed),
                () = &mut caller_cancel => return Err(Stopped::Waiting(Error::Cancelled(format!(
                    "tools/call `{tool}` on server `{server}` was cancelled by the caller"
                )))),
            }
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
        super::requests::service_error(&self.spec.name, &format!("tools/call `{tool}`"), e)
    }

    async fn lost_error(&self, live: &Live, tool: &str) -> Error {
        let (reason, stderr_tail) = ended(live.exit.as_ref(), live.stderr.as_ref()).await;
        Error::ConnectionLost {
            server: self.spec.name.clone(),
            what: format!("tools/call `{tool}`"),
            reason,
            stderr_tail,
        }
    }
}

/// What ended a session, from its process's `exit` watch and `stderr` (a process's session
/// has both): the exit status (waited for briefly) or that the connection closed, and the last
/// lines of stderr (once drained).
pub(super) async fn ended(
    exit: Option<&watch::Receiver<Option<ExitInfo>>>,
    stderr: Option<&StderrTail>,
) -> (String, Vec<String>) {
    let reason = match exit {
        Some(exit) => wait_exit(exit.clone(), Duration::from_millis(100))
            .await
            .map(|info| info.to_string())
            .unwrap_or_else(|| "the connection closed".into()),
        None => "the connection closed".into(),
    };
    let tail = match stderr {
        Some(stderr) => {
            stderr.drained(STDERR_DRAIN).await;
            stderr.last(defaults::ERROR_TAIL_LINES)
        }
        None => Vec::new(),
    };
    (reason, tail)
}

/// The message at the end of an error's source chain, without the transport's type names.
pub(super) fn innermost_message(error: &(dyn std::error::Error + 'static)) -> String {
    let mut current = error;
    while let Some(next) = current.source() {
        current = next;
    }
    current.to_string()
}

/// The one deadline of a call, shared by all its rounds: a timer that each progress
/// notification (`bump`) moves `timeout` ahead, never past `cap`.
struct Clock<'a> {
    sleep: Pin<&'a mut Sleep>,
    bump: Arc<Notify>,
    timeout: Duration,
    cap: Instant,
}

/// Why a call stopped before its work finished.
enum Stopped {
    /// The session closed under it: the connection is lost.
    Closed,
    /// The deadline passed or the caller cancelled.
    Waiting(Error),
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
pub(super) struct CancelOnDrop {
    pub(super) peer: Option<Peer<RoleClient>>,
    pub(super) id: RequestId,
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
