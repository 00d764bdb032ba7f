//! Gemini export: function declarations in the OpenAPI subset Gemini accepts, `$ref`s inlined
//! with recursion cut at a depth limit. Knows nothing of the other providers.

use std::collections::HashSet;

use serde_json::{Map, Value, json};

use super::refs::{inferred_type, merge_all_of, resolve_ref, root_object, types_of};
use super::{copy, description};
use crate::catalog::Tool;

/// How many times Gemini export expands the same `$ref` inside itself before cutting.
pub const GEMINI_REF_DEPTH: usize = 2;

/// Most `$ref` expansions in one Gemini declaration (inlining is exponential in the worst case).
const GEMINI_MAX_EXPANSIONS: usize = 200;

/// Deepest schema nesting Gemini export walks before cutting (guards pathological schemas).
const GEMINI_MAX_DEPTH: usize = super::refs::MAX_WALK_DEPTH;

fn values_text(values: &[Value]) -> String {
    values
        .iter()
        .map(Value::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

fn append_description(node: &mut Map<String, Value>, extra: &str) {
    let text = match node.get("description").and_then(Value::as_str) {
        Some(d) if !d.is_empty() => format!("{d} ({extra})"),
        _ => extra.to_string(),
    };
    node.insert("description".into(), Value::String(text));
}

/// The Gemini function declaration of `tool`, named `name`.
pub(super) fn gemini(tool: &Tool, name: &str, notes: &mut Vec<String>) -> Value {
    let root = root_object(&tool.input_schema, notes);
    let mut ctx = Gemini {
        source: &tool.input_schema,
        stack: Vec::new(),
        notes: Vec::new(),
        expansions: 0,
    };
    let parameters = ctx.node(&Value::Object(root), 0);
    let mut seen = HashSet::new();
    notes.extend(ctx.notes.into_iter().filter(|n| seen.insert(n.clone())));
    let mut def = Map::new();
    def.insert("name".into(), name.into());
    if let Some(d) = description(tool) {
        def.insert("description".into(), d.into());
    }
    let has_properties = parameters
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|p| !p.is_empty());
    // A tool without arguments has no `parameters` (Gemini refuses an empty OBJECT there).
    if has_properties {
        def.insert("parameters".into(), parameters);
    }
    Value::Object(def)
}

struct Gemini<'a> {
    source: &'a Value,
    stack: Vec<String>,
    notes: Vec<String>,
    /// `$ref` expansions so far: bounded so many recursive refs cannot blow the output up.
    expansions: usize,
}

/// What Gemini gets for "any value": a string (which the original schema accepts too).
fn gemini_any(description: Option<&Value>) -> Value {
    let mut out = Map::new();
    out.insert("type".into(), "string".into());
    let mut tmp = Map::new();
    if let Some(d) = description {
        tmp.insert("description".into(), d.clone());
    }
    append_description(&mut tmp, "any value; give it as text");
    copy(&tmp, &mut out, &["description"]);
    Value::Object(out)
}

fn gemini_cut(description: Option<&Value>, why: &str) -> Value {
    let mut out = Map::new();
    out.insert("type".into(), "object".into());
    if let Some(d) = description {
        out.insert("description".into(), d.clone());
    }
    append_description(&mut out, why);
    Value::Object(out)
}

