//! The names tools and prompts are served under ([`Naming`]): the hub's `mcp__SERVER__NAME`;
//! short ones (`mcpmux serve --names short`: `SERVER__NAME`, fitted to a length) for clients
//! that put a prefix of their own before them, as Claude Code does; or, in pass-through mode
//! (`mcpmux serve --passthrough`), with exactly one upstream server, the server's own names,
//! so the gateway can stand in front of a server without its clients noticing. Owns the
//! naming both ways — the name served for a hub tool or prompt, and the hub tool a served name
//! calls — the one-server rule, and which of the server's tool names may be served as they are
//! (valid MCP tool names: [`Refusals`]). Everything else (validation, policy, resilience) stays
//! on the hub's path: a call still goes through `Hub::call_with` under the hub's own name.
//! Knows nothing of sessions or transports.

use std::collections::HashSet;
use std::sync::Mutex;

/// Most characters of a refused name a warning shows (escaped): a name may be kilobytes.
const WARN_NAME_CHARS: usize = 80;

/// Why pass-through mode cannot serve this configuration.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PassthroughError {
    /// Pass-through keeps names unprefixed, which only one server can do without clashes.
    #[error(
        "--passthrough serves exactly one upstream server under its own tool names, but {count} \
         servers are configured ({names}); keep one (--config FILE with a single server, or \
         `enabled = false` on the others), or serve without --passthrough (names \
         mcp__SERVER__TOOL)"
    )]
    NotOneServer {
        /// How many servers are configured.
        count: usize,
        /// Their names, comma-separated (`none` when there are none).
        names: String,
    },
}

/// Checks that `servers` (the configured server names) hold exactly one.
pub fn check_one_server(servers: &[String]) -> Result<(), PassthroughError> {
    if servers.len() == 1 {
        return Ok(());
    }
    let names = if servers.is_empty() {
        "none".to_owned()
    } else {
        servers.join(", ")
    };
    Err(PassthroughError::NotOneServer {
        count: servers.len(),
        names,
    })
}

/// The most characters a short name (`--names short`) has by default: Claude Code's 64 less
/// the `mcp__mcpmux__` it puts before the tools of an entry named `mcpmux` (13), so what its
/// model is handed still fits the providers' 64.
pub const CLAUDE_CODE_SHORT_NAME_LEN: usize = 64 - "mcp__mcpmux__".len();

/// How names are served: the hub's (namespaced), short ones for clients that add a prefix of
/// their own, or, in pass-through mode, the server's own.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Naming {
    /// The hub's exposed names, `mcp__server__tool`.
    #[default]
    Hub,
    /// `server__tool`, fitted to this many characters ([`mcpmux::cli_support::naming::short_names`]).
    Short(usize),
    /// The one server's own names (`--passthrough`).
    Own,
}

impl Naming {
    /// The naming a gateway's options ask for: the server's own names in pass-through mode,
    /// else short names fitted to `short_names` when asked, else the hub's.
    pub fn of(passthrough: bool, short_names: Option<usize>) -> Self {
        match (passthrough, short_names) {
            (true, _) => Self::Own,
            (false, Some(max_len)) => Self::Short(max_len),
            (false, None) => Self::Hub,
        }
    }

    /// Does a served name differ from the hub's (so a call's name must be looked up)?
    pub fn renames(self) -> bool {
        self != Self::Hub
    }

    /// The names `tools` are served under, in the same order.
    fn names(self, tools: &[mcpmux::Tool]) -> Vec<String> {
        match self {
            Self::Hub => tools.iter().map(|tool| tool.name.clone()).collect(),
            Self::Own => tools.iter().map(|tool| tool.raw_name.clone()).collect(),
            Self::Short(max_len) => {
                let exposed: Vec<&str> = tools.iter().map(|tool| tool.name.as_str()).collect();
                mcpmux::cli_support::naming::short_names(&exposed, max_len)
            }
        }
    }

    /// The hub's name for the tool served as `served`, among `tools` (the tools served). In
    /// pass-through and short mode a name not served now (its server is down, its breaker
    /// open) is given the hub's name for it (`Hub::exposed_tool_name`, or the short name
    /// with `mcp__` put back), so the hub answers with what became of the server; any other
    /// name is handed on as it is, and the hub answers it as an unknown tool.
    pub fn hub_tool(self, served: &str, tools: &[mcpmux::Tool], hub: &mcpmux::Hub) -> String {
        if self == Self::Hub {
            return served.to_owned();
        }
        let names = self.names(tools);
        if let Some(i) = names.iter().position(|name| name == served) {
            return tools[i].name.clone();
        }
        // A name never served stays unknown: an invalid one (a refused tool's own name).
        if !mcpmux::cli_support::naming::is_mcp_tool_name(served) {
            return served.to_owned();
        }
        if let Self::Short(_) = self {
            return format!("mcp__{served}");
        }
        let servers = hub.servers();
        let [server] = servers.as_slice() else {
            return served.to_owned();
        };
        hub.exposed_tool_name(&server.name, served)
            .unwrap_or_else(|| served.to_owned())
    }

