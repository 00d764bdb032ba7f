//! The trust boundary through a real hub and real test servers: a call made in a scope cannot
//! reach a tool the scope's listing leaves out, and policy rules name a tool by its server and
//! raw name, so neither a hashed exposed name nor a server whose name extends another's with
//! `__` slips past them. Every refusal is checked in the call log: nothing reached the server.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::path::Path;

use mcpmux::config::{PolicyRules, ServerOptions};
use mcpmux::{CallOptions, Error, Hub, Scope, ServerSpec};
use serde_json::json;

/// A test server over stdio; `distinct` keeps specs apart (the hub starts a server configured
/// twice, same command and args, only once).
fn testserver(name: &str, distinct: u32, log: &Path) -> ServerSpec {
    ServerSpec::stdio(
        name,
        support::testserver().to_string_lossy(),
        [
            "--stderr-lines".to_string(),
            distinct.to_string(),
            "--call-log".to_string(),
            log.display().to_string(),
        ],
    )
}

async fn started(specs: Vec<ServerSpec>, policy: PolicyRules) -> Hub {
    let options = support::hub_options().with_policy(policy);
    support::started_with(specs, options).await
}

fn deny(entries: &[&str]) -> PolicyRules {
    let mut rules = PolicyRules::default();
    rules.deny = entries.iter().map(|e| e.to_string()).collect();
    rules
}

#[tokio::test]
async fn a_call_by_name_to_a_tool_outside_the_callers_scope_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let build_log = dir.path().join("build.jsonl");
    let mut build_only = ServerOptions::default();
    build_only.stages = Some(vec!["build".into()]);
    build_only.agents = Some(vec!["coder".into()]);
    let hub = started(
        vec![
            testserver("deploy", 1, &build_log).with_options(build_only),
            testserver("notes", 2, &dir.path().join("notes.jsonl")),
        ],
        PolicyRules::default(),
    )
    .await;
    let planning = Scope::stage("plan").with_agent("coder");
    assert!(
        hub.tools_for(&planning)
            .iter()
            .all(|t| t.server != "deploy"),
        "the listing leaves deploy out"
    );

    let err = hub
        .call_with(
            "mcp__deploy__echo",
            json!({"text": "ship it"}),
            CallOptions::default().with_scope(planning.clone()),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, Error::OutOfScope { .. }), "{err:?}");
    let text = err.to_string();
    assert!(text.contains("`mcp__deploy__echo`"), "{text}");
    assert!(text.contains("`plan/coder`"), "{text}");
    assert!(
        text.contains("stage `plan` is not among its stages [build]"),
        "{text}"
    );
    assert_eq!(
        support::call_log(&build_log).len(),
        0,
        "the call reached the server"
    );

    // In scope: the same call goes through; so does any call without a scope, and a
    // server declared for every stage is in every scope.
    let building = Scope::stage("build").with_agent("coder");
    let echoed = hub
        .call_with(
            "mcp__deploy__echo",
            json!({"text": "ship it"}),
            CallOptions::default().with_scope(building),
        )
        .await
        .unwrap();
    assert_eq!(echoed.to_text(), "ship it");
    let notes = hub
        .call_with(
            "mcp__notes__echo",
            json!({"text": "fine"}),
            CallOptions::default().with_scope(planning),
        )
        .await
        .unwrap();
    assert_eq!(notes.to_text(), "fine");
    let reviewer = Scope::stage("build").with_agent("reviewer");
    let err = hub
        .call_with(
            "mcp__deploy__echo",
            json!({"text": "x"}),
            CallOptions::default().with_scope(reviewer),
        )
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("agent `reviewer` is not among its agents [coder]"),
        "{err}"
    );
    assert_eq!(support::call_log(&build_log).len(), 1);
    hub.shutdown().await;
}

#[tokio::test]
async fn a_deny_rule_written_with_the_plain_name_still_denies_when_the_exposed_name_is_hashed() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls.jsonl");
    // `mcp__<server>__echo` is longer than the 64 characters providers accept: the exposed
    // name is cut and gets a hash suffix.
    let server = "filesystem-of-the-build-machine-in-the-basement-next-to-the-boiler";
    let rule = format!("mcp__{server}__echo");
    let hub = started(vec![testserver(server, 1, &log)], deny(&[rule.as_str()])).await;
    let tool = hub
        .tools()
        .into_iter()
        .find(|t| t.server == server && t.raw_name == "echo")
        .unwrap();
    assert_ne!(
        tool.name, rule,
        "the exposed name was expected to be hashed"
    );

    let err = hub
        .call(&tool.name, json!({"text": "x"}))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Denied(_)), "{err:?}");
    assert!(err.to_string().contains(&rule), "{err}");
    assert_eq!(
        support::call_log(&log).len(),
        0,
        "the call reached the server"
    );
    // Only that tool: the server's others are not matched.
    let add = hub
        .tools()
        .into_iter()
        .find(|t| t.server == server && t.raw_name == "add")
        .unwrap();
    assert!(hub.call(&add.name, json!({"a": 1, "b": 2})).await.is_ok());
    hub.shutdown().await;
}

#[tokio::test]
async fn a_server_glob_does_not_match_a_server_whose_name_extends_it_with_underscores() {
    let dir = tempfile::tempdir().unwrap();
    let docs_log = dir.path().join("docs.jsonl");
    let admin_log = dir.path().join("admin.jsonl");
    let hub = started(
        vec![
            testserver("docs", 1, &docs_log),
            testserver("docs__admin", 2, &admin_log),
        ],
        deny(&["mcp__docs__*"]),
    )
    .await;
    let admin = hub
        .call("mcp__docs__admin__echo", json!({"text": "admin"}))
        .await
        .unwrap();
    assert_eq!(admin.to_text(), "admin");
    assert_eq!(support::call_log(&admin_log).len(), 1);

    let err = hub
        .call("mcp__docs__echo", json!({"text": "docs"}))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Denied(_)), "{err:?}");
    assert!(err.to_string().contains("`mcp__docs__*`"), "{err}");
    assert_eq!(
        support::call_log(&docs_log).len(),
        0,
        "the call reached the server"
    );
    hub.shutdown().await;
}
