//! OpenAI-compatible Chat Completions (`POST {base}/chat/completions`): the public API and the
//! servers that speak its format (vLLM, llama.cpp's server, Ollama, LM Studio, OpenRouter).
//! Tool calls are `tool_calls` on the assistant message, answered by one `role: "tool"`
//! message per call right after it; streamed, a call's id and name come in its first delta and
//! its arguments in pieces, keyed by `index`. Knows nothing of the hub or of the loop.

use std::collections::BTreeMap;

use futures::future::BoxFuture;
use mcpmux::schema::ExportFormat;
use serde_json::{Map, Value, json};

use super::exchange::{Exchange, Step, Streamed, Turn, Wire};
use super::http::{self, Event, Failure};
use super::{
    EventSink, ModelRequest, ModelStop, ModelTurn, Provider, ProviderConfig, ProviderError,
    StreamEvent,
};
use crate::transcript::{Block, Message, Role, Usage};

/// The public API's base URL.
pub(super) const PUBLIC_BASE_URL: &str = "https://api.openai.com/v1";
const VARIABLE: &str = "OPENAI_BASE_URL";
/// Most tool calls read from one turn: a model asking for more is answered for these only.
pub(super) const MAX_TOOL_CALLS: usize = 128;

/// A model behind an OpenAI-compatible Chat Completions endpoint.
#[derive(Debug)]
pub struct OpenAi {
    exchange: Exchange,
    strict: bool,
}

impl OpenAi {
    /// A provider for `config`; the public API needs a key, a local server may not.
    pub fn new(config: ProviderConfig) -> Result<Self, ProviderError> {
        let base = http::base_url(&config.base_url, VARIABLE)?;
        let public = base == PUBLIC_BASE_URL;
        if public && config.api_key.is_none() {
            return Err(ProviderError::MissingKey {
                provider: "openai",
                variable: "OPENAI_API_KEY",
                hint: " (or OPENAI_BASE_URL to a local server that needs none)",
            });
        }
        Ok(OpenAi {
            strict: config.strict.unwrap_or(public),
            exchange: Exchange::new(config, format!("{base}/chat/completions"), VARIABLE),
        })
    }
}

impl Wire for OpenAi {
    const NAME: &'static str = "OpenAI chat completions";
    type Stream = ChunkStream;

    fn body(&self, config: &ProviderConfig, request: &ModelRequest<'_>) -> Value {
        let mut body = Map::new();
        body.insert("model".into(), json!(config.model));
        body.insert("messages".into(), Value::Array(messages(request)));
        if !request.tools.is_empty() {
            body.insert("tools".into(), Value::Array(request.tools.to_vec()));
        }
        if let Some(max) = config.max_output_tokens {
            body.insert("max_completion_tokens".into(), json!(max));
        }
        if config.stream {
            body.insert("stream".into(), json!(true));
            body.insert("stream_options".into(), json!({"include_usage": true}));
        }
        Value::Object(body)
    }

    fn headers(&self, config: &ProviderConfig) -> Vec<(&'static str, String)> {
        let mut headers = Vec::new();
        if let Some(key) = &config.api_key {
            headers.push(("authorization", format!("Bearer {key}")));
        }
        headers
    }

    fn read_answer(value: &Value) -> Result<ModelTurn, String> {
        read_completion(value)
    }
}

impl Provider for OpenAi {
    fn name(&self) -> &'static str {
        "openai"
    }

    fn model(&self) -> &str {
        &self.exchange.config.model
    }

    fn tool_format(&self) -> ExportFormat {
        if self.strict {
            ExportFormat::OpenAiStrict
        } else {
            ExportFormat::OpenAi
        }
    }

    fn complete<'a>(
        &'a self,
        request: ModelRequest<'a>,
        events: EventSink<'a>,
    ) -> BoxFuture<'a, Result<ModelTurn, ProviderError>> {
        Box::pin(self.exchange.complete(self, request, events))
    }
}

/// The conversation in Chat Completions messages: tool results first, one `tool` message per
/// call, in the order of the calls they answer.
fn messages(request: &ModelRequest<'_>) -> Vec<Value> {
    let mut out = Vec::new();
    if let Some(system) = request.system {
        out.push(json!({"role": "system", "content": system}));
    }
    for message in request.messages {
        match message.role {
            Role::User => user(message, &mut out),
            Role::Assistant => out.push(assistant(message)),
        }
    }
    out
}

