//! Server→client requests answered by the host callbacks (roots, sampling, elicitation with
//! SEP-1034 defaults, each absent without its callback) and resources and prompts listed, read
//! and subscribed — against server-everything over stdio, as installed by
//! `scripts/install-test-deps.sh`; and resource subscriptions in each era (`resources/subscribe`
//! in the handshake era, `subscriptions/listen` in 2026-07-28's) against our own test server.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::time::Duration;

use mcpmux::config::ServerOptions;
use mcpmux::host::{
    ElicitationKind, ElicitationReply, ElicitationRequest, ResourceEvent, Root, SamplingReply,
    SamplingRequest,
};
use mcpmux::{Era, Host, Hub, ResourceContents, ServerSpec, ServerState};
use serde_json::{Map, Value, json};
use support::{next_update, only_state};
use tokio::sync::broadcast;

fn everything() -> ServerSpec {
    ServerSpec::stdio(
        "everything",
        support::npm_bin("mcp-server-everything").to_string_lossy(),
        ["stdio"],
    )
}

async fn hub(host: Host) -> Hub {
    support::started_with(vec![everything()], support::hub_options().with_host(host)).await
}

/// server-everything registers its capability-dependent tools after the handshake and says
/// so with `tools/list_changed`: wait for the tool to show up.
async fn wait_for_tool(hub: &Hub, name: &str) -> bool {
    support::eventually(Duration::from_secs(10), Duration::from_millis(50), || {
        hub.tool(name).map(|_| ())
    })
    .await
    .is_some()
}

#[tokio::test]
async fn callbacks_answer_roots_sampling_and_elicitation() {
    let dir = tempfile::tempdir().unwrap();
    let host = Host::new()
        .with_roots(vec![Root::directory(dir.path())])
        .with_sampler(|request: SamplingRequest| async move {
            assert_eq!(request.server, "everything");
            let prompt = request.last_user_text().unwrap_or_default();
            Ok(SamplingReply::text(
                "test-model",
                format!("sampled: {prompt}"),
            ))
        })
        .with_elicitor(|request: ElicitationRequest| async move {
            assert!(matches!(request.kind, ElicitationKind::Form { .. }));
            let mut content = Map::new();
            content.insert("name".into(), json!("Ada"));
            content.insert("check".into(), json!(true));
            ElicitationReply::Accept(content)
        });
    let hub = hub(host).await;

    assert!(wait_for_tool(&hub, "mcp__everything__get-roots-list").await);
    let roots = hub
        .call("mcp__everything__get-roots-list", json!({}))
        .await
        .unwrap();
    let expected = Root::directory(dir.path()).uri;
    assert!(
        roots.to_text().contains(&expected),
        "{expected} not in {}",
        roots.to_text()
    );

    assert!(wait_for_tool(&hub, "mcp__everything__trigger-sampling-request").await);
    let sampled = hub
        .call(
            "mcp__everything__trigger-sampling-request",
            json!({"prompt": "hello"}),
        )
        .await
        .unwrap();
    assert!(!sampled.is_error, "{}", sampled.to_text());
    assert!(
        sampled.to_text().contains("sampled: ") && sampled.to_text().contains("hello"),
        "{}",
        sampled.to_text()
    );
    assert!(sampled.to_text().contains("test-model"));

    assert!(wait_for_tool(&hub, "mcp__everything__trigger-elicitation-request").await);
    let elicited = hub
        .call("mcp__everything__trigger-elicitation-request", json!({}))
        .await
        .unwrap();
    let text = elicited.to_text();
    assert!(!elicited.is_error, "{text}");
    assert!(text.contains("Ada"), "{text}");
    // Fields the user left out come back with the schema's defaults (SEP-1034).
    assert!(text.contains("It was a dark and stormy night."), "{text}");
    assert!(text.contains("42"), "{text}");
    hub.shutdown().await;
}

#[tokio::test]
async fn without_callbacks_nothing_is_advertised() {
    let hub = hub(Host::default()).await;
    // Give the conditional registration time to happen (it would, if anything were offered).
    tokio::time::sleep(Duration::from_millis(500)).await;
    for tool in [
        "get-roots-list",
        "trigger-sampling-request",
        "trigger-elicitation-request",
    ] {
        assert!(
            hub.tool(&format!("mcp__everything__{tool}")).is_none(),
            "{tool} is offered although the host offers nothing"
        );
    }
    hub.shutdown().await;
}

#[tokio::test]
async fn project_roots_are_the_current_directory() {
    let hub = hub(Host::project()).await;
    assert!(wait_for_tool(&hub, "mcp__everything__get-roots-list").await);
    let roots = hub
        .call("mcp__everything__get-roots-list", json!({}))
        .await
        .unwrap();
    let cwd = Root::directory(std::env::current_dir().unwrap()).uri;
    assert!(roots.to_text().contains(&cwd), "{}", roots.to_text());
    hub.shutdown().await;
}

