//! What a harness can see of every call: the one seam a call (tool call, resource read, prompt
//! get, completion) starts and ends at in the hub (`probe`), as a `tracing` span under the
//! OpenTelemetry conventions for MCP, and as a [`CallRecord`] handed to each [`CallObserver`]
//! (a harness without OpenTelemetry, the gateway's `/metrics`); trace context put into what is
//! sent to servers (`propagate`); a server's start, restart, handshake, breaker and list
//! changes as spans (`lifecycle`); the wire log of every JSON-RPC message (`wire`); the W3C
//! propagator over OpenTelemetry, for whoever exports with it (`w3c`, feature `opentelemetry`). Knows
//! nothing of servers, transports or exporters: the CLI installs the exporter.

pub(crate) mod lifecycle;
pub(crate) mod probe;
pub mod propagate;
#[cfg(feature = "opentelemetry")]
pub mod w3c;
pub mod wire;

use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;

use crate::error::Error;
use crate::state::Era;

pub(crate) use probe::{CallProbe, json_size};

/// The `tracing` target of the call spans (`mcpmux::call`) a subscriber can select.
pub const CALL_TARGET: &str = "mcpmux::call";

/// The `tracing` target of server lifecycle events: start, handshake, restart, breaker, list
/// changes.
pub const LIFECYCLE_TARGET: &str = "mcpmux::lifecycle";

/// What kind of request a call is, by its MCP method.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CallKind {
    /// `tools/call`.
    Tool,
    /// `resources/read`.
    Read,
    /// `prompts/get`.
    Prompt,
    /// `completion/complete`.
    Complete,
}

impl CallKind {
    /// The MCP method (`mcp.method.name`).
    pub fn method(self) -> &'static str {
        match self {
            CallKind::Tool => "tools/call",
            CallKind::Read => "resources/read",
            CallKind::Prompt => "prompts/get",
            CallKind::Complete => "completion/complete",
        }
    }
}

/// How a call ended, one word each (`mcpmux.outcome`, and `error.type` when not `ok`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Outcome {
    /// Answered (a tool result without `isError`, a task started, contents, a prompt).
    Ok,
    /// The tool answered with `isError: true`.
    ToolError,
    /// Refused by the policy (deny, or an `ask` not approved).
    RefusedPolicy,
    /// Refused: the tool's server is outside the caller's scope.
    RefusedScope,
    /// Refused at once: the server's circuit breaker is open.
    RefusedBreaker,
    /// Refused before sending: the arguments do not match the tool's schema, or it is unusable.
    InvalidArguments,
    /// No such tool, server or resource.
    Unknown,
    /// The deadline passed.
    Timeout,
    /// The caller cancelled.
    Cancelled,
    /// Any other failure: the server's error, a lost connection, a protocol error.
    Error,
}

impl Outcome {
    /// The outcome of a call that failed with `error`.
    pub fn of_error(error: &Error) -> Self {
        match error {
            Error::Denied(_) | Error::Policy(_) => Outcome::RefusedPolicy,
            Error::OutOfScope { .. } => Outcome::RefusedScope,
            Error::CircuitOpen { .. } => Outcome::RefusedBreaker,
            Error::InvalidArguments { .. } | Error::UnusableTool { .. } => {
                Outcome::InvalidArguments
            }
            Error::UnknownTool { .. }
            | Error::UnknownServer { .. }
            | Error::NoResourceServer { .. } => Outcome::Unknown,
            Error::Timeout { .. } => Outcome::Timeout,
            Error::Cancelled(_) => Outcome::Cancelled,
            _ => Outcome::Error,
        }
    }

    /// Its word: `ok`, `tool_error`, `refused_policy`, `refused_scope`, `refused_breaker`,
    /// `invalid_arguments`, `unknown`, `timeout`, `cancelled`, `error`.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::ToolError => "tool_error",
            Outcome::RefusedPolicy => "refused_policy",
            Outcome::RefusedScope => "refused_scope",
            Outcome::RefusedBreaker => "refused_breaker",
            Outcome::InvalidArguments => "invalid_arguments",
            Outcome::Unknown => "unknown",
            Outcome::Timeout => "timeout",
            Outcome::Cancelled => "cancelled",
            Outcome::Error => "error",
        }
    }

    /// Whether the call failed (every outcome but `ok`).
    pub fn failed(self) -> bool {
        self != Outcome::Ok
    }
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One call as it ended, for a [`CallObserver`].
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct CallRecord<'a> {
    /// Its method.
    pub kind: CallKind,
    /// The exposed tool name, the resource URI, the prompt's name, or the completion's
    /// argument.
    pub name: &'a str,
    /// The server it went to: `None` for a local tool, or a call refused before its server
    /// was known (an unknown name).
    pub server: Option<&'a str>,
    /// The server's transport (`stdio`, `http`, `sse`, `ws`, `inproc`), when it has one.
    pub transport: Option<&'static str>,
    /// The server's protocol era when the call was made, if connected.
    pub era: Option<Era>,
    /// How it ended.
    pub outcome: Outcome,
    /// From the start of the call in the hub to its end.
    pub duration: Duration,
    /// The size of the arguments sent, in bytes of JSON (tool calls).
    pub bytes_out: Option<usize>,
    /// The size of the answer's content, in bytes (tool calls answered).
    pub bytes_in: Option<usize>,
}

/// Told of every call the hub makes as it ends: what a harness without OpenTelemetry gets the
/// same figures from. Runs on the caller's task: it must not block.
pub trait CallObserver: Send + Sync + 'static {
    /// One call has ended.
    fn call_ended(&self, call: &CallRecord<'_>);
}

/// The observers of a hub: read by every call (one atomic load), added to rarely.
#[derive(Default)]
pub(crate) struct Observers(ArcSwap<Vec<Arc<dyn CallObserver>>>);

impl Observers {
    /// Adds `observer`.
    pub(crate) fn add(&self, observer: Arc<dyn CallObserver>) {
        self.0.rcu(|now| {
            let mut next = Vec::with_capacity(now.len() + 1);
            next.extend(now.iter().cloned());
            next.push(observer.clone());
            next
        });
    }

    /// The observers now, or `None` when there are none (the common case, kept cheap).
    pub(crate) fn current(&self) -> Option<Arc<Vec<Arc<dyn CallObserver>>>> {
        let now = self.0.load();
        if now.is_empty() {
            None
        } else {
            Some(arc_swap::Guard::into_inner(now))
        }
    }
}
