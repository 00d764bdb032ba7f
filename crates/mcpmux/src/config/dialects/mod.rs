//! The other tools' config files, read only when the person imports them (`import = [...]` in
//! `mcpmux.toml`, `--import`): Codex, Cursor, VS Code, Gemini CLI, Windsurf and Claude
//! Desktop, each read as
//! its owner writes it. Where they live, the `import` list, and what their readers share:
//! walking a `name → server` object, typed helpers, and reporting every field mcpmux cannot
//! honour as a warning instead of dropping it.
//!
//! Knows nothing of merging or of connections; `config/mod.rs` decides the order and merges.

pub(crate) mod claude_desktop;
pub(crate) mod codex;
pub(crate) mod cursor;
pub(crate) mod env_file;
pub(crate) mod gemini;
pub(crate) mod oauth;
pub(crate) mod vars;
pub(crate) mod vscode;
pub(crate) mod windsurf;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Map, Value};

use super::entry::{Entry, FileEntries};
use super::fields::{Context, Fields};
use super::value::kind_name;
use super::{ConfigError, Dialect, Origin, ServerSpec, TransportSpec};
use crate::platform::dirs::{Os, app_data};

/// Largest file of another tool that is read: these may sit in a repository.
pub(crate) const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// Most warnings reported for one entry; a hostile file must not flood `mcpmux servers`.
const MAX_WARNINGS: usize = 20;