fn user(message: &Message, out: &mut Vec<Value>) {
    for block in &message.content {
        if let Block::ToolResult { id, content, .. } = block {
            out.push(json!({"role": "tool", "tool_call_id": id, "content": content}));
        }
    }
    let text = message.text();
    if !text.is_empty() {
        out.push(json!({"role": "user", "content": text}));
    }
}

fn assistant(message: &Message) -> Value {
    let text = message.text();
    let calls: Vec<Value> = message
        .tool_calls()
        .map(|(id, name, arguments)| {
            json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments}})
        })
        .collect();
    let mut value = json!({
        "role": "assistant",
        "content": if text.is_empty() { Value::Null } else { Value::String(text) },
    });
    if !calls.is_empty() {
        value["tool_calls"] = Value::Array(calls);
    }
    value
}

fn stop_reason(finish: Option<&str>, refusal: &str) -> ModelStop {
    if !refusal.is_empty() {
        return ModelStop::Refusal(refusal.to_string());
    }
    match finish {
        Some("stop") | None => ModelStop::EndTurn,
        Some("tool_calls" | "function_call") => ModelStop::ToolUse,
        Some("length") => ModelStop::MaxTokens,
        Some("content_filter") => {
            ModelStop::Refusal("the provider's content filter stopped the answer".into())
        }
        Some(other) => ModelStop::Other(http::short(other)),
    }
}

fn usage(value: &Value) -> Usage {
    Usage {
        input_tokens: value["prompt_tokens"].as_u64().unwrap_or(0),
        output_tokens: value["completion_tokens"].as_u64().unwrap_or(0),
    }
}

/// A `chat.completion` object.
fn read_completion(value: &Value) -> Result<ModelTurn, String> {
    let choice = value["choices"]
        .get(0)
        .ok_or("no `choices[0]` in the answer")?;
    let message = choice
        .get("message")
        .filter(|m| m.is_object())
        .ok_or("no `message` in `choices[0]`")?;
    let mut content = Vec::new();
    if let Some(text) = message["content"].as_str().filter(|t| !t.is_empty()) {
        content.push(Block::Text { text: text.into() });
    }
    let calls = match &message["tool_calls"] {
        Value::Null => &[][..],
        Value::Array(calls) => calls.as_slice(),
        _ => return Err("`tool_calls` is not an array".into()),
    };
    for (n, call) in calls.iter().take(MAX_TOOL_CALLS).enumerate() {
        let name = call["function"]["name"]
            .as_str()
            .ok_or_else(|| format!("tool call {n} has no function name"))?;
        let arguments = match &call["function"]["arguments"] {
            Value::String(text) => text.clone(),
            Value::Null => String::new(),
            // Some compatible servers send the object itself.
            other => other.to_string(),
        };
        content.push(Block::ToolCall {
            id: call["id"]
                .as_str()
                .filter(|id| !id.is_empty())
                .map_or_else(|| format!("call_{n}"), str::to_string),
            name: name.to_string(),
            arguments,
        });
    }
    let refusal = message["refusal"].as_str().unwrap_or_default();
    let mut stop = stop_reason(choice["finish_reason"].as_str(), refusal);
    if stop == ModelStop::EndTurn && content.iter().any(|b| matches!(b, Block::ToolCall { .. })) {
        // Some compatible servers say `stop` after tool calls.
        stop = ModelStop::ToolUse;
    }
    Ok(ModelTurn {
        content,
        stop,
        usage: usage(&value["usage"]),
    })
}

/// A tool call being streamed in.
#[derive(Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

/// `chat.completion.chunk` events until `[DONE]`, gathered.
#[derive(Default)]
pub(super) struct ChunkStream {
    text: String,
    refusal: String,
    calls: BTreeMap<u64, PartialCall>,
    finish: Option<String>,
    usage: Usage,
    done: bool,
}

