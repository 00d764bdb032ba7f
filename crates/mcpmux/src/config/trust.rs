//! Project approval: a server defined in a project's own files runs only once the person
//! approved that entry, as it is.
//!
//! A cloned repository's `.mcp.json`, `.claude/settings.json` or `mcpmux.toml` is someone else's
//! until approved: its entries are neither started nor `${VAR}`-expanded nor have their
//! `headersHelper` run. Approval is stored in the user's own config folder
//! (`trusted-projects.json`), keyed by the project directory and, per server, by a hash of the
//! raw entry (what runs, where it sends things, and the options that widen what it may do:
//! `tools`, `stages`, `agents`, `side_effects`), so an entry changed later needs approval again.
//! An `mcpmux.toml` table that sets those options on a server another project file defines is
//! approved the same way, on its own; on a server of the person's own it may only tighten. Claude Code's
//! `enableAllProjectMcpServers`, `enabledMcpjsonServers` and `disabledMcpjsonServers` are
//! honoured when they appear in user-level files, never in the project's own. Knows nothing of
//! connections; the dialects ask [`Gate::decide`] before reading an entry.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::trust_view::OPTION_KEYS;
pub use super::trust_view::ProjectEntry;
use super::{Dialect, ServerSpec};
use crate::platform::fs;

/// Decides on a project entry no stored approval covers: `true` starts it (a harness asking
/// its user, or vouching for the directory).
pub type ApproveFn = Arc<dyn Fn(&ProjectEntry) -> bool + Send + Sync>;

/// The file approvals are kept in, inside the user's `mcpmux` config folder.
pub const APPROVALS_FILE: &str = "trusted-projects.json";

/// The fields of an entry its hash covers: everything that decides what runs or where secrets
/// go. Options like timeouts are left out, so tuning them needs no new approval.
const HASHED_KEYS: &[&str] = &[
    "type",
    "command",
    "args",
    "env",
    "cwd",
    "url",
    "headers",
    "headersHelper",
    "headers_helper",
    "oauth",
    // The other tools' names for what runs and what is sent (an entry without them hashes as
    // before, so existing approvals stay valid).
    "envFile",
    "httpUrl",
    "serverUrl",
    "env_vars",
    "bearer_token_env_var",
    "http_headers",
    "env_http_headers",
    // Cursor's OAuth client (`auth`: client id, secret, scopes), read as `oauth` is.
    "auth",
    // What a server may do once it runs: which tools are exposed, in which stages and for which
    // agents, and the side-effect classes the policy sees (relabelling a tool `read` lets a call
    // pass an `ask = ["effect:mutate"]` rule), with the other tools' names for tool filters.
    "tools",
    "stages",
    "agents",
    "side_effects",
    "enabled_tools",
    "disabled_tools",
    "includeTools",
    "excludeTools",
    "disabledTools",
];

/// The keys that make an entry a server definition, in any dialect.
const DEFINING_KEYS: &[&str] = &["type", "command", "url", "httpUrl", "serverUrl"];

/// Why the approvals file could not be read or written.
#[derive(Debug, thiserror::Error)]
#[error("{}: {message}", path.display())]
pub struct TrustFileError {
    /// The approvals file.
    pub path: PathBuf,
    /// What went wrong and what to do (the cause's words included).
    pub message: String,
    /// The cause: the I/O or JSON error, when there is one.
    #[source]
    pub source: Option<Box<dyn std::error::Error + Send + Sync>>,
}

/// Claude Code's approval keys, read from user-level files.
#[derive(Debug, Default, Clone)]
pub(crate) struct ClaudeApprovals {
    all: bool,
    enabled: Vec<String>,
    disabled: Vec<String>,
}

impl ClaudeApprovals {
    /// Adds the keys of one user-level object (settings root, or `projects[<dir>]`).
    fn read(&mut self, object: &Map<String, Value>) {
        if object.get("enableAllProjectMcpServers") == Some(&Value::Bool(true)) {
            self.all = true;
        }
        let names = |key: &str| -> Vec<String> {
            match object.get(key) {
                Some(Value::Array(items)) => items
                    .iter()
                    .filter_map(|item| item.as_str().map(str::to_owned))
                    .collect(),
                _ => Vec::new(),
            }
        };
        self.enabled.extend(names("enabledMcpjsonServers"));
        self.disabled.extend(names("disabledMcpjsonServers"));
    }
}

