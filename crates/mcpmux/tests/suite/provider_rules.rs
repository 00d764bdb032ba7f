//! Each provider's documented rules for tool definitions, written down as strict validators,
//! applied to the export of the schema fixtures and of the real servers' tools
//! (server-everything, server-filesystem, server-memory, Python mcp-server-time).
//!
//! The rules come from the providers' documentation, not from mcpmux's own constants:
//! - Anthropic Messages `tools`: name `^[a-zA-Z0-9_-]{1,64}$`; `input_schema` an object schema,
//!   no `oneOf`/`allOf`/`anyOf` at its top level.
//! - OpenAI function tools: name `^[a-zA-Z0-9_-]{1,64}$`; description at most 1024 characters;
//!   `parameters` of type object; array schemas have `items`.
//! - OpenAI strict mode (Structured Outputs "supported schemas"): root is an object and not
//!   `anyOf`; every object has `additionalProperties: false` and lists every property in
//!   `required`; only the supported keywords (type, properties, required, additionalProperties,
//!   items, enum, const, anyOf, $ref, $defs, description, pattern, format, multipleOf,
//!   minimum, maximum, exclusiveMinimum, exclusiveMaximum, minItems, maxItems) and string
//!   formats (date-time, time, date, duration, email, hostname, ipv4, ipv6, uuid); `$ref` to
//!   `#` or `#/$defs/…` with no sibling keyword; at most 5000 properties and 10 levels.
//! - Gemini `FunctionDeclaration`: name starts with a letter or `_`, then `[a-zA-Z0-9_.:-]`, at
//!   most 64; `parameters` an OBJECT schema with non-empty `properties` (omitted when there are
//!   none); every schema uses only the `Schema` fields of the OpenAPI subset (type, format,
//!   title, description, nullable, enum, maxItems, minItems, properties, required,
//!   minProperties, maxProperties, minLength, maxLength, pattern, example, anyOf,
//!   propertyOrdering, default, items, minimum, maximum) and has a `type` unless it uses
//!   `anyOf`; `type` is one name, not an array, and not `null`; enum values are strings;
//!   `properties`/`required` only on objects, `items` only (and always) on arrays.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::collections::HashSet;

use mcpmux::schema::{ExportFormat, Validator, export};
use mcpmux::{Hub, ServerSpec, Tool};
use serde_json::{Map, Value};

// ---------------------------------------------------------------------------------------------
// The rules.

fn openai_style_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

fn gemini_name(name: &str) -> bool {
    let mut chars = name.chars();
    (1..=64).contains(&name.len())
        && chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':' | '-'))
}

/// Collects every rule broken, with where.
#[derive(Default)]
struct Report(Vec<String>);

impl Report {
    fn check(&mut self, ok: bool, at: &str, rule: impl AsRef<str>) {
        if !ok {
            self.0.push(format!("{at}: {}", rule.as_ref()));
        }
    }
}

fn obj<'a>(value: &'a Value, at: &str, report: &mut Report) -> Option<&'a Map<String, Value>> {
    let map = value.as_object();
    report.check(map.is_some(), at, "must be a JSON object");
    map
}

fn only_keys(map: &Map<String, Value>, allowed: &[&str], at: &str, report: &mut Report) {
    for key in map.keys() {
        report.check(
            allowed.contains(&key.as_str()),
            at,
            format!("unsupported key `{key}`"),
        );
    }
}

fn anthropic_rules(def: &Value, at: &str, report: &mut Report) {
    let Some(def) = obj(def, at, report) else {
        return;
    };
    only_keys(def, &["name", "description", "input_schema"], at, report);
    let name = def.get("name").and_then(Value::as_str).unwrap_or("");
    report.check(openai_style_name(name), at, format!("bad name `{name}`"));
    let Some(schema) = def.get("input_schema") else {
        report.check(false, at, "missing input_schema");
        return;
    };
    let Some(schema_map) = obj(schema, at, report) else {
        return;
    };
    report.check(
        schema_map.get("type") == Some(&Value::from("object")),
        at,
        "input_schema must have type object",
    );
    for key in ["oneOf", "allOf", "anyOf"] {
        report.check(
            !schema_map.contains_key(key),
            at,
            format!("input_schema has `{key}` at its top level"),
        );
    }
    report.check(
        Validator::compile(schema).is_ok(),
        at,
        "input_schema is not a valid JSON Schema",
    );
}

