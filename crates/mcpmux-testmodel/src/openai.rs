//! The OpenAI Chat Completions answer as the API documents it: a `chat.completion` object, or a
//! stream of `chat.completion.chunk`s (`data: {chunk}` lines, tool call arguments spread over
//! several chunks, a usage chunk with empty `choices` when `stream_options.include_usage`,
//! then `data: [DONE]`), and the `{"error": {message, type, param, code}}` error body. Knows
//! nothing of checks or of the script's order.

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

/// The `system_fingerprint` every answer carries.
const FINGERPRINT: &str = "fp_mcpmux_testmodel";

/// Renders one scripted reply.
pub(crate) fn reply(reply: &Reply, turn: &Turn) -> Response {
    match reply {
        Reply::Status { code, retry_after } => error(status_code(*code), None, *retry_after),
        Reply::StreamError { after_text } if turn.stream => {
            let mut frames = vec![chunk_frame(
                turn,
                json!({"role": "assistant", "content": "", "refusal": null}),
                None,
            )];
            for piece in text_pieces(after_text) {
                frames.push(chunk_frame(turn, json!({"content": piece}), None));
            }
            sse(frames, true)
        }
        Reply::StreamError { .. } => error(StatusCode::SERVICE_UNAVAILABLE, None, None),
        Reply::Message { text, calls, end } => {
            let text = text.as_deref();
            if turn.stream {
                sse(stream_frames(turn, text, calls, *end), false)
            } else {
                let mut response = Json(completion(turn, text, calls, *end)).into_response();
                add_request_id(&mut response, turn);
                response
            }
        }
    }
}

/// An error in OpenAI's format; `message` defaults to the API's wording for the status.
pub(crate) fn error(
    status: StatusCode,
    message: Option<&str>,
    retry_after: Option<u64>,
) -> Response {
    let (kind, code, default_message) = error_kind(status);
    let body = json!({
        "error": {
            "message": message.unwrap_or(default_message),
            "type": kind,
            "param": null,
            "code": code,
        }
    });
    let mut response = (status, Json(body)).into_response();
    if let Some(seconds) = retry_after {
        response
            .headers_mut()
            .insert("retry-after", HeaderValue::from(seconds));
    }
    response
}

fn error_kind(status: StatusCode) -> (&'static str, Option<&'static str>, &'static str) {
    match status.as_u16() {
        400 => ("invalid_request_error", None, "Invalid request."),
        401 => (
            "invalid_request_error",
            Some("invalid_api_key"),
            "Incorrect API key provided.",
        ),
        403 => (
            "invalid_request_error",
            Some("unsupported_country_region_territory"),
            "Country, region, or territory not supported",
        ),
        404 => (
            "invalid_request_error",
            Some("model_not_found"),
            "The model does not exist or you do not have access to it.",
        ),
        429 => (
            "requests",
            Some("rate_limit_exceeded"),
            "Rate limit reached for requests. Please try again later.",
        ),
        503 => (
            "server_error",
            None,
            "The engine is currently overloaded, please try again later",
        ),
        code if code >= 500 => (
            "server_error",
            None,
            "The server had an error while processing your request. Sorry about that!",
        ),
        _ => ("invalid_request_error", None, "Invalid request."),
    }
}

fn status_code(code: u16) -> StatusCode {
    StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}

fn add_request_id(response: &mut Response, turn: &Turn) {
    if let Ok(value) = HeaderValue::from_str(&format!("req_{}", turn.response_id)) {
        response.headers_mut().insert("x-request-id", value);
    }
}

fn finish_reason(calls: &[ScriptedCall], end: End) -> &'static str {
    match end {
        End::MaxTokens => "length",
        End::Refusal => "stop",
        End::Natural if calls.is_empty() => "stop",
        End::Natural => "tool_calls",
    }
}

fn usage(usage: Usage) -> Value {
    json!({
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.input_tokens.saturating_add(usage.output_tokens),
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    })
}

/// The non-streaming `chat.completion` object.
fn completion(turn: &Turn, text: Option<&str>, calls: &[ScriptedCall], end: End) -> Value {
    let (content, refusal) = match end {
        End::Refusal => (None, text),
        End::Natural | End::MaxTokens => (text, None),
    };
    let mut message = json!({
        "role": "assistant",
        "content": content,
        "refusal": refusal,
        "annotations": [],
    });
    if !calls.is_empty() {
        let tool_calls: Vec<Value> = calls
            .iter()
            .zip(&turn.call_ids)
            .map(|(call, id)| {
                json!({
                    "id": id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments},
                })
            })
            .collect();
        message["tool_calls"] = Value::Array(tool_calls);
    }
    json!({
        "id": turn.response_id,
        "object": "chat.completion",
        "created": turn.created,
        "model": turn.model,
        "choices": [{
            "index": 0,
            "message": message,
            "logprobs": null,
            "finish_reason": finish_reason(calls, end),
        }],
        "usage": usage(turn.usage),
        "service_tier": "default",
        "system_fingerprint": FINGERPRINT,
    })
}

/// The streamed chunks of one message, `[DONE]` included.
fn stream_frames(turn: &Turn, text: Option<&str>, calls: &[ScriptedCall], end: End) -> Vec<String> {
    let mut frames = Vec::new();
    let refusing = end == End::Refusal;
    let first = if refusing {
        json!({"role": "assistant", "content": null, "refusal": ""})
    } else if text.is_none() {
        json!({"role": "assistant", "content": null, "refusal": null})
    } else {
        json!({"role": "assistant", "content": "", "refusal": null})
    };
    frames.push(chunk_frame(turn, first, None));
    for piece in text.map(text_pieces).unwrap_or_default() {
        let delta = if refusing {
            json!({"refusal": piece})
        } else {
            json!({"content": piece})
        };
        frames.push(chunk_frame(turn, delta, None));
    }
    for (index, (call, id)) in calls.iter().zip(&turn.call_ids).enumerate() {
        let opening = json!({"tool_calls": [{
            "index": index,
            "id": id,
            "type": "function",
            "function": {"name": call.name, "arguments": ""},
        }]});
        frames.push(chunk_frame(turn, opening, None));
        for piece in argument_pieces(&call.arguments) {
            let delta = json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]});
            frames.push(chunk_frame(turn, delta, None));
        }
    }
    frames.push(chunk_frame(
        turn,
        json!({}),
        Some(finish_reason(calls, end)),
    ));
    if turn.include_usage {
        let mut last = chunk(turn, Vec::new());
        last["usage"] = usage(turn.usage);
        frames.push(data_frame(&last));
    }
    frames.push("data: [DONE]\n\n".to_owned());
    frames
}

fn chunk_frame(turn: &Turn, delta: Value, finish_reason: Option<&str>) -> String {
    let choice = json!({
        "index": 0,
        "delta": delta,
        "logprobs": null,
        "finish_reason": finish_reason,
    });
    data_frame(&chunk(turn, vec![choice]))
}

fn chunk(turn: &Turn, choices: Vec<Value>) -> Value {
    let mut chunk = json!({
        "id": turn.response_id,
        "object": "chat.completion.chunk",
        "created": turn.created,
        "model": turn.model,
        "service_tier": "default",
        "system_fingerprint": FINGERPRINT,
        "choices": choices,
    });
    if turn.include_usage {
        // With include_usage, every chunk but the last carries `"usage": null`.
        chunk["usage"] = Value::Null;
    }
    chunk
}

fn data_frame(value: &Value) -> String {
    format!("data: {value}\n\n")
}
