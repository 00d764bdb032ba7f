//! One request to a live session that a 2026-07-28 server may answer in rounds (MRTR,
//! SEP-2322): a tool call, a prompt filled in, a resource read ([`Roundtrip`]). Sent under our
//! own deadline (progress extends it, up to an absolute cap), the server told when the caller
//! gives up; an `input_required` answer has its requests answered (`round_answers.rs`: the call's
//! relay, else the host) and the request is sent again with the answers and the server's
//! `requestState`, round after round, all under the one deadline. To a 2026-07-28 server each
//! request declares the capabilities of whoever answers (the relay's, else the hub's own).
//! Each round leaves the session the one way every request does (`outgoing.rs`), whatever
//! the transport. Errors say what happened (exit status, stderr tail). Knows nothing of what
//! the answer means: the caller reads it.

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientCapabilities, ClientRequest, GetPromptRequest,
    GetPromptRequestParams, InputResponses, JsonObject, ReadResourceRequest,
    ReadResourceRequestParams, RequestId, RequestMetaObject, ServerResult,
};
use rmcp::service::{Peer, RoleClient, ServiceError};
use tokio::sync::{Notify, watch};
use tokio::time::{Instant, Sleep};

use super::callers::CallParty;
use super::handshake::{STDERR_DRAIN, wait_exit};
use super::outgoing::Sent;
use super::progress_routes::Route;
use super::round_answers;
use super::{Connection, Live};
use crate::call_options::CallOptions;
use crate::defaults;
use crate::error::Error;
use crate::transport::ExitInfo;
use crate::transport::stdio::StderrTail;

/// Which answer a tool call may take: a result only, or, declaring the Tasks extension
/// (SEP-2663), the task the server makes for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CallKind {
    /// A plain `tools/call`: its answer is a result.
    Plain,
    /// A task-augmented `tools/call`: the server may answer with a task.
    Task,
}

/// A request a 2026-07-28 server may answer `input_required`: what is sent again, with the
/// answers, until the server answers it.
#[derive(Clone)]
pub(super) enum Roundtrip {
    /// `tools/call` of the tool `name` (its raw name).
    Tool {
        name: String,
        arguments: Option<JsonObject>,
    },
    /// `prompts/get` of the prompt `name`.
    Prompt {
        name: String,
        arguments: Option<JsonObject>,
    },
    /// `resources/read` of `uri`.
    Read { uri: String },
}

impl Roundtrip {
    /// What is asked, as errors name it: "tools/call `echo`".
    pub(super) fn what(&self) -> String {
        match self {
            Roundtrip::Tool { name, .. } => format!("tools/call `{name}`"),
            Roundtrip::Prompt { name, .. } => format!("prompts/get `{name}`"),
            Roundtrip::Read { uri } => format!("resources/read `{uri}`"),
        }
    }

    /// The request of one round: with the answers to the last round and the server's state,
    /// exactly as it sent it (or none, if it sent none).
    fn request(self, responses: Option<InputResponses>, state: Option<String>) -> ClientRequest {
        match self {
            Roundtrip::Tool { name, arguments } => {
                let mut params = CallToolRequestParams::new(name);
                params.arguments = arguments;
                params.input_responses = responses;
                params.request_state = state;
                ClientRequest::CallToolRequest(CallToolRequest::new(params))
            }
            Roundtrip::Prompt { name, arguments } => {
                let mut params = GetPromptRequestParams::new(name);
                params.arguments = arguments;
                params.input_responses = responses;
                params.request_state = state;
                ClientRequest::GetPromptRequest(GetPromptRequest::new(params))
            }
            Roundtrip::Read { uri } => {
                let mut params = ReadResourceRequestParams::new(uri);
                params.input_responses = responses;
                params.request_state = state;
                ClientRequest::ReadResourceRequest(ReadResourceRequest::new(params))
            }
        }
    }
}

