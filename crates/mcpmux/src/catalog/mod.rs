//! Tool records and the table that routes an exposed name to `(server, raw tool name)`.
//! Routing is a lookup, never a parse. Knows nothing of connections or transports.

pub mod filter;
pub mod merge;
pub mod naming;
pub mod scope;

use std::collections::HashMap;

use serde::Serialize;
use serde_json::Value;

/// A tool as a harness sees it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Tool {
    /// The exposed, namespaced name (`mcp__server__tool`): what a model calls.
    pub name: String,
    /// The server it belongs to.
    pub server: String,
    /// The name the server knows it by.
    pub raw_name: String,
    /// A human title, if the server gave one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// JSON Schema of its arguments.
    #[serde(rename = "inputSchema")]
    pub input_schema: Value,
    /// JSON Schema of its `structuredContent`, if declared.
    #[serde(rename = "outputSchema", skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// The server's hints about side effects.
    pub annotations: ToolAnnotations,
    /// Why this tool cannot be called, when its input schema is beyond the bounds the hub
    /// keeps (a `$ref` cycle, an exponential expansion): listed so the reason is seen, left
    /// out of provider exports, and every call is refused with this reason.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unusable: Option<String>,
    /// Listed from the tool cache: its server has not listed its tools in this run yet (it
    /// is lazy and idle, or still starting). Calling it starts the server.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub cached: bool,
}

/// The behaviour hints of MCP's `ToolAnnotations`; absent means the server did not say.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ToolAnnotations {
    /// Does not modify its environment.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// May perform destructive updates.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// Calling twice with the same arguments has no extra effect.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// Interacts with an open world (the network).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
}

/// A tool as one server lists it, before it gets an exposed name.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ServerTool {
    pub raw_name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    pub input_schema: Value,
    pub output_schema: Option<Value>,
    pub annotations: ToolAnnotations,
}

impl ServerTool {
    /// Reads an MCP `Tool` in its JSON form, its schemas moved out, not copied (a listing of
    /// many cached lists held each schema twice while it read them); `None` when it has no
    /// name.
    pub(crate) fn from_json(mut value: Value) -> Option<Self> {
        let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
        let mut take = |k: &str| value.get_mut(k).map(Value::take);
        let input_schema = take("inputSchema");
        let output_schema = take("outputSchema");
        let hint = |k: &str| {
            value
                .get("annotations")
                .and_then(|a| a.get(k))
                .and_then(Value::as_bool)
        };
        Some(ServerTool {
            raw_name: text(&value, "name")?,
            title: text(&value, "title")
                .or_else(|| value.get("annotations").and_then(|a| text(a, "title"))),
            description: text(&value, "description"),
            input_schema: input_schema.unwrap_or_else(|| serde_json::json!({"type": "object"})),
            output_schema: output_schema.filter(|v| !v.is_null()),
            annotations: ToolAnnotations {
                read_only_hint: hint("readOnlyHint"),
                destructive_hint: hint("destructiveHint"),
                idempotent_hint: hint("idempotentHint"),
                open_world_hint: hint("openWorldHint"),
            },
        })
    }
}

impl ServerTool {
    /// The MCP `Tool` JSON form [`ServerTool::from_json`] reads back.
    pub(crate) fn to_json(&self) -> Value {
        let mut tool = serde_json::Map::new();
        tool.insert("name".into(), Value::from(self.raw_name.as_str()));
        if let Some(title) = &self.title {
            tool.insert("title".into(), Value::from(title.as_str()));
        }
        if let Some(description) = &self.description {
            tool.insert("description".into(), Value::from(description.as_str()));
        }
        tool.insert("inputSchema".into(), self.input_schema.clone());
        if let Some(output) = &self.output_schema {
            tool.insert("outputSchema".into(), output.clone());
        }
        let annotations = serde_json::to_value(&self.annotations).unwrap_or_default();
        if annotations.as_object().is_some_and(|a| !a.is_empty()) {
            tool.insert("annotations".into(), annotations);
        }
        Value::Object(tool)
    }
}

/// Every exposed tool in listing order (local tools first, then MCP tools, each by name),
/// where each comes from, what the hub attached to it (its compiled input schema, resolved
/// once per catalog rather than per call), and the lookup table.
#[derive(Debug)]
pub(crate) struct Catalog<V = ()> {
    tools: Vec<Tool>,
    origins: Vec<merge::ToolOrigin>,
    attached: Vec<V>,
    by_name: HashMap<String, usize>,
}