impl Streamed for ChunkStream {
    fn event(&mut self, event: &Event, turn: &Turn<'_>) -> Result<Step, Failure> {
        let data = event.data.trim();
        if data == "[DONE]" {
            self.done = true;
            return Ok(Step::Done);
        }
        if data.is_empty() {
            return Ok(Step::More);
        }
        let chunk = turn.json(data, "a chunk")?;
        if let Some(error) = chunk.get("error") {
            let message = error["message"]
                .as_str()
                .map_or_else(|| error.to_string(), str::to_string);
            return Err(Failure::transient(turn.stream_error(http::short(&message))));
        }
        if chunk["usage"].is_object() {
            self.usage = usage(&chunk["usage"]);
        }
        let Some(choice) = chunk["choices"].get(0) else {
            return Ok(Step::More);
        };
        let delta = &choice["delta"];
        if let Some(piece) = delta["content"].as_str().filter(|p| !p.is_empty()) {
            self.text.push_str(piece);
            (turn.events)(StreamEvent::TextDelta(piece.to_string()));
        }
        if let Some(piece) = delta["refusal"].as_str() {
            self.refusal.push_str(piece);
        }
        if let Some(deltas) = delta["tool_calls"].as_array() {
            for call in deltas {
                let index = call["index"].as_u64().unwrap_or(self.calls.len() as u64);
                if !self.calls.contains_key(&index) && self.calls.len() >= MAX_TOOL_CALLS {
                    continue;
                }
                let partial = self.calls.entry(index).or_default();
                if let Some(id) = call["id"].as_str().filter(|id| !id.is_empty()) {
                    partial.id = id.to_string();
                }
                if let Some(name) = call["function"]["name"].as_str() {
                    let announce = partial.name.is_empty() && !name.is_empty();
                    partial.name.push_str(name);
                    if announce {
                        (turn.events)(StreamEvent::ToolCallStarted {
                            id: partial.id.clone(),
                            name: partial.name.clone(),
                        });
                    }
                }
                if let Some(piece) = call["function"]["arguments"].as_str() {
                    partial.arguments.push_str(piece);
                }
            }
        }
        if let Some(reason) = choice["finish_reason"].as_str() {
            self.finish = Some(reason.to_string());
        }
        Ok(Step::More)
    }

    fn finish(self, turn: &Turn<'_>) -> Result<ModelTurn, Failure> {
        if !self.done && self.finish.is_none() {
            return Err(Failure::transient(turn.stream_error(
                "the stream ended before the answer did (no finish_reason, no [DONE])".into(),
            )));
        }
        let mut content = Vec::new();
        if !self.text.is_empty() {
            content.push(Block::Text { text: self.text });
        }
        for (n, (_, call)) in self.calls.into_iter().enumerate() {
            if call.name.is_empty() {
                return Err(turn.malformed(format!("tool call {n} has no name")));
            }
            content.push(Block::ToolCall {
                id: if call.id.is_empty() {
                    format!("call_{n}")
                } else {
                    call.id
                },
                name: call.name,
                arguments: call.arguments,
            });
        }
        let mut stop = stop_reason(self.finish.as_deref(), &self.refusal);
        if stop == ModelStop::EndTurn && content.iter().any(|b| matches!(b, Block::ToolCall { .. }))
        {
            stop = ModelStop::ToolUse;
        }
        Ok(ModelTurn {
            content,
            stop,
            usage: self.usage,
        })
    }
}

/// [`read_completion`] for the property tests of `provider`.
#[cfg(test)]
pub(super) fn read_completion_for_tests(value: &Value) -> Result<ModelTurn, String> {
    read_completion(value)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn tool_results_follow_their_assistant_message_one_tool_message_per_call() {
        let messages = vec![
            Message::user("hi"),
            Message {
                role: Role::Assistant,
                content: vec![
                    Block::ToolCall {
                        id: "a".into(),
                        name: "t".into(),
                        arguments: "{}".into(),
                    },
                    Block::ToolCall {
                        id: "b".into(),
                        name: "u".into(),
                        arguments: "{".into(),
                    },
                ],
            },
            Message {
                role: Role::User,
                content: vec![
                    Block::ToolResult {
                        id: "a".into(),
                        content: "1".into(),
                        is_error: false,
                        discovered: vec![],
                    },
                    Block::ToolResult {
                        id: "b".into(),
                        content: "2".into(),
                        is_error: true,
                        discovered: vec![],
                    },
                ],
            },
        ];
        let request = ModelRequest {
            system: Some("be brief"),
            messages: &messages,
            tools: &[],
        };
        let out = super::messages(&request);
        let roles: Vec<&str> = out.iter().map(|m| m["role"].as_str().unwrap()).collect();
        assert_eq!(roles, ["system", "user", "assistant", "tool", "tool"]);
        assert_eq!(out[2]["content"], Value::Null);
        assert_eq!(out[2]["tool_calls"][1]["function"]["arguments"], "{");
        assert_eq!(out[4]["tool_call_id"], "b");
    }

    #[test]
    fn a_completion_without_choices_is_malformed_not_a_panic() {
        for value in [
            json!({}),
            json!({"choices": []}),
            json!({"choices": [{"message": 3}]}),
            json!({"choices": [{"message": {"tool_calls": {}}}]}),
        ] {
            assert!(read_completion(&value).is_err(), "{value}");
        }
    }
}
