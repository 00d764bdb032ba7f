//! Plugin servers as a user sees them: an enabled Claude Code plugin's server runs from its own
//! folder; one that repeats a server the person configured is started once, and `mcpmux
//! servers` names the server that kept it and where each plugin server comes from.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use serde_json::json;
use support::{Sandbox, assert_code, table_row};

#[test]
fn a_plugin_server_runs_and_a_duplicate_is_listed_with_the_server_that_kept_it() {
    let sandbox = Sandbox::new();
    let testserver = support::testserver().display().to_string();
    // A Claude Code plugin, installed and enabled, whose server lives in its own folder.
    let root = sandbox.home.join(".claude/plugins/cache/tools@market");
    std::fs::create_dir_all(root.join("bin")).unwrap();
    std::os::unix::fs::symlink(&testserver, root.join("bin/server")).unwrap();
    sandbox.write_file(
        &root.join(".mcp.json"),
        &json!({
            "plugtools": {"command": "${CLAUDE_PLUGIN_ROOT}/bin/server"},
            "plugcopy": {"command": testserver, "args": ["--slow-ms", "1"]},
        })
        .to_string(),
    );
    sandbox.write_file(
        &sandbox.home.join(".claude/plugins/installed_plugins.json"),
        &json!({"version": 1, "plugins": {"tools@market": {"installPath": root}}}).to_string(),
    );
    sandbox.write_file(
        &sandbox.home.join(".claude/settings.json"),
        r#"{"enabledPlugins": {"tools@market": true}}"#,
    );
    // The person's own server with the same command and args as `plugcopy`.
    sandbox.write_file(
        &sandbox.home.join(".claude.json"),
        &json!({"mcpServers": {"mine": {"command": testserver, "args": ["--slow-ms", "1"], "env": {"A": "b"}}}}).to_string(),
    );

    let run = sandbox.run(&["servers"]);
    assert_code(&run, 0);
    assert!(
        table_row(&run.stdout, "plugtools").contains("connected"),
        "{run:#?}"
    );
    assert!(
        table_row(&run.stdout, "mine").contains("connected"),
        "{run:#?}"
    );
    let copy = table_row(&run.stdout, "plugcopy");
    assert!(
        copy.contains("disabled") && copy.contains("the same server as `mine`"),
        "{run:#?}"
    );
    assert!(run.stdout.contains("from plugins:"), "{run:#?}");
    assert!(
        run.stdout
            .contains("plugtools: plugin tools@market (Claude Code)"),
        "{run:#?}"
    );
    assert!(
        run.stdout
            .contains("plugcopy: plugin tools@market (Claude Code)"),
        "{run:#?}"
    );

    let run = sandbox.run(&["servers", "--json"]);
    let servers = support::json(&run);
    let copy = servers
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "plugcopy")
        .unwrap();
    assert_eq!(copy["source"], "plugin tools@market (Claude Code)");
    assert!(copy["error"].as_str().unwrap().contains("`mine`"), "{copy}");

    let run = sandbox.run(&[
        "call",
        "mcp__plugtools__echo",
        r#"{"text":"from a plugin"}"#,
    ]);
    assert_eq!(run.stdout, "from a plugin\n", "{run:#?}");
}

#[test]
fn a_broken_plugin_folder_is_one_row_and_the_other_plugins_run() {
    let sandbox = Sandbox::new();
    let testserver = support::testserver().display().to_string();
    let plugins = sandbox.home.join(".config/mcpmux/plugins");
    sandbox.write_file(&plugins.join("broken/mcp.json"), "{\"mcpServers\": [");
    sandbox.write_file(
        &plugins.join("fine/mcp.json"),
        &json!({"mcpServers": {"fine": {"command": testserver}}}).to_string(),
    );
    let run = sandbox.run(&["servers"]);
    assert!(
        table_row(&run.stdout, "fine").contains("connected"),
        "{run:#?}"
    );
    assert!(run.stdout.contains("broken/mcp.json"), "{run:#?}");
    assert!(run.stdout.contains("fine: plugin fine ("), "{run:#?}");
}
