//! The Anthropic Messages wire, driven with plain reqwest: the shapes it answers and the
//! checks it applies to what it receives.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{events, post_anthropic};
use mcpmux_testmodel::{ScriptedModel, Step, Wire};
use serde_json::{Value, json};

fn weather_tool() -> Value {
    json!({
        "name": "get_weather",
        "description": "Weather for a city",
        "input_schema": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    })
}

fn ask(stream: bool) -> Value {
    json!({
        "model": "claude-test",
        "max_tokens": 1024,
        "system": "Be brief.",
        "messages": [{"role": "user", "content": "Weather in Paris and Rome?"}],
        "tools": [weather_tool()],
        "stream": stream,
    })
}

fn tool_use(id: &str) -> Value {
    json!({"type": "tool_use", "id": id, "name": "get_weather", "input": {"city": "Paris"}})
}

fn tool_result(id: &str) -> Value {
    json!({"type": "tool_result", "tool_use_id": id, "content": "sunny"})
}

/// A conversation: the question, an assistant turn with `uses`, a user turn with `answer`.
fn after_uses(uses: &[&str], answer: Vec<Value>) -> Value {
    let mut assistant = vec![json!({"type": "text", "text": "Checking."})];
    assistant.extend(uses.iter().map(|id| tool_use(id)));
    json!({
        "model": "claude-test",
        "max_tokens": 1024,
        "messages": [
            {"role": "user", "content": "Weather?"},
            {"role": "assistant", "content": assistant},
            {"role": "user", "content": answer},
        ],
        "tools": [weather_tool()],
    })
}

