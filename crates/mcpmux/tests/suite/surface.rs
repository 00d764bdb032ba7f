//! The harness's tool surface through a real hub: built-in tools and MCP servers in one sorted
//! list, shadowing, filters at list and call time, scopes, validation before the wire (proved
//! by the test server's call log), permission rules, truncation with spill, and servers
//! configured twice started once.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::sync::Arc;

use mcpmux::Spill;
use mcpmux::config::{PolicyRules, ServerOptions};
use mcpmux::{Builtin, Error, LocalTools, Scope, ServerState};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use support::{call_log, hub_options, started_with, stdio_testserver};

#[derive(Deserialize, JsonSchema)]
struct WordCount {
    /// The text to count words in.
    text: String,
}

fn builtins() -> LocalTools {
    let mut registry = LocalTools::new();
    registry.register(Builtin::new(
        "count_words",
        "Counts the words of a text.",
        |args: WordCount| async move { args.text.split_whitespace().count().to_string() },
    ));
    registry.register(Builtin::new(
        "now",
        "The current time.",
        |_: ()| async move { "12:00".to_string() },
    ));
    registry
}

#[tokio::test]
async fn built_ins_and_three_servers_make_one_sorted_list_and_built_ins_shadow() {
    let mut registry = builtins();
    // A built-in with the exposed name of an MCP tool takes its place.
    registry.register(Builtin::new(
        "mcp__b__echo",
        "A local echo that shadows server b's.",
        |args: WordCount| async move { format!("local: {}", args.text) },
    ));
    let hub = started_with(
        vec![
            stdio_testserver("c", &["--stderr-lines", "1"]),
            stdio_testserver("a", &[]),
            stdio_testserver("b", &["--stderr-lines", "2"]),
        ],
        hub_options().with_registry(registry),
    )
    .await;
    let names: Vec<String> = hub.tools().into_iter().map(|t| t.name).collect();
    assert_eq!(&names[..3], ["count_words", "mcp__b__echo", "now"]);
    let mcp = &names[3..];
    let mut sorted = mcp.to_vec();
    sorted.sort();
    assert_eq!(mcp, sorted.as_slice(), "MCP tools follow, sorted by name");
    assert!(mcp.iter().any(|n| n.starts_with("mcp__a__")));
    assert!(mcp.iter().any(|n| n.starts_with("mcp__c__")));
    assert_eq!(names.iter().filter(|n| *n == "mcp__b__echo").count(), 1);

    // The shadowed tool is recorded with a reason.
    let shadowed = hub.shadowed();
    assert_eq!(shadowed.len(), 1);
    assert_eq!(shadowed[0].tool.name, "mcp__b__echo");
    assert!(
        shadowed[0].reason.contains("built-in"),
        "{}",
        shadowed[0].reason
    );

    // Stable across runs: the same list again.
    assert_eq!(
        hub.tools().into_iter().map(|t| t.name).collect::<Vec<_>>(),
        names
    );

    // One call path for both kinds.
    let local = hub
        .call("count_words", json!({"text": "one two three"}))
        .await
        .unwrap();
    assert_eq!(local.to_text(), "3");
    let shadow = hub
        .call("mcp__b__echo", json!({"text": "hi"}))
        .await
        .unwrap();
    assert_eq!(shadow.to_text(), "local: hi");
    let remote = hub
        .call("mcp__a__echo", json!({"text": "hi"}))
        .await
        .unwrap();
    assert_eq!(remote.to_text(), "hi");
    hub.shutdown().await;
}

#[tokio::test]
async fn invalid_arguments_are_refused_before_the_server_sees_them() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls.jsonl");
    let hub = started_with(
        vec![stdio_testserver(
            "t",
            &["--call-log", log.to_str().unwrap()],
        )],
        hub_options(),
    )
    .await;
    let err = hub
        .call("mcp__t__add", json!({"a": "2", "b": 3}))
        .await
        .unwrap_err();
    let Error::InvalidArguments { tool, message } = &err else {
        panic!("{err:?}");
    };
    assert_eq!(tool, "mcp__t__add");
    assert!(
        message.contains("/a"),
        "the problem names its path: {message}"
    );
    let err = hub.call("mcp__t__echo", json!({})).await.unwrap_err();
    assert!(err.to_string().contains("text"), "{err}");
    assert!(
        call_log(&log).is_empty(),
        "the server saw: {:?}",
        call_log(&log)
    );

    // A valid call goes through and is logged.
    hub.call("mcp__t__add", json!({"a": 2, "b": 3}))
        .await
        .unwrap();
    assert_eq!(call_log(&log).len(), 1);
    hub.shutdown().await;
}

