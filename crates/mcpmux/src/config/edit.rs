//! Adding and removing a server in a config file the person keeps: the user `config.toml`
//! (edited with `toml_edit`, so comments, order and formatting stay) or a project's
//! `.mcp.json` (Claude Code's format, so Claude Code reads the same entry; other keys and
//! their order stay). What `mcpmux add` / `mcpmux remove` do, for any harness.
//!
//! Everything given is checked before a byte is written (name, URL, `K=V`, `K: V`), and the
//! entry written is the one `config::load` reads back. Values are written as given, so
//! `${VAR}` and `${secret:NAME}` stay references, expanded at load. Knows nothing of
//! connections or of which servers are running.

use std::path::{Path, PathBuf};

use super::LoadOptions;
use super::discover;
use super::json_doc::Doc;
use super::write::{self, read_bounded};

/// Longest server name accepted: names become part of `mcp__server__tool` (64 chars at most
/// for most providers), so a longer one could never be exposed unshortened.
const MAX_NAME: usize = 64;

/// Which file `add` writes and `remove` edits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum EditScope {
    /// The person's own `$XDG_CONFIG_HOME/mcpmux/config.toml` (`~/.config/mcpmux/config.toml`):
    /// every project, never shared.
    User,
    /// The project's `.mcp.json`, shared with whoever clones it (Claude Code reads it too).
    Project,
}

impl std::str::FromStr for EditScope {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "user" => Ok(EditScope::User),
            "project" => Ok(EditScope::Project),
            other => Err(format!(
                "\"{other}\" is not a scope: use user (your config.toml) or project (.mcp.json)"
            )),
        }
    }
}

/// How the server written is reached.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum NewTransport {
    /// A command run as a child process.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// `env`, in the order given.
        env: Vec<(String, String)>,
    },
    /// A remote server.
    Remote {
        /// `http`, `sse` or `ws`.
        kind: &'static str,
        /// The URL.
        url: String,
        /// `headers`, in the order given.
        headers: Vec<(String, String)>,
    },
}

/// A checked server entry, ready to be written.
#[derive(Clone, PartialEq, Eq)]
pub struct NewServer {
    /// Its name.
    pub name: String,
    /// How it is reached.
    pub transport: NewTransport,
}

impl std::fmt::Debug for NewServer {
    /// Names only: env and header values are often secrets.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (target, keys): (String, Vec<&str>) = match &self.transport {
            NewTransport::Stdio { command, args, env } => (
                std::iter::once(command.as_str())
                    .chain(args.iter().map(String::as_str))
                    .collect::<Vec<_>>()
                    .join(" "),
                env.iter().map(|(k, _)| k.as_str()).collect(),
            ),
            NewTransport::Remote { url, headers, .. } => (
                url.clone(),
                headers.iter().map(|(k, _)| k.as_str()).collect(),
            ),
        };
        f.debug_struct("NewServer")
            .field("name", &self.name)
            .field("target", &target)
            .field("keys", &keys)
            .finish()
    }
}

/// Why an entry could not be added or removed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EditError {
    /// The name is not one a server can have.
    #[error(
        "\"{name}\" is not a valid server name: use letters, digits, - and _ (1 to 64 of them)"
    )]
    InvalidName {
        /// The name as given.
        name: String,
    },
    /// An argument is malformed; `given` never holds a value that may be secret.
    #[error("{flag} {given}: {reason}")]
    InvalidArgument {
        /// The option (`--url`, `--env`, `--header`, `--transport`, the command).
        flag: &'static str,
        /// What was given (for `--env`/`--header`, only the key).
        given: String,
        /// What is wrong and what to write.
        reason: String,
    },
    /// The file already has a server of that name.
    #[error("{}: a server named \"{name}\" is already there: pick another name, or give --force to replace it", file.display())]
    Exists {
        /// The name.
        name: String,
        /// The file.
        file: PathBuf,
    },
    /// No file looked in has a server of that name.
    #[error(
        "no server named \"{name}\" in {}: `mcpmux servers` lists the servers and the files they come from",
        list(files)
    )]
    NotFound {
        /// The name.
        name: String,
        /// Every file looked in.
        files: Vec<PathBuf>,
    },
    /// The name is in more than one file and no scope says which.
    #[error(
        "server \"{name}\" is in {}: give --scope user or --scope project",
        list(files)
    )]
    Ambiguous {
        /// The name.
        name: String,
        /// The files it is in.
        files: Vec<PathBuf>,
    },
    /// The file cannot be read, parsed or written, or its servers are not a table/object.
    #[error("{}: {message}", file.display())]
    File {
        /// The file.
        file: PathBuf,
        /// What is wrong and what to do; nothing was written.
        message: String,
    },
    /// User scope with neither a home directory nor `XDG_CONFIG_HOME`.
    #[error(
        "there is no user config folder: set HOME (or XDG_CONFIG_HOME), or use --scope project"
    )]
    NoUserConfig,
}