fn arrays_have_items(value: &Value, at: &str, report: &mut Report) {
    match value {
        Value::Object(map) => {
            let is_array = match map.get("type") {
                Some(Value::String(t)) => t == "array",
                Some(Value::Array(ts)) => ts.iter().any(|t| t == "array"),
                _ => false,
            };
            // `properties` maps names to schemas, so a property called `type` is no schema.
            if is_array {
                report.check(map.contains_key("items"), at, "array schema without items");
            }
            for (k, v) in map {
                arrays_have_items(v, &format!("{at}/{k}"), report);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                arrays_have_items(v, &format!("{at}/{i}"), report);
            }
        }
        _ => {}
    }
}

fn openai_rules(def: &Value, at: &str, report: &mut Report) -> bool {
    let Some(def) = obj(def, at, report) else {
        return false;
    };
    only_keys(def, &["type", "function"], at, report);
    report.check(
        def.get("type") == Some(&Value::from("function")),
        at,
        "type must be function",
    );
    let Some(function) = def.get("function").and_then(|f| obj(f, at, report)) else {
        return false;
    };
    only_keys(
        function,
        &["name", "description", "parameters", "strict"],
        at,
        report,
    );
    let name = function.get("name").and_then(Value::as_str).unwrap_or("");
    report.check(openai_style_name(name), at, format!("bad name `{name}`"));
    if let Some(d) = function.get("description").and_then(Value::as_str) {
        report.check(
            d.chars().count() <= 1024,
            at,
            "description longer than 1024 characters",
        );
    }
    let Some(parameters) = function.get("parameters") else {
        report.check(false, at, "missing parameters");
        return false;
    };
    report.check(
        parameters.get("type") == Some(&Value::from("object")),
        at,
        "parameters must have type object",
    );
    arrays_have_items(parameters, &format!("{at}/parameters"), report);
    let strict = function.get("strict") == Some(&Value::Bool(true));
    if strict {
        openai_strict_rules(parameters, &format!("{at}/parameters"), report);
    }
    strict
}

const STRICT_KEYWORDS: &[&str] = &[
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "enum",
    "const",
    "anyOf",
    "$ref",
    "$defs",
    "description",
    "pattern",
    "format",
    "multipleOf",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minItems",
    "maxItems",
];

const STRICT_FORMATS: &[&str] = &[
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
];

struct Strict<'a> {
    defs: HashSet<&'a str>,
    properties: usize,
    max_depth: usize,
}

fn openai_strict_rules(parameters: &Value, at: &str, report: &mut Report) {
    let Some(root) = obj(parameters, at, report) else {
        return;
    };
    report.check(!root.contains_key("anyOf"), at, "root must not be anyOf");
    let defs: HashSet<&str> = root
        .get("$defs")
        .and_then(Value::as_object)
        .map(|d| d.keys().map(String::as_str).collect())
        .unwrap_or_default();
    let mut ctx = Strict {
        defs,
        properties: 0,
        max_depth: 0,
    };
    strict_node(parameters, at, 1, &mut ctx, report);
    if let Some(Value::Object(defs)) = root.get("$defs") {
        for (name, def) in defs {
            strict_node(def, &format!("{at}/$defs/{name}"), 1, &mut ctx, report);
        }
    }
    report.check(
        ctx.properties <= 5000,
        at,
        format!("{} properties (max 5000)", ctx.properties),
    );
    report.check(
        ctx.max_depth <= 10,
        at,
        format!("nested {} levels (max 10)", ctx.max_depth),
    );
}

