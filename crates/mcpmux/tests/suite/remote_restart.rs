//! Remote servers that restart (issue 18): real HTTP servers killed and started again on the
//! same port between calls — the reference TypeScript server (it answers an unknown session
//! 400 with an error that names no request), our test server (the spec's 404, or the
//! reference server's 400) and a legacy HTTP+SSE server. The call after a restart works at
//! once, and an HTTP error never costs the call's deadline.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::time::{Duration, Instant};

use mcpmux::config::ServerOptions;
use mcpmux::{Error, Host, Hub, ServerSpec, ServerState, TransportSpec};
use serde_json::{Value, json};
use support::{ms, state};

/// A call after a restart must answer within this: one round trip and a new session, not
/// the call timeout below. The goal is 1 s and is met with room (24–770 ms measured at a load
/// of 12 on 2 cores); the bound is 3 s so that a loaded CI machine cannot make it flaky, while
/// waiting for the 20 s deadline still fails it plainly.
const AT_ONCE: Duration = Duration::from_secs(3);
/// Long enough that a call waiting for its deadline is plainly seen.
const CALL_TIMEOUT: Duration = Duration::from_secs(20);

/// [`support::fast`] with a breaker that never reopens during a test: restarts are the point.
fn fast() -> ServerOptions {
    let mut o = support::fast();
    o.breaker.cool_down = Duration::from_secs(30);
    o
}

fn tuned(spec: ServerSpec) -> ServerSpec {
    spec.with_options(fast())
        .with_call_timeout(CALL_TIMEOUT)
        .with_startup_timeout(Duration::from_secs(20))
}

fn http(name: &str, url: &str) -> ServerSpec {
    tuned(ServerSpec::http(name, url))
}

async fn started(specs: Vec<ServerSpec>, host: Host) -> Hub {
    let options = support::hub_options().with_host(host);
    support::started_with(specs, options).await
}

fn port_of(url: &str) -> u16 {
    let rest = url.strip_prefix("http://127.0.0.1:").unwrap();
    rest[..rest.find('/').unwrap()].parse().unwrap()
}

/// Calls `tool` with `arguments`, asserting it answers within [`AT_ONCE`] without an error.
async fn call_at_once(hub: &Hub, tool: &str, arguments: Value) -> String {
    let sent = Instant::now();
    let got = hub.call(tool, arguments).await;
    let took = sent.elapsed();
    eprintln!("FIGURE {tool} after a restart: {took:?}");
    let text = got
        .unwrap_or_else(|e| panic!("{tool} failed after {took:?}: {e}"))
        .to_text();
    assert!(took < AT_ONCE, "{tool} took {took:?}");
    text
}

/// Kills `server` and starts `again` (on the same port), off the runtime: a harness's runtime
/// goes on while a server restarts elsewhere, and so must the hub's here.
async fn restart(
    server: support::ServerProcess,
    again: impl FnOnce() -> support::ServerProcess + Send + 'static,
) -> support::ServerProcess {
    tokio::task::spawn_blocking(move || {
        drop(server);
        again()
    })
    .await
    .unwrap()
}

#[tokio::test]
async fn a_restarted_reference_server_answers_the_next_call_at_once() {
    let first = support::node_http(&support::everything_script(), &["streamableHttp"], "/mcp");
    let port = port_of(&first.url);
    let hub = started(vec![http("everything", &first.url)], Host::new()).await;
    let echo = |text: &str| json!({ "message": text });
    assert!(
        call_at_once(&hub, "mcp__everything__echo", echo("before"))
            .await
            .contains("before")
    );
    let mut server = first;
    for round in 0..3 {
        server = restart(server, move || {
            support::node_http_on(
                port,
                &support::everything_script(),
                &["streamableHttp"],
                "/mcp",
            )
        })
        .await;
        let text = format!("after restart {round}");
        let answer = call_at_once(&hub, "mcp__everything__echo", echo(&text)).await;
        assert!(answer.contains(&text), "{answer}");
    }
    assert!(matches!(
        state(&hub, "everything"),
        ServerState::Connected { .. }
    ));
    drop(server);
    hub.shutdown().await;
}

