//! What the CLI gets from `cli_support::edit::{add, remove}`, secrets and plugins, end to
//! end: the entry written loads back through `config::load`, starts against the real test
//! server and answers a call; a secret reaches the process; a plugin repeating a written server
//! is started once.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::path::PathBuf;

use mcpmux::cli_support::edit::{self, EditScope, NewServer};
use mcpmux::cli_support::secrets;
use mcpmux::config;
use mcpmux::{Hub, HubOptions, LoadOptions, ServerState};
use serde_json::json;

/// A temp home (with an XDG config folder of its own) and project.
struct Dirs {
    _dir: tempfile::TempDir,
    home: PathBuf,
    project: PathBuf,
}

impl Dirs {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let project = dir.path().join("project");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&project).unwrap();
        Dirs {
            _dir: dir,
            home,
            project,
        }
    }

    fn options(&self) -> LoadOptions {
        LoadOptions::new(Some(self.home.clone()), &self.project)
    }

    fn load(&self) -> config::ConfigSet {
        // No XDG_CONFIG_HOME: the user config folder is ~/.config of the temp home.
        config::load_with_env(&self.options(), &|_| None)
    }
}

fn testserver() -> String {
    support::testserver().display().to_string()
}

#[tokio::test]
async fn a_server_added_with_a_secret_loads_starts_answers_and_is_removed_with_comments_kept() {
    let dirs = Dirs::new();
    let options = dirs.options();
    let file = edit::scope_file_with_env(EditScope::User, &options, &|_| None).unwrap();
    let secrets = secrets::secrets_file(Some(&dirs.home), &|_| None).unwrap();
    secrets::set_secret(&secrets, "ts-token", "s3cret-value").unwrap();
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(
        &file,
        "# mine\n[servers.other] # kept\ncommand = \"true\"\nenabled = false\n",
    )
    .unwrap();

    let server = NewServer::stdio(
        "ts",
        &[
            testserver(),
            "--require-env-equal".into(),
            "TOKEN=EXPECTED".into(),
        ],
        &[
            "TOKEN=${secret:ts-token}".into(),
            "EXPECTED=s3cret-value".into(),
        ],
        &[],
    )
    .unwrap();
    edit::add(&file, &server, false).unwrap();

    let set = dirs.load();
    assert!(set.problems.is_empty(), "{:?}", set.problems);
    let hub = Hub::from_config(set, HubOptions::ephemeral()).unwrap();
    hub.wait_ready().await.unwrap();
    let result = hub
        .call("mcp__ts__echo", json!({"text": "added"}))
        .await
        .unwrap();
    assert_eq!(result.to_text(), "added");
    hub.shutdown().await;

    assert_eq!(edit::remove_in_scope(&options, None, "ts").unwrap(), file);
    let text = std::fs::read_to_string(&file).unwrap();
    assert_eq!(
        text,
        "# mine\n[servers.other] # kept\ncommand = \"true\"\nenabled = false\n"
    );
    let set = dirs.load();
    assert!(set.servers.iter().all(|s| s.name != "ts"));
}

#[tokio::test]
async fn a_plugin_server_repeating_an_added_one_is_listed_disabled_with_the_name_that_kept_it() {
    let dirs = Dirs::new();
    let options = dirs.options();
    let file = edit::scope_file_with_env(EditScope::User, &options, &|_| None).unwrap();
    let mine = NewServer::stdio("mine", &[testserver()], &[], &[]).unwrap();
    edit::add(&file, &mine, false).unwrap();
    let plugin = dirs.home.join(".config/mcpmux/plugins/extras/mcp.json");
    std::fs::create_dir_all(plugin.parent().unwrap()).unwrap();
    std::fs::write(
        &plugin,
        json!({"dup": {"command": testserver()}}).to_string(),
    )
    .unwrap();

    let hub = Hub::from_config(dirs.load(), HubOptions::ephemeral()).unwrap();
    hub.wait_ready().await.unwrap();
    let servers = hub.servers();
    let dup = servers.iter().find(|s| s.name == "dup").unwrap();
    assert!(matches!(dup.state, ServerState::Disabled { .. }), "{dup:?}");
    assert!(dup.error().unwrap().contains("the same server as `mine`"));
    assert!(
        dup.source
            .as_deref()
            .unwrap()
            .starts_with("plugin extras (")
    );
    let mine = servers.iter().find(|s| s.name == "mine").unwrap();
    assert_eq!(mine.state.label(), "connected");
    assert!(
        hub.tools()
            .iter()
            .all(|t| !t.name.starts_with("mcp__dup__"))
    );
    hub.shutdown().await;
}
