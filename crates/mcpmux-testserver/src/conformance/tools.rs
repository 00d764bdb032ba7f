//! The conformance suite's `test_*` tools, as its reference server lists and answers them:
//! every content kind (text, image, audio, embedded resource, mixed), log messages and
//! progress during a call, a tool error, server→client sampling and elicitation (with
//! SEP-1034 defaults and SEP-1330 enums), a JSON Schema 2020-12 input schema kept verbatim,
//! the SSE-polling tool, and the 2026-07-28 multi round-trip tools (`input`). Tools are listed from literal JSON so their schemas are exactly
//! the reference's. Knows nothing of resources or prompts (`catalog`).

use std::time::Duration;

use rmcp::{
    ErrorData, RoleServer,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock,
        CreateMessageRequestParams, JsonObject, LoggingLevel, ProgressNotificationParam,
        ProgressToken, ProtocolVersion, ServerRequest, Tool,
    },
    service::RequestContext,
};
use serde_json::{Value, json};

use super::{input, log, stateless, tasks};

/// A 1x1 red PNG, base64: the reference server's test image.
pub const PNG_BASE64: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";

/// A minimal WAV file, base64: the reference server's test audio.
const WAV_BASE64: &str = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=";

/// The pause between a tool's log messages or progress steps, as the reference server takes.
const STEP: Duration = Duration::from_millis(50);

/// The longest a `prompt` or `message` argument may be (it is sent back to the client).
const MAX_ARGUMENT_BYTES: usize = 64 * 1024;

/// Every tool, in the reference server's order.
pub fn list() -> Vec<Tool> {
    let empty = json!({"type": "object", "properties": {}});
    let tools = json!([
        {"name": "test_simple_text", "description": "Tests simple text content response", "inputSchema": empty},
        {"name": "test_image_content", "description": "Tests image content response", "inputSchema": empty},
        {"name": "test_audio_content", "description": "Tests audio content response", "inputSchema": empty},
        {"name": "test_embedded_resource", "description": "Tests embedded resource content response", "inputSchema": empty},
        {"name": "test_multiple_content_types", "description": "Tests response with multiple content types (text, image, resource)", "inputSchema": empty},
        {"name": "test_tool_with_logging", "description": "Tests tool that emits log messages during execution", "inputSchema": empty},
        {"name": "test_tool_with_progress", "description": "Tests tool that reports progress notifications", "inputSchema": empty},
        {"name": "test_error_handling", "description": "Tests error response handling", "inputSchema": empty},
        {"name": "test_reconnection", "description": "Tests SSE stream disconnection and client reconnection (SEP-1699)", "inputSchema": empty},
        {"name": "test_sampling", "description": "Tests server-initiated sampling (LLM completion request)", "inputSchema": {
            "type": "object",
            "properties": {"prompt": {"type": "string", "description": "The prompt to send to the LLM"}},
            "required": ["prompt"]
        }},
        {"name": "test_elicitation", "description": "Tests server-initiated elicitation (user input request)", "inputSchema": {
            "type": "object",
            "properties": {"message": {"type": "string", "description": "The message to show the user"}},
            "required": ["message"]
        }},
        {"name": "test_elicitation_sep1034_defaults", "description": "Tests elicitation with default values per SEP-1034", "inputSchema": empty},
        {"name": "test_elicitation_sep1330_enums", "description": "Tests elicitation with enum schema improvements per SEP-1330", "inputSchema": empty},
        {"name": "json_schema_2020_12_tool", "description": "Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613)", "inputSchema": {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": {
                "address": {
                    "type": "object",
                    "properties": {"street": {"type": "string"}, "city": {"type": "string"}}
                }
            },
            "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
            "additionalProperties": false
        }},
        {"name": "test_input_required_result_elicitation", "description": "SEP-2322: asks the client's user for a name through an InputRequiredResult", "inputSchema": empty},
        {"name": "test_input_required_result_sampling", "description": "SEP-2322: asks the client's model a question through an InputRequiredResult", "inputSchema": empty},
        {"name": "test_input_required_result_list_roots", "description": "SEP-2322: asks for the client's roots through an InputRequiredResult", "inputSchema": empty},
        {"name": "test_input_required_result_request_state", "description": "SEP-2322: an InputRequiredResult with a requestState to echo", "inputSchema": empty},
        {"name": "test_input_required_result_multiple_inputs", "description": "SEP-2322: elicitation, sampling and roots in one InputRequiredResult", "inputSchema": empty},
        {"name": "test_input_required_result_multi_round", "description": "SEP-2322: two rounds of input, the requestState changing between them", "inputSchema": empty},
        {"name": "test_input_required_result_tampered_state", "description": "SEP-2322: an HMAC-sealed requestState; a changed one is refused", "inputSchema": empty},
        {"name": "test_input_required_result_capabilities", "description": "SEP-2322: asks only for what the client's capabilities allow", "inputSchema": empty}
    ]);
    let mut tools: Vec<Tool> = serde_json::from_value(tools).unwrap_or_else(|error| {
        tracing::error!(%error, "the conformance tools do not parse");
        Vec::new()
    });
    tools.extend(stateless::list());
    tools.extend(tasks::list());
    tools
}

