//! OpenAI Codex's `config.toml` (`~/.codex/config.toml` or `$CODEX_HOME/config.toml`, and a
//! project's `.codex/config.toml`): `[mcp_servers.NAME]` tables, read as Codex reads them.
//!
//! Fields from Codex's configuration reference (developers.openai.com/codex/config-reference,
//! "mcp_servers") and docs/config.md of github.com/openai/codex: `command`, `args`, `env`,
//! `env_vars`, `cwd`, `url`, `bearer_token_env_var`, `http_headers`, `env_http_headers`,
//! `startup_timeout_sec` (or `startup_timeout_ms`), `tool_timeout_sec`, `enabled`,
//! `enabled_tools`, `disabled_tools`. Codex expands no `${VAR}` in values: variables are named
//! in fields of their own. Everything else in the file (models, profiles, sandboxing) is
//! Codex's own business and is not read.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::{Keys, Reader, duration, string_list, take};
use crate::config::fields::{Fields, RawTransport};
use crate::config::{ConfigError, ServerSpec, TransportSpec};

/// How mcpmux reads one Codex `config.toml`: its `[mcp_servers.NAME]` tables.
pub(crate) const READER: Reader = Reader {
    field: "mcp_servers",
    keys: Keys {
        silent: &[],
        unhonoured: &[
            (
                "bearer_token",
                "Codex itself refuses an inline token; name a variable with bearer_token_env_var",
            ),
            (
                "oauth_resource",
                "mcpmux finds the OAuth resource from the server's metadata; run `mcpmux auth login NAME`",
            ),
            (
                "scopes",
                "set OAuth scopes in mcpmux.toml: [servers.NAME.oauth] scopes = [...]",
            ),
            (
                "tool_approval",
                "set approvals with [policy] rules in mcpmux.toml",
            ),
        ],
    },
    read: server,
};

fn server(
    fields: &Fields<'_>,
    map: &mut Map<String, Value>,
    _warnings: &mut Vec<ConfigError>,
) -> Result<ServerSpec, ConfigError> {
    let command = take(map, "command");
    let url = take(map, "url");
    let raw = RawTransport {
        kind: None,
        command,
        args: take(map, "args"),
        env: take(map, "env"),
        cwd: take(map, "cwd"),
        url,
        headers: take(map, "http_headers"),
    };
    let mut transport = fields.transport(raw)?;

    let env_vars = take(map, "env_vars");
    let bearer = take(map, "bearer_token_env_var");
    let env_headers = take(map, "env_http_headers");
    match &mut transport {
        TransportSpec::Stdio { env, .. } => {
            if let Some(names) = env_vars {
                // Passed through from mcpmux's own environment when set, as Codex does; an
                // explicit `env` entry wins.
                for name in string_list(fields, "env_vars", names)? {
                    match (fields.env())(&name) {
                        Some(value) => {
                            env.entry(name).or_insert(value);
                        }
                        None => {
                            tracing::debug!(server = %fields.server(), variable = %name, "env_vars: not set, not passed");
                        }
                    }
                }
            }
            for (field, value) in [
                ("bearer_token_env_var", bearer),
                ("env_http_headers", env_headers),
            ] {
                if value.is_some() {
                    tracing::debug!(server = %fields.server(), field, "field ignored: does not apply to a stdio server");
                }
            }
        }
        TransportSpec::Http { headers, .. } => {
            if env_vars.is_some() {
                tracing::debug!(server = %fields.server(), "env_vars ignored: does not apply to a remote server");
            }
            if let Some(pairs) = env_headers {
                for (header, variable) in variable_map(fields, "env_http_headers", pairs)? {
                    match (fields.env())(&variable) {
                        Some(value) => {
                            headers.insert(header, value);
                        }
                        None => {
                            tracing::debug!(server = %fields.server(), %header, %variable, "env_http_headers: variable not set, header not sent");
                        }
                    }
                }
            }
            if let Some(variable) = bearer {
                let variable = fields.string("bearer_token_env_var", variable)?;
                let Some(token) = (fields.env())(&variable) else {
                    return Err(fields.invalid(
                        Some("bearer_token_env_var"),
                        format!(
                            "names {variable}, which is not set: set {variable} in the environment to the token to send"
                        ),
                    ));
                };
                headers.insert("Authorization".to_owned(), format!("Bearer {token}"));
            }
        }
        _ => {}
    }

    let mut spec = ServerSpec::new(fields.server(), transport);
    if let Some(ms) = take(map, "startup_timeout_ms") {
        spec.startup_timeout = duration(fields, "startup_timeout_ms", &ms, 1000.0)?;
    }
    if let Some(sec) = take(map, "startup_timeout_sec") {
        spec.startup_timeout = duration(fields, "startup_timeout_sec", &sec, 1.0)?;
    }
    if let Some(sec) = take(map, "tool_timeout_sec") {
        spec.call_timeout = duration(fields, "tool_timeout_sec", &sec, 1.0)?;
    }
    if let Some(enabled) = take(map, "enabled") {
        spec.enabled = fields.boolean("enabled", enabled)?;
    }
    if let Some(required) = take(map, "required") {
        spec.required = fields.boolean("required", required)?;
    }
    if let Some(tools) = take(map, "enabled_tools") {
        spec.options.tools.allow = string_list(fields, "enabled_tools", tools)?;
    }
    if let Some(tools) = take(map, "disabled_tools") {
        spec.options.tools.deny = string_list(fields, "disabled_tools", tools)?;
    }
    Ok(spec)
}

/// A table of `name = "VARIABLE"` pairs.
fn variable_map(
    fields: &Fields<'_>,
    field: &str,
    value: Value,
) -> Result<BTreeMap<String, String>, ConfigError> {
    let Value::Object(map) = value else {
        return Err(fields.invalid(
            Some(field),
            "expected a table of header = \"VARIABLE\" pairs",
        ));
    };
    map.into_iter()
        .map(|(key, item)| Ok((key.clone(), fields.string(&format!("{field}.{key}"), item)?)))
        .collect()
}
