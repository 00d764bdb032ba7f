//! Smoke runs of the benchmarks, so that they cannot rot.
//!
//! Every test of `tests/` is a module of this one binary rather than a binary of its own: each
//! binary links the whole library and its dependencies (about 70 MB apiece, in debug), so a
//! binary per file cost gigabytes of disk and minutes of linking in CI.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

mod gateway_smoke;
mod peers_smoke;
mod search_smoke;