#[tokio::test]
async fn a_non_streaming_answer_with_parallel_tool_calls_is_a_documented_message() {
    let model = ScriptedModel::start(
        Wire::Anthropic,
        vec![
            Step::text_and_tool_calls(
                "Checking both.",
                [
                    ("get_weather", r#"{"city":"Paris"}"#),
                    ("get_weather", r#"{"city":"Rome"}"#),
                ],
            )
            .with_usage(100, 20),
        ],
    )
    .await
    .unwrap();
    assert!(!model.base_url().ends_with("/v1"));
    let response = post_anthropic(&model.base_url(), &ask(false)).await;
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["type"], "message");
    assert_eq!(body["role"], "assistant");
    assert!(body["id"].as_str().unwrap().starts_with("msg_"));
    assert_eq!(body["model"], "claude-test");
    assert_eq!(body["stop_reason"], "tool_use");
    let content = body["content"].as_array().unwrap();
    assert_eq!(
        content[0],
        json!({"type": "text", "text": "Checking both."})
    );
    assert_eq!(content[1]["type"], "tool_use");
    assert!(content[1]["id"].as_str().unwrap().starts_with("toolu_"));
    assert_eq!(content[2]["input"], json!({"city": "Rome"}));
    assert_ne!(content[1]["id"], content[2]["id"]);
    assert_eq!(body["usage"]["input_tokens"], 100);
    assert_eq!(body["usage"]["output_tokens"], 20);
    assert!(model.violations().is_empty(), "{:?}", model.violations());
}

#[tokio::test]
async fn a_streamed_answer_follows_the_documented_event_sequence() {
    let model = ScriptedModel::start(
        Wire::Anthropic,
        vec![
            Step::text_and_tool_calls(
                "Checking both.",
                [
                    ("get_weather", r#"{"city":"Paris"}"#),
                    ("get_weather", r#"{"city":"Rome"}"#),
                ],
            )
            .with_usage(9, 4),
        ],
    )
    .await
    .unwrap();
    let response = post_anthropic(&model.base_url(), &ask(true)).await;
    assert_eq!(response.status(), 200);
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    let events = events(&response.text().await.unwrap());
    for event in &events {
        assert_eq!(
            event.name.as_deref(),
            event.json()["type"].as_str(),
            "{event:?}"
        );
    }
    let names: Vec<&str> = events.iter().map(|e| e.name.as_deref().unwrap()).collect();
    assert_eq!(names[0], "message_start");
    assert!(names.contains(&"ping"));
    assert_eq!(&names[names.len() - 2..], ["message_delta", "message_stop"]);

    let start = events[0].json();
    assert_eq!(start["message"]["content"], json!([]));
    assert_eq!(start["message"]["usage"]["input_tokens"], 9);
    let delta = events[events.len() - 2].json();
    assert_eq!(delta["delta"]["stop_reason"], "tool_use");
    assert_eq!(delta["usage"]["output_tokens"], 4);

    // Rebuild the content blocks the way a client does.
    let mut blocks: Vec<Value> = Vec::new();
    let mut partial: Vec<String> = Vec::new();
    let mut json_deltas = 0;
    let mut open: Option<usize> = None;
    for event in &events {
        let data = event.json();
        match data["type"].as_str().unwrap() {
            "content_block_start" => {
                assert_eq!(open, None, "a block started before the last one stopped");
                let index = data["index"].as_u64().unwrap() as usize;
                assert_eq!(index, blocks.len());
                blocks.push(data["content_block"].clone());
                partial.push(String::new());
                open = Some(index);
            }
            "content_block_delta" => {
                let index = data["index"].as_u64().unwrap() as usize;
                assert_eq!(open, Some(index));
                match data["delta"]["type"].as_str().unwrap() {
                    "text_delta" => {
                        let text = blocks[index]["text"].as_str().unwrap().to_owned();
                        blocks[index]["text"] =
                            json!(text + data["delta"]["text"].as_str().unwrap());
                    }
                    "input_json_delta" => {
                        partial[index].push_str(data["delta"]["partial_json"].as_str().unwrap());
                        json_deltas += 1;
                    }
                    other => panic!("unexpected delta {other}"),
                }
            }
            "content_block_stop" => {
                let index = data["index"].as_u64().unwrap() as usize;
                assert_eq!(open.take(), Some(index));
                if blocks[index]["type"] == "tool_use" {
                    blocks[index]["input"] = serde_json::from_str(&partial[index]).unwrap();
                }
            }
            _ => {}
        }
    }
    assert_eq!(blocks[0], json!({"type": "text", "text": "Checking both."}));
    assert_eq!(blocks[1]["input"], json!({"city": "Paris"}));
    assert_eq!(blocks[2]["input"], json!({"city": "Rome"}));
    assert!(blocks[2]["id"].as_str().unwrap().starts_with("toolu_"));
    assert!(json_deltas > 4, "input came in {json_deltas} deltas");
    assert!(model.violations().is_empty(), "{:?}", model.violations());
}

#[tokio::test]
async fn malformed_arguments_stream_verbatim_and_become_an_empty_input_when_not_streaming() {
    let model = ScriptedModel::start(
        Wire::Anthropic,
        vec![
            Step::tool_calls([("get_weather", "{\"city\": ")]),
            Step::tool_calls([("get_weather", "{\"city\": ")]),
        ],
    )
    .await
    .unwrap();
    let text = post_anthropic(&model.base_url(), &ask(true))
        .await
        .text()
        .await
        .unwrap();
    let streamed: String = events(&text)
        .iter()
        .map(|e| e.json())
        .filter(|d| d["delta"]["type"] == "input_json_delta")
        .map(|d| d["delta"]["partial_json"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(streamed, "{\"city\": ");

    let body: Value = post_anthropic(&model.base_url(), &ask(false))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(body["content"][0]["input"], json!({}));
}

#[tokio::test]
async fn refusal_and_max_tokens_set_the_documented_stop_reasons() {
    let model = ScriptedModel::start(
        Wire::Anthropic,
        vec![
            Step::refusal("I can't help with that."),
            Step::max_tokens("Cut sho"),
        ],
    )
    .await
    .unwrap();
    let body: Value = post_anthropic(&model.base_url(), &ask(false))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(body["stop_reason"], "refusal");
    let text = post_anthropic(&model.base_url(), &ask(true))
        .await
        .text()
        .await
        .unwrap();
    let events = events(&text);
    let delta = events
        .iter()
        .find(|e| e.name.as_deref() == Some("message_delta"))
        .unwrap();
    assert_eq!(delta.json()["delta"]["stop_reason"], "max_tokens");
}

#[tokio::test]
async fn a_429_carries_retry_after_and_a_rate_limit_error_body() {
    let model = ScriptedModel::start(
        Wire::Anthropic,
        vec![Step::status(429, Some(3)), Step::status(529, None)],
    )
    .await
    .unwrap();
    let response = post_anthropic(&model.base_url(), &ask(false)).await;
    assert_eq!(response.status(), 429);
    assert_eq!(response.headers()["retry-after"], "3");
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["type"], "error");
    assert_eq!(body["error"]["type"], "rate_limit_error");
    assert!(body["error"]["message"].is_string());

    let response = post_anthropic(&model.base_url(), &ask(false)).await;
    assert_eq!(response.status(), 529);
    assert!(response.headers().get("retry-after").is_none());
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["type"], "overloaded_error");
}

#[tokio::test]
async fn a_stream_error_sends_text_then_an_overloaded_error_event() {
    let model = ScriptedModel::start(Wire::Anthropic, vec![Step::stream_error("partial answer")])
        .await
        .unwrap();
    let text = post_anthropic(&model.base_url(), &ask(true))
        .await
        .text()
        .await
        .unwrap();
    let events = events(&text);
    let last = events.last().unwrap();
    assert_eq!(last.name.as_deref(), Some("error"));
    assert_eq!(
        last.json(),
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    );
    assert!(
        events
            .iter()
            .any(|e| e.json()["delta"]["type"] == "text_delta")
    );
    assert!(
        !events
            .iter()
            .any(|e| e.name.as_deref() == Some("message_stop"))
    );
}

#[tokio::test]
async fn an_exhausted_script_answers_500_and_records_it() {
    let model = ScriptedModel::start(Wire::Anthropic, vec![]).await.unwrap();
    let response = post_anthropic(&model.base_url(), &ask(false)).await;
    assert_eq!(response.status(), 500);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["type"], "api_error");
    assert_eq!(model.violations(), ["script exhausted at request 1"]);
}

/// Posts `body` with the documented headers to a fresh server with a spare step.
async fn violations_of(body: Value) -> (u16, Vec<String>) {
    let model = ScriptedModel::start(Wire::Anthropic, vec![Step::text("ok")])
        .await
        .unwrap();
    let response = post_anthropic(&model.base_url(), &body).await;
    let status = response.status().as_u16();
    if status == 400 {
        let error: Value = response.json().await.unwrap();
        assert_eq!(error["type"], "error");
        assert_eq!(error["error"]["type"], "invalid_request_error");
    }
    (status, model.violations())
}

fn assert_caught(found: &(u16, Vec<String>), needle: &str) {
    assert_eq!(found.0, 400, "{:?}", found.1);
    assert!(
        found
            .1
            .iter()
            .any(|v| v.starts_with("request 1: ") && v.contains(needle)),
        "no violation mentions {needle:?}: {:?}",
        found.1
    );
}

#[tokio::test]
async fn a_conversation_answering_every_tool_use_first_and_once_passes() {
    let found = violations_of(after_uses(
        &["toolu_a", "toolu_b"],
        vec![
            tool_result("toolu_b"),
            tool_result("toolu_a"),
            json!({"type": "text", "text": "and now?"}),
        ],
    ))
    .await;
    assert_eq!(found, (200, vec![]));
}

#[tokio::test]
async fn a_tool_use_left_unanswered_is_caught() {
    let found = violations_of(after_uses(
        &["toolu_a", "toolu_b"],
        vec![tool_result("toolu_a")],
    ))
    .await;
    assert_caught(&found, "tool_use \"toolu_b\" of message 2 is not answered");
}

#[tokio::test]
async fn a_tool_use_answered_twice_is_caught() {
    let found = violations_of(after_uses(
        &["toolu_a"],
        vec![tool_result("toolu_a"), tool_result("toolu_a")],
    ))
    .await;
    assert_caught(&found, "answers tool_use \"toolu_a\" a second time");
}

#[tokio::test]
async fn a_tool_result_after_text_is_caught() {
    let found = violations_of(after_uses(
        &["toolu_a"],
        vec![
            json!({"type": "text", "text": "here:"}),
            tool_result("toolu_a"),
        ],
    ))
    .await;
    assert_caught(&found, "tool_result blocks must come first");
}

#[tokio::test]
async fn a_tool_result_for_an_unknown_id_is_caught() {
    let found = violations_of(after_uses(
        &["toolu_a"],
        vec![tool_result("toolu_a"), tool_result("toolu_nope")],
    ))
    .await;
    assert_caught(&found, "\"toolu_nope\", which no assistant message issued");
}

#[tokio::test]
async fn a_tool_use_answered_a_turn_late_is_caught() {
    let mut body = after_uses(&["toolu_a"], vec![json!({"type": "text", "text": "hm"})]);
    let messages = body["messages"].as_array_mut().unwrap();
    messages.push(json!({"role": "assistant", "content": "?"}));
    messages.push(json!({"role": "user", "content": [tool_result("toolu_a")]}));
    let found = violations_of(body).await;
    assert_caught(&found, "tool_use \"toolu_a\" of message 2 is not answered");
    assert_caught(&found, "not of the message just before");
}

#[tokio::test]
async fn a_reused_tool_use_id_is_caught() {
    let mut body = after_uses(&["toolu_a"], vec![tool_result("toolu_a")]);
    let messages = body["messages"].as_array_mut().unwrap();
    messages.push(json!({"role": "assistant", "content": [tool_use("toolu_a")]}));
    messages.push(json!({"role": "user", "content": [tool_result("toolu_a")]}));
    assert_caught(&violations_of(body).await, "reuses tool_use id \"toolu_a\"");
}

#[tokio::test]
async fn a_system_role_message_is_caught() {
    let mut body = ask(false);
    body["messages"] = json!([
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "hi"},
    ]);
    assert_caught(&violations_of(body).await, "top-level \"system\" field");
}

#[tokio::test]
async fn roles_that_do_not_alternate_or_start_with_the_assistant_are_caught() {
    let mut body = ask(false);
    body["messages"] = json!([
        {"role": "assistant", "content": "Hello"},
        {"role": "user", "content": "hi"},
        {"role": "user", "content": "again"},
    ]);
    let found = violations_of(body).await;
    assert_caught(&found, "the first message must be from the user");
    assert_caught(&found, "roles must alternate");
}

#[tokio::test]
async fn a_missing_max_tokens_is_caught() {
    let mut body = ask(false);
    body.as_object_mut().unwrap().remove("max_tokens");
    assert_caught(&violations_of(body).await, "\"max_tokens\" is missing");
}

#[tokio::test]
async fn a_bad_tool_name_and_a_schema_not_rooted_at_an_object_are_caught() {
    let mut body = ask(false);
    body["tools"][0]["name"] = json!("weather get");
    body["tools"][0]["input_schema"] = json!({"type": "array"});
    let found = violations_of(body).await;
    assert_caught(&found, "does not match ^[a-zA-Z0-9_-]{1,64}$");
    assert_caught(&found, "input_schema must be a JSON Schema");
}

#[tokio::test]
async fn a_tool_in_openais_shape_is_caught() {
    let mut body = ask(false);
    body["tools"] = json!([{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]);
    assert_caught(&violations_of(body).await, "tools[0] is in OpenAI's shape");
}

#[tokio::test]
async fn a_missing_anthropic_version_or_key_is_caught() {
    let model = ScriptedModel::start(Wire::Anthropic, vec![Step::text("ok")])
        .await
        .unwrap();
    let response = reqwest::Client::new()
        .post(format!("{}/v1/messages", model.base_url()))
        .json(&ask(false))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    let violations = model.violations();
    assert!(
        violations
            .iter()
            .any(|v| v.contains("anthropic-version is missing")),
        "{violations:?}"
    );
    assert!(
        violations
            .iter()
            .any(|v| v.contains("x-api-key nor authorization")),
        "{violations:?}"
    );
    assert_eq!(model.remaining(), 1);
    assert_eq!(
        model.requests()[0].header("content-type"),
        Some("application/json")
    );
}

#[tokio::test]
async fn a_wrong_path_is_caught() {
    let model = ScriptedModel::start(Wire::Anthropic, vec![Step::text("ok")])
        .await
        .unwrap();
    let response = reqwest::Client::new()
        .post(format!("{}/v1/v1/messages", model.base_url()))
        .header("x-api-key", "k")
        .header("anthropic-version", "2023-06-01")
        .json(&ask(false))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    assert!(model.violations()[0].contains("path /v1/v1/messages"));
}