fn text(value: impl Into<String>) -> CallToolResponse {
    CallToolResult::success(vec![ContentBlock::text(value)]).into()
}

/// Content blocks from their JSON (literal, so they parse).
fn blocks(value: Value) -> Result<Vec<ContentBlock>, ErrorData> {
    serde_json::from_value(value)
        .map_err(|error| ErrorData::internal_error(format!("content block: {error}"), None))
}

/// A string argument, bounded.
fn string_argument(arguments: Option<&JsonObject>, name: &str) -> Result<String, ErrorData> {
    let value = arguments
        .and_then(|arguments| arguments.get(name))
        .and_then(Value::as_str)
        .ok_or_else(|| {
            ErrorData::invalid_params(format!("`{name}` (a string) is required"), None)
        })?;
    if value.len() > MAX_ARGUMENT_BYTES {
        return Err(ErrorData::invalid_params(
            format!("`{name}` is longer than {MAX_ARGUMENT_BYTES} bytes"),
            None,
        ));
    }
    Ok(value.to_owned())
}

/// Answers one `tools/call`.
pub async fn call(
    request: CallToolRequestParams,
    context: RequestContext<RoleServer>,
) -> Result<CallToolResponse, ErrorData> {
    if let Some(answer) = tasks::call(&request, &context).await {
        return answer;
    }
    if let Some(answer) = stateless::call(&request.name, request.arguments.as_ref(), &context).await
    {
        return answer;
    }
    let arguments = request.arguments.as_ref();
    match request.name.as_ref() {
        "test_simple_text" => Ok(text("This is a simple text response for testing.")),
        "test_image_content" => Ok(CallToolResult::success(blocks(json!([
            {"type": "image", "data": PNG_BASE64, "mimeType": "image/png"}
        ]))?)
        .into()),
        "test_audio_content" => Ok(CallToolResult::success(blocks(json!([
            {"type": "audio", "data": WAV_BASE64, "mimeType": "audio/wav"}
        ]))?)
        .into()),
        "test_embedded_resource" => Ok(CallToolResult::success(blocks(json!([{
            "type": "resource",
            "resource": {
                "uri": "test://embedded-resource",
                "mimeType": "text/plain",
                "text": "This is an embedded resource content."
            }
        }]))?)
        .into()),
        "test_multiple_content_types" => Ok(CallToolResult::success(blocks(json!([
            {"type": "text", "text": "Multiple content types test:"},
            {"type": "image", "data": PNG_BASE64, "mimeType": "image/png"},
            {"type": "resource", "resource": {
                "uri": "test://mixed-content-resource",
                "mimeType": "application/json",
                "text": json!({"test": "data", "value": 123}).to_string()
            }}
        ]))?)
        .into()),
        "test_tool_with_logging" => {
            for (index, message) in [
                "Tool execution started",
                "Tool processing data",
                "Tool execution completed",
            ]
            .into_iter()
            .enumerate()
            {
                if index > 0 {
                    tokio::time::sleep(STEP).await;
                }
                log(&context, LoggingLevel::Info, message).await;
            }
            Ok(text("Tool with logging executed successfully"))
        }
        "test_tool_with_progress" => progress(&context).await,
        "test_error_handling" => Ok(CallToolResult::error(vec![ContentBlock::text(
            "This tool intentionally returns an error for testing",
        )])
        .into()),
        // rmcp gives a handler no way to close its request's SSE stream, so the answer comes
        // on the open stream (the scenario's checks of a resumed stream are then only
        // informational).
        "test_reconnection" => {
            tokio::time::sleep(Duration::from_millis(100)).await;
            Ok(text(
                "Reconnection test completed successfully. If you received this, the client \
                 properly reconnected after stream closure.",
            ))
        }
        "test_sampling" => {
            let prompt = string_argument(arguments, "prompt")?;
            sample(&context, &request, &prompt).await
        }
        "test_elicitation" => {
            let message = string_argument(arguments, "message")?;
            let schema = json!({
                "type": "object",
                "properties": {"response": {"type": "string", "description": "User's response"}},
                "required": ["response"]
            });
            elicit(&context, &request, &message, schema, "User response").await
        }
        "test_elicitation_sep1034_defaults" => {
            let schema = json!({
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "User name", "default": "John Doe"},
                    "age": {"type": "integer", "description": "User age", "default": 30},
                    "score": {"type": "number", "description": "User score", "default": 95.5},
                    "status": {
                        "type": "string",
                        "description": "User status",
                        "enum": ["active", "inactive", "pending"],
                        "default": "active"
                    },
                    "verified": {"type": "boolean", "description": "Verification status", "default": true}
                },
                "required": []
            });
            let message = "Please review and update the form fields with defaults";
            elicit(&context, &request, message, schema, "Elicitation completed").await
        }
        "test_elicitation_sep1330_enums" => {
            let schema = json!({
                "type": "object",
                "properties": {
                    "untitledSingle": {
                        "type": "string",
                        "description": "Select one option",
                        "enum": ["option1", "option2", "option3"]
                    },
                    "titledSingle": {
                        "type": "string",
                        "description": "Select one option with titles",
                        "oneOf": [
                            {"const": "value1", "title": "First Option"},
                            {"const": "value2", "title": "Second Option"},
                            {"const": "value3", "title": "Third Option"}
                        ]
                    },
                    "legacyEnum": {
                        "type": "string",
                        "description": "Select one option (legacy)",
                        "enum": ["opt1", "opt2", "opt3"],
                        "enumNames": ["Option One", "Option Two", "Option Three"]
                    },
                    "untitledMulti": {
                        "type": "array",
                        "description": "Select multiple options",
                        "minItems": 1,
                        "maxItems": 3,
                        "items": {"type": "string", "enum": ["option1", "option2", "option3"]}
                    },
                    "titledMulti": {
                        "type": "array",
                        "description": "Select multiple options with titles",
                        "minItems": 1,
                        "maxItems": 3,
                        "items": {"anyOf": [
                            {"const": "value1", "title": "First Choice"},
                            {"const": "value2", "title": "Second Choice"},
                            {"const": "value3", "title": "Third Choice"}
                        ]}
                    }
                },
                "required": []
            });
            let message = "Please select options from the enum fields";
            elicit(&context, &request, message, schema, "Elicitation completed").await
        }
        "json_schema_2020_12_tool" => Ok(text(format!(
            "JSON Schema 2020-12 tool called with: {}",
            Value::Object(request.arguments.clone().unwrap_or_default())
        ))),
        name if name.starts_with(input::TOOL_PREFIX) => input::call(&request, &context),
        other => Err(ErrorData::invalid_params(
            format!("tool not found: `{other}`"),
            None,
        )),
    }
}

