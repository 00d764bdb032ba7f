//! The CLI's integration tests: the real `mcpmux` binary in a hermetic home.
//!
//! Every test of `tests/` is a module of this one binary rather than a binary of its own: each
//! binary links the whole library and its dependencies (about 70 MB apiece, in debug), so a
//! binary per file cost gigabytes of disk and minutes of linking in CI. `cli_processes` stays
//! apart: its timing and /proc checks need the machine to themselves.
#![allow(clippy::unwrap_used, clippy::expect_used)]

/// The gateway's OAuth authorization server, for `cli_serve_oauth`.
#[path = "../../../mcpmux-gateway/tests/suite/support/issuer.rs"]
mod issuer;
mod support;

mod cli;
mod cli_auth;
mod cli_call_args;
mod cli_deploy_haproxy;
mod cli_dialects;
mod cli_edit;
mod cli_get;
mod cli_hostile;
mod cli_install;
mod cli_lazy;
mod cli_otel;
mod cli_oversize;
mod cli_plugins;
mod cli_prompts;
mod cli_redact;
mod cli_run;
mod cli_secrets;
mod cli_serve;
mod cli_serve_asks;
mod cli_serve_connections;
mod cli_serve_http;
mod cli_serve_metrics;
mod cli_serve_notices;
mod cli_serve_oauth;
mod cli_serve_passthrough;
mod cli_serve_reload;
mod cli_serve_resources;
mod cli_serve_sse;
mod cli_serve_stdio;
mod cli_serve_tasks;
mod cli_shell;
mod cli_terminal;
mod cli_trust;
mod cli_wire_log;
