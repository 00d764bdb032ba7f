//! Config files → `Vec<ServerSpec>`: discovery, dialects, `${VAR}` expansion and validation.
//!
//! Knows nothing of connections or the hub. Every problem is a value naming the file, the
//! server and the field; one bad entry never stops the others. Files are read in a fixed order
//! (see `discover.rs`), after the servers plugins bring (`plugins.rs`), and merged per server
//! name, the later file winning; `mcpmux.toml` may
//! also hold overlays that adjust the options of a server another file defines, and `[policy]`
//! rules, which add up across files in merge order (a project file may add only `ask` and `deny`).

mod auth;
mod auth_spec;
mod claude;
mod dedup;
mod dialect;
mod dialects;
pub(crate) mod discover;
mod duration;
pub(crate) mod edit;
pub(crate) mod edit_args;
mod entry;
pub(crate) mod expand;
mod fields;
mod json_doc;
mod mcpmux_toml;
mod options;
mod perms;
mod plugins;
mod problems;
mod sandbox;
pub(crate) mod secrets;
mod serve;
mod size;
mod spec;
mod toml_json;
pub(crate) mod trust;
mod trust_view;
mod value;
mod write;

// What a harness reads: how servers are described and where they came from. Editing,
// secrets and trust approvals (the CLI's `add`, `secret`, `trust`) are `cli_support`'s face.
pub use dialect::Dialect;
pub use dialects::vars::{InputFn, InputRequest};
pub use sandbox::{Defaults as SandboxDefaults, Limits, Network, Profile, Sandbox};
pub use serve::ServeSettings;
pub use spec::{
    AuthSpec, Backoff, Breaker, IdentityProvider, InProcessFuture, InProcessServer, OAuthGrant,
    OAuthSpec, Origin, PolicyRules, PrivateKey, ServerOptions, ServerSpec, TokenSource, ToolFilter,
    TransportSpec,
};
pub use trust::{ApproveFn, ProjectEntry};

pub(crate) use auth::secure_endpoint;
pub(crate) use dedup::deduplicate;
#[cfg(target_os = "linux")]
pub(crate) use sandbox::Grants;
pub(crate) use write::write_cache;

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use discover::FileScope;
use entry::Entry;
use fields::Context;
pub use problems::{ConfigError, ConfigProblem};

/// Where to look for config files, and who approves a project's own servers.
#[derive(Clone, Default)]
pub struct LoadOptions {
    /// The user's home directory (user-level files); none when unknown.
    pub home: Option<PathBuf>,
    /// The project directory (project-level files).
    pub project_dir: PathBuf,
    /// Files given with `--config`, read last, in order.
    pub extra_files: Vec<PathBuf>,
    /// Asked about each project-level server that neither a stored approval (`mcpmux trust`)
    /// nor a user-level Claude setting approves; without it such servers stay `untrusted`.
    pub approve: Option<ApproveFn>,
    /// Other tools' files to read too (`--import`), besides those `import = [...]` in
    /// `mcpmux.toml` names; none by default, so no other tool's server appears unasked.
    pub import: Vec<Dialect>,
    /// Answers a VS Code `${input:ID}` that no `MCPMUX_INPUT_<ID>` variable answers; without
    /// it such a server is a problem that says which variable to set.
    pub ask_input: Option<InputFn>,
    /// Reads only the entries of the servers this admits, by name (a program making one call
    /// reads the servers its tool's name may belong to); the others are skipped unread, so
    /// their problems are not found, though a file's own (its syntax, `[policy]`) still are.
    /// None reads every entry.
    pub only: Option<OnlyFn>,
}

/// Decides, by a server's name, whether its entries are read ([`LoadOptions::only`]).
pub type OnlyFn = std::sync::Arc<dyn Fn(&str) -> bool + Send + Sync>;

