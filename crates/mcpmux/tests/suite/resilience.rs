//! Resilience (issue 3) against the fault-injecting test server, one test per fault: what the
//! user sees (state in `servers()`, error text, other servers unaffected, recovery), all with
//! short configured timeouts and backoff. This file: crashes at startup and mid-call, safe
//! retries, calls during a reconnect, and a server given up on. Deadlines and what a session
//! carries: `resilience_calls.rs`; HTTP faults: `resilience_http.rs`; the breaker and load:
//! `resilience_breaker.rs`; process counting: `resilience_processes.rs`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::time::{Duration, Instant};

use mcpmux::{CallOptions, Error, HubEvent, ServerSpec, ServerState};
use serde_json::json;
use support::*;

// 1 ─────────────────────────────────────────────────────────────────────────────────────────

#[tokio::test]
async fn a_server_exiting_at_startup_is_failed_with_its_status_and_stderr() {
    let hub = started(vec![
        fast_testserver("broken", &["--stderr-lines", "2", "--exit-at-startup", "5"]),
        fast_testserver("good", &[]),
    ])
    .await;
    let ServerState::Failed { error, stderr_tail } = state(&hub, "broken") else {
        panic!("{:?}", state(&hub, "broken"));
    };
    assert!(error.contains("exited with status 5"), "{error}");
    assert!(
        stderr_tail.iter().any(|l| l == "testserver stderr line 2"),
        "{stderr_tail:?}"
    );
    assert!(
        stderr_tail
            .iter()
            .any(|l| l.contains("exiting at startup with code 5")),
        "{stderr_tail:?}"
    );
    // A first connection that fails is a configuration problem: not retried.
    let mut events = hub.subscribe();
    tokio::time::sleep(ms(150)).await;
    assert!(events.try_recv().is_err(), "a failed server was retried");
    assert!(matches!(state(&hub, "broken"), ServerState::Failed { .. }));
    // Its tools are absent and a call says why.
    assert!(hub.tools().iter().all(|t| t.server != "broken"));
    let err = echo(&hub, "broken", "x").await.unwrap_err();
    assert!(matches!(err, Error::Unavailable { .. }), "{err}");
    assert!(err.to_string().contains("exited with status 5"), "{err}");
    // The other server works.
    assert_eq!(echo(&hub, "good", "fine").await.unwrap(), "fine");
    hub.shutdown().await;
}

// 2 ─────────────────────────────────────────────────────────────────────────────────────────

#[tokio::test]
async fn a_crash_mid_call_fails_the_call_at_once_then_the_server_reconnects() {
    let mut no_retries = fast();
    no_retries.max_retries = 0;
    let hub = started(vec![
        fast_testserver("crashy", &["--crash-after", "2"]).with_options(no_retries),
        fast_testserver("other", &[]),
    ])
    .await;
    let first_pid = pid_of(&hub, "crashy").await; // call 1
    assert_eq!(echo(&hub, "crashy", "two").await.unwrap(), "two"); // call 2
    let mut events = hub.subscribe();

    // Call 3 makes the server exit the moment it arrives: the call's time is crash → error.
    let sent = Instant::now();
    let err = echo(&hub, "crashy", "three").await.unwrap_err();
    let crash_to_error = sent.elapsed();
    eprintln!("FIGURE crash -> failed call: {crash_to_error:?}");
    assert!(matches!(err, Error::ConnectionLost { .. }), "{err}");
    let text = err.to_string();
    assert!(text.contains("exited with status 3"), "{text}");
    assert!(
        text.contains("testserver: crashing after 2 calls"),
        "{text}"
    );
    assert!(crash_to_error < ms(500), "{crash_to_error:?}");

    // Pending, then Connected again.
    wait_event(
        &mut events,
        Duration::from_secs(3),
        state_event("crashy", "pending"),
    )
    .await;
    wait_event(
        &mut events,
        Duration::from_secs(3),
        state_event("crashy", "connected"),
    )
    .await;
    let reconnect = sent.elapsed() - crash_to_error;
    eprintln!("FIGURE failed call -> connected again: {reconnect:?}");
    let ServerState::Connected { .. } = state(&hub, "crashy") else {
        panic!("{:?}", state(&hub, "crashy"));
    };
    let second_pid = pid_of(&hub, "crashy").await;
    assert_ne!(first_pid, second_pid, "a new process serves the calls");
    assert_eq!(echo(&hub, "crashy", "after").await.unwrap(), "after");
    assert_eq!(echo(&hub, "other", "untouched").await.unwrap(), "untouched");
    hub.shutdown().await;
}

