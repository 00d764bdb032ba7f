//! The gateway's HTTP door, in this process, with raw HTTP: what it refuses and how
//! (`Origin`, bearer token, `Host`, protocol version, bind address, oversized and garbage
//! bodies), and `/healthz` and `/readyz` as the servers start (behind the `Host` check too,
//! naming servers, never their errors).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::time::Duration;

use mcpmux_gateway::{GatewayOptions, GuardError, HttpError, HttpOptions, HttpServer, Token};
use serde_json::json;
use support::*;

fn echo_server() -> Vec<mcpmux::ServerSpec> {
    vec![fast_testserver("t", &[])]
}

#[tokio::test]
async fn a_browser_origin_that_is_not_loopback_is_refused() {
    let served = Served::start(echo_server(), GatewayOptions::default(), |_| {}).await;
    let refused = post(
        &served.url,
        &initialize(),
        &[("origin", "https://evil.example")],
    )
    .await;
    assert_eq!(refused.status(), 403);
    assert!(refused.text().await.unwrap().contains("--allow-origin"));
    let rebinding = post(
        &served.url,
        &initialize(),
        &[("origin", "http://127.0.0.1.evil.example")],
    )
    .await;
    assert_eq!(rebinding.status(), 403);
    let local = post(
        &served.url,
        &initialize(),
        &[("origin", "http://localhost:5173")],
    )
    .await;
    assert_eq!(local.status(), 200);
    served.stop().await;
}

#[tokio::test]
async fn an_allowed_origin_is_let_in() {
    let served = Served::start(echo_server(), GatewayOptions::default(), |http| {
        http.allowed_origins = vec!["https://app.example.com".into()];
    })
    .await;
    let allowed = post(
        &served.url,
        &initialize(),
        &[("origin", "https://app.example.com")],
    )
    .await;
    assert_eq!(allowed.status(), 200);
    let other = post(
        &served.url,
        &initialize(),
        &[("origin", "https://other.example.com")],
    )
    .await;
    assert_eq!(other.status(), 403);
    served.stop().await;
}

#[tokio::test]
async fn with_a_token_a_request_without_it_or_with_another_gets_401() {
    let served = Served::start(echo_server(), GatewayOptions::default(), |http| {
        http.token = Some(Token::new("correct-horse").unwrap());
    })
    .await;
    let missing = post(&served.url, &initialize(), &[]).await;
    assert_eq!(missing.status(), 401);
    assert_eq!(
        missing.headers()["www-authenticate"].to_str().unwrap(),
        "Bearer realm=\"mcpmux\""
    );
    let wrong = post(
        &served.url,
        &initialize(),
        &[("authorization", "Bearer correct-horsf")],
    )
    .await;
    assert_eq!(wrong.status(), 401);
    let right = post(
        &served.url,
        &initialize(),
        &[("authorization", "Bearer correct-horse")],
    )
    .await;
    assert_eq!(right.status(), 200);
    assert!(right.headers().contains_key("mcp-session-id"));
    // Health checks stay open for probes.
    let health = reqwest::get(format!("{}/healthz", served.base))
        .await
        .unwrap();
    assert_eq!(health.status(), 200);
    served.stop().await;
}

#[tokio::test]
async fn a_non_loopback_address_without_a_token_is_refused_before_binding() {
    let hub = mcpmux::Hub::start(vec![], hub_options()).unwrap();
    let gateway = mcpmux_gateway::Gateway::new(hub.clone(), GatewayOptions::default());
    let refused = HttpServer::bind(gateway, HttpOptions::new("0.0.0.0:0".parse().unwrap())).await;
    let Err(HttpError::Guard(GuardError::NeedsToken { addr })) = refused else {
        panic!("bound 0.0.0.0 without a token");
    };
    assert_eq!(addr.to_string(), "0.0.0.0:0");
    hub.shutdown().await;
}

#[tokio::test]
async fn a_foreign_host_header_is_refused() {
    let served = Served::start(echo_server(), GatewayOptions::default(), |_| {}).await;
    let rebound = post(&served.url, &initialize(), &[("host", "evil.example")]).await;
    assert_eq!(rebound.status(), 403);
    served.stop().await;
}

#[tokio::test]
async fn an_unknown_protocol_version_header_is_refused() {
    let served = Served::start(echo_server(), GatewayOptions::default(), |_| {}).await;
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let refused = post(
        &served.url,
        &list,
        &[("mcp-protocol-version", "1999-01-01")],
    )
    .await;
    assert_eq!(refused.status(), 400);
    served.stop().await;
}

