//! A `/mcp` session's `GET` stream, served from the gateway's own outbox rather than rmcp's
//! worker, with raw HTTP over real sockets: a session whose only holding is its open stream is
//! parked, and still hears a list change on it while parked; a `POST` brings it back and the
//! same stream goes on, in order, without a repeat or a loss; a reconnecting `GET` with
//! `Last-Event-ID` gets what came after; a change told while the session was parked with no
//! stream open comes on the stream it opens later; a second plain `GET` is refused (409), and
//! another identity's (404); `DELETE` and expiry end the stream; a log of the session's call
//! and what its live worker sends on its standalone stream (a search's `list_changed`) come on
//! it too.

use crate::support;

use std::time::Duration;

use mcpmux_gateway::{GatewayOptions, HttpOptions, SessionLimits};
use serde_json::{Value, json};
use support::*;

const PARK: Duration = Duration::from_millis(150);
const CHANGED: &str = "notifications/tools/list_changed";

fn parking(http: &mut HttpOptions, park_after: Duration, idle: Duration) {
    let mut limits = SessionLimits::default();
    limits.park_after = Some(park_after);
    limits.idle = idle;
    http.sessions = limits;
}

async fn served() -> Served {
    Served::start(
        vec![fast_testserver("t", &[])],
        GatewayOptions::default(),
        |http| parking(http, PARK, Duration::from_secs(300)),
    )
    .await
}

/// The tools change upstream, by the hub itself: no session is named, none is restored.
async fn change_tools(served: &Served) {
    served
        .hub
        .call("mcp__t__change_tools", json!({}))
        .await
        .unwrap();
}

/// One SSE event: its id and its message, if it carries one.
#[derive(Debug)]
struct Event {
    id: Option<String>,
    message: Option<Value>,
}

/// A `GET` stream and what was read of it so far.
struct Reader {
    stream: reqwest::Response,
    text: String,
}

fn reader(stream: reqwest::Response) -> Reader {
    Reader {
        stream,
        text: String::new(),
    }
}

/// Reads `reader` until `n` events with a message came since it opened (10 s at most): those.
async fn messages(reader: &mut Reader, n: usize) -> Vec<Event> {
    let Reader { stream, text } = reader;
    loop {
        let events: Vec<Event> = text
            .split("\n\n")
            .filter(|block| text.contains(&format!("{block}\n\n")))
            .map(|block| Event {
                id: block
                    .lines()
                    .find_map(|line| line.strip_prefix("id:"))
                    .map(|id| id.trim().to_string()),
                message: block
                    .lines()
                    .find_map(|line| line.strip_prefix("data:"))
                    .and_then(|data| serde_json::from_str(data.trim()).ok()),
            })
            .filter(|event| event.message.is_some())
            .collect();
        if events.len() >= n {
            return events;
        }
        let chunk = tokio::time::timeout(Duration::from_secs(10), stream.chunk())
            .await
            .unwrap_or_else(|_| panic!("{n} messages did not come: {text}"))
            .unwrap()
            .unwrap_or_else(|| panic!("the stream ended before {n} messages: {text}"));
        text.push_str(&String::from_utf8_lossy(&chunk));
    }
}

fn method(event: &Event) -> &str {
    event.message.as_ref().unwrap()["method"]
        .as_str()
        .unwrap_or("")
}

/// Whether `stream` ends within 10 s (keep-alive comments aside).
async fn ends(stream: &mut reqwest::Response) -> bool {
    tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            match stream.chunk().await {
                Ok(Some(_)) => {}
                Ok(None) | Err(_) => return true,
            }
        }
    })
    .await
    .unwrap_or(false)
}

#[tokio::test]
async fn a_session_holding_its_get_stream_is_parked_and_hears_a_list_change_meanwhile() {
    let served = served().await;
    let client = reqwest::Client::new();
    let id = open_session(&client, &served.url, &[]).await;
    let stream = listen(&client, &served.url, &id, None).await;
    assert_eq!(stream.status(), 200);
    let mut stream = reader(stream);
    until_parked(&served.base, 1).await;
    change_tools(&served).await;
    let heard = messages(&mut stream, 1).await;
    assert_eq!(method(&heard[0]), CHANGED, "{heard:?}");
    assert_eq!(heard[0].id.as_deref(), Some("1"));
    // Told while parked: nothing brought it back.
    assert_eq!(parked(&served.base).await, 1);
    served.stop().await;
}

