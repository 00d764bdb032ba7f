//! The tool loop: the conversation and the hub's tools (for a scope, deferred behind
//! `search_tools` when there are too many) go to the model; the tool calls of its turn run
//! concurrently through the hub and their results go back as untrusted content; repeat until
//! the model answers in text, or a limit, a refusal or the provider stops it — each stop a
//! [`StopReason`]. Knows nothing of HTTP: the provider is a [`Provider`].

mod calls;
mod trace;

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use mcpmux::schema::export;
use mcpmux::{Hub, Scope, Tool};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::provider::{ModelRequest, ModelStop, Provider, ProviderError, StreamEvent};
use crate::search::{DeferralOptions, Discovered, ToolPlan, plan};
use crate::transcript::{Block, Message, Role, Transcript, Usage};

/// The seed's bound on model turns per run.
pub const DEFAULT_MAX_ITERATIONS: usize = 10;

/// What one run may spend.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Budget {
    /// Most tokens (input + output, as the provider reports them) of this run's requests.
    pub max_tokens: Option<u64>,
    /// Most bytes of one request's messages and tool definitions.
    pub max_request_bytes: Option<usize>,
}

/// How an [`Agent`] runs.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct AgentOptions {
    /// The system prompt.
    pub system: Option<String>,
    /// Most model turns per run.
    pub max_iterations: usize,
    /// What a run may spend.
    pub budget: Budget,
    /// The stage and agent whose tools are offered (and the only ones callable).
    pub scope: Option<Scope>,
    /// When tools go behind `search_tools`; `None` always sends them all.
    pub deferral: Option<DeferralOptions>,
    /// Deadline of each tool call (default: the server's).
    pub call_timeout: Option<Duration>,
}

impl Default for AgentOptions {
    fn default() -> Self {
        AgentOptions {
            system: None,
            max_iterations: DEFAULT_MAX_ITERATIONS,
            budget: Budget::default(),
            scope: None,
            deferral: Some(DeferralOptions::default()),
            call_timeout: None,
        }
    }
}

impl AgentOptions {
    /// Builder-style: the system prompt.
    pub fn with_system(mut self, system: impl Into<String>) -> Self {
        self.system = Some(system.into());
        self
    }

    /// Builder-style: most model turns per run (at least 1).
    pub fn with_max_iterations(mut self, max: usize) -> Self {
        self.max_iterations = max.max(1);
        self
    }

    /// Builder-style: most tokens a run may spend.
    pub fn with_max_tokens(mut self, tokens: u64) -> Self {
        self.budget.max_tokens = Some(tokens);
        self
    }

    /// Builder-style: most bytes of one request.
    pub fn with_max_request_bytes(mut self, bytes: usize) -> Self {
        self.budget.max_request_bytes = Some(bytes);
        self
    }

    /// Builder-style: the scope whose tools are offered.
    pub fn with_scope(mut self, scope: Scope) -> Self {
        self.scope = Some(scope);
        self
    }

    /// Builder-style: when to defer tools (`None`: never).
    pub fn with_deferral(mut self, deferral: Option<DeferralOptions>) -> Self {
        self.deferral = deferral;
        self
    }

    /// Builder-style: each tool call's deadline.
    pub fn with_call_timeout(mut self, timeout: Duration) -> Self {
        self.call_timeout = Some(timeout);
        self
    }
}

/// What a run reports while it goes.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum AgentEvent {
    /// More of the model's text.
    Text(String),
    /// The model started writing a tool call (provider-side name).
    ToolCallStarted {
        /// The call's id.
        id: String,
        /// The name the model used.
        name: String,
    },
    /// A tool call is about to run.
    ToolCall {
        /// The call's id.
        id: String,
        /// The exposed tool name (or `search_tools`).
        tool: String,
        /// The arguments as the model wrote them.
        arguments: String,
    },
    /// A tool call ended.
    ToolResult {
        /// The call's id.
        id: String,
        /// The exposed tool name, or the unknown name the model used.
        tool: String,
        /// It failed, was refused or was invalid.
        is_error: bool,
        /// Its result or error as plain text (for display, not for the model).
        text: String,
    },
    /// The provider request is tried again.
    Retrying {
        /// 1 for the first retry.
        attempt: u32,
        /// The wait before it.
        after: Duration,
        /// What failed.
        reason: String,
    },
    /// A model turn ended.
    Turn {
        /// 1 for the first turn of the run.
        iteration: usize,
        /// Its tokens.
        usage: Usage,
    },
}

