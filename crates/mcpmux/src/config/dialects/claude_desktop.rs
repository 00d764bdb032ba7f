//! Claude Desktop's `claude_desktop_config.json` (macOS `~/Library/Application Support/Claude/`,
//! Windows `%APPDATA%\Claude\`, Linux `$XDG_CONFIG_HOME/Claude/`, else `~/.config/Claude/`):
//! `mcpServers`.
//!
//! Fields from the MCP quickstart for Claude Desktop (modelcontextprotocol.io/quickstart/user):
//! `command`, `args`, `env` of a local server. Claude Desktop expands no variables in them, so
//! none are expanded here; remote servers are added in its Connectors settings, not this file.
//! Its other top-level keys (`globalShortcut`, preferences) are not mcpmux's concern.

use serde_json::{Map, Value};

use super::{Keys, Reader};
use crate::config::fields::{Fields, RawTransport};
use crate::config::{ConfigError, ServerSpec};

/// How mcpmux reads Claude Desktop's config: its `mcpServers`.
pub(crate) const READER: Reader = Reader {
    field: "mcpServers",
    keys: Keys {
        silent: &["description"],
        unhonoured: &[],
    },
    read: server,
};

fn server(
    fields: &Fields<'_>,
    map: &mut Map<String, Value>,
    _warnings: &mut Vec<ConfigError>,
) -> Result<ServerSpec, ConfigError> {
    let transport = fields.transport(RawTransport::take(map))?;
    Ok(ServerSpec::new(fields.server(), transport))
}
