//! The Tasks extension (SEP-2663) in rmcp's words and the library's: the declaration a
//! task-augmented request carries (`_meta` client capabilities with the extension added to
//! the session's own), whether a session's server offers the extension, and a server's
//! `CreateTaskResult` and `tasks/get` answer read as [`Task`] and [`TaskState`] — every field
//! from the server checked on the way in. Knows nothing of which session made a task
//! (`task_requests.rs`) nor of the call path (`call_path.rs`).

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    DetailedTask, GetTaskResult, JsonObject, RequestMetaObject, TASKS_EXTENSION_ID, TaskPayload,
    TaskStatus as WireStatus,
};
use rmcp::service::{Peer, RoleClient};
use serde_json::{Map, Value};

use super::Live;
use super::client;
use crate::defaults;
use crate::error::Error;
use crate::result::ToolResult;
use crate::task::{Task, TaskOutcome, TaskState, TaskStatus};

/// What a `tools/call` came back with on the call path: a result, or (for a task-augmented
/// call) the task the server made, with the session it lives in.
pub(crate) enum Answer {
    Result(ToolResult),
    Task(Task, Arc<Live>),
}

/// The `_meta` of a request that declares the Tasks extension: the capabilities the session
/// declares anyway (those of the host's callbacks), plus the extension. Sent per request, so
/// a plain call on the same session never gets a task it cannot follow.
pub(super) fn declaring(host: &crate::host::Host) -> RequestMetaObject {
    let mut capabilities = client::client_info(host).capabilities;
    declare_tasks(&mut capabilities);
    let mut meta = RequestMetaObject::new();
    meta.set_client_capabilities(capabilities);
    meta
}

/// `capabilities` with the Tasks extension declared.
pub(super) fn declare_tasks(capabilities: &mut rmcp::model::ClientCapabilities) {
    capabilities
        .extensions
        .get_or_insert_with(Default::default)
        .insert(TASKS_EXTENSION_ID.to_string(), JsonObject::new());
}

/// Whether the session's server declares the Tasks extension.
pub(super) fn offered_by(peer: &Peer<RoleClient>) -> bool {
    peer.peer_info()
        .is_some_and(|info| info.capabilities.supports_tasks())
}

/// A server's task as the library's.
pub(super) fn task_of(server: &str, task: rmcp::model::Task) -> Result<Task, Error> {
    let id_bytes = task.task_id.len();
    if id_bytes > defaults::MAX_TASK_ID_BYTES || task.task_id.is_empty() {
        return Err(Error::Protocol {
            server: server.to_string(),
            message: format!(
                "answered with a task id of {id_bytes} bytes; task ids are 1 to {} bytes",
                defaults::MAX_TASK_ID_BYTES
            ),
            source: None,
        });
    }
    Ok(Task {
        server: server.to_string(),
        id: task.task_id,
        status: status_of(task.status),
        status_message: task.status_message,
        created_at: task.created_at,
        last_updated_at: task.last_updated_at,
        ttl: task.ttl_ms.map(Duration::from_millis),
        poll_interval: task.poll_interval_ms.map(Duration::from_millis),
    })
}

fn status_of(status: WireStatus) -> TaskStatus {
    match status {
        WireStatus::Working => TaskStatus::Working,
        WireStatus::InputRequired => TaskStatus::InputRequired,
        WireStatus::Completed => TaskStatus::Completed,
        WireStatus::Failed => TaskStatus::Failed,
        WireStatus::Cancelled => TaskStatus::Cancelled,
        // A status added to rmcp after this was written: not an end, so the caller asks again.
        #[allow(unreachable_patterns)]
        _ => TaskStatus::Working,
    }
}

/// A `tasks/get` answer about `asked` as the library's. The completed result is the tool's
/// result as sent (the hub cuts it); a task other than the one asked about is a protocol error.
pub(super) fn state_of(
    server: &str,
    asked: &str,
    answer: GetTaskResult,
) -> Result<TaskState, Error> {
    let DetailedTask { task, payload, .. } = answer.task;
    if task.task_id != asked {
        return Err(Error::Protocol {
            server: server.to_string(),
            message: format!(
                "asked about task `{}`, answered about another one",
                cut(asked)
            ),
            source: None,
        });
    }
    let task = task_of(server, task)?;
    let outcome = match payload {
        TaskPayload::Working => TaskOutcome::Working,
        TaskPayload::InputRequired { input_requests } => TaskOutcome::InputRequired {
            requests: input_requests
                .into_iter()
                .map(|(key, request)| {
                    let request = serde_json::to_value(request).unwrap_or(Value::Null);
                    (key, request)
                })
                .collect(),
        },
        TaskPayload::Completed { result } => {
            TaskOutcome::Completed(ToolResult::from_json(Value::Object(result)))
        }
        TaskPayload::Failed { error } => failure(error),
        TaskPayload::Cancelled => TaskOutcome::Cancelled,
        #[allow(unreachable_patterns)]
        _ => TaskOutcome::Working,
    };
    Ok(TaskState::new(task, outcome))
}