/// Why a run stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StopReason {
    /// The model answered in text.
    Final,
    /// The model still asked for tools after the last allowed turn; its calls were run and
    /// their results are in the transcript, so a later run continues from there.
    IterationLimit {
        /// The limit.
        max: usize,
    },
    /// The run spent its budget before the next request.
    Budget {
        /// Which limit, and what was spent.
        message: String,
    },
    /// The model declined.
    Refusal {
        /// Its words.
        message: String,
    },
    /// The model's answer hit its output-token limit.
    MaxTokens,
    /// The provider failed after its retries.
    Provider(ProviderError),
    /// The run was cancelled.
    Cancelled,
}

impl std::fmt::Display for StopReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StopReason::Final => f.write_str("final answer"),
            StopReason::IterationLimit { max } => {
                write!(
                    f,
                    "iteration limit: the model still wanted tools after {max} turns"
                )
            }
            StopReason::Budget { message } => write!(f, "budget spent: {message}"),
            StopReason::Refusal { message } => write!(f, "the model refused: {message}"),
            StopReason::MaxTokens => f.write_str("the answer was cut at the output-token limit"),
            StopReason::Provider(e) => write!(f, "provider error: {e}"),
            StopReason::Cancelled => f.write_str("cancelled"),
        }
    }
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunOutcome {
    /// Why it stopped.
    pub stop: StopReason,
    /// The model's last text (the answer, when [`StopReason::Final`]).
    pub answer: String,
    /// Tokens of this run's requests.
    pub usage: Usage,
    /// Model turns taken.
    pub iterations: usize,
    /// Tool calls made.
    pub tool_calls: usize,
}

impl RunOutcome {
    /// Whether the model answered.
    pub fn is_final(&self) -> bool {
        self.stop == StopReason::Final
    }
}

/// A model with the hub's tools.
#[derive(Clone)]
pub struct Agent {
    hub: Hub,
    provider: Arc<dyn Provider>,
    options: AgentOptions,
}

/// The tools offered, and the plan made of them (kept while the tool set is the same).
struct Offer {
    names: Vec<String>,
    plan: ToolPlan,
}

impl Agent {
    /// An agent over `hub` talking to `provider`.
    pub fn new(hub: Hub, provider: Arc<dyn Provider>, options: AgentOptions) -> Self {
        Agent {
            hub,
            provider,
            options,
        }
    }

    /// Adds `prompt` to `transcript` and runs until a stop.
    pub async fn run(&self, transcript: &mut Transcript, prompt: &str) -> RunOutcome {
        self.run_with(transcript, Some(prompt), &|_| {}, &CancellationToken::new())
            .await
    }

    /// Adds `prompt` (if any: `None` continues a transcript that ends with tool results) and
    /// runs until a stop, reporting on `events`; `cancel` stops it and its tool calls. One
    /// trace: a span for the run, each turn, each model request and each tool call.
    pub async fn run_with(
        &self,
        transcript: &mut Transcript,
        prompt: Option<&str>,
        events: &(dyn Fn(AgentEvent) + Send + Sync),
        cancel: &CancellationToken,
    ) -> RunOutcome {
        let span = trace::run();
        let outcome = self
            .run_turns(transcript, prompt, events, cancel)
            .instrument(span.clone())
            .await;
        trace::used(&span, &outcome.usage);
        outcome
    }