/// `test_tool_with_progress`: three steps (0, 50, 100 of 100) under the request's progress
/// token (0 when it has none, as the reference server sends), answering with the token.
async fn progress(context: &RequestContext<RoleServer>) -> Result<CallToolResponse, ErrorData> {
    let token = context
        .meta
        .get_progress_token()
        .unwrap_or(ProgressToken(rmcp::model::NumberOrString::Number(0)));
    for (index, step) in [0_u32, 50, 100].into_iter().enumerate() {
        if index > 0 {
            tokio::time::sleep(STEP).await;
        }
        let param = ProgressNotificationParam::new(token.clone(), f64::from(step))
            .with_total(100.0)
            .with_message(format!("Completed step {step} of 100"));
        if let Err(error) = context.peer.notify_progress(param).await {
            tracing::debug!(%error, "progress not sent");
        }
    }
    let shown = match &token.0 {
        rmcp::model::NumberOrString::Number(n) => n.to_string(),
        rmcp::model::NumberOrString::String(s) => s.to_string(),
    };
    Ok(text(shown))
}

/// Whether this call's client speaks 2026-07-28 or later: it cannot be sent requests and is
/// asked through an `InputRequiredResult` instead (as a server serving both eras must).
fn asks_in_rounds(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|version| version >= ProtocolVersion::V_2026_07_28)
}

