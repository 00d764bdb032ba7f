//! `mcpmux` with a bad config: an entry without a command listed beside the good one, a broken
//! file shown as a row while the others work (and not replaced by the demo), a missing
//! `--config` file reported; and the user's config read with the project's overriding it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::cli::*;
use crate::support;

use serde_json::json;
use support::{Sandbox, assert_code, table_row};

#[test]
fn entry_without_command_is_listed_beside_the_good_one() {
    let sandbox = Sandbox::new();
    sandbox.mcp_json(json!({
        "good": testserver_entry(&[]),
        "bad": { "args": ["--verbose"] },
    }));
    let run = sandbox.run(&["servers"]);
    assert_code(&run, 0);
    let good: Vec<&str> = table_row(&run.stdout, "good").split_whitespace().collect();
    assert_eq!(good[3], "connected", "{run:#?}");
    let bad = table_row(&run.stdout, "bad");
    assert!(bad.contains("failed"), "{run:#?}");
    assert!(
        bad.contains(r#"field "command" is missing"#),
        "the table names the field: {run:#?}"
    );

    let run = sandbox.run(&["servers", "--json"]);
    let servers = json_array(&run);
    let bad = server(&servers, "bad");
    assert_eq!(bad["state"], "failed", "{bad:#}");
    let error = bad["error"].as_str().unwrap();
    assert!(error.contains(".mcp.json"), "{error}");
    assert!(error.contains(r#"field "command" is missing"#), "{error}");

    let run = sandbox.run(&["call", "mcp__good__echo", r#"{"text":"still works"}"#]);
    assert_code(&run, 0);
    assert_eq!(run.stdout, "still works\n", "{run:#?}");
}

#[test]
fn broken_json_file_is_a_row_while_other_files_work() {
    let sandbox = Sandbox::new();
    sandbox.write(".mcp.json", "{\"mcpServers\": {\"x\": ");
    sandbox.write(
        "mcpmux.toml",
        &format!("[servers.good]\ncommand = {}\n", toml_str(&testserver())),
    );
    let run = sandbox.run(&["servers"]);
    assert_code(&run, 0);
    let good: Vec<&str> = table_row(&run.stdout, "good").split_whitespace().collect();
    assert_eq!(good[3], "connected", "{run:#?}");
    let broken = run
        .stdout
        .lines()
        .find(|l| l.contains(".mcp.json") && l.contains("failed"))
        .unwrap_or_else(|| panic!("no row naming .mcp.json: {run:#?}"));
    assert!(broken.contains("not valid JSON"), "{broken}");
    assert!(
        !run.stderr.contains("built-in demo"),
        "a broken config must not fall back to the demo: {run:#?}"
    );

    let run = sandbox.run(&["call", "mcp__good__add", r#"{"a":2,"b":3}"#]);
    assert_code(&run, 0);
    assert_eq!(run.stdout.trim(), "5", "{run:#?}");
}

#[test]
fn broken_json_file_alone_is_reported_not_replaced_by_the_demo() {
    let sandbox = Sandbox::new();
    sandbox.write(".mcp.json", "{ not json");
    let run = sandbox.run(&["tools"]);
    assert_code(&run, 0);
    assert!(!run.stdout.contains("mcp__demo__"), "{run:#?}");
    assert!(run.stderr.contains(".mcp.json"), "{run:#?}");
    assert!(run.stderr.contains("not valid JSON"), "{run:#?}");
}

#[test]
fn missing_config_file_is_reported() {
    let sandbox = Sandbox::new();
    sandbox.mcp_json(json!({ "ts": testserver_entry(&[]) }));
    let run = sandbox.run(&["servers", "--config", "missing.toml"]);
    let row = run
        .stdout
        .lines()
        .find(|l| l.contains("missing.toml"))
        .unwrap_or_else(|| panic!("no row for missing.toml: {run:#?}"));
    assert!(row.contains("no such file"), "{row}");
    let ts: Vec<&str> = table_row(&run.stdout, "ts").split_whitespace().collect();
    assert_eq!(ts[3], "connected", "{run:#?}");

    let run = sandbox.run(&["tools", "--config", "missing.toml"]);
    assert!(run.stderr.contains("missing.toml"), "{run:#?}");
    assert!(run.stdout.contains("mcp__ts__echo"), "{run:#?}");
}

/// A user who mistypes `--config` and calls a tool of that file is told only "no tool named
/// ..."; the unreadable file the user named is never mentioned.
#[test]
fn call_with_a_missing_config_file_says_so() {
    let sandbox = Sandbox::new();
    let run = sandbox.run(&[
        "call",
        "mcp__ts__echo",
        r#"{"text":"hi"}"#,
        "--config",
        "mcpmux.tml",
    ]);
    assert_code(&run, 2);
    assert!(
        run.stderr.contains("mcpmux.tml"),
        "the unreadable config file should be named: {run:#?}"
    );
}

#[test]
fn home_config_is_read_and_project_overrides_it() {
    let sandbox = Sandbox::new();
    std::fs::write(
        sandbox.home.join(".claude.json"),
        json!({ "mcpServers": { "ts": { "command": "/nonexistent/from-home" } } }).to_string(),
    )
    .unwrap();
    let run = sandbox.run(&["servers"]);
    assert!(table_row(&run.stdout, "ts").contains("failed"), "{run:#?}");

    sandbox.mcp_json(json!({ "ts": testserver_entry(&[]) }));
    let run = sandbox.run(&["servers"]);
    let row: Vec<&str> = table_row(&run.stdout, "ts").split_whitespace().collect();
    assert_eq!(row[3], "connected", "the project entry wins: {run:#?}");
}
