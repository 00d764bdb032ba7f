//! Shared by the bench smoke runs: where the workspace and the debug programs the tests start
//! are, and building those with the library tests' own build (the workspace's test support crate, `mcpmux-test-support`).
#![allow(dead_code, unused_imports, clippy::unwrap_used, clippy::expect_used)]

pub use mcpmux_test_support::*;