/// Decides, for one load, which project entries may be read.
pub(crate) struct Gate<'a> {
    project: String,
    stored: BTreeMap<String, String>,
    claude: ClaudeApprovals,
    ask: Option<&'a ApproveFn>,
    /// The servers whose current definition is the person's own (a user-level file, a
    /// plugin): a project table adjusting one may only tighten it (`keep_user_limits`), so it
    /// needs no approval.
    own: std::sync::Mutex<std::collections::BTreeSet<String>>,
}

impl<'a> Gate<'a> {
    /// The gate for `project_dir`: the stored approvals in `store`, Claude's keys in the
    /// user-level files `claude_files`, then `ask`.
    pub fn new(
        project_dir: &Path,
        store: Option<&Path>,
        claude_files: &[PathBuf],
        ask: Option<&'a ApproveFn>,
    ) -> Self {
        let project = project_key(project_dir);
        let stored = match store.map(read_store) {
            Some(Ok(mut approvals)) => approvals.remove(&project).unwrap_or_default(),
            Some(Err(error)) => {
                tracing::warn!(%error, "stored project approvals unreadable; none used");
                BTreeMap::new()
            }
            None => BTreeMap::new(),
        };
        let mut claude = ClaudeApprovals::default();
        for file in claude_files {
            let Ok(text) = std::fs::read_to_string(file) else {
                continue;
            };
            let Ok(Value::Object(root)) = serde_json::from_str::<Value>(&text) else {
                continue;
            };
            claude.read(&root);
            if let Some(project) = super::value::project_object(&root, project_dir) {
                claude.read(project);
            }
        }
        Gate {
            project,
            stored,
            claude,
            ask,
            own: std::sync::Mutex::default(),
        }
    }

    /// Names the servers whose definition so far is the person's own, before the next project
    /// file is read.
    pub fn set_own(&self, names: std::collections::BTreeSet<String>) {
        if let Ok(mut own) = self.own.lock() {
            *own = names;
        }
    }

    /// Whether the raw entry `value` of server `name` in `file` may be read; `None` when it
    /// needs no approval: a shape that defines no server (the dialect refuses it without
    /// running it), or an `mcpmux.toml` table that sets no `tools`, `stages`, `agents` or
    /// `side_effects`, or sets them on a server of the person's own (which it may only tighten).
    pub fn decide(
        &self,
        name: &str,
        file: &Path,
        dialect: Dialect,
        value: &Value,
    ) -> Option<ProjectEntry> {
        let Value::Object(map) = value else {
            return None;
        };
        let set = |keys: &[&str]| {
            keys.iter()
                .any(|key| map.get(*key).is_some_and(|v| !v.is_null()))
        };
        // A table without a transport only adjusts options; one that sets what a server may do
        // is approved like a definition, since it changes what the approval allowed.
        let options_only = !set(DEFINING_KEYS);
        if options_only
            && (dialect != Dialect::Mcpmux
                || !set(OPTION_KEYS)
                || self.own.lock().is_ok_and(|own| own.contains(name)))
        {
            return None;
        }
        let hash = entry_hash(map, options_only);
        let mut entry =
            ProjectEntry::new(name, file.to_path_buf(), map, options_only, hash, dialect);
        let claude = dialect == Dialect::Claude;
        entry.approved = if self.stored.get(&store_key(&entry)) == Some(&entry.hash) {
            true
        } else if entry.options_only {
            self.ask.is_some_and(|ask| ask(&entry))
        } else if claude && self.claude.disabled.iter().any(|n| n == name) {
            false
        } else if claude && (self.claude.all || self.claude.enabled.iter().any(|n| n == name)) {
            true
        } else {
            self.ask.is_some_and(|ask| ask(&entry))
        };
        tracing::debug!(server = %name, file = %file.display(), project = %self.project, approved = entry.approved, "project entry");
        Some(entry)
    }
}

