//! The Tasks extension (SEP-2663) served. The extension is declared once some upstream server
//! (in scope) declares it; a call from a client that declares it is made as a task-augmented
//! call (`Hub::call_task`), and a task an upstream server creates reaches the client under an
//! id of the gateway's own: 128 random bits, bound to the downstream session that made the
//! call and to the server that runs the task. `tasks/get`, `tasks/update` and `tasks/cancel`
//! go to that server, with its own id for the task, and only for that session: another
//! session's id, like an unknown one, is -32602, so a client can neither read nor cancel a
//! task it did not start, nor learn that one exists. A task whose upstream session ended under
//! it (the server exited or was restarted) is `failed`, its error naming what became of the
//! server.
//!
//! Sessions are told apart by HTTP's `Mcp-Session-Id` (kept as a digest); stateless
//! 2026-07-28 requests have no session, so their tasks are reachable by whoever holds the id,
//! which no one can guess; over stdio there is one client. A session's tasks are cancelled
//! upstream once it has ended. The table is bounded and forgets tasks past their time to live.
//! Knows nothing of transports beyond telling sessions apart.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use mcpmux::{TaskCall, TaskOutcome, TaskState, TaskStatus};
use rmcp::{
    ErrorData, RoleServer,
    model::{
        CallToolResponse, CreateTaskResult, DetailedTask, ErrorCode, GetTaskResult, JsonObject,
        ServerCapabilities, TASKS_EXTENSION_ID, TaskPayload,
    },
    service::{Peer, RequestContext},
};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use crate::failures;

/// The most tasks the gateway follows at once (for every session together). Past it a new
/// task is cancelled upstream and the call refused: a client cannot pile tasks up unbounded.
const MAX_TASKS: usize = 10_000;

/// How often, at most, the table is swept of expired tasks and of the tasks of sessions that
/// have ended (a sweep runs when a task is added).
const SWEEP_EVERY: Duration = Duration::from_secs(10);

/// The longest a task is followed, whatever its time to live: a day, as the library keeps it.
const KEEP_MAX: Duration = Duration::from_secs(24 * 60 * 60);

/// Who may reach a task: the downstream party whose call made it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Owner {
    /// An HTTP session, by the digest of its `Mcp-Session-Id`.
    Session([u8; 32]),
    /// Stateless 2026-07-28 requests over HTTP: whoever holds the id.
    Stateless,
    /// The one client of a stdio gateway.
    Local,
}

/// The party a task is made for: who may reach it, and the session whose end ends it. Taken
/// from the request that makes the call (a call answered in rounds takes it from its first).
pub struct Holder {
    owner: Owner,
    /// `None`: a stateless or stdio client.
    session: Option<Peer<RoleServer>>,
}

impl Holder {
    /// The party of `context`'s request.
    pub fn of(context: &RequestContext<RoleServer>) -> Self {
        let owner = owner(context);
        let session = matches!(owner, Owner::Session(_)).then(|| context.peer.clone());
        Holder { owner, session }
    }
}

fn owner(context: &RequestContext<RoleServer>) -> Owner {
    let Some(parts) = context.extensions.get::<http::request::Parts>() else {
        return Owner::Local;
    };
    match parts.headers.get("mcp-session-id") {
        Some(id) => Owner::Session(Sha256::digest(id.as_bytes()).into()),
        None => Owner::Stateless,
    }
}

/// One task followed for a downstream client.
struct Entry {
    owner: Owner,
    /// The owner's session, whose end ends the task (`None`: a stateless or stdio client).
    session: Option<Peer<RoleServer>>,
    /// The server that runs it, and the task as it last described it (its own id inside).
    task: mcpmux::Task,
    /// Why the task is gone with its server's session, once it is.
    lost: Option<String>,
    /// When it is forgotten: its time to live from the last answer about it.
    until: Instant,
}

#[derive(Default)]
struct Table {
    entries: HashMap<String, Entry>,
    swept: Option<Instant>,
}

