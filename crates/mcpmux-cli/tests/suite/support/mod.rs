//! Shared by the CLI's integration tests: all of it from the `mcpmux-test-support` crate (a
//! hermetic place to run the `mcpmux` binary and what a run showed, where the servers are,
//! which processes are left, polling, the test server's call log, the official SDK clients).
#![allow(dead_code, unused_imports, clippy::unwrap_used, clippy::expect_used)]

pub use mcpmux_test_support::*;
