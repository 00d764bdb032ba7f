//! The Anthropic Messages answer as the API documents it: a `type: "message"` object with
//! `text`/`tool_use` content blocks, or the event stream (`message_start`, `ping`,
//! `content_block_start`/`_delta`/`_stop` with `text_delta` and `input_json_delta`,
//! `message_delta`, `message_stop`, and `error`), and the
//! `{"type": "error", "error": {type, message}}` error body. Knows nothing of checks or of the
//! script's order.

use axum::{
    Json,
    http::{HeaderValue, StatusCode},
    response::{IntoResponse, Response},
};
use serde_json::{Value, json};

use crate::{
    script::{End, Reply, ScriptedCall, Turn, Usage},
    stream::{argument_pieces, sse, text_pieces},
};

/// Renders one scripted reply.
pub(crate) fn reply(reply: &Reply, turn: &Turn) -> Response {
    match reply {
        Reply::Status { code, retry_after } => error(status_code(*code), None, *retry_after),
        Reply::StreamError { after_text } if turn.stream => {
            let mut frames = vec![
                event(&message_start(turn)),
                event(&json!({"type": "ping"})),
                event(&json!({
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "text", "text": ""},
                })),
            ];
            for piece in text_pieces(after_text) {
                frames.push(event(&text_delta(0, &piece)));
            }
            frames.push(event(&json!({
                "type": "error",
                "error": {"type": "overloaded_error", "message": "Overloaded"},
            })));
            sse(frames, false)
        }
        Reply::StreamError { .. } => error(status_code(529), None, None),
        Reply::Message { text, calls, end } => {
            let text = text.as_deref();
            if turn.stream {
                sse(stream_frames(turn, text, calls, *end), false)
            } else {
                let mut response = Json(message(turn, text, calls, *end)).into_response();
                add_request_id(&mut response, &turn.response_id);
                response
            }
        }
    }
}

/// An error in Anthropic's format; `message` defaults to the API's wording for the status.
pub(crate) fn error(
    status: StatusCode,
    message: Option<&str>,
    retry_after: Option<u64>,
) -> Response {
    let (kind, default_message) = error_kind(status);
    let request_id = format!("req_{}", crate::ids::next_id_suffix());
    let body = error_body(kind, message.unwrap_or(default_message), &request_id);
    let mut response = (status, Json(body)).into_response();
    add_request_id(&mut response, &request_id);
    if let Some(seconds) = retry_after {
        response
            .headers_mut()
            .insert("retry-after", HeaderValue::from(seconds));
    }
    response
}

fn error_body(kind: &str, message: &str, request_id: &str) -> Value {
    json!({
        "type": "error",
        "error": {"type": kind, "message": message},
        "request_id": request_id,
    })
}

fn error_kind(status: StatusCode) -> (&'static str, &'static str) {
    match status.as_u16() {
        400 => ("invalid_request_error", "Invalid request."),
        401 => ("authentication_error", "invalid x-api-key"),
        402 => ("billing_error", "Your credit balance is too low."),
        403 => (
            "permission_error",
            "Your API key does not have permission to use the specified resource.",
        ),
        404 => (
            "not_found_error",
            "The requested resource could not be found.",
        ),
        413 => (
            "request_too_large",
            "Request exceeds the maximum allowed number of bytes.",
        ),
        429 => (
            "rate_limit_error",
            "This request would exceed the rate limit for your organization.",
        ),
        504 => ("timeout_error", "Request timed out."),
        529 => ("overloaded_error", "Overloaded"),
        code if code >= 500 => ("api_error", "Internal server error"),
        _ => ("invalid_request_error", "Invalid request."),
    }
}

fn status_code(code: u16) -> StatusCode {
    StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}

fn add_request_id(response: &mut Response, request_id: &str) {
    if let Ok(value) = HeaderValue::from_str(request_id) {
        response.headers_mut().insert("request-id", value);
    }
}

