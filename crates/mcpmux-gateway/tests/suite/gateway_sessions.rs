//! `/mcp` sessions at the gateway, in this process, over real sockets: a session is bound to
//! the identity that made it (another presenting its id gets 404, and cannot close it);
//! sessions are capped overall and per identity (503 with `Retry-After`, while a client
//! within its share goes on); a session that never finishes its handshake, or sits idle, is
//! closed; a flood of sessions is bounded while a healthy client is answered throughout.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::time::Duration;

use mcpmux_gateway::{GatewayOptions, HttpOptions, SessionLimits};
use serde_json::{Value, json};
use support::*;

async fn served(http: impl FnOnce(&mut HttpOptions)) -> Served {
    Served::start(
        vec![fast_testserver("t", &[])],
        GatewayOptions::default(),
        http,
    )
    .await
}

/// Limits with the handshake and idle deadlines given, caps as given.
fn limits(max: usize, per_client: usize, handshake: Duration, idle: Duration) -> SessionLimits {
    let mut limits = SessionLimits::default();
    limits.max_sessions = max;
    limits.max_per_client = per_client;
    limits.handshake = handshake;
    limits.idle = idle;
    limits
}

/// A `POST /mcp` of `body` by `client`, in session `session` if given.
async fn send(
    client: &reqwest::Client,
    url: &str,
    body: &Value,
    session: Option<&str>,
) -> reqwest::Response {
    match session {
        Some(session) => {
            let headers = [
                ("mcp-session-id", session),
                ("mcp-protocol-version", "2025-06-18"),
            ];
            post_by(client, url, body, &headers).await
        }
        None => post_by(client, url, body, &[]).await,
    }
}

/// `initialize` by `client`: the answer.
async fn open(client: &reqwest::Client, url: &str) -> reqwest::Response {
    send(client, url, &initialize(), None).await
}

/// A session of `client`'s with its handshake finished: its id.
async fn session_of(client: &reqwest::Client, url: &str) -> String {
    open_session(client, url, &[]).await
}

fn tools_list() -> Value {
    json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
}

/// The status of a `tools/list` in `session`, its body read.
async fn list_status(client: &reqwest::Client, url: &str, session: &str) -> u16 {
    let answer = send(client, url, &tools_list(), Some(session)).await;
    let status = answer.status().as_u16();
    let _ = answer.text().await;
    status
}

#[track_caller]
fn assert_full(answer: &reqwest::Response) {
    assert_eq!(answer.status(), 503);
    let retry: u64 = answer.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(retry >= 1, "Retry-After: {retry}");
}

#[tokio::test]
async fn a_session_id_presented_by_another_identity_is_unknown_to_it() {
    let served = served(|_| {}).await;
    let (alice, mallory) = (client_from("127.0.0.1"), client_from("127.0.0.2"));
    let id = session_of(&alice, &served.url).await;
    assert_eq!(list_status(&mallory, &served.url, &id).await, 404);
    // Nor can it listen on the session's stream, or close it.
    let listened = mallory
        .get(&served.url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &id)
        .header("mcp-protocol-version", "2025-06-18")
        .send()
        .await
        .unwrap();
    assert_eq!(listened.status(), 404);
    let closed = mallory
        .delete(&served.url)
        .header("mcp-session-id", &id)
        .header("mcp-protocol-version", "2025-06-18")
        .send()
        .await
        .unwrap();
    assert_eq!(closed.status(), 404);
    // The session is still its owner's.
    assert_eq!(list_status(&alice, &served.url, &id).await, 200);
    let closed = alice
        .delete(&served.url)
        .header("mcp-session-id", &id)
        .header("mcp-protocol-version", "2025-06-18")
        .send()
        .await
        .unwrap();
    assert_eq!(closed.status(), 204);
    assert_eq!(list_status(&alice, &served.url, &id).await, 404);
    served.stop().await;
}