/// The tasks served, by the gateway's id.
#[derive(Default)]
pub struct Tasks {
    table: Mutex<Table>,
    /// Whether some upstream server has declared the extension: declared from then on, so a
    /// session never sees it vanish because a server is down.
    offered: AtomicBool,
}

/// Whether the request's client declared the Tasks extension (in the request's `_meta`, or in
/// its session's `initialize`).
pub fn wanted(context: &RequestContext<RoleServer>) -> bool {
    context
        .client_capabilities()
        .is_some_and(|capabilities| capabilities.supports_tasks())
}

/// The call, made as a task-augmented one when the client `wants` tasks.
pub async fn call(
    hub: &mcpmux::Hub,
    name: &str,
    arguments: Value,
    options: mcpmux::CallOptions,
    wants: bool,
) -> mcpmux::Result<TaskCall> {
    if wants {
        hub.call_task(name, arguments, options).await
    } else {
        hub.call_with(name, arguments, options)
            .await
            .map(TaskCall::Completed)
    }
}

impl Tasks {
    fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        mcpmux::cli_support::sync::lock(&self.table)
    }

    /// Adds the extension to `capabilities` once some upstream server `view` shows has
    /// declared it.
    pub fn declare(
        &self,
        hub: &mcpmux::Hub,
        view: &crate::view::View,
        capabilities: &mut ServerCapabilities,
    ) {
        if !self.offered.load(Ordering::Relaxed)
            && hub
                .servers()
                .iter()
                .any(|server| server.tasks && view.server_shown(&server.name))
        {
            self.offered.store(true, Ordering::Relaxed);
        }
        if self.offered.load(Ordering::Relaxed) {
            capabilities
                .extensions
                .get_or_insert_with(Default::default)
                .insert(TASKS_EXTENSION_ID.to_string(), JsonObject::new());
        }
    }

    /// An upstream server made `task` for a call of `holder`: the client's answer, under the
    /// gateway's id for it.
    pub fn started(
        &self,
        hub: &mcpmux::Hub,
        task: mcpmux::Task,
        holder: Holder,
    ) -> Result<CallToolResponse, ErrorData> {
        let Holder { owner, session } = holder;
        let id = match new_id() {
            Some(id) => id,
            None => {
                abandon(hub, &task);
                return Err(ErrorData::internal_error(
                    "the gateway has no randomness for a task id; the task was cancelled",
                    None,
                ));
            }
        };
        let answer = CreateTaskResult::new(wire_task(&id, &task, task.status));
        let ended = {
            let mut table = self.lock();
            let now = Instant::now();
            let due = table
                .swept
                .is_none_or(|at| now.duration_since(at) >= SWEEP_EVERY);
            let ended = if due || table.entries.len() >= MAX_TASKS {
                table.swept = Some(now);
                sweep(&mut table.entries, now)
            } else {
                Vec::new()
            };
            if table.entries.len() >= MAX_TASKS {
                drop(table);
                cancel_upstream(hub, ended);
                abandon(hub, &task);
                return Err(ErrorData::internal_error(
                    format!(
                        "the gateway follows {MAX_TASKS} tasks already; the task was cancelled: \
                         call again once some have ended"
                    ),
                    None,
                ));
            }
            table.entries.insert(
                id,
                Entry {
                    owner,
                    session,
                    until: now + keep(&task),
                    task,
                    lost: None,
                },
            );
            ended
        };
        cancel_upstream(hub, ended);
        Ok(answer.into())
    }

    /// The task `id` of the party of `context`: its server's id for it and what the gateway
    /// last knew; an id it did not make, like an unknown one, is -32602.
    fn find(
        &self,
        id: &str,
        context: &RequestContext<RoleServer>,
    ) -> Result<(mcpmux::Task, Option<String>), ErrorData> {
        let owner = owner(context);
        let table = self.lock();
        match table.entries.get(id) {
            Some(entry) if entry.owner == owner && entry.until > Instant::now() => {
                Ok((entry.task.clone(), entry.lost.clone()))
            }
            _ => Err(ErrorData::invalid_params(
                format!(
                    "no task `{}` in this session: a task id is good only in the session whose \
                     call made it, until its ttl passes",
                    cut(id)
                ),
                None,
            )),
        }
    }

    /// Notes what the server said of the task (or that it is lost).
    fn note(&self, id: &str, task: &mcpmux::Task, lost: Option<String>) {
        if let Some(entry) = self.lock().entries.get_mut(id) {
            entry.until = Instant::now() + keep(task);
            entry.task = task.clone();
            if lost.is_some() {
                entry.lost = lost;
            }
        }
    }

    fn forget(&self, id: &str) {
        self.lock().entries.remove(id);
    }

    /// `tasks/get`, from the server that runs the task.
    pub async fn get(
        &self,
        hub: &mcpmux::Hub,
        id: &str,
        context: &RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        let (known, lost) = self.find(id, context)?;
        if let Some(reason) = lost {
            return Ok(GetTaskResult::new(lost_task(id, &known, reason)));
        }
        match hub.task(&known.server, &known.id).await {
            Ok(state) => {
                self.note(id, &state.task, None);
                detailed(id, state).map(GetTaskResult::new)
            }
            Err(error @ mcpmux::Error::TaskLost { .. }) => {
                let reason = hide(&error.to_string(), &known.id, id);
                let mut failed = known;
                failed.status = TaskStatus::Failed;
                self.note(id, &failed, Some(reason.clone()));
                Ok(GetTaskResult::new(lost_task(id, &failed, reason)))
            }
            Err(error) => Err(self.failure(id, &known, &error)),
        }
    }

    /// `tasks/update`: the client's answers, passed to the server that runs the task.
    pub async fn update(
        &self,
        hub: &mcpmux::Hub,
        id: &str,
        responses: Map<String, Value>,
        context: &RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let (known, lost) = self.find(id, context)?;
        if let Some(reason) = lost {
            return Err(ErrorData::internal_error(reason, None));
        }
        hub.update_task(&known.server, &known.id, responses)
            .await
            .map_err(|error| self.failure(id, &known, &error))
    }

    /// `tasks/cancel`, passed to the server that runs the task; a lost task has nothing left
    /// to cancel, and is acknowledged.
    pub async fn cancel(
        &self,
        hub: &mcpmux::Hub,
        id: &str,
        context: &RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let (known, lost) = self.find(id, context)?;
        if lost.is_some() {
            return Ok(());
        }
        match hub.cancel_task(&known.server, &known.id).await {
            Ok(()) | Err(mcpmux::Error::TaskLost { .. }) => Ok(()),
            Err(error) => Err(self.failure(id, &known, &error)),
        }
    }

    /// A failed request about task `id` in MCP's words. The server forgetting a task the
    /// gateway made for it (-32602) is said as such, and the task forgotten here too.
    fn failure(&self, id: &str, task: &mcpmux::Task, error: &mcpmux::Error) -> ErrorData {
        tracing::debug!(task = %cut(id), server = %task.server, %error, "task request failed");
        let mut answer = self.said(id, task, error);
        answer.message = hide(&answer.message, &task.id, id).into();
        answer
    }

    fn said(&self, id: &str, task: &mcpmux::Task, error: &mcpmux::Error) -> ErrorData {
        match error {
            mcpmux::Error::Server { code, .. } if *code == ErrorCode::INVALID_PARAMS.0 => {
                self.forget(id);
                ErrorData::invalid_params(
                    format!(
                        "{error} (server `{}` no longer knows this task: it may have restarted, \
                         or the task's ttl passed)",
                        task.server
                    ),
                    None,
                )
            }
            other => failures::protocol_error(other),
        }
    }
}

