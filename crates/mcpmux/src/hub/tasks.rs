//! The hub's face for tasks (SEP-2663): a task-augmented call through the call path, and the
//! requests about a task routed to the server that runs it. What a task is and how one server
//! is asked about it are `task`'s and `connection/`'s.

use serde_json::{Map, Value};

use super::Hub;
use crate::call_options::CallOptions;
use crate::connection::CallKind;
use crate::error::Result;
use crate::result;
use crate::task::{TaskCall, TaskOutcome, TaskState};

impl Hub {
    /// Calls the tool exposed as `name` as [`Hub::call_with`] does (scope, policy, validation,
    /// deadline, breaker), declaring the Tasks extension: a server that declares it may run the
    /// call as a task and answer with it ([`TaskCall::Started`]); otherwise, or when it answers
    /// at once, the result ([`TaskCall::Completed`]). A tool that only runs as a task fails a
    /// plain call with [`Error::MissingCapability`](crate::Error::MissingCapability).
    ///
    /// The deadline covers the call until the server answers with the task, not the task's own
    /// run: follow that with [`Hub::task`], at the task's `poll_interval`.
    pub async fn call_task(
        &self,
        name: &str,
        arguments: Value,
        options: CallOptions,
    ) -> Result<TaskCall> {
        self.call_tool(name, arguments, options, CallKind::Task)
            .await
    }

    /// What `server` says of its task `task_id` now (`tasks/get`): its status, and what the
    /// server asks for, its result (cut to the server's `max_result_bytes` like a call's) or
    /// its error. Sent to the session the task was made in, within the server's call deadline
    /// and breaker; once that session has ended (the server exited or was restarted) the task
    /// is gone: [`Error::TaskLost`](crate::Error::TaskLost), at once. A task id the server does
    /// not know is its error ([`Error::Server`](crate::Error::Server), -32602).
    pub async fn task(&self, server: &str, task_id: &str) -> Result<TaskState> {
        let connection = self.connection_named(server)?;
        let (mut state, tool) = connection.get_task(task_id).await?;
        if let TaskOutcome::Completed(result) = state.outcome {
            let max_bytes = connection.spec.options.max_result_bytes;
            let source = tool.as_deref().unwrap_or("task");
            let cut = result::truncate(result, max_bytes, source, Some(&self.inner.spill));
            state.outcome = TaskOutcome::Completed(cut.result);
        }
        Ok(state)
    }

    /// Answers what task `task_id` of `server` asked for (`tasks/update`;
    /// [`TaskOutcome::InputRequired`]): each answer under the key its request came with. The
    /// server acknowledges at once; the task's next state says what it made of them.
    pub async fn update_task(
        &self,
        server: &str,
        task_id: &str,
        responses: Map<String, Value>,
    ) -> Result<()> {
        self.connection_named(server)?
            .update_task(task_id, responses)
            .await
    }

    /// Asks `server` to cancel its task `task_id` (`tasks/cancel`). Cancelling is cooperative:
    /// the task's next state says whether it stopped. A task that has already ended is
    /// acknowledged the same.
    pub async fn cancel_task(&self, server: &str, task_id: &str) -> Result<()> {
        self.connection_named(server)?.cancel_task(task_id).await
    }
}
