//! A 2026-07-28 client of the gateway (raw HTTP, in this process) in front of a 2026-07-28
//! server (the test server's conformance tools and prompt over streamable HTTP, in
//! pass-through mode): the capabilities the client declares in each request are what the
//! server is told; the server's round reaches the client whole, under the server's keys, and
//! its answers go back; a prompt asked for in rounds; answers sent with a request that is new
//! to the gateway reach the server.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use mcpmux::ServerSpec;
use mcpmux_gateway::{GatewayOptions, WaitingLimits};
use serde_json::{Value, json};
use support::*;

async fn served() -> (ServerProcess, Served) {
    served_with(GatewayOptions::default()).await
}

async fn served_with(options: GatewayOptions) -> (ServerProcess, Served) {
    let upstream = testserver_http(&["--conformance"]);
    let served = Served::start(
        vec![ServerSpec::http("c", &upstream.url)],
        options.with_passthrough(true),
        |_| {},
    )
    .await;
    (upstream, served)
}

/// One 2026-07-28 request: its `_meta` declares `capabilities`; the HTTP status and the
/// JSON-RPC answer (read from the SSE stream when it comes as one).
async fn request(url: &str, method: &str, params: Value, capabilities: Value) -> (u16, Value) {
    request_from("127.0.0.1", url, method, params, capabilities).await
}

