//! Windsurf's `~/.codeium/windsurf/mcp_config.json`: `mcpServers`.
//!
//! Fields from Windsurf's MCP docs (docs.windsurf.com/windsurf/cascade/mcp, "Configuring
//! mcp_config.json"): `command`, `args`, `env` for a local server; `serverUrl` (or `url`) and
//! `headers` for a remote one (streamable HTTP); `disabled` and `disabledTools`, which
//! Windsurf's MCP panel writes; `${env:NAME}` in values.

use serde_json::{Map, Value};

use super::{Keys, Reader, string_list, take};
use crate::config::fields::{Fields, RawTransport};
use crate::config::{ConfigError, ServerSpec};

/// How mcpmux reads Windsurf's `mcp_config.json`: its `mcpServers`.
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
    let server_url = take(map, "serverUrl");
    let mut raw = RawTransport::take(map);
    if let Some(url) = server_url {
        if raw.url.is_some() {
            return Err(fields.invalid(
                Some("serverUrl"),
                "both \"serverUrl\" and \"url\" are set: keep one",
            ));
        }
        raw.url = Some(url);
    }
    let transport = fields.transport(raw)?;
    let mut spec = ServerSpec::new(fields.server(), transport);
    if let Some(disabled) = take(map, "disabled") {
        spec.enabled = !fields.boolean("disabled", disabled)?;
    }
    if let Some(tools) = take(map, "disabledTools") {
        spec.options.tools.deny = string_list(fields, "disabledTools", tools)?;
    }
    Ok(spec)
}
