//! Parked `/mcp` sessions, with raw HTTP over real sockets: a session idle with nothing
//! beyond its handshake has its worker let go (`/metrics` counts it parked) and comes back
//! transparently when next named by a `POST` (a `GET` stream is served from its outbox without
//! bringing it back: `gateway_get_stream`), with a progress-token
//! call's progress, a subscription's updates and an upstream's elicitation all reaching it;
//! a parked session is still its identity's alone, still counts toward the caps, expires
//! after the idle limit, and ends on `DELETE`.

use crate::support;

use std::time::Duration;

use mcpmux_gateway::{GatewayOptions, HttpOptions, SessionLimits};
use serde_json::{Value, json};
use support::*;

/// Sessions parked after `park_after` unused, closed after `idle`, at most `max` (and `max`
/// per identity).
fn parking(http: &mut HttpOptions, park_after: Duration, idle: Duration, max: usize) {
    let mut limits = SessionLimits::default();
    limits.park_after = Some(park_after);
    limits.idle = idle;
    limits.max_sessions = max;
    limits.max_per_client = max;
    http.sessions = limits;
}

const PARK: Duration = Duration::from_millis(150);
const IDLE: Duration = Duration::from_secs(300);

async fn served(max: usize) -> Served {
    Served::start(
        vec![fast_testserver("t", &[])],
        GatewayOptions::default(),
        |http| parking(http, PARK, IDLE, max),
    )
    .await
}

/// Waits as long as several parks would take, then says how many sessions are parked.
async fn parked_after_a_while(base: &str) -> u64 {
    tokio::time::sleep(PARK * 6).await;
    parked(base).await
}

/// A session of `client` that declared `capabilities`, its handshake done: its id.
async fn session_declaring(client: &reqwest::Client, url: &str, capabilities: Value) -> String {
    let opening = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": capabilities,
                   "clientInfo": {"name": "parking", "version": "1"}}});
    let opened = post_by(client, url, &opening, &[]).await;
    assert_eq!(opened.status(), 200);
    let id = opened.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_string();
    let _ = opened.text().await;
    let done = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(
        post_by(client, url, &done, &in_session(&id)).await.status(),
        202
    );
    id
}

fn tools_list(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"})
}