fn list(files: &[PathBuf]) -> String {
    files
        .iter()
        .map(|f| f.display().to_string())
        .collect::<Vec<_>>()
        .join(" and ")
}

/// Whether `name` can be a server name: letters, digits, `-`, `_`, at most 64.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

impl NewServer {
    /// A command-line server; `env` holds `K=V` items.
    pub fn stdio(
        name: &str,
        command_line: &[String],
        env: &[String],
        headers: &[String],
    ) -> Result<Self, EditError> {
        check_name(name)?;
        if !headers.is_empty() {
            return Err(EditError::InvalidArgument {
                flag: "--header",
                given: header_key(&headers[0]),
                reason:
                    "headers go to remote servers: use --url for one, or pass the value with --env"
                        .to_owned(),
            });
        }
        let Some((command, args)) = command_line.split_first() else {
            return Err(EditError::InvalidArgument {
                flag: "the command",
                given: "(none)".to_owned(),
                reason: "give the command after --, like `mcpmux add fs -- npx -y @modelcontextprotocol/server-filesystem ~/notes`, or --url for a remote server".to_owned(),
            });
        };
        if command.trim().is_empty() {
            return Err(EditError::InvalidArgument {
                flag: "the command",
                given: "\"\"".to_owned(),
                reason: "is empty: give the program to run, like npx".to_owned(),
            });
        }
        if let Some(bad) = command_line.iter().find(|a| a.contains('\0')) {
            return Err(EditError::InvalidArgument {
                flag: "the command",
                given: bad.replace('\0', "\\0"),
                reason: "contains a NUL byte, which no program can receive".to_owned(),
            });
        }
        let env = env
            .iter()
            .map(|item| env_pair(item))
            .collect::<Result<_, _>>()?;
        Ok(NewServer {
            name: name.to_owned(),
            transport: NewTransport::Stdio {
                command: command.clone(),
                args: args.to_vec(),
                env,
            },
        })
    }

    /// A remote server at `url`; `transport` is `http`, `sse` or `ws` (default: from the
    /// URL's scheme); `headers` holds `K: V` items.
    pub fn remote(
        name: &str,
        url: &str,
        transport: Option<&str>,
        env: &[String],
        headers: &[String],
    ) -> Result<Self, EditError> {
        check_name(name)?;
        if let Some(item) = env.first() {
            return Err(EditError::InvalidArgument {
                flag: "--env",
                given: item.split('=').next().unwrap_or_default().to_owned(),
                reason: "environment variables go to a command's process: a remote server takes --header".to_owned(),
            });
        }
        let bad_url = |reason: String| EditError::InvalidArgument {
            flag: "--url",
            given: url.to_owned(),
            reason,
        };
        let parsed = url::Url::parse(url).map_err(|e| {
            bad_url(format!(
                "not a URL ({e}): write it in full, like https://example.com/mcp"
            ))
        })?;
        let scheme = parsed.scheme();
        let kind = match transport.map(str::to_ascii_lowercase).as_deref() {
            None if matches!(scheme, "ws" | "wss") => "ws",
            None => "http",
            Some("http" | "streamable-http") => "http",
            Some("sse") => "sse",
            Some("ws" | "websocket") => "ws",
            Some(other) => {
                return Err(EditError::InvalidArgument {
                    flag: "--transport",
                    given: other.to_owned(),
                    reason: "is not a transport: use http, sse or ws".to_owned(),
                });
            }
        };
        let schemes: &[&str] = if kind == "ws" {
            &["ws", "wss"]
        } else {
            &["http", "https"]
        };
        if !schemes.contains(&scheme) {
            return Err(bad_url(format!(
                "a {kind} server needs a {} URL, not {scheme}://",
                schemes.join(":// or ") + "://"
            )));
        }
        if parsed.host_str().is_none_or(str::is_empty) {
            return Err(bad_url(
                "has no host: write it like https://example.com/mcp".to_owned(),
            ));
        }
        let headers = headers
            .iter()
            .map(|item| header_pair(item))
            .collect::<Result<_, _>>()?;
        Ok(NewServer {
            name: name.to_owned(),
            transport: NewTransport::Remote {
                kind,
                url: url.to_owned(),
                headers,
            },
        })
    }
}

