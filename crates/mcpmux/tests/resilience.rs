//! Resilience (issue 3) against the fault-injecting test server, one test per fault: what the
//! user sees (state in `servers()`, error text, other servers unaffected, recovery), all with
//! short configured timeouts and backoff. Process counting lives in `resilience_processes.rs`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use mcpmux::{CallOptions, Error, Hub, HubEvent, ServerSpec, ServerState};
use serde_json::json;
use support::{
    admin, call_log, echo, fast, fast_testserver, hub_options, is_connected, logged_calls, ms,
    pid_of, started, state, state_event, wait_event, wait_log, wait_state,
};

fn http(name: &str, url: &str) -> ServerSpec {
    ServerSpec::http(name, url)
        .with_options(fast())
        .with_call_timeout(Duration::from_secs(5))
        .with_startup_timeout(Duration::from_secs(10))
}

fn tools_version(hub: &Hub, name: &str) -> u64 {
    match state(hub, name) {
        ServerState::Connected { tools_version, .. } => tools_version,
        other => panic!("{name} is not connected: {other:?}"),
    }
}

/// Calls `echo` on `server` `n` times concurrently; every answer must be its own text.
async fn echo_many(hub: &Hub, server: &str, n: usize) {
    let calls = (0..n).map(|i| {
        let text = format!("{server} #{i}");
        async move {
            let got = echo(hub, server, &text).await;
            assert_eq!(got.as_deref().ok(), Some(text.as_str()), "{got:?}");
        }
    });
    futures::future::join_all(calls).await;
}

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

// 4 ─────────────────────────────────────────────────────────────────────────────────────────

#[tokio::test]
async fn a_hanging_call_times_out_is_cancelled_and_does_not_block_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls.jsonl");
    let hub = started(vec![fast_testserver(
        "h",
        &["--call-log", log.to_str().unwrap()],
    )])
    .await;
    let pid = pid_of(&hub, "h").await;
    let hang = {
        let hub = hub.clone();
        tokio::spawn(async move {
            let sent = Instant::now();
            let result = hub
                .call_with(
                    "mcp__h__hang",
                    json!({}),
                    CallOptions::default().with_timeout(ms(300)),
                )
                .await;
            (result, sent.elapsed())
        })
    };
    wait_log(&log, Duration::from_secs(3), |l| {
        l.iter().any(|c| c["tool"] == "hang")
    })
    .await;
    // The same server answers other calls while `hang` is outstanding.
    let sent = Instant::now();
    assert_eq!(echo(&hub, "h", "meanwhile").await.unwrap(), "meanwhile");
    assert!(sent.elapsed() < ms(200), "{:?}", sent.elapsed());
    assert!(!hang.is_finished(), "hang answered before its deadline");

    let (result, elapsed) = hang.await.unwrap();
    let err = result.unwrap_err();
    assert!(matches!(err, Error::Timeout { .. }), "{err}");
    assert_eq!(
        err.to_string(),
        "server `h`: tools/call `hang` timed out after 300ms"
    );
    assert!(elapsed >= ms(300) && elapsed < ms(1000), "{elapsed:?}");
    // The server heard the cancellation.
    wait_log(&log, Duration::from_secs(3), |l| {
        l.iter().any(|c| c["cancelled"] == "hang")
    })
    .await;
    assert!(is_connected(&state(&hub, "h")));
    assert_eq!(pid_of(&hub, "h").await, pid, "no reconnect for a timeout");
    hub.shutdown().await;
}

// 5 ─────────────────────────────────────────────────────────────────────────────────────────

#[tokio::test]
async fn slow_answers_respect_the_deadline_both_ways() {
    let hub = started(vec![
        fast_testserver("slow", &["--slow-ms", "250"]).with_call_timeout(ms(100)),
        fast_testserver("other", &[]),
    ])
    .await;
    // The server's default deadline (100 ms) is shorter than its answer (250 ms): timed out
    // at the deadline, not when the answer comes.
    let sent = Instant::now();
    let err = echo(&hub, "slow", "late").await.unwrap_err();
    let elapsed = sent.elapsed();
    assert!(matches!(err, Error::Timeout { .. }), "{err}");
    assert!(err.to_string().contains("timed out after 100ms"), "{err}");
    assert!(elapsed >= ms(100) && elapsed < ms(240), "{elapsed:?}");

    // A per-call deadline longer than the answer: the slow answer is taken, not cut short.
    let sent = Instant::now();
    let got = hub
        .call_with(
            "mcp__slow__echo",
            json!({"text": "patient"}),
            CallOptions::default().with_timeout(Duration::from_secs(2)),
        )
        .await
        .unwrap();
    assert_eq!(got.to_text(), "patient");
    assert!(sent.elapsed() >= ms(250), "{:?}", sent.elapsed());

    // A per-call deadline shorter than the server default is honoured too.
    let sent = Instant::now();
    let err = hub
        .call_with(
            "mcp__slow__echo",
            json!({"text": "hasty"}),
            CallOptions::default().with_timeout(ms(50)),
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("timed out after 50ms"), "{err}");
    assert!(sent.elapsed() < ms(200), "{:?}", sent.elapsed());
    // Late answers to timed-out calls do not land on later calls.
    tokio::time::sleep(ms(300)).await;
    let got = hub
        .call_with(
            "mcp__slow__echo",
            json!({"text": "mine"}),
            CallOptions::default().with_timeout(Duration::from_secs(2)),
        )
        .await
        .unwrap();
    assert_eq!(got.to_text(), "mine");
    assert_eq!(echo(&hub, "other", "quick").await.unwrap(), "quick");
    hub.shutdown().await;
}

