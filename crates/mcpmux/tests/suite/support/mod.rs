//! Shared by the library's integration tests: what every suite shares comes from the
//! `mcpmux-test-support` crate (where the real servers are and how to start them, which
//! processes are left, waiting with a deadline, the test server's call log, a hub on real
//! servers and its states and events); here, what only the library's tests use, one file per
//! concept: the HTTP test server's admin and OAuth faces (`remote`), raw HTTP for what no real
//! server does on cue (`http`), and config files in a temporary home and project with what a
//! loaded set holds (`config_files`).
#![allow(dead_code, unused_imports, clippy::unwrap_used, clippy::expect_used)]

mod config_files;
mod http;
mod remote;

pub use config_files::*;
pub use http::*;
pub use mcpmux_test_support::*;
pub use remote::*;
