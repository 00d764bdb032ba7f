//! What the bench's programs share: the two Rust clients (raw rmcp and the mcpmux hub), one
//! peer client's run as the side-by-side benchmark drives it, the pipe floor beside them, and
//! reading the resident set.
//!
//! A library so each Rust peer client can be a program of its own (`src/bin/`): a client's
//! memory is mostly the code mapped in, so a binary holding every bench would charge each
//! client for code it never runs.

pub mod clients;
pub mod floor;
pub mod memory;
pub mod peer_client;
