//! Property tests over hostile input: random schemas (recursive `$ref`s, `$defs` graphs that
//! refer to each other several times, deep nesting, huge enums, unknown keywords and types,
//! non-object schemas) through the bound check, compilation, validation and every provider
//! export; random and deeply nested messages through the transport's nesting screen. The
//! property is always the same: an answer comes back — no panic, no stack overflow, no hang.
//! Case counts are fixed below so the run stays a few seconds in a debug build.

use proptest::prelude::*;
use proptest::test_runner::Config;
use serde_json::{Map, Value, json};

use super::{ExportFormat, Validator, budget, export};
use crate::catalog::Tool;
use crate::transport::nesting::{self, Screen};

/// Cases per schema property (each compiles, validates and exports one schema).
const SCHEMA_CASES: u32 = 300;
/// Cases for the message screen (cheap: bytes only).
const MESSAGE_CASES: u32 = 1000;

fn config(cases: u32) -> Config {
    Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    }
}

fn reference() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(json!("#")),
        (0..6usize).prop_map(|i| json!(format!("#/$defs/d{i}"))),
        Just(json!("#/properties/a")),
        Just(json!("#/allOf/0")),
        Just(json!("#loop")),
        Just(json!("#/$defs/missing")),
        Just(json!("https://example.com/remote.json")),
        Just(json!("#/%24defs/d0")),
        Just(json!(42)),
    ]
}

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        prop::sample::select(vec![
            "string", "integer", "number", "boolean", "object", "array", "null", "strnig", ""
        ])
        .prop_map(|t| json!({"type": t})),
        Just(json!({"type": ["string", "null"]})),
        Just(json!({"type": 7})),
        reference().prop_map(|r| json!({"$ref": r})),
        (0..3000usize).prop_map(|n| json!({"enum": (0..n).collect::<Vec<_>>()})),
        Just(json!({"const": null})),
        Just(json!({"pattern": "(unclosed", "type": "string"})),
        Just(json!({"format": "date-time", "minLength": -1})),
        Just(json!({"$anchor": "loop", "anyOf": [{"$ref": "#loop"}]})),
        Just(json!({"x-weird": {"$ref": "#"}, "description": "\u{1b}[31m"})),
        Just(json!(true)),
        Just(json!(false)),
        Just(json!(null)),
        Just(json!(3.5)),
        Just(json!("a string")),
        Just(json!([{"type": "string"}])),
    ]
}

fn schema() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(8, 64, 4, |inner| {
        let many = prop::collection::vec(inner.clone(), 0..4);
        prop_oneof![
            prop::collection::btree_map(
                prop::sample::select(vec!["a", "b", "c", "x/y", "~"]),
                inner.clone(),
                0..4
            )
            .prop_map(|props| json!({"type": "object", "properties": props, "required": ["a"]})),
            inner
                .clone()
                .prop_map(|i| json!({"type": "array", "items": i})),
            many.clone().prop_map(|b| json!({"allOf": b})),
            many.clone().prop_map(|b| json!({"anyOf": b})),
            many.clone().prop_map(|b| json!({"oneOf": b})),
            many.prop_map(|b| json!({"prefixItems": b, "items": false})),
            inner.clone().prop_map(|i| json!({"not": i})),
            (inner.clone(), inner.clone()).prop_map(|(i, t)| json!({"if": i, "then": t})),
            (inner.clone(), reference())
                .prop_map(|(i, r)| json!({"$ref": r, "description": "beside", "items": i})),
            inner.prop_map(|i| json!({"additionalProperties": i, "type": ["object", "null"]})),
        ]
    })
}

/// A root whose `$defs` d0..d5 are random schemas (so references between them form any
/// graph: cycles, diamonds, chains), and whose body is another random schema.
fn document() -> impl Strategy<Value = Value> {
    (
        schema(),
        prop::collection::vec(schema(), 6),
        any::<bool>(),
        prop::sample::select(vec![
            None,
            Some("http://json-schema.org/draft-07/schema#"),
            Some("http://json-schema.org/draft-04/schema#"),
        ]),
    )
        .prop_map(|(body, defs, object_root, draft)| {
            let mut root = match body {
                Value::Object(map) if object_root => map,
                other => {
                    let mut map = Map::new();
                    map.insert("allOf".into(), json!([other]));
                    map
                }
            };
            let defs: Map<String, Value> = defs
                .into_iter()
                .enumerate()
                .map(|(i, d)| (format!("d{i}"), d))
                .collect();
            root.insert("$defs".into(), Value::Object(defs));
            if let Some(draft) = draft {
                root.insert("$schema".into(), draft.into());
            }
            Value::Object(root)
        })
}

