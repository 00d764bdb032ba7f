//! The SEP-2663 Tasks extension (`io.modelcontextprotocol/tasks`) as the suite's task
//! scenarios expect it: the fixture tools (`greet` runs at once; `slow_compute`,
//! `failing_job`, `protocol_error_job`, `confirm_delete`, `multi_input` and
//! `test_tool_with_task` become tasks for a client that declared the extension), and
//! `tasks/get`, `tasks/update`, `tasks/cancel` refused (-32021) to one that did not. The tasks
//! themselves live in rmcp's `TaskManager`, one per process: over stateless HTTP every request
//! has a handler of its own. Knows nothing of the other tools.

use std::{sync::OnceLock, time::Duration};

use rmcp::{
    ErrorData, RoleServer,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities, ContentBlock,
        CreateTaskResult, ErrorCode, GetTaskResult, InputRequest, InputRequests,
        InputRequiredResult, JsonObject, TASKS_EXTENSION_ID, Tool,
    },
    service::RequestContext,
    task_manager::{TaskContext, TaskExit, TaskManager, TaskOptions},
};
use serde_json::{Value, json};

/// How long a task may live, and how often a client should poll: a minute is far more than a
/// scenario needs, and keeps the manager small.
const TASK_TTL_MS: u64 = 60_000;
const POLL_INTERVAL_MS: u64 = 100;

/// The most tasks running at once; past it a call is refused rather than queued.
const MAX_RUNNING: usize = 1000;

/// The longest `slow_compute` sleeps.
const MAX_SECONDS: f64 = 60.0;

/// How long `failing_job` works before it reports its tool error.
const FAILING_JOB_TAKES: Duration = Duration::from_millis(300);

/// The process's tasks.
fn manager() -> &'static TaskManager {
    static MANAGER: OnceLock<TaskManager> = OnceLock::new();
    MANAGER.get_or_init(TaskManager::new)
}

/// How a tool runs: at once, as a task when the client declared the extension, or only as
/// a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Support {
    Never,
    Optional,
    Required,
}

fn support(tool: &str) -> Option<Support> {
    Some(match tool {
        "greet" => Support::Never,
        "slow_compute" | "protocol_error_job" | "confirm_delete" | "multi_input" => {
            Support::Optional
        }
        "failing_job" | "test_tool_with_task" => Support::Required,
        _ => return None,
    })
}

/// The fixture tools, as listed.
pub fn list() -> Vec<Tool> {
    let empty = json!({"type": "object", "properties": {}});
    let tools = json!([
        {"name": "greet", "description": "SEP-2663 fixture: answers at once, `Hello, {name}!`", "inputSchema": {
            "type": "object", "properties": {"name": {"type": "string"}}
        }},
        {"name": "slow_compute", "description": "SEP-2663 fixture: a task that sleeps `seconds` (at most 60), then answers", "inputSchema": {
            "type": "object", "properties": {"seconds": {"type": "number", "minimum": 0}}
        }},
        {"name": "failing_job", "description": "SEP-2663 fixture: only runs as a task; reports a tool error", "inputSchema": empty},
        {"name": "protocol_error_job", "description": "SEP-2663 fixture: a task that fails with a protocol error", "inputSchema": empty},
        {"name": "confirm_delete", "description": "SEP-2663 fixture: a task that asks for a confirmation (elicitation)", "inputSchema": empty},
        {"name": "multi_input", "description": "SEP-2663 fixture: a task that asks two questions at once", "inputSchema": empty},
        {"name": "test_tool_with_task", "description": "SEP-2663 with SEP-2322: asks for a name, then goes on as a task that greets it", "inputSchema": empty}
    ]);
    serde_json::from_value(tools).unwrap_or_else(|error| {
        tracing::error!(%error, "the task fixture tools do not parse");
        Vec::new()
    })
}

/// What the client declared: per request in 2026-07-28, at the handshake before.
fn declared(context: &RequestContext<RoleServer>) -> ClientCapabilities {
    context
        .meta
        .client_capabilities()
        .or_else(|| {
            context
                .peer
                .peer_info()
                .map(|info| info.capabilities.clone())
        })
        .unwrap_or_default()
}

