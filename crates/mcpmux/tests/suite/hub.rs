//! The hub against our own test server, a real rmcp server process, over stdio and streamable
//! HTTP: era detection and version negotiation, pagination, typed results, progress,
//! deadlines with cancellation, the era cache, and concurrency.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::time::{Duration, Instant};

use mcpmux::{CallOptions, Content, Era, Error, Hub, ServerSpec, ServerState};
use serde_json::json;
use support::{started, stdio_testserver, timed_hang};

#[tokio::test]
async fn eras_and_versions_are_detected_per_server() {
    let hub = started(vec![
        stdio_testserver("modern", &["--era", "both"]),
        stdio_testserver("stateless", &["--era", "stateless"]),
        stdio_testserver("legacy", &["--era", "handshake"]),
        stdio_testserver(
            "old",
            &["--era", "handshake", "--protocol-version", "2024-11-05"],
        ),
        stdio_testserver(
            "june",
            &["--era", "handshake", "--protocol-version", "2025-06-18"],
        ),
        stdio_testserver(
            "march",
            &["--era", "handshake", "--protocol-version", "2025-03-26"],
        ),
    ])
    .await;
    assert_eq!(
        support::connected(&hub, "modern"),
        (Era::Stateless, "2026-07-28".into())
    );
    assert_eq!(
        support::connected(&hub, "stateless"),
        (Era::Stateless, "2026-07-28".into())
    );
    assert_eq!(
        support::connected(&hub, "legacy"),
        (Era::Handshake, "2025-11-25".into())
    );
    assert_eq!(
        support::connected(&hub, "old"),
        (Era::Handshake, "2024-11-05".into())
    );
    assert_eq!(
        support::connected(&hub, "june"),
        (Era::Handshake, "2025-06-18".into())
    );
    assert_eq!(
        support::connected(&hub, "march"),
        (Era::Handshake, "2025-03-26".into())
    );
    // Every era answers calls.
    for server in ["modern", "stateless", "legacy", "old", "june", "march"] {
        let result = hub
            .call(&format!("mcp__{server}__echo"), json!({"text": server}))
            .await
            .unwrap();
        assert_eq!(result.to_text(), server);
    }
    hub.shutdown().await;
}

#[tokio::test]
async fn a_legacy_server_that_ignores_the_probe_costs_only_the_probe_deadline() {
    let started_at = Instant::now();
    let hub = started(vec![
        stdio_testserver("quiet", &["--era", "handshake", "--ignore-unknown"])
            .with_probe_timeout(Duration::from_millis(300)),
    ])
    .await;
    assert_eq!(
        support::connected(&hub, "quiet"),
        (Era::Handshake, "2025-11-25".into())
    );
    // rmcp alone would have waited 10 s.
    assert!(
        started_at.elapsed() < Duration::from_secs(5),
        "{:?}",
        started_at.elapsed()
    );
    hub.shutdown().await;
}

#[tokio::test]
async fn the_era_cache_skips_the_probe_next_time_and_heals_when_stale() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("eras.json");
    let spec = || {
        stdio_testserver("quiet", &["--era", "handshake", "--ignore-unknown"])
            .with_probe_timeout(Duration::from_millis(1500))
    };
    let with_cache = || support::hub_options().with_era_cache(Some(cache.clone()));

    let first = Instant::now();
    let hub = support::started_with(vec![spec()], with_cache()).await;
    assert!(
        first.elapsed() >= Duration::from_millis(1500),
        "the first start pays the probe"
    );
    hub.shutdown().await;
    let text = std::fs::read_to_string(&cache).unwrap();
    assert!(text.contains("handshake"), "{text}");
    assert!(
        !text.contains("mcpmux-testserver"),
        "the cache stores hashes only: {text}"
    );

    let second = Instant::now();
    let hub = support::started_with(vec![spec()], with_cache()).await;
    assert!(
        second.elapsed() < Duration::from_millis(1500),
        "the cached era skips the probe: {:?}",
        second.elapsed()
    );
    assert_eq!(support::connected(&hub, "quiet").0, Era::Handshake);
    hub.shutdown().await;

    // A cache that lies (the server changed eras) is corrected on the next start.
    let stale = text
        .replace("handshake", "stateless")
        .replace("2025-11-25", "2026-07-28");
    std::fs::write(&cache, stale).unwrap();
    let hub = support::started_with(vec![spec()], with_cache()).await;
    assert_eq!(support::connected(&hub, "quiet").0, Era::Handshake);
    hub.shutdown().await;
    assert!(
        std::fs::read_to_string(&cache)
            .unwrap()
            .contains("handshake")
    );
}

