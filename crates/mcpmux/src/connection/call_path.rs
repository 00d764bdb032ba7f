//! The call path of one server: breaker admission, waiting for a reconnecting server, safe
//! retries, and the breaker's count of what failed. Each attempt is one exchange on the live
//! session (`exchange.rs`: our own progress-extended deadline, cancellation on drop, the rounds
//! of a 2026-07-28 server's `input_required`, errors that say what happened). A
//! task-augmented call (SEP-2663) takes the same path, declaring the Tasks extension on each
//! round, and may end in the task the server made instead of a result (`task_wire.rs`):
//! which of the two a call is, is its [`CallKind`].

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use rmcp::model::{JsonObject, ServerResult};
use tokio::time::Instant;

use super::breaker::Admission;
use super::exchange::{CallKind, Roundtrip};
use super::task_wire::{self, Answer};
use super::{Connection, Live, ServerState};
use crate::call_options::CallOptions;
use crate::error::Error;
use crate::state::Era;
use crate::task::TaskCall;

/// What one request's way through a connection was, for whoever observes calls: the attempts
/// it took and the era of the session that answered.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Trip {
    /// Sessions the request was sent on (more than one after a safe retry).
    pub(crate) attempts: u32,
    /// The era of the last session it was sent on; `None` when it was never sent.
    pub(crate) era: Option<Era>,
}

impl Connection {
    /// Calls `tool` (its raw name) with `arguments` as `kind` says: waits for a reconnecting
    /// server within the deadline (unless the caller asked to fail fast), respects the circuit
    /// breaker, and retries a `safe` (read-only or idempotent) tool after a lost connection.
    /// `trip` learns the attempts made and the era that answered. A task the server made is
    /// remembered with the session it lives in.
    pub(crate) async fn call(
        &self,
        tool: &str,
        arguments: JsonObject,
        safe: bool,
        options: &CallOptions,
        kind: CallKind,
        trip: &mut Trip,
    ) -> Result<TaskCall, Error> {
        match self
            .attempts(tool, arguments, safe, options, kind, trip)
            .await?
        {
            Answer::Result(result) => Ok(TaskCall::Completed(result)),
            Answer::Task(task, live) => {
                tracing::debug!(server = %self.spec.name, tool, task = %task_wire::cut(&task.id), "the server runs the call as a task");
                self.tasks.record(&task, tool, &live);
                Ok(TaskCall::Started(task))
            }
        }
    }

    /// The attempts of one call ([`Connection::call`]): a new one only for a safe call whose
    /// session was lost.
    async fn attempts(
        &self,
        tool: &str,
        arguments: JsonObject,
        safe: bool,
        options: &CallOptions,
        kind: CallKind,
        trip: &mut Trip,
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
                None => spare.clone().unwrap_or_default(),
            };
            trip.attempts += 1;
            trip.era = Some(live.era);
            let flight = live.flights.start();
            let result = self
                .call_once(&live, tool, args, options, timeout, kind)
                .await;
            let session_lost = matches!(result, Err(Error::ConnectionLost { .. })) && live.ended();
            // A session that ended under the call is the supervisor's to count (a crash during
            // a call) and to repair; the caller counts the failures of a server that is up.
            let ended_under_call = flight.land(session_lost);
            match &result {
                Ok(_) => self.breaker.record_success(),
                Err(e) if e.counts_against_server() && !ended_under_call => {
                    if self.breaker.record_failure(&e.to_string()) {
                        let described = self.breaker.describe();
                        tracing::warn!(server = %self.spec.name, "circuit breaker opened: {described}");
                        crate::telemetry::lifecycle::mark(
                            &self.spec.name,
                            crate::telemetry::lifecycle::Moment::BreakerOpen,
                            Some(&described),
                        );
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

    /// One attempt on the live session: the call, in as many rounds as a 2026-07-28 server
    /// asks for (`exchange.rs`), read as a tool result (or, a [`CallKind::Task`], the task it
    /// made; a plain call answered with a task fails).
    async fn call_once(
        &self,
        live: &Arc<Live>,
        tool: &str,
        arguments: JsonObject,
        options: &CallOptions,
        timeout: Duration,
        kind: CallKind,
    ) -> Result<Answer, Error> {
        let roundtrip = Roundtrip::Tool {
            name: tool.to_string(),
            arguments: Some(arguments),
        };
        match self
            .exchange(live, roundtrip, options, timeout, kind)
            .await?
        {
            ServerResult::CallToolResult(result) => Ok(Answer::Result(
                crate::rmcp_model::tool_result_from_rmcp(result),
            )),
            ServerResult::CreateTaskResult(created) if kind == CallKind::Task => {
                let task = task_wire::task_of(&self.spec.name, created.task)?;
                Ok(Answer::Task(task, live.clone()))
            }

            other => Err(Error::Protocol {
                server: self.spec.name.clone(),
                message: format!(
                    "answered tools/call `{tool}` with something that is not a tool result ({})",
                    super::exchange::result_kind(&other)
                ),
                source: None,
            }),
        }
    }
}
