//! `mcpmux serve --passthrough`: the gateway in front of exactly one server, its tools and
//! prompts under the server's own names, driven by the official SDK clients (TypeScript: the
//! handshake era; Python: 2026-07-28), with policy and argument validation still on the path,
//! and refused with a clear message when more than one server is configured.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mcpmux_test_support as support;

use std::time::Duration;

use serde_json::json;
use support::*;

#[test]
fn passthrough_serves_the_one_server_s_tools_and_prompts_under_their_own_names() {
    let sandbox = Sandbox::with_user_servers(json!({
        "everything": { "command": npm_bin("mcp-server-everything"), "args": [] },
    }));
    let served = Served::start(&sandbox, &["--passthrough"]);
    let lines = ts_client(
        served.target(),
        json!([
            {"do": "list"},
            {"do": "call", "name": "echo", "arguments": {"message": "through"}},
            {"do": "prompts"},
            {"do": "get_prompt", "name": "simple-prompt"},
            {"do": "call", "name": "mcp__everything__echo", "arguments": {"message": "prefixed"}},
        ]),
    );
    let tools = lines[0]["tools"].as_array().unwrap();
    assert!(tools.iter().any(|t| t == "echo"), "{tools:?}");
    assert!(
        !tools
            .iter()
            .any(|t| t.as_str().unwrap().starts_with("mcp__")),
        "a prefixed name was listed: {tools:?}"
    );
    assert!(
        text_of(&lines[1]["result"]).contains("through"),
        "{lines:?}"
    );
    let prompts: Vec<&str> = lines[2]["prompts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert!(prompts.contains(&"simple-prompt"), "{prompts:?}");
    assert!(
        !prompts.iter().any(|p| p.starts_with("mcp__")),
        "{prompts:?}"
    );
    assert!(
        !lines[3]["prompt"]["messages"]
            .as_array()
            .unwrap()
            .is_empty(),
        "{lines:?}"
    );
    // The hub's own name is not served: the client sees an unknown tool.
    let prefixed = &lines[4];
    assert!(
        prefixed["error"].is_string() || prefixed["result"]["isError"] == true,
        "{prefixed}"
    );

    let modern = py_client(
        served.target(),
        "auto",
        json!([
            {"do": "version"},
            {"do": "call", "name": "echo", "arguments": {"message": "stateless"}},
        ]),
    );
    assert_eq!(modern[0]["protocol"], "2026-07-28", "{modern:?}");
    assert!(
        text_of(&modern[1]["result"]).contains("stateless"),
        "{modern:?}"
    );
    let (status, stderr) = served.terminate(Duration::from_secs(10));
    assert!(status.success(), "{status}: {stderr}");
}

#[test]
fn passthrough_keeps_policy_and_argument_validation_on_the_path() {
    let sandbox = Sandbox::new();
    let config = sandbox.home.join("gateway.toml");
    sandbox.write_file(
        &config,
        &format!(
            "[servers.t]\ncommand = {:?}\n\n[policy]\ndeny = [\"mcp__t__add\"]\n",
            testserver().to_str().unwrap()
        ),
    );
    let config = config.to_str().unwrap();
    let lines = ts_client(
        json!({ "stdio": stdio_target(&sandbox, &["--config", config, "--passthrough"]) }),
        json!([
            {"do": "call", "name": "add", "arguments": {"a": 1, "b": 1}},
            {"do": "call", "name": "echo", "arguments": {"text": 5}},
            {"do": "call", "name": "echo", "arguments": {"text": "allowed"}},
        ]),
    );
    assert_eq!(lines[0]["result"]["isError"], true, "denied: {lines:?}");
    assert_eq!(lines[1]["result"]["isError"], true, "invalid: {lines:?}");
    assert!(
        text_of(&lines[1]["result"]).contains("text"),
        "the validation error names the argument: {lines:?}"
    );
    assert_eq!(text_of(&lines[2]["result"]), "allowed", "{lines:?}");
}

#[test]
fn passthrough_is_refused_when_more_than_one_server_is_configured() {
    let sandbox = Sandbox::with_user_servers(json!({
        "a": { "command": testserver(), "args": [] },
        "b": { "command": testserver(), "args": [] },
    }));
    let run = sandbox.run_within(
        &["serve", "--http", "127.0.0.1:0", "--passthrough"],
        Duration::from_secs(30),
    );
    assert_ne!(run.code, Some(0), "{run:#?}");
    assert!(
        run.stderr
            .contains("--passthrough serves exactly one upstream server"),
        "{run:#?}"
    );
    assert!(
        run.stderr.contains("2 servers are configured (a, b)"),
        "{run:#?}"
    );
    assert!(run.stdout.is_empty(), "nothing was served: {run:#?}");
}

#[test]
fn passthrough_refuses_tool_names_that_are_not_valid_mcp_tool_names_and_names_the_server() {
    let sandbox = Sandbox::with_user_servers(json!({
        "odd": { "command": testserver(), "args": ["--hostile-names"] },
    }));
    // Warnings are logged from `-v` on (the default filter shows errors only).
    let served = Served::start(&sandbox, &["--passthrough", "-v"]);
    let emoji = "\u{1f600}".repeat(300);
    let long = "t".repeat(65);
    let lines = ts_client(
        served.target(),
        json!([
            {"do": "list"},
            {"do": "call", "name": "../../etc/passwd", "arguments": {}},
            {"do": "call", "name": "evil\u{202e}txt.exe", "arguments": {}},
            {"do": "call", "name": emoji, "arguments": {}},
            // Valid, never listed, and the hub's name for `new\nline` once sanitised.
            {"do": "call", "name": "new_line", "arguments": {}},
            {"do": "call", "name": long, "arguments": {}},
            {"do": "call", "name": "echo", "arguments": {"text": "still served"}},
        ]),
    );
    let tools: Vec<&str> = lines[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert!(tools.contains(&"echo"), "{tools:?}");
    for tool in &tools {
        assert!(
            mcpmux::cli_support::naming::is_mcp_tool_name(tool),
            "an invalid name was served: {tool:?}"
        );
    }
    for refused in &lines[1..6] {
        assert!(
            refused["error"].is_string() || refused["result"]["isError"] == true,
            "a refused tool was called: {refused}"
        );
        assert_ne!(text_of(&refused["result"]), "called", "{refused}");
    }
    assert_eq!(text_of(&lines[6]["result"]), "still served", "{lines:?}");

    let (status, stderr) = served.terminate(Duration::from_secs(10));
    assert!(status.success(), "{status}: {stderr}");
    let warnings: Vec<&str> = stderr
        .lines()
        .filter(|line| line.contains("not a valid MCP tool name"))
        .collect();
    assert_eq!(warnings.len(), 6, "one warning per refused name: {stderr}");
    assert!(
        warnings.iter().all(|line| line.contains("odd")),
        "each warning names the server: {warnings:?}"
    );
    assert!(
        stderr.contains(r"evil\u{202e}txt.exe") && stderr.contains(r"nul\0name"),
        "the names are shown escaped: {stderr}"
    );
    assert!(
        !stderr.contains('\u{202e}') && !stderr.contains('\0'),
        "no raw control reached the log: {stderr:?}"
    );
}