/// A restart of our test server, which answers an unknown session `unknown_session` (404
/// like the spec, 400 like the reference server): the next call works at once and ran once.
async fn restarts_cost_one_round_trip(unknown_session: &str) {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls.jsonl");
    let args = [
        "--era",
        "handshake",
        "--call-log",
        log.to_str().unwrap(),
        "--unknown-session",
        unknown_session,
    ];
    let mut server = support::testserver_http(&args);
    let port = port_of(&server.url);
    let hub = started(vec![http("remote", &server.url)], Host::new()).await;
    assert_eq!(
        call_at_once(&hub, "mcp__remote__echo", json!({"text": "before"})).await,
        "before"
    );
    for round in 0..3 {
        let args = args.map(str::to_owned);
        server = restart(server, move || {
            support::testserver_http_on(port, &args.each_ref().map(String::as_str))
        })
        .await;
        let text = format!("after restart {round}");
        assert_eq!(
            call_at_once(&hub, "mcp__remote__echo", json!({ "text": text })).await,
            text
        );
        // A server that did not know the session did not run the call: sent again, run once.
        assert_eq!(support::logged_calls(&log, "echo", Some(&text)), 1);
    }
    assert!(matches!(
        state(&hub, "remote"),
        ServerState::Connected { .. }
    ));
    hub.shutdown().await;
}

#[tokio::test]
async fn a_restarted_server_answering_404_for_the_old_session_answers_the_next_call_at_once() {
    restarts_cost_one_round_trip("404").await;
}

#[tokio::test]
async fn a_restarted_server_answering_400_for_the_old_session_answers_the_next_call_at_once() {
    restarts_cost_one_round_trip("400").await;
}

#[tokio::test]
async fn a_400_for_a_dropped_session_renews_it_and_runs_the_call_once() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls.jsonl");
    let server = support::testserver_http(&[
        "--era",
        "handshake",
        "--call-log",
        log.to_str().unwrap(),
        "--unknown-session",
        "400",
    ]);
    let hub = started(vec![http("remote", &server.url)], Host::new()).await;
    for round in 0..3 {
        let url = server.url.replace("/mcp", "/admin/drop_sessions");
        reqwest::Client::new().post(url).send().await.unwrap();
        let text = format!("after drop {round}");
        assert_eq!(
            call_at_once(&hub, "mcp__remote__echo", json!({ "text": text })).await,
            text
        );
        assert_eq!(support::logged_calls(&log, "echo", Some(&text)), 1);
    }
    hub.shutdown().await;
}

#[tokio::test]
async fn after_a_restart_the_session_and_its_subscriptions_come_back_without_a_call() {
    const COUNTER: &str = "test://counter";
    let args = ["--era", "handshake"];
    let mut server = support::testserver_http(&args);
    let port = port_of(&server.url);
    let host = Host::new();
    let mut events = host.resource_events();
    let hub = started(vec![http("remote", &server.url)], host).await;
    hub.subscribe_resource("remote", COUNTER).await.unwrap();
    server = restart(server, move || support::testserver_http_on(port, &args)).await;
    // No call: the event stream finds the session gone, a new one replaces it, and the
    // subscription is made again there (announced as an update: changes meanwhile were missed).
    let renewed = Instant::now();
    assert_eq!(
        support::next_update(&mut events, Duration::from_secs(10))
            .await
            .map(|(_, uri)| uri)
            .as_deref(),
        Some(COUNTER),
        "the subscription was not made again after the restart"
    );
    eprintln!(
        "FIGURE restart -> subscription renewed: {:?}",
        renewed.elapsed()
    );
    assert!(matches!(
        state(&hub, "remote"),
        ServerState::Connected { .. }
    ));
    // The new process notifies the new session.
    assert_eq!(
        call_at_once(&hub, "mcp__remote__bump", json!({})).await,
        "1"
    );
    assert_eq!(
        support::next_update(&mut events, Duration::from_secs(5))
            .await
            .map(|(_, uri)| uri)
            .as_deref(),
        Some(COUNTER)
    );
    drop(server);
    hub.shutdown().await;
}

