//! What an approval covers: after `mcpmux trust`, a project file that widens what a server may
//! do (`side_effects`, `stages`, `agents`, `tools`), in a definition or in an options-only
//! table, is not approved any more; and a project file can only narrow the person's own
//! `stages` and `agents`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};

use super::*;
use crate::config::trust::approve;

/// Loads with the stored approvals only (no approver): what a run without a terminal does.
fn load_stored(fx: &Fixture) -> ConfigSet {
    let options = LoadOptions::new(Some(fx.home.path().to_path_buf()), fx.project.path());
    load_with_env(&options, &|_| None)
}

/// What `mcpmux trust` does: approves every project entry as it is now.
fn trust(fx: &Fixture) {
    let set = load_stored(fx);
    let store = set.trust_file.clone().unwrap();
    approve(&store, fx.project.path(), &set.project).unwrap();
}

fn untrusted(set: &ConfigSet, name: &str) -> bool {
    set.problems.iter().any(
        |problem| matches!(&problem.error, ConfigError::Untrusted { server, .. } if server == name),
    )
}

#[test]
fn a_changed_limit_in_an_approved_mcpmux_toml_definition_needs_approval_again() {
    let fx = Fixture::new();
    let base = "[servers.big]\ncommand = \"run\"\n";
    for added in [
        "side_effects = { big = [\"read\"] }\n",
        "stages = [\"plan\"]\n",
        "agents = [\"coder\"]\n",
        "tools = { allow = [\"*\"] }\n",
    ] {
        fx.project_file("mcpmux.toml", base);
        trust(&fx);
        assert_eq!(names(&load_stored(&fx)), ["big"]);

        fx.project_file("mcpmux.toml", &format!("{base}{added}"));
        let asked = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&asked);
        let options = LoadOptions::new(Some(fx.home.path().to_path_buf()), fx.project.path())
            .with_approver(move |entry| {
                seen.lock().unwrap().push(entry.to_string());
                false
            });
        let set = load_with_env(&options, &|_| None);
        assert!(names(&set).is_empty(), "{added}: {:?}", names(&set));
        assert!(untrusted(&set, "big"), "{added}: {:#?}", messages(&set));
        let asked = asked.lock().unwrap();
        assert_eq!(asked.len(), 1, "{added}: not asked again");
        let option = added.split(" =").next().unwrap();
        assert!(
            asked[0].contains(&format!("option: {option} = ")),
            "{added}: the question does not show it: {}",
            asked[0]
        );
    }
}

#[test]
fn an_options_table_that_widens_an_approved_project_server_holds_it_back_until_approved() {
    let fx = Fixture::new();
    fx.project_file(".mcp.json", r#"{"mcpServers": {"fs": {"command": "run"}}}"#);
    fx.project_file("mcpmux.toml", "[servers.fs]\ncall_timeout = \"5s\"\n");
    trust(&fx);
    let set = load_stored(&fx);
    assert_eq!(names(&set), ["fs"], "{:#?}", messages(&set));

    // Added after the approval: relabels a tool so an `ask = ["effect:mutate"]` would pass it.
    fx.project_file(
        "mcpmux.toml",
        "[servers.fs]\ncall_timeout = \"5s\"\nside_effects = { big = [\"read\"] }\n",
    );
    let set = load_stored(&fx);
    assert!(names(&set).is_empty(), "{:?}", names(&set));
    assert!(untrusted(&set, "fs"), "{:#?}", messages(&set));
    let entry = set.project.iter().find(|e| e.options_only).unwrap();
    assert!(
        entry.to_string().contains("option: side_effects = "),
        "{entry}"
    );

    // Approved as it is now, the options apply, and the definition's approval still stands.
    trust(&fx);
    let set = load_stored(&fx);
    assert_eq!(names(&set), ["fs"], "{:#?}", messages(&set));
    let spec = server(&set, "fs");
    assert_eq!(spec.options.side_effects["big"], ["read"]);

    // Options that widen nothing need no approval.
    fx.project_file(
        "mcpmux.toml",
        "[servers.fs]\ncall_timeout = \"9s\"\nside_effects = { big = [\"read\"] }\n",
    );
    assert_eq!(names(&load_stored(&fx)), ["fs"]);
}

#[test]
fn a_project_file_can_narrow_but_never_widen_the_users_stages_and_agents() {
    let mut fx = Fixture::new();
    fx.set_env(
        "XDG_CONFIG_HOME",
        &fx.home.path().join("xdg").to_string_lossy(),
    );
    fx.home_file(
        "xdg/mcpmux/config.toml",
        "[servers.ts]\ncommand = \"run\"\nstages = [\"plan\", \"build\"]\nagents = [\"coder\"]\n",
    );
    fx.project_file(
        "mcpmux.toml",
        "[servers.ts]\nstages = [\"plan\", \"ship\"]\nagents = [\"coder\", \"reviewer\"]\n",
    );
    let set = fx.load();
    let spec = server(&set, "ts");
    assert_eq!(
        spec.options.stages.as_deref(),
        Some(&["plan".to_owned(), "build".to_owned()][..])
    );
    assert_eq!(
        spec.options.agents.as_deref(),
        Some(&["coder".to_owned()][..])
    );

    fx.project_file("mcpmux.toml", "[servers.ts]\nstages = [\"plan\"]\n");
    let set = fx.load();
    let spec = server(&set, "ts");
    assert_eq!(
        spec.options.stages.as_deref(),
        Some(&["plan".to_owned()][..])
    );
}
