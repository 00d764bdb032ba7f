//! One server entry's fields, whatever dialect it was written in: typed field access, `${VAR}`
//! expansion, and the transport fields both dialects share (`type`, `command`, `args`, `env`,
//! `cwd`, `url`, `headers`).
//!
//! A dialect module pulls its raw fields out of the file into a [`RawTransport`] and its own
//! option fields, then calls [`Fields::transport`]. Values arrive as `serde_json::Value` (TOML is
//! converted first) so the checks exist once; only the wording of messages follows the dialect.
//! Knows nothing of which files exist, how entries are merged, or what an entry becomes
//! (`entry.rs`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Map, Value};

use super::dialects::vars::{self, Inputs};
use super::expand::{self, ExpandError};
use super::secrets::{Lookup, SecretSource};
use super::trust::Gate;
use super::value::kind_name;
use super::{ConfigError, Dialect, TransportSpec};

/// The accepted `type` values, as listed in error messages.
pub(crate) const VALID_TYPES: &str = "\"stdio\" (the default), \"http\" (also \"streamable-http\"), \"sse\", \"ws\" (also \"websocket\")";

/// What every entry of one file is read with.
#[derive(Clone, Copy)]
pub(crate) struct Context<'a> {
    /// The file being read.
    pub file: &'a Path,
    /// Its dialect: strictness and the wording of messages follow it.
    pub dialect: Dialect,
    /// Looks up `${VAR}` references.
    pub env: &'a dyn Fn(&str) -> Option<String>,
    /// For `~/` in `cwd`.
    pub home: Option<&'a Path>,
    /// For a project-level file: decides which entries may be read; none for trusted files.
    pub gate: Option<&'a Gate<'a>>,
    /// The project directory: `${workspaceFolder}` in the editors' dialects.
    pub workspace: &'a Path,
    /// The file's `inputs` (VS Code) and how to answer them; none elsewhere.
    pub inputs: Option<&'a Inputs<'a>>,
    /// Answers `${secret:NAME}`.
    pub secrets: &'a SecretSource,
    /// Which servers' entries are read at all (`LoadOptions::only`); none: every one.
    pub only: Option<&'a super::OnlyFn>,
}

impl Context<'_> {
    /// Whether this file's entries need approval.
    pub fn gated(&self) -> bool {
        self.gate.is_some()
    }

    /// Whether the entry of `name` is read at all: skipped ones are neither approved, nor
    /// expanded, nor checked.
    pub fn reads(&self, name: &str) -> bool {
        self.only.is_none_or(|only| only(name))
    }
}

/// The transport fields as written, before any check.
#[derive(Debug, Default)]
pub(crate) struct RawTransport {
    /// `type`.
    pub kind: Option<Value>,
    /// `command`.
    pub command: Option<Value>,
    /// `args`.
    pub args: Option<Value>,
    /// `env`.
    pub env: Option<Value>,
    /// `cwd`.
    pub cwd: Option<Value>,
    /// `url`.
    pub url: Option<Value>,
    /// `headers`.
    pub headers: Option<Value>,
}

impl RawTransport {
    /// Moves the transport fields out of `map`, leaving the rest. JSON `null` counts as absent.
    pub fn take(map: &mut Map<String, Value>) -> Self {
        let mut take = |key: &str| map.remove(key).filter(|value| !value.is_null());
        RawTransport {
            kind: take("type"),
            command: take("command"),
            args: take("args"),
            env: take("env"),
            cwd: take("cwd"),
            url: take("url"),
            headers: take("headers"),
        }
    }

    /// Whether the entry says how to reach a server (else, in `mcpmux.toml`, it is an overlay).
    pub fn defines_server(&self) -> bool {
        self.kind.is_some() || self.command.is_some() || self.url.is_some()
    }

    /// The fields that describe a transport without saying which, in file order.
    pub fn detail_fields(&self) -> Vec<&'static str> {
        let mut present = Vec::new();
        for (key, value) in [
            ("args", &self.args),
            ("env", &self.env),
            ("cwd", &self.cwd),
            ("headers", &self.headers),
        ] {
            if value.is_some() {
                present.push(key);
            }
        }
        present
    }
}

/// The transports, before their fields are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Stdio,
    Http,
    Sse,
    Ws,
}