// 3 ─────────────────────────────────────────────────────────────────────────────────────────

#[tokio::test]
async fn a_crash_on_a_named_tool_leaves_other_servers_alone() {
    let hub = started(vec![
        fast_testserver("fragile", &["--crash-on", "fail"]),
        fast_testserver("steady", &[]),
    ])
    .await;
    let fragile_pid = pid_of(&hub, "fragile").await;
    let steady_pid = pid_of(&hub, "steady").await;
    let steady_calls = {
        let hub = hub.clone();
        tokio::spawn(async move {
            for _ in 0..10 {
                echo_many(&hub, "steady", 20).await;
            }
        })
    };
    let sent = Instant::now();
    let err = hub
        .call("mcp__fragile__fail", json!({"message": "x"}))
        .await
        .unwrap_err();
    eprintln!("FIGURE crash-on-tool -> failed call: {:?}", sent.elapsed());
    assert!(sent.elapsed() < ms(500));
    assert!(matches!(err, Error::ConnectionLost { .. }), "{err}");
    let text = err.to_string();
    assert!(text.contains("exited with status 3"), "{text}");
    assert!(
        text.contains("testserver: crashing on a call to fail"),
        "{text}"
    );
    steady_calls.await.unwrap();
    assert_eq!(pid_of(&hub, "steady").await, steady_pid);
    assert!(is_connected(&state(&hub, "steady")));
    // The fragile server comes back with a new process; its other tools work.
    wait_state(&hub, "fragile", Duration::from_secs(3), is_connected).await;
    let hub_ref = &hub;
    let new_pid = support::eventually_async(Duration::from_secs(3), ms(5), || async move {
        let r = hub_ref.call("mcp__fragile__pid", json!({})).await.ok()?;
        let pid: u32 = r.to_text().parse().unwrap();
        (pid != fragile_pid).then_some(pid)
    })
    .await
    .expect("fragile never came back");
    assert_ne!(new_pid, fragile_pid);
    assert_eq!(echo(&hub, "fragile", "back").await.unwrap(), "back");
    hub.shutdown().await;
}

#[tokio::test]
async fn a_crash_with_many_calls_in_flight_fails_them_all_and_the_server_comes_back_connected() {
    let hub = started(vec![
        fast_testserver("k", &[]),
        fast_testserver("other", &[]),
    ])
    .await;
    // Which of the supervisor and the failing callers gets there first varies: a few rounds.
    for round in 0..5 {
        let pid = pid_of(&hub, "k").await;
        let mut events = hub.subscribe();
        // Mutating calls (not retried) in flight when the process is killed.
        let hangs: Vec<_> = (0..8)
            .map(|_| {
                let hub = hub.clone();
                tokio::spawn(async move { hub.call("mcp__k__hang", json!({})).await })
            })
            .collect();
        tokio::time::sleep(ms(50)).await;
        let killed = Instant::now();
        unsafe {
            libc::kill(pid as i32, libc::SIGKILL);
        }
        for hang in hangs {
            let err = hang.await.unwrap().unwrap_err();
            assert!(matches!(err, Error::ConnectionLost { .. }), "{err}");
            assert!(err.to_string().contains("killed by signal 9"), "{err}");
        }
        eprintln!(
            "FIGURE SIGKILL -> 8 in-flight calls failed: {:?}",
            killed.elapsed()
        );
        assert!(killed.elapsed() < ms(500), "{:?}", killed.elapsed());
        wait_event(
            &mut events,
            Duration::from_secs(3),
            state_event("k", "connected"),
        )
        .await;
        // It is back, and it says so: connected, tools listed, calls work. One crash is one
        // incident, not a reason to show the server as disabled.
        tokio::time::sleep(ms(50)).await;
        assert!(
            is_connected(&state(&hub, "k")),
            "round {round}: reconnected and working, but shown as {:?}",
            state(&hub, "k")
        );
        assert!(hub.tools().iter().any(|t| t.server == "k"));
        assert_eq!(echo(&hub, "k", "back").await.unwrap(), "back");
    }
    assert_eq!(echo(&hub, "other", "fine").await.unwrap(), "fine");
    hub.shutdown().await;
}

