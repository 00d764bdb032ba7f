//! `mcpmux-gateway`: the hub served as ONE MCP server (`mcpmux serve`). The hub is the
//! upstream (naming, scope, filters, policy, validation, resilience and OAuth stay the
//! library's, reached only through its public face); rmcp's server side is the downstream,
//! over stdio or streamable HTTP.
//!
//! `handler` is the MCP server, `convert` the hub's records in MCP's words, `resources` the
//! resources, templates and prompts served, `metrics` what `/metrics` shows, `watchers` who
//! hears of tool-list changes, `guard` the HTTP door's rules, `http` and `stdio` the two
//! ways in (`sse`, legacy HTTP+SSE, mounted by `http`). This file only re-exports.

mod convert;
mod guard;
mod handler;
mod http;
mod metrics;
mod resources;
mod sse;
mod stdio;
mod watchers;

pub use guard::{GuardError, Token, origin_allowed};
pub use handler::{DEFAULT_LIST_WAIT, Gateway, GatewayOptions};
pub use http::{DEFAULT_GRACE, DEFAULT_MAX_BODY_BYTES, HttpError, HttpOptions, HttpServer};
pub use sse::{
    DEFAULT_MAX_SSE_SESSIONS, DEFAULT_SSE_QUEUE_BYTES, DEFAULT_SSE_QUEUE_MESSAGES, SseOptions,
};
pub use stdio::{StdioError, serve_stdio};
