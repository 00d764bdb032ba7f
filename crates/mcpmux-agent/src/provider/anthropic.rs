//! Anthropic Messages (`POST {base}/v1/messages`, `anthropic-version: 2023-06-01`): the system
//! prompt beside the messages, `tool_use` blocks in the assistant's content answered by
//! `tool_result` blocks first in the next user message. Streamed, a turn arrives as
//! `message_start`, `content_block_start` / `_delta` (`text_delta`, `input_json_delta`) /
//! `_stop` per block, `message_delta` (stop reason, output tokens) and `message_stop`; an
//! `error` event (an overload) ends it. Knows nothing of the hub or of the loop.

use std::collections::BTreeMap;

use futures::future::BoxFuture;
use mcpmux::schema::ExportFormat;
use serde_json::{Map, Value, json};

use super::exchange::{Exchange, Step, Streamed, Turn, Wire};
use super::http::{self, Event, Failure};
use super::openai::MAX_TOOL_CALLS;
use super::{
    EventSink, ModelRequest, ModelStop, ModelTurn, Provider, ProviderConfig, ProviderError,
    StreamEvent,
};
use crate::transcript::{Block, Message, Role, Usage};

/// The public API's base URL.
pub(super) const PUBLIC_BASE_URL: &str = "https://api.anthropic.com";
const VARIABLE: &str = "ANTHROPIC_BASE_URL";
/// The API version this format is.
const VERSION: &str = "2023-06-01";
/// `max_tokens` is required by the API; this is enough for a tool-using turn.
const DEFAULT_MAX_TOKENS: u32 = 4096;

/// A model behind the Anthropic Messages API (or a server speaking it).
#[derive(Debug)]
pub struct Anthropic {
    exchange: Exchange,
}

impl Anthropic {
    /// A provider for `config`; the public API needs a key.
    pub fn new(config: ProviderConfig) -> Result<Self, ProviderError> {
        let base = http::base_url(&config.base_url, VARIABLE)?;
        if base == PUBLIC_BASE_URL && config.api_key.is_none() {
            return Err(ProviderError::MissingKey {
                provider: "anthropic",
                variable: "ANTHROPIC_API_KEY",
                hint: "",
            });
        }
        Ok(Anthropic {
            exchange: Exchange::new(config, format!("{base}/v1/messages"), VARIABLE),
        })
    }
}

impl Wire for Anthropic {
    const NAME: &'static str = "Anthropic messages";
    type Stream = MessageStream;

    fn body(&self, config: &ProviderConfig, request: &ModelRequest<'_>) -> Value {
        let mut body = Map::new();
        body.insert("model".into(), json!(config.model));
        body.insert(
            "max_tokens".into(),
            json!(config.max_output_tokens.unwrap_or(DEFAULT_MAX_TOKENS)),
        );
        if let Some(system) = request.system.filter(|s| !s.is_empty()) {
            body.insert("system".into(), json!(system));
        }
        body.insert(
            "messages".into(),
            Value::Array(request.messages.iter().filter_map(message).collect()),
        );
        if !request.tools.is_empty() {
            body.insert("tools".into(), Value::Array(request.tools.to_vec()));
        }
        if config.stream {
            body.insert("stream".into(), json!(true));
        }
        Value::Object(body)
    }

    fn headers(&self, config: &ProviderConfig) -> Vec<(&'static str, String)> {
        let mut headers = vec![("anthropic-version", VERSION.to_string())];
        if let Some(key) = &config.api_key {
            headers.push(("x-api-key", key.clone()));
        }
        headers
    }

    fn read_answer(value: &Value) -> Result<ModelTurn, String> {
        read_message(value)
    }
}

impl Provider for Anthropic {
    fn name(&self) -> &'static str {
        "anthropic"
    }

    fn model(&self) -> &str {
        &self.exchange.config.model
    }

    fn tool_format(&self) -> ExportFormat {
        ExportFormat::Anthropic
    }

    fn complete<'a>(
        &'a self,
        request: ModelRequest<'a>,
        events: EventSink<'a>,
    ) -> BoxFuture<'a, Result<ModelTurn, ProviderError>> {
        Box::pin(self.exchange.complete(self, request, events))
    }
}