/// The person's own file of `dialect`, when it has one.
pub(crate) fn user_file(
    dialect: Dialect,
    home: Option<&Path>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Option<PathBuf> {
    user_file_on(Os::CURRENT, dialect, home, env)
}

/// [`user_file`] as it is on `os`. Cursor, Windsurf, Gemini CLI and Codex keep theirs under
/// the home folder on every system (`%USERPROFILE%` on Windows); Claude Desktop and VS Code,
/// Electron applications, in their `appData` folder.
fn user_file_on(
    os: Os,
    dialect: Dialect,
    home: Option<&Path>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Option<PathBuf> {
    match dialect {
        // Codex reads $CODEX_HOME/config.toml, ~/.codex by default (developers.openai.com/codex/config-reference).
        Dialect::Codex => env("CODEX_HOME")
            .filter(|dir| !dir.is_empty())
            .map(PathBuf::from)
            .or_else(|| home.map(|home| home.join(".codex")))
            .map(|dir| dir.join("config.toml")),
        Dialect::Cursor => home.map(|home| home.join(".cursor").join("mcp.json")),
        Dialect::Gemini => home.map(|home| home.join(".gemini").join("settings.json")),
        Dialect::Windsurf => home.map(|home| {
            home.join(".codeium")
                .join("windsurf")
                .join("mcp_config.json")
        }),
        // Claude Desktop's `userData` folder is `Claude` (modelcontextprotocol.io/docs/develop/connect-local-servers).
        Dialect::ClaudeDesktop => {
            app_data(os, home, env).map(|dir| dir.join("Claude").join("claude_desktop_config.json"))
        }
        // The default profile's `mcp.json` (code.visualstudio.com/docs/copilot/customization/mcp-servers):
        // `Code/User/` in `appData`.
        Dialect::VsCode => {
            app_data(os, home, env).map(|dir| dir.join("Code").join("User").join("mcp.json"))
        }
        Dialect::Claude | Dialect::Mcpmux => None,
    }
}

/// The project's own file of `dialect`, when the tool has one.
pub(crate) fn project_file(dialect: Dialect, project: &Path) -> Option<PathBuf> {
    match dialect {
        // Codex reads a project's `.codex/config.toml` for trusted projects only; here it needs
        // approval like any project file.
        Dialect::Codex => Some(project.join(".codex").join("config.toml")),
        Dialect::Cursor => Some(project.join(".cursor").join("mcp.json")),
        Dialect::VsCode => Some(project.join(".vscode").join("mcp.json")),
        Dialect::Gemini => Some(project.join(".gemini").join("settings.json")),
        Dialect::Windsurf | Dialect::ClaudeDesktop | Dialect::Claude | Dialect::Mcpmux => None,
    }
}

/// An `import` value: an array of dialect names (or `"all"`), in any order.
pub(crate) fn import_list(value: &Value) -> Result<Vec<Dialect>, String> {
    let Value::Array(items) = value else {
        return Err(format!(
            "expected an array of names, found {}: write import = [\"codex\", \"cursor\"] (valid names are {})",
            kind_name(value, Dialect::Mcpmux),
            Dialect::import_names()
        ));
    };
    let mut dialects = Vec::new();
    for item in items {
        let found = item.as_str().and_then(Dialect::import_name);
        let Some(found) = found else {
            let written = match item {
                Value::String(text) => format!("\"{}\"", text.chars().take(40).collect::<String>()),
                other => kind_name(other, Dialect::Mcpmux).to_owned(),
            };
            return Err(format!(
                "{written} is not a tool mcpmux imports: valid names are {}",
                Dialect::import_names()
            ));
        };
        for dialect in found {
            if !dialects.contains(&dialect) {
                dialects.push(dialect);
            }
        }
    }
    Ok(dialects)
}

/// The text of a file of another tool, refused when larger than [`MAX_FILE_BYTES`].
pub(crate) fn read_bounded(path: &Path) -> std::io::Result<String> {
    let mut bytes = Vec::new();
    std::fs::File::open(path)?
        .take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(std::io::Error::other(format!(
            "larger than {} MiB: this is not a config file",
            MAX_FILE_BYTES >> 20
        )));
    }
    String::from_utf8(bytes).map_err(|_| std::io::Error::other("not UTF-8 text"))
}

/// How one dialect's file is read: the field its servers are under, what it says of the keys
/// its entries may leave, and how one entry is read.
pub(crate) struct Reader {
    pub field: &'static str,
    pub keys: Keys,
    pub read: ReadEntry,
}

/// Reads one file of an imported dialect.
pub(crate) fn parse(
    text: &str,
    cx: &Context<'_>,
    ask: Option<&vars::InputFn>,
) -> Result<FileEntries, ConfigError> {
    let reader = match cx.dialect {
        Dialect::Codex => &codex::READER,
        Dialect::Cursor => &cursor::READER,
        Dialect::VsCode => &vscode::READER,
        Dialect::Gemini => &gemini::READER,
        Dialect::Windsurf => &windsurf::READER,
        Dialect::ClaudeDesktop => &claude_desktop::READER,
        Dialect::Claude | Dialect::Mcpmux => return Ok(FileEntries::default()),
    };
    let mut root = root(text, cx)?;
    // VS Code's `${input:ID}`s are declared in the file's own `inputs`.
    let inputs = (cx.dialect == Dialect::VsCode)
        .then(|| vars::Inputs::new(cx.file.to_path_buf(), root.get("inputs"), ask));
    let cx = Context {
        inputs: inputs.as_ref().or(cx.inputs),
        ..*cx
    };
    let mut file = FileEntries::default();
    let servers = root.remove(reader.field);
    each_server(
        servers,
        reader.field,
        &cx,
        &reader.keys,
        &mut file,
        reader.read,
    );
    if cx.dialect == Dialect::Gemini {
        gemini::apply_lists(&root, &mut file);
    }
    Ok(file)
}

/// A file's top-level object: Codex's TOML read as JSON; JSON, for the editors that write
/// JSONC (VS Code, Cursor, Windsurf) with comments and trailing commas.
fn root(text: &str, cx: &Context<'_>) -> Result<Map<String, Value>, ConfigError> {
    let root: Value = match cx.dialect {
        Dialect::Codex => {
            let table: toml::Table = text.parse().map_err(|error: toml::de::Error| {
                super::toml_json::parse_error(cx.file, text, &error)
            })?;
            return Ok(super::toml_json::table_to_json(table));
        }
        Dialect::VsCode | Dialect::Cursor | Dialect::Windsurf => jsonc(text, cx.file)?,
        _ => serde_json::from_str(text)
            .map_err(|error| super::claude::parse_error(cx.file, error))?,
    };
    match root {
        Value::Object(root) => Ok(root),
        other => Err(ConfigError::Parse {
            file: cx.file.to_path_buf(),
            format: "JSON",
            line: None,
            column: None,
            message: format!(
                "the top level is {}, not an object",
                kind_name(&other, cx.dialect)
            ),
        }),
    }
}

/// `text` read as VS Code reads its `mcp.json` (Microsoft's `jsonc-parser`): JSON with `//`
/// and `/* */` comments and trailing commas, nothing looser (no single quotes, bare keys, hex
/// or `NaN`). The crate stops at 512 levels of nesting with an error.
fn jsonc(text: &str, file: &Path) -> Result<Value, ConfigError> {
    let options = jsonc_parser::ParseOptions {
        allow_comments: true,
        allow_trailing_commas: true,
        allow_loose_object_property_names: false,
        allow_missing_commas: false,
        allow_single_quoted_strings: false,
        allow_hexadecimal_numbers: false,
        allow_unary_plus_numbers: false,
        allow_bare_decimal_point_numbers: false,
        allow_non_finite_numbers: false,
        allow_extended_string_escapes: false,
    };
    jsonc_parser::parse_to_serde_value::<Value>(text, &options).map_err(|error| {
        ConfigError::Parse {
            file: file.to_path_buf(),
            format: "JSON (with comments)",
            line: Some(error.line_display()),
            column: Some(error.column_display()),
            message: error.kind().to_string(),
        }
    })
}

/// How one dialect reads one entry: its fields (taken out of the map), then the leftovers,
/// which [`each_server`] reports.
pub(crate) type ReadEntry = fn(
    &Fields<'_>,
    &mut Map<String, Value>,
    &mut Vec<ConfigError>,
) -> Result<ServerSpec, ConfigError>;

/// What a dialect says about keys it does not turn into options.
pub(crate) struct Keys {
    /// Keys that change nothing about how a server runs (descriptions, debugging aids).
    pub silent: &'static [&'static str],
    /// Keys of the owner's format mcpmux cannot honour, each with why and what to do.
    pub unhonoured: &'static [(&'static str, &'static str)],
}