#[tokio::test]
async fn streamable_http_in_both_eras() {
    let modern = support::testserver_http(&[]);
    let legacy = support::testserver_http(&["--era", "handshake"]);
    let hub = started(vec![
        ServerSpec::http("modern", &modern.url),
        ServerSpec::http("legacy", &legacy.url),
    ])
    .await;
    assert_eq!(support::connected(&hub, "modern").0, Era::Stateless);
    assert_eq!(
        support::connected(&hub, "legacy"),
        (Era::Handshake, "2025-11-25".into())
    );
    for server in ["modern", "legacy"] {
        let sum = hub
            .call(&format!("mcp__{server}__add"), json!({"a": 2, "b": 3}))
            .await
            .unwrap();
        assert_eq!(sum.to_text(), "5");
        assert_eq!(sum.structured_content, Some(json!({"sum": 5})));
    }
    hub.shutdown().await;
}

#[tokio::test]
async fn pagination_is_followed_and_a_repeated_cursor_does_not_loop() {
    let hub = started(vec![
        stdio_testserver("paged", &["--page-size", "2"]),
        stdio_testserver("looping", &["--page-size", "2", "--repeat-cursor"]),
        stdio_testserver("flat", &[]),
    ])
    .await;
    let count = |server: &str| hub.tools().iter().filter(|t| t.server == server).count();
    assert!(count("flat") >= 10);
    assert_eq!(count("paged"), count("flat"));
    // The broken server's first pages are kept; startup did not hang.
    assert!(matches!(
        hub.servers()
            .iter()
            .find(|s| s.name == "looping")
            .unwrap()
            .state,
        ServerState::Connected { .. }
    ));
    assert!(
        count("looping") >= 2 && count("looping") <= 4,
        "{}",
        count("looping")
    );
    hub.shutdown().await;
}

#[tokio::test]
async fn results_keep_their_types_and_tool_errors_are_results() {
    let hub = started(vec![stdio_testserver("t", &[])]).await;
    let image = hub.call("mcp__t__image", json!({})).await.unwrap();
    assert!(
        matches!(&image.content[0], Content::Image { mime_type, .. } if mime_type == "image/png")
    );
    assert!(matches!(&image.content[1], Content::Text { text } if text == "a 1x1 PNG image"));
    assert_eq!(
        image.structured_content,
        Some(json!({"width": 1, "height": 1}))
    );

    let failed = hub
        .call("mcp__t__fail", json!({"message": "no such issue"}))
        .await
        .unwrap();
    assert!(failed.is_error);
    assert_eq!(failed.to_text(), "no such issue");

    let tool = hub.tool("mcp__t__add").unwrap();
    assert_eq!(tool.raw_name, "add");
    assert_eq!(hub.tool_server("mcp__t__add").as_deref(), Some("t"));
    assert_eq!(hub.tool_server("mcp__t__nope"), None);
    assert_eq!(tool.annotations.read_only_hint, Some(true));
    assert!(tool.output_schema.is_some());

    let err = hub.call("mcp__t__echo", json!([1, 2])).await.unwrap_err();
    assert!(matches!(err, Error::InvalidArguments { .. }), "{err}");
    hub.shutdown().await;
}

#[tokio::test]
async fn progress_reaches_the_caller_and_extends_the_deadline() {
    let hub = started(vec![stdio_testserver("t", &[])]).await;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    // 600 ms of work with progress every 100 ms outlives a 250 ms deadline only because
    // progress extends it.
    let result = hub
        .call_with(
            "mcp__t__slow",
            json!({"ms": 600, "steps": 6}),
            CallOptions::default()
                .with_timeout(Duration::from_millis(250))
                .with_progress(tx),
        )
        .await
        .unwrap();
    assert_eq!(result.to_text(), "done after 6 steps");
    let mut seen = Vec::new();
    while let Ok(p) = rx.try_recv() {
        seen.push(p);
    }
    assert_eq!(seen.len(), 6, "{seen:?}");
    assert_eq!(seen[5].progress, 6.0);
    assert_eq!(seen[5].total, Some(6.0));
    assert_eq!(seen[5].message.as_deref(), Some("step 6/6"));
    hub.shutdown().await;
}