impl Kind {
    /// Reads a `type` value; the aliases are what Claude Code, Cursor and VS Code write.
    fn parse(text: &str) -> Option<Kind> {
        let kind = match text.to_ascii_lowercase().as_str() {
            "stdio" => Kind::Stdio,
            "http" | "streamable-http" | "streamablehttp" | "streamable_http" => Kind::Http,
            "sse" => Kind::Sse,
            "ws" | "websocket" => Kind::Ws,
            _ => return None,
        };
        Some(kind)
    }

    fn name(self) -> &'static str {
        match self {
            Kind::Stdio => "stdio",
            Kind::Http => "http",
            Kind::Sse => "sse",
            Kind::Ws => "ws",
        }
    }

    fn article(self) -> &'static str {
        match self {
            Kind::Http | Kind::Sse => "an",
            Kind::Stdio | Kind::Ws => "a",
        }
    }
}

/// Reads the fields of one named entry, each error naming file, server and field.
pub(crate) struct Fields<'a> {
    cx: &'a Context<'a>,
    server: &'a str,
}

impl<'a> Fields<'a> {
    /// Fields of entry `server` in the file `cx` describes.
    pub fn new(cx: &'a Context<'a>, server: &'a str) -> Self {
        Fields { cx, server }
    }

    fn strict(&self) -> bool {
        self.cx.dialect == Dialect::Mcpmux
    }

    /// An [`ConfigError::InvalidValue`] for `field` of this entry (the entry itself when `None`).
    pub fn invalid(&self, field: Option<&str>, message: impl Into<String>) -> ConfigError {
        ConfigError::InvalidValue {
            file: self.cx.file.to_path_buf(),
            server: Some(self.server.to_owned()),
            field: field.map(str::to_owned),
            message: message.into(),
        }
    }

    /// A [`ConfigError::Unhonoured`] warning for `field` of this entry.
    pub fn unhonoured(&self, field: &str, reason: impl Into<String>) -> ConfigError {
        ConfigError::Unhonoured {
            file: self.cx.file.to_path_buf(),
            server: self.server.to_owned(),
            field: field.to_owned(),
            reason: reason.into(),
        }
    }