/// Reads every entry of a `name → server` object (`servers`, absent or null: none).
pub(crate) fn each_server(
    servers: Option<Value>,
    field: &str,
    cx: &Context<'_>,
    keys: &Keys,
    file: &mut FileEntries,
    read: ReadEntry,
) {
    let servers = match servers {
        None | Some(Value::Null) => return,
        Some(Value::Object(servers)) => servers,
        Some(other) => {
            file.problems.push(ConfigError::InvalidValue {
                file: cx.file.to_path_buf(),
                server: None,
                field: Some(field.to_owned()),
                message: format!(
                    "expected an object of servers, found {}",
                    kind_name(&other, cx.dialect)
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
                field: Some(format!("{field}.\"\"")),
                message: "a server has an empty name: give it a name".to_owned(),
            });
            continue;
        }
        if !cx.reads(&name) || !cx.admit(&name, &value, file) {
            continue;
        }
        let fields = Fields::new(cx, &name);
        let Value::Object(mut map) = value else {
            let error = fields.invalid(
                None,
                format!(
                    "the entry is {}, not an object",
                    kind_name(&value, cx.dialect)
                ),
            );
            file.entries.push((name.clone(), Err(error)));
            continue;
        };
        let mut warnings = Vec::new();
        let entry = read(&fields, &mut map, &mut warnings).map(|mut spec| {
            leftovers(&fields, map, keys, &mut warnings);
            spec.origin = Origin::File {
                path: cx.file.to_path_buf(),
                dialect: cx.dialect,
            };
            Entry::Define(spec)
        });
        if entry.is_ok() {
            file.problems.extend(warnings);
        }
        file.entries.push((name.clone(), entry));
    }
}

/// Reports the keys no reader took: silent ones at debug level, every other one as a warning.
fn leftovers(
    fields: &Fields<'_>,
    map: Map<String, Value>,
    keys: &Keys,
    warnings: &mut Vec<ConfigError>,
) {
    for (key, value) in map {
        if value.is_null() || keys.silent.contains(&key.as_str()) {
            tracing::debug!(server = %fields.server(), file = %fields.file().display(), key = %key, "field ignored: it changes nothing about how the server runs");
            continue;
        }
        if warnings.len() >= MAX_WARNINGS {
            tracing::debug!(server = %fields.server(), key = %key, "more fields not honoured; not reported");
            continue;
        }
        let reason = keys
            .unhonoured
            .iter()
            .find(|(known, _)| *known == key)
            .map(|(_, reason)| (*reason).to_owned())
            .unwrap_or_else(|| {
                format!(
                    "mcpmux does not know this field of {}'s files",
                    owner(fields.dialect())
                )
            });
        let key: String = key
            .chars()
            .take(60)
            .flat_map(char::escape_default)
            .collect();
        warnings.push(fields.unhonoured(&key, reason));
    }
}

/// The tool whose file `dialect` is, as its owner names it.
fn owner(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::Codex => "Codex",
        Dialect::Cursor => "Cursor",
        Dialect::VsCode => "VS Code",
        Dialect::Gemini => "Gemini CLI",
        Dialect::Windsurf => "Windsurf",
        Dialect::ClaudeDesktop => "Claude Desktop",
        Dialect::Claude => "Claude Code",
        Dialect::Mcpmux => "mcpmux",
    }
}

