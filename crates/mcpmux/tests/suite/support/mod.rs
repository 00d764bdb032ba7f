//! Shared by the integration tests, one file per concept: where the real servers are and how to
//! start them on 127.0.0.1 (`servers`), which processes are left (`procs`), waiting with a
//! deadline (`poll`), the test server's call log (`call_log`), a hub on real servers and its
//! states and events (`hub`), the HTTP test server's admin and OAuth faces (`remote`), and raw
//! HTTP for what no real server does on cue (`http`), and config files in a temporary home and
//! project with what a loaded set holds (`config_files`). The CLI's tests include `servers`,
//! `procs`, `poll` and `call_log` too (`crates/mcpmux-cli/tests/support`), so those four know
//! nothing of the library.
#![allow(dead_code, unused_imports, clippy::unwrap_used, clippy::expect_used)]

mod call_log;
mod config_files;
mod http;
mod hub;
mod poll;
mod procs;
mod remote;
mod servers;

pub use call_log::*;
pub use config_files::*;
pub use http::*;
pub use hub::*;
pub use poll::*;
pub use procs::*;
pub use remote::*;
pub use servers::*;