fn stop_reason(calls: &[ScriptedCall], end: End) -> &'static str {
    match end {
        End::MaxTokens => "max_tokens",
        End::Refusal => "refusal",
        End::Natural if calls.is_empty() => "end_turn",
        End::Natural => "tool_use",
    }
}

fn usage(usage: Usage) -> Value {
    json!({
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    })
}

/// A tool call's `input`: the scripted arguments when they are a JSON object, else `{}` (the
/// API only ever sends an object; malformed arguments can only be streamed).
fn input(arguments: &str) -> Value {
    match serde_json::from_str::<Value>(arguments) {
        Ok(value @ Value::Object(_)) => value,
        Ok(_) | Err(_) => json!({}),
    }
}

/// The non-streaming `message` object.
fn message(turn: &Turn, text: Option<&str>, calls: &[ScriptedCall], end: End) -> Value {
    let mut content = Vec::new();
    if let Some(text) = text {
        content.push(json!({"type": "text", "text": text}));
    }
    for (call, id) in calls.iter().zip(&turn.call_ids) {
        content.push(json!({
            "type": "tool_use",
            "id": id,
            "name": call.name,
            "input": input(&call.arguments),
        }));
    }
    json!({
        "id": turn.response_id,
        "type": "message",
        "role": "assistant",
        "model": turn.model,
        "content": content,
        "stop_reason": stop_reason(calls, end),
        "stop_sequence": null,
        "usage": usage(turn.usage),
    })
}

fn message_start(turn: &Turn) -> Value {
    json!({
        "type": "message_start",
        "message": {
            "id": turn.response_id,
            "type": "message",
            "role": "assistant",
            "model": turn.model,
            "content": [],
            "stop_reason": null,
            "stop_sequence": null,
            "usage": usage(Usage {
                input_tokens: turn.usage.input_tokens,
                output_tokens: 1,
            }),
        },
    })
}

fn text_delta(index: usize, text: &str) -> Value {
    json!({
        "type": "content_block_delta",
        "index": index,
        "delta": {"type": "text_delta", "text": text},
    })
}

/// The events of one message, `message_stop` included.
fn stream_frames(turn: &Turn, text: Option<&str>, calls: &[ScriptedCall], end: End) -> Vec<String> {
    let mut frames = vec![event(&message_start(turn)), event(&json!({"type": "ping"}))];
    let mut index = 0;
    if let Some(text) = text {
        frames.push(event(&json!({
            "type": "content_block_start",
            "index": index,
            "content_block": {"type": "text", "text": ""},
        })));
        for piece in text_pieces(text) {
            frames.push(event(&text_delta(index, &piece)));
        }
        frames.push(event(
            &json!({"type": "content_block_stop", "index": index}),
        ));
        index += 1;
    }
    for (call, id) in calls.iter().zip(&turn.call_ids) {
        frames.push(event(&json!({
            "type": "content_block_start",
            "index": index,
            "content_block": {"type": "tool_use", "id": id, "name": call.name, "input": {}},
        })));
        let mut pieces = argument_pieces(&call.arguments);
        if pieces.is_empty() {
            // The API sends one empty delta for a call without arguments.
            pieces.push(String::new());
        }
        for piece in pieces {
            frames.push(event(&json!({
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": "input_json_delta", "partial_json": piece},
            })));
        }
        frames.push(event(
            &json!({"type": "content_block_stop", "index": index}),
        ));
        index += 1;
    }
    frames.push(event(&json!({
        "type": "message_delta",
        "delta": {"stop_reason": stop_reason(calls, end), "stop_sequence": null},
        "usage": {"output_tokens": turn.usage.output_tokens},
    })));
    frames.push(event(&json!({"type": "message_stop"})));
    frames
}

/// One `event: NAME` + `data: {...}` frame; the name is the data's `type`.
fn event(data: &Value) -> String {
    let name = data.get("type").and_then(Value::as_str).unwrap_or("error");
    format!("event: {name}\ndata: {data}\n\n")
}