// 6 ─────────────────────────────────────────────────────────────────────────────────────────

/// Many concurrent calls, then `add`: each gets its own answer, and the process is the same
/// one (the junk did not cost a reconnect).
async fn calls_get_their_own_answers(hub: &Hub, server: &str) {
    assert!(
        is_connected(&state(hub, server)),
        "{server}: {:?}",
        state(hub, server)
    );
    let pid = pid_of(hub, server).await;
    echo_many(hub, server, 100).await;
    let sum = hub
        .call(&format!("mcp__{server}__add"), json!({"a": 2, "b": 3}))
        .await
        .unwrap();
    assert_eq!(sum.to_text(), "5");
    assert_eq!(sum.structured_content, Some(json!({"sum": 5})));
    assert_eq!(pid_of(hub, server).await, pid, "{server} was restarted");
    assert!(is_connected(&state(hub, server)), "{server}");
}

#[tokio::test]
async fn garbage_on_stdout_does_not_break_the_session() {
    // Non-JSON lines, a JSON line that is not JSON-RPC (a JSON logger on stdout) and partial
    // lines, at startup and before every response.
    let hub = started(vec![
        fast_testserver("junk", &["--garbage"]),
        fast_testserver("junk_legacy", &["--garbage", "--era", "handshake"]),
    ])
    .await;
    for server in ["junk", "junk_legacy"] {
        calls_get_their_own_answers(&hub, server).await;
    }
    hub.shutdown().await;
}

#[tokio::test]
async fn responses_with_unknown_ids_do_not_confuse_calls() {
    let hub = started(vec![
        fast_testserver("liar", &["--unknown-id"]),
        fast_testserver("liar_legacy", &["--unknown-id", "--era", "handshake"]),
    ])
    .await;
    for server in ["liar", "liar_legacy"] {
        calls_get_their_own_answers(&hub, server).await;
    }
    hub.shutdown().await;
}

// 7 ─────────────────────────────────────────────────────────────────────────────────────────

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_50_mb_result_arrives_intact_and_the_hub_keeps_working() {
    // The hub cuts results to `max_result_bytes` (100 KiB by default, the rest spilled to a
    // file); this server is allowed whole 50 MiB answers.
    let mut whole = fast();
    whole.max_result_bytes = 64 * 1024 * 1024;
    let hub = started(vec![
        fast_testserver("big", &[]).with_options(whole),
        fast_testserver("other", &[]),
    ])
    .await;
    let pid = pid_of(&hub, "big").await;
    let others = {
        let hub = hub.clone();
        tokio::spawn(async move {
            for _ in 0..20 {
                echo_many(&hub, "other", 10).await;
                tokio::time::sleep(ms(5)).await;
            }
        })
    };
    let sent = Instant::now();
    let result = hub
        .call_with(
            "mcp__big__huge",
            json!({"mb": 50}),
            CallOptions::default().with_timeout(Duration::from_secs(120)),
        )
        .await
        .unwrap();
    eprintln!("FIGURE 50 MiB result: {:?}", sent.elapsed());
    assert!(!result.is_error);
    assert_eq!(result.content.len(), 1);
    let text = result.to_text();
    let bytes = 50 * 1024 * 1024;
    assert_eq!(text.len(), bytes);
    let header = format!("huge: {bytes} bytes\n");
    assert!(text.starts_with(&header));
    assert!(text.as_bytes()[header.len()..].iter().all(|b| *b == b'x'));
    drop(text);
    drop(result);
    others.await.unwrap();
    assert_eq!(echo(&hub, "big", "still fine").await.unwrap(), "still fine");
    assert_eq!(pid_of(&hub, "big").await, pid, "no reconnect");
    assert!(is_connected(&state(&hub, "big")));
    hub.shutdown().await;
}

