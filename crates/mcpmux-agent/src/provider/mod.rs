//! The model provider seam: one request of a conversation with tool definitions in, one model
//! turn (text, tool calls, why it stopped, tokens used) out, text and tool-call events streamed
//! as they arrive. Two wire formats stand behind it, each in its own file: OpenAI-compatible
//! Chat Completions (`openai`) and Anthropic Messages (`anthropic`), each supplying only what
//! differs (request shape, headers, reading an answer or a stream) to the one request loop in
//! `exchange`; `http` holds the plumbing under it (the client, retries on 429/5xx honouring
//! `retry-after`, bounded SSE reading).
//! Knows nothing of the hub or of the agent loop.

mod anthropic;
mod exchange;
mod http;
mod openai;

use std::fmt;
use std::time::Duration;

use futures::future::BoxFuture;
use mcpmux::schema::ExportFormat;
use serde_json::Value;

use crate::transcript::{Block, Message, Usage};

pub use anthropic::Anthropic;
pub use http::RetryPolicy;
pub use openai::OpenAi;

/// What one model request carries.
#[derive(Debug, Clone, Copy)]
pub struct ModelRequest<'a> {
    /// The system prompt.
    pub system: Option<&'a str>,
    /// The conversation so far.
    pub messages: &'a [Message],
    /// Tool definitions in the provider's format (an array; empty for none).
    pub tools: &'a [Value],
}

/// Why the model stopped writing.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ModelStop {
    /// It answered.
    EndTurn,
    /// It asks for tool calls.
    ToolUse,
    /// Its output hit the token limit of the request.
    MaxTokens,
    /// It declined, with its words (or the provider's filter said so).
    Refusal(String),
    /// Another reason the provider named.
    Other(String),
}

/// One turn of the model.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelTurn {
    /// Text and tool calls, in the order written.
    pub content: Vec<Block>,
    /// Why it stopped.
    pub stop: ModelStop,
    /// Tokens of this request.
    pub usage: Usage,
}

impl ModelTurn {
    /// Reports a turn read whole (not streamed) as the events a stream would have sent.
    fn announce(&self, events: EventSink<'_>) {
        for block in &self.content {
            match block {
                Block::Text { text } => events(StreamEvent::TextDelta(text.clone())),
                Block::ToolCall { id, name, .. } => events(StreamEvent::ToolCallStarted {
                    id: id.clone(),
                    name: name.clone(),
                }),
                Block::ToolResult { .. } => {}
            }
        }
    }
}

/// What a provider reports while a turn streams in.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum StreamEvent {
    /// More of the answer's text.
    TextDelta(String),
    /// The model started a tool call (its arguments follow).
    ToolCallStarted {
        /// The call's id.
        id: String,
        /// The tool's provider-side name.
        name: String,
    },
    /// The request failed in a way worth another try, which comes after `after`; text
    /// streamed before it is superseded by the retried turn's.
    Retrying {
        /// 1 for the first retry.
        attempt: u32,
        /// The wait before it.
        after: Duration,
        /// What failed.
        reason: String,
    },
}

/// Where a provider sends [`StreamEvent`]s.
pub type EventSink<'a> = &'a (dyn Fn(StreamEvent) + Send + Sync);

/// A model behind an HTTP API.
pub trait Provider: Send + Sync {
    /// `openai` or `anthropic`: the wire format.
    fn name(&self) -> &'static str;
    /// The model asked for.
    fn model(&self) -> &str;
    /// The tool definition format this provider takes.
    fn tool_format(&self) -> ExportFormat;
    /// Sends one request and reads the model's turn, streaming events to `events`.
    fn complete<'a>(
        &'a self,
        request: ModelRequest<'a>,
        events: EventSink<'a>,
    ) -> BoxFuture<'a, Result<ModelTurn, ProviderError>>;
}

