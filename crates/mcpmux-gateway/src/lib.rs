//! `mcpmux-gateway`: the hub served as ONE MCP server (`mcpmux serve`). The hub is the
//! upstream (naming, scope, filters, policy, validation, resilience and OAuth stay the
//! library's, reached only through its public face); rmcp's server side is the downstream,
//! over stdio or streamable HTTP.
//!
//! `handler` is the MCP server, one handler per session (`session`), served as `options` say;
//! `view` what a session may see and use (every route asks it); `convert` the hub's records in
//! MCP's words; `resources` the resources, templates, prompts and completions served; `paging`
//! the pages of every list; `passthrough` the names served (the hub's, short ones with
//! `--names short`, a single upstream server's own with `--passthrough`); `relay` what an upstream server asks mid-call passed on to the calling
//! client (and a policy `ask` asked of it), a 2026-07-28 client in `rounds` of
//! `input_required`; `subscriptions` who holds which resource; `upstream_tasks` the tasks
//! upstream servers run for clients (SEP-2663); `notices` the upstream servers' updates, list changes
//! and logs passed on; `watchers` who hears of list changes and logs; `levels` each session's
//! log level and the one asked upstream; `metrics` what `/metrics` shows; `reload` when the
//! config is read again and applied; `guard` the HTTP door's rules, `oauth` the gateway as an
//! OAuth resource server, `rate_limit` the buckets per client, `access_log` the line per
//! request, `door` the middleware that applies them and decides each request's `identity`,
//! `access` what an identity may use (the tokens file), `sessions` the `/mcp` sessions bounded
//! and bound to identities, `outbox` a session's `GET` stream (the gateway's, kept while the
//! session is parked); `connections` the accept loop and the caps and deadlines
//! (`deadlines`) every connection is under before the door; `http` and `stdio` the two ways
//! in (`sse`, legacy HTTP+SSE, and `inline`, plain requests on an established `/mcp`
//! session answered without rmcp's session worker, mounted by `http`). This file only
//! re-exports.

mod access;
mod access_log;
mod client_rounds;
mod client_wire;
mod connections;
mod deadlines;
mod door;
mod failures;
mod guard;
mod handler;
mod handshake;
mod http;
mod identity;
mod inline;
mod levels;
mod metrics;
mod notices;
mod oauth;
mod one_write;
mod options;
mod outbox;
mod paging;
mod passthrough;
mod post_head;
mod progress;
mod rate_limit;
mod relay;
mod reload;
mod resources_prompts;
mod search;
mod session;
mod sessions;
mod sse;
mod stdio;
mod subscriptions;
mod trace;
mod upstream_tasks;
mod view;
mod watchers;

// Serving: the gateway, its options, the two ways in.
pub use handler::{Gateway, ReconfigureError};
pub use http::{HttpError, HttpOptions, HttpServer};
pub use options::GatewayOptions;
pub use search::{CALL_TOOL, MAX_FOUND, MAX_QUERY_BYTES, SearchOptions, meta_tools};
pub use stdio::{StdioError, serve_stdio};

// The limits a served gateway keeps (each `Default` is the documented default).
pub use client_rounds::WaitingLimits;
pub use connections::{ConnectionLimits, raise_open_file_limit};
pub use sessions::SessionLimits;
pub use sse::SseOptions;

// Who may come in, and what each may use.
pub use access::{Access, AccessError, AskRoute};
pub use access_log::TARGET as ACCESS_LOG_TARGET;
pub use guard::{GuardError, Token};
pub use oauth::{OAuthError, OAuthOptions};
pub use rate_limit::{Rate, RateLimit, RateParseError};

// `--passthrough` and hot reload.
pub use passthrough::{CLAUDE_CODE_SHORT_NAME_LEN, PassthroughError, check_one_server};
pub use reload::{Baseline, Loaded, Outcome, ReloadOptions, Reloader, Trigger};
