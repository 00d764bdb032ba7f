//! Cursor's `mcp.json` (`~/.cursor/mcp.json`, a project's `.cursor/mcp.json`): `mcpServers`.
//!
//! Fields from Cursor's MCP docs (cursor.com/docs/context/mcp, "Configuration" and "Config
//! interpolation"): `type` (`stdio`, `sse`, `http`; a `url` alone is a remote server),
//! `command`, `args`, `env`, `envFile`, `url`, `headers`, `auth` (OAuth), with
//! `${env:NAME}`, `${workspaceFolder}`, `${userHome}` in values.
//!
//! `auth` is Cursor's static OAuth client (`CLIENT_ID`, `CLIENT_SECRET`, `scopes`; the
//! endpoints come from discovery, as in mcpmux): each is the same key of mcpmux's `oauth`.

use serde_json::{Map, Value};

use super::oauth::{self, Key};
use super::{Keys, Reader, env_file, take};
use crate::config::fields::{Fields, RawTransport};
use crate::config::{ConfigError, ServerSpec};

/// How mcpmux reads one Cursor `mcp.json`: its `mcpServers`.
pub(crate) const READER: Reader = Reader {
    field: "mcpServers",
    keys: Keys {
        silent: &["description"],
        unhonoured: &[],
    },
    read: entry,
};

/// The keys of Cursor's `auth` object, as mcpmux's `oauth` names them.
const AUTH_KEYS: &[(&str, Key)] = &[
    ("CLIENT_ID", Key::Ours("clientId")),
    ("CLIENT_SECRET", Key::Ours("clientSecret")),
    ("scopes", Key::Ours("scopes")),
];

/// One Cursor entry: [`server`]'s fields, plus `auth`.
fn entry(
    fields: &Fields<'_>,
    map: &mut Map<String, Value>,
    warnings: &mut Vec<ConfigError>,
) -> Result<ServerSpec, ConfigError> {
    let spec = server(fields, map, warnings)?;
    let auth = match take(map, "auth") {
        Some(value) => oauth::read(fields, "auth", value, AUTH_KEYS, &spec.transport, warnings)?,
        None => Default::default(),
    };
    Ok(spec.with_auth(auth))
}

/// One entry: Claude's transport fields, plus `envFile` (VS Code's entries too).
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