/// A provider request that failed (after its retries).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProviderError {
    /// The `PROVIDER:MODEL` text names no provider this crate speaks.
    #[error(
        "unknown model `{0}`: write openai:MODEL (OpenAI-compatible servers too) or anthropic:MODEL"
    )]
    UnknownProvider(String),
    /// An API key is needed and the variable holding it is not set.
    #[error("{provider} needs an API key: set {variable}{hint}")]
    MissingKey {
        /// `openai` or `anthropic`.
        provider: &'static str,
        /// The variable to set.
        variable: &'static str,
        /// What else would do.
        hint: &'static str,
    },
    /// The base URL is not an http(s) URL.
    #[error("{variable} `{url}` is not an http:// or https:// URL")]
    BadBaseUrl {
        /// The variable it came from (or the option).
        variable: &'static str,
        /// What it said.
        url: String,
    },
    /// Nothing answered at the endpoint.
    #[error("cannot reach {url}: {message} (check {variable})")]
    Unreachable {
        /// The endpoint.
        url: String,
        /// What the connection said.
        message: String,
        /// The variable that sets the base URL.
        variable: &'static str,
    },
    /// The endpoint answered with an HTTP error.
    #[error("{url} answered HTTP {status}: {message}{}", retried(*attempts))]
    Status {
        /// The endpoint.
        url: String,
        /// The status code.
        status: u16,
        /// The provider's error message, cut short.
        message: String,
        /// How many requests were made.
        attempts: u32,
    },
    /// The answer could not be read as the provider's format.
    #[error("{url}: the answer is not a valid {provider} response: {message}")]
    Malformed {
        /// The endpoint.
        url: String,
        /// The wire format expected.
        provider: &'static str,
        /// What is wrong with it.
        message: String,
    },
    /// The stream broke off or reported an error.
    #[error("{url}: the stream failed: {message}{}", retried(*attempts))]
    Stream {
        /// The endpoint.
        url: String,
        /// What happened.
        message: String,
        /// How many requests were made.
        attempts: u32,
    },
    /// No byte came for too long.
    #[error("{url}: no answer for {} s", after.as_secs())]
    Timeout {
        /// The endpoint.
        url: String,
        /// The silence that was allowed.
        after: Duration,
    },
}

fn retried(attempts: u32) -> String {
    if attempts > 1 {
        format!(" (after {attempts} attempts)")
    } else {
        String::new()
    }
}

/// How to reach a model: one per provider instance.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ProviderConfig {
    /// The model name the API takes.
    pub model: String,
    /// The API's base URL (OpenAI: up to `/v1`; Anthropic: the host, `/v1/messages` added).
    pub base_url: String,
    /// The API key, when one is needed.
    pub api_key: Option<String>,
    /// Ask for a streamed answer (server-sent events); else one JSON answer.
    pub stream: bool,
    /// Most tokens the model may write per turn (Anthropic requires one; default 4096).
    pub max_output_tokens: Option<u32>,
    /// Retries of 429 and 5xx answers and broken connections.
    pub retry: RetryPolicy,
    /// How long the endpoint may stay silent (before the first byte, and between chunks).
    pub idle_timeout: Duration,
    /// OpenAI: send strict function definitions (the public API takes them; many compatible
    /// servers do not). `None`: strict only for the public API.
    pub strict: Option<bool>,
}

/// Default silence allowed from a provider: long generations stream continuously, so two
/// minutes without a byte means the endpoint is stuck.
const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(120);

impl ProviderConfig {
    /// A config for `model` at `base_url`, streaming, default retries.
    pub fn new(model: impl Into<String>, base_url: impl Into<String>) -> Self {
        ProviderConfig {
            model: model.into(),
            base_url: base_url.into(),
            api_key: None,
            stream: true,
            max_output_tokens: None,
            retry: RetryPolicy::default(),
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            strict: None,
        }
    }

    /// Builder-style: the API key.
    pub fn with_api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into());
        self
    }

    /// Builder-style: streaming on or off.
    pub fn with_stream(mut self, stream: bool) -> Self {
        self.stream = stream;
        self
    }

    /// Builder-style: the retry policy.
    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// Builder-style: the most tokens per turn.
    pub fn with_max_output_tokens(mut self, tokens: u32) -> Self {
        self.max_output_tokens = Some(tokens);
        self
    }

    /// Builder-style: how long the endpoint may stay silent.
    pub fn with_idle_timeout(mut self, timeout: Duration) -> Self {
        self.idle_timeout = timeout;
        self
    }

    /// Builder-style: strict OpenAI function definitions on or off.
    pub fn with_strict(mut self, strict: bool) -> Self {
        self.strict = Some(strict);
        self
    }
}

/// Which wire format a `PROVIDER:MODEL` text names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    /// OpenAI-compatible Chat Completions.
    OpenAi,
    /// Anthropic Messages.
    Anthropic,
}

impl fmt::Display for Wire {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Wire::OpenAi => "openai",
            Wire::Anthropic => "anthropic",
        })
    }
}

/// Splits `openai:MODEL` / `anthropic:MODEL`.
pub fn parse_model(spec: &str) -> Result<(Wire, &str), ProviderError> {
    let unknown = || ProviderError::UnknownProvider(spec.to_string());
    let (wire, model) = spec.split_once(':').ok_or_else(unknown)?;
    let wire = match wire.trim().to_ascii_lowercase().as_str() {
        "openai" => Wire::OpenAi,
        "anthropic" => Wire::Anthropic,
        _ => return Err(unknown()),
    };
    let model = model.trim();
    if model.is_empty() {
        return Err(unknown());
    }
    Ok((wire, model))
}

