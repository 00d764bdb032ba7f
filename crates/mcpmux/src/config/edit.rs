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
use super::edit_args::{EditError, NewServer, NewTransport};
use super::json_doc::Doc;
use super::write::{self, read_bounded};

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
