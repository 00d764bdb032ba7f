//! `mcpmux-gateway`: the hub served as ONE MCP server (`mcpmux serve`). The hub is the
//! upstream (naming, scope, filters, policy, validation, resilience and OAuth stay the
//! library's, reached only through its public face); rmcp's server side is the downstream,
//! over stdio or streamable HTTP.
//!
//! `handler` is the MCP server, `convert` the hub's records in MCP's words, `resources` the
//! resources, templates and prompts served, `metrics` what `/metrics` shows, `watchers` who
//! hears of tool-list changes, `passthrough` the names served for a single upstream server
//! (`--passthrough`), `tasks` the tasks upstream servers run for clients (SEP-2663), `guard`
//! the HTTP door's rules, `http` and `stdio` the two ways in. This file only re-exports.

mod convert;
mod guard;
mod handler;
mod http;
mod metrics;
mod passthrough;
mod resources;
mod stdio;
mod tasks;
mod watchers;

pub use guard::{GuardError, Token, origin_allowed};
pub use handler::{DEFAULT_LIST_WAIT, Gateway, GatewayOptions};
pub use http::{DEFAULT_GRACE, DEFAULT_MAX_BODY_BYTES, HttpError, HttpOptions, HttpServer};
pub use passthrough::{PassthroughError, check_one_server};
pub use stdio::{StdioError, serve_stdio};