// 8 ─────────────────────────────────────────────────────────────────────────────────────────

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_notification_flood_does_not_starve_other_calls() {
    let hub = started(vec![
        fast_testserver("noisy", &[]),
        fast_testserver("other", &[]),
    ])
    .await;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let flood = {
        let hub = hub.clone();
        tokio::spawn(async move {
            hub.call_with(
                "mcp__noisy__flood",
                json!({"count": 20000}),
                CallOptions::default()
                    .with_timeout(Duration::from_secs(30))
                    .with_progress(tx),
            )
            .await
        })
    };
    let sent = Instant::now();
    // Calls on the flooding server and on another, while the flood runs.
    tokio::join!(echo_many(&hub, "noisy", 200), echo_many(&hub, "other", 200));
    let others_done = sent.elapsed();
    let flooded = flood.await.unwrap().unwrap();
    eprintln!(
        "FIGURE flood of 20000: {:?} (400 other calls done after {others_done:?})",
        sent.elapsed()
    );
    assert_eq!(flooded.to_text(), "flooded 20000");
    let mut progress = 0;
    while rx.try_recv().is_ok() {
        progress += 1;
    }
    eprintln!("FIGURE flood progress notifications delivered: {progress}");
    assert!(progress > 0);
    assert!(is_connected(&state(&hub, "noisy")));
    assert_eq!(echo(&hub, "noisy", "calm").await.unwrap(), "calm");
    hub.shutdown().await;
}

// 9 ─────────────────────────────────────────────────────────────────────────────────────────

#[tokio::test]
async fn list_changed_updates_the_tools_and_fires_the_event_without_disturbing_calls() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls.jsonl");
    let hub = started(vec![
        fast_testserver("x", &["--call-log", log.to_str().unwrap()]),
        fast_testserver("y", &[]),
    ])
    .await;
    let v0 = tools_version(&hub, "x");
    let y_tools = hub.tools().iter().filter(|t| t.server == "y").count();
    assert!(hub.tool("mcp__x__extra").is_none());
    let mut events = hub.subscribe();
    let slow = {
        let hub = hub.clone();
        tokio::spawn(async move {
            hub.call("mcp__x__slow", json!({"ms": 500, "steps": 5}))
                .await
        })
    };
    wait_log(&log, Duration::from_secs(3), |l| {
        l.iter().any(|c| c["tool"] == "slow")
    })
    .await;
    hub.call("mcp__x__change_tools", json!({})).await.unwrap();
    wait_event(
        &mut events,
        Duration::from_secs(2),
        |e| matches!(e, HubEvent::ToolsChanged { server } if server == "x"),
    )
    .await;
    assert!(
        !slow.is_finished(),
        "the slow call should still be in flight"
    );
    assert!(hub.tool("mcp__x__extra").is_some());
    let v1 = tools_version(&hub, "x");
    assert!(v1 > v0, "{v0} -> {v1}");
    assert_eq!(
        hub.call("mcp__x__extra", json!({}))
            .await
            .unwrap()
            .to_text(),
        "extra"
    );
    // The call in flight during the change completes normally.
    let done = slow.await.unwrap().unwrap();
    assert_eq!(done.to_text(), "done after 5 steps");
    // And back: `extra` goes away again.
    hub.call("mcp__x__change_tools", json!({})).await.unwrap();
    wait_event(
        &mut events,
        Duration::from_secs(2),
        |e| matches!(e, HubEvent::ToolsChanged { server } if server == "x"),
    )
    .await;
    assert!(hub.tool("mcp__x__extra").is_none());
    assert!(tools_version(&hub, "x") > v1);
    assert_eq!(
        hub.tools().iter().filter(|t| t.server == "y").count(),
        y_tools
    );
    hub.shutdown().await;
}

// 11 ────────────────────────────────────────────────────────────────────────────────────────