#[tokio::test]
async fn resources_are_listed_read_and_subscribed() {
    let host = Host::new();
    let mut events = host.resource_events();
    let hub = hub(host).await;

    let listing = hub.resources(None).await.unwrap();
    assert!(listing.errors.is_empty(), "{:?}", listing.errors);
    assert!(!listing.items.is_empty());
    assert!(listing.items.iter().all(|r| r.server == "everything"));
    let first = listing.items[0].clone();
    assert_eq!(
        hub.resources(Some("everything")).await.unwrap().items,
        listing.items
    );

    // The first page alone, then the listing goes on from its cursor.
    let page = hub.list_resources_page("everything", None).await.unwrap();
    assert_eq!(page.items[0], first);

    let templates = hub.resource_templates(None).await.unwrap();
    let blob_template = templates
        .items
        .iter()
        .find(|t| t.uri_template.contains("blob"))
        .expect("a blob template");
    let blob_uri = blob_template.uri_template.replace("{resourceId}", "1");

    // Read without naming the server: the one that lists it answers.
    let contents = hub.read_resource(None, &first.uri).await.unwrap();
    assert!(
        matches!(&contents[0], ResourceContents::Text { text, .. } if !text.is_empty()),
        "{contents:?}"
    );
    let blob = hub
        .read_resource(Some("everything"), &blob_uri)
        .await
        .unwrap();
    assert!(
        matches!(&blob[0], ResourceContents::Blob { blob, .. } if !blob.is_empty()),
        "{blob:?}"
    );
    let missing = hub
        .read_resource(Some("everything"), "demo://nope")
        .await
        .unwrap_err();
    assert!(matches!(missing, mcpmux::Error::Server { .. }), "{missing}");
    assert!(matches!(
        hub.resources(Some("nope")).await.unwrap_err(),
        mcpmux::Error::UnknownServer { name } if name == "nope"
    ));

    // Subscribe, let the server simulate updates, and see one arrive.
    hub.subscribe_resource("everything", &first.uri)
        .await
        .unwrap();
    hub.call("mcp__everything__toggle-subscriber-updates", json!({}))
        .await
        .unwrap();
    let update = tokio::time::timeout(Duration::from_secs(15), async {
        loop {
            match events.recv().await.unwrap() {
                ResourceEvent::Updated { server, uri } => break (server, uri),
                _ => continue,
            }
        }
    })
    .await
    .expect("no resource update within 15 s");
    assert_eq!(update, ("everything".to_string(), first.uri.clone()));
    hub.unsubscribe_resource("everything", &first.uri)
        .await
        .unwrap();
    hub.shutdown().await;
}

#[tokio::test]
async fn prompts_are_listed_and_filled_in() {
    let hub = hub(Host::new()).await;
    let prompts = hub.prompts(None).await.unwrap();
    assert!(prompts.errors.is_empty(), "{:?}", prompts.errors);
    let args_prompt = prompts
        .items
        .iter()
        .find(|p| p.name == "args-prompt")
        .expect("args-prompt");
    assert!(
        args_prompt
            .arguments
            .iter()
            .any(|a| a.name == "city" && a.required)
    );
    let mut arguments = Map::new();
    arguments.insert("city".into(), Value::String("Lisbon".into()));
    let filled = hub
        .get_prompt("everything", "args-prompt", arguments)
        .await
        .unwrap();
    assert!(!filled.messages.is_empty());
    assert_eq!(filled.messages[0].role, "user");
    assert!(
        filled.messages[0].content.to_string().contains("Lisbon"),
        "{:?}",
        filled.messages
    );
    let simple = hub
        .get_prompt("everything", "simple-prompt", Map::new())
        .await
        .unwrap();
    assert!(!simple.messages.is_empty());
    hub.shutdown().await;
}

// ── Subscriptions per era, against the test server ──────────────────────────────────────────

/// The test server's one resource, which its `bump` tool increments.
const COUNTER: &str = "test://counter";

/// How long "no update" is waited for: the update, when there is one, follows the bump's
/// answer on the same pipe within a millisecond or so.
const QUIET: Duration = Duration::from_millis(300);

/// The test server as `t`, speaking only `era`, reconnecting quickly after a crash.
async fn testserver_hub(era: &str, host: Host) -> Hub {
    let mut options = ServerOptions::default();
    options.backoff.initial = Duration::from_millis(20);
    options.backoff.max = Duration::from_millis(100);
    options.shutdown_grace = Duration::from_millis(200);
    let spec = support::stdio_testserver("t", &["--era", era]).with_options(options);
    support::started_with(vec![spec], support::hub_options().with_host(host)).await
}

async fn bump(hub: &Hub) -> String {
    hub.call("mcp__t__bump", json!({})).await.unwrap().to_text()
}

fn counter_update() -> Option<(String, String)> {
    Some(("t".to_string(), COUNTER.to_string()))
}