/// One message in the Messages format: tool results first; no empty text block (the API
/// refuses them); a message left with nothing is dropped.
fn message(message: &Message) -> Option<Value> {
    let mut content = Vec::new();
    for block in &message.content {
        if let Block::ToolResult {
            id,
            content: text,
            is_error,
            ..
        } = block
        {
            let mut result = json!({"type": "tool_result", "tool_use_id": id, "content": text});
            if *is_error {
                result["is_error"] = json!(true);
            }
            content.push(result);
        }
    }
    for block in &message.content {
        match block {
            Block::Text { text } if !text.is_empty() => {
                content.push(json!({"type": "text", "text": text}));
            }
            Block::ToolCall {
                id,
                name,
                arguments,
            } => {
                // The API takes an object; arguments the model got wrong are sent as `{}` (the
                // error result that answered them says what was wrong).
                let input = serde_json::from_str::<Value>(arguments)
                    .ok()
                    .filter(Value::is_object)
                    .unwrap_or_else(|| json!({}));
                content.push(json!({"type": "tool_use", "id": id, "name": name, "input": input}));
            }
            _ => {}
        }
    }
    if content.is_empty() {
        return None;
    }
    let role = match message.role {
        Role::User => "user",
        Role::Assistant => "assistant",
    };
    Some(json!({"role": role, "content": content}))
}

fn stop_reason(reason: Option<&str>, text: &str) -> ModelStop {
    match reason {
        Some("end_turn" | "stop_sequence" | "pause_turn") | None => ModelStop::EndTurn,
        Some("tool_use") => ModelStop::ToolUse,
        Some("max_tokens" | "model_context_window_exceeded") => ModelStop::MaxTokens,
        Some("refusal") => ModelStop::Refusal(if text.is_empty() {
            "the model declined to answer".into()
        } else {
            text.to_string()
        }),
        Some(other) => ModelStop::Other(http::short(other)),
    }
}

fn usage(value: &Value) -> Usage {
    Usage {
        input_tokens: value["input_tokens"].as_u64().unwrap_or(0)
            + value["cache_creation_input_tokens"].as_u64().unwrap_or(0)
            + value["cache_read_input_tokens"].as_u64().unwrap_or(0),
        output_tokens: value["output_tokens"].as_u64().unwrap_or(0),
    }
}

