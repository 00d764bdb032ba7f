//! The OpenAI Chat Completions wire, driven with plain reqwest: the shapes it answers and the
//! checks it applies to what it receives.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{events, post_openai};
use mcpmux_testmodel::{ScriptedModel, Step, Wire};
use serde_json::{Value, json};

fn weather_tool() -> Value {
    json!({
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather for a city",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    })
}

fn ask(stream: bool) -> Value {
    json!({
        "model": "gpt-test",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Weather in Paris and Rome?"},
        ],
        "tools": [weather_tool()],
        "stream": stream,
    })
}

/// The conversation after the model called `ids` (with the two weather calls) and each was
/// answered by `answers` (tool_call_id, content) in that order, then `tail`.
fn after_calls(ids: &[&str], answers: &[(&str, &str)], tail: &[Value]) -> Value {
    let calls: Vec<Value> = ids
        .iter()
        .map(|id| {
            json!({"id": id, "type": "function",
                          "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}})
        })
        .collect();
    let mut messages = vec![
        json!({"role": "user", "content": "Weather?"}),
        json!({"role": "assistant", "content": null, "tool_calls": calls}),
    ];
    for (id, content) in answers {
        messages.push(json!({"role": "tool", "tool_call_id": id, "content": content}));
    }
    messages.extend(tail.iter().cloned());
    json!({"model": "gpt-test", "messages": messages, "tools": [weather_tool()]})
}

#[tokio::test]
async fn a_non_streaming_answer_with_parallel_tool_calls_is_a_documented_chat_completion() {
    let model = ScriptedModel::start(
        Wire::OpenAi,
        vec![
            Step::tool_calls([
                ("get_weather", r#"{"city":"Paris"}"#),
                ("get_weather", r#"{"city":"Rome"}"#),
            ])
            .with_usage(100, 20),
        ],
    )
    .await
    .unwrap();
    let response = post_openai(&model.base_url(), &ask(false)).await;
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["object"], "chat.completion");
    assert!(body["id"].as_str().unwrap().starts_with("chatcmpl-"));
    assert_eq!(body["model"], "gpt-test");
    let choice = &body["choices"][0];
    assert_eq!(choice["finish_reason"], "tool_calls");
    assert_eq!(choice["message"]["role"], "assistant");
    assert_eq!(choice["message"]["content"], Value::Null);
    let calls = choice["message"]["tool_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 2);
    for call in calls {
        assert!(call["id"].as_str().unwrap().starts_with("call_"));
        assert_eq!(call["type"], "function");
        assert_eq!(call["function"]["name"], "get_weather");
    }
    assert_ne!(calls[0]["id"], calls[1]["id"]);
    assert_eq!(calls[1]["function"]["arguments"], r#"{"city":"Rome"}"#);
    assert_eq!(body["usage"]["prompt_tokens"], 100);
    assert_eq!(body["usage"]["completion_tokens"], 20);
    assert_eq!(body["usage"]["total_tokens"], 120);
    assert_eq!(model.violations(), Vec::<String>::new());
    assert_eq!(model.remaining(), 0);
    assert_eq!(model.issued_tool_call_ids().len(), 2);
    assert_eq!(
        model.requests()[0].tools()[0]["function"]["name"],
        "get_weather"
    );
}

#[tokio::test]
async fn a_streamed_answer_splits_tool_arguments_over_chunks_and_ends_with_usage_then_done() {
    let model = ScriptedModel::start(
        Wire::OpenAi,
        vec![
            Step::text_and_tool_calls(
                "Let me check both.",
                [
                    ("get_weather", r#"{"city":"Paris"}"#),
                    ("get_weather", r#"{"city":"Rome"}"#),
                ],
            )
            .with_usage(7, 3),
        ],
    )
    .await
    .unwrap();
    let mut body = ask(true);
    body["stream_options"] = json!({"include_usage": true});
    let response = post_openai(&model.base_url(), &body).await;
    assert_eq!(response.status(), 200);
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    let events = events(&response.text().await.unwrap());
    assert!(events.iter().all(|event| event.name.is_none()));
    assert_eq!(events.last().unwrap().data, "[DONE]");
    let chunks: Vec<Value> = events[..events.len() - 1]
        .iter()
        .map(|e| e.json())
        .collect();
    assert!(
        chunks
            .iter()
            .all(|c| c["object"] == "chat.completion.chunk")
    );
    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");

    let usage_chunk = chunks.last().unwrap();
    assert_eq!(usage_chunk["choices"], json!([]));
    assert_eq!(usage_chunk["usage"]["prompt_tokens"], 7);
    assert_eq!(usage_chunk["usage"]["completion_tokens"], 3);
    let body_chunks = &chunks[..chunks.len() - 1];
    assert!(body_chunks.iter().all(|c| c["usage"].is_null()));
    let finish = body_chunks.last().unwrap();
    assert_eq!(finish["choices"][0]["finish_reason"], "tool_calls");

    let mut text = String::new();
    let mut ids = vec![String::new(); 2];
    let mut names = vec![String::new(); 2];
    let mut arguments = vec![String::new(); 2];
    let mut argument_chunks = 0;
    for chunk in body_chunks {
        let delta = &chunk["choices"][0]["delta"];
        text.push_str(delta["content"].as_str().unwrap_or(""));
        for call in delta["tool_calls"].as_array().into_iter().flatten() {
            let index = call["index"].as_u64().unwrap() as usize;
            if let Some(id) = call["id"].as_str() {
                ids[index] = id.to_owned();
                assert_eq!(call["type"], "function");
            }
            names[index].push_str(call["function"]["name"].as_str().unwrap_or(""));
            if let Some(piece) = call["function"]["arguments"].as_str() {
                arguments[index].push_str(piece);
                argument_chunks += 1;
            }
        }
    }
    assert_eq!(text, "Let me check both.");
    assert!(ids.iter().all(|id| id.starts_with("call_")));
    assert_eq!(names, ["get_weather", "get_weather"]);
    assert_eq!(arguments, [r#"{"city":"Paris"}"#, r#"{"city":"Rome"}"#]);
    assert!(
        argument_chunks > 4,
        "arguments came in {argument_chunks} chunks"
    );
    assert!(model.violations().is_empty(), "{:?}", model.violations());
}

#[tokio::test]
async fn a_stream_without_include_usage_has_no_usage_chunk() {
    let model = ScriptedModel::start(Wire::OpenAi, vec![Step::text("Hi")])
        .await
        .unwrap();
    let response = post_openai(&model.base_url(), &ask(true)).await;
    let events = events(&response.text().await.unwrap());
    assert_eq!(events.last().unwrap().data, "[DONE]");
    for event in &events[..events.len() - 1] {
        let chunk = event.json();
        assert!(chunk.get("usage").is_none(), "{chunk}");
        assert_eq!(chunk["choices"].as_array().unwrap().len(), 1);
    }
    let finish = events[events.len() - 2].json();
    assert_eq!(finish["choices"][0]["finish_reason"], "stop");
}

#[tokio::test]
async fn refusal_and_max_tokens_use_the_documented_fields() {
    let model = ScriptedModel::start(
        Wire::OpenAi,
        vec![
            Step::refusal("I can't help with that."),
            Step::max_tokens("Cut sho"),
            Step::refusal("No."),
        ],
    )
    .await
    .unwrap();
    let body: Value = post_openai(&model.base_url(), &ask(false))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        body["choices"][0]["message"]["refusal"],
        "I can't help with that."
    );
    assert_eq!(body["choices"][0]["message"]["content"], Value::Null);
    assert_eq!(body["choices"][0]["finish_reason"], "stop");

    let body: Value = post_openai(&model.base_url(), &ask(false))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(body["choices"][0]["message"]["content"], "Cut sho");
    assert_eq!(body["choices"][0]["finish_reason"], "length");

    let text = post_openai(&model.base_url(), &ask(true))
        .await
        .text()
        .await
        .unwrap();
    let refusal: String = events(&text)
        .iter()
        .filter(|e| e.data != "[DONE]")
        .filter_map(|e| {
            e.json()["choices"][0]["delta"]["refusal"]
                .as_str()
                .map(str::to_owned)
        })
        .collect();
    assert_eq!(refusal, "No.");
    assert!(model.violations().is_empty(), "{:?}", model.violations());
}

#[tokio::test]
async fn a_429_carries_retry_after_and_openais_error_body() {
    let model = ScriptedModel::start(Wire::OpenAi, vec![Step::status(429, Some(7))])
        .await
        .unwrap();
    let response = post_openai(&model.base_url(), &ask(false)).await;
    assert_eq!(response.status(), 429);
    assert_eq!(response.headers()["retry-after"], "7");
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], "rate_limit_exceeded");
    assert!(body["error"]["message"].is_string());
    assert!(body["error"].get("param").is_some());
}

#[tokio::test]
async fn a_stream_error_cuts_the_connection_before_done() {
    let model = ScriptedModel::start(Wire::OpenAi, vec![Step::stream_error("partial ans")])
        .await
        .unwrap();
    let response = post_openai(&model.base_url(), &ask(true)).await;
    assert_eq!(response.status(), 200);
    let outcome = response.text().await;
    assert!(outcome.is_err(), "the body ended cleanly: {outcome:?}");
}

#[tokio::test]
async fn malformed_arguments_are_sent_verbatim() {
    let model = ScriptedModel::start(
        Wire::OpenAi,
        vec![Step::tool_calls([("get_weather", "{\"city\": ")])],
    )
    .await
    .unwrap();
    let body: Value = post_openai(&model.base_url(), &ask(false))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        body["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"],
        "{\"city\": "
    );
}

#[tokio::test]
async fn an_exhausted_script_answers_500_and_records_it() {
    let model = ScriptedModel::start(Wire::OpenAi, vec![Step::text("one")])
        .await
        .unwrap();
    assert_eq!(
        post_openai(&model.base_url(), &ask(false)).await.status(),
        200
    );
    let response = post_openai(&model.base_url(), &ask(false)).await;
    assert_eq!(response.status(), 500);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["type"], "server_error");
    assert_eq!(model.violations(), ["script exhausted at request 2"]);
}

/// Posts `body` to a fresh server with a spare step; returns its violations and the status.
async fn violations_of(body: Value) -> (u16, Vec<String>) {
    let model = ScriptedModel::start(Wire::OpenAi, vec![Step::text("ok")])
        .await
        .unwrap();
    let response = post_openai(&model.base_url(), &body).await;
    let status = response.status().as_u16();
    if status == 400 {
        let error: Value = response.json().await.unwrap();
        assert_eq!(error["error"]["type"], "invalid_request_error");
        assert_eq!(model.remaining(), 1, "a refused request uses no step");
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
async fn a_conversation_answering_every_call_once_and_in_order_passes() {
    let found = violations_of(after_calls(
        &["call_a", "call_b"],
        &[("call_b", "sunny"), ("call_a", "rainy")],
        &[json!({"role": "user", "content": "thanks"})],
    ))
    .await;
    assert_eq!(found, (200, vec![]));
}

#[tokio::test]
async fn a_tool_call_left_unanswered_is_caught() {
    let found = violations_of(after_calls(
        &["call_a", "call_b"],
        &[("call_a", "sunny")],
        &[],
    ))
    .await;
    assert_caught(&found, "\"call_b\" of message 2 is never answered");
}

#[tokio::test]
async fn a_tool_call_answered_twice_is_caught() {
    let found = violations_of(after_calls(
        &["call_a"],
        &[("call_a", "sunny"), ("call_a", "sunny again")],
        &[],
    ))
    .await;
    assert_caught(&found, "answers tool_call \"call_a\" a second time");
}

#[tokio::test]
async fn a_tool_message_after_another_message_is_caught_as_out_of_order() {
    let mut body = after_calls(&["call_a", "call_b"], &[("call_a", "sunny")], &[]);
    let messages = body["messages"].as_array_mut().unwrap();
    messages.push(json!({"role": "user", "content": "and?"}));
    messages.push(json!({"role": "tool", "tool_call_id": "call_b", "content": "rainy"}));
    let found = violations_of(body).await;
    assert_caught(
        &found,
        "answers tool_call \"call_b\" of message 2 out of order",
    );
}

#[tokio::test]
async fn a_tool_message_for_an_unknown_id_is_caught() {
    let found = violations_of(after_calls(
        &["call_a"],
        &[("call_a", "sunny"), ("call_zzz", "?")],
        &[],
    ))
    .await;
    assert_caught(&found, "\"call_zzz\", which no assistant message issued");
}

#[tokio::test]
async fn a_bad_tool_name_is_caught() {
    let mut body = ask(false);
    body["tools"][0]["function"]["name"] = json!("weather.get");
    assert_caught(
        &violations_of(body).await,
        "does not match ^[a-zA-Z0-9_-]{1,64}$",
    );
}

#[tokio::test]
async fn a_duplicate_tool_name_is_caught() {
    let mut body = ask(false);
    body["tools"] = json!([weather_tool(), weather_tool()]);
    assert_caught(&violations_of(body).await, "is defined twice");
}

#[tokio::test]
async fn parameters_not_rooted_at_an_object_are_caught() {
    let mut body = ask(false);
    body["tools"][0]["function"]["parameters"] = json!({"type": "string"});
    assert_caught(&violations_of(body).await, "root \"type\" is \"object\"");
}

#[tokio::test]
async fn a_strict_schema_without_additional_properties_false_is_caught() {
    let mut body = ask(false);
    body["tools"][0]["function"]["strict"] = json!(true);
    assert_caught(
        &violations_of(body).await,
        "\"additionalProperties\": false",
    );
}

#[tokio::test]
async fn a_strict_schema_with_an_optional_property_is_caught() {
    let mut body = ask(false);
    body["tools"][0]["function"]["strict"] = json!(true);
    body["tools"][0]["function"]["parameters"] = json!({
        "type": "object",
        "properties": {"city": {"type": "string"}, "unit": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": false,
    });
    assert_caught(&violations_of(body).await, "\"unit\" is not");
}

#[tokio::test]
async fn a_well_formed_strict_schema_passes() {
    let mut body = ask(false);
    body["tools"][0]["function"]["strict"] = json!(true);
    body["tools"][0]["function"]["parameters"]["additionalProperties"] = json!(false);
    assert_eq!(violations_of(body).await, (200, vec![]));
}

#[tokio::test]
async fn an_unknown_role_is_caught() {
    let mut body = ask(false);
    body["messages"][0]["role"] = json!("function_result");
    assert_caught(&violations_of(body).await, "has role \"function_result\"");
}

#[tokio::test]
async fn a_missing_model_and_a_wrong_path_are_caught() {
    let model = ScriptedModel::start(Wire::OpenAi, vec![Step::text("ok")])
        .await
        .unwrap();
    let response = reqwest::Client::new()
        .post(format!("{}/completions", model.base_url()))
        .json(&json!({"messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    let violations = model.violations();
    assert!(
        violations
            .iter()
            .any(|v| v.contains("path /v1/completions")),
        "{violations:?}"
    );
    assert!(
        violations
            .iter()
            .any(|v| v.contains("\"model\" is missing")),
        "{violations:?}"
    );
    assert_eq!(model.requests()[0].path, "/v1/completions");
}

#[tokio::test]
async fn a_failed_expectation_is_recorded_and_the_reply_still_sent() {
    let model = ScriptedModel::start(
        Wire::OpenAi,
        vec![Step::text("fine").expect(|body| {
            if body["tools"]
                .as_array()
                .is_some_and(|tools| tools.is_empty())
            {
                Ok(())
            } else {
                Err("expected no tools".to_owned())
            }
        })],
    )
    .await
    .unwrap();
    let response = post_openai(&model.base_url(), &ask(false)).await;
    assert_eq!(response.status(), 200);
    assert_eq!(
        model.violations(),
        ["request 1: expectation failed: expected no tools"]
    );
}

#[tokio::test]
async fn a_body_that_is_not_json_is_refused_without_a_panic() {
    let model = ScriptedModel::start(Wire::OpenAi, vec![Step::text("ok")])
        .await
        .unwrap();
    let response = reqwest::Client::new()
        .post(format!("{}/chat/completions", model.base_url()))
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    assert!(model.violations()[0].contains("body is not JSON"));
    assert_eq!(model.requests()[0].body, json!("{not json"));
}
