//! Tasks (the SEP-2663 Tasks extension, `io.modelcontextprotocol/tasks`): a server that
//! declares the extension may answer a `tools/call` with a task instead of its result, and the
//! caller then asks the server about the task (`tasks/get`), answers what it asks for
//! (`tasks/update`) or cancels it (`tasks/cancel`). This module holds what a harness is told:
//! the task, its status, what `tasks/get` says of it, and what a task-augmented call returns.
//! Knows nothing of servers, sessions or the wire.

use std::time::Duration;

use serde_json::{Map, Value};

use crate::result::ToolResult;

/// A task a server runs for a call, as the server last described it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Task {
    /// The server that runs it (the one every request about it goes to).
    pub server: String,
    /// The server's id for it.
    pub id: String,
    /// Where it is.
    pub status: TaskStatus,
    /// What the server says about its state, if anything (may be shown to a person or a model).
    pub status_message: Option<String>,
    /// When it was created (ISO 8601, as the server wrote it).
    pub created_at: String,
    /// When it last changed (ISO 8601, as the server wrote it).
    pub last_updated_at: String,
    /// How long after its creation the server keeps it; `None`: no limit.
    pub ttl: Option<Duration>,
    /// How often the server would like to be asked about it.
    pub poll_interval: Option<Duration>,
}

impl Task {
    /// A task of `server` under the server's `id`, in `status`, created (and last updated) at
    /// `created_at` (ISO 8601), with no time to live and no poll interval.
    pub fn new(
        server: impl Into<String>,
        id: impl Into<String>,
        status: TaskStatus,
        created_at: impl Into<String>,
    ) -> Self {
        let created_at = created_at.into();
        Task {
            server: server.into(),
            id: id.into(),
            status,
            status_message: None,
            last_updated_at: created_at.clone(),
            created_at,
            ttl: None,
            poll_interval: None,
        }
    }
}

/// Where a task is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TaskStatus {
    /// Running.
    Working,
    /// Waiting for answers to what it asked (see [`TaskOutcome::InputRequired`]).
    InputRequired,
    /// Finished with a result (which may be a tool error: `is_error`).
    Completed,
    /// Failed with a protocol error.
    Failed,
    /// Cancelled before it finished.
    Cancelled,
}

impl TaskStatus {
    /// Whether the task has ended: completed, failed or cancelled.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Cancelled)
    }

    /// The status as the wire spells it (`working`, `input_required`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Working => "working",
            Self::InputRequired => "input_required",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }
}

impl std::fmt::Display for TaskStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What `tasks/get` says of a task: the task and what its status carries.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct TaskState {
    /// The task (its `status` agrees with `outcome`).
    pub task: Task,
    /// What the status carries.
    pub outcome: TaskOutcome,
}

impl TaskState {
    /// `task` with `outcome`; the task's status is set to the outcome's.
    pub fn new(mut task: Task, outcome: TaskOutcome) -> Self {
        task.status = outcome.status();
        TaskState { task, outcome }
    }
}

/// What a task's status carries.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum TaskOutcome {
    /// Running; nothing yet.
    Working,
    /// The server asks for input before the task goes on: each request (an `elicitation/create`,
    /// `sampling/createMessage` or `roots/list`, as `{"method", "params"}` JSON) under the key
    /// its answer goes back under ([`Hub::update_task`](crate::Hub::update_task)).
    InputRequired {
        /// The requests, by key.
        requests: Map<String, Value>,
    },
    /// Finished: the tool's result (cut to the server's `max_result_bytes` like a call's).
    Completed(ToolResult),
    /// Failed with a JSON-RPC error during its run.
    Failed {
        /// The error's code.
        code: i64,
        /// The server's message.
        message: String,
        /// The error's data, if any.
        data: Option<Value>,
    },
    /// Cancelled.
    Cancelled,
}

impl TaskOutcome {
    /// The status this outcome is the payload of.
    pub fn status(&self) -> TaskStatus {
        match self {
            Self::Working => TaskStatus::Working,
            Self::InputRequired { .. } => TaskStatus::InputRequired,
            Self::Completed(_) => TaskStatus::Completed,
            Self::Failed { .. } => TaskStatus::Failed,
            Self::Cancelled => TaskStatus::Cancelled,
        }
    }
}

/// What a task-augmented call ([`Hub::call_task`](crate::Hub::call_task)) returns: the task
/// the server created, or the result when the server answered at once (a tool that does not
/// run as a task, a server without the extension, or an operation quick enough).
#[derive(Debug, Clone, PartialEq)]
pub enum TaskCall {
    /// The server runs the call as this task: ask about it with
    /// [`Hub::task`](crate::Hub::task).
    Started(Task),
    /// The server answered at once.
    Completed(ToolResult),
}

impl TaskCall {
    /// Whether this is a result with `isError: true` (a started task is not).
    pub fn is_error(&self) -> bool {
        matches!(self, Self::Completed(result) if result.is_error)
    }
}
