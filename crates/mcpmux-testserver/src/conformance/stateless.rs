//! The diagnostic tools of the 2026-07-28 `server-stateless` scenario (SEP-2575): a tool that
//! needs a client capability (refused with -32021 when the request does not declare it), one
//! that asks for input mid-call, one that logs only when the request set a log level, and two
//! that add and remove a tool and a prompt (`changes` tells the listen streams), and one whose
//! argument also travels in a custom header (SEP-2243 `x-mcp-header`). Knows nothing
//! of transports.

#![allow(deprecated)] // Logging is SEP-2577-deprecated in rmcp, yet what the scenario checks.

use rmcp::{
    ErrorData, RoleServer,
    model::{
        CallToolResponse, CallToolResult, ClientCapabilities, ContentBlock, ErrorCode,
        InputRequests, InputRequiredResult, JsonObject, LoggingLevel,
        LoggingMessageNotificationParam, Tool,
    },
    service::RequestContext,
};
use serde_json::json;

use super::{
    LOGGER,
    changes::{self, List},
};

/// The tools, as listed.
pub fn list() -> Vec<Tool> {
    let empty = json!({"type": "object", "properties": {}});
    let tools = json!([
        {"name": "test_missing_capability", "description": "SEP-2575: needs the client's sampling capability (declared per request)", "inputSchema": empty},
        {"name": "test_streaming_elicitation", "description": "SEP-2575: asks for input mid-call through an InputRequiredResult", "inputSchema": empty},
        {"name": "test_logging_tool", "description": "SEP-2575: logs only when the request set a log level", "inputSchema": empty},
        {"name": "test_trigger_tool_change", "description": "Adds or removes test_dynamic_tool, and tells every listener that the tool list changed", "inputSchema": empty},
        {"name": "test_trigger_prompt_change", "description": "Adds or removes test_dynamic_prompt, and tells every listener that the prompt list changed", "inputSchema": empty},
        {"name": "test_custom_header", "description": "SEP-2243: `region` travels in the Mcp-Param-Region header too; answers with it", "inputSchema": {
            "type": "object",
            "properties": {"region": {"type": "string", "x-mcp-header": "Region"}},
            "required": ["region"]
        }}
    ]);
    let mut tools: Vec<Tool> = serde_json::from_value(tools).unwrap_or_else(|error| {
        tracing::error!(%error, "the stateless diagnostic tools do not parse");
        Vec::new()
    });
    if changes::dynamic(List::Tools) {
        tools.extend(
            serde_json::from_value::<Tool>(json!({
                "name": "test_dynamic_tool",
                "description": "Listed after test_trigger_tool_change added it",
                "inputSchema": empty
            }))
            .ok(),
        );
    }
    tools
}

fn text(value: &str) -> CallToolResponse {
    CallToolResult::success(vec![ContentBlock::text(value)]).into()
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

/// -32021 naming the capability missing.
fn missing(capability: &str) -> ErrorData {
    ErrorData::new(
        ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY,
        format!(
            "this tool needs the client's `{capability}` capability, which the request did not declare"
        ),
        Some(json!({"requiredCapabilities": {capability: {}}})),
    )
}

/// Answers `name` if it is one of these tools.
pub async fn call(
    name: &str,
    arguments: Option<&JsonObject>,
    context: &RequestContext<RoleServer>,
) -> Option<Result<CallToolResponse, ErrorData>> {
    Some(match name {
        // rmcp checked the header against this argument before the call reached us.
        "test_custom_header" => match arguments
            .and_then(|a| a.get("region"))
            .and_then(|r| r.as_str())
        {
            Some(region) if region.len() <= 1024 => Ok(text(&format!("region: {region}"))),
            _ => Err(ErrorData::invalid_params(
                "`region` (a string of at most 1024 bytes) is required",
                None,
            )),
        },
        "test_missing_capability" => {
            if declared(context).sampling.is_some() {
                Ok(text("the client declared sampling"))
            } else {
                Err(missing("sampling"))
            }
        }
        "test_streaming_elicitation" => {
            if declared(context).elicitation.is_none() {
                return Some(Err(missing("elicitation")));
            }
            let requests = serde_json::from_value::<InputRequests>(json!({
                "confirm": {"method": "elicitation/create", "params": {
                    "mode": "form",
                    "message": "Continue?",
                    "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
                }}
            }));
            match requests {
                Ok(requests) => Ok(InputRequiredResult::new(Some(requests), None).into()),
                Err(error) => Err(ErrorData::internal_error(error.to_string(), None)),
            }
        }
        "test_logging_tool" => {
            // 2026-07-28 has no session level: a request without one gets no log, and this
            // info-level one only reaches a request that asked for info or debug.
            if context
                .meta
                .log_level()
                .is_some_and(|level| matches!(level, LoggingLevel::Debug | LoggingLevel::Info))
            {
                let message = LoggingMessageNotificationParam::new(
                    LoggingLevel::Info,
                    json!("test_logging_tool ran"),
                )
                .with_logger(LOGGER);
                if let Err(error) = context.peer.notify_logging_message(message).await {
                    tracing::debug!(%error, "log message not sent");
                }
            }
            Ok(text("logged only if a log level was set"))
        }
        "test_trigger_tool_change" => {
            changes::toggle(List::Tools).await;
            Ok(text(
                "test_dynamic_tool added or removed; tools/list_changed sent",
            ))
        }
        "test_trigger_prompt_change" => {
            changes::toggle(List::Prompts).await;
            Ok(text(
                "test_dynamic_prompt added or removed; prompts/list_changed sent",
            ))
        }
        "test_dynamic_tool" if changes::dynamic(List::Tools) => Ok(text("dynamic")),
        _ => return None,
    })
}
