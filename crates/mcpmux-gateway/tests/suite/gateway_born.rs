//! `/mcp` sessions born parked (the handshake answered without rmcp's worker: `handshake`),
//! with raw HTTP over real sockets. Parking after 300 s here: a session `/metrics` counts
//! parked within the test never had a worker (one made is let go only after 300 s unused), and
//! one that stops being counted parked was given one. A session that only did its handshake
//! and holds its `GET` stream never has a worker, and still hears a list change and a log of
//! its call on that stream; its first call restores one and returns the right result; a client
//! that declared elicitation, sampling and roots is still asked (the restored worker replays
//! its capabilities); the caps, the handshake deadline and the owner hold for it; its
//! `initialize` answer is the one rmcp's worker gives, byte for byte (parking off: a worker
//! answers), an unsupported protocol version's too.

use crate::support;

use std::time::Duration;

use mcpmux_gateway::{GatewayOptions, HttpOptions, SessionLimits};
use serde_json::{Value, json};
use support::*;

/// Sessions parked only after 300 s unused (`None`: never), at most `max` per identity, with
/// `handshake` to finish theirs.
fn limits(http: &mut HttpOptions, park: bool, max: usize, handshake: Duration) {
    let mut limits = SessionLimits::default();
    limits.park_after = park.then_some(Duration::from_secs(300));
    limits.max_sessions = 100;
    limits.max_per_client = max;
    limits.handshake = handshake;
    http.sessions = limits;
}

/// A gateway in front of a handshake-era test server whose logs and requests reach the
/// clients.
async fn served(park: bool, max: usize, handshake: Duration) -> Served {
    Served::hosted_with(
        vec![fast_testserver("t", &["--era", "handshake"])],
        GatewayOptions::default(),
        |http| limits(http, park, max, handshake),
    )
    .await
}

fn call(id: u64, tool: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": tool, "arguments": arguments}})
}

/// The messages of an SSE text (or of one JSON answer).
fn messages(text: &str) -> Vec<Value> {
    if let Ok(one) = serde_json::from_str::<Value>(text) {
        return vec![one];
    }
    text.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str(data.trim()).ok())
        .collect()
}

#[tokio::test]
async fn a_session_holding_its_get_stream_never_had_a_worker_and_hears_changes_and_logs() {
    let served = served(true, 10, Duration::from_secs(10)).await;
    let client = reqwest::Client::new();
    let id = open_session(&client, &served.url, &[]).await;
    assert_eq!(parked(&served.base).await, 1, "a worker was made");
    let mut stream = listen(&client, &served.url, &id, None).await;
    assert_eq!(stream.status(), 200);
    served
        .hub
        .call("mcp__t__change_tools", json!({}))
        .await
        .unwrap();
    let mut read = String::new();
    read_until(&mut stream, "notifications/tools/list_changed", &mut read).await;
    assert_eq!(parked(&served.base).await, 1, "the change made a worker");
    // Its first call makes one, and is answered as on a live session (inline, as JSON).
    let logged = call(
        3,
        "mcp__t__log",
        json!({"level": "warning", "text": "careful"}),
    );
    let answer = post_by(&client, &served.url, &logged, &in_session(&id)).await;
    assert_eq!(answer.status(), 200);
    assert_eq!(answer.headers()["content-type"], "application/json");
    let answer = messages(&answer.text().await.unwrap());
    let result = answer.iter().find(|m| m["id"] == 3).expect("no answer");
    assert_eq!(
        result["result"]["content"][0]["text"], "logged",
        "{answer:?}"
    );
    assert_eq!(parked(&served.base).await, 0);
    // The call's log on the same stream.
    read_until(&mut stream, "careful", &mut read).await;
    let log = messages(&read)
        .into_iter()
        .find(|m| m["method"] == "notifications/message")
        .expect(&read);
    assert_eq!(log["params"]["data"], "careful");
    served.stop().await;
}

