//! mcpmux-agent: the AI-driven mode over mcpmux's public face. Today it holds [`search`]:
//! deferred tool loading for large catalogs (a `search_tools` meta-tool over a BM25F index).
//! The model providers and the agent loop come as modules of their own; this crate uses only
//! `mcpmux`'s public API and the library knows nothing of it.

pub mod search;

pub use search::{DeferralOptions, Discovered, Hit, ToolIndex, ToolPlan, plan};