impl Connection {
    /// `roundtrip` on the live session, in as many rounds as a 2026-07-28 server asks for, all
    /// under one deadline that progress extends, up to an absolute cap: the server's last
    /// answer (never `input_required`).
    pub(super) async fn exchange(
        &self,
        live: &Arc<Live>,
        roundtrip: Roundtrip,
        options: &CallOptions,
        timeout: Duration,
        kind: CallKind,
    ) -> Result<ServerResult, Error> {
        let server = &self.spec.name;
        let what = roundtrip.what();
        // Only a session that may answer `input_required` keeps the request to send again,
        // and is sent the answers the caller already holds.
        let stateless = round_answers::possible(&live.peer);
        let kept = stateless.then(|| roundtrip.clone());
        let first = options
            .input_responses
            .clone()
            .filter(|given| stateless && !given.is_empty())
            .map(|given| given.into_iter().collect());
        let mut request = roundtrip.request(first, None);
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
                .send_round(live, &what, request, options, kind, &mut clock)
                .await?;
            let (asked, kept) = match (answer, &kept) {
                (ServerResult::InputRequiredResult(asked), Some(kept)) => (asked, kept),
                (other, _) => return Ok(other),
            };
            rounds += 1;
            if rounds > round_answers::MAX_INPUT_ROUNDS {
                return Err(Error::Protocol {
                    server: server.clone(),
                    message: format!(
                        "{what} still asked for input after {} rounds; a request is answered \
                         at most {} (the server keeps asking: check its logs)",
                        round_answers::MAX_INPUT_ROUNDS,
                        round_answers::MAX_INPUT_ROUNDS
                    ),
                    source: None,
                });
            }
            let requests = asked.input_requests.unwrap_or_default();
            if requests.is_empty() && asked.request_state.is_none() {
                return Err(Error::Protocol {
                    server: server.clone(),
                    message: format!("answered {what} with input_required but asked for nothing"),
                    source: None,
                });
            }
            tracing::debug!(server = %server, what, round = rounds, requests = requests.len(), "the server asks for input (input_required)");
            let responses = if requests.is_empty() {
                // Only a state to echo: the server asks for time (load shedding); back off.
                let pause = round_answers::state_only_pause(idle_rounds);
                idle_rounds += 1;
                if let Err(stopped) = self
                    .within(live, &what, options, &mut clock, tokio::time::sleep(pause))
                    .await
                {
                    return Err(self.stopped(live, &what, stopped).await);
                }
                None
            } else {
                idle_rounds = 0;
                let answers = round_answers::answer(live, server, &what, options, requests);
                match self.within(live, &what, options, &mut clock, answers).await {
                    Ok(answers) => Some(answers?),
                    Err(stopped) => return Err(self.stopped(live, &what, stopped).await),
                }
            };
            // The same request again, as a new request, with the answers and the server's
            // state exactly as it sent it (or none, if it sent none).
            request = kept.clone().request(responses, asked.request_state);
        }
    }

    /// Sends one request and waits for its answer on `clock`, telling the server to stop if
    /// the caller gives up or the deadline passes first.
    async fn send_round(
        &self,
        live: &Arc<Live>,
        what: &str,
        request: ClientRequest,
        options: &CallOptions,
        kind: CallKind,
        clock: &mut Clock<'_>,
    ) -> Result<ServerResult, Error> {
        // In flight before it is sent: the server may ask its caller something at once.
        let caller = live.callers.enter(CallParty::of(options.relay.as_ref()));
        let meta = request_meta(live, options, kind);
        // The call's progress route is in place before the server can answer: the reader may
        // hand on the first steps before this task runs again.
        let route = Route {
            tx: options.progress.clone(),
            bump: clock.bump.clone(),
        };
        let Sent {
            id,
            answer,
            route: _route,
        } = match live.send(request, meta, Some(route), Some(&caller)).await {
            Ok(sent) => sent,
            Err(e) => return Err(self.service_error(live, what, e).await),
        };
        let mut cancel_guard = CancelOnDrop {
            peer: Some(live.peer.clone()),
            id,
        };
        let answer = self.within(live, what, options, clock, answer).await;
        if !matches!(answer, Err(Stopped::Waiting(_))) {
            // Answered, or the session is gone: there is nothing left to cancel.
            cancel_guard.peer = None;
        }
        // Otherwise the guard stays armed: dropping it tells the server to stop.
        drop(cancel_guard);
        match answer {
            Ok(Ok(Ok(result))) => Ok(result),
            Ok(Ok(Err(e))) => Err(self.service_error(live, what, e).await),
            Ok(Err(_)) => Err(self.lost_error(live, what).await),
            Err(stopped) => Err(self.stopped(live, what, stopped).await),
        }
    }

    async fn stopped(&self, live: &Live, what: &str, stopped: Stopped) -> Error {
        match stopped {
            Stopped::Closed => self.lost_error(live, what).await,
            Stopped::Waiting(error) => error,
        }
    }

    /// Runs `work` until it finishes, the deadline passes (each progress notification moves
    /// it, up to the cap), the session closes or the caller cancels.
    async fn within<T>(
        &self,
        live: &Live,
        what: &str,
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
                        what: what.to_string(),
                        after: if capped { defaults::CALL_TIMEOUT_CAP.max(clock.timeout) } else { clock.timeout },
                    }));
                }
                () = live.closed.cancelled() => return Err(Stopped::Closed),
                () = &mut caller_cancel => return Err(Stopped::Waiting(Error::Cancelled(format!(
                    "{what} on server `{server}` was cancelled by the caller"
                )))),
            }
        }
    }

    /// Maps an rmcp error. A closed transport means the session is gone (see `lost_error`);
    /// a failed send on a live session (an HTTP 5xx) keeps the transport's own words.
    async fn service_error(&self, live: &Live, what: &str, e: ServiceError) -> Error {
        match e {
            ServiceError::TransportClosed => return self.lost_error(live, what).await,
            ServiceError::TransportSend(error) => {
                if live.ended() {
                    return self.lost_error(live, what).await;
                }
                return Error::ConnectionLost {
                    server: self.spec.name.clone(),
                    what: what.to_string(),
                    reason: innermost_message(&error),
                    stderr_tail: Vec::new(),
                    source: crate::error::cause(error),
                };
            }
            _ => {}
        }
        service_error(&self.spec.name, what, e)
    }

    async fn lost_error(&self, live: &Live, what: &str) -> Error {
        let (mut reason, stderr_tail) = ended(live.exit.as_ref(), live.stderr.as_ref()).await;
        // A sandboxed server that died of a denial: name the grant it lacked.
        if let Some(denial) =
            crate::transport::sandbox_denial(self.spec.options.sandbox.as_ref(), &stderr_tail)
        {
            reason = format!("{reason}: {denial}");
        }
        Error::ConnectionLost {
            server: self.spec.name.clone(),
            what: what.to_string(),
            reason,
            stderr_tail,
            source: None,
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

pub(super) fn result_kind(result: &ServerResult) -> String {
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

/// A request's own `_meta` — the one place it is built for every request the connection
/// builds itself (tool calls, prompts, reads, completions, the log level), whichever way it
/// goes (the session's, which every request of a 2026-07-28 session carries, is added beneath
/// it where it is sent): to a 2026-07-28 session, the capabilities of whoever answers what the server
/// asks — the call's relay, when it says; else the hub's own, which the session's `_meta`
/// carries already. A task-augmented call ([`CallKind::Task`]) declares the Tasks extension
/// beside them, in any era; and the trace context of the call it is sent for (SEP-414,
/// `trace_meta.rs`). `None`: the request adds nothing of its own.
pub(super) fn request_meta(
    live: &Live,
    options: &CallOptions,
    kind: CallKind,
) -> Option<RequestMetaObject> {
    super::trace_meta::traced(declared_meta(live, options, kind))
}

/// What a request declares in its `_meta` (see [`request_meta`]).
fn declared_meta(live: &Live, options: &CallOptions, kind: CallKind) -> Option<RequestMetaObject> {
    let as_task = kind == CallKind::Task;
    let relayed = round_answers::possible(&live.peer)
        .then(|| {
            options
                .relay
                .as_ref()
                .and_then(|relay| relay.capabilities())
        })
        .flatten()
        .map(|value| {
            // What does not read as capabilities declares none: the server then asks for
            // nothing, rather than for what the hub could answer and the party could not.
            serde_json::from_value::<ClientCapabilities>(value).unwrap_or_else(|e| {
                tracing::debug!("a relay's capabilities do not read as MCP's; declaring none: {e}");
                ClientCapabilities::default()
            })
        });
    let mut capabilities = match (relayed, as_task) {
        (None, false) => return None,
        (Some(relayed), _) => relayed,
        (None, true) => super::client::client_info(&live.host).capabilities,
    };
    if as_task {
        super::task_wire::declare_tasks(&mut capabilities);
    }
    let mut meta = RequestMetaObject::new();
    meta.set_client_capabilities(capabilities);
    Some(meta)
}

/// An rmcp request failure as an [`Error`]: the server's own JSON-RPC error, a timeout, a
/// connection that closed, or an answer that is not MCP. The one mapping of the library; the
/// call path adds what it knows of a session that ended (exit status, stderr).
pub(super) fn service_error(server: &str, what: &str, e: ServiceError) -> Error {
    match e {
        ServiceError::McpError(error)
            if error.code == rmcp::model::ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY =>
        {
            Error::MissingCapability {
                server: server.to_string(),
                message: error.message.into_owned(),
                required: error.data.and_then(|mut data| {
                    data.get_mut("requiredCapabilities")
                        .map(serde_json::Value::take)
                }),
            }
        }
        ServiceError::McpError(error) => Error::Server {
            server: server.to_string(),
            code: error.code.0,
            message: error.message.into_owned(),
            data: error.data,
        },
        ServiceError::Timeout { timeout } => Error::Timeout {
            server: server.to_string(),
            what: what.to_string(),
            after: timeout,
        },
        ServiceError::TransportClosed | ServiceError::TransportSend(_) => Error::ConnectionLost {
            server: server.to_string(),
            what: what.to_string(),
            reason: e.to_string(),
            stderr_tail: Vec::new(),
            source: crate::error::cause(e),
        },
        other => Error::Protocol {
            server: server.to_string(),
            message: format!("{what}: {other}"),
            source: crate::error::cause(other),
        },
    }
}