impl std::fmt::Debug for LoadOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadOptions")
            .field("home", &self.home)
            .field("project_dir", &self.project_dir)
            .field("extra_files", &self.extra_files)
            .field("approve", &self.approve.is_some())
            .field("import", &self.import)
            .field("ask_input", &self.ask_input.is_some())
            .field("only", &self.only.is_some())
            .finish()
    }
}

impl LoadOptions {
    /// Options for this process: `$HOME` (Windows: `%USERPROFILE%`) as home, the current directory as the project.
    pub fn from_env(extra_files: Vec<PathBuf>) -> Self {
        let home = crate::platform::dirs::home_from_env();
        // A deleted current directory leaves only "." to go on; project files then just miss.
        let project_dir = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
        Self {
            home,
            project_dir,
            extra_files,
            ..Self::default()
        }
    }

    /// Options for `home` and `project_dir`, with no `--config` files and no approver.
    pub fn new(home: Option<PathBuf>, project_dir: impl Into<PathBuf>) -> Self {
        Self {
            home,
            project_dir: project_dir.into(),
            ..Self::default()
        }
    }

    /// Builder-style: files read last, as with `--config`.
    pub fn with_extra_files(mut self, files: Vec<PathBuf>) -> Self {
        self.extra_files = files;
        self
    }

    /// Builder-style: also read these tools' files (as `--import codex,cursor` does).
    pub fn with_import(mut self, dialects: Vec<Dialect>) -> Self {
        self.import = dialects;
        self
    }

    /// Builder-style: answer a VS Code `${input:ID}` that no `MCPMUX_INPUT_<ID>` answers
    /// (ask the person; hide what they type when the request says `password`).
    pub fn with_input_prompt<F>(mut self, ask: F) -> Self
    where
        F: Fn(&InputRequest) -> Option<String> + Send + Sync + 'static,
    {
        self.ask_input = Some(std::sync::Arc::new(ask));
        self
    }

    /// Builder-style: read only the entries of the servers `only` admits, by name.
    pub fn with_only<F>(mut self, only: F) -> Self
    where
        F: Fn(&str) -> bool + Send + Sync + 'static,
    {
        self.only = Some(std::sync::Arc::new(only));
        self
    }

    /// Builder-style: decide on project-level servers no stored approval covers (ask the
    /// person, or return `true` for a directory the harness vouches for).
    pub fn with_approver<F>(mut self, approve: F) -> Self
    where
        F: Fn(&ProjectEntry) -> bool + Send + Sync + 'static,
    {
        self.approve = Some(std::sync::Arc::new(approve));
        self
    }
}

/// What loading found: the servers, the problems, and the files read.
#[derive(Debug, Default)]
pub struct ConfigSet {
    /// Valid servers after merging, in a stable order.
    pub servers: Vec<ServerSpec>,
    /// Entries or files that could not be used, each with its error.
    pub problems: Vec<ConfigProblem>,
    /// Every file that was read, in merge order.
    pub files: Vec<PathBuf>,
    /// Global permission rules (`[policy]`).
    pub policy: PolicyRules,
    /// The servers project-level files define, approved or not, in file order.
    pub project: Vec<ProjectEntry>,
    /// Where project approvals are stored (`mcpmux trust` writes there); none without a home.
    pub trust_file: Option<PathBuf>,
    /// The sandbox of servers whose entry names none (the user's top-level `[sandbox]`).
    pub sandbox_defaults: sandbox::Defaults,
    /// How `mcpmux serve` serves when its flags do not say (`[serve]`; the last file that
    /// has one).
    pub serve: ServeSettings,
}

/// Reads and merges every config file `options` points at.
///
/// `${VAR}` references are looked up in this process's environment.
pub fn load(options: &LoadOptions) -> ConfigSet {
    load_with_env(options, &|name| std::env::var(name).ok())
}

