//! `serve --search`: tool search for every client. `tools/list` answers the pinned tools, the
//! tools this session found, and two meta-tools: `search_tools` (a query → the best matching
//! tools' definitions) and `call_tool` (a tool's name and arguments → that tool called, for a
//! client that never lists again). The index is the agent's (`mcpmux_agent::search`: the BM25F
//! `ToolIndex`, its synonyms, the pin rule of `mcpmux run --pin`), built over the gateway's whole
//! view less the pinned tools and built again when that set changes (an upstream `list_changed`,
//! a reload); what one session may use filters what its searches return. Every input is bounded:
//! a query's length, a search's limit, a session's found set. Knows nothing of sessions,
//! transports or access rules: the handler hands in the tools and what the caller may use.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use mcpmux::Tool;
use mcpmux_agent::search::{DeferralOptions, SEARCH_TOOL, ToolIndex, search_arguments};
use serde_json::{Map, Value, json};

/// The meta-tool that calls a tool by name, for clients that do not list again.
pub const CALL_TOOL: &str = "call_tool";

/// Most tools one session's found set holds: the oldest finds leave first, so a client that
/// searches forever lists at most this many tools beyond the pinned ones (a hostile client
/// cannot grow its `tools/list`, nor the gateway's memory, without bound). 64 is 12 searches
/// of the default five hits, more than a task needs.
pub const MAX_FOUND: usize = 64;

/// Most bytes of a query: a tool search is a few words or a tool's name; the index reads
/// 1 024 characters at most anyway, and a longer query is refused rather than cut unseen.
pub const MAX_QUERY_BYTES: usize = 1024;

/// How `serve --search` serves: which tools are always listed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SearchOptions {
    /// Always listed: exposed or raw names with `*` and `?` as wildcards, or `SERVER:*` for
    /// every tool of a server (the rule of `mcpmux run --pin`).
    pub pin: Vec<String>,
}

impl SearchOptions {
    /// Builder-style: always list the tools `pattern` matches (`SERVER:*`: a whole server).
    pub fn with_pin(mut self, pattern: impl Into<String>) -> Self {
        self.pin.push(pattern.into());
        self
    }

    /// The pins as the agent's deferral rule reads them.
    fn deferral(&self) -> DeferralOptions {
        self.pin
            .iter()
            .fold(DeferralOptions::default(), |rule, pattern| {
                match pattern.strip_suffix(":*") {
                    Some(server) => rule.with_always_load(server),
                    None => rule.with_pinned(pattern.as_str()),
                }
            })
    }
}

/// The index over the tools behind `search_tools`, shared by every session.
pub struct Catalog {
    pins: DeferralOptions,
    built: Mutex<Option<Arc<Built>>>,
}

/// One build of the index: the tool set it was built over, and the index of the unpinned ones.
struct Built {
    tools: Vec<Tool>,
    index: ToolIndex,
}

impl Catalog {
    /// The catalog `options` pin tools of.
    pub fn new(options: &SearchOptions) -> Self {
        Catalog {
            pins: options.deferral(),
            built: Mutex::new(None),
        }
    }

    /// Whether `tool` is always listed.
    pub fn pinned(&self, tool: &Tool) -> bool {
        self.pins.pins(tool)
    }

    /// The index over `tools` (the gateway's whole view) less the pinned ones: the last build
    /// while the tool set is the same, else a new one.
    fn index(&self, tools: Vec<Tool>) -> Arc<Built> {
        let mut built = mcpmux::cli_support::sync::lock(&self.built);
        if let Some(current) = built.as_ref().filter(|b| b.tools == tools) {
            return current.clone();
        }
        let deferred: Vec<Tool> = tools.iter().filter(|t| !self.pinned(t)).cloned().collect();
        let fresh = Arc::new(Built {
            index: ToolIndex::new(&deferred),
            tools,
        });
        *built = Some(fresh.clone());
        fresh
    }