    async fn run_turns(
        &self,
        transcript: &mut Transcript,
        prompt: Option<&str>,
        events: &(dyn Fn(AgentEvent) + Send + Sync),
        cancel: &CancellationToken,
    ) -> RunOutcome {
        if let Some(prompt) = prompt {
            push_user(
                transcript,
                vec![Block::Text {
                    text: prompt.to_string(),
                }],
            );
        }
        let mut outcome = RunOutcome {
            stop: StopReason::Final,
            answer: String::new(),
            usage: Usage::default(),
            iterations: 0,
            tool_calls: 0,
        };
        let mut discovered = Discovered::default();
        for name in transcript.discovered() {
            discovered.insert(name);
        }
        let mut offer: Option<Offer> = None;
        let sink = |event: StreamEvent| {
            events(match event {
                StreamEvent::TextDelta(text) => AgentEvent::Text(text),
                StreamEvent::ToolCallStarted { id, name } => {
                    AgentEvent::ToolCallStarted { id, name }
                }
                StreamEvent::Retrying {
                    attempt,
                    after,
                    reason,
                } => AgentEvent::Retrying {
                    attempt,
                    after,
                    reason,
                },
            })
        };
        loop {
            if cancel.is_cancelled() {
                outcome.stop = StopReason::Cancelled;
                return outcome;
            }
            if outcome.iterations >= self.options.max_iterations {
                outcome.stop = StopReason::IterationLimit {
                    max: self.options.max_iterations,
                };
                return outcome;
            }
            if let Some(message) = self.spent(&outcome.usage) {
                outcome.stop = StopReason::Budget { message };
                return outcome;
            }
            let tools = self.tools();
            let names: Vec<String> = tools.iter().map(|t| t.name.clone()).collect();
            if offer.as_ref().is_none_or(|o| o.names != names) {
                offer = Some(Offer {
                    plan: self.plan(&tools),
                    names,
                });
            }
            let Some(offer) = offer.as_ref() else {
                continue;
            };
            let exported = export(
                &offer.plan.request_tools(&discovered),
                self.provider.tool_format(),
            );
            let definitions: Vec<serde_json::Value> = exported
                .tools
                .iter()
                .map(|t| t.definition.clone())
                .collect();
            let request = ModelRequest {
                system: self.options.system.as_deref(),
                messages: &transcript.messages,
                tools: &definitions,
            };
            if let Some(message) = self.too_large(&request) {
                outcome.stop = StopReason::Budget { message };
                return outcome;
            }
            let turn_span = trace::turn(outcome.iterations + 1);
            let chat = trace::chat(&turn_span, self.provider.name(), self.provider.model());
            let turn = tokio::select! {
                turn = self.provider.complete(request, &sink).instrument(chat.clone()) => turn,
                () = cancel.cancelled() => {
                    outcome.stop = StopReason::Cancelled;
                    return outcome;
                }
            };
            let mut turn = match turn {
                Ok(turn) => turn,
                Err(error) => {
                    outcome.stop = StopReason::Provider(error);
                    return outcome;
                }
            };
            trace::used(&chat, &turn.usage);
            outcome.iterations += 1;
            outcome.usage.add(turn.usage);
            transcript.usage.add(turn.usage);
            events(AgentEvent::Turn {
                iteration: outcome.iterations,
                usage: turn.usage,
            });
            unique_ids(&mut turn.content);
            let message = Message {
                role: Role::Assistant,
                content: turn.content,
            };
            outcome.answer = message.text();
            let calls: Vec<calls::Call> = message
                .tool_calls()
                .map(|(id, name, arguments)| calls::Call {
                    id: id.to_string(),
                    name: name.to_string(),
                    arguments: arguments.to_string(),
                })
                .collect();
            transcript.messages.push(message);
            if calls.is_empty() {
                outcome.stop = match turn.stop {
                    ModelStop::Refusal(message) => StopReason::Refusal { message },
                    ModelStop::MaxTokens => StopReason::MaxTokens,
                    _ => StopReason::Final,
                };
                return outcome;
            }
            outcome.tool_calls += calls.len();
            let turn_calls = calls::Turn {
                hub: &self.hub,
                options: &self.options,
                export: &exported,
                plan: &offer.plan,
                cancel,
                events,
            };
            let results = calls::run(&turn_calls, calls, &mut discovered)
                .instrument(turn_span)
                .await;
            push_user(transcript, results);
        }
    }

    /// The tools of the agent's scope, as the hub lists them now.
    fn tools(&self) -> Vec<Tool> {
        match &self.options.scope {
            Some(scope) => self.hub.tools_for(scope),
            None => self.hub.tools(),
        }
    }

    fn plan(&self, tools: &[Tool]) -> ToolPlan {
        let options = self
            .options
            .deferral
            .clone()
            .unwrap_or_else(|| DeferralOptions::default().without_token_limit());
        plan(tools, &options, self.provider.tool_format())
    }

    fn spent(&self, usage: &Usage) -> Option<String> {
        let max = self.options.budget.max_tokens?;
        (usage.total() >= max).then(|| {
            format!(
                "{} of {max} tokens used ({} in, {} out)",
                usage.total(),
                usage.input_tokens,
                usage.output_tokens
            )
        })
    }

    fn too_large(&self, request: &ModelRequest<'_>) -> Option<String> {
        let max = self.options.budget.max_request_bytes?;
        let size = serde_json::to_vec(request.messages).map_or(0, |v| v.len())
            + serde_json::to_vec(request.tools).map_or(0, |v| v.len());
        (size > max).then(|| format!("the next request would be {size} bytes, over {max}"))
    }
}

/// Appends `blocks` as the user's: to the last message when it is the user's (the APIs that
/// need alternating roles get one user message), else as a new one.
fn push_user(transcript: &mut Transcript, blocks: Vec<Block>) {
    if blocks.is_empty() {
        return;
    }
    match transcript.messages.last_mut() {
        Some(last) if last.role == Role::User => last.content.extend(blocks),
        _ => transcript.messages.push(Message {
            role: Role::User,
            content: blocks,
        }),
    }
}

/// Gives a repeated call id a fresh one: each call must be answered exactly once.
fn unique_ids(content: &mut [Block]) {
    let mut seen = HashSet::new();
    for (n, block) in content.iter_mut().enumerate() {
        if let Block::ToolCall { id, .. } = block
            && !seen.insert(id.clone())
        {
            *id = format!("{id}_{n}");
            seen.insert(id.clone());
        }
    }
}
