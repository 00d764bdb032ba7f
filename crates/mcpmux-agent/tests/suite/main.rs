//! The agent loop's integration tests: real MCP servers, a scripted model endpoint.
//!
//! Every test of `tests/` is a module of this one binary rather than a binary of its own: each
//! binary links the whole library and its dependencies (about 70 MB apiece, in debug), so a
//! binary per file cost gigabytes of disk and minutes of linking in CI.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod catalog;
mod support;

mod agent_hostile;
mod agent_loop;
mod agent_reference_servers;
mod agent_search;
mod agent_stops;
mod search_quality;