/// -32021 naming the extension.
fn extension_missing() -> ErrorData {
    ErrorData::new(
        ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY,
        format!("this needs the {TASKS_EXTENSION_ID} extension, which the client did not declare"),
        Some(json!({"requiredCapabilities": {"extensions": {TASKS_EXTENSION_ID: {}}}})),
    )
}

/// Refuses a `tasks/*` request from a client without the extension.
pub fn gate(context: &RequestContext<RoleServer>) -> Result<(), ErrorData> {
    if declared(context).supports_tasks() {
        Ok(())
    } else {
        Err(extension_missing())
    }
}

fn text(value: impl Into<String>) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(value)])
}

fn elicitation(message: &str, field: &str) -> Result<InputRequest, ErrorData> {
    serde_json::from_value(json!({
        "method": "elicitation/create",
        "params": {
            "mode": "form",
            "message": message,
            "requestedSchema": {"type": "object", "properties": {field: {"type": "string"}}, "required": [field]}
        }
    }))
    .map_err(|error| ErrorData::internal_error(format!("input request: {error}"), None))
}

/// What an accepted elicitation answered for `field`.
fn answered(answer: &Value, field: &str) -> String {
    match &answer["content"][field] {
        Value::String(text) => text.clone(),
        Value::Null => format!("({})", answer["action"].as_str().unwrap_or("no answer")),
        other => other.to_string(),
    }
}

/// `slow_compute`'s sleep, bounded; `None` when `seconds` is not a number in range.
fn seconds(arguments: Option<&JsonObject>) -> Option<Duration> {
    let seconds = match arguments.and_then(|a| a.get("seconds")) {
        None => 1.0,
        Some(value) => value.as_f64()?,
    };
    (0.0..=MAX_SECONDS)
        .contains(&seconds)
        .then(|| Duration::from_secs_f64(seconds))
}

