//! mcpmux-agent: the AI-driven mode over mcpmux's public face. An [`Agent`] sends the
//! conversation and the hub's tools to a model ([`provider`]: OpenAI-compatible Chat
//! Completions or Anthropic Messages, streamed), runs the tool calls of each turn concurrently
//! through the hub, and feeds the results back until the model answers; the [`Transcript`] is
//! a value to keep and continue. Large catalogs go behind a `search_tools` meta-tool
//! ([`search`]). This crate uses only `mcpmux`'s public API and the library knows nothing of it.

pub mod agent;
pub mod provider;
pub mod search;
pub mod transcript;

pub use agent::{Agent, AgentEvent, AgentOptions, Budget, RunOutcome, StopReason};
pub use provider::{Provider, ProviderConfig, ProviderError, RetryPolicy};
pub use search::{DeferralOptions, Discovered, Hit, ToolIndex, ToolPlan, plan};
pub use transcript::{Block, Message, Role, Transcript, Usage};
