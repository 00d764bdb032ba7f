//! The gateway's integration tests: served on 127.0.0.1, driven by real clients.
//!
//! Every test of `tests/` is a module of this one binary rather than a binary of its own: each
//! binary links the whole library and its dependencies (about 70 MB apiece, in debug), so a
//! binary per file cost gigabytes of disk and minutes of linking in CI.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

mod gateway_access;
mod gateway_connections;
mod gateway_http;
mod gateway_isolation;
mod gateway_limits;
mod gateway_oauth;
mod gateway_results;
mod gateway_rounds;
mod gateway_sessions;
mod gateway_sse;
