//! The scripted model endpoints' own tests, over real HTTP.
//!
//! Every test of `tests/` is a module of this one binary rather than a binary of its own: each
//! binary links the whole library and its dependencies (about 70 MB apiece, in debug), so a
//! binary per file cost gigabytes of disk and minutes of linking in CI.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

mod anthropic;
mod openai;
mod script;
