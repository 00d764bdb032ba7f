//! Multi round-trip requests (MRTR, SEP-2322): a 2026-07-28 server asks for input in the middle
//! of a tool call by answering `input_required`; the hub asks the host callbacks and sends the
//! call again with the answers and the server's `requestState`, until the result. Against the
//! test server's `ask` tool (a real rmcp server process over stdio), in the stateless era and,
//! for contrast, the handshake era.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mcpmux::host::{ElicitationReply, ElicitationRequest, Root, SamplingReply, SamplingRequest};
use mcpmux::{CallOptions, Error, Host, Hub, ServerSpec};
use serde_json::{Map, json};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

const ASK: &str = "mcp__t__ask";

fn testserver(era: &str) -> ServerSpec {
    support::stdio_testserver("t", &["--era", era])
}

async fn hub(era: &str, host: Host) -> Hub {
    support::started_with(
        vec![testserver(era)],
        support::hub_options().with_host(host),
    )
    .await
}

/// What the host was asked, in order.
#[derive(Clone, Default)]
struct Asked(Arc<Mutex<Vec<String>>>);

impl Asked {
    fn push(&self, what: String) {
        self.0.lock().unwrap().push(what);
    }

    fn all(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }

    fn count(&self, prefix: &str) -> usize {
        self.all().iter().filter(|a| a.starts_with(prefix)).count()
    }
}

/// A host that answers everything and writes down what it was asked: the elicitor gives the
/// names in `names`, one per question, then "Zed".
fn answering_host(asked: &Asked, names: &[&str], root: &Root) -> Host {
    let names: Arc<Mutex<Vec<String>>> = Arc::new(Mutex::new(
        names.iter().rev().map(|n| n.to_string()).collect(),
    ));
    let (on_elicit, on_sample) = (asked.clone(), asked.clone());
    Host::new()
        .with_roots(vec![root.clone()])
        .with_elicitor(move |request: ElicitationRequest| {
            on_elicit.push(format!("elicit: {}", request.message));
            let name = names.lock().unwrap().pop().unwrap_or_else(|| "Zed".into());
            async move {
                let mut content = Map::new();
                content.insert("name".into(), json!(name));
                ElicitationReply::Accept(content)
            }
        })
        .with_sampler(move |request: SamplingRequest| {
            on_sample.push(format!(
                "sample: {}",
                request.last_user_text().unwrap_or_default()
            ));
            async { Ok(SamplingReply::text("test-model", "hello there")) }
        })
}

#[tokio::test]
async fn input_asked_mid_call_is_answered_by_the_host_and_reaches_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let root = Root::directory(dir.path());
    let asked = Asked::default();
    let hub = hub("stateless", answering_host(&asked, &["Ada", "Bob"], &root)).await;

    let result = hub.call(ASK, json!({"rounds": 2})).await.unwrap();

    // The host was asked what the server asked for, round by round.
    let asked = asked.all();
    assert!(
        asked.contains(&"elicit: Round 1 of 2: what is your name?".to_string()),
        "{asked:?}"
    );
    assert!(
        asked.contains(&"elicit: Round 2 of 2: what is your name?".to_string()),
        "{asked:?}"
    );
    assert!(
        asked.contains(&"sample: Say hello".to_string()),
        "{asked:?}"
    );
    assert_eq!(asked.len(), 3, "{asked:?}");
    // Every answer reached the server (the first round's through the echoed requestState),
    // and the final result arrived.
    assert!(!result.is_error, "{}", result.to_text());
    assert_eq!(
        result.to_text(),
        format!(
            "name: Ada\nreply: hello there (model test-model)\nroots: {}\nname: Bob",
            root.uri
        )
    );
    hub.shutdown().await;
}

