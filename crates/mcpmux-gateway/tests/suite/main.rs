//! The gateway's integration tests: served on 127.0.0.1, driven by real clients; in this
//! process (`gateway_*`), and as the real `mcpmux serve` (`serve*`, `deploy_haproxy` behind
//! HAProxy), the binary `scripts/build-test-programs.sh` builds.
//!
//! Every test of `tests/` is a module of this one binary rather than a binary of its own: each
//! binary links the whole library and its dependencies (about 70 MB apiece, in debug), so a
//! binary per file cost gigabytes of disk and minutes of linking in CI.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

mod deploy_haproxy;
mod gateway_access;
mod gateway_born;
mod gateway_connections;
mod gateway_get_stream;
mod gateway_http;
mod gateway_inline;
mod gateway_isolation;
mod gateway_limits;
mod gateway_oauth;
mod gateway_one_write;
mod gateway_parking;
mod gateway_results;
mod gateway_rounds;
mod gateway_search;
mod gateway_sessions;
mod gateway_sse;
mod serve;
mod serve_asks;
mod serve_connections;
mod serve_http;
mod serve_metrics;
mod serve_names;
mod serve_notices;
mod serve_oauth;
mod serve_passthrough;
mod serve_reload;
mod serve_resources;
mod serve_search;
mod serve_search_agent;
mod serve_sse;
mod serve_stdio;
mod serve_tasks;