#[tokio::test]
async fn a_safe_call_that_always_crashes_is_retried_max_retries_times_only() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls.jsonl");
    let hub = started(vec![fast_testserver(
        "poison",
        &["--crash-on", "add", "--call-log", log.to_str().unwrap()],
    )])
    .await;
    // `add` is read-only and idempotent: retried after each reconnect, max_retries (2) times.
    let err = hub
        .call("mcp__poison__add", json!({"a": 1, "b": 2}))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::ConnectionLost { .. }), "{err}");
    assert!(err.to_string().contains("exited with status 3"), "{err}");
    assert_eq!(logged_calls(&log, "add", None), 3, "{:?}", call_log(&log));
    hub.shutdown().await;
}

// 13 ────────────────────────────────────────────────────────────────────────────────────────

#[tokio::test]
async fn a_read_only_call_hit_by_a_crash_is_retried_after_reconnect() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls.jsonl");
    let hub = started(vec![fast_testserver(
        "r",
        &["--crash-after", "1", "--call-log", log.to_str().unwrap()],
    )])
    .await;
    assert_eq!(echo(&hub, "r", "first").await.unwrap(), "first"); // call 1
    let sent = Instant::now();
    // Call 2 crashes the server; echo is read-only, so it is sent again to the new process
    // (whose call 1 it is).
    assert_eq!(echo(&hub, "r", "again").await.unwrap(), "again");
    eprintln!("FIGURE crash + reconnect + retry: {:?}", sent.elapsed());
    assert_eq!(
        logged_calls(&log, "echo", Some("again")),
        2,
        "{:?}",
        call_log(&log)
    );
    assert!(is_connected(&state(&hub, "r")), "{:?}", state(&hub, "r"));
    hub.shutdown().await;
}

#[tokio::test]
async fn a_mutating_call_hit_by_a_crash_is_never_sent_twice() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls.jsonl");
    let hub = started(vec![fast_testserver(
        "m",
        &["--crash-after", "1", "--call-log", log.to_str().unwrap()],
    )])
    .await;
    assert_eq!(echo(&hub, "m", "first").await.unwrap(), "first"); // call 1
    let mut events = hub.subscribe();
    let err = hub
        .call("mcp__m__fail", json!({"message": "once"}))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::ConnectionLost { .. }), "{err}");
    assert!(err.to_string().contains("exited with status 3"), "{err}");
    // Reconnected, and still only one `fail` reached any server process.
    wait_event(
        &mut events,
        Duration::from_secs(3),
        state_event("m", "connected"),
    )
    .await;
    tokio::time::sleep(ms(100)).await;
    assert_eq!(logged_calls(&log, "fail", None), 1, "{:?}", call_log(&log));
    hub.shutdown().await;
}

// 14 ────────────────────────────────────────────────────────────────────────────────────────

