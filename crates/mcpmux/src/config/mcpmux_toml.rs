//! mcpmux's own TOML dialect: `[servers.NAME]` tables, a top-level `[policy]`, `[sandbox]`
//! defaults and `[serve]` settings (`serve.rs`).
//!
//! Strict, unlike the other tools' files: this file is ours, so a key we do not know is a typo
//! and is refused with the nearest valid key suggested. A server table with no `type`, `command`
//! or `url` is an overlay: it adjusts the options of a server an earlier file defines, which is
//! how `mcpmux.toml` says what `.mcp.json` cannot (timeouts, `required`, `enabled`, retries,
//! tool filters, side effects; see `options.rs` for those and for `[policy]`).

use serde_json::{Map, Value};

use super::auth::RawAuth;
use super::entry::{Entry, FileEntries, Overlay};
use super::fields::{Context, Fields, RawTransport};
use super::options::{self, RawOptions};
use super::toml_json::{parse_error, table_to_json, to_json};
use super::value::nearest;
use super::{ConfigError, Dialect, Origin, ServerSpec};

/// Valid top-level keys.
const TOP_KEYS: &[&str] = &["servers", "policy", "import", "sandbox", "serve"];

/// Valid keys of a `[servers.NAME]` table: transport, then options (from `max_retries` on,
/// read by `options.rs`).
const SERVER_KEYS: &[&str] = &[
    "type",
    "command",
    "args",
    "env",
    "cwd",
    "url",
    "headers",
    "headers_helper",
    "oauth",
    "enabled",
    "required",
    "startup_timeout",
    "call_timeout",
    "probe_timeout",
    "max_retries",
    "max_result_bytes",
    "shutdown_grace",
    "backoff",
    "breaker",
    "tools",
    "stages",
    "agents",
    "side_effects",
    "lazy",
    "sandbox",
];

/// Reads one `mcpmux.toml`: its server definitions and overlays in name order, and its policy.
pub(crate) fn parse(text: &str, cx: &Context<'_>) -> Result<FileEntries, ConfigError> {
    let mut root: toml::Table = text
        .parse()
        .map_err(|error: toml::de::Error| parse_error(cx.file, text, &error))?;

    let mut file = FileEntries::default();
    for key in root.keys() {
        if !TOP_KEYS.contains(&key.as_str()) {
            file.problems.push(unknown_key(cx, None, key, TOP_KEYS));
        }
    }

    // Read ahead by `discover.rs` to decide which files to read; checked here, once.
    if let Some(import) = root.remove("import")
        && let Err(message) = super::dialects::import_list(&to_json(import))
    {
        file.problems.push(ConfigError::InvalidValue {
            file: cx.file.to_path_buf(),
            server: None,
            field: Some("import".to_owned()),
            message,
        });
    }

    match root.remove("policy") {
        None => {}
        Some(toml::Value::Table(policy)) => {
            let (rules, problems) = options::policy(table_to_json(policy), cx);
            file.policy = rules;
            file.problems.extend(problems);
        }
        Some(other) => file.problems.push(ConfigError::InvalidValue {
            file: cx.file.to_path_buf(),
            server: None,
            field: Some("policy".to_owned()),
            message: format!(
                "expected a table, found {}: write it as [policy]",
                article(other.type_str())
            ),
        }),
    }

    if let Some(value) = root.remove("sandbox") {
        match super::sandbox::defaults(to_json(value)) {
            Ok(defaults) => file.sandbox = Some(defaults),
            Err(message) => file.problems.push(ConfigError::InvalidValue {
                file: cx.file.to_path_buf(),
                server: None,
                field: Some("sandbox".to_owned()),
                message,
            }),
        }
    }

    if let Some(value) = root.remove("serve") {
        match super::serve::settings(to_json(value)) {
            Ok(settings) => file.serve = Some(settings),
            Err(message) => file.problems.push(ConfigError::InvalidValue {
                file: cx.file.to_path_buf(),
                server: None,
                field: Some("serve".to_owned()),
                message,
            }),
        }
    }

    match root.remove("servers") {
        None => {}
        Some(toml::Value::Table(servers)) => {
            for (name, value) in servers {
                if name.is_empty() {
                    file.problems.push(ConfigError::InvalidValue {
                        file: cx.file.to_path_buf(),
                        server: None,
                        field: Some("servers.\"\"".to_owned()),
                        message:
                            "a server has an empty name: give it a name, as in [servers.github]"
                                .to_owned(),
                    });
                    continue;
                }
                if !cx.reads(&name) {
                    continue;
                }
                if cx.gated() && !cx.admit(&name, &to_json(value.clone()), &mut file) {
                    continue;
                }
                let entry = server(&name, value, cx);
                file.entries.push((name, entry));
            }
        }
        Some(other) => file.problems.push(ConfigError::InvalidValue {
            file: cx.file.to_path_buf(),
            server: None,
            field: Some("servers".to_owned()),
            message: format!(
                "expected a table of servers, found {}: write one [servers.NAME] table per server",
                article(other.type_str())
            ),
        }),
    }
    Ok(file)
}

/// `a table`, `an integer`: TOML type names with their article, for messages.
fn article(type_name: &str) -> String {
    let vowel = type_name.starts_with(['a', 'e', 'i', 'o', 'u']);
    format!("{} {type_name}", if vowel { "an" } else { "a" })
}

