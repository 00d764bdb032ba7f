//! A call made for someone else (`CallOptions::with_relay`, `with_approver`): what its server
//! asks in the middle of it (elicitation, sampling, roots) is passed to that call's relay, as
//! MCP's JSON, and never to another's; calls of two parties in flight on a stdio server leave
//! a request that cannot be tied to one of them, which is refused; and a policy `ask` is
//! decided by the call's own approver. Against the test server's `ask_client` (handshake-era
//! requests over stdio) and `ask` (2026-07-28 `input_required`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use mcpmux::config::PolicyRules;
use mcpmux::host::{HostError, Relay, Relayed};
use mcpmux::policy::{Approval, ApprovalRequest};
use mcpmux::{CallOptions, Host, Hub};
use serde_json::{Value, json};

/// A relay for `party` that answers as `name` and writes down the methods it was asked.
struct Client {
    party: u64,
    name: &'static str,
    asked: Mutex<Vec<String>>,
}

impl Client {
    fn new(party: u64, name: &'static str) -> Arc<Self> {
        Arc::new(Client {
            party,
            name,
            asked: Mutex::default(),
        })
    }

    fn asked(&self) -> Vec<String> {
        self.asked.lock().unwrap().clone()
    }
}

impl Relay for Client {
    fn party(&self) -> u64 {
        self.party
    }

    fn relay(&self, request: Relayed) -> BoxFuture<'_, Result<Value, HostError>> {
        self.asked.lock().unwrap().push(request.method.clone());
        let name = self.name;
        Box::pin(async move {
            match request.method.as_str() {
                "elicitation/create" => {
                    assert!(request.params["requestedSchema"].is_object(), "{request:?}");
                    Ok(json!({"action": "accept", "content": {"name": name}}))
                }
                "sampling/createMessage" => Ok(json!({
                    "role": "assistant", "model": format!("{name}-model"),
                    "content": {"type": "text", "text": format!("hello from {name}")}
                })),
                "roots/list" => Ok(json!({"roots": [{"uri": format!("file:///{name}")}]})),
                other => Err(HostError::new(-32601, format!("{other} not offered"))),
            }
        })
    }
}

fn relayed(client: &Arc<Client>) -> CallOptions {
    let relay: Arc<dyn Relay> = client.clone();
    CallOptions::default().with_relay(relay)
}

async fn hub(args: &[&str], host: Host, policy: PolicyRules) -> Hub {
    support::started_with(
        vec![support::fast_testserver("t", args)],
        support::hub_options().with_host(host).with_policy(policy),
    )
    .await
}

/// Calls `ask_client`; with `together` above one, every call of the group stays in flight until
/// all its requests are answered: a request is tied to a call by the calls in flight when the
/// hub handles it, and one call of the group answered early would leave the others' requests
/// unambiguous.
async fn ask_client(hub: &Hub, what: &str, together: u64, options: CallOptions) -> String {
    let result = hub
        .call_with(
            "mcp__t__ask_client",
            json!({"what": what, "together": together, "linger": together > 1}),
            options,
        )
        .await
        .unwrap();
    result.to_text()
}

#[tokio::test]
async fn what_a_server_asks_during_a_call_goes_to_that_call_s_relay() {
    let hub = hub(
        &["--era", "handshake"],
        Host::relaying(),
        PolicyRules::default(),
    )
    .await;
    let ada = Client::new(1, "ada");
    assert_eq!(
        ask_client(&hub, "elicitation", 1, relayed(&ada)).await,
        "name: ada"
    );
    assert_eq!(
        ask_client(&hub, "sampling", 1, relayed(&ada)).await,
        "reply: hello from ada (model ada-model)"
    );
    assert_eq!(
        ask_client(&hub, "roots", 1, relayed(&ada)).await,
        "roots: file:///ada"
    );
    assert_eq!(
        ada.asked(),
        ["elicitation/create", "sampling/createMessage", "roots/list"]
    );
    // The harness's own call: the relaying host has no callback, and refuses.
    let own = ask_client(&hub, "elicitation", 1, CallOptions::default()).await;
    assert!(own.starts_with("refused: -32601"), "{own}");
    hub.shutdown().await;
}

#[tokio::test]
async fn calls_of_two_parties_on_stdio_cannot_be_told_apart_and_one_party_s_can() {
    let hub = hub(
        &["--era", "handshake"],
        Host::relaying(),
        PolicyRules::default(),
    )
    .await;
    let (ada, grace) = (Client::new(1, "ada"), Client::new(2, "grace"));
    let (first, second) = tokio::join!(
        ask_client(&hub, "elicitation", 2, relayed(&ada)),
        ask_client(&hub, "elicitation", 2, relayed(&grace)),
    );
    for text in [&first, &second] {
        assert!(text.contains("cannot be tied to one tool call"), "{text}");
    }
    assert!(ada.asked().is_empty() && grace.asked().is_empty());
    // Two calls of one party: that party's.
    let (first, second) = tokio::join!(
        ask_client(&hub, "elicitation", 2, relayed(&ada)),
        ask_client(&hub, "elicitation", 2, relayed(&ada)),
    );
    assert_eq!(
        (first.as_str(), second.as_str()),
        ("name: ada", "name: ada")
    );
    hub.shutdown().await;
}

#[tokio::test]
async fn a_2026_server_s_input_required_goes_to_the_relay_of_the_call_it_answers() {
    let hub = hub(
        &["--era", "stateless"],
        Host::relaying(),
        PolicyRules::default(),
    )
    .await;
    let (ada, grace) = (Client::new(1, "ada"), Client::new(2, "grace"));
    let (first, second) = tokio::join!(
        hub.call_with("mcp__t__ask", json!({}), relayed(&ada)),
        hub.call_with("mcp__t__ask", json!({}), relayed(&grace)),
    );
    assert_eq!(
        first.unwrap().to_text(),
        "name: ada\nreply: hello from ada (model ada-model)\nroots: file:///ada"
    );
    assert_eq!(
        second.unwrap().to_text(),
        "name: grace\nreply: hello from grace (model grace-model)\nroots: file:///grace"
    );
    hub.shutdown().await;
}

#[tokio::test]
async fn a_policy_ask_is_decided_by_the_call_s_own_approver() {
    let mut policy = PolicyRules::default();
    policy.ask.push("mcp__t__echo".into());
    // The hub's approver (the default) refuses.
    let hub = hub(&[], Host::new(), policy).await;
    let echo = json!({"text": "may I"});
    let refused = hub.call("mcp__t__echo", echo.clone()).await;
    assert!(refused.is_err(), "{refused:?}");
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let saw = seen.clone();
    let approver = move |request: ApprovalRequest| {
        saw.lock().unwrap().push(request.tool.name.clone());
        async { Approval::Approve }
    };
    let options = CallOptions::default().with_approver(Arc::new(approver));
    let result = hub.call_with("mcp__t__echo", echo, options).await.unwrap();
    assert_eq!(result.to_text(), "may I");
    assert_eq!(*seen.lock().unwrap(), ["mcp__t__echo"]);
    hub.shutdown().await;
}
