//! How one call is made: its deadline, progress, cancellation, patience and scope, as the
//! harness asks for them, and, when the call is made for someone else (a gateway's client),
//! who passes on what its server asks mid-call, who approves it, and the answers the caller
//! already holds. Shared by every layer a call passes through (handler, connection, hub);
//! knows nothing of servers or transports. A prompt filled in or a resource read for someone
//! else is made with the same options.

use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use serde_json::{Map, Value};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::catalog::scope::Scope;
use crate::host::Relay;
use crate::policy::Approver;

/// Options of one call.
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct CallOptions {
    /// Deadline of this call (default: the server's `call_timeout`). Progress extends it.
    pub timeout: Option<Duration>,
    /// Where progress notifications of this call go.
    pub progress: Option<mpsc::UnboundedSender<Progress>>,
    /// Cancels the call (and tells the server) when cancelled.
    pub cancel: Option<CancellationToken>,
    /// Fail at once when the server is reconnecting, instead of waiting for it.
    pub fail_fast: bool,
    /// The caller's stage and agent: a tool of a server outside it is refused
    /// ([`Error::OutOfScope`](crate::Error::OutOfScope)), as [`Hub::tools_for`](crate::Hub::tools_for) leaves it out. `None` refuses nothing.
    pub scope: Option<Scope>,
    /// Passes on the server→client requests (roots, sampling, elicitation) this call causes,
    /// instead of the hub's [`Host`](crate::Host) answering them.
    pub relay: Option<Arc<dyn Relay>>,
    /// Decides, for this call, what a policy `ask` rule asks, instead of the hub's approver.
    pub approver: Option<Arc<dyn Approver>>,
    /// Answers the caller already holds to a 2026-07-28 server's requests, by the server's
    /// keys: sent with the first request (a client that retries a round whose server kept no
    /// `requestState` sends its answers with a call that is new to the hub). A server of the
    /// handshake era is not sent them.
    pub input_responses: Option<Map<String, Value>>,
}

impl std::fmt::Debug for CallOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallOptions")
            .field("timeout", &self.timeout)
            .field("progress", &self.progress.is_some())
            .field("cancel", &self.cancel)
            .field("fail_fast", &self.fail_fast)
            .field("scope", &self.scope)
            .field("relay", &self.relay.as_ref().map(|r| r.party()))
            .field("approver", &self.approver.is_some())
            .field(
                "input_responses",
                &self.input_responses.as_ref().map(Map::len),
            )
            .finish()
    }
}

impl CallOptions {
    /// Builder-style: set the deadline.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Builder-style: receive progress.
    pub fn with_progress(mut self, tx: mpsc::UnboundedSender<Progress>) -> Self {
        self.progress = Some(tx);
        self
    }

    /// Builder-style: fail at once when the server is not connected.
    pub fn with_fail_fast(mut self, fail_fast: bool) -> Self {
        self.fail_fast = fail_fast;
        self
    }

    /// Builder-style: cancel with a token.
    pub fn with_cancel(mut self, token: CancellationToken) -> Self {
        self.cancel = Some(token);
        self
    }

    /// Builder-style: call as `scope`, refusing tools outside it.
    pub fn with_scope(mut self, scope: Scope) -> Self {
        self.scope = Some(scope);
        self
    }

    /// Builder-style: pass the server→client requests this call causes on through `relay`.
    pub fn with_relay(mut self, relay: Arc<dyn Relay>) -> Self {
        self.relay = Some(relay);
        self
    }

    /// Builder-style: let `approver` decide this call's policy `ask`.
    pub fn with_approver(mut self, approver: Arc<dyn Approver>) -> Self {
        self.approver = Some(approver);
        self
    }

    /// Builder-style: send `responses` (answers by a 2026-07-28 server's keys) with the first
    /// request.
    pub fn with_input_responses(mut self, responses: Map<String, Value>) -> Self {
        self.input_responses = Some(responses);
        self
    }
}

/// One progress notification of a running call.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Progress {
    /// Progress so far.
    pub progress: f64,
    /// Total, when known.
    pub total: Option<f64>,
    /// What is happening.
    pub message: Option<String>,
}

/// The identifier of the Tasks extension (SEP-2663) a task-augmented call declares
/// ([`Hub::call_task`](crate::Hub::call_task)).
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";
