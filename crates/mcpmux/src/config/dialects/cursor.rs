//! Cursor's `mcp.json` (`~/.cursor/mcp.json`, a project's `.cursor/mcp.json`): `mcpServers`.
//!
//! Fields from Cursor's MCP docs (cursor.com/docs/context/mcp, "Configuration" and "Config
//! interpolation"): `type` (`stdio`, `sse`, `http`; a `url` alone is a remote server),
//! `command`, `args`, `env`, `envFile`, `url`, `headers`, `auth` (OAuth), with
//! `${env:NAME}`, `${workspaceFolder}`, `${userHome}` in values.

use serde_json::{Map, Value};

use super::{Keys, Reader, env_file, take};
use crate::config::fields::{Fields, RawTransport};
use crate::config::{ConfigError, ServerSpec};

/// How mcpmux reads one Cursor `mcp.json`: its `mcpServers`.
pub(crate) const READER: Reader = Reader {
    field: "mcpServers",
    keys: Keys {
        silent: &["description"],
        unhonoured: &[(
            "auth",
            "set the OAuth client in mcpmux.toml: [servers.NAME.oauth] clientId = ..., clientSecret = ...",
        )],
    },
    read: server,
};

/// One entry: Claude's transport fields, plus `envFile`.
pub(crate) fn server(
    fields: &Fields<'_>,
    map: &mut Map<String, Value>,
    _warnings: &mut Vec<ConfigError>,
) -> Result<ServerSpec, ConfigError> {
    let raw = RawTransport::take(map);
    let mut transport = fields.transport(raw)?;
    if let Some(path) = take(map, "envFile") {
        env_file(fields, path, &mut transport)?;
    }
    Ok(ServerSpec::new(fields.server(), transport))
}