#[tokio::test]
async fn deny_rules_block_calls_and_ask_needs_an_approver() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls.jsonl");
    let mut rules = PolicyRules::default();
    rules.deny.push("mcp__t__fail".into());
    rules.ask.push("effect:destructive".into());
    let hub = started_with(
        vec![stdio_testserver(
            "t",
            &["--call-log", log.to_str().unwrap()],
        )],
        hub_options().with_policy(rules.clone()),
    )
    .await;
    let err = hub.call("mcp__t__fail", json!({})).await.unwrap_err();
    assert!(matches!(err, Error::Denied(_)), "{err:?}");
    assert!(err.to_string().contains("mcp__t__fail"), "{err}");
    // change_tools is destructive: `ask`, and without an approver that is a refusal.
    let err = hub
        .call("mcp__t__change_tools", json!({}))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("needs approval"), "{err}");
    // Read-only tools are allowed.
    hub.call("mcp__t__echo", json!({"text": "ok"}))
        .await
        .unwrap();
    let logged: Vec<String> = call_log(&log)
        .iter()
        .map(|l| l["tool"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(logged, ["echo"], "denied calls never reached the server");
    hub.shutdown().await;

    // An approver that says yes lets the `ask` call through.
    let approver: Arc<dyn mcpmux::Approver> = Arc::new(mcpmux::policy::ApproveAll);
    let hub = started_with(
        vec![stdio_testserver("t", &[])],
        hub_options().with_policy(rules).with_approver(approver),
    )
    .await;
    hub.call("mcp__t__change_tools", json!({})).await.unwrap();
    hub.shutdown().await;
}

#[tokio::test]
async fn filters_apply_when_listing_and_when_calling() {
    let mut opts = ServerOptions::default();
    opts.tools.deny.push("ech*".into());
    opts.tools.allow.push("*".into());
    let hub = started_with(
        vec![stdio_testserver("t", &[]).with_options(opts)],
        hub_options(),
    )
    .await;
    assert!(hub.tool("mcp__t__echo").is_none());
    assert!(hub.tool("mcp__t__add").is_some());
    let err = hub
        .call("mcp__t__echo", json!({"text": "x"}))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::UnknownTool { .. }), "{err:?}");
    hub.shutdown().await;
}

#[tokio::test]
async fn scopes_select_servers_by_stage_and_agent() {
    let mut planning = ServerOptions::default();
    planning.stages = Some(vec!["plan".into()]);
    let mut coder = ServerOptions::default();
    coder.agents = Some(vec!["coder".into()]);
    let hub = started_with(
        vec![
            stdio_testserver("planner", &[]).with_options(planning),
            stdio_testserver("coding", &["--stderr-lines", "1"]).with_options(coder),
            stdio_testserver("anywhere", &["--stderr-lines", "2"]),
        ],
        hub_options().with_registry(builtins()),
    )
    .await;
    let servers = |scope: Scope| {
        let mut s: Vec<String> = hub
            .tools_for(&scope)
            .into_iter()
            .map(|t| t.server)
            .collect();
        s.dedup();
        s.sort();
        s.dedup();
        s
    };
    assert_eq!(
        servers(Scope::all().with_stage("plan").with_agent("coder")),
        ["anywhere", "builtin", "coding", "planner"]
    );
    assert_eq!(
        servers(Scope::all().with_stage("build").with_agent("coder")),
        ["anywhere", "builtin", "coding"]
    );
    assert_eq!(
        servers(Scope::all().with_stage("plan").with_agent("reviewer")),
        ["anywhere", "builtin", "planner"]
    );
    assert_eq!(
        servers(Scope::all()),
        ["anywhere", "builtin", "coding", "planner"]
    );
    hub.shutdown().await;
}

#[tokio::test]
async fn a_huge_result_is_truncated_and_spilled_in_full() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = ServerOptions::default();
    opts.max_result_bytes = 10 * 1024;
    let hub = started_with(
        vec![stdio_testserver("t", &[]).with_options(opts)],
        hub_options().with_spill(Spill::new(dir.path().join("spill"))),
    )
    .await;
    let result = hub.call("mcp__t__huge", json!({"mb": 1})).await.unwrap();
    let text = result.to_text();
    assert!(text.len() < 12 * 1024, "{} bytes kept", text.len());
    assert!(
        text.contains("output truncated"),
        "{}",
        &text[text.len() - 300..]
    );
    let spilled: Vec<_> = std::fs::read_dir(dir.path().join("spill"))
        .unwrap()
        .flatten()
        .collect();
    assert_eq!(spilled.len(), 1);
    let full = std::fs::read_to_string(spilled[0].path()).unwrap();
    assert!(
        full.len() >= 1024 * 1024,
        "the spill holds it all: {}",
        full.len()
    );
    assert!(text.contains(&spilled[0].path().display().to_string()));
    hub.shutdown().await;
}

#[tokio::test]
async fn a_plugin_server_repeating_a_configured_one_is_started_once() {
    // Only plugin definitions are merged (hand-written ones never are: tests/accounts.rs).
    let mut second = stdio_testserver("second", &[]);
    second.origin = mcpmux::config::Origin::Plugin {
        source: "plugin github".into(),
    };
    let hub = started_with(vec![second, stdio_testserver("first", &[])], hub_options()).await;
    let servers = hub.servers();
    let second = servers.iter().find(|s| s.name == "second").unwrap();
    match &second.state {
        ServerState::Disabled { reason } => assert!(reason.contains("`first`"), "{reason}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(second.source.as_deref(), Some("plugin github"));
    assert!(hub.tools().iter().all(|t| t.server != "second"));
    hub.shutdown().await;
}

#[tokio::test]
async fn mcp_servers_are_a_tool_source_like_any_other() {
    use mcpmux::ToolSource;
    // One hub's MCP servers handed to another harness's registry as a custom source.
    let upstream = started_with(vec![stdio_testserver("up", &[])], hub_options()).await;
    assert!(matches!(upstream.health(), mcpmux::Health::Ready));
    let listed = ToolSource::tools(&upstream).await.unwrap();
    assert!(listed.iter().any(|t| t.name == "mcp__up__echo"));

    let mut registry = LocalTools::new();
    registry.register_source(Arc::new(upstream.clone()));
    let failures = registry.refresh().await;
    assert!(failures.is_empty(), "{failures:?}");
    let hub = started_with(vec![], hub_options().with_registry(registry)).await;
    let names: Vec<String> = hub.tools().into_iter().map(|t| t.name).collect();
    assert!(names.contains(&"mcp__up__echo".to_string()), "{names:?}");
    let result = hub
        .call("mcp__up__echo", json!({"text": "through two hubs"}))
        .await
        .unwrap();
    assert_eq!(result.to_text(), "through two hubs");
    hub.shutdown().await;
    upstream.shutdown().await;
}
