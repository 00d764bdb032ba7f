//! Resilience of one session's calls against the fault-injecting test server: hanging and slow
//! calls keep their deadlines, junk on stdout and unknown response ids confuse nothing, a 50 MB
//! result arrives, a notification flood starves no call, and a tool-list change is picked up.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::time::{Duration, Instant};

use mcpmux::{CallOptions, Error, Hub, HubEvent};
use serde_json::json;
use support::*;

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
        tokio::spawn(async move { timed_hang(&hub, "h", ms(300)).await })
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
