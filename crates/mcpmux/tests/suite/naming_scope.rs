//! Prompts, resources and templates named, routed and scoped by the hub beside the tools,
//! against the test server: a prompt is exposed as `mcp__SERVER__PROMPT` by the tools' rule
//! and routed back by that name alone; a server's `stages` and `agents` say which scopes see
//! it; a tool its server has not listed is given the name it would have, unless another holds it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use mcpmux::Scope;
use support::fast_testserver;

#[tokio::test]
async fn prompts_are_named_as_tools_are_and_routed_back_by_that_name_alone() {
    let hub = support::started(vec![
        fast_testserver("t", &["--prompts"]),
        fast_testserver("my.server", &["--prompts"]),
    ])
    .await;
    let listing = hub.prompts(None).await.unwrap();
    assert!(listing.errors.is_empty(), "{:?}", listing.errors);
    let greet = listing
        .items
        .iter()
        .find(|p| p.server == "t" && p.name == "greet")
        .expect("t's greet");
    assert_eq!(greet.exposed_name, "mcp__t__greet");
    let routed = hub.prompt_named("mcp__t__greet").await.unwrap().unwrap();
    assert_eq!(
        (routed.server.as_str(), routed.name.as_str()),
        ("t", "greet")
    );
    // A server name outside the tools' characters is fitted as a tool's would be, and the
    // fitted name routes back to that server.
    let other = hub
        .prompt_named("mcp__my_server__greet")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(other.server, "my.server");
    // A server's own name is not an exposed one.
    assert!(hub.prompt_named("greet").await.unwrap().is_none());
    hub.shutdown().await;
}

#[tokio::test]
async fn a_server_is_in_the_scopes_its_stages_and_agents_admit_and_an_unknown_one_in_none() {
    let mut build = fast_testserver("build", &[]);
    build.options.stages = Some(vec!["build".into()]);
    let hub = support::started(vec![build, fast_testserver("any", &[])]).await;
    assert!(hub.in_scope("build", &Scope::stage("build")));
    assert!(!hub.in_scope("build", &Scope::stage("plan")));
    assert!(hub.in_scope("any", &Scope::stage("plan")));
    assert!(!hub.in_scope("nobody", &Scope::all()));
    hub.shutdown().await;
}

#[tokio::test]
async fn a_tool_not_listed_is_given_the_name_it_would_have_unless_another_holds_it() {
    let hub = support::started(vec![fast_testserver("t", &[])]).await;
    assert_eq!(
        hub.exposed_tool_name("t", "echo").as_deref(),
        Some("mcp__t__echo")
    );
    assert_eq!(
        hub.exposed_tool_name("t", "not_yet").as_deref(),
        Some("mcp__t__not_yet")
    );
    // `ask.client` would be `mcp__t__ask_client`, which `ask_client` holds: a name is never
    // shared.
    assert_eq!(hub.exposed_tool_name("t", "ask.client"), None);
    hub.shutdown().await;
}