/// An array of plain strings (tool names), not expanded.
pub(crate) fn string_list(
    fields: &Fields<'_>,
    field: &str,
    value: Value,
) -> Result<Vec<String>, ConfigError> {
    let Value::Array(items) = value else {
        return Err(fields.invalid(
            Some(field),
            "expected an array of strings, like [\"read_file\", \"list_dir\"]",
        ));
    };
    items
        .into_iter()
        .enumerate()
        .map(|(index, item)| fields.string(&format!("{field}[{index}]"), item))
        .collect()
}

/// A positive number of `unit` (1 for seconds, 1000 for milliseconds) as a duration.
pub(crate) fn duration(
    fields: &Fields<'_>,
    field: &str,
    value: &Value,
    per_second: f64,
) -> Result<Duration, ConfigError> {
    let unit = if per_second == 1.0 {
        "seconds"
    } else {
        "milliseconds"
    };
    let number = value.as_f64().filter(|n| n.is_finite() && *n > 0.0);
    number
        .and_then(|n| Duration::try_from_secs_f64(n / per_second).ok())
        .filter(|d| *d <= Duration::from_secs(7 * 24 * 3600))
        .ok_or_else(|| {
            fields.invalid(
                Some(field),
                format!(
                    "expected a positive number of {unit} (at most a week), found {}",
                    match value {
                        Value::Number(n) => n.to_string(),
                        other => kind_name(other, fields.dialect()).to_owned(),
                    }
                ),
            )
        })
}

/// `envFile`: the dotenv file's variables join a stdio server's `env`, which wins on a clash.
/// The path may use the dialect's variables and is relative to the config file's folder.
pub(crate) fn env_file(
    fields: &Fields<'_>,
    value: Value,
    transport: &mut TransportSpec,
) -> Result<(), ConfigError> {
    let path = fields.expanded("envFile", value)?;
    let TransportSpec::Stdio { env, .. } = transport else {
        tracing::debug!(server = %fields.server(), "envFile ignored: only a stdio server has an environment");
        return Ok(());
    };
    let path = fields.relative_to_file(Path::new(&path));
    let vars = env_file::read(&path).map_err(|message| fields.invalid(Some("envFile"), message))?;
    for (name, value) in vars {
        env.entry(name).or_insert(value);
    }
    Ok(())
}