impl<V> Default for Catalog<V> {
    fn default() -> Self {
        Catalog {
            tools: Vec::new(),
            origins: Vec::new(),
            attached: Vec::new(),
            by_name: HashMap::new(),
        }
    }
}

impl Catalog {
    /// The one tool list of a hub: every server's tools named and passed through that
    /// server's filter, merged with the harness's local tools (see [`merge::merge`]). Also
    /// what the merge dropped.
    pub(crate) fn assemble<'a>(
        servers: impl IntoIterator<Item = (&'a str, &'a [ServerTool], &'a filter::NameFilter)>,
        local: &[merge::SourcedTool],
    ) -> (Self, Vec<merge::Dropped>) {
        let servers: Vec<_> = servers.into_iter().collect();
        let filters: HashMap<&str, &filter::NameFilter> =
            servers.iter().map(|(name, _, f)| (*name, *f)).collect();
        let visible = Self::mcp_tools(servers.iter().map(|(name, tools, _)| (*name, *tools)))
            .into_iter()
            .filter(|tool| {
                filters
                    .get(tool.server.as_str())
                    .is_none_or(|f| f.allows(&tool.raw_name, &tool.name))
            });
        let sourced = local
            .iter()
            .cloned()
            .chain(visible.map(|tool| merge::SourcedTool {
                origin: merge::ToolOrigin::Mcp {
                    server: tool.server.clone(),
                },
                tool,
            }));
        let merged = merge::merge(sourced);
        (Self::from_sourced(merged.tools), merged.dropped)
    }

    /// Names the tools of every server given, sorted by exposed name.
    pub(crate) fn mcp_tools<'a>(
        servers: impl IntoIterator<Item = (&'a str, &'a [ServerTool])>,
    ) -> Vec<Tool> {
        let entries: Vec<(&str, &ServerTool)> = servers
            .into_iter()
            .flat_map(|(server, tools)| tools.iter().map(move |t| (server, t)))
            .collect();
        let keys: Vec<(&str, &str)> = entries
            .iter()
            .map(|(s, t)| (*s, t.raw_name.as_str()))
            .collect();
        let names = naming::assign(&keys);
        let mut tools: Vec<Tool> = entries
            .into_iter()
            .zip(names)
            .map(|((server, t), name)| Tool {
                name,
                server: server.to_string(),
                raw_name: t.raw_name.clone(),
                title: t.title.clone(),
                description: t.description.clone(),
                input_schema: t.input_schema.clone(),
                output_schema: t.output_schema.clone(),
                annotations: t.annotations.clone(),
                unusable: None,
                cached: false,
            })
            .collect();
        tools.sort_by(|a, b| a.name.cmp(&b.name));
        tools
    }

    /// Names and indexes the tools of every server given (MCP tools only).
    #[cfg(test)]
    pub(crate) fn build<'a>(
        servers: impl IntoIterator<Item = (&'a str, &'a [ServerTool])>,
    ) -> Self {
        Self::from_sourced(
            Self::mcp_tools(servers)
                .into_iter()
                .map(|tool| merge::SourcedTool {
                    origin: merge::ToolOrigin::Mcp {
                        server: tool.server.clone(),
                    },
                    tool,
                }),
        )
    }

    /// Indexes an already merged list, keeping its order.
    pub(crate) fn from_sourced(tools: impl IntoIterator<Item = merge::SourcedTool>) -> Self {
        let (tools, origins): (Vec<Tool>, Vec<_>) =
            tools.into_iter().map(|s| (s.tool, s.origin)).unzip();
        let by_name = tools
            .iter()
            .enumerate()
            .map(|(i, t)| (t.name.clone(), i))
            .collect();
        let attached = vec![(); tools.len()];
        Catalog {
            tools,
            origins,
            attached,
            by_name,
        }
    }

    /// Attaches to each tool what `attach` makes of it (it may mark the tool, say, unusable).
    pub(crate) fn attach<V>(self, mut attach: impl FnMut(&mut Tool) -> V) -> Catalog<V> {
        let mut tools = self.tools;
        let attached = tools.iter_mut().map(&mut attach).collect();
        Catalog {
            tools,
            origins: self.origins,
            attached,
            by_name: self.by_name,
        }
    }
}

impl<V> Catalog<V> {
    /// What was attached to the tool exposed as `name`.
    pub(crate) fn attached(&self, name: &str) -> Option<&V> {
        self.by_name.get(name).map(|&i| &self.attached[i])
    }