/// Waits until the test server's call log shows the cancellation of a call to `tool`.
async fn wait_for_cancel_line(log: &std::path::Path, tool: &str) {
    support::wait_log(log, Duration::from_secs(5), |lines| {
        lines.iter().any(|l| l["cancelled"] == tool)
    })
    .await;
}

#[tokio::test]
async fn a_deadline_fails_the_call_and_tells_the_server_to_stop() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls.jsonl");
    let hub = started(vec![stdio_testserver(
        "t",
        &["--call-log", log.to_str().unwrap()],
    )])
    .await;
    let (result, elapsed) = timed_hang(&hub, "t", Duration::from_millis(300)).await;
    let err = result.unwrap_err();
    assert!(elapsed < Duration::from_secs(3));
    assert!(matches!(err, Error::Timeout { .. }), "{err}");
    assert_eq!(
        err.to_string(),
        "server `t`: tools/call `hang` timed out after 300ms"
    );
    wait_for_cancel_line(&log, "hang").await;
    // The connection is still good.
    assert_eq!(
        hub.call("mcp__t__echo", json!({"text": "still here"}))
            .await
            .unwrap()
            .to_text(),
        "still here"
    );
    hub.shutdown().await;
}

#[tokio::test]
async fn a_dropped_or_cancelled_call_tells_the_server_to_stop() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls.jsonl");
    let hub = started(vec![stdio_testserver(
        "t",
        &["--call-log", log.to_str().unwrap()],
    )])
    .await;
    // Cancelled through a token.
    let token = tokio_util::sync::CancellationToken::new();
    let call = {
        let hub = hub.clone();
        let token = token.clone();
        tokio::spawn(async move {
            hub.call_with(
                "mcp__t__slow",
                json!({"ms": 20000, "steps": 2}),
                CallOptions::default().with_cancel(token),
            )
            .await
        })
    };
    while support::call_log(&log).is_empty() {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    token.cancel();
    let err = call.await.unwrap().unwrap_err();
    assert!(matches!(err, Error::Cancelled(_)), "{err}");
    wait_for_cancel_line(&log, "slow").await;

    // Dropped by the caller (a harness that gave up and moved on).
    let hang = {
        let hub = hub.clone();
        tokio::spawn(async move { hub.call("mcp__t__hang", json!({})).await })
    };
    while !support::call_log(&log).iter().any(|l| l["tool"] == "hang") {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    hang.abort();
    wait_for_cancel_line(&log, "hang").await;
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_calls_over_stdio_and_http_each_get_their_own_answer() {
    let http = support::testserver_http(&[]);
    let hub = started(vec![
        stdio_testserver("local", &[]),
        ServerSpec::http("remote", &http.url),
    ])
    .await;
    let mut tasks = Vec::new();
    for task in 0..16 {
        let hub = hub.clone();
        tasks.push(tokio::spawn(async move {
            let mut calls = Vec::new();
            for i in 0..25 {
                let hub = hub.clone();
                calls.push(async move {
                    let server = if (task + i) % 2 == 0 {
                        "local"
                    } else {
                        "remote"
                    };
                    let text = format!("{server} {task} {i}");
                    let got = hub
                        .call(&format!("mcp__{server}__echo"), json!({"text": text}))
                        .await
                        .unwrap()
                        .to_text();
                    assert_eq!(got, text);
                });
            }
            futures::future::join_all(calls).await.len()
        }));
    }
    let mut total = 0;
    for task in tasks {
        total += task.await.unwrap();
    }
    assert_eq!(total, 400);
    hub.shutdown().await;
}

#[tokio::test]
async fn a_call_to_a_server_still_starting_waits_for_it() {
    let hub = Hub::start(
        vec![stdio_testserver("slowpoke", &["--startup-delay-ms", "400"])],
        support::hub_options(),
    )
    .unwrap();
    // No wait_ready: the call itself waits for the server's tools.
    let result = hub
        .call("mcp__slowpoke__echo", json!({"text": "worth the wait"}))
        .await
        .unwrap();
    assert_eq!(result.to_text(), "worth the wait");
    hub.shutdown().await;
}
