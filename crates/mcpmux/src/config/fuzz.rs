//! Property tests: every dialect's parser, the `${VAR}` expander and the project gate take
//! arbitrary and hostile input (deep nesting, huge strings, odd types, `${` sequences,
//! self-referencing variables) and answer with entries or errors — never a panic or a hang.
//! Case counts are bounded so each property runs in a few seconds in a debug build.

use std::path::{Path, PathBuf};

use proptest::prelude::*;
use serde_json::{Map, Value};

use super::claude::{self, Shape};
use super::expand::expand;
use super::fields::Context;
use super::trust::Gate;
use super::{Dialect, mcpmux_toml};

/// Text that looks like references: `${`, `$$`, `:-`, names, braces, nested references.
fn dollar_text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[$\\{\\}A-Z_:\\-a ]{0,40}",
        Just("${SELF}".to_owned()),
        Just("${env:SELF}${input:x}${workspaceFolder}$A${".to_owned()),
        Just("${A:-${B:-${C}}}".to_owned()),
        Just("${".repeat(500)),
        Just("$".repeat(10_000)),
        ".{0,64}",
    ]
}

/// Any JSON value, up to a few levels deep, with hostile strings at the leaves.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        4 => Just(Value::Null),
        4 => any::<bool>().prop_map(Value::Bool),
        4 => any::<i64>().prop_map(Value::from),
        4 => any::<f64>().prop_map(|n| serde_json::Number::from_f64(n).map_or(Value::Null, Value::Number)),
        20 => dollar_text().prop_map(Value::String),
        // Huge, but rarely: each case parses it several times.
        1 => Just(Value::String("x".repeat(100_000))),
    ];
    leaf.prop_recursive(5, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
            prop::collection::btree_map(key(), inner, 0..8)
                .prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
}

/// Keys that hit the fields we read as well as arbitrary ones.
fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "type",
            "command",
            "args",
            "env",
            "cwd",
            "url",
            "headers",
            "headersHelper",
            "headers_helper",
            "oauth",
            "disabled",
            "enabled",
            "required",
            "startup_timeout",
            "tools",
            "allow",
            "deny",
            "side_effects",
            "backoff",
            "breaker",
            "mcpServers",
            "projects",
            "servers",
            "policy",
            "clientId",
            "grant",
            "idp",
            "envFile",
            "httpUrl",
            "serverUrl",
            "inputs",
            "mcp_servers",
            "env_vars",
            "bearer_token_env_var",
            "env_http_headers",
            "http_headers",
            "startup_timeout_sec",
            "timeout",
            "includeTools",
            "trust",
            "disabledTools",
            "mcp",
            "excluded",
        ])
        .prop_map(str::to_owned),
        "[a-zA-Z_\\-\\.\"$]{0,12}",
    ]
}

/// One server entry, biased towards the shapes the dialects read.
fn server_entry() -> impl Strategy<Value = Value> {
    prop::collection::btree_map(key(), json_value(), 0..8)
        .prop_map(|map| Value::Object(map.into_iter().collect()))
}

/// A `name → entry` map.
fn servers() -> impl Strategy<Value = Value> {
    prop::collection::btree_map(key(), server_entry(), 0..6)
        .prop_map(|map| Value::Object(map.into_iter().collect::<Map<_, _>>()))
}

/// A Claude JSON file of every shape: `mcpServers`, flat, `projects[<dir>]`, or anything.
fn claude_file() -> impl Strategy<Value = Value> {
    prop_oneof![
        servers().prop_map(|s| serde_json::json!({ "mcpServers": s })),
        servers(),
        (servers(), json_value()).prop_map(|(s, other)| serde_json::json!({
            "projects": { "/p": { "mcpServers": s, "enableAllProjectMcpServers": other } },
        })),
        json_value(),
    ]
}

fn env(name: &str) -> Option<String> {
    match name {
        // Self-referencing and mutually referencing values: expansion is one pass, so these
        // come out as written.
        "SELF" => Some("${SELF}".to_owned()),
        "A" => Some("${B}".to_owned()),
        "B" => Some("${A}".to_owned()),
        "HUGE" => Some("y".repeat(100_000)),
        _ => None,
    }
}

fn parse_both_ways(text: &str, dialect: Dialect, gate: Option<&Gate<'_>>) {
    let file = PathBuf::from("/p/config");
    let secrets = super::secrets::SecretSource::none();
    let cx = Context {
        file: &file,
        dialect,
        env: &env,
        home: Some(Path::new("/h")),
        gate,
        workspace: Path::new("/p"),
        inputs: None,
        secrets: &secrets,
        only: None,
    };
    let shape = Shape {
        flat: true,
        project_dir: Some(PathBuf::from("/p")),
    };
    let _ = match dialect {
        Dialect::Claude => claude::parse(text, &cx, &shape),
        Dialect::Mcpmux => mcpmux_toml::parse(text, &cx),
        _ => {
            let ask: super::InputFn = std::sync::Arc::new(|_: &super::InputRequest| None);
            super::dialects::parse(text, &cx, Some(&ask))
        }
    };
}

