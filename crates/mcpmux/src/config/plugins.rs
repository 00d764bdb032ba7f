//! Servers that arrive with plugins rather than being written by the person: the MCP servers of
//! Claude Code plugins enabled in `~/.claude/settings.json` (`enabledPlugins`), found through
//! `~/.claude/plugins/installed_plugins.json`, each in the plugin's `.mcp.json` or the
//! `mcpServers` of its `.claude-plugin/plugin.json`; and `plugins/*/mcp.json` beside mcpmux's
//! user config. `${CLAUDE_PLUGIN_ROOT}` is the plugin's folder.
//!
//! They are read before every other file, marked [`Origin::Plugin`] and merged like user
//! files, so a hand-written server of the same name replaces a plugin's, and `dedup.rs` drops a
//! plugin server that repeats another's signature. A plugin folder is someone else's work:
//! every file is capped in size and must be a regular file, at most [`MAX_PLUGINS`] plugins are
//! read, and a bad plugin is one problem while the others load. Knows nothing of connections.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::claude::{self, Shape};
use super::discover::{self, FileScope};
use super::entry::Entry;
use super::fields::Context;
use super::secrets::SecretSource;
use super::write::read_capped;
use super::{ConfigError, ConfigSet, Dialect, LoadOptions, Origin, ServerSpec, Step, merge};

/// Most plugins read per load: far more than anyone enables, few enough that a folder filled
/// with thousands costs little.
pub(crate) const MAX_PLUGINS: usize = 256;

/// Largest plugin file read (`.mcp.json`, `plugin.json`, Claude's plugin registry and
/// settings): a server list is a few KiB.
const MAX_PLUGIN_FILE: u64 = 1024 * 1024;

/// One file of one plugin that may define servers.
#[derive(Debug)]
struct PluginFile {
    /// The file.
    path: PathBuf,
    /// The plugin's folder, `${CLAUDE_PLUGIN_ROOT}`.
    root: PathBuf,
    /// What `mcpmux servers` shows as the source.
    source: String,
}

/// Reads every plugin's servers into `merged`, before the person's own files.
pub(crate) fn load(
    set: &mut ConfigSet,
    merged: &mut BTreeMap<String, Option<ServerSpec>>,
    scopes: &mut BTreeMap<String, FileScope>,
    options: &LoadOptions,
    env: &dyn Fn(&str) -> Option<String>,
    secrets: &SecretSource,
) {
    let mut files = Vec::new();
    if let Some(config_home) = discover::config_home(options.home.as_deref(), env) {
        mcpmux_plugins(&config_home.join("mcpmux").join("plugins"), set, &mut files);
    }
    if let Some(home) = &options.home {
        claude_plugins(home, set, &mut files);
    }
    for file in files {
        read_plugin_file(&file, set, merged, scopes, options, env, secrets);
    }
}

/// `plugins/NAME/mcp.json` beside the user config, in name order.
fn mcpmux_plugins(dir: &Path, set: &mut ConfigSet, files: &mut Vec<PluginFile>) {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return,
        Err(source) => {
            set.problem(ConfigError::Read {
                file: dir.to_path_buf(),
                source,
            });
            return;
        }
    };
    // Bounded before sorting: a folder with millions of entries is not listed to its end.
    let mut folders: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .take(MAX_PLUGINS * 4)
        .map(|entry| entry.path())
        .filter(|path| path.is_dir())
        .collect();
    folders.sort();
    if folders.len() > MAX_PLUGINS {
        tracing::warn!(dir = %dir.display(), limit = MAX_PLUGINS, "too many plugin folders; the first ones in name order are read");
        folders.truncate(MAX_PLUGINS);
    }
    for root in folders {
        let name = root
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        files.push(PluginFile {
            path: root.join("mcp.json"),
            source: format!("plugin {} ({})", shown(&name), root.display()),
            root,
        });
    }
}

