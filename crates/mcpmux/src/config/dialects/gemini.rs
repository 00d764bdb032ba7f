//! Gemini CLI's `settings.json` (`~/.gemini/settings.json`, a project's
//! `.gemini/settings.json`): `mcpServers`, and the `mcp.allowed` / `mcp.excluded` name lists.
//!
//! Fields from Gemini CLI's MCP docs (geminicli.com/docs/tools/mcp-server, "Configuration
//! properties"): `command`, `args`, `env`, `cwd` for a stdio server; `url` (SSE) or `httpUrl`
//! (streamable HTTP) with `headers` for a remote one; `timeout` (milliseconds, per request),
//! `trust`, `includeTools`, `excludeTools`, `description`; `$NAME` / `${NAME}` in values, an
//! unset variable kept as written (geminicli.com/docs/cli/configuration).

use serde_json::{Map, Value};

use super::{Keys, Reader, duration, string_list, take};
use crate::config::entry::{Entry, FileEntries};
use crate::config::fields::{Fields, RawTransport};
use crate::config::{ConfigError, ServerSpec};

/// How mcpmux reads one Gemini CLI `settings.json`: its `mcpServers`, enabled as its `mcp` lists say.
pub(crate) const READER: Reader = Reader {
    field: "mcpServers",
    keys: Keys {
        silent: &["description", "extensionName"],
        unhonoured: &[
            (
                "oauth",
                "set the OAuth client in mcpmux.toml: [servers.NAME.oauth], then run `mcpmux auth login NAME`",
            ),
            (
                "authProviderType",
                "mcpmux authenticates with OAuth discovery or headers; see [servers.NAME.oauth] in mcpmux.toml",
            ),
            (
                "targetAudience",
                "mcpmux has no Google service-account authentication; send a token in \"headers\"",
            ),
            (
                "targetServiceAccount",
                "mcpmux has no Google service-account authentication; send a token in \"headers\"",
            ),
        ],
    },
    read: server,
};

/// Disables the servers Gemini CLI's `mcp.allowed` / `mcp.excluded` lists leave out.
pub(crate) fn apply_lists(root: &Map<String, Value>, file: &mut FileEntries) {
    // `mcp.allowed` / `mcp.excluded` name which servers Gemini CLI connects to: the others stay
    // listed, disabled.
    let lists = root.get("mcp").and_then(Value::as_object);
    let names = |key: &str| -> Option<Vec<String>> {
        lists?.get(key)?.as_array().map(|items| {
            items
                .iter()
                .filter_map(|item| item.as_str().map(str::to_owned))
                .collect()
        })
    };
    let (allowed, excluded) = (names("allowed"), names("excluded"));
    for (name, entry) in &mut file.entries {
        if let Ok(Entry::Define(spec)) = entry {
            let left_out = allowed.as_ref().is_some_and(|list| !list.contains(name))
                || excluded.as_ref().is_some_and(|list| list.contains(name));
            if left_out {
                spec.enabled = false;
            }
        }
    }
}

fn server(
    fields: &Fields<'_>,
    map: &mut Map<String, Value>,
    warnings: &mut Vec<ConfigError>,
) -> Result<ServerSpec, ConfigError> {
    let http_url = take(map, "httpUrl");
    let mut raw = RawTransport::take(map);
    match (http_url, &raw.url) {
        (Some(_), Some(_)) => {
            return Err(fields.invalid(
                Some("httpUrl"),
                "both \"httpUrl\" (streamable HTTP) and \"url\" (SSE) are set: keep the one the server speaks",
            ));
        }
        (Some(url), None) => {
            raw.url = Some(url);
            raw.kind.get_or_insert(Value::from("http"));
        }
        // Gemini CLI's `url` is the legacy SSE endpoint.
        (None, Some(_)) => {
            raw.kind.get_or_insert(Value::from("sse"));
        }
        (None, None) => {}
    }
    let transport = fields.transport(raw)?;
    let mut spec = ServerSpec::new(fields.server(), transport);
    if let Some(ms) = take(map, "timeout") {
        spec.call_timeout = duration(fields, "timeout", &ms, 1000.0)?;
    }
    if let Some(tools) = take(map, "includeTools") {
        spec.options.tools.allow = string_list(fields, "includeTools", tools)?;
    }
    if let Some(tools) = take(map, "excludeTools") {
        spec.options.tools.deny = string_list(fields, "excludeTools", tools)?;
    }
    if let Some(trust) = take(map, "trust") {
        // `trust: false` is what mcpmux does anyway: calls go through its policy.
        if fields.boolean("trust", trust)? {
            warnings.push(fields.unhonoured(
                "trust",
                "mcpmux does not skip its call policy for a whole server; allow its tools with [policy] allow = [\"mcp__NAME__*\"] in mcpmux.toml",
            ));
        }
    }
    Ok(spec)
}
