//! Tool search and deferred loading: when a tool set is too large to send a model every turn,
//! only the pinned tools and one `search_tools` meta-tool are sent; the model searches the
//! rest ([`ToolIndex`], BM25F over names, parameter names and descriptions) and the tools it
//! finds become callable from its next turn ([`ToolPlan`], [`Discovered`]). Knows nothing of
//! providers' HTTP APIs or of the agent loop: it decides which definitions go in a request.

mod deferral;
mod fields;
mod index;
mod synonyms;
mod tokens;

pub use deferral::{
    DEFAULT_MAX_TOKENS, DeferralOptions, Discovered, SEARCH_TOOL, SearchAnswer, SearchError,
    ToolPlan, estimate_tokens, plan, search_arguments, search_tool,
};
pub use index::{Hit, ToolIndex};