#[tokio::test]
async fn calls_during_a_reconnect_wait_for_it_or_fail_fast_when_asked() {
    let mut slow_backoff = fast();
    // A reconnect window long enough to observe, short enough not to slow the suite.
    slow_backoff.backoff.initial = ms(400);
    slow_backoff.backoff.max = ms(400);
    let hub = started(vec![
        fast_testserver("w", &[]).with_options(slow_backoff),
        fast_testserver("other", &[]),
    ])
    .await;
    let first_pid = pid_of(&hub, "w").await;
    let answer = hub
        .call("mcp__w__sleep_then_exit", json!({"ms": 20}))
        .await
        .unwrap();
    assert_eq!(answer.to_text(), "exiting");
    wait_state(&hub, "w", Duration::from_secs(2), |s| {
        matches!(s, ServerState::Pending { .. })
    })
    .await;

    // fail_fast: refused at once, saying the server is reconnecting.
    let sent = Instant::now();
    let err = hub
        .call_with(
            "mcp__w__echo",
            json!({"text": "hurry"}),
            CallOptions::default().with_fail_fast(true),
        )
        .await
        .unwrap_err();
    assert!(sent.elapsed() < ms(50), "{:?}", sent.elapsed());
    assert!(matches!(err, Error::Unavailable { .. }), "{err}");
    assert!(err.to_string().contains("is pending"), "{err}");

    // Without it: the call waits for the new session and succeeds.
    let sent = Instant::now();
    let got = echo(&hub, "w", "patient").await;
    eprintln!("FIGURE call waiting for a reconnect: {:?}", sent.elapsed());
    assert_eq!(got.unwrap(), "patient");
    assert_ne!(pid_of(&hub, "w").await, first_pid);
    assert_eq!(echo(&hub, "other", "ok").await.unwrap(), "ok");
    hub.shutdown().await;
}

#[tokio::test]
async fn a_call_waiting_for_a_reconnect_still_keeps_its_own_deadline() {
    let mut slow_backoff = fast();
    slow_backoff.backoff.initial = ms(500);
    slow_backoff.backoff.max = ms(500);
    let hub = started(vec![fast_testserver("w", &[]).with_options(slow_backoff)]).await;
    hub.call("mcp__w__sleep_then_exit", json!({"ms": 20}))
        .await
        .unwrap();
    wait_state(&hub, "w", Duration::from_secs(2), |s| {
        matches!(s, ServerState::Pending { .. })
    })
    .await;
    let sent = Instant::now();
    let err = hub
        .call_with(
            "mcp__w__echo",
            json!({"text": "short"}),
            CallOptions::default().with_timeout(ms(60)),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Timeout { .. }), "{err}");
    assert!(
        sent.elapsed() >= ms(60) && sent.elapsed() < ms(300),
        "{:?}",
        sent.elapsed()
    );
    hub.shutdown().await;
}

// 15 ────────────────────────────────────────────────────────────────────────────────────────

#[tokio::test]
async fn a_server_that_cannot_restart_is_given_up_on() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("started-once");
    let script = format!(
        "if [ -e '{m}' ]; then echo gone >&2; exit 1; fi; touch '{m}'; exec '{t}' --crash-after 0",
        m = marker.display(),
        t = support::testserver().display()
    );
    let mut options = fast();
    options.backoff.give_up = ms(300);
    let spec = ServerSpec::stdio("once", "sh", ["-c".to_string(), script])
        .with_options(options)
        .with_call_timeout(Duration::from_secs(5));
    let hub = started(vec![spec, fast_testserver("other", &[])]).await;
    assert!(is_connected(&state(&hub, "once")));
    let mut events = hub.subscribe();
    // Any call crashes it (`fail` is not retried).
    let err = hub.call("mcp__once__fail", json!({})).await.unwrap_err();
    assert!(matches!(err, Error::ConnectionLost { .. }), "{err}");
    let lost = Instant::now();
    let event = wait_event(
        &mut events,
        Duration::from_secs(3),
        state_event("once", "disabled"),
    )
    .await;
    eprintln!("FIGURE lost -> given up: {:?}", lost.elapsed());
    let HubEvent::StateChanged {
        state: ServerState::Disabled { reason },
        ..
    } = event
    else {
        unreachable!()
    };
    assert!(reason.contains("gave up reconnecting"), "{reason}");
    assert!(reason.contains("exited with status 1"), "{reason}");
    assert!(lost.elapsed() >= ms(250), "{:?}", lost.elapsed());
    // It stays given up; calls say so; the other server is fine.
    tokio::time::sleep(ms(100)).await;
    assert!(matches!(state(&hub, "once"), ServerState::Disabled { .. }));
    let err = echo(&hub, "once", "x").await.unwrap_err();
    assert!(matches!(err, Error::Unavailable { .. }), "{err}");
    assert!(err.to_string().contains("gave up reconnecting"), "{err}");
    assert_eq!(echo(&hub, "other", "ok").await.unwrap(), "ok");
    hub.shutdown().await;
}