/// Undoes what a project file loosened on a server the person defined in a user-level file (or
/// with `--config`): its `tools.deny` entries stay, an allow list may only narrow, side-effect
/// labels stay as the person set them, `stages` and `agents` may only narrow, and a server they
/// disabled stays disabled. Tightening
/// (more deny entries, disabling) is kept. Each undone change is logged with its reason.
pub(crate) fn keep_user_limits(spec: &mut ServerSpec, user: &ServerSpec, file: &Path) {
    let mut undone = Vec::new();
    let tools = &mut spec.options.tools;
    for pattern in &user.options.tools.deny {
        if !tools.deny.contains(pattern) {
            tools.deny.push(pattern.clone());
            undone.push(format!("tools.deny keeps \"{pattern}\""));
        }
    }
    let user_allow = &user.options.tools.allow;
    if !user_allow.is_empty()
        && (tools.allow.is_empty() || tools.allow.iter().any(|p| !user_allow.contains(p)))
    {
        tools.allow = user_allow.clone();
        undone.push("tools.allow may only drop entries of the user's list".to_owned());
    }
    for (label, narrowed, allowed) in [
        ("stages", &mut spec.options.stages, &user.options.stages),
        ("agents", &mut spec.options.agents, &user.options.agents),
    ] {
        if let Some(allowed) = allowed
            && narrowed
                .as_ref()
                .is_none_or(|list| list.iter().any(|item| !allowed.contains(item)))
        {
            *narrowed = Some(allowed.clone());
            undone.push(format!("{label} may only drop entries of the user's list"));
        }
    }
    if spec.options.side_effects != user.options.side_effects {
        spec.options.side_effects = user.options.side_effects.clone();
        undone.push("side_effects cannot be relabelled by a project file".to_owned());
    }
    if !user.enabled && spec.enabled {
        spec.enabled = false;
        undone.push("a server disabled in a user-level file stays disabled".to_owned());
    }
    for change in undone {
        tracing::warn!(server = %spec.name, file = %file.display(), "project file cannot loosen a user-level server: {change}");
    }
}

/// The key a project's approvals are stored under: its resolved absolute path.
fn project_key(dir: &Path) -> String {
    std::fs::canonicalize(dir)
        .or_else(|_| std::path::absolute(dir))
        .unwrap_or_else(|_| dir.to_path_buf())
        .to_string_lossy()
        .into_owned()
}

/// The name an approval is stored under: the server's, or for an options-only table the
/// server's with ` [options]`, so approving it never stands for the definition it adjusts.
fn store_key(entry: &ProjectEntry) -> String {
    if entry.options_only {
        format!("{} [options]", entry.name)
    } else {
        entry.name.clone()
    }
}

/// SHA-256 over the hashed fields, keys sorted, so the same entry always gives the same hash;
/// an options-only table's hash is marked as such, so it never equals a definition's.
fn entry_hash(map: &Map<String, Value>, options_only: bool) -> String {
    let mut hashed = BTreeMap::new();
    if options_only {
        hashed.insert("(options only)", Value::Bool(true));
    }
    for key in HASHED_KEYS {
        if let Some(value) = map.get(*key).filter(|v| !v.is_null()) {
            hashed.insert(*key, canonical(value));
        }
    }
    let text = serde_json::to_string(&hashed).unwrap_or_default();
    let digest = Sha256::digest(text.as_bytes());
    digest.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// `value` with every object's keys in sorted order.
fn canonical(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let sorted: BTreeMap<&String, Value> =
                map.iter().map(|(k, v)| (k, canonical(v))).collect();
            Value::Object(sorted.into_iter().map(|(k, v)| (k.clone(), v)).collect())
        }
        Value::Array(items) => Value::Array(items.iter().map(canonical).collect()),
        other => other.clone(),
    }
}

/// Every stored approval: project → server → entry hash.
type Approvals = BTreeMap<String, BTreeMap<String, String>>;

#[derive(serde::Serialize, serde::Deserialize, Default)]
struct StoreBody {
    version: u32,
    #[serde(default)]
    projects: Approvals,
}

const STORE_VERSION: u32 = 1;

