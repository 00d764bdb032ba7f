//! Rounds of a 2026-07-28 server's `input_required` beyond a plain tool call: a prompt filled
//! in (`prompts/get`) after the host answered what the server asked; a call made for someone
//! else, whose relay gets the server's round whole under the server's own keys and whose
//! declared capabilities are what the server is told; answers the caller already holds sent
//! with the first request. Against the test server's conformance tools and prompt (a real
//! rmcp server over streamable HTTP).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use mcpmux::host::{ElicitationReply, ElicitationRequest, HostError, Relay, Relayed, RelayedRound};
use mcpmux::{CallOptions, Host, Hub, ServerSpec};
use serde_json::{Map, Value, json};

async fn hub(url: &str, host: Host) -> Hub {
    support::started_with(
        vec![ServerSpec::http("c", url)],
        support::hub_options().with_host(host),
    )
    .await
}

/// A relay that declares `capabilities`, answers every request, and writes down each round
/// it was given: its keys and methods.
struct Client {
    capabilities: Value,
    rounds: Mutex<Vec<Vec<(String, String)>>>,
}

impl Client {
    fn new(capabilities: Value) -> Arc<Self> {
        Arc::new(Client {
            capabilities,
            rounds: Mutex::default(),
        })
    }

    fn rounds(&self) -> Vec<Vec<(String, String)>> {
        self.rounds.lock().unwrap().clone()
    }

    fn options(self: &Arc<Self>) -> CallOptions {
        let relay: Arc<dyn Relay> = self.clone();
        CallOptions::default().with_relay(relay)
    }
}

fn answer(method: &str) -> Result<Value, HostError> {
    match method {
        "elicitation/create" => Ok(json!({"action": "accept", "content": {"name": "Ada"}})),
        "sampling/createMessage" => Ok(json!({
            "role": "assistant", "model": "m",
            "content": {"type": "text", "text": "hello"}
        })),
        "roots/list" => Ok(json!({"roots": [{"uri": "file:///ada"}]})),
        other => Err(HostError::new(-32601, format!("{other} not offered"))),
    }
}

impl Relay for Client {
    fn party(&self) -> u64 {
        1
    }

    fn relay(&self, request: Relayed) -> BoxFuture<'_, Result<Value, HostError>> {
        Box::pin(async move { answer(&request.method) })
    }

    fn capabilities(&self) -> Option<Value> {
        Some(self.capabilities.clone())
    }

    fn relay_round(
        &self,
        round: RelayedRound,
    ) -> BoxFuture<'_, Result<Map<String, Value>, HostError>> {
        Box::pin(async move {
            self.rounds.lock().unwrap().push(
                round
                    .requests
                    .iter()
                    .map(|(key, r)| (key.clone(), r.method.clone()))
                    .collect(),
            );
            round
                .requests
                .into_iter()
                .map(|(key, r)| answer(&r.method).map(|a| (key, a)))
                .collect()
        })
    }
}

#[tokio::test]
async fn a_prompt_whose_server_asks_for_input_is_filled_in_after_the_host_answers() {
    let server = support::testserver_http(&["--conformance"]);
    let asked = Arc::new(Mutex::new(Vec::new()));
    let seen = asked.clone();
    let host = Host::new().with_elicitor(move |request: ElicitationRequest| {
        seen.lock().unwrap().push(request.message.clone());
        async {
            let mut content = Map::new();
            content.insert("context".into(), json!("the release notes"));
            ElicitationReply::Accept(content)
        }
    });
    let hub = hub(&server.url, host).await;
    let filled = hub
        .get_prompt("c", "test_input_required_result_prompt", Map::new())
        .await
        .unwrap();
    let text = serde_json::to_value(&filled.messages).unwrap();
    assert_eq!(
        text[0]["content"]["text"], "Use this context: the release notes",
        "{text}"
    );
    assert_eq!(
        *asked.lock().unwrap(),
        ["What context should the prompt use?"]
    );
    hub.shutdown().await;
}

