//! `mcpmux add` and `mcpmux remove` as a user runs them: the entry written is one the next
//! `mcpmux` run starts and calls; other content of the file stays; refusals say what to write.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

use support::{Sandbox, assert_code};

fn testserver() -> String {
    support::testserver().display().to_string()
}

fn user_config(sandbox: &Sandbox) -> PathBuf {
    sandbox
        .home
        .join(".config")
        .join("mcpmux")
        .join("config.toml")
}

const COMMENTED: &str = "# servers I keep\n\n[policy]\nask = [\"effect:destructive\"] # keep asking\n\n# the old one\n[servers.old]\ncommand = \"true\"\nenabled = false\n";

#[test]
fn an_added_stdio_server_is_started_and_called_and_the_file_keeps_its_comments() {
    let sandbox = Sandbox::new();
    let file = user_config(&sandbox);
    sandbox.write_file(&file, COMMENTED);
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).unwrap();
    let server = testserver();
    let run = sandbox.run(&[
        "add",
        "ts",
        "--env",
        "KEY=k=1",
        "--",
        &server,
        "--require-env",
        "KEY=k=1",
    ]);
    assert_code(&run, 0);
    assert!(
        run.stdout.contains("added server `ts`") && run.stdout.contains("config.toml"),
        "{run:#?}"
    );
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        text.starts_with(COMMENTED),
        "the file's own content comes first, unchanged: {text}"
    );
    let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o640, "the file keeps its permissions");

    // The env value reached the process: the server refuses to start otherwise.
    let run = sandbox.run(&["call", "mcp__ts__echo", r#"{"text":"round trip"}"#]);
    assert_code(&run, 0);
    assert_eq!(run.stdout, "round trip\n", "{run:#?}");

    let run = sandbox.run(&["remove", "ts"]);
    assert_code(&run, 0);
    assert!(run.stdout.contains("removed server `ts`"), "{run:#?}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), COMMENTED);
    let run = sandbox.run(&["servers"]);
    assert!(!run.stdout.contains("ts "), "{run:#?}");
}

#[test]
fn an_existing_name_is_refused_without_force_and_replaced_with_it() {
    let sandbox = Sandbox::new();
    let file = user_config(&sandbox);
    sandbox.write_file(&file, COMMENTED);
    let run = sandbox.run(&["add", "old", "--", "other-command"]);
    assert_code(&run, 2);
    assert!(
        run.stderr.contains("\"old\" is already there") && run.stderr.contains("--force"),
        "{run:#?}"
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), COMMENTED);

    let server = testserver();
    let run = sandbox.run(&["add", "old", "--force", "--", &server]);
    assert_code(&run, 0);
    assert!(run.stdout.contains("replaced server `old`"), "{run:#?}");
    let run = sandbox.run(&["call", "mcp__old__echo", r#"{"text":"new"}"#]);
    assert_eq!(run.stdout, "new\n", "{run:#?}");
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        text.contains("# keep asking") && text.contains("# servers I keep"),
        "{text}"
    );
}

#[test]
fn a_project_server_goes_to_mcp_json_in_claude_s_format_and_runs_here() {
    let sandbox = Sandbox::new();
    let mcp_json = sandbox.project.join(".mcp.json");
    sandbox.write_file(&mcp_json, r#"{"mcpServers": {}, "note": "kept"}"#);
    let server = testserver();
    let run = sandbox.run(&["add", "pt", "--scope", "project", "--", &server]);
    assert_code(&run, 0);
    assert!(
        run.stdout.contains(".mcp.json") && run.stdout.contains("approved"),
        "{run:#?}"
    );
    let value: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&mcp_json).unwrap()).unwrap();
    assert_eq!(value["mcpServers"]["pt"]["type"], "stdio");
    assert_eq!(value["mcpServers"]["pt"]["command"], server.as_str());
    assert_eq!(value["note"], "kept");
    let run = sandbox.run(&["call", "mcp__pt__echo", r#"{"text":"p"}"#]);
    assert_eq!(run.stdout, "p\n", "{run:#?}");

    let run = sandbox.run(&["remove", "pt", "--scope", "project"]);
    assert_code(&run, 0);
    let value: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&mcp_json).unwrap()).unwrap();
    assert_eq!(value, serde_json::json!({"mcpServers": {}, "note": "kept"}));
}

#[test]
fn an_added_remote_server_is_reached_over_http() {
    let sandbox = Sandbox::new();
    let http = support::testserver_http(&[]);
    let run = sandbox.run(&[
        "add",
        "remote",
        "--url",
        &http.url,
        "--header",
        "X-Team: blue",
    ]);
    assert_code(&run, 0);
    let text = std::fs::read_to_string(user_config(&sandbox)).unwrap();
    assert!(
        text.contains("type = \"http\"") && text.contains("X-Team"),
        "{text}"
    );
    let run = sandbox.run(&["call", "mcp__remote__echo", r#"{"text":"far"}"#]);
    assert_eq!(run.stdout, "far\n", "{run:#?}");
}

#[test]
fn bad_names_urls_and_pairs_are_refused_and_nothing_is_written() {
    let sandbox = Sandbox::new();
    for (args, says) in [
        (
            vec!["add", "bad name", "--", "x"],
            "not a valid server name",
        ),
        (
            vec!["add", "a", "--url", "ftp://x.test/mcp"],
            "needs a http:// or https:// URL",
        ),
        (vec!["add", "a", "--url", "nowhere"], "not a URL"),
        (
            vec!["add", "a", "--env", "NOVALUE", "--", "x"],
            "write KEY=value",
        ),
        (
            vec![
                "add",
                "a",
                "--url",
                "https://x.test",
                "--header",
                "Bad Header: v",
            ],
            "not a header name",
        ),
        (
            vec!["add", "a", "--header", "A: b", "--", "x"],
            "remote servers",
        ),
        (vec!["add", "a"], "give the command after --"),
        (
            vec!["add", "a", "--scope", "global", "--", "x"],
            "not a scope",
        ),
    ] {
        let run = sandbox.run(&args);
        assert_code(&run, 2);
        assert!(run.stderr.contains(says), "{args:?}: {run:#?}");
    }
    assert!(!user_config(&sandbox).exists());
    assert!(!sandbox.project.join(".mcp.json").exists());
}

#[test]
fn removing_a_name_that_is_not_there_names_the_files_looked_in() {
    let sandbox = Sandbox::new();
    let run = sandbox.run(&["remove", "ghost"]);
    assert_code(&run, 2);
    assert!(
        run.stderr.contains("no server named \"ghost\"")
            && run.stderr.contains("config.toml")
            && run.stderr.contains(".mcp.json"),
        "{run:#?}"
    );
}

#[test]
fn a_name_another_file_defines_is_pointed_out_on_add_and_on_remove() {
    let sandbox = Sandbox::new();
    sandbox.write_file(
        &sandbox.project.join(".mcp.json"),
        r#"{"mcpServers": {"shared": {"command": "x"}}}"#,
    );
    sandbox.write_file(
        &sandbox.home.join(".claude.json"),
        r#"{"mcpServers": {"claudes": {"command": "y"}}}"#,
    );
    let run = sandbox.run(&["add", "shared", "--", "z"]);
    assert_code(&run, 0);
    assert!(
        run.stderr.contains(".mcp.json also defines `shared`") && run.stderr.contains("read later"),
        "{run:#?}"
    );
    let run = sandbox.run(&["remove", "claudes"]);
    assert_code(&run, 2);
    assert!(
        run.stderr.contains(".claude.json") && run.stderr.contains("claude mcp remove claudes"),
        "{run:#?}"
    );
}