/// Takes `key` out of `map`, `null` counting as absent.
pub(crate) fn take(map: &mut Map<String, Value>, key: &str) -> Option<Value> {
    map.remove(key).filter(|value| !value.is_null())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_tool_s_user_file_is_where_its_owner_puts_it_on_each_system() {
        let env = |name: &str| match name {
            "APPDATA" => Some(r"C:\Users\ada\AppData\Roaming".to_owned()),
            _ => None,
        };
        let file = |os, dialect, home: &str| user_file_on(os, dialect, Some(Path::new(home)), &env);
        let mac = "/Users/ada";
        let support = Path::new(mac).join("Library/Application Support");
        assert_eq!(
            file(Os::Mac, Dialect::ClaudeDesktop, mac),
            Some(support.join("Claude/claude_desktop_config.json"))
        );
        assert_eq!(
            file(Os::Mac, Dialect::VsCode, mac),
            Some(support.join("Code/User/mcp.json"))
        );
        let roaming = PathBuf::from(r"C:\Users\ada\AppData\Roaming");
        let win = r"C:\Users\ada";
        assert_eq!(
            file(Os::Windows, Dialect::ClaudeDesktop, win),
            Some(roaming.join("Claude").join("claude_desktop_config.json"))
        );
        assert_eq!(
            file(Os::Windows, Dialect::VsCode, win),
            Some(roaming.join("Code").join("User").join("mcp.json"))
        );
        let linux = "/home/ada";
        assert_eq!(
            file(Os::Linux, Dialect::VsCode, linux),
            Some(PathBuf::from("/home/ada/.config/Code/User/mcp.json"))
        );
        assert_eq!(
            file(Os::Linux, Dialect::ClaudeDesktop, linux),
            Some(PathBuf::from(
                "/home/ada/.config/Claude/claude_desktop_config.json"
            ))
        );
        // The home-folder tools are the same on every system.
        for (os, home) in [(Os::Mac, mac), (Os::Windows, win), (Os::Linux, linux)] {
            let home = Path::new(home);
            assert_eq!(
                file(os, Dialect::Cursor, &home.to_string_lossy()),
                Some(home.join(".cursor").join("mcp.json"))
            );
            assert_eq!(
                file(os, Dialect::Windsurf, &home.to_string_lossy()),
                Some(
                    home.join(".codeium")
                        .join("windsurf")
                        .join("mcp_config.json")
                )
            );
        }
    }

    #[test]
    fn import_lists() {
        assert_eq!(
            import_list(&json!(["codex", "VSCode"])),
            Ok(vec![Dialect::Codex, Dialect::VsCode])
        );
        assert_eq!(import_list(&json!(["all"])).unwrap().len(), 6);
        assert_eq!(
            import_list(&json!(["claude-desktop"])),
            Ok(vec![Dialect::ClaudeDesktop])
        );
        let error = import_list(&json!(["cursr"])).unwrap_err();
        assert!(
            error.contains("\"cursr\"") && error.contains("\"windsurf\""),
            "{error}"
        );
        assert!(import_list(&json!("codex")).is_err());
    }

    #[test]
    fn jsonc_takes_comments_and_trailing_commas_and_nothing_looser() {
        let file = Path::new("mcp.json");
        let value = jsonc("// c\n{ \"a\": [1, 2,], /* b */ }", file).unwrap();
        assert_eq!(value, json!({"a": [1, 2]}));
        for loose in [
            "{ a: 1 }",
            "{ \"a\": 'x' }",
            "{ \"a\": 0x1 }",
            "{ \"a\": NaN }",
        ] {
            assert!(jsonc(loose, file).is_err(), "{loose}");
        }
    }

    #[test]
    fn deeply_nested_jsonc_is_an_error_not_a_stack_overflow() {
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        // On a small stack, as a reload on a runtime worker would have.
        let outcome = std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(move || jsonc(&deep, Path::new("mcp.json")).map(|_| ()))
            .unwrap()
            .join()
            .unwrap();
        assert!(outcome.is_err());
    }
}
