//! Cursor's `mcp.json` (`~/.cursor/mcp.json`, a project's `.cursor/mcp.json`): `mcpServers`.
//!
//! Fields from Cursor's MCP docs (cursor.com/docs/context/mcp, "Configuration" and "Config
//! interpolation"): `type` (`stdio`, `sse`, `http`; a `url` alone is a remote server),
//! `command`, `args`, `env`, `envFile`, `url`, `headers`, `auth` (OAuth), with
//! `${env:NAME}`, `${workspaceFolder}`, `${userHome}` in values.

use serde_json::{Map, Value};

use super::{Keys, each_server, env_file, json_root, take};
use crate::config::entry::FileEntries;
use crate::config::fields::{Context, Fields, RawTransport};
use crate::config::{ConfigError, ServerSpec};

const KEYS: Keys = Keys {
    silent: &["description"],
    unhonoured: &[(
        "auth",
        "set the OAuth client in mcpmux.toml: [servers.NAME.oauth] clientId = ..., clientSecret = ...",
    )],
};

/// Reads the `mcpServers` of one Cursor `mcp.json`.
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
