//! What `mcpmux tools` and `mcpmux call` make of the tool surface: the export for each model
//! provider, policy `ask` rules without a terminal (refused unless `--yes`), and a stage/agent
//! scope.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::cli::*;
use crate::support;

use serde_json::{Value, json};
use support::{Sandbox, assert_code};

#[test]
fn tools_export_for_each_provider() {
    let sandbox = Sandbox::new();
    sandbox.mcp_json(json!({ "ts": testserver_entry(&[]) }));
    for provider in ["anthropic", "openai", "openai-strict", "gemini"] {
        let run = sandbox.run(&["tools", "--format", provider]);
        assert_code(&run, 0);
        let tools: Vec<Value> = serde_json::from_str(&run.stdout)
            .unwrap_or_else(|e| panic!("{provider}: not JSON ({e}): {run:#?}"));
        assert!(tools.len() >= 10, "{provider}: {}", tools.len());
        let echo = match provider {
            "anthropic" => tools.iter().find(|t| t["name"] == "mcp__ts__echo").cloned(),
            "gemini" => tools.iter().find(|t| t["name"] == "mcp__ts__echo").cloned(),
            _ => tools
                .iter()
                .find(|t| t["function"]["name"] == "mcp__ts__echo")
                .cloned(),
        };
        assert!(echo.is_some(), "{provider}: no echo in {}", run.stdout);
    }
    let run = sandbox.run(&["tools", "--format", "cobol"]);
    assert_code(&run, 2);
    assert!(run.stderr.contains("openai-strict"), "{run:#?}");
}

#[test]
fn ask_rules_refuse_without_a_terminal_unless_yes() {
    let sandbox = Sandbox::new();
    let server = testserver();
    sandbox.write(
        "mcpmux.toml",
        &format!(
            "[servers.ts]\ncommand = {}\n\n[policy]\nask = [\"mcp__ts__add\"]\ndeny = [\"mcp__ts__fail\"]\n",
            toml_str(&server)
        ),
    );
    let run = sandbox.run(&["call", "mcp__ts__add", r#"{"a":1,"b":2}"#]);
    assert_code(&run, 2);
    assert!(run.stderr.contains("needs approval"), "{run:#?}");
    let run = sandbox.run(&["--yes", "call", "mcp__ts__add", r#"{"a":1,"b":2}"#]);
    assert_code(&run, 0);
    assert_eq!(run.stdout.trim(), "3");
    let run = sandbox.run(&["--yes", "call", "mcp__ts__fail", "{}"]);
    assert_code(&run, 2);
    assert!(
        run.stderr.contains("denied by policy rule `mcp__ts__fail`"),
        "{run:#?}"
    );
}

#[test]
fn call_with_a_scope_refuses_a_tool_outside_it_and_tools_lists_only_the_scopes() {
    let sandbox = Sandbox::new();
    sandbox.mcp_json(json!({
        "deploy": testserver_entry(&[]),
        "notes": testserver_entry(&["--stderr-lines", "1"]),
    }));
    sandbox.write(
        "mcpmux.toml",
        "[servers.deploy]\nstages = [\"build\"]\nagents = [\"coder\"]\n",
    );
    let refused = sandbox.run(&[
        "call",
        "mcp__deploy__echo",
        r#"{"text":"ship"}"#,
        "--scope",
        "plan/coder",
    ]);
    assert_code(&refused, 2);
    assert!(
        refused
            .stderr
            .contains("`mcp__deploy__echo` is outside scope `plan/coder`"),
        "{refused:#?}"
    );
    assert!(!refused.stdout.contains("ship"), "{refused:#?}");
    let allowed = sandbox.run(&[
        "call",
        "mcp__deploy__echo",
        r#"{"text":"ship"}"#,
        "--scope",
        "build/coder",
    ]);
    assert_code(&allowed, 0);
    assert!(allowed.stdout.contains("ship"), "{allowed:#?}");
    let listed = sandbox.run(&["tools", "--json", "--scope", "plan/coder"]);
    assert_code(&listed, 0);
    let servers: Vec<Value> = json_array(&listed)
        .iter()
        .map(|t| t["server"].clone())
        .collect();
    assert!(servers.contains(&json!("notes")), "{servers:?}");
    assert!(!servers.contains(&json!("deploy")), "{servers:?}");
    let bad = sandbox.run(&["tools", "--scope", "a/b/c"]);
    assert_code(&bad, 2);
    assert!(bad.stderr.contains("STAGE/AGENT"), "{bad:#?}");
}
