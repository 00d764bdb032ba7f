//! The circuit breaker against the fault-injecting test server (opens after three failures,
//! withholds tools, closes after its probe; calls meanwhile fail at once), and twenty thousand
//! concurrent calls surviving a server killed twice.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use mcpmux::{CallOptions, Error, Hub, HubEvent, ServerState};
use serde_json::json;
use support::*;

// 12 ────────────────────────────────────────────────────────────────────────────────────────

async fn trip_breaker(hub: &Hub, server: &str) {
    for _ in 0..3 {
        let err = hub
            .call_with(
                &format!("mcp__{server}__hang"),
                json!({}),
                CallOptions::default().with_timeout(ms(80)),
            )
            .await
            .unwrap_err();
        assert!(matches!(err, Error::Timeout { .. }), "{err}");
    }
}

#[tokio::test]
async fn the_breaker_opens_after_three_failures_withholds_tools_and_closes_after_the_probe() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls.jsonl");
    let hub = started(vec![
        fast_testserver("b", &["--call-log", log.to_str().unwrap()]),
        fast_testserver("other", &[]),
    ])
    .await;
    let tools_before = hub.tools().iter().filter(|t| t.server == "b").count();
    // A tool answering isError is a working server: five of them keep the breaker closed.
    for _ in 0..5 {
        let r = hub
            .call("mcp__b__fail", json!({"message": "nope"}))
            .await
            .unwrap();
        assert!(r.is_error);
    }
    assert!(is_connected(&state(&hub, "b")));
    assert_eq!(
        hub.tools().iter().filter(|t| t.server == "b").count(),
        tools_before
    );

    let mut events = hub.subscribe();
    trip_breaker(&hub, "b").await;
    let opened = Instant::now();
    // Withheld from tools() at once.
    assert!(
        hub.tools().iter().all(|t| t.server != "b"),
        "tools still offered"
    );
    let event = wait_event(
        &mut events,
        Duration::from_secs(1),
        state_event("b", "disabled"),
    )
    .await;
    let HubEvent::StateChanged {
        state: ServerState::Disabled { reason },
        ..
    } = event
    else {
        unreachable!()
    };
    assert!(reason.contains("circuit breaker"), "{reason}");
    assert!(reason.contains("3 consecutive failed calls"), "{reason}");
    let calls_while_open = logged_calls(&log, "echo", None);
    let _ = echo(&hub, "b", "refused").await.unwrap_err();
    assert_eq!(echo(&hub, "other", "fine").await.unwrap(), "fine");

    // After the cool-down (200 ms) the probe closes it.
    wait_event(
        &mut events,
        Duration::from_secs(2),
        state_event("b", "connected"),
    )
    .await;
    eprintln!("FIGURE breaker open -> closed: {:?}", opened.elapsed());
    assert!(opened.elapsed() >= ms(150), "{:?}", opened.elapsed());
    assert_eq!(
        hub.tools().iter().filter(|t| t.server == "b").count(),
        tools_before
    );
    assert_eq!(echo(&hub, "b", "again").await.unwrap(), "again");
    // Nothing was sent to the server while the breaker was open.
    assert_eq!(logged_calls(&log, "echo", Some("refused")), 0);
    assert_eq!(logged_calls(&log, "echo", None), calls_while_open + 1);
    hub.shutdown().await;
}

#[tokio::test]
async fn calls_while_the_breaker_is_open_fail_at_once_with_circuit_open() {
    let hub = started(vec![fast_testserver("b", &[])]).await;
    trip_breaker(&hub, "b").await;
    let sent = Instant::now();
    let err = echo(&hub, "b", "refused").await.unwrap_err();
    assert!(sent.elapsed() < ms(50), "{:?}", sent.elapsed());
    assert!(matches!(err, Error::CircuitOpen { .. }), "{err:?}");
    assert!(err.to_string().contains("circuit breaker open"), "{err}");
    hub.shutdown().await;
}

#[tokio::test]
async fn errors_that_refuse_the_request_leave_the_breaker_closed_and_internal_errors_open_it() {
    let hub = started(vec![fast_testserver("b", &[])]).await;
    // The caller's mistakes, as a server words them: five of each keep the server's tools.
    for code in [-32602, -32601, -32002, -32021] {
        for _ in 0..5 {
            let err = hub
                .call(
                    "mcp__b__fail",
                    json!({"message": "bad params", "code": code}),
                )
                .await
                .unwrap_err();
            // -32021 is told apart: the capability the server wants.
            assert!(
                matches!(&err, Error::Server { code: c, .. } if *c == code)
                    || (code == -32021 && matches!(&err, Error::MissingCapability { .. })),
                "{err:?}"
            );
        }
    }
    assert!(is_connected(&state(&hub, "b")));
    assert!(hub.tools().iter().any(|t| t.server == "b"));
    echo(&hub, "b", "still served").await.unwrap();

    // The server's own failure: three in a row open the breaker.
    for _ in 0..3 {
        let err = hub
            .call("mcp__b__fail", json!({"message": "broken", "code": -32603}))
            .await
            .unwrap_err();
        assert!(matches!(err, Error::Server { code: -32603, .. }), "{err:?}");
    }
    let err = echo(&hub, "b", "refused").await.unwrap_err();
    assert!(matches!(err, Error::CircuitOpen { .. }), "{err:?}");
    hub.shutdown().await;
}