    /// Looks up environment variables for this load.
    pub fn env(&self) -> &'a dyn Fn(&str) -> Option<String> {
        self.cx.env
    }

    /// The dialect of the file being read.
    pub fn dialect(&self) -> Dialect {
        self.cx.dialect
    }

    /// The file being read.
    pub fn file(&self) -> &Path {
        self.cx.file
    }

    pub(crate) fn missing(&self, field: &str, hint: String) -> ConfigError {
        ConfigError::MissingField {
            file: self.cx.file.to_path_buf(),
            server: self.server.to_owned(),
            field: field.to_owned(),
            hint,
        }
    }

    /// "expected X, found Y" with a fix: a number or boolean where text belongs gets quoted.
    fn wrong_type(&self, field: &str, expected: &str, found: &Value) -> ConfigError {
        let fix = match found {
            Value::Number(_) | Value::Bool(_) => format!(": write it in quotes, as \"{found}\""),
            _ => String::new(),
        };
        self.invalid(
            Some(field),
            format!(
                "expected {expected}, found {}{fix}",
                kind_name(found, self.cx.dialect)
            ),
        )
    }

    /// A string field.
    pub fn string(&self, field: &str, value: Value) -> Result<String, ConfigError> {
        match value {
            Value::String(text) => Ok(text),
            other => Err(self.wrong_type(field, "a string", &other)),
        }
    }

    /// A boolean field.
    pub fn boolean(&self, field: &str, value: Value) -> Result<bool, ConfigError> {
        match value {
            Value::Bool(flag) => Ok(flag),
            other => Err(self.invalid(
                Some(field),
                format!(
                    "expected true or false, found {}",
                    kind_name(&other, self.cx.dialect)
                ),
            )),
        }
    }

    /// A timeout field (`mcpmux.toml`).
    pub fn duration(&self, field: &str, value: &Value) -> Result<Duration, ConfigError> {
        super::duration::parse(value).map_err(|message| self.invalid(Some(field), message))
    }

    /// The entry's name.
    pub fn server(&self) -> &str {
        self.server
    }

    /// `path` as written in the config file: relative paths are relative to the file's folder.
    pub fn relative_to_file(&self, path: &Path) -> PathBuf {
        if path.is_absolute() {
            return path.to_path_buf();
        }
        let base = self.cx.file.parent().unwrap_or(Path::new(""));
        base.join(path)
    }

    /// A string with `${VAR}` references expanded.
    pub fn expanded(&self, field: &str, value: Value) -> Result<String, ConfigError> {
        let text = self.string(field, value)?;
        self.expand(field, &text)
    }

    fn expand(&self, field: &str, text: &str) -> Result<String, ConfigError> {
        match self.cx.dialect {
            // `${secret:NAME}` is mcpmux's own: it expands in the files mcpmux and Claude Code
            // share; the other tools' files keep their owners' syntax.
            Dialect::Claude | Dialect::Mcpmux => {}
            // Codex names variables in fields of their own (`env_vars`, `bearer_token_env_var`)
            // and expands nothing in values; Claude Desktop expands nothing either.
            Dialect::Codex | Dialect::ClaudeDesktop => return Ok(text.to_owned()),
            Dialect::Cursor | Dialect::VsCode | Dialect::Windsurf | Dialect::Gemini => {
                let cx = vars::Context {
                    file: self.cx.file,
                    dialect: self.cx.dialect,
                    env: self.cx.env,
                    home: self.cx.home,
                    workspace: self.cx.workspace,
                    inputs: self.cx.inputs,
                };
                return vars::expand(text, &cx)
                    .map_err(|message| self.invalid(Some(field), message));
            }
        }
        let secret = |name: &str| -> Result<Option<String>, String> {
            if !secret_allowed(field) {
                return Err(format!(
                    "secrets may only be used in env and headers values and the oauth credentials (clientSecret, privateKey, assertion, idToken): \"{field}\" is shown by `mcpmux servers` or a log (and a command line to every user of this machine); pass the secret in env instead"
                ));
            }
            match self.cx.secrets.lookup(name) {
                Lookup::Found(value) => Ok(Some(value)),
                Lookup::Missing => Ok(None),
                Lookup::Unusable(reason) => Err(reason),
            }
        };
        expand::expand_with(text, self.cx.env, &secret).map_err(|error| match error {
            ExpandError::MissingSecret(secret) => ConfigError::MissingSecret {
                file: self.cx.file.to_path_buf(),
                server: self.server.to_owned(),
                field: field.to_owned(),
                secret,
                store: self.cx.secrets.file().map(Path::to_path_buf),
            },
            ExpandError::SecretUnavailable { name, reason } => self.invalid(
                Some(field),
                format!("uses ${{secret:{name}}}, which cannot be used: {reason}"),
            ),
            ExpandError::Unset(variable) => ConfigError::UnsetVariable {
                file: self.cx.file.to_path_buf(),
                server: self.server.to_owned(),
                field: field.to_owned(),
                variable,
            },
            ExpandError::Unterminated => self.invalid(
                Some(field),
                "\"${\" has no closing \"}\": write ${NAME}, or $$ for a literal $",
            ),
            ExpandError::BadName(name) => self.invalid(
                Some(field),
                format!(
                    "\"${{{name}}}\" is not a variable reference: write ${{NAME}} or ${{NAME:-default}} (letters, digits, _), or $$ for a literal $"
                ),
            ),
        })
    }

    /// An array of strings, each expanded (`args`).
    pub(crate) fn expanded_list(
        &self,
        field: &str,
        value: Value,
    ) -> Result<Vec<String>, ConfigError> {
        let Value::Array(items) = value else {
            return Err(self.wrong_type(field, "an array of strings", &value));
        };
        items
            .into_iter()
            .enumerate()
            .map(|(index, item)| self.expanded(&format!("{field}[{index}]"), item))
            .collect()
    }

    /// A map of strings with expanded values; keys are kept as written (`env`, `headers`).
    pub(crate) fn expanded_map(
        &self,
        field: &str,
        value: Value,
    ) -> Result<BTreeMap<String, String>, ConfigError> {
        let Value::Object(map) = value else {
            let expected = match self.cx.dialect {
                Dialect::Mcpmux | Dialect::Codex => "a table of strings",
                _ => "an object of strings",
            };
            return Err(self.wrong_type(field, expected, &value));
        };
        map.into_iter()
            .map(|(key, item)| {
                let item = self.expanded(&format!("{field}.{key}"), item)?;
                Ok((key, item))
            })
            .collect()
    }

    /// The transport the raw fields describe, checked and expanded.
    pub fn transport(&self, raw: RawTransport) -> Result<TransportSpec, ConfigError> {
        let RawTransport {
            kind,
            command,
            args,
            env,
            cwd,
            url,
            headers,
        } = raw;

        let kind = match kind {
            Some(value) => {
                let text = self.string("type", value)?;
                Kind::parse(&text).ok_or_else(|| ConfigError::UnknownType {
                    file: self.cx.file.to_path_buf(),
                    server: self.server.to_owned(),
                    value: text,
                })?
            }
            // Without a type, a command means stdio (Claude Code's default) and a url means a
            // remote server; a ws:// url can only mean WebSocket, so it says so itself.
            None if command.is_some() => Kind::Stdio,
            None => match &url {
                Some(Value::String(url)) if has_scheme(url, &["ws", "wss"]) => Kind::Ws,
                Some(_) => Kind::Http,
                None => return Err(self.missing("command", self.missing_command_hint())),
            },
        };

        if kind == Kind::Stdio {
            self.unused(kind, &[("url", &url), ("headers", &headers)])?;
            let command = match command {
                Some(command) => self.expanded("command", command)?,
                None => return Err(self.missing("command", self.missing_command_hint())),
            };
            if command.trim().is_empty() {
                return Err(self.invalid(
                    Some("command"),
                    "is empty: give the program to run, like \"npx\"",
                ));
            }
            let args = match args {
                Some(args) => self.expanded_list("args", args)?,
                None => Vec::new(),
            };
            let env = match env {
                Some(env) => self.expanded_map("env", env)?,
                None => BTreeMap::new(),
            };
            let cwd = match cwd {
                Some(cwd) => Some(self.cwd(cwd)?),
                None => None,
            };
            return Ok(TransportSpec::Stdio {
                command,
                args,
                env,
                cwd,
            });
        }

        self.unused(
            kind,
            &[
                ("command", &command),
                ("args", &args),
                ("env", &env),
                ("cwd", &cwd),
            ],
        )?;
        let url = match url {
            Some(url) => self.expanded("url", url)?,
            None => return Err(self.missing("url", self.missing_url_hint(kind))),
        };
        self.check_url(kind, &url)?;
        let headers = match headers {
            Some(headers) => self.expanded_map("headers", headers)?,
            None => BTreeMap::new(),
        };
        Ok(match kind {
            Kind::Sse => TransportSpec::Sse { url, headers },
            Kind::Ws => TransportSpec::Ws { url, headers },
            Kind::Stdio | Kind::Http => TransportSpec::Http { url, headers },
        })
    }

    /// Fields that do not apply to `kind`: an error in `mcpmux.toml`, a debug note elsewhere
    /// (other tools' files carry leftovers we must not refuse).
    fn unused(&self, kind: Kind, fields: &[(&str, &Option<Value>)]) -> Result<(), ConfigError> {
        for (field, value) in fields {
            if value.is_none() {
                continue;
            }
            if self.strict() {
                let fix = if kind == Kind::Stdio {
                    "remove it, or set type = \"http\" for a remote server".to_owned()
                } else {
                    "remove it, or drop `type`/`url` for a local (stdio) server".to_owned()
                };
                return Err(self.invalid(
                    Some(field),
                    format!(
                        "does not apply to {} {} server: {fix}",
                        kind.article(),
                        kind.name()
                    ),
                ));
            }
            tracing::debug!(server = %self.server, file = %self.cx.file.display(), field, transport = kind.name(), "field ignored: does not apply to this transport");
        }
        Ok(())
    }

    fn missing_command_hint(&self) -> String {
        match self.cx.dialect {
            Dialect::Mcpmux => {
                "a stdio server needs a command (or set type = \"http\" with a url)".to_owned()
            }
            _ => "a stdio server needs a command (or set \"type\": \"http\" with a \"url\")"
                .to_owned(),
        }
    }

    fn missing_url_hint(&self, kind: Kind) -> String {
        let example = match kind {
            Kind::Ws => "wss://example.com/mcp",
            _ => "https://example.com/mcp",
        };
        format!(
            "{} {} server needs a url, like \"{example}\"",
            kind.article(),
            kind.name()
        )
    }

    /// A URL with the scheme its transport speaks and something after `://`.
    fn check_url(&self, kind: Kind, url: &str) -> Result<(), ConfigError> {
        let schemes: &[&str] = match kind {
            Kind::Ws => &["ws", "wss"],
            _ => &["http", "https"],
        };
        let problem = if !has_scheme(url, schemes) {
            let wanted = schemes
                .iter()
                .map(|scheme| format!("{scheme}://"))
                .collect::<Vec<_>>()
                .join(" or ");
            let switch = if kind == Kind::Ws {
                ""
            } else if has_scheme(url, &["ws", "wss"]) {
                " (or set type to \"ws\" for a WebSocket server)"
            } else {
                ""
            };
            format!(
                "\"{url}\" is not a URL {} {} server can use: it must start with {wanted}{switch}",
                kind.article(),
                kind.name()
            )
        } else if url
            .split_once("://")
            .is_none_or(|(_, rest)| rest.is_empty() || rest.starts_with('/'))
        {
            format!(
                "\"{url}\" has no host: write it like \"{}\"",
                match kind {
                    Kind::Ws => "wss://example.com/mcp",
                    _ => "https://example.com/mcp",
                }
            )
        } else if url.chars().any(char::is_whitespace) {
            format!("\"{url}\" contains whitespace: percent-encode it (%20) or remove it")
        } else {
            return Ok(());
        };
        Err(self.invalid(Some("url"), problem))
    }

    /// `cwd`: `~` and `~/` mean home; relative paths are relative to the config file's folder,
    /// so a project's config means the same whichever directory mcpmux runs from.
    fn cwd(&self, value: Value) -> Result<PathBuf, ConfigError> {
        // The editors write `${workspaceFolder}` here; Claude's and our own files never
        // expanded `cwd`, and keep it so.
        let text = match self.cx.dialect {
            Dialect::Claude | Dialect::Mcpmux | Dialect::Codex => self.string("cwd", value)?,
            _ => self.expanded("cwd", value)?,
        };
        if text.is_empty() {
            return Err(self.invalid(
                Some("cwd"),
                "is empty: give a directory, or remove the field to use the current one",
            ));
        }
        let path = if text == "~" || text.starts_with("~/") {
            let Some(home) = self.cx.home else {
                return Err(self.invalid(
                    Some("cwd"),
                    format!("\"{text}\" starts with ~ but the home directory is unknown: set HOME or give an absolute path"),
                ));
            };
            home.join(text.get(2..).unwrap_or(""))
        } else {
            PathBuf::from(&text)
        };
        // Gemini CLI runs servers from the workspace, so its relative `cwd` starts there.
        if self.cx.dialect == Dialect::Gemini && path.is_relative() {
            return Ok(self.cx.workspace.join(path));
        }
        Ok(self.relative_to_file(&path))
    }
}