#[tokio::test]
async fn oversized_and_garbage_bodies_get_clear_errors() {
    let served = Served::start(echo_server(), GatewayOptions::default(), |http| {
        http.max_body_bytes = 64 * 1024;
    })
    .await;
    let huge = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list",
                      "params": {"pad": "x".repeat(100 * 1024)}});
    let too_big = post(&served.url, &huge, &[]).await;
    assert_eq!(too_big.status(), 413);
    let garbage = reqwest::Client::new()
        .post(&served.url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(&b"\xff\xfe{not json"[..])
        .send()
        .await
        .unwrap();
    assert!(garbage.status().is_client_error(), "{}", garbage.status());
    // Still serving.
    let fine = post(&served.url, &initialize(), &[]).await;
    assert_eq!(fine.status(), 200);
    served.stop().await;
}

#[tokio::test]
async fn readyz_answers_503_until_the_required_servers_are_connected() {
    let mut slow = fast_testserver("slow", &["--startup-delay-ms", "400"]);
    slow.required = true;
    let served = Served::start(
        vec![slow],
        GatewayOptions::default().with_required(vec!["slow".into()]),
        |_| {},
    )
    .await;
    let health = reqwest::get(format!("{}/healthz", served.base))
        .await
        .unwrap();
    assert_eq!(health.status(), 200);
    let early = reqwest::get(format!("{}/readyz", served.base))
        .await
        .unwrap();
    assert_eq!(early.status(), 503);
    let ready = eventually_async(
        Duration::from_secs(10),
        Duration::from_millis(20),
        || async {
            let status = reqwest::get(format!("{}/readyz", served.base))
                .await
                .ok()?
                .status();
            (status == 200).then_some(())
        },
    )
    .await;
    assert!(ready.is_some(), "never ready");
    served.stop().await;
}

#[tokio::test]
async fn readyz_names_a_required_server_that_failed_and_nothing_of_its_error() {
    let mut bad = fast_testserver("bad", &["--exit-at-startup", "1"]);
    bad.required = true;
    let served = Served::start(
        vec![bad, fast_testserver("t", &[])],
        GatewayOptions::default().with_required(vec!["bad".into()]),
        |_| {},
    )
    .await;
    // Failed, or pending a retry with the failure as its last error.
    let failed = eventually_async(
        Duration::from_secs(10),
        Duration::from_millis(20),
        || async {
            let status = served.hub.servers().into_iter().find(|s| s.name == "bad")?;
            status
                .error()
                .is_some_and(|e| e.contains("exited with status 1"))
                .then_some(())
        },
    )
    .await;
    assert!(failed.is_some(), "the server never failed");
    let response = reqwest::get(format!("{}/readyz", served.base))
        .await
        .unwrap();
    assert_eq!(response.status(), 503);
    assert_eq!(
        response.text().await.unwrap(),
        "not ready: required servers not connected: bad\n"
    );
    served.stop().await;
}

/// A raw `GET` of `path` at `addr` sending `head` as its version and headers: the status.
fn raw_status(addr: &str, path: &str, head: &str) -> u16 {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    write!(stream, "GET {path} {head}\r\n").unwrap();
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[tokio::test]
async fn health_checks_refuse_a_foreign_host_and_answer_a_probe_without_one() {
    let served = Served::start(echo_server(), GatewayOptions::default(), |_| {}).await;
    let addr = served.base.trim_start_matches("http://").to_string();
    let statuses = tokio::task::spawn_blocking(move || {
        ["/healthz", "/readyz"].map(|path| {
            (
                raw_status(
                    &addr,
                    path,
                    "HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n",
                ),
                raw_status(
                    &addr,
                    path,
                    &format!("HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n"),
                ),
                // An HTTP/1.0 health check (HAProxy's `option httpchk`) sends no `Host`.
                raw_status(&addr, path, "HTTP/1.0\r\n"),
            )
        })
    })
    .await
    .unwrap();
    let [healthz, readyz] = statuses;
    assert_eq!(healthz, (403, 200, 200));
    assert_eq!(readyz.0, 403);
    assert_ne!(readyz.1, 403);
    assert_ne!(readyz.2, 403);
    served.stop().await;
}
