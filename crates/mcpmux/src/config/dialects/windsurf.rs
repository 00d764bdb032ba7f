//! Windsurf's `~/.codeium/windsurf/mcp_config.json`: `mcpServers`.
//!
//! Fields from Windsurf's MCP docs (docs.windsurf.com/windsurf/cascade/mcp, "Configuring
//! mcp_config.json"): `command`, `args`, `env` for a local server; `serverUrl` (or `url`) and
//! `headers` for a remote one (streamable HTTP); `disabled` and `disabledTools`, which
//! Windsurf's MCP panel writes; `${env:NAME}` in values.

use serde_json::{Map, Value};

use super::{Keys, each_server, json_root, string_list, take};
use crate::config::entry::FileEntries;
use crate::config::fields::{Context, Fields, RawTransport};
use crate::config::{ConfigError, ServerSpec};

const KEYS: Keys = Keys {
    silent: &["description"],
    unhonoured: &[],
};

/// Reads the `mcpServers` of Windsurf's `mcp_config.json`.
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