fn read_store(path: &Path) -> Result<Approvals, TrustFileError> {
    // Whoever may edit the approvals may approve anything.
    if let Err(exposed) = super::perms::check_not_writable_by_others(path) {
        return Err(TrustFileError {
            path: path.to_path_buf(),
            message: format!(
                "refused: {}, so another user could approve servers: run `{}`",
                exposed.problem, exposed.fix
            ),
            source: None,
        });
    }
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Ok(Approvals::new());
        }
        Err(error) => {
            return Err(TrustFileError {
                path: path.to_path_buf(),
                message: format!("cannot read it: {error}"),
                source: Some(Box::new(error)),
            });
        }
    };
    let body: StoreBody = serde_json::from_str(&text).map_err(|error| TrustFileError {
        path: path.to_path_buf(),
        message: format!(
            "not a valid approvals file ({error}): remove it and run `mcpmux trust` again"
        ),
        source: Some(Box::new(error)),
    })?;
    Ok(body.projects)
}

/// Approves `entries` of the project at `project_dir` as they are now, replacing what was
/// approved for it before; writes `store` atomically, mode 0600.
pub fn approve(
    store: &Path,
    project_dir: &Path,
    entries: &[ProjectEntry],
) -> Result<(), TrustFileError> {
    let mut approvals = read_store(store)?;
    let servers = entries
        .iter()
        .map(|entry| (store_key(entry), entry.hash.clone()))
        .collect();
    approvals.insert(project_key(project_dir), servers);
    write_store(store, approvals)
}

/// Approves one more entry of the project, keeping the others (the CLI's `[y/N]` answer).
pub fn approve_one(
    store: &Path,
    project_dir: &Path,
    entry: &ProjectEntry,
) -> Result<(), TrustFileError> {
    let mut approvals = read_store(store)?;
    approvals
        .entry(project_key(project_dir))
        .or_default()
        .insert(store_key(entry), entry.hash.clone());
    write_store(store, approvals)
}

/// Withdraws every approval of the project; `false` when there was none.
pub fn revoke(store: &Path, project_dir: &Path) -> Result<bool, TrustFileError> {
    let mut approvals = read_store(store)?;
    if approvals.remove(&project_key(project_dir)).is_none() {
        return Ok(false);
    }
    write_store(store, approvals)?;
    Ok(true)
}

