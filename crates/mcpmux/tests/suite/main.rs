//! The library's integration tests, against real servers.
//!
//! Every test of `tests/` is a module of this one binary rather than a binary of its own: each
//! binary links the whole library and its dependencies (about 70 MB apiece, in debug), so a
//! binary per file cost gigabytes of disk and minutes of linking in CI. `resilience_processes`
//! stays apart: it counts every process this test process leaves, so it needs the process to
//! itself.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

mod accounts;
mod config_edit;
mod config_load;
mod crash_breaker;
mod dialects;
mod dialects_import;
mod host_resources;
mod hostile_schemas;
mod http_beside;
mod hub;
mod lazy;
mod mrtr;
mod mrtr_rounds;
mod naming_scope;
mod oauth;
mod oversize;
mod progress_order;
mod project_trust;
mod provider_rules;
mod read_polling;
mod relay;
mod reload;
mod remote_auth;
mod remote_restart;
mod resilience;
mod resilience_breaker;
mod resilience_calls;
mod resilience_http;
mod sandbox;
mod secrets;
mod spills;
mod surface;
mod tasks;
mod third_party;
mod transports;
mod trust_boundary;
mod untrusted;
