//! How one call is made: its deadline, progress, cancellation, patience and scope, as the
//! harness asks for them. Shared by every layer a call passes through (handler, connection,
//! hub); knows nothing of servers or transports.

use std::time::Duration;

use serde::Serialize;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::catalog::scope::Scope;

/// Options of one call.
#[derive(Debug, Clone, Default)]
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
