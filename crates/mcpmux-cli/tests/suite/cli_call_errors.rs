//! `mcpmux call` and `mcpmux tools` when something goes wrong: a tool's own error (exit 1,
//! `isError`), an unknown tool (the near name suggested), arguments that are not JSON or not an
//! object, an unknown server, and `--timeout` bounding a call.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::cli::*;
use crate::support;

use std::time::Duration;

use serde_json::{Value, json};
use support::{Sandbox, assert_code};

#[test]
fn tool_error_exits_1_and_says_is_error() {
    let sandbox = Sandbox::new();
    sandbox.mcp_json(json!({ "ts": testserver_entry(&[]) }));
    let run = sandbox.run(&["call", "mcp__ts__fail", r#"{"message":"disk full"}"#]);
    assert_code(&run, 1);
    assert!(
        run.stdout.contains("disk full"),
        "the tool's message: {run:#?}"
    );
    assert!(run.stderr.contains("isError"), "{run:#?}");
    assert!(run.stderr.contains("mcp__ts__fail"), "{run:#?}");
}

#[test]
fn tool_error_with_json_exits_1_and_prints_is_error_true() {
    let sandbox = Sandbox::new();
    sandbox.mcp_json(json!({ "ts": testserver_entry(&[]) }));
    let run = sandbox.run(&["call", "mcp__ts__fail", r#"{"message":"nope"}"#, "--json"]);
    assert_code(&run, 1);
    let result: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(result["isError"], true, "{result:#}");
}

#[test]
fn unknown_tool_exits_2_and_suggests_the_near_name() {
    let sandbox = Sandbox::new();
    sandbox.mcp_json(json!({ "ts": testserver_entry(&[]) }));
    let run = sandbox.run(&["call", "mcp__ts__ecko", r#"{"text":"hi"}"#]);
    assert_code(&run, 2);
    assert!(run.stderr.contains("mcp__ts__ecko"), "{run:#?}");
    assert!(
        run.stderr.contains("did you mean `mcp__ts__echo`"),
        "{run:#?}"
    );
    assert_eq!(run.stdout, "", "{run:#?}");
}

#[test]
fn bad_json_arguments_exit_2_with_a_clear_message() {
    let sandbox = Sandbox::new();
    sandbox.mcp_json(json!({ "ts": testserver_entry(&[]) }));
    let run = sandbox.run(&["call", "mcp__ts__echo", "{text: hi}"]);
    assert_code(&run, 2);
    assert!(
        run.stderr.contains("arguments are not valid JSON"),
        "{run:#?}"
    );
}

#[test]
fn non_object_arguments_exit_2() {
    let sandbox = Sandbox::new();
    let run = sandbox.run(&["call", "mcp__demo__echo", "[\"hi\"]"]);
    assert_code(&run, 2);
    assert!(run.stderr.contains("JSON object"), "{run:#?}");
}

#[test]
fn tools_of_an_unknown_server_exit_2() {
    let sandbox = Sandbox::new();
    sandbox.mcp_json(json!({ "ts": testserver_entry(&[]) }));
    let run = sandbox.run(&["tools", "--server", "nosuch"]);
    assert_code(&run, 2);
    assert!(run.stderr.contains("nosuch"), "{run:#?}");
}

#[test]
fn call_timeout_flag_bounds_the_call() {
    let sandbox = Sandbox::new();
    sandbox.mcp_json(json!({ "ts": testserver_entry(&[]) }));
    let run = sandbox.run(&["call", "mcp__ts__hang", "{}", "--timeout", "0.5"]);
    assert_code(&run, 2);
    assert!(run.stderr.contains("timed out after 500ms"), "{run:#?}");
    assert!(run.took < Duration::from_secs(10), "{run:#?}");
}

/// `--timeout 0` is not "a positive number of seconds" (the CLI's own words); today it is
/// taken, spent entirely on waiting for startup, and the user reads that the server "is
/// pending: not connected" — nothing about a timeout.
#[test]
fn zero_timeout_is_reported_as_a_timeout_problem() {
    let sandbox = Sandbox::new();
    sandbox.mcp_json(json!({ "ts": testserver_entry(&[]) }));
    let run = sandbox.run(&[
        "call",
        "mcp__ts__echo",
        r#"{"text":"hi"}"#,
        "--timeout",
        "0",
    ]);
    assert_code(&run, 2);
    let stderr = run.stderr.to_lowercase();
    assert!(
        stderr.contains("timeout") || stderr.contains("timed out"),
        "the message should be about the timeout: {run:#?}"
    );
}