/// Claude Code's enabled plugins, in the order of their ids.
fn claude_plugins(home: &Path, set: &mut ConfigSet, files: &mut Vec<PluginFile>) {
    // The settings file is also read as a config file, which reports its problems once.
    let settings = home.join(".claude").join("settings.json");
    let settings = match read_capped(&settings, MAX_PLUGIN_FILE) {
        Ok(Some(text)) => serde_json::from_str::<Value>(&text).ok(),
        _ => None,
    };
    let Some(Value::Object(settings)) = settings else {
        return;
    };
    let Some(Value::Object(enabled)) = settings.get("enabledPlugins") else {
        return;
    };
    let enabled: Vec<&String> = enabled
        .iter()
        .filter(|(_, on)| **on == Value::Bool(true))
        .map(|(id, _)| id)
        .collect();
    if enabled.is_empty() {
        return;
    }
    let plugins_dir = home.join(".claude").join("plugins");
    let registry = plugins_dir.join("installed_plugins.json");
    let Some(Value::Object(registry_root)) =
        read_json(&registry, set, "none of Claude Code's plugins'")
    else {
        return;
    };
    let Some(Value::Object(installed)) = registry_root.get("plugins") else {
        return;
    };
    for id in enabled.into_iter().take(MAX_PLUGINS) {
        let Some(root) = install_path(installed.get(id.as_str())) else {
            tracing::debug!(plugin = %id, "enabled plugin not installed: skipped");
            continue;
        };
        let root = if root.is_absolute() {
            root
        } else {
            plugins_dir.join(root)
        };
        let source = format!("plugin {} (Claude Code)", shown(id));
        let dot_mcp = root.join(".mcp.json");
        if dot_mcp.exists() {
            files.push(PluginFile {
                path: dot_mcp,
                root: root.clone(),
                source: source.clone(),
            });
        }
        manifest_files(&root, &source, set, files);
    }
}

/// Where a registry entry says the plugin is: version 1 holds one object, version 2 a list of
/// installs (the first one is used).
fn install_path(entry: Option<&Value>) -> Option<PathBuf> {
    let entry = match entry? {
        Value::Array(installs) => installs.first()?,
        other => other,
    };
    let path = entry.get("installPath")?.as_str()?;
    (!path.is_empty()).then(|| PathBuf::from(path))
}

/// `mcpServers` of `.claude-plugin/plugin.json`: inline (the manifest is read as a server
/// file), or a path or list of paths inside the plugin's folder.
fn manifest_files(root: &Path, source: &str, set: &mut ConfigSet, files: &mut Vec<PluginFile>) {
    let manifest = root.join(".claude-plugin").join("plugin.json");
    if !manifest.exists() {
        return;
    }
    let Some(value) = read_json(&manifest, set, "none of the plugin's") else {
        return;
    };
    let paths: Vec<&Value> = match value.get("mcpServers") {
        None | Some(Value::Null) => return,
        Some(Value::Object(_)) => {
            files.push(PluginFile {
                path: manifest.clone(),
                root: root.to_path_buf(),
                source: source.to_owned(),
            });
            return;
        }
        Some(Value::Array(items)) => items.iter().take(16).collect(),
        Some(other) => vec![other],
    };
    for path in paths {
        let Some(relative) = path.as_str() else {
            set.problem(ConfigError::InvalidValue {
                file: manifest.clone(),
                server: None,
                field: Some("mcpServers".to_owned()),
                message: "expected an object of servers or a path to a JSON file: the plugin's servers are not used".to_owned(),
            });
            continue;
        };
        match inside(root, relative) {
            Some(path) => files.push(PluginFile {
                path,
                root: root.to_path_buf(),
                source: source.to_owned(),
            }),
            None => set.problem(ConfigError::InvalidValue {
                file: manifest.clone(),
                server: None,
                field: Some("mcpServers".to_owned()),
                message: format!(
                    "\"{}\" is outside the plugin's folder: a plugin's server file must be inside it",
                    shown(relative)
                ),
            }),
        }
    }
}

