//! `Hub::reconfigure` against real test server processes: a server added is listed and
//! callable, one removed is stopped and its process reaped, one unchanged keeps its process
//! and a call in flight, one changed only in what the hub applies keeps its session under the
//! new settings, one whose connection changed is replaced, and a config the hub refuses
//! changes nothing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::collections::BTreeSet;
use std::time::Duration;

use mcpmux::{ConfigSet, Error, Hub, HubEvent, HubOptions, ServerSpec};
use serde_json::json;
use support::*;

fn config(servers: &[&ServerSpec]) -> ConfigSet {
    ConfigSet {
        servers: servers.iter().map(|s| (*s).clone()).collect(),
        ..ConfigSet::default()
    }
}

fn listed(hub: &Hub) -> BTreeSet<String> {
    hub.tools().into_iter().map(|t| t.name).collect()
}

fn pids(pids: &[u32]) -> BTreeSet<i32> {
    pids.iter().map(|&p| p as i32).collect()
}

#[tokio::test]
async fn a_server_added_by_a_reload_is_listed_and_callable_and_the_others_are_kept() {
    let a = fast_testserver("a", &[]);
    let b = fast_testserver("b", &[]);
    let hub = started(vec![a.clone()]).await;
    let a_pid = pid_of(&hub, "a").await;
    let mut events = hub.subscribe();

    let reload = hub.reconfigure(config(&[&a, &b])).await.unwrap();
    assert_eq!(reload.added, ["b"]);
    assert_eq!(reload.kept, ["a"]);
    assert!(
        reload.removed.is_empty() && reload.restarted.is_empty(),
        "{reload:?}"
    );
    let told = wait_event(&mut events, Duration::from_secs(5), |e| {
        matches!(e, HubEvent::Reconfigured(_))
    })
    .await;
    assert_eq!(told, HubEvent::Reconfigured(reload));

    hub.wait_ready().await.unwrap();
    assert!(listed(&hub).contains("mcp__b__echo"), "{:?}", listed(&hub));
    assert_eq!(echo(&hub, "b", "new").await.unwrap(), "new");
    assert_eq!(pid_of(&hub, "a").await, a_pid, "a was restarted");
    hub.shutdown().await;
}

#[tokio::test]
async fn a_server_removed_by_a_reload_is_gone_with_its_process_when_the_reload_returns() {
    let a = fast_testserver("a", &[]);
    let b = fast_testserver("b", &[]);
    let hub = started(vec![a.clone(), b]).await;
    let b_pid = pid_of(&hub, "b").await;

    let reload = hub.reconfigure(config(&[&a])).await.unwrap();
    assert_eq!(reload.removed, ["b"]);
    assert_eq!(reload.kept, ["a"]);
    assert!(
        still_alive(&pids(&[b_pid])).is_empty(),
        "b's process outlived the reload"
    );
    assert!(!listed(&hub).iter().any(|t| t.starts_with("mcp__b__")));
    assert!(hub.servers().iter().all(|s| s.name != "b"));
    let err = echo(&hub, "b", "x").await.unwrap_err();
    assert!(matches!(err, Error::UnknownTool { .. }), "{err}");
    assert_eq!(echo(&hub, "a", "still").await.unwrap(), "still");
    hub.shutdown().await;
}

#[tokio::test]
async fn an_unchanged_server_keeps_its_process_and_its_call_in_flight_across_a_reload() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls.jsonl");
    let a = fast_testserver("a", &["--call-log", log.to_str().unwrap()]);
    let hub = started(vec![a.clone()]).await;
    let a_pid = pid_of(&hub, "a").await;

    let in_flight = tokio::spawn({
        let hub = hub.clone();
        async move {
            hub.call("mcp__a__slow", json!({"ms": 600, "steps": 2}))
                .await
                .map(|r| r.to_text())
        }
    });
    wait_log(&log, Duration::from_secs(10), |l| {
        l.iter().any(|e| e["tool"] == "slow")
    })
    .await;
    let reload = hub
        .reconfigure(config(&[&a, &fast_testserver("b", &[])]))
        .await
        .unwrap();
    assert_eq!(reload.kept, ["a"]);
    assert_eq!(
        in_flight.await.unwrap().unwrap(),
        "done after 2 steps",
        "the call in flight did not survive the reload"
    );
    assert_eq!(pid_of(&hub, "a").await, a_pid);
    hub.shutdown().await;
}

#[tokio::test]
async fn a_filter_change_keeps_the_session_and_a_connection_change_restarts_the_server() {
    let a = fast_testserver("a", &[]);
    let hub = started(vec![a.clone()]).await;
    let first = pid_of(&hub, "a").await;

    let mut filtered = a.clone();
    filtered.options.tools.deny.push("echo".into());
    let reload = hub.reconfigure(config(&[&filtered])).await.unwrap();
    assert_eq!(reload.updated, ["a"]);
    assert!(!listed(&hub).contains("mcp__a__echo"), "{:?}", listed(&hub));
    assert!(listed(&hub).contains("mcp__a__pid"));
    assert!(
        echo(&hub, "a", "x").await.is_err(),
        "a denied tool was called"
    );
    assert_eq!(
        pid_of(&hub, "a").await,
        first,
        "a filter change restarted it"
    );

    let changed = filtered.clone().with_env("RELOADED", "1");
    let reload = hub.reconfigure(config(&[&changed])).await.unwrap();
    assert_eq!(reload.restarted, ["a"]);
    assert!(
        still_alive(&pids(&[first])).is_empty(),
        "the replaced process outlived the reload"
    );
    hub.wait_ready().await.unwrap();
    assert_ne!(pid_of(&hub, "a").await, first);
    assert!(
        !listed(&hub).contains("mcp__a__echo"),
        "the filter was lost"
    );
    hub.shutdown().await;
}