/// [`request`] sent from the address `from` (each a client of its own).
async fn request_from(
    from: &str,
    url: &str,
    method: &str,
    mut params: Value,
    capabilities: Value,
) -> (u16, Value) {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "rounds-test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    });
    let name = params
        .get("name")
        .or_else(|| params.get("uri"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
    let answer = reqwest::Client::builder()
        .local_address(from.parse::<std::net::IpAddr>().unwrap())
        .build()
        .unwrap()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method)
        .header("mcp-name", &name)
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    let status = answer.status().as_u16();
    let text = answer.text().await.unwrap();
    let parsed = serde_json::from_str(&text).ok().or_else(|| {
        text.lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
            .find(|message| message["id"] == 7)
    });
    (
        status,
        parsed.unwrap_or_else(|| panic!("no answer in {status}: {text}")),
    )
}

/// The keys of an `input_required` result's requests, each with its method.
fn asked(result: &Value) -> Vec<(String, String)> {
    assert_eq!(result["resultType"], "input_required", "{result}");
    result["inputRequests"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(key, r)| (key.clone(), r["method"].as_str().unwrap().to_string()))
        .collect()
}

fn pairs(p: &[(&str, &str)]) -> Vec<(String, String)> {
    p.iter()
        .map(|(k, m)| (k.to_string(), m.to_string()))
        .collect()
}

#[tokio::test]
async fn what_a_2026_client_declares_in_its_request_is_what_the_server_asks_for() {
    let (_upstream, served) = served().await;
    let call = json!({"name": "test_input_required_result_capabilities", "arguments": {}});
    let (_, sampling_only) = request(
        &served.url,
        "tools/call",
        call.clone(),
        json!({"sampling": {}}),
    )
    .await;
    assert_eq!(
        asked(&sampling_only["result"]),
        pairs(&[("greeting", "sampling/createMessage")])
    );
    let (_, two) = request(
        &served.url,
        "tools/call",
        call,
        json!({"elicitation": {}, "roots": {}}),
    )
    .await;
    assert_eq!(
        asked(&two["result"]),
        pairs(&[
            ("client_roots", "roots/list"),
            ("user_name", "elicitation/create")
        ])
    );
    served.stop().await;
}

#[tokio::test]
async fn a_capability_the_client_did_not_declare_is_refused_by_the_server_as_it_said() {
    let (_upstream, served) = served().await;
    let call = json!({"name": "test_missing_capability", "arguments": {}});
    let (status, refused) = request(&served.url, "tools/call", call.clone(), json!({})).await;
    assert_eq!(refused["error"]["code"], -32021, "{refused}");
    assert!(
        refused["error"]["data"]["requiredCapabilities"]["sampling"].is_object(),
        "{refused}"
    );
    assert_eq!(status, 400);
    let (_, ran) = request(&served.url, "tools/call", call, json!({"sampling": {}})).await;
    assert_eq!(
        ran["result"]["content"][0]["text"], "the client declared sampling",
        "{ran}"
    );
    served.stop().await;
}

#[tokio::test]
async fn the_server_s_round_reaches_the_client_whole_under_its_keys_and_the_answers_go_back() {
    let (_upstream, served) = served().await;
    let all = json!({"elicitation": {}, "sampling": {}, "roots": {}});
    let call = json!({"name": "test_input_required_result_multiple_inputs", "arguments": {}});
    let (_, first) = request(&served.url, "tools/call", call.clone(), all.clone()).await;
    let round = &first["result"];
    assert_eq!(
        asked(round),
        pairs(&[
            ("client_roots", "roots/list"),
            ("greeting", "sampling/createMessage"),
            ("user_name", "elicitation/create"),
        ])
    );
    let state = round["requestState"].as_str().unwrap();
    let mut answered = call;
    answered["requestState"] = json!(state);
    answered["inputResponses"] = json!({
        "user_name": {"action": "accept", "content": {"name": "Ada"}},
        "greeting": {"role": "assistant", "model": "m", "content": {"type": "text", "text": "hi"}},
        "client_roots": {"roots": [{"uri": "file:///ada"}]},
    });
    let (_, done) = request(&served.url, "tools/call", answered, all).await;
    assert_eq!(
        done["result"]["content"][0]["text"], "name: Ada; greeting: hi; roots: file:///ada",
        "{done}"
    );
    served.stop().await;
}

#[tokio::test]
async fn a_prompt_whose_server_asks_for_input_is_asked_of_the_client_in_rounds() {
    let (_upstream, served) = served().await;
    let elicitation = json!({"elicitation": {}});
    let get = json!({"name": "test_input_required_result_prompt"});
    let (_, first) = request(&served.url, "prompts/get", get.clone(), elicitation.clone()).await;
    assert_eq!(
        asked(&first["result"]),
        pairs(&[("user_context", "elicitation/create")])
    );
    let mut answered = get;
    answered["requestState"] = first["result"]["requestState"].clone();
    answered["inputResponses"] =
        json!({"user_context": {"action": "accept", "content": {"context": "notes"}}});
    let (_, done) = request(&served.url, "prompts/get", answered, elicitation).await;
    assert_eq!(
        done["result"]["messages"][0]["content"]["text"], "Use this context: notes",
        "{done}"
    );
    served.stop().await;
}

#[tokio::test]
async fn answers_sent_with_a_request_new_to_the_gateway_reach_the_server() {
    // A round whose server kept no state is retried without one: to the gateway, a new call.
    let (_upstream, served) = served().await;
    let call = json!({
        "name": "test_input_required_result_elicitation",
        "arguments": {},
        "inputResponses": {
            "user_name": {"action": "accept", "content": {"name": "Alice"}},
            "unknown_extra_key": {"action": "accept", "content": {"foo": "bar"}},
        }
    });
    let (_, done) = request(&served.url, "tools/call", call, json!({"elicitation": {}})).await;
    assert_eq!(
        done["result"]["content"][0]["text"], "Hello, Alice!",
        "{done}"
    );
    served.stop().await;
}

#[tokio::test]
async fn calls_waiting_for_their_client_are_capped_per_client_and_resumed_by_that_client_only() {
    let mut waiting = WaitingLimits::default();
    waiting.per_client = 1;
    let (_upstream, served) = served_with(GatewayOptions::default().with_waiting(waiting)).await;
    let elicitation = json!({"elicitation": {}});
    let call = json!({"name": "test_input_required_result_elicitation", "arguments": {}});
    let (_, first) = request(&served.url, "tools/call", call.clone(), elicitation.clone()).await;
    assert_eq!(
        asked(&first["result"]),
        pairs(&[("user_name", "elicitation/create")])
    );
    // A second call of the same client waiting at once: refused, and said why.
    let (_, refused) = request(&served.url, "tools/call", call.clone(), elicitation.clone()).await;
    assert_eq!(refused["error"]["code"], -32000, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("waiting for their clients"),
        "{refused}"
    );
    // Another client has its own share.
    let (_, other) = request_from(
        "127.0.0.2",
        &served.url,
        "tools/call",
        call.clone(),
        elicitation.clone(),
    )
    .await;
    assert_eq!(
        asked(&other["result"]),
        pairs(&[("user_name", "elicitation/create")])
    );
    // The first call's state is unknown to another client, and still its own client's.
    let mut answered = call;
    answered["requestState"] = first["result"]["requestState"].clone();
    answered["inputResponses"] =
        json!({"user_name": {"action": "accept", "content": {"name": "Ada"}}});
    let (_, stolen) = request_from(
        "127.0.0.3",
        &served.url,
        "tools/call",
        answered.clone(),
        elicitation.clone(),
    )
    .await;
    assert_eq!(stolen["error"]["code"], -32602, "{stolen}");
    let (_, done) = request(&served.url, "tools/call", answered, elicitation).await;
    assert!(
        done["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("Ada"),
        "{done}"
    );
    served.stop().await;
}