/// Every file [`load`] reads, or would read if it existed, for `options`: the config files of
/// each dialect asked for, the secrets file and the project approvals file. With
/// [`ConfigSet::files`] (which adds the plugin files read), what a watcher watches to reload
/// whenever the config would load differently.
pub fn sources(options: &LoadOptions) -> Vec<PathBuf> {
    let env = |name: &str| std::env::var(name).ok();
    let config_home = discover::config_home(options.home.as_deref(), &env);
    let imports = discover::imports(options, config_home.as_deref());
    let mut files: Vec<PathBuf> = discover::candidates(options, &env, &imports)
        .into_iter()
        .map(|candidate| candidate.path)
        .collect();
    files.extend(discover::secrets_file(options.home.as_deref(), &env));
    files.extend(config_home.map(|dir| dir.join("mcpmux").join(trust::APPROVALS_FILE)));
    files
}

/// [`load`] with the environment given as a lookup function (tests, embedding harnesses).
///
/// `env` answers `${VAR}` references and `XDG_CONFIG_HOME`.
pub fn load_with_env(options: &LoadOptions, env: &dyn Fn(&str) -> Option<String>) -> ConfigSet {
    let mut set = ConfigSet::default();
    // `None` marks a name whose latest entry was bad: it hides earlier good ones, since it is
    // what the user wrote last, and its problem is already reported.
    let mut merged: BTreeMap<String, Option<ServerSpec>> = BTreeMap::new();
    // Where each merged name's current definition came from: a project file may tighten what
    // a user-level definition allows, never loosen it.
    let mut scopes: BTreeMap<String, FileScope> = BTreeMap::new();

    let config_home = discover::config_home(options.home.as_deref(), env);
    set.trust_file = config_home
        .as_ref()
        .map(|dir| dir.join("mcpmux").join(trust::APPROVALS_FILE));
    // Read at the first `${secret:…}` only: a config without secrets never opens the file.
    let secrets = secrets::SecretSource::new(discover::secrets_file(options.home.as_deref(), env));
    let claude_user_files: Vec<PathBuf> = options
        .home
        .iter()
        .flat_map(|home| {
            [
                home.join(".claude.json"),
                home.join(".claude").join("settings.json"),
            ]
        })
        .collect();
    let gate = trust::Gate::new(
        &options.project_dir,
        set.trust_file.as_deref(),
        &claude_user_files,
        options.approve.as_ref(),
    );

    // Plugins first: the person's own files, read after, replace a plugin's server of the
    // same name.
    plugins::load(&mut set, &mut merged, &mut scopes, options, env, &secrets);

    let imports = discover::imports(options, config_home.as_deref());
    for candidate in discover::candidates(options, env, &imports) {
        let path = candidate.path.as_path();
        // The person's own files run as they are: refused when someone else could edit them.
        if candidate.scope != FileScope::Project
            && let Err(exposed) = perms::check_not_writable_by_others(path)
        {
            set.problem(ConfigError::Exposed {
                file: path.to_path_buf(),
                problem: exposed.problem,
                fix: exposed.fix,
            });
            continue;
        }
        let imported = Dialect::IMPORTABLE.contains(&candidate.dialect);
        let read = if imported {
            dialects::read_bounded(path).map(String::into_bytes)
        } else {
            std::fs::read(path)
        };
        let bytes = match read {
            Ok(bytes) => bytes,
            Err(source) if source.kind() == io::ErrorKind::NotFound && !candidate.required => {
                tracing::trace!(file = %path.display(), "config file absent, skipped");
                continue;
            }
            Err(source) => {
                set.problem(ConfigError::Read {
                    file: path.to_path_buf(),
                    source,
                });
                continue;
            }
        };
        set.files.push(candidate.path.clone());
        tracing::debug!(file = %path.display(), dialect = ?candidate.dialect, "reading config file");

        let format = if candidate.dialect.is_toml() {
            "TOML"
        } else {
            "JSON"
        };
        let text = match decode(path, format, &bytes) {
            Ok(text) => text,
            Err(error) => {
                set.problem(error);
                continue;
            }
        };
        if candidate.scope == FileScope::Project {
            gate.set_own(
                merged
                    .iter()
                    .filter(|(name, spec)| {
                        spec.is_some()
                            && scopes.get(*name).is_some_and(|s| *s != FileScope::Project)
                    })
                    .map(|(name, _)| name.clone())
                    .collect(),
            );
        }
        let cx = Context {
            file: path,
            dialect: candidate.dialect,
            env,
            home: options.home.as_deref(),
            gate: (candidate.scope == FileScope::Project).then_some(&gate),
            workspace: &options.project_dir,
            inputs: None,
            secrets: &secrets,
            only: options.only.as_ref(),
        };
        let parsed = match candidate.dialect {
            Dialect::Mcpmux => mcpmux_toml::parse(&text, &cx),
            Dialect::Claude => claude::parse(&text, &cx, &candidate.shape),
            _ => dialects::parse(&text, &cx, options.ask_input.as_ref()),
        };
        let file = match parsed {
            Ok(file) => file,
            Err(error) => {
                set.problem(error);
                continue;
            }
        };
        for error in file.problems {
            set.problem(error);
        }
        let mut policy = file.policy;
        if candidate.scope == FileScope::Project && !policy.allow.is_empty() {
            // A project may add asks and denials, never skip one: under a harness's
            // ask-by-default policy an `allow` would let its calls through unasked.
            tracing::warn!(file = %path.display(), entries = ?policy.allow, "[policy] allow entries of a project file are ignored: a project file may only add ask and deny rules");
            policy.allow.clear();
        }
        set.add_policy(policy);
        set.project.extend(file.project);
        // Only the person's own files choose defaults: a project file cannot lift them.
        if let Some(defaults) = file.sandbox {
            if candidate.scope == FileScope::Project {
                tracing::warn!(file = %path.display(), "a project file's [sandbox] defaults are ignored: set them in your own mcpmux.toml");
            } else {
                set.sandbox_defaults = defaults;
            }
        }
        if let Some(serve) = file.serve {
            set.serve = serve;
        }
        for (name, entry) in file.entries {
            let step = Step {
                file: path,
                scope: candidate.scope,
                project: &options.project_dir,
            };
            merge(&mut set, &mut merged, &mut scopes, &step, name, entry);
        }
    }

    set.servers = merged.into_values().flatten().collect();
    for spec in &mut set.servers {
        if spec.options.sandbox.is_none() {
            let written_by_person = spec.origin.is_hand_written()
                && scopes.get(&spec.name) != Some(&FileScope::Project)
                && !matches!(&spec.origin, Origin::File { dialect, .. } if Dialect::IMPORTABLE.contains(dialect));
            let default = if written_by_person {
                &set.sandbox_defaults.servers
            } else {
                &set.sandbox_defaults.others
            };
            // Off stays `None`: a server without a sandbox looks as it always did.
            if !default.is_off() {
                spec.options.sandbox = Some(default.clone());
            }
        }
    }
    set
}

