//! What the workspace's integration test suites share, one module per concept: where the test
//! programs are and how to start the listening servers on 127.0.0.1 (`servers`), which
//! processes are left (`procs`), waiting with a deadline (`poll`), the test server's call log
//! (`call_log`), a hub on real servers and its states and events (`hub`), a hermetic place to
//! run the `mcpmux` binary and what a run showed (`cli`), a program on a pseudo-terminal
//! (`pty`), and the official SDK clients and
//! `mcpmux serve` as a process they reach (`sdk`). Everything is re-exported at the root, so a
//! suite's `support` module is `pub use mcpmux_test_support::*;` plus what it alone needs.
// Test code: a failed step panics with what was expected. `Sandbox::new` makes folders on disk,
// which a `Default` would hide.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::new_without_default)]

mod call_log;
mod cli;
mod hub;
mod poll;
mod procs;
mod pty;
mod sdk;
mod servers;

pub use call_log::*;
pub use cli::*;
pub use hub::*;
pub use poll::*;
pub use procs::*;
pub use pty::*;
pub use sdk::*;
pub use servers::*;