/// Subscribe, bump: one update; subscribe again (replacing it), bump: still one; unsubscribe,
/// bump: none. The same steps in either era.
async fn subscribe_bump_unsubscribe(hub: &Hub, events: &mut broadcast::Receiver<ResourceEvent>) {
    hub.subscribe_resource("t", COUNTER).await.unwrap();
    assert_eq!(bump(hub).await, "1");
    assert_eq!(
        next_update(events, Duration::from_secs(5)).await,
        counter_update()
    );
    let read = hub.read_resource(Some("t"), COUNTER).await.unwrap();
    assert!(
        matches!(&read[0], ResourceContents::Text { text, .. } if text == "1"),
        "{read:?}"
    );

    hub.subscribe_resource("t", COUNTER).await.unwrap();
    assert_eq!(bump(hub).await, "2");
    assert_eq!(
        next_update(events, Duration::from_secs(5)).await,
        counter_update()
    );
    assert_eq!(
        next_update(events, QUIET).await,
        None,
        "subscribing twice must not deliver updates twice"
    );

    hub.unsubscribe_resource("t", COUNTER).await.unwrap();
    assert_eq!(bump(hub).await, "3");
    assert_eq!(next_update(events, QUIET).await, None);
    // Unsubscribing again is harmless.
    hub.unsubscribe_resource("t", COUNTER).await.unwrap();
}

#[tokio::test]
async fn stateless_subscriptions_listen_for_updates() {
    let host = Host::new();
    let mut events = host.resource_events();
    let hub = testserver_hub("stateless", host).await;
    assert!(
        matches!(
            only_state(&hub),
            ServerState::Connected {
                era: Era::Stateless,
                ..
            }
        ),
        "{:?}",
        only_state(&hub)
    );
    subscribe_bump_unsubscribe(&hub, &mut events).await;

    // A URI the server does not accept a listen for is an error, not a silent nothing.
    let refused = hub
        .subscribe_resource("t", "test://nothing")
        .await
        .unwrap_err();
    assert!(
        matches!(refused, mcpmux::Error::Unavailable { .. }),
        "{refused:?}"
    );
    assert!(refused.to_string().contains("test://nothing"), "{refused}");

    // Shutting down with a listen open ends it with the session.
    hub.subscribe_resource("t", COUNTER).await.unwrap();
    tokio::time::timeout(Duration::from_secs(5), hub.shutdown())
        .await
        .expect("the hub shuts down with a listen open");
}

#[tokio::test]
async fn handshake_subscriptions_use_resources_subscribe() {
    let host = Host::new();
    let mut events = host.resource_events();
    let hub = testserver_hub("handshake", host).await;
    assert!(
        matches!(
            only_state(&hub),
            ServerState::Connected {
                era: Era::Handshake,
                ..
            }
        ),
        "{:?}",
        only_state(&hub)
    );
    subscribe_bump_unsubscribe(&hub, &mut events).await;
    let refused = hub
        .subscribe_resource("t", "test://nothing")
        .await
        .unwrap_err();
    assert!(
        matches!(refused, mcpmux::Error::Server { .. }),
        "{refused:?}"
    );
    hub.shutdown().await;
}

/// Subscribe, let the server exit: after the reconnect the subscription is made again on the
/// new session (an update says what changed meanwhile was not notified), updates flow, and
/// once unsubscribed nothing comes, nor is it made again on the next reconnect.
async fn subscriptions_outlive_the_session(era: &str) {
    let host = Host::new();
    let mut events = host.resource_events();
    let hub = testserver_hub(era, host).await;
    hub.subscribe_resource("t", COUNTER).await.unwrap();
    // The reconnect is read from the hub's events, not by polling the state: the pending
    // state may last less than a poll's wake-up on a busy machine.
    let crash = || async {
        let mut states = hub.subscribe();
        hub.call("mcp__t__sleep_then_exit", json!({"ms": 20}))
            .await
            .unwrap();
        support::wait_event(
            &mut states,
            Duration::from_secs(5),
            support::state_event("t", "pending"),
        )
        .await;
    };
    crash().await;
    assert_eq!(
        next_update(&mut events, Duration::from_secs(10)).await,
        counter_update(),
        "the subscription was not made again on the new session"
    );
    // A new process: the counter starts again, and its update arrives.
    assert_eq!(bump(&hub).await, "1");
    assert_eq!(
        next_update(&mut events, Duration::from_secs(5)).await,
        counter_update()
    );
    assert_eq!(
        next_update(&mut events, QUIET).await,
        None,
        "one update each"
    );

    hub.unsubscribe_resource("t", COUNTER).await.unwrap();
    assert_eq!(bump(&hub).await, "2");
    assert_eq!(next_update(&mut events, QUIET).await, None);
    crash().await;
    assert_eq!(bump(&hub).await, "1");
    assert_eq!(
        next_update(&mut events, QUIET).await,
        None,
        "an unsubscribed resource came back after a reconnect"
    );
    hub.shutdown().await;
}

#[tokio::test]
async fn stateless_subscriptions_outlive_the_session() {
    subscriptions_outlive_the_session("stateless").await;
}

#[tokio::test]
async fn handshake_subscriptions_outlive_the_session() {
    subscriptions_outlive_the_session("handshake").await;
}
