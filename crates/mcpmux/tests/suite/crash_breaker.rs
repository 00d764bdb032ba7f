//! A server that crashes on every call is cut off: a crash during a call is a failed call, so
//! the circuit breaker opens after `threshold` of them, later calls are refused at once with
//! the reason, the listing and the state agree throughout, and after the cool-down the
//! reconnect probes it and a healthy call goes through. Against the real test server with
//! `--crash-on`, with short configured backoff and cool-down.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use mcpmux::config::ServerOptions;
use mcpmux::{CallOptions, Error, Hub, ServerSpec, ServerState};
use serde_json::json;
use support::{ms, state};

// Long enough that three crash-and-restart cycles on a loaded CI machine end well inside it.
const COOL_DOWN: Duration = Duration::from_millis(3000);

/// [`support::fast`] with the longer [`COOL_DOWN`].
fn options() -> ServerOptions {
    let mut o = support::fast();
    o.breaker.cool_down = COOL_DOWN;
    o
}

fn testserver(name: &str, args: &[&str]) -> ServerSpec {
    support::stdio_testserver(name, args)
        .with_options(options())
        .with_call_timeout(Duration::from_secs(5))
        .with_startup_timeout(Duration::from_secs(10))
}

fn listed(hub: &Hub, name: &str) -> bool {
    hub.tools().iter().any(|t| t.server == name)
}

/// Watches one server until stopped: at every observation whose state did not change while
/// it was taken, the server's tools are listed exactly when its state says connected.
fn watch_agreement(
    hub: Hub,
    name: &'static str,
    stop: Arc<AtomicBool>,
) -> tokio::task::JoinHandle<(usize, Vec<String>)> {
    tokio::spawn(async move {
        let mut observations = 0;
        let mut disagreements = Vec::new();
        while !stop.load(Ordering::Relaxed) {
            let before = state(&hub, name);
            let tools = listed(&hub, name);
            let after = state(&hub, name);
            if before == after {
                observations += 1;
                let connected = matches!(before, ServerState::Connected { .. });
                if tools != connected {
                    disagreements.push(format!("tools listed: {tools}, state: {before:?}"));
                }
            }
            tokio::time::sleep(ms(2)).await;
        }
        (observations, disagreements)
    })
}