fn check_name(name: &str) -> Result<(), EditError> {
    if valid_name(name) {
        Ok(())
    } else {
        Err(EditError::InvalidName {
            name: name
                .chars()
                .take(80)
                .flat_map(char::escape_default)
                .collect(),
        })
    }
}

/// `K=V`: a variable name, then anything (a value may hold `=`).
fn env_pair(item: &str) -> Result<(String, String), EditError> {
    let Some((key, value)) = item.split_once('=') else {
        return Err(EditError::InvalidArgument {
            flag: "--env",
            // Without a separator it may be a value typed in the wrong place: never echoed.
            given: "(not shown)".to_owned(),
            reason: "has no =: write KEY=value".to_owned(),
        });
    };
    let mut chars = key.chars();
    let valid = matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !valid {
        return Err(EditError::InvalidArgument {
            flag: "--env",
            given: key_shown(key),
            reason: "is not a variable name: use letters, digits and _, not starting with a digit"
                .to_owned(),
        });
    }
    if value.contains('\0') {
        return Err(EditError::InvalidArgument {
            flag: "--env",
            given: key.to_owned(),
            reason: "the value contains a NUL byte, which no environment can hold".to_owned(),
        });
    }
    Ok((key.to_owned(), value.to_owned()))
}

/// `K: V` (or `K:V`): an HTTP header name and a value without control characters.
fn header_pair(item: &str) -> Result<(String, String), EditError> {
    let Some((key, value)) = item.split_once(':') else {
        return Err(EditError::InvalidArgument {
            flag: "--header",
            given: "(not shown)".to_owned(),
            reason: "has no colon: write \"Name: value\"".to_owned(),
        });
    };
    let key = key.trim();
    if http::HeaderName::from_bytes(key.as_bytes()).is_err() {
        return Err(EditError::InvalidArgument {
            flag: "--header",
            given: key_shown(key),
            reason: "is not a header name: use letters, digits and -, like Authorization"
                .to_owned(),
        });
    }
    let value = value.trim();
    if http::HeaderValue::from_str(value).is_err() {
        return Err(EditError::InvalidArgument {
            flag: "--header",
            given: key.to_owned(),
            reason: "the value holds a line break or another control character, which no header can carry".to_owned(),
        });
    }
    Ok((key.to_owned(), value.to_owned()))
}

fn header_key(item: &str) -> String {
    key_shown(item.split(':').next().unwrap_or_default())
}

/// A key as shown in a message: escaped, cut (it may be anything the person typed).
fn key_shown(text: &str) -> String {
    let shown: String = text
        .chars()
        .take(40)
        .flat_map(char::escape_default)
        .collect();
    format!("\"{shown}\"")
}

/// The file `scope` edits, for the person and project `options` describe.
pub fn scope_file(scope: EditScope, options: &LoadOptions) -> Result<PathBuf, EditError> {
    scope_file_with_env(scope, options, &|name| std::env::var(name).ok())
}