async fn delete(client: &reqwest::Client, url: &str, id: &str) -> u16 {
    client
        .delete(url)
        .header("mcp-session-id", id)
        .header("mcp-protocol-version", "2025-06-18")
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

#[tokio::test]
async fn an_idle_session_is_parked_and_a_post_brings_it_back_transparently() {
    let served = served(10).await;
    let client = reqwest::Client::new();
    let id = open_session(&client, &served.url, &[]).await;
    until_parked(&served.base, 1).await;
    let answer = post_by(&client, &served.url, &tools_list(2), &in_session(&id)).await;
    assert_eq!(answer.status(), 200);
    let body = answer.text().await.unwrap();
    assert!(body.contains("mcp__t__echo"), "{body}");
    // Its worker back: inline answers (JSON) on the restored handler, as before the park.
    let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "mcp__t__echo", "arguments": {"text": "back"}}});
    let answer = post_by(&client, &served.url, &call, &in_session(&id)).await;
    assert_eq!(answer.status(), 200);
    assert!(answer.text().await.unwrap().contains(r#""text":"back""#));
    assert_eq!(metric(&served.base, "mcpmux_gateway_sessions").await, 1.0);
    // Idle again: parked again.
    until_parked(&served.base, 1).await;
    served.stop().await;
}

#[tokio::test]
async fn a_get_stream_on_a_parked_session_is_served_without_bringing_it_back() {
    let served = served(10).await;
    let client = reqwest::Client::new();
    let id = open_session(&client, &served.url, &[]).await;
    until_parked(&served.base, 1).await;
    let stream = listen(&client, &served.url, &id, None).await;
    assert_eq!(stream.status(), 200);
    assert!(
        stream.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    // Its stream is the gateway's (`outbox`), not its worker's: it stays parked.
    assert_eq!(parked(&served.base).await, 1);
    drop(stream);
    // A POST still brings it back.
    let answer = post_by(&client, &served.url, &tools_list(2), &in_session(&id)).await;
    assert_eq!(answer.status(), 200);
    assert_eq!(metric(&served.base, "mcpmux_gateway_sessions").await, 1.0);
    served.stop().await;
}

#[tokio::test]
async fn a_parked_session_is_refused_to_another_identity_and_stays_its_owner_s() {
    let served = served(10).await;
    let (alice, mallory) = (client_from("127.0.0.1"), client_from("127.0.0.2"));
    let id = open_session(&alice, &served.url, &[]).await;
    until_parked(&served.base, 1).await;
    let stolen = post_by(&mallory, &served.url, &tools_list(2), &in_session(&id)).await;
    assert_eq!(stolen.status(), 404);
    assert_eq!(listen(&mallory, &served.url, &id, None).await.status(), 404);
    assert_eq!(delete(&mallory, &served.url, &id).await, 404);
    // Still parked: none of that brought it back.
    assert_eq!(parked(&served.base).await, 1);
    let answer = post_by(&alice, &served.url, &tools_list(3), &in_session(&id)).await;
    assert_eq!(answer.status(), 200);
    served.stop().await;
}

#[tokio::test]
async fn parked_sessions_count_toward_the_cap() {
    let served = served(2).await;
    let client = reqwest::Client::new();
    let first = open_session(&client, &served.url, &[]).await;
    let _second = open_session(&client, &served.url, &[]).await;
    until_parked(&served.base, 2).await;
    let refused = post_by(&client, &served.url, &initialize(), &[]).await;
    assert_eq!(refused.status(), 503);
    assert!(refused.headers().contains_key("retry-after"));
    // One ended: a slot again.
    assert!(matches!(
        delete(&client, &served.url, &first).await,
        200..=299
    ));
    let opened = post_by(&client, &served.url, &initialize(), &[]).await;
    assert_eq!(opened.status(), 200);
    served.stop().await;
}

#[tokio::test]
async fn a_parked_session_expires_after_the_idle_limit() {
    let served = Served::start(
        vec![fast_testserver("t", &[])],
        GatewayOptions::default(),
        |http| {
            parking(
                http,
                Duration::from_millis(50),
                Duration::from_millis(800),
                10,
            )
        },
    )
    .await;
    let client = reqwest::Client::new();
    let id = open_session(&client, &served.url, &[]).await;
    until_parked(&served.base, 1).await;
    let gone = eventually_async(
        Duration::from_secs(10),
        Duration::from_millis(50),
        || async { (metric(&served.base, "mcpmux_gateway_sessions").await == 0.0).then_some(()) },
    )
    .await;
    assert!(gone.is_some(), "the parked session did not expire");
    let answer = post_by(&client, &served.url, &tools_list(2), &in_session(&id)).await;
    assert_eq!(answer.status(), 404);
    served.stop().await;
}

#[tokio::test]
async fn delete_ends_a_parked_session() {
    let served = served(10).await;
    let client = reqwest::Client::new();
    let id = open_session(&client, &served.url, &[]).await;
    until_parked(&served.base, 1).await;
    assert!(matches!(delete(&client, &served.url, &id).await, 200..=299));
    assert_eq!(metric(&served.base, "mcpmux_gateway_sessions").await, 0.0);
    let answer = post_by(&client, &served.url, &tools_list(2), &in_session(&id)).await;
    assert_eq!(answer.status(), 404);
    served.stop().await;
}

#[tokio::test]
async fn a_progress_token_call_on_a_parked_session_gets_its_progress() {
    let served = served(10).await;
    let client = reqwest::Client::new();
    let id = open_session(&client, &served.url, &[]).await;
    until_parked(&served.base, 1).await;
    let call = json!({"jsonrpc": "2.0", "id": 8, "method": "tools/call",
        "params": {"name": "mcp__t__slow", "arguments": {"ms": 300, "steps": 2},
                   "_meta": {"progressToken": "parked"}}});
    let mut answer = post_by(&client, &served.url, &call, &in_session(&id)).await;
    assert_eq!(answer.status(), 200);
    let mut seen = String::new();
    read_until(&mut answer, r#""id":8"#, &mut seen).await;
    let progress = seen.find("notifications/progress").expect(&seen);
    assert!(
        seen[progress..].contains(r#""progressToken":"parked""#),
        "{seen}"
    );
    assert!(progress < seen.find(r#""id":8"#).unwrap(), "{seen}");
    served.stop().await;
}

#[tokio::test]
async fn a_subscription_made_on_a_parked_session_keeps_it_and_its_updates_reach_it() {
    // Hosted: the upstream's resource updates reach the gateway.
    let served = Served::hosted_with(
        vec![fast_testserver("t", &[])],
        GatewayOptions::default(),
        |http| parking(http, PARK, IDLE, 10),
    )
    .await;
    let client = reqwest::Client::new();
    let id = open_session(&client, &served.url, &[]).await;
    until_parked(&served.base, 1).await;
    let subscribe = json!({"jsonrpc": "2.0", "id": 4, "method": "resources/subscribe",
        "params": {"uri": "test://counter"}});
    let answer = post_by(&client, &served.url, &subscribe, &in_session(&id)).await;
    assert_eq!(answer.status(), 200);
    let body = answer.text().await.unwrap();
    assert!(
        body.contains(r#""id":4"#) && !body.contains("error"),
        "{body}"
    );
    // A session holding a subscription keeps its worker.
    assert_eq!(parked_after_a_while(&served.base).await, 0);
    let mut stream = listen(&client, &served.url, &id, None).await;
    assert_eq!(stream.status(), 200);
    let bump = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
        "params": {"name": "mcp__t__bump", "arguments": {}}});
    let bumped = post_by(&client, &served.url, &bump, &in_session(&id)).await;
    assert_eq!(bumped.status(), 200);
    let _ = bumped.text().await;
    let mut seen = String::new();
    read_until(&mut stream, "notifications/resources/updated", &mut seen).await;
    assert!(seen.contains("test://counter"), "{seen}");
    served.stop().await;
}

#[tokio::test]
async fn an_upstream_s_elicitation_reaches_a_parked_session_and_its_answer_comes_back() {
    // A handshake-era upstream: it asks in the middle of its call.
    let served = Served::hosted_with(
        vec![fast_testserver("t", &["--era", "handshake"])],
        GatewayOptions::default(),
        |http| parking(http, PARK, IDLE, 10),
    )
    .await;
    let client = reqwest::Client::new();
    let id = session_declaring(&client, &served.url, json!({"elicitation": {}})).await;
    until_parked(&served.base, 1).await;
    let call = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
        "params": {"name": "mcp__t__ask_client", "arguments": {"what": "elicitation"}}});
    // The call brings the session back; the request it makes of the client comes on the
    // call's own stream.
    let mut answer = post_by(&client, &served.url, &call, &in_session(&id)).await;
    assert_eq!(answer.status(), 200);
    let mut seen = String::new();
    read_until(&mut answer, "elicitation/create", &mut seen).await;
    let asked: Value = seen
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .find(|message| message["method"] == "elicitation/create")
        .expect(&seen);
    let reply = json!({"jsonrpc": "2.0", "id": asked["id"],
        "result": {"action": "accept", "content": {"name": "parked ada"}}});
    let sent = post_by(&client, &served.url, &reply, &in_session(&id)).await;
    assert_eq!(sent.status(), 202);
    let mut seen = String::new();
    read_until(&mut answer, r#""id":9"#, &mut seen).await;
    assert!(seen.contains("name: parked ada"), "{seen}");
    served.stop().await;
}