/// A `message` object.
fn read_message(value: &Value) -> Result<ModelTurn, String> {
    if value["type"] == "error" {
        return Err(format!(
            "an error: {}",
            http::short(value["error"]["message"].as_str().unwrap_or_default())
        ));
    }
    let blocks = value["content"]
        .as_array()
        .ok_or("no `content` array in the answer")?;
    let mut content = Vec::new();
    let mut calls = 0;
    for block in blocks {
        match block["type"].as_str() {
            Some("text") => {
                let text = block["text"].as_str().unwrap_or_default();
                if !text.is_empty() {
                    content.push(Block::Text { text: text.into() });
                }
            }
            Some("tool_use") if calls < MAX_TOOL_CALLS => {
                calls += 1;
                content.push(Block::ToolCall {
                    id: block["id"]
                        .as_str()
                        .ok_or("a tool_use block has no id")?
                        .into(),
                    name: block["name"]
                        .as_str()
                        .ok_or("a tool_use block has no name")?
                        .into(),
                    arguments: block
                        .get("input")
                        .map_or_else(String::new, Value::to_string),
                });
            }
            // Thinking and server-tool blocks are not ours to answer.
            _ => {}
        }
    }
    let text: String = content
        .iter()
        .filter_map(|b| match b {
            Block::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    Ok(ModelTurn {
        stop: stop_reason(value["stop_reason"].as_str(), &text),
        content,
        usage: usage(&value["usage"]),
    })
}

/// A content block being streamed in.
enum Partial {
    Text(String),
    ToolUse {
        id: String,
        name: String,
        input: String,
        /// The start event's `input`, used when no delta comes.
        start: Value,
    },
    Other,
}

/// The events of one streamed message, gathered.
#[derive(Default)]
pub(super) struct MessageStream {
    blocks: BTreeMap<u64, Partial>,
    usage: Usage,
    reason: Option<String>,
    stopped: bool,
    calls: usize,
}

impl Streamed for MessageStream {
    fn event(&mut self, event: &Event, turn: &Turn<'_>) -> Result<Step, Failure> {
        if event.data.trim().is_empty() {
            return Ok(Step::More);
        }
        let data = turn.json(&event.data, "an event")?;
        let kind = data["type"].as_str().unwrap_or(event.event.as_str());
        match kind {
            "message_start" => {
                self.usage = usage(&data["message"]["usage"]);
            }
            "content_block_start" => {
                let index = data["index"].as_u64().unwrap_or(self.blocks.len() as u64);
                let block = &data["content_block"];
                let partial = match block["type"].as_str() {
                    Some("text") => Partial::Text(block["text"].as_str().unwrap_or("").into()),
                    Some("tool_use") if self.calls < MAX_TOOL_CALLS => {
                        self.calls += 1;
                        let id = block["id"].as_str().unwrap_or_default().to_string();
                        let name = block["name"].as_str().unwrap_or_default().to_string();
                        (turn.events)(StreamEvent::ToolCallStarted {
                            id: id.clone(),
                            name: name.clone(),
                        });
                        Partial::ToolUse {
                            id,
                            name,
                            input: String::new(),
                            start: block["input"].clone(),
                        }
                    }
                    _ => Partial::Other,
                };
                self.blocks.insert(index, partial);
            }
            "content_block_delta" => {
                let index = data["index"].as_u64().unwrap_or(0);
                let delta = &data["delta"];
                match (self.blocks.get_mut(&index), delta["type"].as_str()) {
                    (Some(Partial::Text(text)), Some("text_delta")) => {
                        let piece = delta["text"].as_str().unwrap_or_default();
                        text.push_str(piece);
                        if !piece.is_empty() {
                            (turn.events)(StreamEvent::TextDelta(piece.to_string()));
                        }
                    }
                    (Some(Partial::ToolUse { input, .. }), Some("input_json_delta")) => {
                        input.push_str(delta["partial_json"].as_str().unwrap_or_default());
                    }
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(r) = data["delta"]["stop_reason"].as_str() {
                    self.reason = Some(r.to_string());
                }
                if let Some(out) = data["usage"]["output_tokens"].as_u64() {
                    self.usage.output_tokens = out;
                }
                if let Some(input) = data["usage"]["input_tokens"].as_u64() {
                    self.usage.input_tokens = self.usage.input_tokens.max(input);
                }
            }
            "message_stop" => {
                self.stopped = true;
                return Ok(Step::Done);
            }
            "error" => {
                let kind = data["error"]["type"].as_str().unwrap_or("error");
                let message = data["error"]["message"].as_str().unwrap_or_default();
                let error = turn.stream_error(http::short(&format!("{kind}: {message}")));
                let retryable =
                    matches!(kind, "overloaded_error" | "api_error" | "rate_limit_error");
                return Err(if retryable {
                    Failure::transient(error)
                } else {
                    Failure::fatal(error)
                });
            }
            // `ping`, `content_block_stop` and events added later.
            _ => {}
        }
        Ok(Step::More)
    }

    fn finish(self, turn: &Turn<'_>) -> Result<ModelTurn, Failure> {
        if !self.stopped {
            return Err(Failure::transient(
                turn.stream_error("the stream ended before `message_stop`".into()),
            ));
        }
        let mut content = Vec::new();
        let mut all_text = String::new();
        for partial in self.blocks.into_values() {
            match partial {
                Partial::Text(text) if !text.is_empty() => {
                    all_text.push_str(&text);
                    content.push(Block::Text { text });
                }
                Partial::ToolUse {
                    id,
                    name,
                    input,
                    start,
                } => {
                    if id.is_empty() || name.is_empty() {
                        return Err(turn.malformed("a tool_use block has no id or name".into()));
                    }
                    let arguments = if input.is_empty() {
                        if start.is_object() {
                            start.to_string()
                        } else {
                            "{}".into()
                        }
                    } else {
                        input
                    };
                    content.push(Block::ToolCall {
                        id,
                        name,
                        arguments,
                    });
                }
                _ => {}
            }
        }
        Ok(ModelTurn {
            stop: stop_reason(self.reason.as_deref(), &all_text),
            content,
            usage: self.usage,
        })
    }
}

/// [`read_message`] for the property tests of `provider`.
#[cfg(test)]
pub(super) fn read_message_for_tests(value: &Value) -> Result<ModelTurn, String> {
    read_message(value)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn tool_results_come_first_and_malformed_arguments_replay_as_an_empty_object() {
        let assistant = Message {
            role: Role::Assistant,
            content: vec![
                Block::Text {
                    text: String::new(),
                },
                Block::ToolCall {
                    id: "t1".into(),
                    name: "x".into(),
                    arguments: "{\"a\":".into(),
                },
            ],
        };
        let value = message(&assistant).unwrap();
        assert_eq!(value["content"].as_array().unwrap().len(), 1);
        assert_eq!(value["content"][0]["input"], json!({}));
        let user = Message {
            role: Role::User,
            content: vec![
                Block::Text {
                    text: "and then?".into(),
                },
                Block::ToolResult {
                    id: "t1".into(),
                    content: "bad".into(),
                    is_error: true,
                    discovered: vec![],
                },
            ],
        };
        let value = message(&user).unwrap();
        assert_eq!(value["content"][0]["type"], "tool_result");
        assert_eq!(value["content"][0]["is_error"], true);
        assert_eq!(value["content"][1]["type"], "text");
    }

    #[test]
    fn a_message_without_content_is_malformed_not_a_panic() {
        for value in [
            json!({}),
            json!({"content": {}}),
            json!({"content": [{"type": "tool_use"}]}),
        ] {
            assert!(read_message(&value).is_err(), "{value}");
        }
    }
}
