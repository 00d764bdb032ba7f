//! Secrets stay where they belong: a server's custom headers and tokens never follow a
//! redirect to another origin (the connection fails naming the server and that origin), while
//! a redirect within the server's own origin still works. The servers are the real test
//! server behind a raw redirecting proxy, and a raw listener on another port that records
//! every request reaching it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcpmux::{Hub, HubOptions, ServerSpec, ServerState, TransportSpec};
use support::{Break, BreakingProxy};
use tokio::io::AsyncWriteExt;

const STARTUP_TIMEOUT: Duration = Duration::from_secs(20);

/// A raw listener on 127.0.0.1 that records the head of every request it gets and answers
/// 404. Returns its origin and the recorded heads.
async fn recording_server() -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let recorded = seen.clone();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let seen = seen.clone();
            tokio::spawn(async move {
                let mut buffer = Vec::new();
                while let Some(request) = support::read_http_request(&mut socket, &mut buffer).await
                {
                    seen.lock()
                        .unwrap()
                        .push(String::from_utf8_lossy(&request).into_owned());
                    let answer = "HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n";
                    if socket.write_all(answer.as_bytes()).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    (origin, recorded)
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

/// Starts a hub on `spec`, waits for it to settle and returns the server's state.
async fn settled(spec: ServerSpec) -> ServerState {
    let name = spec.name.clone();
    let hub = Hub::start(vec![spec], HubOptions::ephemeral()).unwrap();
    hub.wait_ready().await.unwrap();
    let state = hub
        .servers()
        .into_iter()
        .find(|s| s.name == name)
        .unwrap()
        .state;
    hub.shutdown().await;
    state
}

/// The error of a server that did not connect (its row in `servers()` names it).
fn error_of(state: ServerState) -> String {
    match state {
        ServerState::Failed { error, .. } => error,
        other => panic!("expected the server to fail, got {other:?}"),
    }
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
    let error = error_of(settled(spec).await);
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
    let hub = Hub::start(vec![spec], HubOptions::ephemeral()).unwrap();
    hub.wait_ready().await.unwrap();
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