/// The file an entry being merged comes from.
struct Step<'a> {
    file: &'a Path,
    scope: FileScope,
    project: &'a Path,
}

/// Folds one entry into the merged map: later definitions replace, overlays adjust.
fn merge(
    set: &mut ConfigSet,
    merged: &mut BTreeMap<String, Option<ServerSpec>>,
    scopes: &mut BTreeMap<String, FileScope>,
    step: &Step<'_>,
    name: String,
    entry: Result<Entry, ConfigError>,
) {
    let file = step.file;
    // A project file over a definition the person made themselves may only tighten it.
    let user_limits = match (step.scope, scopes.get(&name), merged.get(&name)) {
        (FileScope::Project, Some(scope), Some(Some(spec))) if *scope != FileScope::Project => {
            Some(spec.clone())
        }
        _ => None,
    };
    match entry {
        Ok(Entry::Define(mut spec)) => {
            if let Some(Some(old)) = merged.get(&name) {
                tracing::debug!(server = %name, file = %file.display(), replaced = ?old.origin, "later entry replaces earlier one");
            }
            if let Some(user) = &user_limits {
                trust::keep_user_limits(&mut spec, user, file);
            }
            scopes.insert(name.clone(), step.scope);
            merged.insert(name, Some(spec));
        }
        Ok(Entry::Adjust(overlay)) => match merged.get_mut(&name) {
            Some(Some(spec)) => match overlay.apply(spec) {
                Ok(()) => {
                    if let Some(user) = &user_limits {
                        trust::keep_user_limits(spec, user, file);
                    }
                    tracing::debug!(server = %name, file = %file.display(), "overlay adjusts options");
                }
                // Refused whole, and like any bad entry it hides the earlier definition: it is
                // what the user wrote last for this server.
                Err(invalid) => {
                    merged.insert(name.clone(), None);
                    set.problem(ConfigError::InvalidValue {
                        file: file.to_path_buf(),
                        server: Some(name),
                        field: Some(invalid.field),
                        message: invalid.message,
                    });
                }
            },
            Some(None) => {
                tracing::debug!(server = %name, file = %file.display(), "overlay ignored: the server's latest entry has a problem");
            }
            None => set.problem(ConfigError::NothingToAdjust {
                file: file.to_path_buf(),
                server: name,
            }),
        },
        Ok(Entry::Untrusted(entry)) => {
            tracing::info!(server = %name, file = %file.display(), "project server not approved: not started");
            scopes.insert(name.clone(), step.scope);
            merged.insert(name.clone(), None);
            set.problem(ConfigError::Untrusted {
                file: file.to_path_buf(),
                server: name,
                target: entry.target,
                project: step.project.to_path_buf(),
            });
        }
        Err(error) => {
            if let Some(Some(old)) = merged.insert(name.clone(), None) {
                tracing::debug!(server = %name, file = %file.display(), replaced = ?old.origin, "bad entry replaces earlier good one");
            }
            scopes.insert(name, step.scope);
            set.problem(error);
        }
    }
}

