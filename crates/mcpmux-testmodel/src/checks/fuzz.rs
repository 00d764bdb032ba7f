//! Property tests over hostile requests: random JSON built from both protocols' vocabulary
//! (roles, ids, blocks, tools, schemas), with random headers and paths, through both wires'
//! checks. The property: an answer comes back — no panic, no hang. Case counts are fixed so the
//! run stays about a second in a debug build.

use proptest::prelude::*;
use proptest::test_runner::Config;
use serde_json::{Map, Value, json};

use super::check;
use crate::wire::Wire;

/// Cases per wire.
const CASES: u32 = 400;

fn config() -> Config {
    Config {
        cases: CASES,
        failure_persistence: None,
        ..Config::default()
    }
}

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        prop::sample::select(vec![
            "user",
            "assistant",
            "tool",
            "system",
            "developer",
            "function",
            "object",
            "string",
            "text",
            "tool_use",
            "tool_result",
            "call_a",
            "call_b",
            "toolu_a",
            "toolu_b",
            "get",
            "",
            "bad name",
            "auto",
            "any",
            "required",
            "none",
        ])
        .prop_map(|s| json!(s)),
        Just(json!(null)),
        Just(json!(true)),
        Just(json!(false)),
        Just(json!(0)),
        Just(json!(-1)),
        Just(json!(1024)),
        Just(json!(1.5)),
        Just(json!([])),
        Just(json!({})),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(6, 96, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::btree_map(
                prop::sample::select(vec![
                    "role",
                    "content",
                    "tool_calls",
                    "tool_call_id",
                    "id",
                    "type",
                    "function",
                    "name",
                    "arguments",
                    "parameters",
                    "strict",
                    "properties",
                    "required",
                    "additionalProperties",
                    "items",
                    "anyOf",
                    "$defs",
                    "input",
                    "input_schema",
                    "tool_use_id",
                    "is_error",
                    "text",
                    "description",
                ]),
                inner,
                0..6,
            )
            .prop_map(|map| Value::Object(
                map.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
            )),
        ]
    })
}

fn request() -> impl Strategy<Value = Value> {
    (
        prop::collection::vec(value(), 0..6),
        prop::option::of(prop::collection::vec(value(), 0..4)),
        prop::option::of(value()),
        prop::option::of(value()),
        prop::option::of(value()),
        value(),
    )
        .prop_map(|(messages, tools, choice, system, max_tokens, other)| {
            let mut body = Map::new();
            body.insert("model".into(), json!("m"));
            body.insert("messages".into(), Value::Array(messages));
            if let Some(tools) = tools {
                body.insert("tools".into(), Value::Array(tools));
            }
            for (key, value) in [
                ("tool_choice", choice),
                ("system", system),
                ("max_tokens", max_tokens),
            ] {
                if let Some(value) = value {
                    body.insert(key.into(), value);
                }
            }
            body.insert("stream_options".into(), other);
            Value::Object(body)
        })
}

fn headers() -> impl Strategy<Value = Vec<(String, String)>> {
    prop::collection::vec(
        (
            prop::sample::select(vec!["anthropic-version", "x-api-key", "content-type", "x"]),
            ".{0,8}",
        )
            .prop_map(|(k, v)| (k.to_owned(), v)),
        0..4,
    )
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn any_request_gets_an_answer_from_the_openai_checks(body in request(), raw in value()) {
        let _ = check(Wire::OpenAi, "/v1/chat/completions", &[], &body);
        let _ = check(Wire::OpenAi, "/", &[], &raw);
    }

    #[test]
    fn any_request_gets_an_answer_from_the_anthropic_checks(
        body in request(),
        raw in value(),
        headers in headers(),
    ) {
        let _ = check(Wire::Anthropic, "/v1/messages", &headers, &body);
        let _ = check(Wire::Anthropic, "/v1/messages", &headers, &raw);
    }
}
