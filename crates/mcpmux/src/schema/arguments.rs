//! Call-time argument preparation, the one road every call's arguments take before they go
//! on the wire: `null`s a model sent for optional properties that do not take `null` are
//! dropped (what an OpenAI strict export leads to), then the rest is validated against the
//! tool's input schema. Knows nothing of connections or of how a refusal is reported.

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::export::refs::{MAX_WALK_DEPTH, follow_refs, inferred_type, merge_all_of, types_of};
use super::validate::{ArgumentProblem, Compiled, ValidatorCache};
use crate::catalog::Tool;

/// Why a call was stopped before it reached the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallRefusal {
    /// The arguments do not match the schema.
    Arguments(Vec<ArgumentProblem>),
    /// The schema itself cannot be used (beyond the bounds `budget.rs` keeps); the reason names the place.
    Unusable(String),
}

impl ValidatorCache {
    /// Prepares a call's arguments (an object; `{}` for none) for `tool`, with its input
    /// schema already `compiled` when the caller holds it (else compiled and cached here): a
    /// schema that cannot be used refuses the call before any walk over it; otherwise strict
    /// `null`s are dropped and the rest validated. A schema that does not compile lets the
    /// call through unvalidated. Returns the arguments to send: the object it was given, the
    /// same map, never copied.
    pub fn prepare(
        &self,
        tool: &Tool,
        compiled: Option<&Compiled>,
        arguments: Map<String, Value>,
    ) -> Result<Map<String, Value>, CallRefusal> {
        // The walks and the validator read a `Value`: the map moved in and out, not copied.
        let mut arguments = Value::Object(arguments);
        let compiled = match compiled {
            Some(compiled) => compiled.clone(),
            None => self.input(&tool.server, &tool.raw_name, &tool.input_schema),
        };
        let schema = &tool.input_schema;
        match compiled.as_ref() {
            Err(e) if e.unusable => Err(CallRefusal::Unusable(format!(
                "its input schema cannot be used: {}",
                e.message
            ))),
            Ok(validator) => {
                drop_null_optionals_checked(schema, &mut arguments);
                validator
                    .validate(&arguments)
                    .map_err(CallRefusal::Arguments)?;
                Ok(into_object(arguments))
            }
            // Within the bounds but not compilable: sent unvalidated, as documented.
            Err(_) => {
                drop_null_optionals(schema, &mut arguments);
                Ok(into_object(arguments))
            }
        }
    }
}