    /// Answers `search_tools` with `arguments`: the best matches among `all` (the gateway's
    /// whole view, which the index is built over) that `usable` holds (what the caller may
    /// use), best first; or what the caller got wrong, to tell it.
    pub fn search(
        &self,
        all: Vec<Tool>,
        usable: &[Tool],
        arguments: &Value,
    ) -> Result<Vec<Tool>, String> {
        let (query, limit) = search_arguments(arguments).map_err(|e| e.to_string())?;
        if query.len() > MAX_QUERY_BYTES {
            return Err(format!(
                "search_tools: the query is {} bytes; say what you want to do in a few words \
                 (at most {MAX_QUERY_BYTES} bytes)",
                query.len()
            ));
        }
        let built = self.index(all);
        // Every hit, then the caller's: a tool it may not use is never returned, and never
        // takes the place of one it may.
        let hits = built.index.search(query, built.index.len());
        Ok(hits
            .iter()
            .filter_map(|hit| {
                usable
                    .iter()
                    .find(|t| t.name == hit.name && !self.pinned(t))
            })
            .take(limit)
            .cloned()
            .collect())
    }
}

/// The tools one session found, newest last, at most [`MAX_FOUND`].
#[derive(Default)]
pub struct Found {
    names: Mutex<VecDeque<String>>,
}

impl Found {
    /// Adds `names`; whether the set changed (then the session is told its list changed).
    pub fn add<'a>(&self, names: impl IntoIterator<Item = &'a str>) -> bool {
        let mut found = mcpmux::cli_support::sync::lock(&self.names);
        let mut changed = false;
        for name in names {
            if found.iter().any(|n| n == name) {
                continue;
            }
            if found.len() == MAX_FOUND {
                found.pop_front();
            }
            found.push_back(name.to_string());
            changed = true;
        }
        changed
    }

    /// Whether the tool named `name` was found.
    pub fn contains(&self, name: &str) -> bool {
        mcpmux::cli_support::sync::lock(&self.names)
            .iter()
            .any(|n| n == name)
    }
}

/// The meta-tools listed first: `search_tools` (telling how many tools it reaches) and
/// `call_tool`.
pub fn meta_tools(searchable: usize) -> [Tool; 2] {
    let mut search = mcpmux_agent::search::search_tool(searchable);
    search.description = Some(format!(
        "Search {searchable} more tools that are available but not listed. Returns the \
         definitions of the best matches (name, description, input schema); call one by its \
         name, or through call_tool. Search before saying a task cannot be done."
    ));
    let call = Tool::local(
        CALL_TOOL,
        json!({
            "type": "object",
            "properties": {
                "name": {
                    "type": "string",
                    "description": "The tool's name, as search_tools returned it."
                },
                "arguments": {
                    "type": "object",
                    "description": "The tool's arguments, as its input schema says."
                }
            },
            "required": ["name"]
        }),
    )
    .with_description(
        "Call a tool search_tools found (or any tool you may use) by its name, with its \
         arguments.",
    );
    [search, call]
}

/// Whether `name` is one of the meta-tools.
pub fn is_meta(name: &str) -> bool {
    name == SEARCH_TOOL || name == CALL_TOOL
}

/// The tool a `call_tool` call names and the arguments it passes on; or what is wrong.
pub fn call_target(
    arguments: Option<&Map<String, Value>>,
) -> Result<(String, Option<Map<String, Value>>), String> {
    let usage = "call_tool takes {\"name\": \"a tool's name\", \"arguments\": {...}}";
    let Some(arguments) = arguments else {
        return Err(usage.to_string());
    };
    let name = match arguments.get("name") {
        Some(Value::String(name)) if !is_meta(name) => name.clone(),
        Some(Value::String(name)) => {
            return Err(format!("call_tool calls other tools, not {name}"));
        }
        _ => return Err(usage.to_string()),
    };
    let passed = match arguments.get("arguments") {
        None | Some(Value::Null) => None,
        Some(Value::Object(passed)) => Some(passed.clone()),
        Some(_) => return Err(format!("call_tool: `arguments` must be an object; {usage}")),
    };
    Ok((name, passed))
}

