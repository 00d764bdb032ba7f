//! Config files in a temporary home and project, loaded with a given environment, and what a
//! loaded set holds (servers by name, their dialect and transport, problems and warnings): the
//! dialect tests' shared ground.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use mcpmux::ServerSpec;
use mcpmux::config::{self, ConfigError, ConfigSet, Dialect, LoadOptions, Origin, TransportSpec};

pub struct Dirs {
    _root: tempfile::TempDir,
    pub home: PathBuf,
    pub project: PathBuf,
    pub env: BTreeMap<String, String>,
}

impl Dirs {
    pub fn new() -> Self {
        let root = tempfile::tempdir().unwrap();
        let home = root.path().join("home");
        let project = root.path().join("project");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&project).unwrap();
        Dirs {
            _root: root,
            home,
            project,
            env: BTreeMap::new(),
        }
    }

    pub fn write(&self, path: PathBuf, text: &str) -> PathBuf {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }

    pub fn set(&mut self, name: &str, value: &str) {
        self.env.insert(name.to_owned(), value.to_owned());
    }

    pub fn options(&self) -> LoadOptions {
        LoadOptions::new(Some(self.home.clone()), &self.project)
    }

    /// Every import, the project approved: these tests are about reading the files.
    pub fn importing_all(&self) -> LoadOptions {
        self.options()
            .with_import(Dialect::IMPORTABLE.to_vec())
            .with_approver(|_| true)
    }

    pub fn load(&self, options: &LoadOptions) -> ConfigSet {
        config::load_with_env(options, &|name| self.env.get(name).cloned())
    }
}

pub fn names(set: &ConfigSet) -> Vec<&str> {
    set.servers.iter().map(|s| s.name.as_str()).collect()
}

pub fn server<'a>(set: &'a ConfigSet, name: &str) -> &'a ServerSpec {
    set.servers
        .iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no server {name}: {set:#?}"))
}

pub fn dialect(spec: &ServerSpec) -> Dialect {
    match &spec.origin {
        Origin::File { dialect, .. } => *dialect,
        other => panic!("not from a file: {other:?}"),
    }
}

pub fn stdio(spec: &ServerSpec) -> (&str, &[String], &BTreeMap<String, String>, Option<&Path>) {
    match &spec.transport {
        TransportSpec::Stdio {
            command,
            args,
            env,
            cwd,
        } => (command, args, env, cwd.as_deref()),
        other => panic!("not stdio: {other:?}"),
    }
}

pub fn remote(spec: &ServerSpec) -> (&'static str, &str, &BTreeMap<String, String>) {
    match &spec.transport {
        TransportSpec::Http { url, headers } => ("http", url, headers),
        TransportSpec::Sse { url, headers } => ("sse", url, headers),
        other => panic!("not remote: {other:?}"),
    }
}

/// Every problem's message, warnings included.
pub fn messages(set: &ConfigSet) -> Vec<String> {
    set.problems.iter().map(|p| p.error.to_string()).collect()
}

pub fn warnings_of<'a>(set: &'a ConfigSet, server: &str) -> Vec<&'a ConfigError> {
    set.problems
        .iter()
        .filter(|p| p.is_warning() && p.server.as_deref() == Some(server))
        .map(|p| &p.error)
        .collect()
}

pub fn unhonoured_fields(set: &ConfigSet, server: &str) -> Vec<String> {
    warnings_of(set, server)
        .into_iter()
        .map(|error| match error {
            ConfigError::Unhonoured { field, .. } => field.clone(),
            other => panic!("not an unhonoured field: {other}"),
        })
        .collect()
}
