//! mcpmux-agent: the AI-driven mode over mcpmux's public face. An [`Agent`] sends the
//! conversation and the hub's tools to a model ([`provider`]: OpenAI-compatible Chat
//! Completions or Anthropic Messages, streamed), runs the tool calls of each turn concurrently
//! through the hub, and feeds the results back until the model answers; the [`Transcript`] is
//! a value to keep and continue. Large catalogs go behind a `search_tools` meta-tool
//! ([`search`]). This crate uses only `mcpmux`'s public API and the library knows nothing of it.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use mcpmux::{Hub, HubOptions, LoadOptions};
//! use mcpmux_agent::{Agent, AgentOptions, Transcript, provider};
//!
//! let hub = Hub::from_config(mcpmux::config::load(&LoadOptions::from_env(vec![])), HubOptions::default())?;
//! let model = provider::from_env("anthropic:claude-sonnet-4-5", |name| std::env::var(name).ok())?;
//! let agent = Agent::new(hub.clone(), Arc::from(model), AgentOptions::default().with_system("Be brief."));
//! let mut transcript = Transcript::new();          // keep it to continue the conversation
//! let outcome = agent.run(&mut transcript, "What is in ~/notes/todo.md?").await;
//! println!("{} ({})", outcome.answer, outcome.stop);
//! transcript.write_jsonl(std::fs::File::create("chat.jsonl")?)?;
//! hub.shutdown().await;
//! # Ok(()) }
//! ```

pub mod agent;
pub mod provider;
pub mod search;
pub mod transcript;

pub use agent::{Agent, AgentEvent, AgentOptions, Budget, RunOutcome, StopReason};
pub use provider::{Provider, ProviderConfig, ProviderError, RetryPolicy};
pub use search::{DeferralOptions, Discovered, Hit, ToolIndex, ToolPlan, plan};
pub use transcript::{Block, Message, Role, Transcript, Usage};

/// The README's embedding example is this crate's documentation example, line for line.
#[cfg(test)]
#[allow(clippy::expect_used)]
mod readme {
    #[test]
    fn the_readme_shows_the_example_this_crate_compiles() {
        let readme = include_str!("../../../README.md");
        let from = readme
            .find("Embedding it in a harness")
            .expect("the README's agent section");
        let block = readme[from..]
            .split("```rust,ignore\n")
            .nth(1)
            .and_then(|rest| rest.split("```").next())
            .unwrap_or_default();
        let lib = include_str!("lib.rs");
        let doc: String = lib
            .lines()
            .filter_map(|l| l.strip_prefix("//!"))
            .map(|l| l.strip_prefix(' ').unwrap_or(l))
            .skip_while(|l| !l.starts_with("```no_run"))
            .skip(1)
            .take_while(|l| !l.starts_with("```"))
            .filter(|l| !l.starts_with("# "))
            .map(|l| format!("{l}\n"))
            .collect();
        assert_eq!(block, doc);
    }
}