    /// The tool exposed as `name` and where it comes from.
    pub(crate) fn get_with_origin(&self, name: &str) -> Option<(&Tool, &merge::ToolOrigin)> {
        self.by_name
            .get(name)
            .map(|&i| (&self.tools[i], &self.origins[i]))
    }

    /// The tool exposed as `name`.
    pub(crate) fn get(&self, name: &str) -> Option<&Tool> {
        self.by_name.get(name).map(|&i| &self.tools[i])
    }

    /// All tools, sorted by exposed name.
    pub(crate) fn tools(&self) -> &[Tool] {
        &self.tools
    }

    /// The closest existing name to a mistyped one, if any is close.
    pub(crate) fn suggest(&self, name: &str) -> Option<String> {
        // Accept the raw tool name or a `server__tool` spelling too.
        if let Some(t) = self
            .tools
            .iter()
            .find(|t| t.raw_name == name || format!("{}__{}", t.server, t.raw_name) == name)
        {
            return Some(t.name.clone());
        }
        self.tools
            .iter()
            .map(|t| (edit_distance(&t.name, name), t))
            .filter(|(d, _)| *d <= 3)
            .min_by_key(|(d, _)| *d)
            .map(|(_, t)| t.name.clone())
    }
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

/// The `server` field of tools that no MCP server provides.
pub const BUILTIN_SOURCE: &str = "builtin";

impl Tool {
    /// A tool served in-process (built-in or custom handler): exposed and raw name are both
    /// `name`, its source is [`BUILTIN_SOURCE`].
    pub fn local(name: impl Into<String>, input_schema: Value) -> Tool {
        let name = name.into();
        Tool {
            raw_name: name.clone(),
            name,
            server: BUILTIN_SOURCE.to_string(),
            title: None,
            description: None,
            input_schema,
            output_schema: None,
            annotations: ToolAnnotations::default(),
            unusable: None,
            cached: false,
        }
    }

    /// Builder-style: set the description.
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Builder-style: set the human title.
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Builder-style: set the output schema.
    pub fn with_output_schema(mut self, schema: Value) -> Self {
        self.output_schema = Some(schema);
        self
    }

    /// Builder-style: set the side-effect hints.
    pub fn with_annotations(mut self, annotations: ToolAnnotations) -> Self {
        self.annotations = annotations;
        self
    }

    /// Builder-style: set the source name (a custom handler's name; a server's name).
    pub fn with_source(mut self, source: impl Into<String>) -> Self {
        self.server = source.into();
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(name: &str) -> ServerTool {
        ServerTool::from_json(json!({"name": name, "inputSchema": {"type": "object"}}))
            .unwrap_or_else(|| panic!("tool {name}"))
    }

    #[test]
    fn routes_by_exposed_name_and_sorts() {
        let a = [tool("zeta"), tool("alpha")];
        let b = [tool("alpha")];
        let catalog = Catalog::build([("srv", &a[..]), ("other", &b[..])]);
        let names: Vec<&str> = catalog.tools().iter().map(|t| t.name.as_str()).collect();
        assert_eq!(
            names,
            ["mcp__other__alpha", "mcp__srv__alpha", "mcp__srv__zeta"]
        );
        let t = catalog
            .get("mcp__srv__zeta")
            .map(|t| (t.server.as_str(), t.raw_name.as_str()));
        assert_eq!(t, Some(("srv", "zeta")));
        assert!(catalog.get("srv__zeta").is_none());
    }

    #[test]
    fn suggests_the_exposed_name_for_near_misses() {
        let a = [tool("echo")];
        let catalog = Catalog::build([("test", &a[..])]);
        assert_eq!(catalog.suggest("echo").as_deref(), Some("mcp__test__echo"));
        assert_eq!(
            catalog.suggest("mcp__test__ecoh").as_deref(),
            Some("mcp__test__echo")
        );
        assert_eq!(catalog.suggest("something_else"), None);
    }

    #[test]
    fn reads_annotations_and_tolerates_missing_schema() {
        let t = ServerTool::from_json(json!({
            "name": "rm", "annotations": {"destructiveHint": true, "title": "Remove"}
        }));
        let t = t.unwrap_or_else(|| panic!("parsed"));
        assert_eq!(t.annotations.destructive_hint, Some(true));
        assert_eq!(t.title.as_deref(), Some("Remove"));
        assert_eq!(t.input_schema, json!({"type": "object"}));
        assert!(ServerTool::from_json(json!({"description": "nameless"})).is_none());
    }
}
