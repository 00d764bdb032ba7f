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

pub mod auth;
mod call;
pub mod catalog;
pub mod config;
mod connection;
pub mod content;
pub mod defaults;
mod error;
pub mod handler;
pub mod host;
mod hub;
pub mod policy;
pub mod resources;
pub mod result;
pub mod schema;
mod spill;
mod state;
mod sync;
pub mod terminal;
mod transport;
pub mod untrusted;

pub use call::{CallOptions, Progress};
pub use catalog::scope::Scope;
pub use catalog::{Tool, ToolAnnotations};
pub use config::{ConfigSet, LoadOptions, ServerSpec, TransportSpec};
pub use content::Content;
pub use error::{Error, Result};
pub use handler::{Builtin, HandlerRegistry, ToolSource};
pub use host::Host;
pub use hub::{Hub, HubOptions, ServerStatus};
pub use policy::{Approver, Decision, Policy, SideEffect, SideEffects};
pub use resources::{Prompt, PromptMessages, Resource, ResourceContents, ResourceTemplate};
pub use result::ToolResult;
pub use spill::Spill;
pub use state::{Era, HubEvent, ServerState};
pub use untrusted::{
    UNTRUSTED_TAG, closing_tag, neutralize_delimiters, render_untrusted, render_untrusted_error,
    wrap_untrusted,
};

/// The README's examples, compiled as doctests so they cannot rot.
#[doc = include_str!("../../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