/// A TOML document from a JSON value (nulls dropped), or nothing when TOML cannot hold it.
fn toml_text(value: &Value) -> Option<String> {
    fn convert(value: &Value) -> Option<toml::Value> {
        Some(match value {
            Value::Null => return None,
            Value::Bool(b) => toml::Value::Boolean(*b),
            Value::Number(n) => match n.as_i64() {
                Some(i) => toml::Value::Integer(i),
                None => toml::Value::Float(n.as_f64()?),
            },
            Value::String(s) => toml::Value::String(s.clone()),
            Value::Array(items) => toml::Value::Array(items.iter().filter_map(convert).collect()),
            Value::Object(map) => toml::Value::Table(
                map.iter()
                    .filter_map(|(k, v)| Some((k.clone(), convert(v)?)))
                    .collect(),
            ),
        })
    }
    let toml::Value::Table(table) = convert(value)? else {
        return None;
    };
    toml::to_string(&table).ok()
}

/// Cases per property: structured files cost milliseconds each (a few seconds per property in
/// a debug build on a loaded machine); plain text and expansion cost microseconds.
const FILE_CASES: u32 = 256;
const TOML_CASES: u32 = 128;
const TEXT_CASES: u32 = 2048;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(FILE_CASES))]

    #[test]
    fn claude_files_of_any_shape_never_panic(file in claude_file()) {
        let text = file.to_string();
        parse_both_ways(&text, Dialect::Claude, None);
        let gate = Gate::new(Path::new("/p"), None, &[], None);
        parse_both_ways(&text, Dialect::Claude, Some(&gate));
    }

}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(TOML_CASES))]

    #[test]
    fn mcpmux_toml_of_any_shape_never_panics(servers in prop::collection::btree_map(key(), server_entry(), 0..6), policy in json_value()) {
        let document = serde_json::json!({ "servers": servers, "policy": policy });
        if let Some(text) = toml_text(&document) {
            parse_both_ways(&text, Dialect::Mcpmux, None);
            let gate = Gate::new(Path::new("/p"), None, &[], None);
            parse_both_ways(&text, Dialect::Mcpmux, Some(&gate));
        }
    }

}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(FILE_CASES))]

    #[test]
    fn imported_json_files_of_any_shape_never_panic(servers in servers(), other in json_value()) {
        let document = serde_json::json!({
            "mcpServers": servers.clone(), "servers": servers, "inputs": other.clone(), "mcp": other,
        });
        let text = document.to_string();
        let gate = Gate::new(Path::new("/p"), None, &[], None);
        for dialect in [Dialect::Cursor, Dialect::VsCode, Dialect::Gemini, Dialect::Windsurf, Dialect::ClaudeDesktop] {
            parse_both_ways(&text, dialect, None);
            parse_both_ways(&text, dialect, Some(&gate));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(TOML_CASES))]

    #[test]
    fn codex_toml_of_any_shape_never_panics(servers in prop::collection::btree_map(key(), server_entry(), 0..6)) {
        let document = serde_json::json!({ "mcp_servers": servers, "model": "o3" });
        if let Some(text) = toml_text(&document) {
            parse_both_ways(&text, Dialect::Codex, None);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(TEXT_CASES))]

    #[test]
    fn arbitrary_text_in_either_dialect_never_panics(text in ".{0,400}") {
        for dialect in [Dialect::Claude, Dialect::Mcpmux, Dialect::Codex, Dialect::Cursor, Dialect::VsCode, Dialect::Gemini, Dialect::Windsurf, Dialect::ClaudeDesktop] {
            parse_both_ways(&text, dialect, None);
        }
    }

    #[test]
    fn expansion_of_any_text_ends_without_panicking(text in dollar_text()) {
        let _ = expand(&text, &env);
    }
}

#[test]
fn self_referencing_variables_expand_once() {
    assert_eq!(expand("${SELF}", &env).ok().as_deref(), Some("${SELF}"));
    assert_eq!(expand("${A}${B}", &env).ok().as_deref(), Some("${B}${A}"));
}

#[test]
fn deeply_nested_files_are_an_error_not_a_stack_overflow() {
    for depth in [1_000, 100_000] {
        let json = format!(
            "{{\"mcpServers\": {{\"a\": {{\"command\": {}1{}}}}}}}",
            "[".repeat(depth),
            "]".repeat(depth)
        );
        parse_both_ways(&json, Dialect::Claude, None);
        let toml = format!(
            "[servers.a]\ncommand = {}1{}\n",
            "[".repeat(depth),
            "]".repeat(depth)
        );
        parse_both_ways(&toml, Dialect::Mcpmux, None);
        let inline = format!("a = {}{}\n", "{b = ".repeat(depth), "}".repeat(depth));
        parse_both_ways(&inline, Dialect::Mcpmux, None);
        let dotted = format!("[servers.{}]\n", "a.".repeat(depth.min(10_000)) + "z");
        parse_both_ways(&dotted, Dialect::Mcpmux, None);
    }
}
