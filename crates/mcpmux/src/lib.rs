//! mcpmux: many MCP servers — local processes, remote HTTP endpoints, in-process servers — as
//! one namespaced tool set that a harness can call concurrently, and that keeps working when
//! servers crash, hang or misbehave.
//!
//! ```no_run
//! # async fn run() -> Result<(), mcpmux::Error> {
//! use mcpmux::{Hub, HubOptions, ServerSpec};
//! let hub = Hub::start(
//!     vec![ServerSpec::stdio("fs", "npx", ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"])],
//!     HubOptions::default(),
//! )?;
//! hub.wait_ready().await?;
//! for tool in hub.tools() {
//!     println!("{}: {}", tool.name, tool.description.unwrap_or_default());
//! }
//! let result = hub.call("mcp__fs__list_directory", serde_json::json!({"path": "/tmp"})).await?;
//! println!("{}", result.to_text());
//! hub.shutdown().await;
//! # Ok(()) }
//! ```

#![warn(missing_docs)]

// The modules a harness reaches by path: each is a whole subject of its own.
pub mod auth;
pub mod config;
pub mod host;
pub mod policy;
pub mod schema;
pub mod telemetry;

// What the CLI, the gateway, the agent and the Python package share beyond the harness's face:
// not covered by semver (see the module).
pub mod cli_support;

// The records in rmcp's model, for a harness that serves the hub over rmcp (the gateway): a
// face of its own, so that an rmcp upgrade is not a change of the default one.
#[cfg(feature = "rmcp-model")]
pub mod rmcp_model;
#[cfg(not(feature = "rmcp-model"))]
#[allow(dead_code)]
mod rmcp_model;

// Everything else is reached through the re-exports below (see ARCHITECTURE.md).
mod broadcast;
mod call_options;
mod catalog;
mod connection;
mod content;
mod defaults;
mod error;
mod http_body;
mod hub;
mod listings;
mod local_tools;
mod platform;
mod redact;
mod result;
mod spill;
mod state;
mod sync;
mod task;
mod terminal;
mod transport;
mod untrusted;

// The hub, its options, and what it tells of its servers.
pub use hub::{Hub, HubOptions, ListingNotes, ServerStatus};
pub use state::{Era, HubEvent, Reload, ServerState};

// A call and its result.
pub use call_options::{CallOptions, Progress, TASKS_EXTENSION};
pub use content::{Content, EmbeddedResource};
pub use error::{Error, Result};
pub use result::{IntoToolResult, Json, ToolResult, error_result};
pub use spill::Spill;
pub use task::{Task, TaskCall, TaskOutcome, TaskState, TaskStatus};

// What a harness without `tracing` is told of every call (`Hub::observe`).
pub use telemetry::{CallKind, CallObserver, CallRecord, Outcome};

// Tools: records, where they came from, who may see them.
pub use catalog::merge::{Dropped, SourceKind, ToolOrigin};
pub use catalog::scope::{Scope, ScopeParseError};
pub use catalog::{BUILTIN_SOURCE, Tool, ToolAnnotations};

// Tools that are not MCP servers.
pub use local_tools::{
    Builtin, Health, LocalTools, NoArgs, Resolved, ToolSource, input_schema_for,
};

// Resources, prompts and completions.
pub use listings::{
    Completion, CompletionRef, Listing, Page, Prompt, PromptArgument, PromptMessage,
    PromptMessages, Resource, ResourceContents, ResourceTemplate,
};

// Configuration, the host's answers, policy (each module holds the rest of its subject).
pub use config::{ConfigSet, LoadOptions, ServerSpec, TransportSpec};
pub use host::Host;
pub use policy::{Approver, Decision, Policy, SideEffect, SideEffects};

// Results shown to a model.
pub use untrusted::{
    UNTRUSTED_TAG, closing_tag, neutralize_delimiters, render_untrusted, render_untrusted_error,
    wrap_untrusted,
};

/// The README's examples, compiled as doctests so they cannot rot.
#[doc = include_str!("../../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
