//! Resilience over streamable HTTP against the test server's fault admin: a 401 needs auth and
//! is not retried, a stale session is renewed, and 5xx answers fail calls clearly until the
//! server heals.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::time::{Duration, Instant};

use mcpmux::{CallOptions, Error, Hub, HubEvent, ServerState};
use serde_json::json;
use support::*;

// 11 ────────────────────────────────────────────────────────────────────────────────────────

#[tokio::test]
async fn http_401_needs_auth_and_is_not_retried() {
    let server = support::testserver_http(&["--http-fail", "401"]);
    let hub = Hub::start(
        vec![
            fast_http("remote", &server.url),
            fast_testserver("local", &[]),
        ],
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
    let hub = started(vec![fast_http("remote", &server.url)]).await;
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

#[tokio::test]
async fn http_5xx_fails_calls_clearly_then_the_server_recovers_after_heal() {
    let server = support::testserver_http(&[]);
    let hub = started(vec![
        fast_http("remote", &server.url),
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
    let hub = started(vec![fast_http("remote", &server.url)]).await;
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