/// `relative` under `root`, when it does not climb out (`..`, an absolute path).
fn inside(root: &Path, relative: &str) -> Option<PathBuf> {
    let path = Path::new(relative);
    let climbs = path.components().any(|c| {
        !matches!(
            c,
            std::path::Component::Normal(_) | std::path::Component::CurDir
        )
    });
    (!climbs).then(|| root.join(path))
}

/// A small JSON file, or a problem saying `whose` servers are left out; `None` when absent or
/// bad.
fn read_json(path: &Path, set: &mut ConfigSet, whose: &str) -> Option<Value> {
    let text = match read_capped(path, MAX_PLUGIN_FILE) {
        Ok(Some(text)) => text,
        Ok(None) => return None,
        Err(source) => {
            set.problem(ConfigError::Read {
                file: path.to_path_buf(),
                source,
            });
            return None;
        }
    };
    match serde_json::from_str(&text) {
        Ok(value) => Some(value),
        Err(error) => {
            set.problem(ConfigError::Parse {
                file: path.to_path_buf(),
                format: "JSON",
                line: Some(error.line()).filter(|line| *line > 0),
                column: Some(error.column().max(1)),
                message: format!("not valid JSON: {whose} servers are used until it is fixed"),
            });
            None
        }
    }
}

/// One plugin file's servers, each marked as the plugin's and merged as a user file's.
fn read_plugin_file(
    file: &PluginFile,
    set: &mut ConfigSet,
    merged: &mut BTreeMap<String, Option<ServerSpec>>,
    scopes: &mut BTreeMap<String, FileScope>,
    options: &LoadOptions,
    env: &dyn Fn(&str) -> Option<String>,
    secrets: &SecretSource,
) {
    if let Err(exposed) = super::perms::check_not_writable_by_others(&file.path) {
        set.problem(ConfigError::Exposed {
            file: file.path.clone(),
            problem: exposed.problem,
            fix: exposed.fix,
        });
        return;
    }
    let text = match read_capped(&file.path, MAX_PLUGIN_FILE) {
        Ok(Some(text)) => text,
        Ok(None) => return,
        Err(source) => {
            set.problem(ConfigError::Read {
                file: file.path.clone(),
                source,
            });
            return;
        }
    };
    set.files.push(file.path.clone());
    let root = file.root.display().to_string();
    let plugin_env = |name: &str| {
        if name == "CLAUDE_PLUGIN_ROOT" {
            Some(root.clone())
        } else {
            env(name)
        }
    };
    let cx = Context {
        file: &file.path,
        dialect: Dialect::Claude,
        env: &plugin_env,
        home: options.home.as_deref(),
        gate: None,
        secrets,
        workspace: &options.project_dir,
        inputs: None,
        only: options.only.as_ref(),
    };
    let shape = Shape {
        flat: true,
        project_dir: None,
    };
    let entries = match claude::parse(&text, &cx, &shape) {
        Ok(entries) => entries,
        Err(error) => {
            set.problem(error);
            return;
        }
    };
    for error in entries.problems {
        set.problem(error);
    }
    for (name, entry) in entries.entries {
        let entry = entry.map(|entry| match entry {
            Entry::Define(mut spec) => {
                spec.origin = Origin::Plugin {
                    source: file.source.clone(),
                };
                Entry::Define(spec)
            }
            other => other,
        });
        let step = Step {
            file: &file.path,
            scope: FileScope::User,
            project: &options.project_dir,
        };
        merge(set, merged, scopes, &step, name, entry);
    }
}

/// Text from a plugin's files as shown in a message: control characters escaped, cut.
fn shown(text: &str) -> String {
    text.chars()
        .take(120)
        .flat_map(char::escape_default)
        .collect()
}