/// `message` with the server's id of the task (whole, or cut as the library cuts it for a
/// message) replaced by the gateway's: the client knows the task by the latter only.
fn hide(message: &str, upstream: &str, id: &str) -> String {
    let message = message.replace(upstream, id);
    let cut_upstream = cut(upstream);
    if cut_upstream == upstream {
        message
    } else {
        message.replace(&cut_upstream, id)
    }
}

/// Removes the expired tasks and those of sessions that have ended: the latter's unfinished
/// ones are returned, to be cancelled upstream.
fn sweep(entries: &mut HashMap<String, Entry>, now: Instant) -> Vec<mcpmux::Task> {
    let mut ended = Vec::new();
    entries.retain(|_, entry| {
        if entry.until <= now {
            return false;
        }
        let gone = entry
            .session
            .as_ref()
            .is_some_and(Peer::is_transport_closed);
        if gone && entry.lost.is_none() && !entry.task.status.is_terminal() {
            ended.push(entry.task.clone());
        }
        !gone
    });
    ended
}

/// Cancels upstream the tasks nobody can reach any more (their sessions ended).
fn cancel_upstream(hub: &mcpmux::Hub, tasks: Vec<mcpmux::Task>) {
    for task in tasks {
        abandon(hub, &task);
    }
}

/// Cancels `task` upstream without waiting for the answer.
fn abandon(hub: &mcpmux::Hub, task: &mcpmux::Task) {
    let hub = hub.clone();
    let (server, id) = (task.server.clone(), task.id.clone());
    tokio::spawn(async move {
        if let Err(error) = hub.cancel_task(&server, &id).await {
            tracing::debug!(%server, task = %cut(&id), %error, "an abandoned task was not cancelled");
        }
    });
}

