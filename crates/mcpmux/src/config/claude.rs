//! Claude Code's JSON dialect: `.mcp.json`, `~/.claude.json`, `settings.json`.
//!
//! Tolerant: these files belong to another tool, which adds keys as it pleases, so unknown keys
//! are logged at debug level and never refused. What an entry needs (a `command`, a `url`) and
//! the types of the fields we read are still checked, each problem naming its field.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::auth::RawAuth;
use super::entry::{Entry, FileEntries};
use super::fields::{Context, Fields, RawTransport};
use super::value::project_key;
use super::{ConfigError, Dialect, Origin, ServerSpec};

/// Which of the file's shapes to look for besides the top-level `mcpServers`.
#[derive(Debug, Clone, Default)]
pub(crate) struct Shape {
    /// A flat `{"name": {server}}` map is accepted (`.mcp.json`, `--config` files).
    pub flat: bool,
    /// `projects["<dir>"].mcpServers` for this directory is read too (`~/.claude.json`, where
    /// Claude Code keeps its local-scope servers).
    pub project_dir: Option<PathBuf>,
}

/// Reads one Claude JSON file's servers, in merge order: the top-level map, then the project's.
pub(crate) fn parse(
    text: &str,
    cx: &Context<'_>,
    shape: &Shape,
) -> Result<FileEntries, ConfigError> {
    let root: Value = serde_json::from_str(text).map_err(|error| parse_error(cx.file, error))?;
    let Value::Object(mut root) = root else {
        return Err(ConfigError::Parse {
            file: cx.file.to_path_buf(),
            format: "JSON",
            line: None,
            column: None,
            message: format!(
                "the top level is {}, not an object: write {{\"mcpServers\": {{...}}}}",
                super::value::kind_name(&root, Dialect::Claude)
            ),
        });
    };

    let mut file = FileEntries::default();
    match root.remove("mcpServers") {
        Some(servers) => servers_map(servers, "mcpServers", cx, &mut file),
        None if shape.flat && looks_flat(&root) => {
            servers_map(Value::Object(std::mem::take(&mut root)), "", cx, &mut file);
        }
        None => {}
    }

    if let Some(dir) = &shape.project_dir
        && let Some((key, servers)) = project_servers(&mut root, dir)
    {
        tracing::debug!(file = %cx.file.display(), project = %key, "reading local-scope servers");
        servers_map(
            servers,
            &format!("projects[\"{key}\"].mcpServers"),
            cx,
            &mut file,
        );
    }
    Ok(file)
}

/// A parse error at the parser's position, with serde_json's own position suffix removed.
pub(crate) fn parse_error(file: &Path, error: serde_json::Error) -> ConfigError {
    let text = error.to_string();
    let suffix = format!(" at line {} column {}", error.line(), error.column());
    let message = text.strip_suffix(&suffix).unwrap_or(&text).to_owned();
    // serde_json counts columns in bytes and reports column 0 at the very start of a line.
    ConfigError::Parse {
        file: file.to_path_buf(),
        format: "JSON",
        line: Some(error.line()).filter(|line| *line > 0),
        column: Some(error.column().max(1)),
        message,
    }
}

/// A file with no `mcpServers` is a flat map when any value looks like a server entry.
fn looks_flat(root: &Map<String, Value>) -> bool {
    root.values().any(|value| {
        value.as_object().is_some_and(|entry| {
            ["command", "url", "type"]
                .iter()
                .any(|key| entry.contains_key(*key))
        })
    })
}

/// The project's `mcpServers` under `projects`, matching the directory as given or resolved
/// (Claude Code keys projects by absolute path; the user may reach it through a symlink).
fn project_servers(root: &mut Map<String, Value>, dir: &Path) -> Option<(String, Value)> {
    let Some(Value::Object(projects)) = root.get_mut("projects") else {
        return None;
    };
    let key = project_key(projects, dir)?;
    let servers = projects
        .get_mut(&key)?
        .as_object_mut()?
        .remove("mcpServers")?;
    Some((key, servers))
}

/// Reads every entry of a `name → server` object into `file`.
fn servers_map(servers: Value, field: &str, cx: &Context<'_>, file: &mut FileEntries) {
    let servers = match servers {
        Value::Object(servers) => servers,
        Value::Null => return,
        other => {
            file.problems.push(ConfigError::InvalidValue {
                file: cx.file.to_path_buf(),
                server: None,
                field: Some(field.to_owned()),
                message: format!(
                    "expected an object of servers, found {}: write {{\"name\": {{\"command\": ...}}}}",
                    super::value::kind_name(&other, Dialect::Claude)
                ),
            });
            return;
        }
    };
    for (name, value) in servers {
        if name.is_empty() {
            file.problems.push(ConfigError::InvalidValue {
                file: cx.file.to_path_buf(),
                server: None,
                field: Some(if field.is_empty() {
                    "\"\"".to_owned()
                } else {
                    format!("{field}.\"\"")
                }),
                message: "a server has an empty name: give it a name".to_owned(),
            });
            continue;
        }
        if !cx.reads(&name) || !cx.admit(&name, &value, file) {
            continue;
        }
        let entry = server(&name, value, cx);
        file.entries.push((name, entry));
    }
}

/// One entry: the shared transport fields plus Claude's `disabled` and `alwaysLoad`.
fn server(name: &str, value: Value, cx: &Context<'_>) -> Result<Entry, ConfigError> {
    let fields = Fields::new(cx, name);
    let Value::Object(mut map) = value else {
        return Err(fields.invalid(
            None,
            format!(
                "the entry is {}, not an object: write {{\"command\": \"...\"}} or {{\"url\": \"...\"}}",
                super::value::kind_name(&value, Dialect::Claude)
            ),
        ));
    };
    let raw = RawServer::take(&mut map);
    for key in map.keys() {
        tracing::debug!(server = %name, file = %cx.file.display(), key = %key, "unknown key ignored");
    }

    let RawServer {
        transport,
        auth,
        disabled,
        always_load,
    } = raw;
    let transport = fields.transport(transport)?;
    let auth = if matches!(transport, super::TransportSpec::Stdio { .. }) {
        for field in auth.present() {
            tracing::debug!(server = %name, file = %cx.file.display(), field, "field ignored: does not apply to a stdio server");
        }
        super::AuthSpec::default()
    } else {
        fields.auth(auth, false)?
    };
    let mut spec = ServerSpec::new(name, transport).with_auth(auth);
    if let Some(disabled) = disabled {
        spec.enabled = !fields.boolean("disabled", disabled)?;
    }
    // Claude Code's `alwaysLoad` (2.1.121): the server's tools are always in context, never
    // behind tool search; such a server is needed at once, so it is never lazy.
    if let Some(always_load) = always_load
        && fields.boolean("alwaysLoad", always_load)?
    {
        spec.options.lazy = Some(false);
    }
    spec.origin = Origin::File {
        path: cx.file.to_path_buf(),
        dialect: Dialect::Claude,
    };
    Ok(Entry::Define(spec))
}

/// The keys of a Claude entry that mean something to us.
struct RawServer {
    transport: RawTransport,
    auth: RawAuth,
    disabled: Option<Value>,
    always_load: Option<Value>,
}

impl RawServer {
    fn take(map: &mut Map<String, Value>) -> Self {
        RawServer {
            transport: RawTransport::take(map),
            auth: RawAuth::take(map),
            disabled: map.remove("disabled").filter(|value| !value.is_null()),
            always_load: map.remove("alwaysLoad").filter(|value| !value.is_null()),
        }
    }
}
