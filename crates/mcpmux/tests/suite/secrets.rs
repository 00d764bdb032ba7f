//! Secrets stay where they belong and survive being shared.
//!
//! Redirects: a server's custom headers and tokens never follow a redirect to another origin
//! (the connection fails naming that origin), while a redirect within the server's own origin
//! still works. The servers are the real test server behind a raw redirecting proxy, and a raw
//! listener on another port that records every request reaching it.
//!
//! One token file, many hubs: two processes with two hubs each, every call refreshing the
//! token (its lifetime is under rmcp's refresh margin), against the test server's
//! authorization server, which rotates refresh tokens and revokes the whole login when a spent
//! one comes back. The login survives, and no refresh token was spent twice.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcpmux::auth::HeadlessAuthorizer;
use mcpmux::config::{AuthSpec, OAuthSpec};
use mcpmux::{HubOptions, ServerSpec, ServerState, TransportSpec};
use support::{Break, BreakingProxy};
use support::{RawReply, failed, oauth_options, oauth_spec, oauth_stats};

const STARTUP_TIMEOUT: Duration = Duration::from_secs(20);

/// A raw listener on 127.0.0.1 that records the head of every request it gets and answers
/// 404. Returns its origin and the recorded heads.
async fn recording_server() -> (String, Arc<Mutex<Vec<String>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let recorded = seen.clone();
    let addr = support::raw_http_server(move |request| {
        seen.lock()
            .unwrap()
            .push(String::from_utf8_lossy(request).into_owned());
        RawReply::Answer("HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n".into())
    })
    .await;
    (format!("http://{addr}"), recorded)
}

fn secret_headers() -> BTreeMap<String, String> {
    BTreeMap::from([
        (
            "X-API-Key".to_string(),
            "key-for-the-first-origin".to_string(),
        ),
        (
            "Authorization".to_string(),
            "Bearer token-for-the-first-origin".to_string(),
        ),
    ])
}

async fn cross_origin_redirect_is_refused(transport: fn(String) -> TransportSpec) {
    let (other_origin, seen) = recording_server().await;
    let location: &'static str = Box::leak(format!("{other_origin}/mcp").into_boxed_str());
    let redirector = BreakingProxy::start(&format!("{other_origin}/mcp"), move |_| {
        Break::Redirect(location)
    })
    .await;
    let spec = ServerSpec::new("moved", transport(redirector.url.clone()))
        .with_startup_timeout(STARTUP_TIMEOUT);
    let error = failed(support::settled(spec).await.0);
    let seen = seen.lock().unwrap().clone();
    for request in &seen {
        let request = request.to_lowercase();
        assert!(!request.contains("x-api-key"), "{request}");
        assert!(!request.contains("first-origin"), "{request}");
    }
    assert!(
        seen.is_empty(),
        "nothing may reach the other origin: {seen:?}"
    );
    assert!(error.contains(&other_origin), "{error}");
    assert!(error.contains("another origin"), "{error}");
}

#[tokio::test]
async fn custom_headers_never_follow_a_streamable_http_redirect_to_another_origin() {
    cross_origin_redirect_is_refused(|url| TransportSpec::Http {
        url,
        headers: secret_headers(),
    })
    .await;
}

#[tokio::test]
async fn custom_headers_never_follow_a_legacy_sse_redirect_to_another_origin() {
    cross_origin_redirect_is_refused(|url| TransportSpec::Sse {
        url,
        headers: secret_headers(),
    })
    .await;
}

#[tokio::test]
async fn a_redirect_within_the_servers_origin_is_followed() {
    let server = support::testserver_http(&[]);
    // Requests to /old are sent on to /mcp on the same origin; /mcp is relayed to the server.
    let proxy = BreakingProxy::start(&server.url, |request| {
        if request.lines().next().unwrap_or_default().contains(" /old") {
            Break::Redirect("/mcp")
        } else {
            Break::Relay
        }
    })
    .await;
    let old = proxy.url.replace("/mcp", "/old");
    let spec = ServerSpec::new(
        "moved",
        TransportSpec::Http {
            url: old,
            headers: secret_headers(),
        },
    )
    .with_startup_timeout(STARTUP_TIMEOUT);
    let hub = support::started_with(vec![spec], HubOptions::ephemeral()).await;
    let result = hub
        .call(
            "mcp__moved__echo",
            serde_json::json!({"text": "still here"}),
        )
        .await;
    let state = hub.servers()[0].state.clone();
    hub.shutdown().await;
    let result = result.unwrap_or_else(|e| panic!("{e}; server {state:?}"));
    assert!(
        result.to_text().contains("still here"),
        "{}",
        result.to_text()
    );
}

/// Calls each worker hub makes; every one refreshes the token first.
const CALLS_PER_HUB: usize = 12;
/// Hubs per worker process, each on a thread of its own.
const HUBS_PER_PROCESS: usize = 2;
/// The environment a worker process reads.
const WORKER_URL: &str = "MCPMUX_TEST_WORKER_URL";
const WORKER_STORE: &str = "MCPMUX_TEST_WORKER_STORE";