/// The key the handshake-era tools ask under when they ask in rounds.
const ASKED: &str = "asked";

/// `test_sampling`: asks the client's model, answers with its text.
async fn sample(
    context: &RequestContext<RoleServer>,
    request: &CallToolRequestParams,
    prompt: &str,
) -> Result<CallToolResponse, ErrorData> {
    let asked = json!({
        "messages": [{"role": "user", "content": {"type": "text", "text": prompt}}],
        "maxTokens": 100
    });
    if asks_in_rounds(context) {
        return Ok(
            match input::answer(request.input_responses.as_ref(), ASKED) {
                Some(given) => text(format!("LLM response: {}", input::sampled(given))),
                None => input::ask(
                    json!({ASKED: {"method": "sampling/createMessage", "params": asked}}),
                    None,
                )?
                .into(),
            },
        );
    }
    let params: CreateMessageRequestParams = serde_json::from_value(asked)
        .map_err(|error| ErrorData::internal_error(format!("sampling request: {error}"), None))?;
    match context.peer.create_message(params).await {
        Ok(result) => {
            let answer = serde_json::to_value(&result).unwrap_or_default();
            let content = &answer["content"];
            let block = if content.is_array() {
                &content[0]
            } else {
                content
            };
            let reply = block["text"].as_str().unwrap_or("No response");
            Ok(text(format!("LLM response: {reply}")))
        }
        Err(error) => Ok(CallToolResult::error(vec![ContentBlock::text(format!(
            "Sampling not supported or error: {error}"
        ))])
        .into()),
    }
}

/// An elicitation with `schema`; answers `{label}: action=…, content=…` as the reference
/// server does.
async fn elicit(
    context: &RequestContext<RoleServer>,
    request: &CallToolRequestParams,
    message: &str,
    schema: Value,
    label: &str,
) -> Result<CallToolResponse, ErrorData> {
    let said = |answer: &Value| {
        let action = answer["action"].as_str().unwrap_or("unknown");
        let content = answer.get("content").cloned().unwrap_or(json!({}));
        text(format!("{label}: action={action}, content={content}"))
    };
    if asks_in_rounds(context) {
        let asked = json!({ASKED: {
            "method": "elicitation/create",
            "params": {"mode": "form", "message": message, "requestedSchema": schema}
        }});
        return Ok(
            match input::answer(request.input_responses.as_ref(), ASKED) {
                Some(given) => said(given),
                None => input::ask(asked, None)?.into(),
            },
        );
    }
    // A raw request: rmcp's typed `create_elicitation` sits behind a feature the workspace
    // does not build, and the schemas here (SEP-1330 enums) must go out exactly as written.
    let request: ServerRequest = serde_json::from_value(json!({
        "method": "elicitation/create",
        "params": {"mode": "form", "message": message, "requestedSchema": schema}
    }))
    .map_err(|error| ErrorData::internal_error(format!("elicitation request: {error}"), None))?;
    match context.peer.send_request(request).await {
        Ok(result) => Ok(said(&serde_json::to_value(&result).unwrap_or_default())),
        Err(error) => Ok(CallToolResult::error(vec![ContentBlock::text(format!(
            "Elicitation not supported or error: {error}"
        ))])
        .into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tool_parses_and_the_2020_12_schema_is_kept_verbatim() {
        let tools = list();
        assert_eq!(tools.len(), 35);
        let Some(tool) = tools.iter().find(|t| t.name == "json_schema_2020_12_tool") else {
            panic!("json_schema_2020_12_tool is listed");
        };
        let schema = serde_json::to_value(&tool.input_schema).unwrap_or_default();
        assert_eq!(
            schema["$schema"],
            "https://json-schema.org/draft/2020-12/schema"
        );
        assert_eq!(schema["$defs"]["address"]["type"], "object");
        assert_eq!(schema["additionalProperties"], false);
    }
}