/// The provider a `PROVIDER:MODEL` text names, configured from `env` (`OPENAI_BASE_URL`,
/// `OPENAI_API_KEY`, `ANTHROPIC_BASE_URL`, `ANTHROPIC_API_KEY`): a key is required for the
/// public APIs and optional for any other base URL (a local server).
pub fn from_env(
    spec: &str,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Box<dyn Provider>, ProviderError> {
    let (wire, model) = parse_model(spec)?;
    let var = |name: &str| env(name).filter(|v| !v.trim().is_empty());
    Ok(match wire {
        Wire::OpenAi => {
            let mut config = ProviderConfig::new(
                model,
                var("OPENAI_BASE_URL").unwrap_or_else(|| openai::PUBLIC_BASE_URL.into()),
            );
            config.api_key = var("OPENAI_API_KEY");
            Box::new(OpenAi::new(config)?)
        }
        Wire::Anthropic => {
            let mut config = ProviderConfig::new(
                model,
                var("ANTHROPIC_BASE_URL").unwrap_or_else(|| anthropic::PUBLIC_BASE_URL.into()),
            );
            config.api_key = var("ANTHROPIC_API_KEY");
            Box::new(Anthropic::new(config)?)
        }
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn an_unknown_provider_prefix_says_which_ones_exist() {
        for spec in ["gpt-4o", "mistral:large", "openai:", ":model"] {
            let err = from_env(spec, env(&[])).err().unwrap();
            assert!(err.to_string().contains("openai:MODEL"), "{spec}: {err}");
        }
    }

    #[test]
    fn the_public_apis_need_a_key_and_name_the_variable() {
        let err = from_env("openai:gpt-4o", env(&[])).err().unwrap();
        assert_eq!(
            err.to_string(),
            "openai needs an API key: set OPENAI_API_KEY (or OPENAI_BASE_URL to a local server that needs none)"
        );
        let err = from_env("anthropic:claude-sonnet-4-5", env(&[]))
            .err()
            .unwrap();
        assert!(err.to_string().contains("ANTHROPIC_API_KEY"), "{err}");
    }

    #[test]
    fn a_local_server_needs_no_key() {
        let provider = from_env(
            "openai:llama3",
            env(&[("OPENAI_BASE_URL", "http://127.0.0.1:11434/v1")]),
        )
        .unwrap();
        assert_eq!(provider.model(), "llama3");
        assert_eq!(provider.name(), "openai");
        let provider = from_env(
            "anthropic:claude",
            env(&[("ANTHROPIC_BASE_URL", "http://127.0.0.1:9/")]),
        )
        .unwrap();
        assert_eq!(provider.name(), "anthropic");
    }

    #[test]
    fn a_base_url_that_is_not_http_is_refused_with_its_variable() {
        let err = from_env(
            "openai:m",
            env(&[("OPENAI_BASE_URL", "file:///etc/passwd")]),
        )
        .err()
        .unwrap();
        assert!(err.to_string().starts_with("OPENAI_BASE_URL"), "{err}");
    }
}

/// Whatever JSON an endpoint answers, reading it is an error or a turn, never a panic.
#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod hostile {
    use proptest::prelude::*;
    use serde_json::{Value, json};

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            "[a-z_]{0,12}".prop_map(Value::String),
            prop_oneof![
                Just("tool_use"),
                Just("text"),
                Just("tool_calls"),
                Just("function"),
                Just("message"),
                Just("end_turn"),
                Just("refusal"),
                Just("length")
            ]
            .prop_map(|s| Value::String(s.into())),
        ];
        leaf.prop_recursive(5, 64, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::vec(
                    (
                        prop_oneof![
                            Just("choices"),
                            Just("message"),
                            Just("content"),
                            Just("tool_calls"),
                            Just("function"),
                            Just("name"),
                            Just("arguments"),
                            Just("id"),
                            Just("type"),
                            Just("input"),
                            Just("usage"),
                            Just("stop_reason"),
                            Just("finish_reason"),
                            Just("refusal"),
                            Just("error"),
                            Just("text")
                        ],
                        inner
                    ),
                    0..5
                )
                .prop_map(|pairs| Value::Object(
                    pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
                )),
            ]
        })
    }

    proptest! {
        #[test]
        fn any_answer_reads_as_a_turn_or_an_error(value in json_value()) {
            let _ = super::openai::read_completion_for_tests(&value);
            let _ = super::anthropic::read_message_for_tests(&value);
        }
    }
}
