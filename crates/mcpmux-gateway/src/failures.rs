//! A [`mcpmux::Error`] as what the downstream client is told — an `isError` result naming the
//! server and its state, or a JSON-RPC error when the request itself cannot be routed or the
//! client lacks a capability; a failed read, get or listing keeps the upstream's code
//! (`failure`). (The hub's records themselves are put in rmcp's model by the library:
//! `mcpmux::rmcp_model`.) Knows nothing of sessions or transports.

use rmcp::model::{CallToolResult, ContentBlock, ErrorData};
use serde_json::{Value, json};

/// How a failed call reaches the downstream client.
///
/// A name the hub does not know is a JSON-RPC error (-32602, as the spec answers an unknown
/// tool), and so is a server's refusal for a client capability the client did not declare
/// (-32021, with the server's `data`); every other failure is a tool result with `isError: true` whose text names the
/// server and what became of it (down, breaker open, crashed mid-call, timed out, refused by
/// policy), so the model reads it and the client never waits.
pub fn error(error: &mcpmux::Error) -> Result<CallToolResult, ErrorData> {
    match error {
        mcpmux::Error::UnknownTool { .. } => {
            Err(ErrorData::invalid_params(error.to_string(), None))
        }
        // The client lacks what the tool needs (a task-only tool, called without the Tasks
        // extension): its to fix, so its error, as the server sent it.
        mcpmux::Error::MissingCapability { .. } => Err(protocol_error(error)),
        _ => Ok(CallToolResult::error(vec![ContentBlock::text(
            error.to_string(),
        )])),
    }
}

/// A failed request as a JSON-RPC error: the upstream server's own error keeps its code, a
/// missing client capability its `requiredCapabilities` (-32021); anything else (a server
/// down, a timeout, a lost task) is an internal error whose text names the server and what
/// became of it.
pub fn protocol_error(error: &mcpmux::Error) -> ErrorData {
    match error {
        mcpmux::Error::Server { code, .. } => {
            ErrorData::new(rmcp::model::ErrorCode(*code), error.to_string(), None)
        }
        mcpmux::Error::MissingCapability { required, .. } => ErrorData::new(
            rmcp::model::ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY,
            error.to_string(),
            required
                .as_ref()
                .map(|required| json!({"requiredCapabilities": required})),
        ),
        _ => ErrorData::internal_error(error.to_string(), None),
    }
}

/// The result a downstream client gets when the gateway itself refuses a call.
pub fn refusal(message: impl Into<String>) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message.into())])
}

/// A failed read, get or listing as the downstream client is told: what the upstream server
/// answered keeps its code (a missing resource, bad prompt arguments); a URI no server lists
/// is -32002 (resource not found); anything else (a server down, a timeout) is an internal
/// error whose text names the server and what became of it.
pub fn failure(error: &mcpmux::Error) -> ErrorData {
    match error {
        // The client's own declaration fell short: it is told what the server needs.
        mcpmux::Error::MissingCapability { .. } => protocol_error(error),
        mcpmux::Error::Server { code, message, .. } => ErrorData::new(
            rmcp::model::ErrorCode(*code),
            format!("{error}"),
            Some(Value::String(message.clone())),
        ),
        mcpmux::Error::NoResourceServer { .. } | mcpmux::Error::UnknownServer { .. } => {
            ErrorData::resource_not_found(error.to_string(), None)
        }
        _ => ErrorData::internal_error(error.to_string(), None),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn an_unknown_tool_is_a_protocol_error_and_a_down_server_is_an_error_result() {
        let unknown = mcpmux::Error::UnknownTool {
            name: "mcp__x__y".into(),
            suggestion: None,
        };
        assert!(error(&unknown).is_err());
        let down = mcpmux::Error::Unavailable {
            server: "files".into(),
            state: mcpmux::ServerState::Stopped,
            reason: "shut down".into(),
        };
        let result = error(&down).unwrap();
        assert_eq!(result.is_error, Some(true));
        let text = serde_json::to_string(&result).unwrap();
        assert!(text.contains("server `files` is stopped"), "{text}");
    }

    #[test]
    fn a_missing_client_capability_is_passed_on_with_what_is_required() {
        let missing = mcpmux::Error::MissingCapability {
            server: "s".into(),
            message: "Missing required client capability".into(),
            required: Some(json!({"extensions": {"io.modelcontextprotocol/tasks": {}}})),
        };
        let error = error(&missing).unwrap_err();
        assert_eq!(error.code.0, -32021);
        let data = error.data.unwrap();
        assert!(
            data["requiredCapabilities"]["extensions"]["io.modelcontextprotocol/tasks"].is_object(),
            "{data}"
        );
        assert!(
            error.message.contains("call the tool as a task"),
            "{}",
            error.message
        );
    }

    #[test]
    fn an_upstream_error_keeps_its_code_and_a_down_server_is_named() {
        let missing = mcpmux::Error::Server {
            server: "e".into(),
            code: -32002,
            message: "Resource not found".into(),
            data: None,
        };
        let told = failure(&missing);
        assert_eq!(told.code.0, -32002);
        assert!(told.message.contains("server `e`"), "{}", told.message);
        let down = mcpmux::Error::Unavailable {
            server: "files".into(),
            state: mcpmux::ServerState::Stopped,
            reason: "shut down".into(),
        };
        let told = failure(&down);
        assert_eq!(told.code, rmcp::model::ErrorCode::INTERNAL_ERROR);
        assert!(
            told.message.contains("server `files` is stopped"),
            "{}",
            told.message
        );
    }
}