#[tokio::test]
async fn a_restarted_legacy_sse_server_answers_the_next_call_at_once() {
    let first = support::node_http(&support::everything_script(), &["sse"], "/sse");
    let port = port_of(&first.url);
    let sse = |url: &str| TransportSpec::Sse {
        url: url.to_string(),
        headers: Default::default(),
    };
    let hub = started(
        vec![tuned(ServerSpec::new("legacy", sse(&first.url)))],
        Host::new(),
    )
    .await;
    let echo = |text: &str| json!({ "message": text });
    let mut server = first;
    for round in 0..3 {
        server = restart(server, move || {
            support::node_http_on(port, &support::everything_script(), &["sse"], "/sse")
        })
        .await;
        let text = format!("after restart {round}");
        let answer = call_at_once(&hub, "mcp__legacy__echo", echo(&text)).await;
        assert!(answer.contains(&text), "{answer}");
    }
    drop(server);
    hub.shutdown().await;
}

#[tokio::test]
async fn a_server_answering_500_fails_each_call_at_once_and_opens_the_breaker() {
    for json_body in [false, true] {
        let mut args = vec![];
        if json_body {
            // The reference servers' error answers: a JSON-RPC error that names no request.
            args.push("--http-fail-json");
        }
        let server = support::testserver_http(&args);
        let hub = started(vec![http("remote", &server.url)], Host::new()).await;
        let url = server.url.replace("/mcp", "/admin/fail?status=500");
        reqwest::Client::new().post(url).send().await.unwrap();
        for i in 0..3 {
            let sent = Instant::now();
            let err = hub
                .call("mcp__remote__echo", json!({"text": format!("during {i}")}))
                .await
                .expect_err("a failing server answered");
            let took = sent.elapsed();
            eprintln!("FIGURE 500 (json body: {json_body}) call {i}: {took:?}: {err}");
            assert!(took < ms(1000), "{took:?}: {err}");
            // A plain answer has its status quoted; a JSON-RPC error, the server's words
            // (rmcp's client keeps the error and drops the status).
            let expected = if json_body {
                "Internal server error"
            } else {
                "HTTP 500"
            };
            assert!(err.to_string().contains(expected), "{err}");
        }
        let err = hub
            .call("mcp__remote__echo", json!({"text": "refused"}))
            .await
            .unwrap_err();
        assert!(matches!(err, Error::CircuitOpen { .. }), "{err}");
        hub.shutdown().await;
    }
}

#[tokio::test]
async fn a_call_made_while_the_server_restarts_waits_for_it_and_runs_once() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls.jsonl");
    let args = ["--era", "handshake", "--call-log", log.to_str().unwrap()].map(str::to_owned);
    let server = support::testserver_http(&args.each_ref().map(String::as_str));
    let port = port_of(&server.url);
    let hub = started(vec![http("remote", &server.url)], Host::new()).await;
    assert_eq!(
        call_at_once(&hub, "mcp__remote__echo", json!({"text": "before"})).await,
        "before"
    );
    tokio::task::spawn_blocking(move || drop(server))
        .await
        .unwrap();
    // The server is down: the call is made now, and the server comes back a little later.
    let sent = Instant::now();
    let call = hub.call("mcp__remote__echo", json!({"text": "during"}));
    let again = args.clone();
    let back = tokio::task::spawn_blocking(move || {
        std::thread::sleep(ms(300));
        support::testserver_http_on(port, &again.each_ref().map(String::as_str))
    });
    let (answer, server) = tokio::join!(call, back);
    let took = sent.elapsed();
    eprintln!("FIGURE call made during a restart: {took:?}");
    assert_eq!(answer.unwrap().to_text(), "during");
    assert!(took < Duration::from_secs(3), "{took:?}");
    assert_eq!(support::logged_calls(&log, "echo", Some("during")), 1);
    assert!(matches!(
        state(&hub, "remote"),
        ServerState::Connected { .. }
    ));
    drop(server);
    hub.shutdown().await;
}