#[tokio::test]
async fn a_server_that_keeps_asking_is_stopped_after_sixteen_rounds() {
    let dir = tempfile::tempdir().unwrap();
    let asked = Asked::default();
    let hub = hub(
        "stateless",
        answering_host(&asked, &[], &Root::directory(dir.path())),
    )
    .await;

    let error = hub.call(ASK, json!({"rounds": 100})).await.unwrap_err();

    match &error {
        Error::Protocol {
            server, message, ..
        } => {
            assert_eq!(server, "t");
            assert!(
                message.contains("`ask` still asked for input after 16 rounds"),
                "{message}"
            );
        }
        other => panic!("expected a protocol error, got {other:?}"),
    }
    // Sixteen questions answered, the seventeenth never put to the host.
    assert_eq!(asked.count("elicit: "), 16, "{:?}", asked.all());
    assert_eq!(asked.count("sample: "), 1);
    // The session is fine: the next call goes through.
    let echoed = hub
        .call("mcp__t__echo", json!({"text": "still here"}))
        .await;
    assert_eq!(echoed.unwrap().to_text(), "still here");
    hub.shutdown().await;
}

#[tokio::test]
async fn without_a_host_callback_the_input_is_refused_and_the_call_fails() {
    let hub = hub("stateless", Host::new()).await;

    let error = hub.call(ASK, json!({})).await.unwrap_err();

    assert!(matches!(error, Error::Protocol { .. }), "{error:?}");
    let message = error.to_string();
    assert!(
        message.contains("asked for input this client does not offer")
            && message.contains("is not supported by this client (no host callback is set)"),
        "{message}"
    );
    hub.shutdown().await;
}

/// A host whose user never answers (the elicitor signals `asked_now` and waits forever): the
/// call's deadline and the caller's cancellation must still end the call.
fn silent_host(asked: &Asked, asked_now: &Arc<Notify>) -> Host {
    let (asked, asked_now) = (asked.clone(), asked_now.clone());
    Host::new()
        .with_roots(Vec::<Root>::new())
        .with_sampler(|_request: SamplingRequest| async {
            Ok(SamplingReply::text("test-model", "hi"))
        })
        .with_elicitor(move |request: ElicitationRequest| {
            asked.push(format!("elicit: {}", request.message));
            asked_now.notify_one();
            std::future::pending::<ElicitationReply>()
        })
}

#[tokio::test]
async fn the_call_deadline_covers_the_time_spent_answering() {
    let asked = Asked::default();
    let hub = hub("stateless", silent_host(&asked, &Arc::new(Notify::new()))).await;

    let started = Instant::now();
    let error = hub
        .call_with(
            ASK,
            json!({}),
            CallOptions::default().with_timeout(Duration::from_millis(500)),
        )
        .await
        .unwrap_err();

    assert!(
        matches!(&error, Error::Timeout { what, after, .. }
            if what == "tools/call `ask`" && *after == Duration::from_millis(500)),
        "{error:?}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(asked.count("elicit: "), 1);
    hub.shutdown().await;
}

#[tokio::test]
async fn cancelling_while_the_host_answers_ends_the_call() {
    let asked = Asked::default();
    let asked_now = Arc::new(Notify::new());
    let hub = hub("stateless", silent_host(&asked, &asked_now)).await;
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    // The caller gives up while the user is being asked.
    tokio::spawn(async move {
        asked_now.notified().await;
        trigger.cancel();
    });

    let started = Instant::now();
    let error = hub
        .call_with(ASK, json!({}), CallOptions::default().with_cancel(cancel))
        .await
        .unwrap_err();

    assert!(matches!(error, Error::Cancelled(_)), "{error:?}");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(asked.count("elicit: "), 1);
    hub.shutdown().await;
}

#[tokio::test]
async fn handshake_era_servers_cannot_ask_this_way_and_nothing_changes_for_them() {
    let dir = tempfile::tempdir().unwrap();
    let asked = Asked::default();
    let hub = hub(
        "handshake",
        answering_host(&asked, &["Ada"], &Root::directory(dir.path())),
    )
    .await;

    // rmcp refuses to send input_required to a handshake-era client: the call fails on the
    // server's side and the host is never asked.
    let error = hub.call(ASK, json!({})).await.unwrap_err();

    assert!(matches!(error, Error::Server { .. }), "{error:?}");
    assert!(error.to_string().contains("2026-07-28"), "{error}");
    assert!(asked.all().is_empty(), "{:?}", asked.all());
    hub.shutdown().await;
}