/// The object `prepare` wrapped: dropping `null`s removes members, it never changes the kind
/// of the value at the top.
fn into_object(arguments: Value) -> Map<String, Value> {
    match arguments {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// Removes `null` values the model sent for optional properties whose schema does not accept
/// `null` — what a model working from an OpenAI strict export sends for "not given". Harmless
/// for any call: such a `null` would fail validation anyway. Follows `properties`, `items` and
/// local `$ref`s of `schema`. Does nothing for a schema beyond the bounds `budget.rs` keeps.
pub fn drop_null_optionals(schema: &Value, arguments: &mut Value) {
    if holds_null(arguments, 0) && super::budget::check(schema).is_ok() {
        strip(schema, schema, arguments, 0);
    }
}

/// [`drop_null_optionals`] for a schema already within the bounds (it compiled).
fn drop_null_optionals_checked(schema: &Value, arguments: &mut Value) {
    if holds_null(arguments, 0) {
        strip(schema, schema, arguments, 0);
    }
}

/// Whether `value` holds a `null` anywhere the walk would reach (past its depth limit counts
/// as holding one: the walk then decides). Most calls hold none, and the walk copies every
/// schema node it visits (`$ref`s and `allOf` merged in): about a sixth of a call's
/// instructions, for nothing to drop.
fn holds_null(value: &Value, depth: usize) -> bool {
    if depth > MAX_WALK_DEPTH {
        return true;
    }
    match value {
        Value::Null => true,
        Value::Object(members) => members.values().any(|v| holds_null(v, depth + 1)),
        Value::Array(items) => items.iter().any(|v| holds_null(v, depth + 1)),
        _ => false,
    }
}

fn strip(root: &Value, schema: &Value, value: &mut Value, depth: usize) {
    if depth > MAX_WALK_DEPTH {
        return;
    }
    let mut node = follow_refs(schema, root);
    merge_all_of(&mut node, root);
    match value {
        Value::Object(args) => {
            let Some(Value::Object(properties)) = node.get("properties") else {
                return;
            };
            let required: HashSet<&str> = match node.get("required") {
                Some(Value::Array(r)) => r.iter().filter_map(Value::as_str).collect(),
                _ => HashSet::new(),
            };
            args.retain(|key, v| {
                !(v.is_null()
                    && !required.contains(key.as_str())
                    && properties
                        .get(key)
                        .is_some_and(|s| !schema_accepts_null(root, s, 0)))
            });
            for (key, v) in args.iter_mut() {
                if let Some(s) = properties.get(key) {
                    strip(root, s, v, depth + 1);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = node.get("items").filter(|i| i.is_object()) {
                for item in items {
                    strip(root, item_schema, item, depth + 1);
                }
            }
        }
        _ => {}
    }
}

/// Does an original (not converted) schema accept `null`?
fn schema_accepts_null(root: &Value, schema: &Value, depth: usize) -> bool {
    if depth > 16 {
        return true;
    }
    let node = follow_refs(schema, root);
    if !schema.is_object() {
        return schema != &Value::Bool(false);
    }
    if types_of(&node).iter().any(|t| t == "null") {
        return true;
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = node.get(key) {
            return branches
                .iter()
                .any(|b| schema_accepts_null(root, b, depth + 1));
        }
    }
    if let Some(Value::Array(values)) = node.get("enum") {
        return values.contains(&Value::Null);
    }
    if let Some(c) = node.get("const") {
        return c.is_null();
    }
    // No type and no constraint on it: anything goes, null included.
    !node.contains_key("type") && inferred_type(&node).is_none() && !node.contains_key("allOf")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_null_deep_inside_the_arguments_is_found_and_dropped() {
        let schema = json!({
            "type": "object",
            "properties": {"rows": {"type": "array", "items": {"$ref": "#/$defs/row"}}},
            "$defs": {"row": {"type": "object", "properties": {"x": {"type": "integer"}}}}
        });
        let mut args = json!({"rows": [{"x": 1}, {"x": null}]});
        drop_null_optionals(&schema, &mut args);
        assert_eq!(args, json!({"rows": [{"x": 1}, {}]}));
        let untouched = json!({"rows": [{"x": 1}, {"x": 2, "y": [true, "s", 1.5]}]});
        let mut args = untouched.clone();
        drop_null_optionals(&schema, &mut args);
        assert_eq!(args, untouched);
        assert!(!holds_null(&untouched, 0));
        let mut deep = json!(null);
        for _ in 0..MAX_WALK_DEPTH + 5 {
            deep = json!([deep]);
        }
        assert!(holds_null(&deep, 0));
        let mut deep_without = json!(1);
        for _ in 0..MAX_WALK_DEPTH + 5 {
            deep_without = json!([deep_without]);
        }
        // Past the walk's limit: the walk decides, and it stops there.
        assert!(holds_null(&deep_without, 0));
    }

    #[test]
    fn prepare_drops_strict_nulls_then_validates() {
        let cache = ValidatorCache::new();
        let tool = Tool::local(
            "read",
            json!({
                "type": "object",
                "properties": {"path": {"type": "string"}, "tail": {"type": "integer"}},
                "required": ["path"]
            }),
        );
        let object = |value: Value| value.as_object().cloned().unwrap();
        let args = object(json!({"path": "/a", "tail": null}));
        assert_eq!(
            cache.prepare(&tool, None, args),
            Ok(object(json!({"path": "/a"})))
        );

        let args = object(json!({"path": null, "tail": "3"}));
        let Err(CallRefusal::Arguments(problems)) = cache.prepare(&tool, None, args) else {
            panic!("refused for its arguments");
        };
        let problems: Vec<String> = problems.iter().map(ToString::to_string).collect();
        assert_eq!(
            problems,
            [
                "/path: expected a string, got null",
                "/tail: expected an integer, got \"3\" (send the number itself, not a string)",
            ]
        );
    }
}