#[tokio::test]
async fn a_post_brings_it_back_and_the_same_stream_goes_on_in_order() {
    let served = served().await;
    let client = reqwest::Client::new();
    let id = open_session(&client, &served.url, &[]).await;
    let mut stream = reader(listen(&client, &served.url, &id, None).await);
    until_parked(&served.base, 1).await;
    change_tools(&served).await;
    assert_eq!(messages(&mut stream, 1).await.len(), 1);
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let answer = post_by(&client, &served.url, &list, &in_session(&id)).await;
    assert_eq!(answer.status(), 200);
    assert!(answer.text().await.unwrap().contains("mcp__t__echo"));
    // Told live now, through the restored worker's session: on the same stream, next.
    change_tools(&served).await;
    let heard = messages(&mut stream, 2).await;
    let ids: Vec<_> = heard
        .iter()
        .map(|event| event.id.clone().unwrap())
        .collect();
    assert_eq!(ids, ["1", "2"], "{heard:?}");
    assert!(
        heard.iter().all(|event| method(event) == CHANGED),
        "{heard:?}"
    );
    // Parked again, its stream still open; a third change still comes, and only once.
    until_parked(&served.base, 1).await;
    change_tools(&served).await;
    let heard = messages(&mut stream, 3).await;
    assert_eq!(heard.len(), 3, "{heard:?}");
    assert_eq!(heard[2].id.as_deref(), Some("3"));
    served.stop().await;
}

#[tokio::test]
async fn a_get_with_last_event_id_gets_what_came_after() {
    let served = served().await;
    let client = reqwest::Client::new();
    let id = open_session(&client, &served.url, &[]).await;
    let mut stream = reader(listen(&client, &served.url, &id, None).await);
    until_parked(&served.base, 1).await;
    // One at a time: two changes in a burst that undo each other are no change.
    change_tools(&served).await;
    assert_eq!(messages(&mut stream, 1).await.len(), 1);
    change_tools(&served).await;
    assert_eq!(messages(&mut stream, 2).await.len(), 2);
    drop(stream);
    change_tools(&served).await;
    let resumed = listen(&client, &served.url, &id, Some("1")).await;
    assert_eq!(resumed.status(), 200);
    let mut resumed = reader(resumed);
    let heard = messages(&mut resumed, 2).await;
    let ids: Vec<_> = heard
        .iter()
        .map(|event| event.id.clone().unwrap())
        .collect();
    assert_eq!(ids, ["2", "3"], "{heard:?}");
    // Resumed from the outbox: still parked.
    assert_eq!(parked(&served.base).await, 1);
    served.stop().await;
}

#[tokio::test]
async fn a_change_told_while_parked_without_a_stream_comes_on_the_one_opened_later() {
    let served = served().await;
    let client = reqwest::Client::new();
    let id = open_session(&client, &served.url, &[]).await;
    until_parked(&served.base, 1).await;
    change_tools(&served).await;
    let stream = listen(&client, &served.url, &id, None).await;
    assert_eq!(stream.status(), 200);
    let heard = messages(&mut reader(stream), 1).await;
    assert_eq!(method(&heard[0]), CHANGED, "{heard:?}");
    served.stop().await;
}

#[tokio::test]
async fn a_second_get_is_refused_and_another_identity_s_is_not_found() {
    let served = served().await;
    let (alice, mallory) = (client_from("127.0.0.1"), client_from("127.0.0.2"));
    let id = open_session(&alice, &served.url, &[]).await;
    let first = listen(&alice, &served.url, &id, None).await;
    assert_eq!(first.status(), 200);
    let mut first = reader(first);
    assert_eq!(listen(&alice, &served.url, &id, None).await.status(), 409);
    until_parked(&served.base, 1).await;
    assert_eq!(listen(&alice, &served.url, &id, None).await.status(), 409);
    assert_eq!(listen(&mallory, &served.url, &id, None).await.status(), 404);
    assert_eq!(
        listen(&mallory, &served.url, &id, Some("0")).await.status(),
        404
    );
    // The first is still the one told.
    change_tools(&served).await;
    assert_eq!(method(&messages(&mut first, 1).await[0]), CHANGED);
    // Closed: a new one may open.
    drop(first);
    let again = eventually_async(
        Duration::from_secs(10),
        Duration::from_millis(25),
        || async {
            let stream = listen(&alice, &served.url, &id, None).await;
            (stream.status() == 200).then_some(stream)
        },
    )
    .await;
    assert!(again.is_some(), "the stream was not let go");
    served.stop().await;
}