impl Gemini<'_> {
    fn node(&mut self, node: &Value, depth: usize) -> Value {
        let Value::Object(map) = node else {
            return gemini_any(None);
        };
        if depth > GEMINI_MAX_DEPTH {
            self.notes.push(format!(
                "schema nested deeper than {GEMINI_MAX_DEPTH} levels was cut"
            ));
            return gemini_cut(map.get("description"), "nested too deep; structure omitted");
        }
        if let Some(Value::String(reference)) = map.get("$ref") {
            let reference = reference.clone();
            let Some(target) = resolve_ref(self.source, &reference) else {
                self.notes
                    .push(format!("`$ref` `{reference}` could not be resolved"));
                return gemini_any(map.get("description"));
            };
            if self.expansions >= GEMINI_MAX_EXPANSIONS {
                self.notes.push(format!(
                    "more than {GEMINI_MAX_EXPANSIONS} `$ref` expansions; the rest cut"
                ));
                return gemini_cut(
                    map.get("description"),
                    "structure omitted (schema too large)",
                );
            }
            if self.stack.iter().filter(|r| **r == reference).count() >= GEMINI_REF_DEPTH {
                self.notes.push(format!(
                    "recursive `$ref` `{reference}` cut after {GEMINI_REF_DEPTH} levels"
                ));
                return gemini_cut(
                    map.get("description"),
                    "recursive structure; deeper levels omitted",
                );
            }
            let mut merged = match target {
                Value::Object(t) => t.clone(),
                _ => Map::new(),
            };
            for (k, v) in map {
                if k != "$ref" {
                    merged.insert(k.clone(), v.clone());
                }
            }
            self.expansions += 1;
            self.stack.push(reference);
            let out = self.node(&Value::Object(merged), depth + 1);
            self.stack.pop();
            return out;
        }
        let mut map = map.clone();
        merge_all_of(&mut map, self.source);
        if let Some(branches) = map.remove("oneOf") {
            map.entry("anyOf").or_insert(branches);
        }
        if let Some(Value::Array(branches)) = map.remove("anyOf") {
            let shaping = |b: &Value| {
                b.as_object().is_some_and(|m| {
                    [
                        "type",
                        "$ref",
                        "properties",
                        "items",
                        "enum",
                        "const",
                        "anyOf",
                        "oneOf",
                        "allOf",
                    ]
                    .iter()
                    .any(|k| m.contains_key(*k))
                })
            };
            // Branches that only add constraints (`required`, ...) to a typed schema are dropped.
            if branches.iter().any(shaping) {
                return self.any_of(&map, &branches, depth);
            }
        }
        let mut types = types_of(&map);
        if types.is_empty()
            && let Some(t) = inferred_type(&map)
        {
            types.push(t);
        }
        let nullable = types.iter().any(|t| t == "null");
        let concrete: Vec<String> = types.into_iter().filter(|t| t != "null").collect();
        let mut out = match concrete.as_slice() {
            [] => match gemini_any(map.get("description")) {
                Value::Object(m) => m,
                _ => Map::new(),
            },
            [single] => self.typed(&map, single, depth),
            many => {
                let branches: Vec<Value> = many
                    .iter()
                    .map(|t| Value::Object(self.typed(&map, t, depth)))
                    .collect();
                let mut out = Map::new();
                out.insert("anyOf".into(), Value::Array(branches));
                copy(&map, &mut out, &["description"]);
                out
            }
        };
        if nullable {
            out.insert("nullable".into(), true.into());
        }
        Value::Object(out)
    }

    fn any_of(&mut self, map: &Map<String, Value>, branches: &[Value], depth: usize) -> Value {
        let is_null = |b: &Value| {
            b.as_object().is_some_and(|m| {
                m.get("type") == Some(&Value::String("null".into()))
                    || m.get("const") == Some(&Value::Null)
            })
        };
        let nullable = branches.iter().any(is_null);
        let mut converted: Vec<Value> = branches
            .iter()
            .filter(|b| !is_null(b))
            .map(|b| self.node(b, depth + 1))
            .collect();
        let mut out = if converted.len() == 1 {
            match converted.pop() {
                Some(Value::Object(single)) => single,
                _ => Map::new(),
            }
        } else if converted.is_empty() {
            match gemini_any(None) {
                Value::Object(m) => m,
                _ => Map::new(),
            }
        } else {
            Map::from_iter([("anyOf".to_string(), Value::Array(converted))])
        };
        copy(map, &mut out, &["description", "title"]);
        if nullable {
            out.insert("nullable".into(), true.into());
        }
        Value::Object(out)
    }

    fn typed(&mut self, map: &Map<String, Value>, t: &str, depth: usize) -> Map<String, Value> {
        let mut out = Map::new();
        out.insert("type".into(), t.into());
        copy(map, &mut out, &["title", "description"]);
        match t {
            "object" => {
                let properties = match map.get("properties") {
                    Some(Value::Object(p)) => p.clone(),
                    _ => Map::new(),
                };
                if !properties.is_empty() {
                    let converted: Map<String, Value> = properties
                        .iter()
                        .map(|(k, v)| (k.clone(), self.node(v, depth + 1)))
                        .collect();
                    let required: Vec<Value> = match map.get("required") {
                        Some(Value::Array(r)) => r
                            .iter()
                            .filter(|n| n.as_str().is_some_and(|n| properties.contains_key(n)))
                            .cloned()
                            .collect(),
                        _ => Vec::new(),
                    };
                    out.insert("properties".into(), Value::Object(converted));
                    if !required.is_empty() {
                        out.insert("required".into(), Value::Array(required));
                    }
                }
                copy(map, &mut out, &["minProperties", "maxProperties"]);
            }
            "array" => {
                let items = match map.get("items").or_else(|| map.get("prefixItems")) {
                    Some(Value::Array(tuple)) => match tuple.as_slice() {
                        [] => gemini_any(None),
                        [one] => self.node(one, depth + 1),
                        many => {
                            let converted: Vec<Value> =
                                many.iter().map(|s| self.node(s, depth + 1)).collect();
                            json!({"anyOf": converted})
                        }
                    },
                    Some(items) => self.node(items, depth + 1),
                    None => gemini_any(None),
                };
                out.insert("items".into(), items);
                copy(map, &mut out, &["minItems", "maxItems"]);
            }
            "string" => {
                copy(map, &mut out, &["minLength", "maxLength", "pattern"]);
                if let Some(Value::String(f)) = map.get("format")
                    && matches!(f.as_str(), "enum" | "date-time")
                {
                    out.insert("format".into(), f.clone().into());
                }
            }
            "number" | "integer" => {
                copy(map, &mut out, &["minimum", "maximum"]);
                for (exclusive, bound) in [
                    ("exclusiveMinimum", "minimum"),
                    ("exclusiveMaximum", "maximum"),
                ] {
                    if let Some(v) = map.get(exclusive).filter(|v| v.is_number()) {
                        out.entry(bound).or_insert_with(|| v.clone());
                    }
                }
                let formats: &[&str] = if t == "integer" {
                    &["int32", "int64"]
                } else {
                    &["float", "double"]
                };
                if let Some(Value::String(f)) = map.get("format")
                    && formats.contains(&f.as_str())
                {
                    out.insert("format".into(), f.clone().into());
                }
            }
            "boolean" => {}
            other => {
                // An unknown type name: keep the value usable as text.
                self.notes
                    .push(format!("unknown type `{other}` given as a string"));
                out.insert("type".into(), "string".into());
            }
        }
        let mut values: Vec<Value> = match (map.get("enum"), map.get("const")) {
            (Some(Value::Array(values)), _) => values.clone(),
            (_, Some(c)) => vec![c.clone()],
            _ => Vec::new(),
        };
        if values.iter().any(Value::is_null) {
            values.retain(|v| !v.is_null());
            out.insert("nullable".into(), true.into());
        }
        if !values.is_empty() {
            if t == "string" && values.iter().all(Value::is_string) {
                out.insert("enum".into(), Value::Array(values));
            } else if values.len() == 1 && map.contains_key("const") {
                append_description(&mut out, &format!("must be {}", values_text(&values)));
            } else {
                append_description(&mut out, &format!("one of {}", values_text(&values)));
            }
        }
        out
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::super::{ExportFormat, export};
    use super::*;

    #[test]
    fn gemini_cuts_recursion_and_never_loops() {
        let tool = Tool::local(
            "tree",
            json!({
                "type": "object",
                "$defs": {"node": {"type": "object", "properties": {
                    "value": {"type": "string"},
                    "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}
                }}},
                "properties": {"root": {"$ref": "#/$defs/node"}, "self": {"$ref": "#"}}
            }),
        );
        let e = export(&[tool], ExportFormat::Gemini);
        let text = e.definitions().to_string();
        assert!(!text.contains("$ref"), "{text}");
        assert!(
            text.contains("recursive structure; deeper levels omitted"),
            "{text}"
        );
    }
}