impl ConfigSet {
    /// Appends one file's rules: later files add rules, none replaces another's (at evaluation
    /// deny beats ask beats allow, whichever file each came from).
    fn add_policy(&mut self, rules: PolicyRules) {
        let PolicyRules { allow, ask, deny } = rules;
        self.policy.allow.extend(allow);
        self.policy.ask.extend(ask);
        self.policy.deny.extend(deny);
    }

    fn problem(&mut self, error: ConfigError) {
        tracing::debug!(error = %error, "config problem");
        self.problems.push(ConfigProblem {
            file: error.file().to_path_buf(),
            server: error.server().map(str::to_owned),
            error,
        });
    }
}

/// UTF-8 text without a byte-order mark (Windows editors write one; both parsers reject it).
/// Invalid UTF-8 is a parse error with a position, not an I/O error: the file was read fine.
fn decode(file: &Path, format: &'static str, bytes: &[u8]) -> Result<String, ConfigError> {
    match std::str::from_utf8(bytes) {
        Ok(text) => Ok(text.strip_prefix('\u{feff}').unwrap_or(text).to_owned()),
        Err(error) => {
            let (line, column) = line_column(bytes, error.valid_up_to());
            Err(ConfigError::Parse {
                file: file.to_path_buf(),
                format,
                line: Some(line),
                column: Some(column),
                message: "the file is not UTF-8 text".to_owned(),
            })
        }
    }
}

/// 1-based line and column (in characters) of byte `offset` in `bytes`.
fn line_column(bytes: &[u8], offset: usize) -> (usize, usize) {
    let before = bytes.get(..offset).unwrap_or(bytes);
    let line_start = before
        .iter()
        .rposition(|b| *b == b'\n')
        .map_or(0, |i| i + 1);
    let line = before.iter().filter(|b| **b == b'\n').count() + 1;
    let column = String::from_utf8_lossy(&before[line_start..])
        .chars()
        .count()
        + 1;
    (line, column)
}

#[cfg(test)]
mod fuzz;
#[cfg(test)]
mod tests;
