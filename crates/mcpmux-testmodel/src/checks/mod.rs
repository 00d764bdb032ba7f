//! The checks a request must pass, as the real API would apply them: one file per wire
//! (`openai.rs`, `anthropic.rs`), and here what both share (tool names, the schema walk for
//! OpenAI strict mode). Each check returns sentences naming the message or tool at fault;
//! none of them panics on any JSON. Knows nothing of the script or of the answers.

mod anthropic;
#[cfg(test)]
mod fuzz;
mod openai;

use serde_json::Value;

use crate::wire::Wire;

/// How deep the strict-schema walk goes; serde_json already refuses deeper documents (128).
const MAX_SCHEMA_DEPTH: usize = 128;

/// Every problem with one request, empty when it is well-formed for `wire`.
pub(crate) fn check(
    wire: Wire,
    path: &str,
    headers: &[(String, String)],
    body: &Value,
) -> Vec<String> {
    match wire {
        Wire::OpenAi => openai::check(path, body),
        Wire::Anthropic => anthropic::check(path, headers, body),
    }
}

/// A tool name both providers accept: `^[a-zA-Z0-9_-]{1,64}$`.
/// The request body as an object with a non-empty `model`, as both APIs require; each problem
/// is added to `out`, and `None` when the body is not an object at all.
fn object_with_model<'a>(
    body: &'a Value,
    out: &mut Vec<String>,
) -> Option<&'a serde_json::Map<String, Value>> {
    let Some(map) = body.as_object() else {
        out.push(format!("body is {} (expected an object)", kind(body)));
        return None;
    };
    match map.get("model") {
        Some(Value::String(model)) if !model.is_empty() => {}
        Some(other) => out.push(format!(
            "\"model\" is {} (expected a model name)",
            kind(other)
        )),
        None => out.push("\"model\" is missing".to_owned()),
    }
    Some(map)
}

fn valid_tool_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-')
}

/// Whether a schema's root is `"type": "object"`.
fn root_is_object(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("object")
}

/// A JSON value's kind, for messages.
fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Problems OpenAI strict mode would reject in `schema`: every object schema needs
/// `additionalProperties: false` and `required` listing all of its properties.
fn strict_problems(schema: &Value, at: &str, depth: usize, out: &mut Vec<String>) {
    let Some(map) = schema.as_object() else {
        return;
    };
    if depth > MAX_SCHEMA_DEPTH {
        out.push(format!(
            "{at}: schema nested deeper than {MAX_SCHEMA_DEPTH}"
        ));
        return;
    }
    let is_object = match map.get("type") {
        Some(Value::String(kind)) => kind == "object",
        Some(Value::Array(kinds)) => kinds.iter().any(|kind| kind == "object"),
        _ => map.contains_key("properties"),
    };
    if is_object {
        if map.get("additionalProperties") != Some(&Value::Bool(false)) {
            out.push(format!(
                "{at}: strict mode needs \"additionalProperties\": false on every object"
            ));
        }
        let required: Vec<&str> = map
            .get("required")
            .and_then(Value::as_array)
            .map(|names| names.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if let Some(properties) = map.get("properties").and_then(Value::as_object) {
            for name in properties.keys() {
                if !required.contains(&name.as_str()) {
                    out.push(format!(
                        "{at}: strict mode needs every property in \"required\"; \"{name}\" is not"
                    ));
                }
            }
        }
    }
    for (key, child) in map {
        match key.as_str() {
            "properties" | "$defs" | "definitions" | "patternProperties" => {
                if let Some(children) = child.as_object() {
                    for (name, sub) in children {
                        strict_problems(sub, &format!("{at}/{key}/{name}"), depth + 1, out);
                    }
                }
            }
            "anyOf" | "allOf" | "oneOf" | "prefixItems" => {
                if let Some(children) = child.as_array() {
                    for (index, sub) in children.iter().enumerate() {
                        strict_problems(sub, &format!("{at}/{key}/{index}"), depth + 1, out);
                    }
                }
            }
            "items" | "additionalProperties" | "not" | "contains" => {
                strict_problems(child, &format!("{at}/{key}"), depth + 1, out);
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn tool_names_follow_the_providers_pattern() {
        assert!(valid_tool_name("get_weather-2"));
        assert!(valid_tool_name(&"a".repeat(64)));
        assert!(!valid_tool_name(""));
        assert!(!valid_tool_name(&"a".repeat(65)));
        assert!(!valid_tool_name("fs.read"));
        assert!(!valid_tool_name("wé"));
    }

    #[test]
    fn strict_schemas_need_closed_objects_with_every_property_required_at_every_depth() {
        let good = json!({
            "type": "object",
            "properties": {"a": {"type": "object", "properties": {"b": {"type": "string"}},
                                 "required": ["b"], "additionalProperties": false}},
            "required": ["a"],
            "additionalProperties": false,
        });
        let mut out = Vec::new();
        strict_problems(&good, "#", 0, &mut out);
        assert!(out.is_empty(), "{out:?}");

        let bad = json!({
            "type": "object",
            "properties": {"a": {"type": "object", "properties": {"b": {"type": "string"}}}},
            "required": ["a"],
            "additionalProperties": false,
        });
        strict_problems(&bad, "#", 0, &mut out);
        assert_eq!(out.len(), 2, "{out:?}");
        assert!(
            out.iter()
                .all(|problem| problem.starts_with("#/properties/a"))
        );
    }
}