/// [`scope_file`] with the environment given as a lookup (`XDG_CONFIG_HOME`).
pub fn scope_file_with_env(
    scope: EditScope,
    options: &LoadOptions,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<PathBuf, EditError> {
    match scope {
        EditScope::User => discover::config_home(options.home.as_deref(), env)
            .map(|dir| dir.join("mcpmux").join("config.toml"))
            .ok_or(EditError::NoUserConfig),
        EditScope::Project => Ok(options.project_dir.join(".mcp.json")),
    }
}

/// What [`add`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Added {
    /// The name was new in the file.
    New,
    /// `force` replaced an entry of that name.
    Replaced,
}

/// Writes `server` into `file` (`.toml`: mcpmux's dialect; anything else: Claude JSON),
/// keeping everything else in it. An entry of that name is refused unless `force`.
pub fn add(file: &Path, server: &NewServer, force: bool) -> Result<Added, EditError> {
    let text = read(file)?;
    let (bytes, added) = if is_toml(file) {
        toml_add(file, text.as_deref(), server, force)?
    } else {
        json_add(file, text.as_deref(), server, force)?
    };
    let (file_mode, dir_mode) = if is_toml(file) {
        (0o600, 0o700)
    } else {
        (0o644, 0o755)
    };
    write::write_atomic(file, &bytes, file_mode, dir_mode).map_err(|e| EditError::File {
        file: file.to_path_buf(),
        message: format!("cannot write it: {e}"),
    })?;
    tracing::info!(server = %server.name, file = %file.display(), ?added, "server written");
    Ok(added)
}

/// Removes the server `name` from `file`, keeping everything else; `false` (nothing written)
/// when the file or the entry is not there.
pub fn remove(file: &Path, name: &str) -> Result<bool, EditError> {
    let Some(text) = read(file)? else {
        return Ok(false);
    };
    let bytes = if is_toml(file) {
        toml_remove(file, &text, name)?
    } else {
        json_remove(file, &text, name)?
    };
    let Some(bytes) = bytes else {
        return Ok(false);
    };
    write::write_atomic(file, &bytes, 0o600, 0o700).map_err(|e| EditError::File {
        file: file.to_path_buf(),
        message: format!("cannot write it: {e}"),
    })?;
    tracing::info!(server = %name, file = %file.display(), "server removed");
    Ok(true)
}

/// Removes `name` from the file of `scope`, or, without one, from whichever of the user and
/// project files holds it; the file it was removed from.
pub fn remove_in_scope(
    options: &LoadOptions,
    scope: Option<EditScope>,
    name: &str,
) -> Result<PathBuf, EditError> {
    let given = scope;
    let scopes = match scope {
        Some(scope) => vec![scope],
        None => vec![EditScope::User, EditScope::Project],
    };
    let mut files = Vec::new();
    for scope in scopes {
        match scope_file(scope, options) {
            Ok(file) => files.push(file),
            // Without a home, only the project file can hold it.
            Err(EditError::NoUserConfig) if given.is_none() => {}
            Err(error) => return Err(error),
        }
    }
    let holding: Vec<PathBuf> = files
        .iter()
        .filter_map(|file| match holds(file, name) {
            Ok(true) => Some(Ok(file.clone())),
            Ok(false) => None,
            Err(error) => Some(Err(error)),
        })
        .collect::<Result<_, _>>()?;
    match holding.as_slice() {
        [] => Err(EditError::NotFound {
            name: name.to_owned(),
            files,
        }),
        [file] => {
            remove(file, name)?;
            Ok(file.clone())
        }
        _ => Err(EditError::Ambiguous {
            name: name.to_owned(),
            files: holding,
        }),
    }
}

/// Whether `file` has an entry `name`.
fn holds(file: &Path, name: &str) -> Result<bool, EditError> {
    let Some(text) = read(file)? else {
        return Ok(false);
    };
    Ok(if is_toml(file) {
        toml_remove(file, &text, name)?.is_some()
    } else {
        json_remove(file, &text, name)?.is_some()
    })
}

fn is_toml(file: &Path) -> bool {
    file.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("toml"))
}