#[tokio::test]
async fn a_client_that_declared_what_it_answers_is_still_asked_after_being_born_parked() {
    let served = served(true, 10, Duration::from_secs(10)).await;
    let client = reqwest::Client::new();
    let capabilities = json!({"elicitation": {}, "sampling": {}, "roots": {}});
    let id = open_session_declaring(&client, &served.url, capabilities).await;
    assert_eq!(parked(&served.base).await, 1, "a worker was made");
    let asks = [
        (
            "elicitation",
            "elicitation/create",
            json!({"action": "accept", "content": {"name": "born ada"}}),
            "name: born ada",
        ),
        (
            "sampling",
            "sampling/createMessage",
            json!({"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"}),
            "reply: hi (model m)",
        ),
        (
            "roots",
            "roots/list",
            json!({"roots": [{"uri": "file:///born"}]}),
            "roots: file:///born",
        ),
    ];
    for (n, (what, method, reply, said)) in asks.into_iter().enumerate() {
        let n = 10 + n as u64;
        let asking = call(n, "mcp__t__ask_client", json!({"what": what}));
        let mut answer = post_by(&client, &served.url, &asking, &in_session(&id)).await;
        assert_eq!(answer.status(), 200);
        let mut read = String::new();
        read_until(&mut answer, method, &mut read).await;
        let asked = messages(&read)
            .into_iter()
            .find(|m| m["method"] == method)
            .expect(&read);
        let reply = json!({"jsonrpc": "2.0", "id": asked["id"], "result": reply});
        let sent = post_by(&client, &served.url, &reply, &in_session(&id)).await;
        assert_eq!(sent.status(), 202);
        read_until(&mut answer, &format!(r#""id":{n}"#), &mut read).await;
        assert!(read.contains(said), "{what}: {read}");
    }
    served.stop().await;
}

#[tokio::test]
async fn caps_the_handshake_deadline_and_the_owner_hold_for_sessions_born_parked() {
    let served = served(true, 2, Duration::from_millis(300)).await;
    let client = client_from("127.0.0.1");
    let first = open_session(&client, &served.url, &[]).await;
    let _second = open_session(&client, &served.url, &[]).await;
    assert_eq!(parked(&served.base).await, 2, "a worker was made");
    // Past the identity's cap: 503, and when to come back.
    let refused = post_by(&client, &served.url, &initialize(), &[]).await;
    assert_eq!(refused.status(), 503);
    assert!(refused.headers().contains_key("retry-after"));
    // Another identity does not find it, nor brings it back.
    let other = client_from("127.0.0.2");
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let theirs = post_by(&other, &served.url, &list, &in_session(&first)).await;
    assert_eq!(theirs.status(), 404);
    assert_eq!(
        listen(&other, &served.url, &first, None).await.status(),
        404
    );
    let done = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let theirs = post_by(&other, &served.url, &done, &in_session(&first)).await;
    assert_eq!(theirs.status(), 404);
    assert_eq!(parked(&served.base).await, 2);
    // Its own identity's request is answered.
    let mine = post_by(&client, &served.url, &list, &in_session(&first)).await;
    assert_eq!(mine.status(), 200);
    let _ = mine.text().await;
    // A session that never finishes its handshake is closed at the deadline, even when a
    // request brought it a worker meanwhile.
    let third = post_by(&other, &served.url, &initialize(), &[]).await;
    assert_eq!(third.status(), 200);
    let half_open = third.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_string();
    let _ = third.text().await;
    let before = post_by(&other, &served.url, &list, &in_session(&half_open)).await;
    assert_eq!(before.status(), 200);
    let _ = before.text().await;
    let closed = eventually_async(Duration::from_secs(5), Duration::from_millis(50), || {
        let (other, url, half_open, list) = (&other, &served.url, &half_open, &list);
        async move {
            let status = post_by(other, url, list, &in_session(half_open))
                .await
                .status();
            (status == 404).then_some(())
        }
    })
    .await;
    assert!(closed.is_some(), "the half-open session was not closed");
    served.stop().await;
}

/// An `initialize` answer with what varies from one to the next (the session id) set aside:
/// its status, the headers rmcp sets, whether a session id came, and its body.
async fn answer_of(url: &str, initialize: &Value) -> (u16, Vec<String>, bool, String) {
    let answer = post(url, initialize, &[("mcp-protocol-version", "2025-06-18")]).await;
    let status = answer.status().as_u16();
    let headers = ["content-type", "cache-control", "x-accel-buffering"]
        .iter()
        .map(|name| {
            let value = answer.headers().get(*name);
            format!(
                "{name}: {:?}",
                value.map(|v| v.to_str().unwrap().to_string())
            )
        })
        .collect();
    let session = answer.headers().contains_key("mcp-session-id");
    (status, headers, session, answer.text().await.unwrap())
}

#[tokio::test]
async fn the_handshake_is_answered_as_a_worker_answers_it_an_unsupported_version_too() {
    let born = served(true, 10, Duration::from_secs(10)).await;
    let made = served(false, 10, Duration::from_secs(10)).await;
    let mut unsupported = initialize();
    unsupported["params"]["protocolVersion"] = json!("1999-01-01");
    let mut declaring = initialize();
    declaring["params"]["capabilities"] =
        json!({"elicitation": {}, "roots": {"listChanged": true}});
    for initialize in [initialize(), declaring] {
        let mut initialize = initialize;
        initialize["id"] = json!(7);
        let answer = answer_of(&born.url, &initialize).await;
        let worker = answer_of(&made.url, &initialize).await;
        assert_eq!(answer, worker);
        assert_eq!(answer.0, 200);
        assert!(answer.2, "no session id");
        assert!(
            answer
                .3
                .starts_with("data: \nid: 0\nretry: 3000\n\ndata: {"),
            "{}",
            answer.3
        );
    }
    // An unsupported version: answered with one supported, as a worker answers; named in the
    // header too, refused as rmcp refuses it.
    for (header, status) in [
        (&[][..], 200),
        (&[("mcp-protocol-version", "1999-01-01")][..], 400),
    ] {
        let answer = post(&born.url, &unsupported, header).await;
        let worker = post(&made.url, &unsupported, header).await;
        assert_eq!(answer.status(), status);
        assert_eq!(worker.status(), status);
        let (answer, worker) = (answer.text().await.unwrap(), worker.text().await.unwrap());
        assert_eq!(answer, worker);
        assert!(!answer.contains(r#""protocolVersion":"1999"#), "{answer}");
    }
    let answer = post(&born.url, &unsupported, &[])
        .await
        .text()
        .await
        .unwrap();
    assert!(answer.contains(r#""protocolVersion":"20"#), "{answer}");
    // Three born (the refused one is not), none made.
    assert_eq!(parked(&born.base).await, 4);
    assert_eq!(parked(&made.base).await, 0);
    born.stop().await;
    made.stop().await;
}