fn instance() -> impl Strategy<Value = Value> {
    let scalar = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        prop::sample::select(vec!["", "a", "2024-01-01T00:00:00Z", "3"]).prop_map(Value::from),
    ];
    scalar.prop_recursive(6, 48, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(
                prop::sample::select(vec!["a", "b", "c", "x/y"]).prop_map(str::to_string),
                inner,
                0..4
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// A chain of `levels` definitions, each applying the next `fan` times.
fn fan_chain(levels: usize, fan: usize, in_place: bool) -> Value {
    let mut defs = Map::new();
    for i in 0..levels {
        let next = json!({"$ref": format!("#/$defs/d{}", i + 1)});
        let refs = vec![next; fan];
        let def = if in_place {
            json!({"allOf": refs})
        } else {
            let props: Map<String, Value> = refs
                .into_iter()
                .enumerate()
                .map(|(k, r)| (format!("p{k}"), r))
                .collect();
            json!({"type": "object", "properties": props})
        };
        defs.insert(format!("d{i}"), def);
    }
    defs.insert(format!("d{levels}"), json!({"type": "string"}));
    json!({"type": "object", "properties": {"x": {"$ref": "#/$defs/d0"}}, "$defs": defs})
}

proptest! {
    #![proptest_config(config(SCHEMA_CASES))]

    /// Compiling and validating never panics, overflows or runs away.
    #[test]
    fn validation_answers_for_any_schema(schema in document(), value in instance()) {
        if let Ok(validator) = Validator::compile(&schema) {
            let _ = validator.validate(&value);
            let _ = validator.validate(&json!({"a": value}));
        }
        let mut args = json!({"a": null, "b": [null]});
        super::arguments::drop_null_optionals(&schema, &mut args);
    }

    /// Every provider export answers, and every definition is plain JSON.
    #[test]
    fn every_provider_exports_any_schema(schema in document()) {
        let tools = [Tool::local("t", schema)];
        for provider in ExportFormat::ALL {
            let exported = export(&tools, provider);
            prop_assert_eq!(exported.tools.len() + exported.unusable.len(), 1);
            let text = exported.definitions().to_string();
            prop_assert!(serde_json::from_str::<Value>(&text).is_ok());
        }
    }

    /// Definition chains that fan out are refused or handled, fast, in place or through
    /// properties.
    #[test]
    fn fanned_out_definition_chains_stay_bounded(
        levels in 1..48usize, fan in 1..4usize, in_place in any::<bool>()
    ) {
        let started = std::time::Instant::now();
        let schema = fan_chain(levels, fan, in_place);
        let _ = budget::check(&schema);
        if let Ok(validator) = Validator::compile(&schema) {
            let _ = validator.validate(&json!({"x": {"p0": {"p1": "s"}}}));
        }
        let tools = [Tool::local("t", schema)];
        for provider in ExportFormat::ALL {
            let _ = export(&tools, provider);
        }
        prop_assert!(started.elapsed() < std::time::Duration::from_secs(5), "{:?}", started.elapsed());
    }
}

fn message() -> impl Strategy<Value = Vec<u8>> {
    let id = prop_oneof![
        Just("1".to_string()),
        Just("\"a\\\"}b\"".to_string()),
        Just("-2.5e1".to_string()),
        Just("null".to_string()),
        Just("{\"x\":1}".to_string()),
    ];
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..512),
        (
            id,
            0..3000usize,
            prop::sample::select(vec!["[", "{\"k\":", "[\"]\","]),
            any::<bool>()
        )
            .prop_map(|(id, depth, open, method)| {
                let close = if open.starts_with('{') { "}" } else { "]" };
                let body = format!("{}1{}", open.repeat(depth), close.repeat(depth));
                let method = if method { "\"method\":\"x\"," } else { "" };
                format!("{{\"jsonrpc\":\"2.0\",{method}\"result\":{body},\"id\":{id}}}")
                    .into_bytes()
            }),
        prop::collection::vec(
            prop::sample::select(b"[]{}\",:\\0123456789-e.idmethod ".to_vec()),
            0..4096
        ),
    ]
}

proptest! {
    #![proptest_config(config(MESSAGE_CASES))]

    /// Any bytes get a verdict; an answer is always a decodable JSON-RPC error response.
    #[test]
    fn the_nesting_screen_answers_any_message(bytes in message()) {
        match nesting::screen(&bytes) {
            Screen::Pass | Screen::Drop(_) => {}
            Screen::Answer(answer) => {
                let decoded = serde_json::from_slice::<rmcp::model::ServerJsonRpcMessage>(&answer);
                prop_assert!(decoded.is_ok(), "{}", String::from_utf8_lossy(&answer));
            }
        }
    }
}