#[tokio::test]
async fn http_401_needs_auth_and_is_not_retried() {
    let server = support::testserver_http(&["--http-fail", "401"]);
    let hub = Hub::start(
        vec![http("remote", &server.url), fast_testserver("local", &[])],
        hub_options(),
    )
    .unwrap();
    let mut events = hub.subscribe();
    hub.wait_ready().await.unwrap();
    let ServerState::NeedsAuth { message, login } = state(&hub, "remote") else {
        panic!("{:?}", state(&hub, "remote"));
    };
    // A login would authorize it, said in words for a model too: no CLI command in it.
    assert!(login, "{message}");
    assert!(message.contains("needs a login"), "{message}");
    assert!(!message.contains("mcpmux auth"), "{message}");
    // Several backoff periods later: no new attempt, still NeedsAuth.
    while events.try_recv().is_ok() {}
    tokio::time::sleep(ms(300)).await;
    let later: Vec<_> = std::iter::from_fn(|| events.try_recv().ok())
        .filter(|e| matches!(e, HubEvent::StateChanged { server, .. } if server == "remote"))
        .collect();
    assert!(later.is_empty(), "retried: {later:?}");
    assert!(matches!(
        state(&hub, "remote"),
        ServerState::NeedsAuth { .. }
    ));
    let err = echo(&hub, "remote", "x").await.unwrap_err();
    assert!(matches!(err, Error::Unavailable { .. }), "{err}");
    assert!(
        matches!(
            &err,
            Error::Unavailable {
                state: ServerState::NeedsAuth { login: true, .. },
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("needs a login"), "{err}");
    assert_eq!(echo(&hub, "local", "ok").await.unwrap(), "ok");
    hub.shutdown().await;
}

#[tokio::test]
async fn http_404_on_a_stale_session_reinitialises_transparently() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls.jsonl");
    let server =
        support::testserver_http(&["--era", "handshake", "--call-log", log.to_str().unwrap()]);
    let hub = started(vec![http("remote", &server.url)]).await;
    assert_eq!(echo(&hub, "remote", "before").await.unwrap(), "before");
    for round in 0..3 {
        admin(&server.url, "/admin/drop_sessions").await;
        let text = format!("after drop {round}");
        let sent = Instant::now();
        let got = echo(&hub, "remote", &text).await;
        eprintln!(
            "FIGURE call after a dropped session: {:?} ({got:?})",
            sent.elapsed()
        );
        assert_eq!(got.unwrap(), text);
        // Sent once to the server: re-initialised, not retried blindly.
        assert_eq!(logged_calls(&log, "echo", Some(&text)), 1);
    }
    assert!(is_connected(&state(&hub, "remote")));
    hub.shutdown().await;
}

/// The error kinds a harness can act on when a server is in trouble.
fn is_clear_server_error(e: &Error) -> bool {
    matches!(
        e,
        Error::ConnectionLost { .. }
            | Error::Timeout { .. }
            | Error::Unavailable { .. }
            | Error::CircuitOpen { .. }
            | Error::Server { .. }
    )
}

#[tokio::test]
async fn http_5xx_fails_calls_clearly_then_the_server_recovers_after_heal() {
    let server = support::testserver_http(&[]);
    let hub = started(vec![
        http("remote", &server.url),
        fast_testserver("local", &[]),
    ])
    .await;
    assert_eq!(echo(&hub, "remote", "before").await.unwrap(), "before");
    admin(&server.url, "/admin/fail?status=500").await;
    for i in 0..4 {
        let sent = Instant::now();
        let err = hub
            .call_with(
                "mcp__remote__echo",
                json!({"text": format!("during {i}")}),
                CallOptions::default().with_timeout(Duration::from_secs(2)),
            )
            .await
            .expect_err("a failing server answered");
        eprintln!("FIGURE 5xx call {i}: {:?}: {err}", sent.elapsed());
        assert!(sent.elapsed() < ms(1500), "{:?}", sent.elapsed());
        assert!(is_clear_server_error(&err), "{err:?}");
        assert!(err.to_string().contains("`remote`"), "{err}");
        tokio::time::sleep(ms(20)).await;
    }
    assert_eq!(echo(&hub, "local", "ok").await.unwrap(), "ok");

    admin(&server.url, "/admin/heal").await;
    let healed = Instant::now();
    let hub_ref = &hub;
    let text = support::eventually_async(Duration::from_secs(5), ms(20), || async move {
        echo(hub_ref, "remote", "after").await.ok()
    })
    .await
    .unwrap_or_else(|| panic!("never recovered: {:?}", state(&hub, "remote")));
    assert_eq!(text, "after");
    eprintln!("FIGURE 5xx heal -> working call: {:?}", healed.elapsed());
    wait_state(&hub, "remote", Duration::from_secs(2), is_connected).await;
    assert!(hub.tools().iter().any(|t| t.server == "remote"));
    hub.shutdown().await;
}

#[tokio::test]
async fn an_http_5xx_error_names_the_status_and_one_call_does_not_open_the_breaker() {
    let server = support::testserver_http(&[]);
    let hub = started(vec![http("remote", &server.url)]).await;
    assert_eq!(echo(&hub, "remote", "before").await.unwrap(), "before");
    admin(&server.url, "/admin/fail?status=500").await;
    let err = echo(&hub, "remote", "during").await.unwrap_err();
    let text = err.to_string();
    // The server answered: the user should read "HTTP 500", not "the connection closed".
    assert!(text.contains("500"), "{text}");
    // One failed call (however often it was retried inside) is one failure, not three.
    tokio::time::sleep(ms(20)).await;
    assert!(
        !matches!(state(&hub, "remote"), ServerState::Disabled { .. }),
        "{:?}",
        state(&hub, "remote")
    );
    admin(&server.url, "/admin/heal").await;
    hub.shutdown().await;
}

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