    /// The tool served as `served`, as a downstream client lists it.
    pub fn served_tool(
        self,
        served: &str,
        tools: &[mcpmux::Tool],
        hub: &mcpmux::Hub,
    ) -> Option<rmcp::model::Tool> {
        if self == Self::Hub {
            let tool = hub.tool(served)?;
            return Some(mcpmux::rmcp_model::tool(&tool, tool.name.clone()));
        }
        let names = self.names(tools);
        let i = names.iter().position(|name| name == served)?;
        Some(mcpmux::rmcp_model::tool(&tools[i], served.to_owned()))
    }

    /// `tools` paired with the names they are served under, named over the whole list (so a
    /// short name's clash is settled the same on every page).
    pub fn named(self, tools: Vec<mcpmux::Tool>) -> Vec<(mcpmux::Tool, String)> {
        let names = self.names(&tools);
        tools.into_iter().zip(names).collect()
    }

    /// The name `prompt` is served under: the server's own, the hub's exposed name, or that
    /// without its `mcp__` (prompt names have no length limit to fit).
    pub fn prompt_name(self, prompt: &mcpmux::Prompt) -> &str {
        match self {
            Self::Own => &prompt.name,
            Self::Hub => &prompt.exposed_name,
            Self::Short(_) => prompt
                .exposed_name
                .strip_prefix("mcp__")
                .unwrap_or(&prompt.exposed_name),
        }
    }

    /// The prompt served as `served`: in pass-through mode the one server's prompt of that
    /// own name, else the one the hub exposes under it (`Hub::prompt_named`; in short mode
    /// with its `mcp__` put back).
    pub async fn hub_prompt(
        self,
        hub: &mcpmux::Hub,
        served: &str,
    ) -> mcpmux::Result<Option<mcpmux::Prompt>> {
        match self {
            Self::Hub => hub.prompt_named(served).await,
            Self::Short(_) => match hub.prompt_named(&format!("mcp__{served}")).await? {
                Some(prompt) => Ok(Some(prompt)),
                None => Ok(hub
                    .prompt_named(served)
                    .await?
                    .filter(|p| !p.exposed_name.starts_with("mcp__"))),
            },
            Self::Own => {
                let listing = hub.prompts(None).await?;
                Ok(listing.items.into_iter().find(|p| p.name == served))
            }
        }
    }
}

/// The tools whose own names pass-through mode refuses to serve: names that are not valid MCP
/// tool names ([`mcpmux::cli_support::naming::is_mcp_tool_name`]: NUL, newlines, bidi overrides, emoji, `/`, over 64
/// characters), which a client would be handed as they are. Refused rather than escaped: an
/// escaped name is not the server's, which pass-through promises, and could equal another
/// tool's. Each refused name is warned about once while its server keeps listing it.
#[derive(Debug, Default)]
pub struct Refusals {
    /// The `(server, name)`s refused at the last look: bounded by one tool list.
    last: Mutex<HashSet<(String, String)>>,
}

impl Refusals {
    /// `tools` without those whose own names cannot be served, each newly refused one warned
    /// about with its server and its name escaped.
    pub fn servable(&self, tools: Vec<mcpmux::Tool>) -> Vec<mcpmux::Tool> {
        let (servable, refused): (Vec<_>, Vec<_>) = tools
            .into_iter()
            .partition(|tool| mcpmux::cli_support::naming::is_mcp_tool_name(&tool.raw_name));
        let refused: HashSet<(String, String)> = refused
            .into_iter()
            .map(|tool| (tool.server, tool.raw_name))
            .collect();
        let mut last = mcpmux::cli_support::sync::lock(&self.last);
        for (server, name) in refused.difference(&last) {
            tracing::warn!(
                server = ?server,
                name = %escaped(name),
                "--passthrough does not serve this tool: its name is not a valid MCP tool name \
                 (1-64 of A-Z a-z 0-9 _ - .); rename it in the server, or serve without \
                 --passthrough (names mcp__SERVER__TOOL)"
            );
        }
        *last = refused;
        servable
    }
}

/// `name` as a log line may show it: escaped as Rust escapes a string (NUL, newlines, bidi
/// overrides), cut to [`WARN_NAME_CHARS`] characters.
fn escaped(name: &str) -> String {
    let chars = name.chars().count();
    let shown: String = name.chars().take(WARN_NAME_CHARS).collect();
    let mut text = format!("{shown:?}");
    if chars > WARN_NAME_CHARS {
        text.push_str(&format!(" (cut: {chars} characters)"));
    }
    text
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn only_one_server_may_pass_through() {
        assert!(check_one_server(&["everything".into()]).is_ok());
        let two = check_one_server(&["a".into(), "b".into()]).unwrap_err();
        let text = two.to_string();
        assert!(text.contains("2 servers are configured (a, b)"), "{text}");
        let none = check_one_server(&[]).unwrap_err().to_string();
        assert!(none.contains("0 servers are configured (none)"), "{none}");
    }

    #[test]
    fn a_refused_name_is_shown_escaped_and_cut() {
        assert_eq!(escaped("a\0b\nc\u{202e}d"), r#""a\0b\nc\u{202e}d""#);
        let long = escaped(&"\u{1f600}".repeat(300));
        assert!(long.ends_with(" (cut: 300 characters)"), "{long}");
        assert_eq!(long.matches('\u{1f600}').count(), WARN_NAME_CHARS);
    }
}