#[tokio::test]
async fn sessions_past_a_cap_get_503_with_retry_after_and_a_client_within_its_share_goes_on() {
    let served = served(|http| {
        http.sessions = limits(3, 2, Duration::from_secs(30), Duration::from_secs(300));
    })
    .await;
    let (a, b, c) = (
        client_from("127.0.0.1"),
        client_from("127.0.0.2"),
        client_from("127.0.0.3"),
    );
    let first = session_of(&a, &served.url).await;
    let _second = session_of(&a, &served.url).await;
    let refused = open(&a, &served.url).await;
    assert_full(&refused);
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error"]["code"], -32000, "{body}");
    // Another identity has its own share, until the whole is taken.
    let _third = session_of(&b, &served.url).await;
    assert_full(&open(&c, &served.url).await);
    // The sessions held are served throughout; closing one frees a slot.
    assert_eq!(list_status(&a, &served.url, &first).await, 200);
    let closed = a
        .delete(&served.url)
        .header("mcp-session-id", &first)
        .header("mcp-protocol-version", "2025-06-18")
        .send()
        .await
        .unwrap();
    assert_eq!(closed.status(), 204);
    let _fourth = session_of(&c, &served.url).await;
    served.stop().await;
}

#[tokio::test]
async fn a_session_without_notifications_initialized_is_closed_at_the_handshake_deadline() {
    let served = served(|http| {
        http.sessions = limits(10, 10, Duration::from_millis(300), Duration::from_secs(300));
    })
    .await;
    let client = client_from("127.0.0.1");
    let answer = open(&client, &served.url).await;
    let half_open = answer.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_string();
    let _ = answer.text().await;
    let finished = session_of(&client, &served.url).await;
    let closed = eventually_async(
        Duration::from_secs(5),
        Duration::from_millis(50),
        || async { (list_status(&client, &served.url, &half_open).await == 404).then_some(()) },
    )
    .await;
    assert!(closed.is_some(), "the half-open session was not closed");
    assert_eq!(list_status(&client, &served.url, &finished).await, 200);
    served.stop().await;
}

#[tokio::test]
async fn an_idle_session_is_closed_after_the_idle_timeout() {
    let served = served(|http| {
        http.sessions = limits(10, 10, Duration::from_secs(30), Duration::from_millis(400));
    })
    .await;
    let client = client_from("127.0.0.1");
    let id = session_of(&client, &served.url).await;
    let metrics = format!("{}/metrics", served.base);
    let closed = eventually_async(
        Duration::from_secs(5),
        Duration::from_millis(50),
        || async {
            let text = client.get(&metrics).send().await.ok()?.text().await.ok()?;
            text.lines()
                .any(|line| line.starts_with("mcpmux_gateway_sessions ") && line.ends_with(" 0"))
                .then_some(())
        },
    )
    .await;
    assert!(closed.is_some(), "the idle session was not closed");
    assert_eq!(list_status(&client, &served.url, &id).await, 404);
    served.stop().await;
}

#[tokio::test]
async fn a_session_flood_is_bounded_and_a_healthy_client_is_answered_throughout() {
    let served = served(|http| {
        http.sessions = limits(40, 20, Duration::from_millis(500), Duration::from_secs(300));
    })
    .await;
    let healthy = client_from("127.0.0.1");
    let mine = session_of(&healthy, &served.url).await;
    let flood = {
        let url = served.url.clone();
        tokio::spawn(async move {
            let flooder = client_from("127.0.0.9");
            let (mut opened, mut refused) = (0, 0);
            for _ in 0..300 {
                let answer = open(&flooder, &url).await;
                match answer.status().as_u16() {
                    200 => opened += 1,
                    503 => refused += 1,
                    other => panic!("a flood's initialize got {other}"),
                }
                let _ = answer.text().await;
            }
            (opened, refused)
        })
    };
    while !flood.is_finished() {
        assert_eq!(list_status(&healthy, &served.url, &mine).await, 200);
    }
    let (opened, refused) = flood.await.unwrap();
    // At most its share at once; the rest refused, or let in as the unfinished expired.
    assert!(refused > 0, "opened {opened}, refused {refused}");
    assert!(opened >= 20, "opened {opened}, refused {refused}");
    // A new client still gets a session of its own.
    let _ = session_of(&client_from("127.0.0.2"), &served.url).await;
    served.stop().await;
}

#[tokio::test]
async fn the_handshake_deadline_runs_from_the_initialize_answer_not_from_its_request() {
    // `initialize` waits for startup (a server that takes 1.5 s to start): longer than the
    // handshake deadline, which must not run out before the client could finish.
    let served = Served::start(
        vec![fast_testserver("t", &["--startup-delay-ms", "1500"])],
        GatewayOptions::default(),
        |http| {
            http.sessions = limits(10, 10, Duration::from_millis(500), Duration::from_secs(300));
        },
    )
    .await;
    let client = client_from("127.0.0.1");
    let id = session_of(&client, &served.url).await;
    assert_eq!(list_status(&client, &served.url, &id).await, 200);
    served.stop().await;
}
