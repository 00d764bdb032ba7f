//! The CLI's integration tests: the real `mcpmux` binary in a hermetic home, for what the CLI
//! itself does (arguments, output, its commands). What `mcpmux serve` does is the gateway's
//! and tested in its suite (`crates/mcpmux-gateway/tests/suite/serve*.rs`).
//!
//! Every test of `tests/` is a module of this one binary rather than a binary of its own: each
//! binary links the whole library and its dependencies (about 70 MB apiece, in debug), so a
//! binary per file cost gigabytes of disk and minutes of linking in CI. `cli_processes` stays
//! apart: its timing and /proc checks need the machine to themselves.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

mod cli;
mod cli_auth;
mod cli_call_args;
mod cli_call_errors;
mod cli_config;
mod cli_dialects;
mod cli_edit;
mod cli_failing;
mod cli_flags;
mod cli_get;
mod cli_hostile;
mod cli_install;
mod cli_lazy;
mod cli_otel;
mod cli_oversize;
mod cli_plugins;
mod cli_prompts;
mod cli_questions;
mod cli_redact;
mod cli_run;
mod cli_sampling;
mod cli_secrets;
mod cli_shell;
mod cli_surface;
mod cli_terminal;
mod cli_trust;
mod cli_wire_log;