fn unknown_key(
    cx: &Context<'_>,
    server: Option<&str>,
    key: &str,
    valid: &'static [&'static str],
) -> ConfigError {
    ConfigError::UnknownKey {
        file: cx.file.to_path_buf(),
        server: server.map(str::to_owned),
        key: key.to_owned(),
        suggestion: nearest(key, valid).map(str::to_owned),
        valid,
    }
}

/// One `[servers.NAME]` table: a definition, or an overlay when it names no transport.
fn server(name: &str, value: toml::Value, cx: &Context<'_>) -> Result<Entry, ConfigError> {
    let fields = Fields::new(cx, name);
    let toml::Value::Table(table) = value else {
        return Err(fields.invalid(
            None,
            format!(
                "expected a table, found {}: write [servers.{name}] with command = \"...\" or url = \"...\"",
                article(value.type_str())
            ),
        ));
    };
    let mut map = table_to_json(table);
    let raw = RawServer::take(&mut map);
    if let Some(key) = map.keys().next() {
        return Err(unknown_key(cx, Some(name), key, SERVER_KEYS));
    }

    let RawServer {
        transport,
        auth,
        enabled,
        required,
        startup_timeout,
        call_timeout,
        probe_timeout,
        options: raw_options,
    } = raw;
    let options = Overlay {
        enabled: enabled.map(|v| fields.boolean("enabled", v)).transpose()?,
        required: required
            .map(|v| fields.boolean("required", v))
            .transpose()?,
        startup_timeout: startup_timeout
            .map(|v| fields.duration("startup_timeout", &v))
            .transpose()?,
        call_timeout: call_timeout
            .map(|v| fields.duration("call_timeout", &v))
            .transpose()?,
        probe_timeout: probe_timeout
            .map(|v| fields.duration("probe_timeout", &v))
            .transpose()?,
        options: options::read(raw_options, cx, name)?,
    };

    if !transport.defines_server() {
        let detail = transport.detail_fields().first().copied();
        if let Some(field) = detail.or_else(|| auth.present().first().copied()) {
            return Err(fields.invalid(
                Some(field),
                format!(
                    "this table has no type, command or url, so it only adjusts options (enabled, required, timeouts, retries, tools, ...) of a server defined in an earlier file: to change {field}, define the whole server here with its command or url"
                ),
            ));
        }
        return Ok(Entry::Adjust(options));
    }

    let transport = fields.transport(transport)?;
    if matches!(transport, super::TransportSpec::Stdio { .. })
        && let Some(field) = auth.present().first()
    {
        return Err(fields.invalid(
            Some(field),
            "does not apply to a stdio server: remove it, or set type = \"http\" for a remote server",
        ));
    }
    let auth = fields.auth(auth, true)?;
    let mut spec = ServerSpec::new(name, transport).with_auth(auth);
    options
        .apply(&mut spec)
        .map_err(|invalid| fields.invalid(Some(&invalid.field), invalid.message))?;
    spec.origin = Origin::File {
        path: cx.file.to_path_buf(),
        dialect: Dialect::Mcpmux,
    };
    Ok(Entry::Define(spec))
}

/// A `[servers.NAME]` table as written, field by field.
struct RawServer {
    transport: RawTransport,
    auth: RawAuth,
    enabled: Option<Value>,
    required: Option<Value>,
    startup_timeout: Option<Value>,
    call_timeout: Option<Value>,
    probe_timeout: Option<Value>,
    /// `max_retries`, `backoff`, `tools` and the other per-server options.
    options: RawOptions,
}

impl RawServer {
    /// Moves every known key out of `map`; what is left is unknown.
    fn take(map: &mut Map<String, Value>) -> Self {
        let transport = RawTransport::take(map);
        let auth = RawAuth::take(map);
        let mut take = |key: &str| map.remove(key).filter(|value| !value.is_null());
        let enabled = take("enabled");
        let required = take("required");
        let startup_timeout = take("startup_timeout");
        let call_timeout = take("call_timeout");
        let probe_timeout = take("probe_timeout");
        let options = RawOptions::take(map);
        RawServer {
            transport,
            auth,
            enabled,
            required,
            startup_timeout,
            call_timeout,
            probe_timeout,
            options,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_key_suggestions() {
        assert_eq!(nearest("comand", SERVER_KEYS), Some("command"));
        assert_eq!(nearest("tyep", SERVER_KEYS), Some("type"));
        assert_eq!(
            nearest("startupTimeout", SERVER_KEYS),
            Some("startup_timeout")
        );
        assert_eq!(nearest("call-timeout", SERVER_KEYS), Some("call_timeout"));
        assert_eq!(nearest("enable", SERVER_KEYS), Some("enabled"));
        assert_eq!(nearest("sever", TOP_KEYS), Some("servers"));
        assert_eq!(nearest("max_retry", SERVER_KEYS), Some("max_retries"));
        assert_eq!(nearest("whatever", SERVER_KEYS), None);
        assert_eq!(nearest("zzzzzz", SERVER_KEYS), None);
    }

    #[test]
    fn every_server_key_is_consumed() {
        let mut map: Map<String, Value> = SERVER_KEYS
            .iter()
            .map(|key| ((*key).to_owned(), Value::from(1)))
            .collect();
        let _ = RawServer::take(&mut map);
        assert!(map.is_empty(), "left over: {map:?}");
    }
}