// 17 ────────────────────────────────────────────────────────────────────────────────────────

/// Outcomes of the calls to one server.
#[derive(Debug, Default)]
struct Tally {
    ok: usize,
    /// Errors by `Error` variant.
    errors: BTreeMap<String, usize>,
    /// Answers that were not the call's own text.
    wrong: Vec<String>,
    /// Errors that are not one of the kinds a harness can act on.
    unclear: Vec<String>,
}

fn variant(e: &Error) -> String {
    format!("{e:?}")
        .split([' ', '{', '('])
        .next()
        .unwrap_or_default()
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn twenty_thousand_concurrent_calls_survive_a_server_killed_twice() {
    const CALLS: usize = 20_000;
    const SERVERS: usize = 4;
    // s0's call log path marks its processes in /proc: the kills find the live one there
    // (a `pid` call would queue behind thousands of echoes).
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("s0-calls.jsonl");
    let marker = marker.to_str().unwrap().to_string();
    let specs = (0..SERVERS)
        .map(|k| {
            let args: &[&str] = if k == 0 {
                &["--call-log", &marker]
            } else {
                &[]
            };
            fast_testserver(&format!("s{k}"), args).with_call_timeout(Duration::from_secs(20))
        })
        .collect();
    let hub = started(specs).await;
    let s0_process = || {
        let live: Vec<u32> = support::processes()
            .into_iter()
            .filter(|p| p.cmdline.contains(&marker) && p.state != 'Z')
            .map(|p| p.pid as u32)
            .collect();
        live
    };
    let started_at = Instant::now();
    let run = async {
        let mut pids = vec![pid_of(&hub, "s0").await];
        assert_eq!(s0_process(), pids);
        let calls: Vec<_> = (0..CALLS)
            .map(|i| {
                let hub = hub.clone();
                tokio::spawn(async move {
                    let server = format!("s{}", i % SERVERS);
                    let text = format!("call {i} to {server}");
                    let result = echo(&hub, &server, &text).await;
                    (server, text, result)
                })
            })
            .collect();
        // Kill s0 twice while the calls run, the second time once it is back.
        for _ in 0..2 {
            let victim = *pids.last().unwrap();
            let mut events = hub.subscribe();
            tokio::time::sleep(ms(30)).await;
            unsafe {
                libc::kill(victim as i32, libc::SIGKILL);
            }
            wait_event(
                &mut events,
                Duration::from_secs(10),
                state_event("s0", "connected"),
            )
            .await;
            let now = s0_process();
            assert_eq!(now.len(), 1, "{now:?}");
            assert_ne!(now[0], victim);
            pids.push(now[0]);
        }
        let mut tallies: BTreeMap<String, Tally> = BTreeMap::new();
        for call in calls {
            let (server, text, result) = call.await.unwrap();
            let tally = tallies.entry(server).or_default();
            match result {
                Ok(got) if got == text => tally.ok += 1,
                Ok(got) => tally.wrong.push(format!("{text} got {got}")),
                Err(e) => {
                    *tally.errors.entry(variant(&e)).or_default() += 1;
                    if !is_clear_server_error(&e) {
                        tally.unclear.push(format!("{text}: {e}"));
                    }
                }
            }
        }
        (tallies, pids)
    };
    let (tallies, pids) = tokio::time::timeout(Duration::from_secs(120), run)
        .await
        .expect("calls hung");
    let wall = started_at.elapsed();
    eprintln!("FIGURE {CALLS} calls over {SERVERS} servers, s0 killed twice: {wall:?}");
    for (server, t) in &tallies {
        eprintln!(
            "FIGURE   {server}: ok {} errors {:?} wrong answers {} unclear errors {}{}",
            t.ok,
            t.errors,
            t.wrong.len(),
            t.unclear.len(),
            t.unclear
                .first()
                .map(|e| format!(" (e.g. {e})"))
                .unwrap_or_default()
        );
    }
    // Every server ends up connected, with its tools.
    tokio::time::sleep(ms(300)).await;
    let finals: Vec<_> = (0..SERVERS)
        .map(|k| (format!("s{k}"), state(&hub, &format!("s{k}")).label()))
        .collect();
    eprintln!("FIGURE   s0 pids {pids:?}; final states {finals:?}");

    let total: usize = tallies
        .values()
        .map(|t| t.ok + t.errors.values().sum::<usize>() + t.wrong.len())
        .sum();
    assert_eq!(total, CALLS);
    assert!(
        tallies.values().all(|t| t.wrong.is_empty()),
        "answers crossed"
    );
    assert_eq!(pids.len(), 3);
    // The servers that were not killed answered every call.
    for k in 1..SERVERS {
        let t = &tallies[&format!("s{k}")];
        assert_eq!(t.ok, CALLS / SERVERS, "s{k}: {:?}", t.errors);
    }
    for k in 0..SERVERS {
        let server = format!("s{k}");
        assert_eq!(echo(&hub, &server, "end").await.unwrap(), "end");
    }
    let unclear = &tallies["s0"].unclear;
    assert!(
        unclear.is_empty(),
        "{} unclear errors, e.g. {:?}",
        unclear.len(),
        &unclear[..unclear.len().min(3)]
    );
    assert!(
        finals.iter().all(|(_, label)| *label == "connected"),
        "{finals:?}"
    );
    hub.shutdown().await;
}