fn strict_node(value: &Value, at: &str, depth: usize, ctx: &mut Strict<'_>, report: &mut Report) {
    let Some(map) = obj(value, at, report) else {
        return;
    };
    only_keys(map, STRICT_KEYWORDS, at, report);
    if let Some(reference) = map.get("$ref").and_then(Value::as_str) {
        report.check(map.len() == 1, at, "`$ref` with sibling keywords");
        let ok = reference == "#"
            || reference
                .strip_prefix("#/$defs/")
                .is_some_and(|d| ctx.defs.contains(d));
        report.check(
            ok,
            at,
            format!("`$ref` `{reference}` not to `#` or `#/$defs/…`"),
        );
        return;
    }
    if let Some(Value::Array(branches)) = map.get("anyOf") {
        for (i, b) in branches.iter().enumerate() {
            strict_node(b, &format!("{at}/anyOf/{i}"), depth, ctx, report);
        }
        return;
    }
    let types: Vec<&str> = match map.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    report.check(
        !types.is_empty() || map.contains_key("enum") || map.contains_key("const"),
        at,
        "schema without type, anyOf, $ref, enum or const",
    );
    if let Some(format) = map.get("format").and_then(Value::as_str) {
        report.check(
            STRICT_FORMATS.contains(&format),
            at,
            format!("unsupported format `{format}`"),
        );
    }
    if types.contains(&"object") {
        ctx.max_depth = ctx.max_depth.max(depth);
        report.check(
            map.get("additionalProperties") == Some(&Value::Bool(false)),
            at,
            "object without additionalProperties: false",
        );
        let properties = map.get("properties").and_then(Value::as_object);
        report.check(properties.is_some(), at, "object without properties");
        let keys: HashSet<&str> = properties
            .map(|p| p.keys().map(String::as_str).collect())
            .unwrap_or_default();
        let required: HashSet<&str> = map
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        report.check(
            keys == required,
            at,
            format!("required {required:?} is not every property {keys:?}"),
        );
        for (name, schema) in properties.into_iter().flatten() {
            ctx.properties += 1;
            strict_node(schema, &format!("{at}/{name}"), depth + 1, ctx, report);
        }
    }
    if types.contains(&"array") {
        match map.get("items") {
            Some(items) => strict_node(items, &format!("{at}/items"), depth, ctx, report),
            None => report.check(false, at, "array without items"),
        }
    }
}

const GEMINI_FIELDS: &[&str] = &[
    "type",
    "format",
    "title",
    "description",
    "nullable",
    "enum",
    "maxItems",
    "minItems",
    "properties",
    "required",
    "minProperties",
    "maxProperties",
    "minLength",
    "maxLength",
    "pattern",
    "example",
    "anyOf",
    "propertyOrdering",
    "default",
    "items",
    "minimum",
    "maximum",
];

const GEMINI_TYPES: &[&str] = &["string", "number", "integer", "boolean", "array", "object"];

fn gemini_rules(def: &Value, at: &str, report: &mut Report) {
    let Some(def) = obj(def, at, report) else {
        return;
    };
    only_keys(def, &["name", "description", "parameters"], at, report);
    let name = def.get("name").and_then(Value::as_str).unwrap_or("");
    report.check(gemini_name(name), at, format!("bad name `{name}`"));
    if let Some(parameters) = def.get("parameters") {
        report.check(
            parameters.get("type") == Some(&Value::from("object")),
            at,
            "parameters must be of type object",
        );
        report.check(
            parameters
                .get("properties")
                .and_then(Value::as_object)
                .is_some_and(|p| !p.is_empty()),
            at,
            "parameters.properties should be non-empty for OBJECT type",
        );
        gemini_schema(parameters, &format!("{at}/parameters"), report);
    }
}

