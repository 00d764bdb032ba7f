//! Which tool definitions go in a model request: all of them while they are small enough, else
//! the pinned ones plus the `search_tools` meta-tool, with the rest behind a [`ToolIndex`].
//! A tool found by a search is [`Discovered`] and sent from the next turn on. Sizes are the
//! provider's real definitions (`mcpmux::schema::export`), estimated at four bytes of JSON per
//! token. Knows nothing of the agent loop or of providers' HTTP APIs.

use std::collections::{BTreeSet, HashMap};

use mcpmux::Tool;
use mcpmux::schema::{ExportFormat, export};
use serde::Serialize;
use serde_json::{Value, json};

use super::index::ToolIndex;

/// The meta-tool's name.
pub const SEARCH_TOOL: &str = "search_tools";

/// Default threshold: 10 % of a 200 000-token context (the share at which Claude Code's MCP
/// tool search starts deferring, and the context of the current Claude and GPT models).
pub const DEFAULT_MAX_TOKENS: usize = 20_000;

/// Matches a search returns when the model does not say; the most it may ask for.
const DEFAULT_LIMIT: u64 = 5;
const MAX_LIMIT: u64 = 20;

/// When to defer, and what is never deferred.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DeferralOptions {
    /// Defer when all definitions together exceed this many estimated tokens.
    pub max_tokens: Option<usize>,
    /// Defer when there are more tools than this.
    pub max_tools: Option<usize>,
    /// Tools always sent: exposed or raw names, `*` and `?` as wildcards (`alwaysLoad`).
    pub pinned: Vec<String>,
    /// Servers whose tools are always sent.
    pub always_load: Vec<String>,
}

impl Default for DeferralOptions {
    fn default() -> Self {
        DeferralOptions {
            max_tokens: Some(DEFAULT_MAX_TOKENS),
            max_tools: None,
            pinned: Vec::new(),
            always_load: Vec::new(),
        }
    }
}

impl DeferralOptions {
    /// Defer when the definitions take more than `percent` % of a `context_tokens` context.
    pub fn share_of_context(context_tokens: usize, percent: u8) -> Self {
        DeferralOptions {
            max_tokens: Some(context_tokens / 100 * usize::from(percent.min(100))),
            ..DeferralOptions::default()
        }
    }

    /// Never defer on size (only on [`DeferralOptions::max_tools`], if set).
    pub fn without_token_limit(mut self) -> Self {
        self.max_tokens = None;
        self
    }

    /// Also defer when there are more than `count` tools.
    pub fn with_max_tools(mut self, count: usize) -> Self {
        self.max_tools = Some(count);
        self
    }

    /// Always send the tools matching `pattern` (exposed or raw name; `*`, `?`).
    pub fn with_pinned(mut self, pattern: impl Into<String>) -> Self {
        self.pinned.push(pattern.into());
        self
    }

    /// Always send every tool of `server`.
    pub fn with_always_load(mut self, server: impl Into<String>) -> Self {
        self.always_load.push(server.into());
        self
    }

    /// Whether `tool` is always sent: its server is always loaded or a pattern matches its
    /// exposed or raw name (the rule `mcpmux serve --search --pin` shares).
    pub fn pins(&self, tool: &Tool) -> bool {
        self.always_load.contains(&tool.server)
            || self
                .pinned
                .iter()
                .any(|p| glob(p, &tool.name) || glob(p, &tool.raw_name))
    }
}

/// Estimated tokens of one provider definition: its JSON length / 4, the usual rule of thumb
/// for English and JSON with BPE tokenizers (it overestimates prose slightly, underestimates
/// dense punctuation); good for thresholds, not for billing.
pub fn estimate_tokens(definition: &Value) -> usize {
    serde_json::to_string(definition).map_or(0, |s| s.len().div_ceil(4))
}