fn read(file: &Path) -> Result<Option<String>, EditError> {
    read_bounded(file).map_err(|e| EditError::File {
        file: file.to_path_buf(),
        message: format!("cannot read it: {e}"),
    })
}

fn exists(server: &NewServer, file: &Path) -> EditError {
    EditError::Exists {
        name: server.name.clone(),
        file: file.to_path_buf(),
    }
}

// ---- mcpmux's TOML ----

fn toml_parse(file: &Path, text: &str) -> Result<toml_edit::DocumentMut, EditError> {
    text.parse::<toml_edit::DocumentMut>()
        .map_err(|e| EditError::File {
            file: file.to_path_buf(),
            message: format!("not valid TOML, so nothing was changed: {}", e.message()),
        })
}

fn toml_add(
    file: &Path,
    text: Option<&str>,
    server: &NewServer,
    force: bool,
) -> Result<(Vec<u8>, Added), EditError> {
    use toml_edit::{Array, InlineTable, Item, Table, value};
    let mut doc = toml_parse(file, text.unwrap_or(""))?;
    let servers = doc.entry("servers").or_insert_with(|| {
        let mut table = Table::new();
        table.set_implicit(true);
        Item::Table(table)
    });
    // `servers = { fs = { ... } }` stays inline; the usual `[servers.fs]` stays a table.
    let inline = servers.is_inline_table();
    let Some(servers) = servers.as_table_like_mut() else {
        return Err(EditError::File {
            file: file.to_path_buf(),
            message: "\"servers\" is not a table: fix the file, then add again".to_owned(),
        });
    };
    let added = if servers.contains_key(&server.name) {
        if !force {
            return Err(exists(server, file));
        }
        Added::Replaced
    } else {
        Added::New
    };
    let mut entry = Table::new();
    let map = |pairs: &[(String, String)]| {
        let mut inline = InlineTable::new();
        for (k, v) in pairs {
            inline.insert(k, v.as_str().into());
        }
        value(inline)
    };
    match &server.transport {
        NewTransport::Stdio { command, args, env } => {
            entry.insert("command", value(command.as_str()));
            if !args.is_empty() {
                entry.insert("args", value(args.iter().collect::<Array>()));
            }
            if !env.is_empty() {
                entry.insert("env", map(env));
            }
        }
        NewTransport::Remote { kind, url, headers } => {
            entry.insert("type", value(*kind));
            entry.insert("url", value(url.as_str()));
            if !headers.is_empty() {
                entry.insert("headers", map(headers));
            }
        }
    }
    if inline {
        servers.insert(&server.name, value(entry.into_inline_table()));
    } else {
        servers.insert(&server.name, Item::Table(entry));
    }
    Ok((doc.to_string().into_bytes(), added))
}

fn toml_remove(file: &Path, text: &str, name: &str) -> Result<Option<Vec<u8>>, EditError> {
    let mut doc = toml_parse(file, text)?;
    let Some(servers) = doc.get_mut("servers").and_then(|s| s.as_table_like_mut()) else {
        return Ok(None);
    };
    if servers.remove(name).is_none() {
        return Ok(None);
    }
    Ok(Some(doc.to_string().into_bytes()))
}

// ---- Claude's JSON ----

fn json_parse(file: &Path, text: Option<&str>) -> Result<Doc, EditError> {
    let text = text.unwrap_or("");
    if text.trim().is_empty() {
        return Ok(Doc::Object(Vec::new()));
    }
    let doc: Doc = serde_json::from_str(text).map_err(|e| EditError::File {
        file: file.to_path_buf(),
        message: format!("not valid JSON, so nothing was changed: {e}"),
    })?;
    if !matches!(doc, Doc::Object(_)) {
        return Err(EditError::File {
            file: file.to_path_buf(),
            message: "the top level is not an object, so nothing was changed".to_owned(),
        });
    }
    Ok(doc)
}

