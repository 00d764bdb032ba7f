//! Claude Desktop's `claude_desktop_config.json` (macOS `~/Library/Application Support/Claude/`,
//! Windows `%APPDATA%\Claude\`, Linux `$XDG_CONFIG_HOME/Claude/`, else `~/.config/Claude/`):
//! `mcpServers`.
//!
//! Fields from the MCP quickstart for Claude Desktop (modelcontextprotocol.io/quickstart/user):
//! `command`, `args`, `env` of a local server. Claude Desktop expands no variables in them, so
//! none are expanded here; remote servers are added in its Connectors settings, not this file.
//! Its other top-level keys (`globalShortcut`, preferences) are not mcpmux's concern.

use serde_json::{Map, Value};

use super::{Keys, each_server, json_root};
use crate::config::entry::FileEntries;
use crate::config::fields::{Context, Fields, RawTransport};
use crate::config::{ConfigError, ServerSpec};

const KEYS: Keys = Keys {
    silent: &["description"],
    unhonoured: &[],
};

/// Reads the `mcpServers` of Claude Desktop's config.
pub(crate) fn parse(text: &str, cx: &Context<'_>) -> Result<FileEntries, ConfigError> {
    let mut root = json_root(text, cx)?;
    let mut file = FileEntries::default();
    each_server(
        root.remove("mcpServers"),
        "mcpServers",
        cx,
        &KEYS,
        &mut file,
        &server,
    );
    Ok(file)
}

fn server(
    fields: &Fields<'_>,
    map: &mut Map<String, Value>,
    _warnings: &mut Vec<ConfigError>,
) -> Result<ServerSpec, ConfigError> {
    let transport = fields.transport(RawTransport::take(map))?;
    Ok(ServerSpec::new(fields.server(), transport))
}