#[tokio::test]
async fn a_config_the_hub_refuses_changes_nothing() {
    let a = fast_testserver("a", &[]);
    let hub = started(vec![a.clone()]).await;
    let a_pid = pid_of(&hub, "a").await;
    let before = listed(&hub);

    let b = fast_testserver("b", &[]);
    let err = hub.reconfigure(config(&[&a, &b, &b])).await.unwrap_err();
    assert!(
        matches!(err, Error::DuplicateServer { ref name } if name == "b"),
        "{err}"
    );

    let mut bad_policy = config(&[&fast_testserver("c", &[])]);
    bad_policy.policy.deny.push("effect:teleport".into());
    let err = hub.reconfigure(bad_policy).await.unwrap_err();
    assert!(matches!(err, Error::Policy(_)), "{err}");

    assert_eq!(listed(&hub), before);
    assert_eq!(
        hub.servers()
            .iter()
            .map(|s| s.name.as_str())
            .collect::<Vec<_>>(),
        ["a"]
    );
    assert_eq!(pid_of(&hub, "a").await, a_pid);
    hub.shutdown().await;

    let err = hub.reconfigure(config(&[&a])).await.unwrap_err();
    assert!(matches!(err, Error::HubShutDown), "{err}");
}

#[tokio::test]
async fn a_call_in_flight_to_a_removed_server_finishes_within_the_drain_or_is_told_why_it_ended() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls.jsonl");
    let a = fast_testserver("a", &[]);
    let b = fast_testserver("b", &["--call-log", log.to_str().unwrap()]);

    // A call that ends within the drain gets its answer.
    let hub = started(vec![a.clone(), b.clone()]).await;
    let finishing = tokio::spawn({
        let hub = hub.clone();
        async move {
            hub.call("mcp__b__slow", json!({"ms": 300, "steps": 1}))
                .await
                .map(|r| r.to_text())
        }
    });
    wait_log(&log, Duration::from_secs(10), |l| {
        l.iter().any(|e| e["tool"] == "slow")
    })
    .await;
    let reload = hub.reconfigure(config(&[&a])).await.unwrap();
    assert_eq!(reload.removed, ["b"]);
    assert_eq!(finishing.await.unwrap().unwrap(), "done after 1 steps");
    hub.shutdown().await;

    // One that would never end is cut short when the drain is over, and says why.
    let hub = Hub::start(
        vec![a.clone(), b.clone()],
        hub_options().with_reload_drain(ms(200)),
    )
    .unwrap();
    hub.wait_ready().await.unwrap();
    let hanging = tokio::spawn({
        let hub = hub.clone();
        async move { hub.call("mcp__b__hang", json!({})).await }
    });
    wait_log(&log, Duration::from_secs(10), |l| {
        l.iter().any(|e| e["tool"] == "hang")
    })
    .await;
    hub.reconfigure(config(&[&a])).await.unwrap();
    let err = tokio::time::timeout(Duration::from_secs(10), hanging)
        .await
        .expect("the call to the removed server hung")
        .unwrap()
        .unwrap_err();
    assert!(matches!(err, Error::Unavailable { .. }), "{err}");
    assert!(err.to_string().contains("removed from the config"), "{err}");
    hub.shutdown().await;
}

#[tokio::test]
async fn a_reload_replaces_the_policy_and_the_config_problems() {
    let dirs = Dirs::new();
    let server = |deny: &str| {
        format!(
            "[servers.a]\ncommand = {:?}\nargs = [\"--page-size\", \"4242\"]\n\n[policy]\ndeny = [{deny}]\n",
            testserver().to_string_lossy()
        )
    };
    let file = dirs.write(dirs.home.join(".config/mcpmux/config.toml"), &server(""));
    let options = dirs.options();
    let hub = Hub::from_config(dirs.load(&options), HubOptions::ephemeral()).unwrap();
    hub.wait_ready().await.unwrap();
    assert_eq!(echo(&hub, "a", "free").await.unwrap(), "free");

    let with_rule =
        server("\"mcp__a__echo\"") + "\n[servers.broken]\ncommand = \"x\"\ncomand = \"typo\"\n";
    std::fs::write(&file, with_rule).unwrap();
    let reload = hub.reconfigure(dirs.load(&options)).await.unwrap();
    assert!(reload.policy_changed, "{reload:?}");
    assert_eq!(reload.kept, ["a"]);
    let err = echo(&hub, "a", "denied").await.unwrap_err();
    assert!(matches!(err, Error::Denied(_)), "{err}");
    let broken = hub
        .servers()
        .into_iter()
        .find(|s| s.name == "broken")
        .expect("the new problem is not listed");
    assert!(broken.error().unwrap().contains("comand"), "{broken:?}");

    std::fs::write(&file, server("")).unwrap();
    let reload = hub.reconfigure(dirs.load(&options)).await.unwrap();
    assert!(reload.policy_changed);
    assert_eq!(echo(&hub, "a", "free again").await.unwrap(), "free again");
    assert!(hub.servers().iter().all(|s| s.name != "broken"));
    hub.shutdown().await;
}