/// `search_tools`' answer as text: the tools found as `tools/list` gives them, and one line
/// for the model.
pub fn answer(found: &[rmcp::model::Tool]) -> String {
    let note = if found.is_empty() {
        "No tool matched. Try other words: what the tool does and what it works on \
         (\"send email\", \"list issues\")."
            .to_string()
    } else {
        format!(
            "{} tools found; call one by its name (it is now in tools/list) or through {CALL_TOOL}.",
            found.len()
        )
    };
    json!({"tools": found, "note": note}).to_string()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn tool(server: &str, name: &str, description: &str) -> Tool {
        let mut tool = Tool::local(format!("mcp__{server}__{name}"), json!({"type": "object"}))
            .with_description(description);
        tool.server = server.to_string();
        tool.raw_name = name.to_string();
        tool
    }

    fn tools() -> Vec<Tool> {
        vec![
            tool("calendar", "create_event", "Create a calendar event"),
            tool("calendar", "delete_event", "Delete a calendar event"),
            tool("mail", "send_email", "Send an email message"),
            tool("files", "read_file", "Read a file from disk"),
        ]
    }

    #[test]
    fn a_search_never_returns_a_tool_the_caller_may_not_use() {
        let catalog = Catalog::new(&SearchOptions::default());
        let usable: Vec<Tool> = tools().into_iter().skip(1).collect();
        let found = catalog
            .search(tools(), &usable, &json!({"query": "create calendar event"}))
            .unwrap();
        let names: Vec<&str> = found.iter().map(|t| t.name.as_str()).collect();
        assert!(!names.contains(&"mcp__calendar__create_event"), "{names:?}");
        assert_eq!(names.first(), Some(&"mcp__calendar__delete_event"));
    }

    #[test]
    fn pinned_tools_are_not_searched_and_a_server_pin_takes_all_its_tools() {
        let catalog = Catalog::new(&SearchOptions::default().with_pin("calendar:*"));
        assert!(catalog.pinned(&tools()[1]));
        assert!(!catalog.pinned(&tools()[2]));
        let found = catalog
            .search(tools(), &tools(), &json!({"query": "calendar event"}))
            .unwrap();
        assert!(found.iter().all(|t| t.server != "calendar"), "{found:?}");
    }

    #[test]
    fn the_index_follows_a_changed_tool_set() {
        let catalog = Catalog::new(&SearchOptions::default());
        let query = json!({"query": "weather forecast"});
        assert!(
            catalog
                .search(tools(), &tools(), &query)
                .unwrap()
                .is_empty()
        );
        let mut more = tools();
        more.push(tool(
            "weather",
            "forecast",
            "The weather forecast for a city",
        ));
        let found = catalog.search(more.clone(), &more, &query).unwrap();
        assert_eq!(found[0].name, "mcp__weather__forecast");
    }

    #[test]
    fn an_overlong_query_or_a_bad_limit_is_refused_with_how_to_call() {
        let catalog = Catalog::new(&SearchOptions::default());
        let long = "word ".repeat(MAX_QUERY_BYTES);
        let error = catalog
            .search(tools(), &tools(), &json!({"query": long}))
            .unwrap_err();
        assert!(error.contains("at most 1024 bytes"), "{error}");
        let error = catalog
            .search(tools(), &tools(), &json!({"query": "x", "limit": 100_000}))
            .unwrap_err();
        assert!(error.contains("limit"), "{error}");
    }

    #[test]
    fn a_found_set_keeps_the_newest_finds_up_to_its_bound() {
        let found = Found::default();
        let names: Vec<String> = (0..MAX_FOUND + 10).map(|i| format!("t{i}")).collect();
        assert!(found.add(names.iter().map(String::as_str)));
        assert!(!found.add(["t70"]));
        assert!(!found.contains("t0"));
        assert!(found.contains(&format!("t{}", MAX_FOUND + 9)));
        assert_eq!(
            mcpmux::cli_support::sync::lock(&found.names).len(),
            MAX_FOUND
        );
    }

    #[test]
    fn call_tool_names_another_tool_with_object_arguments() {
        let args = json!({"name": "mcp__a__b", "arguments": {"x": 1}});
        let (name, passed) = call_target(args.as_object()).unwrap();
        assert_eq!(name, "mcp__a__b");
        assert_eq!(passed.unwrap()["x"], 1);
        let meta = json!({"name": "call_tool"});
        assert!(call_target(meta.as_object()).is_err());
        let bad = json!({"name": "mcp__a__b", "arguments": [1]});
        assert!(call_target(bad.as_object()).is_err());
        assert!(call_target(None).is_err());
    }
}
