//! The script: what each [`Step`] answers, independent of the wire format it is rendered in
//! (`openai.rs`, `anthropic.rs`), plus the per-request facts a rendering needs ([`Turn`]).

use std::{sync::Arc, time::Duration};

use serde_json::Value;

/// Token counts reported when a step does not set its own: small, nonzero, easy to spot.
pub(crate) const DEFAULT_USAGE: Usage = Usage {
    input_tokens: 21,
    output_tokens: 8,
};

/// A test-specific check on a request body.
pub(crate) type Check = Arc<dyn Fn(&Value) -> Result<(), String> + Send + Sync>;

/// One scripted answer of the model, used for exactly one request.
#[derive(Clone)]
pub struct Step {
    pub(crate) reply: Reply,
    pub(crate) usage: Usage,
    pub(crate) checks: Vec<Check>,
    pub(crate) delay: Option<Duration>,
}

/// Token counts of one answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
}

/// What the model answers.
#[derive(Clone, Debug)]
pub(crate) enum Reply {
    /// A message: optional text (or refusal text), then tool calls, ended as `end` says.
    Message {
        text: Option<String>,
        calls: Vec<ScriptedCall>,
        end: End,
    },
    /// An HTTP error with the provider's error body.
    Status { code: u16, retry_after: Option<u64> },
    /// Streaming: some text, then a failure (Anthropic: an `error` event; OpenAI: a cut).
    StreamError { after_text: String },
}

/// How a message ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum End {
    /// `stop`/`end_turn`, or `tool_calls`/`tool_use` when there are calls.
    Natural,
    /// The output was cut: `length`/`max_tokens`.
    MaxTokens,
    /// The model refused: OpenAI `refusal` with `stop`, Anthropic `stop_reason: "refusal"`.
    Refusal,
}

/// One scripted tool call: the provider-side name and the arguments as raw JSON text.
#[derive(Clone, Debug)]
pub(crate) struct ScriptedCall {
    pub name: String,
    pub arguments: String,
}

/// The facts of one request a rendering needs beside the step.
#[derive(Clone, Debug)]
pub(crate) struct Turn {
    /// The request's `model`, echoed back.
    pub model: String,
    /// `"stream": true` in the request.
    pub stream: bool,
    /// OpenAI `stream_options.include_usage`.
    pub include_usage: bool,
    /// The response id (`chatcmpl-…`, `msg_…`).
    pub response_id: String,
    /// One id per scripted call (`call_…`, `toolu_…`).
    pub call_ids: Vec<String>,
    /// Unix seconds.
    pub created: u64,
    /// Token counts to report.
    pub usage: Usage,
}

impl Step {
    fn new(reply: Reply) -> Step {
        Step {
            reply,
            usage: DEFAULT_USAGE,
            checks: Vec::new(),
            delay: None,
        }
    }

    /// A final answer: text and no tool calls.
    pub fn text(text: impl Into<String>) -> Step {
        Step::new(Reply::Message {
            text: Some(text.into()),
            calls: Vec::new(),
            end: End::Natural,
        })
    }

    /// Parallel tool calls: (provider-side tool name, arguments as raw JSON text — may be
    /// malformed on purpose).
    pub fn tool_calls<I, N, A>(calls: I) -> Step
    where
        I: IntoIterator<Item = (N, A)>,
        N: Into<String>,
        A: Into<String>,
    {
        Step::new(Reply::Message {
            text: None,
            calls: scripted_calls(calls),
            end: End::Natural,
        })
    }

    /// A text block, then tool calls.
    pub fn text_and_tool_calls<I, N, A>(text: impl Into<String>, calls: I) -> Step
    where
        I: IntoIterator<Item = (N, A)>,
        N: Into<String>,
        A: Into<String>,
    {
        Step::new(Reply::Message {
            text: Some(text.into()),
            calls: scripted_calls(calls),
            end: End::Natural,
        })
    }

    /// An HTTP error with the provider's documented error body (429 `rate_limit_error`, 529
    /// `overloaded_error`, …) and a `retry-after` header (seconds) when `Some`.
    pub fn status(code: u16, retry_after: Option<u64>) -> Step {
        Step::new(Reply::Status { code, retry_after })
    }

    /// A refusal: OpenAI `message.refusal`/`delta.refusal` with `finish_reason: "stop"`;
    /// Anthropic a text block with `stop_reason: "refusal"`.
    pub fn refusal(text: impl Into<String>) -> Step {
        Step::new(Reply::Message {
            text: Some(text.into()),
            calls: Vec::new(),
            end: End::Refusal,
        })
    }

    /// Output cut by the token limit: `finish_reason: "length"` / `stop_reason: "max_tokens"`.
    pub fn max_tokens(text: impl Into<String>) -> Step {
        Step::new(Reply::Message {
            text: Some(text.into()),
            calls: Vec::new(),
            end: End::MaxTokens,
        })
    }

    /// Streaming: sends `after_text`, then fails — Anthropic with an `error` event
    /// (`overloaded_error`), OpenAI by cutting the connection (no `[DONE]`). A non-streaming
    /// request gets the provider's overloaded error instead (OpenAI 503, Anthropic 529).
    pub fn stream_error(after_text: impl Into<String>) -> Step {
        Step::new(Reply::StreamError {
            after_text: after_text.into(),
        })
    }

    /// The token counts reported with this answer (default: 21 in, 8 out).
    pub fn with_usage(mut self, input_tokens: u64, output_tokens: u64) -> Step {
        self.usage = Usage {
            input_tokens,
            output_tokens,
        };
        self
    }

    /// An extra check on the request body this step answers; a failure is recorded as a
    /// violation and the reply is still sent. May be called more than once.
    pub fn expect(
        mut self,
        check: impl Fn(&Value) -> Result<(), String> + Send + Sync + 'static,
    ) -> Step {
        self.checks.push(Arc::new(check));
        self
    }

    /// Waits this long before answering (before the status line, so a client timeout fires).
    pub fn with_delay(mut self, delay: Duration) -> Step {
        self.delay = Some(delay);
        self
    }

    /// How many tool calls this step makes (the number of ids it will need).
    pub(crate) fn call_count(&self) -> usize {
        match &self.reply {
            Reply::Message { calls, .. } => calls.len(),
            Reply::Status { .. } | Reply::StreamError { .. } => 0,
        }
    }
}

impl std::fmt::Debug for Step {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Step")
            .field("reply", &self.reply)
            .field("usage", &self.usage)
            .field("checks", &self.checks.len())
            .field("delay", &self.delay)
            .finish()
    }
}

fn scripted_calls<I, N, A>(calls: I) -> Vec<ScriptedCall>
where
    I: IntoIterator<Item = (N, A)>,
    N: Into<String>,
    A: Into<String>,
{
    calls
        .into_iter()
        .map(|(name, arguments)| ScriptedCall {
            name: name.into(),
            arguments: arguments.into(),
        })
        .collect()
}