fn write_store(path: &Path, projects: Approvals) -> Result<(), TrustFileError> {
    use std::io::Write;
    let fail = |error: std::io::Error| TrustFileError {
        path: path.to_path_buf(),
        message: format!("cannot write it: {error}"),
        source: Some(Box::new(error)),
    };
    let body = StoreBody {
        version: STORE_VERSION,
        projects,
    };
    let bytes = serde_json::to_vec_pretty(&body).map_err(|e| fail(std::io::Error::other(e)))?;
    let dir = path.parent().unwrap_or(Path::new("."));
    if !dir.as_os_str().is_empty() && !dir.exists() {
        fs::dir_mode(std::fs::DirBuilder::new().recursive(true), 0o700)
            .create(dir)
            .map_err(fail)?;
    }
    // A crash mid-write must never leave half a file: write aside, then rename over.
    let temporary = dir.join(format!(".{APPROVALS_FILE}.{}.tmp", std::process::id()));
    let result = (|| {
        let mut file = fs::private_file(
            std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true),
        )
        .open(&temporary)?;
        file.write_all(&bytes)?;
        file.sync_all()?;
        std::fs::rename(&temporary, path)
    })();
    if let Err(error) = result {
        let _ = std::fs::remove_file(&temporary);
        return Err(fail(error));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The chain under `error`, outermost first.
    fn causes(error: &dyn std::error::Error) -> Vec<String> {
        std::iter::successors(error.source(), |cause| cause.source())
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn an_unreadable_or_invalid_approvals_file_keeps_its_cause_under_the_same_words() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        // A folder where the file should be: reading it is an I/O error, not "absent".
        let folder = dir.path().join("as-folder");
        std::fs::create_dir(&folder).unwrap_or_else(|e| panic!("{e}"));
        let error = read_store(&folder)
            .err()
            .unwrap_or_else(|| panic!("read a folder"));
        let io = std::error::Error::source(&error)
            .and_then(|cause| cause.downcast_ref::<std::io::Error>())
            .unwrap_or_else(|| panic!("no io::Error under {error}"));
        assert_eq!(error.message, format!("cannot read it: {io}"));
        let file = dir.path().join("bad.json");
        std::fs::write(&file, "{").unwrap_or_else(|e| panic!("{e}"));
        let error = read_store(&file)
            .err()
            .unwrap_or_else(|| panic!("read bad JSON"));
        let cause =
            std::error::Error::source(&error).unwrap_or_else(|| panic!("no cause under {error}"));
        assert!(cause.downcast_ref::<serde_json::Error>().is_some());
        assert!(error.to_string().contains(&causes(&error)[0]), "{error}");
    }

    fn object(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => Map::new(),
        }
    }

    #[test]
    fn the_hash_changes_with_what_runs_and_not_with_key_order_or_options() {
        let base = object(json!({"command": "npx", "args": ["a"], "env": {"A": "1", "B": "2"}}));
        let reordered =
            object(json!({"env": {"B": "2", "A": "1"}, "args": ["a"], "command": "npx"}));
        let tuned = object(
            json!({"command": "npx", "args": ["a"], "env": {"A": "1", "B": "2"}, "startup_timeout": 9}),
        );
        let hash = |map: &Map<String, Value>| entry_hash(map, false);
        assert_eq!(hash(&base), hash(&reordered));
        assert_eq!(hash(&base), hash(&tuned));
        for changed in [
            json!({"command": "npx", "args": ["b"], "env": {"A": "1", "B": "2"}}),
            json!({"command": "npx", "args": ["a"], "env": {"A": "1", "B": "3"}}),
            json!({"command": "sh", "args": ["a"], "env": {"A": "1", "B": "2"}}),
            json!({"command": "npx", "args": ["a"], "env": {"A": "1", "B": "2"}, "cwd": "/"}),
        ] {
            assert_ne!(hash(&base), hash(&object(changed)));
        }
        let remote = object(json!({"url": "https://x.test", "headersHelper": "a"}));
        let helper = object(json!({"url": "https://x.test", "headersHelper": "b"}));
        assert_ne!(hash(&remote), hash(&helper));
    }

    #[test]
    fn the_hash_covers_every_option_that_widens_what_a_server_may_do() {
        let base = json!({"command": "npx", "args": ["a"]});
        let with = |key: &str, value: Value| {
            let mut map = object(base.clone());
            map.insert(key.to_owned(), value);
            entry_hash(&map, false)
        };
        let plain = entry_hash(&object(base.clone()), false);
        for (key, value) in [
            ("side_effects", json!({"big": ["read"]})),
            ("stages", json!(["plan"])),
            ("agents", json!(["coder"])),
            ("tools", json!({"allow": ["*"]})),
            ("enabled_tools", json!(["x"])),
            ("disabled_tools", json!(["x"])),
            ("includeTools", json!(["x"])),
            ("excludeTools", json!(["x"])),
        ] {
            assert_ne!(plain, with(key, value.clone()), "{key} is not hashed");
        }
        assert_ne!(
            with("side_effects", json!({"big": ["read"]})),
            with("side_effects", json!({"big": ["mutate"]}))
        );
        // An options-only table never hashes like a definition with the same keys.
        let options = object(json!({"side_effects": {"big": ["read"]}}));
        assert_ne!(entry_hash(&options, true), entry_hash(&options, false));
    }

    #[test]
    fn approvals_round_trip_through_a_private_file_and_revoke_removes_them() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let store = dir.path().join("mcpmux").join(APPROVALS_FILE);
        let project = dir.path();
        let entry = ProjectEntry::new(
            "s",
            project.join(".mcp.json"),
            &object(json!({"command": "run"})),
            false,
            "h".into(),
            Dialect::Claude,
        );
        approve(&store, project, std::slice::from_ref(&entry)).unwrap_or_else(|e| panic!("{e}"));
        let stored = read_store(&store).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(stored[&project_key(project)]["s"], "h");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&store)
                .map(|m| m.permissions().mode() & 0o777)
                .unwrap_or(0);
            assert_eq!(mode, 0o600);
        }
        assert_eq!(revoke(&store, project).ok(), Some(true));
        assert_eq!(revoke(&store, project).ok(), Some(false));
    }
}