/// What a request carries: the tools sent, the tools deferred behind `search_tools`.
#[derive(Debug, Clone)]
pub struct ToolPlan {
    /// The provider whose definitions were measured.
    pub provider: ExportFormat,
    /// Sent every turn: everything when not deferring; else the pinned tools and the
    /// meta-tool (last).
    pub sent: Vec<Tool>,
    /// Reachable only through `search_tools` until discovered.
    pub deferred: Vec<Tool>,
    /// The meta-tool, when deferring.
    pub search_tool: Option<Tool>,
    /// Estimated tokens of every usable tool's definition.
    pub tokens_all: usize,
    /// Estimated tokens of the definitions in [`ToolPlan::sent`].
    pub tokens_sent: usize,
    /// Tools left out of every request because the provider export cannot use their schema.
    pub unusable: Vec<String>,
    index: ToolIndex,
}

/// Decides what `tools` a request to `provider` carries under `options`.
pub fn plan(tools: &[Tool], options: &DeferralOptions, provider: ExportFormat) -> ToolPlan {
    let exported = export(tools, provider);
    let tokens: HashMap<&str, usize> = exported
        .tools
        .iter()
        .map(|t| (t.tool.as_str(), estimate_tokens(&t.definition)))
        .collect();
    let usable: Vec<Tool> = tools
        .iter()
        .filter(|t| tokens.contains_key(t.name.as_str()))
        .cloned()
        .collect();
    let unusable = exported.unusable.iter().map(|u| u.tool.clone()).collect();
    let tokens_all: usize = tokens.values().sum();
    let over = options.max_tokens.is_some_and(|max| tokens_all > max)
        || options.max_tools.is_some_and(|max| usable.len() > max);
    let (mut sent, deferred): (Vec<Tool>, Vec<Tool>) = if over {
        usable.into_iter().partition(|t| options.pins(t))
    } else {
        (usable, Vec::new())
    };
    if deferred.is_empty() {
        return ToolPlan {
            provider,
            tokens_sent: tokens_all,
            sent,
            deferred,
            search_tool: None,
            tokens_all,
            unusable,
            index: ToolIndex::default(),
        };
    }
    let meta = search_tool(deferred.len());
    let meta_tokens: usize = export(std::slice::from_ref(&meta), provider)
        .tools
        .iter()
        .map(|t| estimate_tokens(&t.definition))
        .sum();
    let tokens_sent = sent
        .iter()
        .map(|t| tokens.get(t.name.as_str()).copied().unwrap_or(0))
        .sum::<usize>()
        + meta_tokens;
    sent.push(meta.clone());
    ToolPlan {
        provider,
        index: ToolIndex::new(&deferred),
        sent,
        deferred,
        search_tool: Some(meta),
        tokens_all,
        tokens_sent,
        unusable,
    }
}

/// The `search_tools` definition, telling the model how many tools it can reach.
pub fn search_tool(deferred: usize) -> Tool {
    Tool::local(
        SEARCH_TOOL,
        json!({
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "description": "What you want to do, in a few words (\"create a calendar event\", \"read a file\"), or a tool's name."
                },
                "limit": {
                    "type": "integer", "minimum": 1, "maximum": MAX_LIMIT,
                    "description": "How many tools to return (default 5)."
                }
            },
            "required": ["query"]
        }),
    )
    .with_description(format!(
        "Search {deferred} more tools that are available but not loaded. Returns the \
         definitions of the best matches; you can call them from your next turn. Search \
         before saying a task cannot be done."
    ))
}

impl ToolPlan {
    /// Whether some tools are behind `search_tools`.
    pub fn is_deferred(&self) -> bool {
        self.search_tool.is_some()
    }

    /// The index over the deferred tools.
    pub fn index(&self) -> &ToolIndex {
        &self.index
    }

    /// The tools a request carries now: [`ToolPlan::sent`], then the discovered ones.
    pub fn request_tools(&self, discovered: &Discovered) -> Vec<Tool> {
        let mut tools = self.sent.clone();
        tools.extend(
            self.deferred
                .iter()
                .filter(|t| discovered.contains(&t.name))
                .cloned(),
        );
        tools
    }

