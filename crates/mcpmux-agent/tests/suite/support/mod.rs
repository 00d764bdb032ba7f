//! Shared by the agent's integration tests: where the real MCP servers are (the workspace's
//! test support crate), a hub on the test server, a provider pointed at a scripted model endpoint with
//! short retries, and a run that records its events.
#![allow(dead_code, unused_imports, clippy::unwrap_used, clippy::expect_used)]

pub use mcpmux_test_support::*;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcpmux::{Hub, HubOptions, ServerSpec};
use mcpmux_agent::provider::{Anthropic, OpenAi, Provider, ProviderConfig, RetryPolicy};
use mcpmux_agent::{Agent, AgentEvent, AgentOptions, RunOutcome, Transcript};
use mcpmux_testmodel::{ScriptedModel, Step, Wire};
use tokio_util::sync::CancellationToken;

/// Both wire formats, streamed and not.
pub const MODES: [(Wire, bool); 4] = [
    (Wire::OpenAi, true),
    (Wire::OpenAi, false),
    (Wire::Anthropic, true),
    (Wire::Anthropic, false),
];

/// The test server over stdio as `t`, quick to give up.
pub fn testserver_spec(args: &[&str]) -> ServerSpec {
    ServerSpec::stdio(
        "t",
        testserver().to_string_lossy(),
        args.iter().map(|a| a.to_string()),
    )
    .with_call_timeout(Duration::from_secs(10))
    .with_startup_timeout(Duration::from_secs(20))
}

/// An in-memory hub on `specs` with `options`, once every server settled.
pub async fn hub_with(specs: Vec<ServerSpec>, options: HubOptions) -> Hub {
    let hub = Hub::start(
        specs,
        options.with_shutdown_grace(Duration::from_millis(200)),
    )
    .unwrap();
    hub.wait_ready().await.unwrap();
    hub
}

/// A hub on the test server.
pub async fn hub() -> Hub {
    hub_with(vec![testserver_spec(&[])], HubOptions::ephemeral()).await
}

/// Retries that wait milliseconds, not seconds; a `retry-after` up to 5 s is honoured.
pub fn quick_retries() -> RetryPolicy {
    RetryPolicy::new(2, Duration::from_millis(20), Duration::from_secs(5))
}

/// A provider of `model`'s wire format at its endpoint.
pub fn provider(model: &ScriptedModel, stream: bool) -> Arc<dyn Provider> {
    let config = ProviderConfig::new("test-model", model.base_url())
        .with_api_key("sk-test")
        .with_stream(stream)
        .with_retry(quick_retries())
        .with_idle_timeout(Duration::from_secs(10));
    match model.wire() {
        Wire::OpenAi => Arc::new(OpenAi::new(config.with_strict(true)).unwrap()),
        Wire::Anthropic => Arc::new(Anthropic::new(config).unwrap()),
    }
}

/// A scripted model of `wire` and an agent over `hub` talking to it.
pub async fn agent(
    hub: &Hub,
    wire: Wire,
    stream: bool,
    steps: Vec<Step>,
    options: AgentOptions,
) -> (ScriptedModel, Agent) {
    let model = ScriptedModel::start(wire, steps).await.unwrap();
    let agent = Agent::new(hub.clone(), provider(&model, stream), options);
    (model, agent)
}

/// Runs `prompt` on `transcript`, recording every event.
pub async fn run(
    agent: &Agent,
    transcript: &mut Transcript,
    prompt: Option<&str>,
) -> (RunOutcome, Vec<AgentEvent>) {
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = {
        let events = events.clone();
        move |event: AgentEvent| events.lock().unwrap().push(event)
    };
    let outcome = agent
        .run_with(transcript, prompt, &sink, &CancellationToken::new())
        .await;
    let events = events.lock().unwrap().clone();
    (outcome, events)
}

/// The text of every tool result the request carried, in order, with its error flag where
/// the wire has one: `role: "tool"` messages (OpenAI: none) or `tool_result` blocks
/// (Anthropic: `is_error`).
pub fn tool_results(body: &serde_json::Value) -> Vec<(String, Option<bool>)> {
    let mut out = Vec::new();
    for message in body["messages"].as_array().into_iter().flatten() {
        if message["role"] == "tool" {
            let text = message["content"].as_str().unwrap_or_default().to_string();
            out.push((text, None));
        }
        for block in message["content"].as_array().into_iter().flatten() {
            if block["type"] == "tool_result" {
                out.push((
                    block["content"].as_str().unwrap_or_default().to_string(),
                    Some(block["is_error"].as_bool().unwrap_or(false)),
                ));
            }
        }
    }
    out
}

/// The tool names a request offered.
pub fn offered(body: &serde_json::Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| {
            t["name"]
                .as_str()
                .or_else(|| t["function"]["name"].as_str())
                .map(str::to_string)
        })
        .collect()
}
