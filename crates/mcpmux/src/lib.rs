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
pub mod http_body;
pub mod policy;
pub mod redact;
pub mod schema;
pub mod sync;
pub mod terminal;

// The records in rmcp's model, for a harness that serves the hub over rmcp (the gateway): a
// face of its own, so that an rmcp upgrade is not a change of the default one.
#[cfg(feature = "rmcp-model")]
pub mod rmcp_model;
#[cfg(not(feature = "rmcp-model"))]
#[allow(dead_code)]
mod rmcp_model;

// Everything else is reached through the re-exports below (see ARCHITECTURE.md).
mod broadcast;
mod call;
mod catalog;
mod connection;
mod content;
mod defaults;
mod error;
mod handler;
mod hub;
mod platform;
mod resources;
mod result;
mod spill;
mod state;
mod task;
pub mod telemetry;
mod transport;
mod untrusted;

pub use call::{CallOptions, Progress, TASKS_EXTENSION};
pub use catalog::filter::NameFilter;
pub use catalog::merge::{Dropped, SourceKind, ToolOrigin};
pub use catalog::naming::{assign as exposed_names, is_mcp_tool_name};
pub use catalog::scope::{Scope, ScopeParseError};
pub use catalog::{BUILTIN_SOURCE, Tool, ToolAnnotations};
pub use config::{ConfigSet, LoadOptions, ServerSpec, TransportSpec};
pub use content::{Content, EmbeddedResource};
pub use error::{Error, Result};
pub use handler::{
    Builtin, HandlerRegistry, Health, NoArgs, Resolved, ToolSource, input_schema_for,
};
pub use host::Host;
pub use hub::{Hub, HubOptions, ServerStatus};
pub use policy::{Approver, Decision, Policy, SideEffect, SideEffects};
pub use resources::{
    Completion, CompletionRef, Listing, Page, Prompt, PromptArgument, PromptMessage,
    PromptMessages, Resource, ResourceContents, ResourceTemplate,
};
pub use result::{IntoToolResult, Json, ToolResult, error_result};
pub use spill::Spill;
pub use state::{Era, HubEvent, Reload, ServerState};
pub use task::{Task, TaskCall, TaskOutcome, TaskState, TaskStatus};
pub use telemetry::{CallKind, CallObserver, CallRecord, Outcome};
pub use transport::sse::{SseItem, SseParser};
pub use untrusted::{
    UNTRUSTED_TAG, closing_tag, neutralize_delimiters, render_untrusted, render_untrusted_error,
    wrap_untrusted,
};

/// The README's examples, compiled as doctests so they cannot rot.
#[doc = include_str!("../../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
