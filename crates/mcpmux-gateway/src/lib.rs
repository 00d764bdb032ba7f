//! `mcpmux-gateway`: the hub served as ONE MCP server (`mcpmux serve`). The hub is the
//! upstream (naming, scope, filters, policy, validation, resilience and OAuth stay the
//! library's, reached only through its public face); rmcp's server side is the downstream,
//! over stdio or streamable HTTP.
//!
//! `handler` is the MCP server, one handler per session (`session`), served as `options`
//! say; `convert` the hub's records in MCP's words; `resources` the resources, templates,
//! prompts and completions served; `paging` the pages of every list; `relay` what an upstream
//! server asks mid-call passed on to the calling client (and a policy `ask` asked of it), a
//! 2026-07-28 client in `rounds` of `input_required`; `subscriptions` who holds which
//! resource; `notices` the upstream servers' updates, list changes and logs passed on;
//! `watchers` who hears of list changes and logs; `metrics` what `/metrics` shows; `guard`
//! the HTTP door's rules; `http` and `stdio` the two ways in. This file only re-exports.

mod convert;
mod guard;
mod handler;
mod http;
mod metrics;
mod notices;
mod options;
mod paging;
mod relay;
mod resources;
mod rounds;
mod session;
mod stdio;
mod subscriptions;
mod watchers;

pub use guard::{GuardError, Token, origin_allowed};
pub use handler::Gateway;
pub use http::{DEFAULT_GRACE, DEFAULT_MAX_BODY_BYTES, HttpError, HttpOptions, HttpServer};
pub use options::{DEFAULT_LIST_WAIT, GatewayOptions};
pub use paging::DEFAULT_PAGE_SIZE;
pub use relay::APPROVAL_WAIT;
pub use stdio::{StdioError, serve_stdio};