fn gemini_schema(value: &Value, at: &str, report: &mut Report) {
    let Some(map) = obj(value, at, report) else {
        return;
    };
    only_keys(map, GEMINI_FIELDS, at, report);
    if let Some(Value::Array(branches)) = map.get("anyOf") {
        for (i, b) in branches.iter().enumerate() {
            gemini_schema(b, &format!("{at}/anyOf/{i}"), report);
        }
    } else {
        report.check(
            map.contains_key("type"),
            at,
            "type must be specified when not using anyOf",
        );
    }
    let t = match map.get("type") {
        None => None,
        Some(Value::String(t)) => {
            report.check(
                GEMINI_TYPES.contains(&t.as_str()),
                at,
                format!("unsupported type `{t}`"),
            );
            Some(t.as_str())
        }
        Some(other) => {
            report.check(false, at, format!("type must be one name, got {other}"));
            None
        }
    };
    if let Some(nullable) = map.get("nullable") {
        report.check(nullable.is_boolean(), at, "nullable must be a boolean");
    }
    if let Some(values) = map.get("enum") {
        report.check(t == Some("string"), at, "enum only on strings");
        report.check(
            values
                .as_array()
                .is_some_and(|v| v.iter().all(Value::is_string)),
            at,
            "enum values must be strings",
        );
    }
    if let Some(format) = map.get("format").and_then(Value::as_str) {
        let ok = matches!(
            (t, format),
            (Some("string"), "enum" | "date-time")
                | (Some("number"), "float" | "double")
                | (Some("integer"), "int32" | "int64")
        );
        report.check(ok, at, format!("unsupported format `{format}`"));
    }
    let properties = map.get("properties").and_then(Value::as_object);
    if map.contains_key("properties") || map.contains_key("required") {
        report.check(
            t == Some("object"),
            at,
            "properties only allowed for OBJECT type",
        );
    }
    if let Some(required) = map.get("required").and_then(Value::as_array) {
        for r in required {
            let known = r
                .as_str()
                .is_some_and(|r| properties.is_some_and(|p| p.contains_key(r)));
            report.check(known, at, format!("required {r} is not a property"));
        }
    }
    for (name, schema) in properties.into_iter().flatten() {
        gemini_schema(schema, &format!("{at}/{name}"), report);
    }
    match (t, map.get("items")) {
        (Some("array"), Some(items)) => gemini_schema(items, &format!("{at}/items"), report),
        (Some("array"), None) => report.check(false, at, "array without items"),
        (_, Some(_)) => report.check(false, at, "items only allowed for ARRAY type"),
        _ => {}
    }
}

/// Exports `tools` in every format and checks each against its provider's rules; returns the
/// names of the tools exported with OpenAI strict mode on.
fn check_all(tools: &[Tool]) -> HashSet<String> {
    let mut report = Report::default();
    let mut strict = HashSet::new();
    for provider in ExportFormat::ALL {
        let exported = export(tools, provider);
        assert_eq!(
            exported.tools.len(),
            tools.len(),
            "{provider}: a tool went missing"
        );
        let names: HashSet<&str> = exported.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names.len(), tools.len(), "{provider}: names collide");
        for t in &exported.tools {
            let at = format!("{provider} {}", t.tool);
            assert_eq!(exported.tool_name(&t.name), Some(t.tool.as_str()));
            match provider {
                ExportFormat::Anthropic => anthropic_rules(&t.definition, &at, &mut report),
                ExportFormat::OpenAi => {
                    openai_rules(&t.definition, &at, &mut report);
                }
                ExportFormat::OpenAiStrict => {
                    if openai_rules(&t.definition, &at, &mut report) {
                        strict.insert(t.tool.clone());
                    } else {
                        report.check(
                            t.notes.iter().any(|n| n.contains("without strict mode")),
                            &at,
                            "strict mode off without a note saying why",
                        );
                    }
                }
                ExportFormat::Gemini => gemini_rules(&t.definition, &at, &mut report),
            }
        }
    }
    assert!(
        report.0.is_empty(),
        "provider rules broken:\n{}",
        report.0.join("\n")
    );
    strict
}

// ---------------------------------------------------------------------------------------------
// The rules themselves catch what they should.