#[tokio::test]
async fn a_prompt_made_for_someone_else_passes_the_server_s_round_to_its_relay() {
    let server = support::testserver_http(&["--conformance"]);
    let hub = hub(&server.url, Host::relaying()).await;
    let client = Client::new(json!({"elicitation": {}}));
    hub.get_prompt_with(
        "c",
        "test_input_required_result_prompt",
        Map::new(),
        client.options(),
    )
    .await
    .unwrap();
    assert_eq!(
        client.rounds(),
        [vec![(
            "user_context".to_string(),
            "elicitation/create".to_string()
        )]]
    );
    hub.shutdown().await;
}

#[tokio::test]
async fn a_relay_gets_the_server_s_round_whole_under_the_server_s_keys() {
    let server = support::testserver_http(&["--conformance"]);
    let hub = hub(&server.url, Host::relaying()).await;
    let client = Client::new(json!({"elicitation": {}, "sampling": {}, "roots": {}}));
    let result = hub
        .call_with(
            "mcp__c__test_input_required_result_multiple_inputs",
            json!({}),
            client.options(),
        )
        .await
        .unwrap();
    assert_eq!(
        result.to_text(),
        "name: Ada; greeting: hello; roots: file:///ada"
    );
    let pairs = |p: &[(&str, &str)]| -> Vec<(String, String)> {
        p.iter()
            .map(|(k, m)| (k.to_string(), m.to_string()))
            .collect()
    };
    assert_eq!(
        client.rounds(),
        [pairs(&[
            ("client_roots", "roots/list"),
            ("greeting", "sampling/createMessage"),
            ("user_name", "elicitation/create"),
        ])],
        "one round, the server's keys"
    );
    hub.shutdown().await;
}

#[tokio::test]
async fn the_server_is_told_the_capabilities_the_relay_declares_not_the_hub_s() {
    let server = support::testserver_http(&["--conformance"]);
    // The hub itself could answer all three (it relays them): the server is told less.
    let hub = hub(&server.url, Host::relaying()).await;
    let sampling_only = Client::new(json!({"sampling": {}}));
    let result = hub
        .call_with(
            "mcp__c__test_input_required_result_capabilities",
            json!({}),
            sampling_only.options(),
        )
        .await
        .unwrap();
    assert_eq!(result.to_text(), "answered: greeting");
    assert_eq!(
        sampling_only.rounds(),
        [vec![(
            "greeting".to_string(),
            "sampling/createMessage".to_string()
        )]]
    );

    // Without sampling, the server refuses what needs it, naming the capability.
    let nothing = Client::new(json!({}));
    let refused = hub
        .call_with(
            "mcp__c__test_missing_capability",
            json!({}),
            nothing.options(),
        )
        .await
        .unwrap_err();
    match refused {
        mcpmux::Error::MissingCapability { required, .. } => {
            assert!(
                required.unwrap()["sampling"].is_object(),
                "the server's requiredCapabilities are kept"
            );
        }
        other => panic!("{other:?}"),
    }
    // Without a relay, the hub's own: it declares sampling.
    let own = hub
        .call_with(
            "mcp__c__test_missing_capability",
            json!({}),
            CallOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(own.to_text(), "the client declared sampling");
    hub.shutdown().await;
}

#[tokio::test]
async fn answers_the_caller_already_holds_go_with_the_first_request() {
    let server = support::testserver_http(&["--conformance"]);
    let hub = hub(&server.url, Host::relaying()).await;
    let client = Client::new(json!({"elicitation": {}}));
    let mut given = Map::new();
    given.insert(
        "user_name".into(),
        json!({"action": "accept", "content": {"name": "Grace"}}),
    );
    given.insert("unasked".into(), json!({"action": "accept", "content": {}}));
    let result = hub
        .call_with(
            "mcp__c__test_input_required_result_elicitation",
            json!({}),
            client.options().with_input_responses(given),
        )
        .await
        .unwrap();
    assert_eq!(result.to_text(), "Hello, Grace!");
    assert!(client.rounds().is_empty(), "nothing was asked");
    hub.shutdown().await;
}