/// Fields whose values are never printed: env and header values are redacted wherever a spec
/// is shown, and so are the OAuth credentials (`clientSecret`, `privateKey`, `assertion`,
/// `idToken`); OAuth ids, URLs, scopes and file paths are shown, so no secret goes there.
fn secret_allowed(field: &str) -> bool {
    if field.starts_with("env.") || field.starts_with("headers.") {
        return true;
    }
    matches!(
        field,
        "oauth.clientSecret"
            | "oauth.privateKey"
            | "oauth.assertion"
            | "oauth.idToken"
            | "oauth.idp.clientSecret"
    )
}

/// Whether `url` starts with one of `schemes` followed by `://` (case-insensitive, as URLs are).
fn has_scheme(url: &str, schemes: &[&str]) -> bool {
    url.split_once("://").is_some_and(|(scheme, _)| {
        schemes
            .iter()
            .any(|wanted| scheme.eq_ignore_ascii_case(wanted))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_aliases() {
        for (text, kind) in [
            ("stdio", Kind::Stdio),
            ("http", Kind::Http),
            ("streamable-http", Kind::Http),
            ("streamableHttp", Kind::Http),
            ("streamable_http", Kind::Http),
            ("sse", Kind::Sse),
            ("ws", Kind::Ws),
            ("websocket", Kind::Ws),
            ("HTTP", Kind::Http),
        ] {
            assert_eq!(Kind::parse(text), Some(kind), "{text}");
        }
        assert_eq!(Kind::parse("grpc"), None);
    }

    #[test]
    fn raw_transport_takes_exactly_its_keys() {
        let mut map = Map::new();
        for key in ["type", "command", "args", "env", "cwd", "url", "headers"] {
            map.insert(key.to_owned(), Value::from("x"));
        }
        map.insert("other".to_owned(), Value::from(1));
        let raw = RawTransport::take(&mut map);
        assert!(raw.defines_server());
        assert_eq!(raw.detail_fields(), ["args", "env", "cwd", "headers"]);
        assert_eq!(map.keys().collect::<Vec<_>>(), ["other"]);
    }

    #[test]
    fn schemes_are_case_insensitive() {
        assert!(has_scheme("HTTPS://x", &["https"]));
        assert!(!has_scheme("https//x", &["https"]));
        assert!(!has_scheme("ftp://x", &["http", "https"]));
    }
}