/// A failed task's JSON-RPC error object; a missing code or message reads as an internal
/// error without words.
fn failure(mut error: Map<String, Value>) -> TaskOutcome {
    let code = error
        .get("code")
        .and_then(Value::as_i64)
        .unwrap_or(rmcp::model::ErrorCode::INTERNAL_ERROR.0.into());
    let message = match error.remove("message") {
        Some(Value::String(message)) => message,
        _ => "the server gave no message".to_string(),
    };
    TaskOutcome::Failed {
        code,
        message,
        data: error.remove("data"),
    }
}

/// A server's task id for a message: at most 64 characters of it.
pub(super) fn cut(id: &str) -> String {
    const MAX: usize = 64;
    match id.char_indices().nth(MAX) {
        Some((end, _)) => format!("{}…", &id[..end]),
        None => id.to_string(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use serde_json::json;

    use super::*;

    fn answer(value: Value) -> GetTaskResult {
        serde_json::from_value(value).unwrap()
    }

    fn wire_task(status: &str) -> Value {
        json!({"taskId": "t-1", "status": status, "createdAt": "2026-01-01T00:00:00Z",
               "lastUpdatedAt": "2026-01-01T00:00:01Z", "ttlMs": 60000, "pollIntervalMs": 100})
    }

    #[test]
    fn a_completed_task_carries_the_tools_result() {
        let mut wire = wire_task("completed");
        wire["result"] = json!({"content": [{"type": "text", "text": "done"}], "isError": true});
        let state = state_of("s", "t-1", answer(wire)).unwrap();
        assert_eq!(state.task.status, TaskStatus::Completed);
        assert_eq!(state.task.ttl, Some(Duration::from_secs(60)));
        assert_eq!(state.task.poll_interval, Some(Duration::from_millis(100)));
        let TaskOutcome::Completed(result) = state.outcome else {
            panic!("{:?}", state.outcome)
        };
        assert!(result.is_error);
        assert_eq!(result.to_text(), "done");
    }

    #[test]
    fn a_failed_task_keeps_the_servers_error() {
        let mut wire = wire_task("failed");
        wire["error"] = json!({"code": -32603, "message": "broke", "data": {"x": 1}});
        let state = state_of("s", "t-1", answer(wire)).unwrap();
        assert_eq!(
            state.outcome,
            TaskOutcome::Failed {
                code: -32603,
                message: "broke".into(),
                data: Some(json!({"x": 1}))
            }
        );
    }

    #[test]
    fn what_a_task_asks_is_kept_by_key() {
        let mut wire = wire_task("input_required");
        wire["inputRequests"] = json!({"confirm": {"method": "elicitation/create", "params": {
            "mode": "form", "message": "Sure?", "requestedSchema": {"type": "object", "properties": {}}}}});
        let state = state_of("s", "t-1", answer(wire)).unwrap();
        let TaskOutcome::InputRequired { requests } = state.outcome else {
            panic!("{:?}", state.outcome)
        };
        assert_eq!(requests["confirm"]["method"], "elicitation/create");
    }

    #[test]
    fn an_answer_about_another_task_or_an_oversized_id_is_refused() {
        let error = state_of("s", "t-2", answer(wire_task("working"))).unwrap_err();
        assert!(error.to_string().contains("another one"), "{error}");
        let mut wire = wire_task("working");
        wire["taskId"] = json!("x".repeat(defaults::MAX_TASK_ID_BYTES + 1));
        let asked = "x".repeat(defaults::MAX_TASK_ID_BYTES + 1);
        let error = state_of("s", &asked, answer(wire)).unwrap_err();
        assert!(error.to_string().contains("task ids are 1 to"), "{error}");
    }

    #[test]
    fn ids_are_cut_for_messages() {
        assert_eq!(cut("short"), "short");
        assert_eq!(cut(&"é".repeat(100)).chars().count(), 65);
    }
}
