//! Where each tool comes from, and one list out of many sources: on a name clash a custom
//! handler wins over a built-in, which wins over an MCP tool; local tools are listed first, then
//! by name; every drop is recorded with its reason. Knows nothing of how a source is called.

use std::collections::HashMap;
use std::fmt;

use crate::catalog::Tool;

/// What kind of source a tool comes from: decides precedence and ordering.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SourceKind {
    /// A built-in tool of the harness.
    Builtin,
    /// A custom handler registered by the harness (e.g. a REST API wrapped as tools).
    Custom,
    /// An MCP server.
    Mcp,
}

/// Where a tool in a merged list comes from.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ToolOrigin {
    /// A built-in tool.
    Builtin,
    /// A custom handler, by name.
    Custom {
        /// The handler's name.
        source: String,
    },
    /// An MCP server, by name.
    Mcp {
        /// The server's name.
        server: String,
    },
}

impl ToolOrigin {
    /// The kind of source.
    pub fn kind(&self) -> SourceKind {
        match self {
            ToolOrigin::Builtin => SourceKind::Builtin,
            ToolOrigin::Custom { .. } => SourceKind::Custom,
            ToolOrigin::Mcp { .. } => SourceKind::Mcp,
        }
    }

    /// Who wins a name clash: custom over built-in over MCP.
    fn precedence(&self) -> u8 {
        match self {
            ToolOrigin::Custom { .. } => 0,
            ToolOrigin::Builtin => 1,
            ToolOrigin::Mcp { .. } => 2,
        }
    }

    /// Listing order: local tools (built-in and custom) first, then MCP tools.
    fn group(&self) -> u8 {
        match self {
            ToolOrigin::Builtin | ToolOrigin::Custom { .. } => 0,
            ToolOrigin::Mcp { .. } => 1,
        }
    }
}

impl fmt::Display for ToolOrigin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ToolOrigin::Builtin => f.write_str("built-in tool"),
            ToolOrigin::Custom { source } => write!(f, "custom handler `{source}`"),
            ToolOrigin::Mcp { server } => write!(f, "MCP server `{server}`"),
        }
    }
}

/// A tool with where it comes from.
#[derive(Debug, Clone, PartialEq)]
pub struct SourcedTool {
    /// The tool.
    pub tool: Tool,
    /// Its source.
    pub origin: ToolOrigin,
}

/// A tool left out of a merged list because another took its name.
#[derive(Debug, Clone, PartialEq)]
pub struct Dropped {
    /// The tool left out.
    pub tool: Tool,
    /// Where it came from.
    pub origin: ToolOrigin,
    /// Where the tool that kept the name comes from.
    pub kept: ToolOrigin,
    /// Why, in words (for logs and `mcpmux servers`).
    pub reason: String,
}

/// The result of [`merge`]: one tool per exposed name, in listing order, and what was dropped.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Merged {
    /// Built-in and custom tools first, then MCP tools; each group sorted by exposed name.
    pub tools: Vec<SourcedTool>,
    /// Tools shadowed by another of the same exposed name.
    pub dropped: Vec<Dropped>,
}

/// Merges tools of every source into one stable list. On a name clash a custom handler wins
/// over a built-in, which wins over an MCP tool; among equals the first given wins. Every drop
/// is logged and recorded.
pub fn merge(candidates: impl IntoIterator<Item = SourcedTool>) -> Merged {
    let mut winners: Vec<SourcedTool> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut losers: Vec<SourcedTool> = Vec::new();
    for candidate in candidates {
        match index.get(&candidate.tool.name) {
            None => {
                index.insert(candidate.tool.name.clone(), winners.len());
                winners.push(candidate);
            }
            Some(&i) => {
                if candidate.origin.precedence() < winners[i].origin.precedence() {
                    let loser = std::mem::replace(&mut winners[i], candidate);
                    losers.push(loser);
                } else {
                    losers.push(candidate);
                }
            }
        }
    }
    let dropped = losers
        .into_iter()
        .map(|loser| {
            let kept = index
                .get(&loser.tool.name)
                .map(|&i| winners[i].origin.clone())
                .unwrap_or(ToolOrigin::Builtin);
            let reason = format!(
                "`{}` from {} is shadowed by the {} of the same name",
                loser.tool.name, loser.origin, kept
            );
            tracing::info!(tool = %loser.tool.name, origin = %loser.origin, kept = %kept, "tool dropped: {reason}");
            Dropped {
                tool: loser.tool,
                origin: loser.origin,
                kept,
                reason,
            }
        })
        .collect();
    winners.sort_by(|a, b| {
        a.origin
            .group()
            .cmp(&b.origin.group())
            .then_with(|| a.tool.name.cmp(&b.tool.name))
    });
    Merged {
        tools: winners,
        dropped,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn sourced(name: &str, origin: ToolOrigin) -> SourcedTool {
        SourcedTool {
            tool: Tool::local(name, json!({"type": "object"})),
            origin,
        }
    }

    fn mcp(server: &str) -> ToolOrigin {
        ToolOrigin::Mcp {
            server: server.into(),
        }
    }

    #[test]
    fn merge_orders_builtins_first_then_by_name_and_builtins_shadow_mcp() {
        let merged = merge(vec![
            sourced("mcp__b__z", mcp("b")),
            sourced("search", mcp("web")),
            sourced("mcp__a__y", mcp("a")),
            sourced("zap", ToolOrigin::Builtin),
            sourced("search", ToolOrigin::Builtin),
            sourced("ask", ToolOrigin::Builtin),
        ]);
        let names: Vec<(&str, SourceKind)> = merged
            .tools
            .iter()
            .map(|t| (t.tool.name.as_str(), t.origin.kind()))
            .collect();
        assert_eq!(
            names,
            [
                ("ask", SourceKind::Builtin),
                ("search", SourceKind::Builtin),
                ("zap", SourceKind::Builtin),
                ("mcp__a__y", SourceKind::Mcp),
                ("mcp__b__z", SourceKind::Mcp),
            ]
        );
        assert_eq!(merged.dropped.len(), 1);
        let drop = &merged.dropped[0];
        assert_eq!(drop.origin, mcp("web"));
        assert_eq!(drop.kept, ToolOrigin::Builtin);
        assert_eq!(
            drop.reason,
            "`search` from MCP server `web` is shadowed by the built-in tool of the same name"
        );
        // Stable whatever the input order.
        let again = merge(vec![
            sourced("ask", ToolOrigin::Builtin),
            sourced("search", ToolOrigin::Builtin),
            sourced("mcp__a__y", mcp("a")),
            sourced("zap", ToolOrigin::Builtin),
            sourced("search", mcp("web")),
            sourced("mcp__b__z", mcp("b")),
        ]);
        assert_eq!(again.tools, merged.tools);
    }

    #[test]
    fn custom_beats_builtin_and_first_among_equals_wins() {
        let custom = ToolOrigin::Custom {
            source: "rest".into(),
        };
        let merged = merge(vec![
            sourced("fetch", ToolOrigin::Builtin),
            sourced("fetch", custom.clone()),
            sourced("x", mcp("one")),
            sourced("x", mcp("two")),
        ]);
        assert_eq!(merged.tools[0].origin, custom);
        assert_eq!(merged.tools[1].origin, mcp("one"));
        let reasons: Vec<&str> = merged.dropped.iter().map(|d| d.reason.as_str()).collect();
        assert_eq!(
            reasons,
            [
                "`fetch` from built-in tool is shadowed by the custom handler `rest` of the same name",
                "`x` from MCP server `two` is shadowed by the MCP server `one` of the same name",
            ]
        );
    }
}
