//! Shared by the bench smoke runs: where the workspace and the debug programs the tests start
//! are, and building those with the library tests' own build (the library's test support).
#![allow(dead_code, unused_imports, clippy::unwrap_used, clippy::expect_used)]

#[path = "../../../../mcpmux/tests/suite/support/poll.rs"]
mod poll;
#[path = "../../../../mcpmux/tests/suite/support/servers.rs"]
mod servers;

pub use servers::*;