/// Answers a fixture tool, or `None` when `request` names none.
pub async fn call(
    request: &CallToolRequestParams,
    context: &RequestContext<RoleServer>,
) -> Option<Result<CallToolResponse, ErrorData>> {
    let name = request.name.as_ref();
    let support = support(name)?;
    let as_task = declared(context).supports_tasks();
    if support == Support::Required && !as_task {
        return Some(Err(extension_missing()));
    }
    if as_task && support != Support::Never && manager().running_task_count() >= MAX_RUNNING {
        return Some(Err(ErrorData::internal_error(
            format!("{MAX_RUNNING} tasks are running already; try again when some have ended"),
            None,
        )));
    }
    let arguments = request.arguments.as_ref();
    Some(match name {
        "greet" => {
            let who = arguments
                .and_then(|a| a.get("name"))
                .and_then(Value::as_str)
                .unwrap_or("world");
            Ok(text(format!(
                "Hello, {}!",
                who.chars().take(256).collect::<String>()
            ))
            .into())
        }
        "slow_compute" => match seconds(arguments) {
            None => Err(ErrorData::invalid_params(
                format!("`seconds` is a number from 0 to {MAX_SECONDS}"),
                None,
            )),
            Some(sleep) if !as_task => {
                tokio::time::sleep(sleep).await;
                Ok(text(format!("computed after {}s", sleep.as_secs_f64())).into())
            }
            Some(sleep) => Ok(spawn(move |task| {
                Box::pin(async move {
                    tokio::select! {
                        () = tokio::time::sleep(sleep) => Ok(text(format!("computed after {}s", sleep.as_secs_f64()))),
                        () = task.cancelled() => Err(TaskExit::Cancelled),
                    }
                })
            })),
        },
        "failing_job" => Ok(spawn(|_| {
            Box::pin(async {
                tokio::time::sleep(FAILING_JOB_TAKES).await;
                Ok(CallToolResult::error(vec![ContentBlock::text(
                    "failing_job failed, as it always does",
                )]))
            })
        })),
        "protocol_error_job" => {
            let failure =
                || ErrorData::internal_error("protocol_error_job broke, as it always does", None);
            if as_task {
                Ok(spawn(move |_| {
                    Box::pin(async move { Err(TaskExit::Error(failure())) })
                }))
            } else {
                Err(failure())
            }
        }
        "confirm_delete" => {
            let ask = match elicitation("Delete the record?", "confirm") {
                Ok(ask) => ask,
                Err(error) => return Some(Err(error)),
            };
            if !as_task {
                // Without tasks, the 2026-07-28 way to ask is an InputRequiredResult.
                return Some(Ok(
                    match request
                        .input_responses
                        .as_ref()
                        .and_then(|r| r.get("confirm"))
                    {
                        Some(answer) => {
                            text(format!("delete: {}", answered(answer, "confirm"))).into()
                        }
                        None => InputRequiredResult::new(
                            Some(InputRequests::from([("confirm".to_owned(), ask)])),
                            None,
                        )
                        .into(),
                    },
                ));
            }
            Ok(spawn(move |task| {
                Box::pin(async move {
                    let answer = task.request_input("confirm", ask).await?;
                    Ok(text(format!("delete: {}", answered(&answer, "confirm"))))
                })
            }))
        }
        "multi_input" => {
            let asks = elicitation("What is your name?", "name")
                .and_then(|name| Ok((name, elicitation("What is your favorite color?", "color")?)));
            let (name, color) = match asks {
                Ok(asks) => asks,
                Err(error) => return Some(Err(error)),
            };
            if !as_task {
                return Some(Err(ErrorData::invalid_params(
                    "multi_input asks as a task: declare the tasks extension",
                    None,
                )));
            }
            Ok(spawn(move |task| {
                Box::pin(async move {
                    let (name, color) = tokio::join!(
                        task.request_input("name", name),
                        task.request_input("color", color)
                    );
                    Ok(text(format!(
                        "{}'s favorite color is {}",
                        answered(&name?, "name"),
                        answered(&color?, "color")
                    )))
                })
            }))
        }
        "test_tool_with_task" => {
            match request
                .input_responses
                .as_ref()
                .and_then(|r| r.get("user_name"))
            {
                // Round 2: the name given, the rest goes on as a task.
                Some(answer) => {
                    let name = answered(answer, "name");
                    Ok(spawn(move |_| {
                        Box::pin(async move { Ok(text(format!("Hello, {name}! (from a task)"))) })
                    }))
                }
                // Round 1: ask first, synchronously.
                None => elicitation("What is your name?", "name").map(|ask| {
                    InputRequiredResult::new(
                        Some(InputRequests::from([("user_name".to_owned(), ask)])),
                        None,
                    )
                    .into()
                }),
            }
        }
        _ => return None,
    })
}

/// Starts `operation` as a task; its `CreateTaskResult`.
fn spawn(
    operation: impl FnOnce(TaskContext) -> rmcp::task_manager::TaskFuture,
) -> CallToolResponse {
    let options = TaskOptions::new()
        .with_ttl_ms(TASK_TTL_MS)
        .with_poll_interval_ms(POLL_INTERVAL_MS);
    CreateTaskResult::new(manager().spawn(options, operation)).into()
}

/// `tasks/get`.
pub fn get(task_id: &str) -> Result<GetTaskResult, ErrorData> {
    manager().get_task(task_id).map(GetTaskResult::new)
}

/// `tasks/update`: the answers reach the task waiting for them.
pub fn update(task_id: &str, responses: rmcp::model::InputResponses) -> Result<(), ErrorData> {
    manager().update_task(task_id, responses)
}

/// `tasks/cancel`.
pub fn cancel(task_id: &str) -> Result<(), ErrorData> {
    manager().cancel_task(task_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_fixture_is_listed_and_routed() {
        let tools = list();
        assert_eq!(tools.len(), 7);
        assert!(tools.iter().all(|tool| support(&tool.name).is_some()));
    }

    #[test]
    fn seconds_are_bounded() {
        let args =
            |value: Value| serde_json::from_value::<JsonObject>(json!({"seconds": value})).ok();
        assert_eq!(seconds(args(json!(0)).as_ref()), Some(Duration::ZERO));
        assert_eq!(seconds(args(json!(61)).as_ref()), None);
        assert_eq!(seconds(args(json!("x")).as_ref()), None);
        assert_eq!(seconds(None), Some(Duration::from_secs(1)));
    }
}