/// A hub on the tokens in `store` (no authorizer: a lost login cannot be replaced) that calls
/// `echo` `calls` times; panics naming the call that failed and the server's state.
async fn call_repeatedly(url: &str, store: &std::path::Path, who: &str, calls: usize) {
    let hub = support::started_with(vec![oauth_spec(url)], oauth_options(store)).await;
    for call in 0..calls {
        let text = format!("{who} call {call}");
        let result = hub
            .call("mcp__remote__echo", serde_json::json!({ "text": text }))
            .await;
        match result {
            Ok(result) => assert_eq!(result.to_text(), text),
            Err(e) => panic!("{text} failed: {e}; server: {:?}", hub.servers()[0].state),
        }
    }
    hub.shutdown().await;
}

/// The worker process of the two-process test: `HUBS_PER_PROCESS` hubs on threads of their
/// own, all on one token file. Run by that test only.
#[test]
#[ignore = "a worker process that two_processes_refreshing_one_login_keep_it starts"]
fn refresh_worker() {
    let url = std::env::var(WORKER_URL).expect("the worker's server URL");
    let store = std::path::PathBuf::from(std::env::var(WORKER_STORE).expect("the token file"));
    let hubs: Vec<_> = (0..HUBS_PER_PROCESS)
        .map(|hub| {
            let (url, store) = (url.clone(), store.clone());
            std::thread::spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                let who = format!("process {} hub {hub}", std::process::id());
                runtime.block_on(call_repeatedly(&url, &store, &who, CALLS_PER_HUB));
            })
        })
        .collect();
    for hub in hubs {
        hub.join().unwrap();
    }
}

#[tokio::test]
async fn two_processes_refreshing_one_login_keep_it() {
    // Tokens live 5 s, inside rmcp's 30 s refresh margin: every request refreshes first.
    let server = support::testserver_http(&["--oauth", "--token-ttl", "5"]);
    let dir = tempfile::Builder::new()
        .prefix("mcpmux-shared-login-")
        .tempdir()
        .unwrap();
    let store = dir.path().join("tokens.json");
    let hub = support::started_with(
        vec![oauth_spec(&server.url)],
        oauth_options(&store).with_authorizer(Arc::new(HeadlessAuthorizer::new().unwrap())),
    )
    .await;
    hub.call(
        "mcp__remote__echo",
        serde_json::json!({"text": "logged in"}),
    )
    .await
    .unwrap();
    hub.shutdown().await;

    let workers: Vec<_> = (0..2)
        .map(|_| {
            tokio::process::Command::new(std::env::current_exe().unwrap())
                // The worker's name in this test binary (`tests/suite/main.rs`).
                .args([
                    "--exact",
                    "secrets::refresh_worker",
                    "--ignored",
                    "--nocapture",
                ])
                .env(WORKER_URL, &server.url)
                .env(WORKER_STORE, &store)
                .kill_on_drop(true)
                .output()
        })
        .collect();
    for worker in workers {
        let output = tokio::time::timeout(Duration::from_secs(120), worker)
            .await
            .expect("a worker finished within 2 minutes")
            .unwrap();
        assert!(
            output.status.success(),
            "a worker lost the login: {}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }

    let stats = oauth_stats(&server).await;
    assert_eq!(stats["refresh_reuse"], 0, "{stats}");
    assert_eq!(stats["authorizations"], 1, "{stats}");
    let hubs = (2 * HUBS_PER_PROCESS * CALLS_PER_HUB) as u64;
    assert!(
        stats["refreshes"].as_u64().unwrap() >= hubs,
        "every call refreshed: {stats}"
    );
    // The login still works for the next run.
    call_repeatedly(&server.url, &store, "after", 1).await;
}

#[tokio::test]
async fn a_pinned_issuer_keeps_machine_credentials_from_any_other_authorization_server() {
    let server = support::testserver_http(&["--oauth", "--oauth-client", "robot:s3cret"]);
    let issuer = server.url.trim_end_matches("/mcp").to_string();
    let dir = tempfile::tempdir().unwrap();
    let robot = |pin: &str| {
        oauth_spec(&server.url).with_auth(AuthSpec::oauth(
            OAuthSpec::client_credentials("robot", "s3cret").with_issuer(pin),
        ))
    };

    let hub = support::started_with(
        vec![robot("https://auth.example")],
        oauth_options(&dir.path().join("wrong.json")),
    )
    .await;
    let state = hub.servers()[0].state.clone();
    hub.shutdown().await;
    let message = match state {
        ServerState::Failed { error, .. } | ServerState::NeedsAuth { message: error, .. } => error,
        other => panic!("a server on another issuer than the pinned one connected: {other:?}"),
    };
    assert!(message.contains("oauth.issuer"), "{message}");
    assert!(message.contains("https://auth.example"), "{message}");
    assert!(message.contains(&issuer), "{message}");
    let stats = oauth_stats(&server).await;
    assert_eq!(
        stats["client_credentials"], 0,
        "the secret was sent: {stats}"
    );

    let hub = support::started_with(
        vec![robot(&issuer)],
        oauth_options(&dir.path().join("right.json")),
    )
    .await;
    let result = hub
        .call("mcp__remote__echo", serde_json::json!({"text": "pinned"}))
        .await;
    hub.shutdown().await;
    assert_eq!(result.unwrap().to_text(), "pinned");
}