/// How long a task is followed: its time to live, at most [`KEEP_MAX`].
fn keep(task: &mcpmux::Task) -> Duration {
    task.ttl.unwrap_or(KEEP_MAX).min(KEEP_MAX)
}

/// 128 random bits, hex: a task id no client can guess.
fn new_id() -> Option<String> {
    use aws_lc_rs::rand::SecureRandom;
    let mut bytes = [0u8; 16];
    aws_lc_rs::rand::SystemRandom::new().fill(&mut bytes).ok()?;
    Some(bytes.iter().map(|byte| format!("{byte:02x}")).collect())
}

/// A task id for a message: at most 64 characters of it.
fn cut(id: &str) -> String {
    match id.char_indices().nth(64) {
        Some((end, _)) => format!("{}…", &id[..end]),
        None => id.to_string(),
    }
}

/// `task` as the client sees it: under the gateway's `id`, with `status`.
fn wire_task(id: &str, task: &mcpmux::Task, status: TaskStatus) -> rmcp::model::Task {
    let mut wire = rmcp::model::Task::new(
        id,
        wire_status(status),
        task.created_at.clone(),
        task.last_updated_at.clone(),
    );
    if let Some(ttl) = task.ttl {
        wire = wire.with_ttl_ms(millis(ttl));
    }
    if let Some(interval) = task.poll_interval {
        wire = wire.with_poll_interval_ms(millis(interval));
    }
    if let Some(message) = &task.status_message {
        wire = wire.with_status_message(message.clone());
    }
    wire
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

fn wire_status(status: TaskStatus) -> rmcp::model::TaskStatus {
    use rmcp::model::TaskStatus as Wire;
    match status {
        TaskStatus::Working => Wire::Working,
        TaskStatus::InputRequired => Wire::InputRequired,
        TaskStatus::Completed => Wire::Completed,
        TaskStatus::Failed => Wire::Failed,
        TaskStatus::Cancelled => Wire::Cancelled,
        // A status added to the library after this was written: not an end.
        #[allow(unreachable_patterns)]
        _ => Wire::Working,
    }
}

/// What the server said of the task, as the client gets it under the gateway's `id`.
fn detailed(id: &str, state: TaskState) -> Result<DetailedTask, ErrorData> {
    let TaskState { task, outcome, .. } = state;
    let payload = match outcome {
        TaskOutcome::InputRequired { requests } => TaskPayload::InputRequired {
            input_requests: serde_json::from_value(Value::Object(requests)).map_err(|e| {
                ErrorData::internal_error(
                    format!(
                        "server `{}` asks for input the gateway cannot pass on: {e}",
                        task.server
                    ),
                    None,
                )
            })?,
        },
        TaskOutcome::Completed(result) => TaskPayload::Completed {
            result: object(json!(mcpmux::rmcp_model::tool_result(result))),
        },
        TaskOutcome::Failed {
            code,
            message,
            data,
        } => {
            let mut error = object(json!({"code": code, "message": message}));
            if let Some(data) = data {
                error.insert("data".into(), data);
            }
            TaskPayload::Failed { error }
        }
        TaskOutcome::Cancelled => TaskPayload::Cancelled,
        _ => TaskPayload::Working,
    };
    // The status follows the payload (`DetailedTask::new`).
    Ok(DetailedTask::new(
        wire_task(id, &task, task.status),
        payload,
    ))
}

/// A task lost with its server's session: failed, with an internal error naming why.
fn lost_task(id: &str, task: &mcpmux::Task, reason: String) -> DetailedTask {
    let error = object(json!({"code": ErrorCode::INTERNAL_ERROR.0, "message": reason}));
    DetailedTask::new(
        wire_task(id, task, TaskStatus::Failed),
        TaskPayload::Failed { error },
    )
}

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    fn task(status: TaskStatus) -> mcpmux::Task {
        let mut task = mcpmux::Task::new("srv", "upstream-1", status, "2026-01-01T00:00:00Z");
        task.ttl = Some(Duration::from_secs(60));
        task.poll_interval = Some(Duration::from_millis(100));
        task
    }

    #[test]
    fn ids_are_unguessable_and_distinct() {
        let (a, b) = (new_id().unwrap(), new_id().unwrap());
        assert_ne!(a, b);
        assert_eq!(a.len(), 32);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
    }

    #[test]
    fn the_servers_id_for_a_task_never_reaches_the_client() {
        let said = "server `s`: task `upstream-1` is lost: process exited";
        assert_eq!(
            hide(said, "upstream-1", "g-1"),
            "server `s`: task `g-1` is lost: process exited"
        );
        let long = "u".repeat(100);
        let said = format!("tasks/get `{}` timed out", cut(&long));
        assert_eq!(hide(&said, &long, "g-1"), "tasks/get `g-1` timed out");
    }

    #[test]
    fn ids_are_cut_for_messages() {
        assert_eq!(cut("abc"), "abc");
        assert_eq!(cut(&"x".repeat(100)).chars().count(), 65);
    }

    #[test]
    fn a_completed_task_reaches_the_client_under_the_gateways_id_with_its_result() {
        let state = mcpmux::TaskState::new(
            task(TaskStatus::Working),
            TaskOutcome::Completed(mcpmux::ToolResult::text("done")),
        );
        let wire =
            serde_json::to_value(GetTaskResult::new(detailed("g-1", state).unwrap())).unwrap();
        assert_eq!(wire["taskId"], "g-1");
        assert_eq!(wire["status"], "completed");
        assert_eq!(wire["resultType"], "complete");
        assert_eq!(wire["ttlMs"], 60000);
        assert_eq!(wire["pollIntervalMs"], 100);
        assert_eq!(wire["result"]["content"][0]["text"], "done");
        assert!(wire.get("requestState").is_none());
    }

    #[test]
    fn a_lost_task_is_failed_with_the_reason() {
        let lost = lost_task(
            "g-1",
            &task(TaskStatus::Working),
            "server `s` exited".into(),
        );
        let wire = serde_json::to_value(lost).unwrap();
        assert_eq!(wire["status"], "failed");
        assert_eq!(wire["error"]["code"], -32603);
        assert_eq!(wire["error"]["message"], "server `s` exited");
        assert!(wire.get("result").is_none());
    }

    #[test]
    fn the_sweep_drops_expired_tasks() {
        let now = Instant::now();
        let mut entries = HashMap::new();
        for (id, until) in [("old", now), ("new", now + Duration::from_secs(60))] {
            entries.insert(
                id.to_string(),
                Entry {
                    owner: Owner::Stateless,
                    session: None,
                    task: task(TaskStatus::Working),
                    lost: None,
                    until,
                },
            );
        }
        assert!(sweep(&mut entries, now).is_empty());
        assert_eq!(entries.keys().collect::<Vec<_>>(), ["new"]);
    }
}