#[test]
fn the_rules_reject_what_providers_reject() {
    let mut report = Report::default();
    gemini_rules(
        &serde_json::json!({"name": "1x", "parameters": {"type": "object", "properties": {
            "a": {"type": ["string", "null"]},
            "b": {"$ref": "#/$defs/b"},
            "c": {"type": "object", "additionalProperties": false, "properties": {"d": {"type": "integer", "enum": [1]}}},
            "e": {"description": "untyped"}
        }}}),
        "g",
        &mut report,
    );
    let text = report.0.join("\n");
    for expected in [
        "bad name `1x`",
        "type must be one name",
        "unsupported key `$ref`",
        "unsupported key `additionalProperties`",
        "enum values must be strings",
        "type must be specified",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
    }

    let mut report = Report::default();
    openai_rules(
        &serde_json::json!({"type": "function", "function": {"name": "a.b", "strict": true, "parameters": {
            "type": "object",
            "properties": {"x": {"type": "string", "minLength": 2, "format": "uri"}, "y": {"type": "object", "properties": {}}},
            "required": ["x"]
        }}}),
        "o",
        &mut report,
    );
    let text = report.0.join("\n");
    for expected in [
        "bad name `a.b`",
        "object without additionalProperties: false",
        "is not every property",
        "unsupported key `minLength`",
        "unsupported format `uri`",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
    }

    let mut report = Report::default();
    anthropic_rules(
        &serde_json::json!({"name": "x", "input_schema": {"anyOf": [{"type": "object"}]}}),
        "a",
        &mut report,
    );
    assert_eq!(report.0.len(), 2, "{:?}", report.0);
}

// ---------------------------------------------------------------------------------------------
// Fixtures.

fn fixtures() -> Vec<Tool> {
    let list: Vec<Value> =
        serde_json::from_str(include_str!("../../src/schema/testdata/fixtures.json")).unwrap();
    list.iter()
        .map(|t| {
            Tool::local(t["name"].as_str().unwrap(), t["inputSchema"].clone())
                .with_description(t["description"].as_str().unwrap_or_default())
        })
        .collect()
}

#[test]
fn fixture_exports_follow_every_providers_rules() {
    let tools = fixtures();
    let strict = check_all(&tools);
    // Only the tool with a free-form map, an any-value and an item-less array is not strict.
    let not_strict: Vec<&str> = tools
        .iter()
        .map(|t| t.name.as_str())
        .filter(|n| !strict.contains(*n))
        .collect();
    assert_eq!(not_strict, ["mcp__proc__run"]);
}

// ---------------------------------------------------------------------------------------------
// The real servers' tools, obtained through the hub.

#[tokio::test]
async fn real_server_exports_follow_every_providers_rules() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let specs = vec![
        ServerSpec::stdio(
            "everything",
            support::npm_bin("mcp-server-everything").to_string_lossy(),
            ["stdio"],
        ),
        ServerSpec::stdio(
            "fs",
            support::npm_bin("mcp-server-filesystem").to_string_lossy(),
            [root.to_string_lossy().to_string()],
        ),
        ServerSpec::stdio(
            "memory",
            support::npm_bin("mcp-server-memory").to_string_lossy(),
            Vec::<String>::new(),
        )
        .with_env(
            "MEMORY_FILE_PATH",
            root.join("memory.jsonl").to_string_lossy(),
        ),
        ServerSpec::stdio(
            "time",
            support::venv_bin("mcp-server-time").to_string_lossy(),
            Vec::<String>::new(),
        ),
    ];
    let hub = Hub::start(specs, support::hub_options()).unwrap();
    hub.wait_ready().await.unwrap();
    let tools = hub.tools();
    hub.shutdown().await;

    for server in ["everything", "fs", "memory", "time"] {
        assert!(
            tools.iter().any(|t| t.server == server),
            "no tools from {server}: {:?}",
            hub.servers()
        );
    }
    // Every real schema compiles, so every call to them is validated.
    for tool in &tools {
        if let Err(e) = Validator::compile(&tool.input_schema) {
            panic!("{}: {e}", tool.name);
        }
    }
    let strict = check_all(&tools);
    let not_strict: Vec<&str> = tools
        .iter()
        .map(|t| t.name.as_str())
        .filter(|n| !strict.contains(*n))
        .collect();
    eprintln!(
        "{} real tools exported; without OpenAI strict mode: {not_strict:?}",
        tools.len()
    );
}