    /// Answers a `search_tools` call with `arguments` (`{query, limit?}`): the best matches'
    /// definitions in the plan's provider format, which are added to `discovered`.
    pub fn search(
        &self,
        arguments: &Value,
        discovered: &mut Discovered,
    ) -> Result<SearchAnswer, SearchError> {
        let (query, limit) = search_arguments(arguments)?;
        let hits = self.index.search(query, limit);
        let found: Vec<Tool> = hits
            .iter()
            .filter_map(|hit| self.deferred.iter().find(|t| t.name == hit.name))
            .cloned()
            .collect();
        let exported = export(&found, self.provider);
        for tool in &exported.tools {
            discovered.names.insert(tool.tool.clone());
        }
        let note = if exported.tools.is_empty() {
            format!(
                "No tool matched {query:?}. Try other words: what the tool does and what it \
                 works on (\"send email\", \"list issues\")."
            )
        } else {
            format!(
                "{} tools found; they can be called from your next turn.",
                exported.tools.len()
            )
        };
        Ok(SearchAnswer {
            tools: exported.tools.iter().map(|t| t.tool.clone()).collect(),
            definitions: exported.definitions(),
            note,
        })
    }
}

/// The `query` and `limit` of a `search_tools` call's `arguments` (`{query, limit?}`; the
/// limit 5 when not given, at most 20).
pub fn search_arguments(arguments: &Value) -> Result<(&str, usize), SearchError> {
    let Value::Object(arguments) = arguments else {
        return Err(SearchError::NotAnObject);
    };
    let query = match arguments.get("query") {
        Some(Value::String(query)) => query,
        Some(_) => return Err(SearchError::QueryNotAString),
        None => return Err(SearchError::MissingQuery),
    };
    let limit = match arguments.get("limit") {
        None | Some(Value::Null) => DEFAULT_LIMIT,
        Some(value) => value
            .as_u64()
            .filter(|n| (1..=MAX_LIMIT).contains(n))
            .ok_or_else(|| SearchError::BadLimit(value.to_string()))?,
    };
    // At most 20: the cast cannot truncate.
    Ok((query.as_str(), limit as usize))
}

/// What `search_tools` answers.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchAnswer {
    /// Exposed names of the tools found, best first.
    #[serde(skip)]
    pub tools: Vec<String>,
    /// Their definitions, in the provider's format.
    #[serde(rename = "tools")]
    pub definitions: Value,
    /// One line for the model: how many were found and when they can be called.
    pub note: String,
}

impl SearchAnswer {
    /// The answer as the tool result's text: `{"tools": [...], "note": "..."}`.
    pub fn to_text(&self) -> String {
        json!({"tools": self.definitions, "note": self.note}).to_string()
    }
}

/// A `search_tools` call the model got wrong; the message says how to call it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SearchError {
    /// The arguments are not a JSON object.
    #[error("search_tools takes an object: {{\"query\": \"what you want to do\"}}")]
    NotAnObject,
    /// No `query`.
    #[error("search_tools needs a `query`: what you want to do, in a few words")]
    MissingQuery,
    /// `query` is not a string.
    #[error("search_tools: `query` must be a string of words")]
    QueryNotAString,
    /// `limit` is not an integer in range.
    #[error("search_tools: `limit` must be an integer from 1 to 20, not {0}")]
    BadLimit(String),
}

/// The deferred tools a conversation has found: sent from the turn after their discovery on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Discovered {
    names: BTreeSet<String>,
}

impl Discovered {
    /// Whether the tool with exposed name `name` was found.
    pub fn contains(&self, name: &str) -> bool {
        self.names.contains(name)
    }

    /// How many tools were found.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// Whether none was.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// Marks `name` as callable (a tool the harness loads for its own reasons).
    pub fn insert(&mut self, name: impl Into<String>) {
        self.names.insert(name.into());
    }
}

/// `*` any run, `?` one character; everything else literal.
fn glob(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ti));
            pi += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

#[cfg(test)]
#[path = "deferral_tests.rs"]
mod tests;