/// The object holding the servers: `mcpServers`, or the top level of a flat file (the shapes
/// `claude.rs` reads); `None` when there is none yet.
fn json_servers<'d>(file: &Path, doc: &'d mut Doc) -> Result<Option<&'d mut Doc>, EditError> {
    if doc.contains("mcpServers") {
        return match doc.get_mut("mcpServers") {
            Some(servers @ Doc::Object(_)) => Ok(Some(servers)),
            _ => Err(EditError::File {
                file: file.to_path_buf(),
                message: "\"mcpServers\" is not an object: fix the file, then try again".to_owned(),
            }),
        };
    }
    let Doc::Object(entries) = &*doc else {
        return Ok(None);
    };
    let flat = entries
        .iter()
        .any(|(_, v)| ["command", "url", "type"].iter().any(|k| v.contains(k)));
    Ok(flat.then_some(doc))
}

fn json_add(
    file: &Path,
    text: Option<&str>,
    server: &NewServer,
    force: bool,
) -> Result<(Vec<u8>, Added), EditError> {
    let mut doc = json_parse(file, text)?;
    if json_servers(file, &mut doc)?.is_none()
        && let Doc::Object(entries) = &mut doc
    {
        entries.push(("mcpServers".to_owned(), Doc::Object(Vec::new())));
    }
    let Some(Doc::Object(servers)) = json_servers(file, &mut doc)? else {
        return Err(EditError::File {
            file: file.to_path_buf(),
            message: "no place for servers in it".to_owned(),
        });
    };
    let strings = |pairs: &[(String, String)]| {
        Doc::Object(
            pairs
                .iter()
                .map(|(k, v)| (k.clone(), Doc::String(v.clone())))
                .collect(),
        )
    };
    let entry = match &server.transport {
        NewTransport::Stdio { command, args, env } => {
            let mut fields = vec![
                ("type".to_owned(), Doc::String("stdio".to_owned())),
                ("command".to_owned(), Doc::String(command.clone())),
                (
                    "args".to_owned(),
                    Doc::Array(args.iter().cloned().map(Doc::String).collect()),
                ),
            ];
            if !env.is_empty() {
                fields.push(("env".to_owned(), strings(env)));
            }
            Doc::Object(fields)
        }
        NewTransport::Remote { kind, url, headers } => {
            let mut fields = vec![
                ("type".to_owned(), Doc::String((*kind).to_owned())),
                ("url".to_owned(), Doc::String(url.clone())),
            ];
            if !headers.is_empty() {
                fields.push(("headers".to_owned(), strings(headers)));
            }
            Doc::Object(fields)
        }
    };
    let added = match servers.iter_mut().rev().find(|(k, _)| *k == server.name) {
        Some(_) if !force => return Err(exists(server, file)),
        Some((_, old)) => {
            *old = entry;
            Added::Replaced
        }
        None => {
            servers.push((server.name.clone(), entry));
            Added::New
        }
    };
    // A key repeated by hand would shadow what was just written: keep only the last.
    let mut seen = false;
    let mut keep = Vec::with_capacity(servers.len());
    for (key, value) in servers.drain(..).rev() {
        if key == server.name {
            if seen {
                continue;
            }
            seen = true;
        }
        keep.push((key, value));
    }
    keep.reverse();
    *servers = keep;
    Ok((json_bytes(file, &doc)?, added))
}

fn json_remove(file: &Path, text: &str, name: &str) -> Result<Option<Vec<u8>>, EditError> {
    let mut doc = json_parse(file, Some(text))?;
    let Some(Doc::Object(servers)) = json_servers(file, &mut doc)? else {
        return Ok(None);
    };
    let before = servers.len();
    servers.retain(|(k, _)| k != name);
    if servers.len() == before {
        return Ok(None);
    }
    Ok(Some(json_bytes(file, &doc)?))
}

fn json_bytes(file: &Path, doc: &Doc) -> Result<Vec<u8>, EditError> {
    let mut bytes = serde_json::to_vec_pretty(doc).map_err(|e| EditError::File {
        file: file.to_path_buf(),
        message: format!("cannot write it as JSON: {e}"),
    })?;
    bytes.push(b'\n');
    Ok(bytes)
}

#[cfg(test)]
#[path = "tests/edit.rs"]
mod tests;
