//! Loading whole directories: discovery, merge order, and what users read when something is
//! wrong. Each test builds a temporary home and project and passes its own environment.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod approvals;
mod dialect_oauth;
mod entries;
// File modes and owners: Unix only (`platform::fs`).
#[cfg(unix)]
mod exposed;
mod files;
mod options;
mod plugins;
mod policy_and_auth;
#[cfg(unix)]
mod secrets;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tempfile::TempDir;

use super::*;
use crate::defaults;

/// A temporary home and project directory, with an environment of our own.
struct Fixture {
    home: TempDir,
    project: TempDir,
    env: BTreeMap<String, String>,
    extra: Vec<PathBuf>,
}

impl Fixture {
    fn new() -> Self {
        Fixture {
            home: TempDir::new().unwrap(),
            project: TempDir::new().unwrap(),
            env: BTreeMap::new(),
            extra: Vec::new(),
        }
    }

    fn write(path: PathBuf, text: &str) -> PathBuf {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }

    fn home_file(&self, relative: &str, text: &str) -> PathBuf {
        Self::write(self.home.path().join(relative), text)
    }

    fn project_file(&self, relative: &str, text: &str) -> PathBuf {
        Self::write(self.project.path().join(relative), text)
    }

    fn set_env(&mut self, name: &str, value: &str) {
        self.env.insert(name.to_owned(), value.to_owned());
    }

    fn options(&self) -> LoadOptions {
        LoadOptions {
            home: Some(self.home.path().to_path_buf()),
            project_dir: self.project.path().to_path_buf(),
            extra_files: self.extra.clone(),
            // These tests are about reading files: the project is approved (trust has its own).
            approve: Some(std::sync::Arc::new(|_: &ProjectEntry| true)),
            ..LoadOptions::default()
        }
    }

    fn load(&self) -> ConfigSet {
        let env = |name: &str| self.env.get(name).cloned();
        load_with_env(&self.options(), &env)
    }
}

fn names(set: &ConfigSet) -> Vec<&str> {
    set.servers.iter().map(|s| s.name.as_str()).collect()
}

fn server<'a>(set: &'a ConfigSet, name: &str) -> &'a ServerSpec {
    set.servers
        .iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no server {name}; problems: {:#?}", messages(set)))
}

fn messages(set: &ConfigSet) -> Vec<String> {
    set.problems.iter().map(|p| p.error.to_string()).collect()
}

/// The only problem, as text; fails if there is not exactly one.
fn only_message(set: &ConfigSet) -> String {
    let all = messages(set);
    assert_eq!(all.len(), 1, "{all:#?}");
    all.into_iter().next().unwrap()
}

fn command(spec: &ServerSpec) -> &str {
    match &spec.transport {
        TransportSpec::Stdio { command, .. } => command,
        other => panic!("not stdio: {other:?}"),
    }
}

fn stdio_parts(spec: &ServerSpec) -> (&[String], &BTreeMap<String, String>, Option<&Path>) {
    match &spec.transport {
        TransportSpec::Stdio { args, env, cwd, .. } => (args, env, cwd.as_deref()),
        other => panic!("not stdio: {other:?}"),
    }
}

fn remote(spec: &ServerSpec) -> (&'static str, &str, &BTreeMap<String, String>) {
    match &spec.transport {
        TransportSpec::Http { url, headers } => ("http", url, headers),
        TransportSpec::Sse { url, headers } => ("sse", url, headers),
        TransportSpec::Ws { url, headers } => ("ws", url, headers),
        other => panic!("not remote: {other:?}"),
    }
}

/// Claude JSON `{"name": {"command": label}, ...}` for the given names.
fn json_servers(names: &[String], label: &str) -> serde_json::Value {
    names
        .iter()
        .map(|name| (name.clone(), serde_json::json!({ "command": label })))
        .collect::<serde_json::Map<_, _>>()
        .into()
}

fn toml_servers(names: &[String], label: &str) -> String {
    names
        .iter()
        .map(|name| format!("[servers.{name}]\ncommand = \"{label}\"\n"))
        .collect()
}
