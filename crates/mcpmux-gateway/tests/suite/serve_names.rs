//! `mcpmux serve --names short`: tools and prompts served as `SERVER__NAME` for clients that
//! put their own prefix before them (Claude Code's `mcp__mcpmux__`), each tool name fitted to
//! `--max-name-len` (51 by default) with a hash suffix where it is too long, and every served
//! name callable; driven by the official TypeScript SDK client over stdio.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mcpmux_test_support as support;

use serde_json::{Value, json};
use support::*;

/// A server name long enough that `NAME__echo` passes Claude Code's 51 characters.
const LONG_SERVER: &str = "a_server_whose_name_alone_takes_forty_eight_char";

fn names(listed: &Value) -> Vec<String> {
    listed
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn short_names_drop_the_mcp_prefix_fit_claude_code_s_limit_and_stay_callable() {
    let sandbox = Sandbox::with_user_servers(json!({
        "t": { "command": testserver(), "args": ["--prompts", "--hostile-names"] },
        LONG_SERVER: { "command": testserver(), "args": [] },
    }));
    let target = json!({ "stdio": stdio_target(&sandbox, &["--names", "short"]) });
    let listed = ts_client(target.clone(), json!([{"do": "list"}, {"do": "prompts"}]));
    let tools = names(&listed[0]["tools"]);
    assert!(tools.contains(&"t__echo".to_owned()), "{tools:?}");
    assert!(
        tools
            .iter()
            .all(|t| !t.starts_with("mcp__") && t.len() <= 51),
        "a name with the prefix or past 51 characters: {tools:?}"
    );
    // Claude Code's whole name for each still fits its 64.
    assert!(
        tools
            .iter()
            .all(|t| format!("mcp__mcpmux__{t}").len() <= 64),
        "{tools:?}"
    );
    // Fitted with a hash suffix, as the library fits it.
    let long_echo = mcpmux::cli_support::naming::short_names(
        &[&format!("mcp__{LONG_SERVER}__echo")],
        mcpmux_gateway::CLAUDE_CODE_SHORT_NAME_LEN,
    )
    .remove(0);
    assert_eq!(long_echo.len(), 51, "{long_echo}");
    assert!(tools.contains(&long_echo), "{long_echo} not in {tools:?}");
    let prompts: Vec<&str> = listed[1]["prompts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(prompts, ["t__greet"], "{listed:?}");

    let lines = ts_client(
        target,
        json!([
            {"do": "call", "name": "t__echo", "arguments": {"text": "short"}},
            {"do": "call", "name": long_echo, "arguments": {"text": "fitted"}},
            {"do": "get_prompt", "name": "t__greet", "arguments": {"name": "Ada"}},
            {"do": "call", "name": "mcp__t__echo", "arguments": {"text": "full"}},
            {"do": "list"},
        ]),
    );
    assert_eq!(text_of(&lines[0]["result"]), "short", "{lines:?}");
    assert_eq!(text_of(&lines[1]["result"]), "fitted", "{lines:?}");
    assert!(
        lines[2]["prompt"]["messages"].to_string().contains("Ada"),
        "{lines:?}"
    );
    // The full name is not what is served.
    let full = &lines[3];
    assert!(
        full["error"].is_string() || full["result"]["isError"] == true,
        "{full}"
    );
    // Deterministic: a second session lists the same names.
    assert_eq!(names(&lines[4]["tools"]), tools);
}

#[test]
fn short_names_fit_a_shorter_limit_and_passthrough_cannot_be_combined() {
    let sandbox = Sandbox::with_user_servers(json!({
        "t": { "command": testserver(), "args": [] },
    }));
    let target = json!({
        "stdio": stdio_target(&sandbox, &["--names", "short", "--max-name-len", "16"])
    });
    let lines = ts_client(target, json!([{"do": "list"}]));
    let tools = names(&lines[0]["tools"]);
    assert!(tools.iter().all(|t| t.len() <= 16), "{tools:?}");
    assert!(tools.contains(&"t__echo".to_owned()), "{tools:?}");

    let run = sandbox.run_within(
        &["serve", "--names", "short", "--passthrough"],
        std::time::Duration::from_secs(20),
    );
    assert_ne!(run.code, Some(0), "{}", run.stderr);
    assert!(run.stderr.contains("--passthrough"), "{}", run.stderr);
}