#[tokio::test]
async fn a_server_crashing_on_every_call_is_cut_off_by_the_breaker_and_probed_after_the_cool_down()
{
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls.jsonl");
    let hub = support::started(vec![
        testserver(
            "crashy",
            &["--crash-on", "echo", "--call-log", log.to_str().unwrap()],
        ),
        testserver("other", &["--stderr-lines", "1"]),
    ])
    .await;
    assert!(listed(&hub, "crashy"));
    let stop = Arc::new(AtomicBool::new(false));
    let watcher = watch_agreement(hub.clone(), "crashy", stop.clone());

    // Eight calls to the tool that crashes the server, a little apart.
    let started = Instant::now();
    let mut outcomes = Vec::new();
    for i in 0..8 {
        let sent = Instant::now();
        let result = hub
            .call_with(
                "mcp__crashy__echo",
                json!({ "text": format!("call {i}") }),
                CallOptions::default().with_timeout(Duration::from_secs(5)),
            )
            .await;
        outcomes.push((sent.elapsed(), result.unwrap_err()));
        tokio::time::sleep(ms(30)).await;
    }
    for (i, (took, err)) in outcomes.iter().enumerate() {
        eprintln!("FIGURE call {i}: {took:?}: {err}");
    }

    // At most `threshold` crashes (each one a process restart) before the breaker opened.
    assert_eq!(
        support::logged_calls(&log, "echo", None),
        3,
        "calls that reached the server"
    );
    assert!(
        started.elapsed() < COOL_DOWN,
        "the calls took longer than the cool-down: {:?}",
        started.elapsed()
    );
    // The first call met the crashes; every later one was refused at once, with the reason.
    assert!(
        matches!(
            outcomes[0].1,
            Error::ConnectionLost { .. } | Error::CircuitOpen { .. }
        ),
        "{:?}",
        outcomes[0].1
    );
    for (took, err) in &outcomes[1..] {
        assert!(matches!(err, Error::CircuitOpen { .. }), "{err:?}");
        assert!(*took < ms(100), "refused after {took:?}");
        let text = err.to_string();
        assert!(
            text.contains("crashed during 3 consecutive calls"),
            "{text}"
        );
    }
    // Cut off, and saying so: the state, not the tools.
    let ServerState::Disabled { reason } = state(&hub, "crashy") else {
        panic!("{:?}", state(&hub, "crashy"));
    };
    assert!(reason.contains("circuit breaker open"), "{reason}");
    assert!(!listed(&hub, "crashy"));
    // The other server never noticed.
    let other = hub
        .call("mcp__other__echo", json!({"text": "fine"}))
        .await
        .unwrap();
    assert_eq!(other.to_text(), "fine");

    // After the cool-down the reconnect probes the server and half-opens the breaker: a
    // healthy call of the same server goes through.
    let reached = support::eventually(COOL_DOWN + Duration::from_secs(10), ms(10), || {
        matches!(state(&hub, "crashy"), ServerState::Connected { .. }).then_some(())
    })
    .await;
    assert!(reached.is_some(), "{:?}", state(&hub, "crashy"));
    assert!(
        started.elapsed() >= COOL_DOWN,
        "probed before the cool-down: {:?}",
        started.elapsed()
    );
    let sum = hub
        .call("mcp__crashy__add", json!({"a": 2, "b": 3}))
        .await
        .unwrap();
    assert_eq!(sum.to_text(), "5");
    assert_eq!(
        support::logged_calls(&log, "echo", None),
        3,
        "nothing was sent while the breaker was open"
    );

    stop.store(true, Ordering::Relaxed);
    let (observations, disagreements) = watcher.await.unwrap();
    eprintln!("FIGURE {observations} observations of state and listing");
    assert!(observations > 50, "only {observations} observations");
    assert!(disagreements.is_empty(), "{disagreements:#?}");
    hub.shutdown().await;
}

#[tokio::test]
async fn after_the_probe_one_more_crash_during_a_call_opens_the_breaker_again() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls.jsonl");
    let mut spec = testserver(
        "crashy",
        &["--crash-on", "echo", "--call-log", log.to_str().unwrap()],
    );
    // One crash at a time: no retry hides how many calls it took.
    spec.options.max_retries = 0;
    spec.options.breaker.cool_down = ms(300);
    let hub = support::started(vec![spec]).await;
    let echo = || hub.call("mcp__crashy__echo", json!({"text": "x"}));
    for _ in 0..3 {
        assert!(matches!(echo().await, Err(Error::ConnectionLost { .. })));
    }
    assert!(matches!(echo().await, Err(Error::CircuitOpen { .. })));
    let reached = support::eventually(Duration::from_secs(10), ms(10), || {
        matches!(state(&hub, "crashy"), ServerState::Connected { .. }).then_some(())
    })
    .await;
    assert!(reached.is_some(), "{:?}", state(&hub, "crashy"));
    // On trial: the first crash opens it at once, not the third.
    assert!(matches!(echo().await, Err(Error::ConnectionLost { .. })));
    let sent = Instant::now();
    let err = echo().await.unwrap_err();
    assert!(matches!(err, Error::CircuitOpen { .. }), "{err:?}");
    assert!(sent.elapsed() < ms(100), "{:?}", sent.elapsed());
    assert!(
        err.to_string()
            .contains("crashed during 4 consecutive calls"),
        "{err}"
    );
    assert_eq!(support::logged_calls(&log, "echo", None), 4);
    hub.shutdown().await;
}