#[tokio::test]
async fn delete_ends_the_stream_of_a_parked_session() {
    let served = served().await;
    let client = reqwest::Client::new();
    let id = open_session(&client, &served.url, &[]).await;
    let mut stream = listen(&client, &served.url, &id, None).await;
    until_parked(&served.base, 1).await;
    let deleted = client
        .delete(&served.url)
        .header("mcp-session-id", &id)
        .header("mcp-protocol-version", "2025-06-18")
        .send()
        .await
        .unwrap();
    assert!(deleted.status().is_success());
    assert!(ends(&mut stream).await, "the stream outlived its session");
    served.stop().await;
}

#[tokio::test]
async fn expiry_ends_the_stream_of_a_parked_session() {
    let served = Served::start(
        vec![fast_testserver("t", &[])],
        GatewayOptions::default(),
        |http| parking(http, Duration::from_millis(50), Duration::from_millis(800)),
    )
    .await;
    let client = reqwest::Client::new();
    let id = open_session(&client, &served.url, &[]).await;
    let mut stream = listen(&client, &served.url, &id, None).await;
    assert_eq!(stream.status(), 200);
    assert!(ends(&mut stream).await, "the stream outlived its session");
    assert_eq!(metric(&served.base, "mcpmux_gateway_sessions").await, 0.0);
    served.stop().await;
}

#[tokio::test]
async fn a_server_log_of_its_call_comes_on_its_get_stream_and_the_stream_parks_after() {
    // Hosted: the upstream's logs reach the gateway; a handshake-era upstream logs mid-call.
    let served = Served::hosted_with(
        vec![fast_testserver("t", &["--era", "handshake"])],
        GatewayOptions::default(),
        |http| parking(http, PARK, Duration::from_secs(300)),
    )
    .await;
    let client = reqwest::Client::new();
    let id = open_session(&client, &served.url, &[]).await;
    let mut stream = reader(listen(&client, &served.url, &id, None).await);
    until_parked(&served.base, 1).await;
    let log = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "mcp__t__log", "arguments": {"level": "warning", "text": "careful"}}});
    let answer = post_by(&client, &served.url, &log, &in_session(&id)).await;
    assert_eq!(answer.status(), 200);
    assert!(answer.text().await.unwrap().contains("logged"));
    let heard = messages(&mut stream, 1).await;
    assert_eq!(method(&heard[0]), "notifications/message", "{heard:?}");
    assert_eq!(
        heard[0].message.as_ref().unwrap()["params"]["data"],
        "careful"
    );
    // Nothing beyond its handshake held: parked again, its stream open.
    until_parked(&served.base, 1).await;
    change_tools(&served).await;
    let heard = messages(&mut stream, 2).await;
    assert_eq!(method(&heard[1]), CHANGED, "{heard:?}");
    served.stop().await;
}

#[tokio::test]
async fn what_the_session_s_worker_sends_on_its_standalone_stream_comes_on_the_get_stream() {
    // A search that finds tools tells its own session through its peer (the worker's common
    // channel, pumped into the outbox), not through the watchers.
    let options =
        GatewayOptions::default().with_search(Some(mcpmux_gateway::SearchOptions::default()));
    let served = Served::start(
        vec![fast_testserver("t", &["--many-tools", "172"])],
        options,
        |http| parking(http, PARK, Duration::from_secs(300)),
    )
    .await;
    let client = reqwest::Client::new();
    let id = open_session(&client, &served.url, &[]).await;
    let mut stream = reader(listen(&client, &served.url, &id, None).await);
    let search = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
        "params": {"name": "search_tools", "arguments": {"query": "calendar event", "limit": 5}}});
    let answer = post_by(&client, &served.url, &search, &in_session(&id)).await;
    assert_eq!(answer.status(), 200);
    assert!(answer.text().await.unwrap().contains("calendar"));
    let heard = messages(&mut stream, 1).await;
    assert_eq!(method(&heard[0]), CHANGED, "{heard:?}");
    assert_eq!(heard[0].id.as_deref(), Some("1"));
    served.stop().await;
}
