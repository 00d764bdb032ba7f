//! The script and the server, wire-independent: order of steps, records, ids, delays,
//! concurrency and shutdown.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::Duration;

use common::{post_anthropic, post_openai};
use mcpmux_testmodel::{ScriptedModel, Step, Wire};
use serde_json::{Value, json};

fn hello() -> Value {
    json!({"model": "m", "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}]})
}

#[tokio::test]
async fn steps_are_used_in_order_and_remaining_counts_down() {
    let model = ScriptedModel::start(Wire::OpenAi, vec![Step::text("one"), Step::text("two")])
        .await
        .unwrap();
    assert_eq!(model.remaining(), 2);
    let first: Value = post_openai(&model.base_url(), &hello())
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(model.remaining(), 1);
    let second: Value = post_openai(&model.base_url(), &hello())
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(first["choices"][0]["message"]["content"], "one");
    assert_eq!(second["choices"][0]["message"]["content"], "two");
    assert_eq!(model.remaining(), 0);
}

#[tokio::test]
async fn every_request_is_recorded_in_order_with_its_headers_and_body() {
    let model = ScriptedModel::start(Wire::Anthropic, vec![Step::text("a"), Step::text("b")])
        .await
        .unwrap();
    let mut second = hello();
    second["messages"][0]["content"] = json!("second");
    post_anthropic(&model.base_url(), &hello()).await;
    post_anthropic(&model.base_url(), &second).await;
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].path, "/v1/messages");
    assert_eq!(requests[0].header("Anthropic-Version"), Some("2023-06-01"));
    assert_eq!(requests[0].header("x-api-key"), Some("sk-ant-test"));
    assert_eq!(requests[1].body["messages"][0]["content"], "second");
    assert!(requests[1].tools().is_empty());
}

#[tokio::test]
async fn the_default_usage_is_nonzero() {
    let model = ScriptedModel::start(Wire::OpenAi, vec![Step::text("hi")])
        .await
        .unwrap();
    let body: Value = post_openai(&model.base_url(), &hello())
        .await
        .json()
        .await
        .unwrap();
    assert!(body["usage"]["prompt_tokens"].as_u64().unwrap() > 0);
    assert!(body["usage"]["completion_tokens"].as_u64().unwrap() > 0);
}

#[tokio::test]
async fn generated_ids_are_unique_across_servers() {
    let calls = || Step::tool_calls([("a", "{}"), ("b", "{}")]);
    let one = ScriptedModel::start(Wire::OpenAi, vec![calls()])
        .await
        .unwrap();
    let two = ScriptedModel::start(Wire::OpenAi, vec![calls()])
        .await
        .unwrap();
    post_openai(&one.base_url(), &hello()).await;
    post_openai(&two.base_url(), &hello()).await;
    let mut ids = one.issued_tool_call_ids();
    ids.extend(two.issued_tool_call_ids());
    assert_eq!(ids.len(), 4);
    assert!(ids.iter().all(|id| id.starts_with("call_")));
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 4);
}

#[tokio::test]
async fn a_delayed_step_lets_a_client_timeout_fire() {
    let model = ScriptedModel::start(
        Wire::OpenAi,
        vec![Step::text("late").with_delay(Duration::from_millis(500))],
    )
    .await
    .unwrap();
    let outcome = reqwest::Client::new()
        .post(format!("{}/chat/completions", model.base_url()))
        .timeout(Duration::from_millis(100))
        .json(&hello())
        .send()
        .await;
    assert!(outcome.unwrap_err().is_timeout());
}

#[tokio::test]
async fn concurrent_requests_each_take_exactly_one_step() {
    let steps = (0..8).map(|i| Step::text(format!("answer {i}"))).collect();
    let model = ScriptedModel::start(Wire::OpenAi, steps).await.unwrap();
    let base = model.base_url();
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let base = base.clone();
        tasks.push(tokio::spawn(async move {
            let body: Value = post_openai(&base, &hello()).await.json().await.unwrap();
            body["choices"][0]["message"]["content"]
                .as_str()
                .unwrap()
                .to_owned()
        }));
    }
    let mut answers = Vec::new();
    for task in tasks {
        answers.push(task.await.unwrap());
    }
    answers.sort();
    let expected: Vec<String> = (0..8).map(|i| format!("answer {i}")).collect();
    assert_eq!(answers, expected);
    assert_eq!(model.remaining(), 0);
    assert!(model.violations().is_empty());
}

#[tokio::test]
async fn a_dropped_model_stops_listening() {
    let model = ScriptedModel::start(Wire::OpenAi, vec![]).await.unwrap();
    let base = model.base_url();
    drop(model);
    tokio::time::sleep(Duration::from_millis(50)).await;
    let outcome = reqwest::Client::new()
        .post(format!("{base}/chat/completions"))
        .json(&hello())
        .send()
        .await;
    assert!(outcome.unwrap_err().is_connect());
}

#[tokio::test]
async fn a_get_is_recorded_as_a_violation() {
    let model = ScriptedModel::start(Wire::OpenAi, vec![Step::text("ok")])
        .await
        .unwrap();
    let response = reqwest::get(format!("{}/chat/completions", model.base_url()))
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    assert_eq!(model.requests().len(), 1);
    assert!(
        model.violations()[0].starts_with("request 1: method GET"),
        "{:?}",
        model.violations()
    );
}
