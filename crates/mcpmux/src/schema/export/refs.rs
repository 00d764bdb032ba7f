//! The schema walks every provider export shares: local `$ref`s resolved and followed, `allOf`
//! merged, a root `$ref`/`allOf`/`anyOf`/`oneOf` folded into one object, a schema's type read
//! or inferred. Knows nothing of any provider's rules.

use serde_json::{Map, Value};

use crate::schema::budget::percent_decode;

/// Deepest schema nesting the recursive walks (Gemini export, dropping `null`s at call time)
/// follow before cutting (guards pathological schemas).
pub(in crate::schema) const MAX_WALK_DEPTH: usize = 32;

/// The schema a local `$ref` (`#`, `#/$defs/x`, any `#/json/pointer`) points at in `root`.
pub(in crate::schema) fn resolve_ref<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
    let fragment = reference.strip_prefix('#')?;
    if fragment.is_empty() {
        return Some(root);
    }
    if !fragment.starts_with('/') {
        return None;
    }
    root.pointer(&percent_decode(fragment))
}

/// `node` with a top-level `$ref` chain followed, its own keywords winning over the target's.
pub(in crate::schema) fn follow_refs(node: &Value, root: &Value) -> Map<String, Value> {
    let mut out = match node {
        Value::Object(map) => map.clone(),
        _ => Map::new(),
    };
    for _ in 0..16 {
        let Some(Value::String(reference)) = out.remove("$ref") else {
            break;
        };
        if let Some(Value::Object(target)) = resolve_ref(root, &reference) {
            for (k, v) in target {
                out.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
    }
    out
}

/// Merges `branch` into `target`: properties and required united, other keywords kept where
/// `target` has none.
pub(in crate::schema) fn merge_into(target: &mut Map<String, Value>, branch: Map<String, Value>) {
    for (key, value) in branch {
        match (key.as_str(), target.get_mut(&key), value) {
            ("properties", Some(Value::Object(mine)), Value::Object(theirs)) => {
                for (k, v) in theirs {
                    mine.entry(k).or_insert(v);
                }
            }
            ("required", Some(Value::Array(mine)), Value::Array(theirs)) => {
                for v in theirs {
                    if !mine.contains(&v) {
                        mine.push(v);
                    }
                }
            }
            (_, Some(_), _) => {}
            (_, None, value) => {
                target.insert(key, value);
            }
        }
    }
}

/// `allOf` merged into its schema (refs of the branches followed).
pub(in crate::schema) fn merge_all_of(node: &mut Map<String, Value>, root: &Value) {
    merge_all_of_within(node, root, MAX_WALK_DEPTH);
}

/// [`merge_all_of`] at most `levels` deep: a branch's `$ref` can lead back to a schema whose
/// `allOf` is being merged.
fn merge_all_of_within(node: &mut Map<String, Value>, root: &Value, levels: usize) {
    if levels == 0 {
        node.remove("allOf");
        return;
    }
    if let Some(Value::Array(branches)) = node.remove("allOf") {
        for branch in branches {
            let mut branch = follow_refs(&branch, root);
            merge_all_of_within(&mut branch, root, levels - 1);
            merge_into(node, branch);
        }
    }
}

/// A root schema every provider takes: a root `$ref`, `allOf`, `anyOf` or `oneOf` folded into
/// one object whose properties are the union (required only where every alternative requires
/// them), `type: object`.
pub(in crate::schema) fn root_object(
    schema: &Value,
    notes: &mut Vec<String>,
) -> Map<String, Value> {
    let mut root = follow_refs(schema, schema);
    merge_all_of(&mut root, schema);
    for key in ["anyOf", "oneOf"] {
        let Some(Value::Array(branches)) = root.remove(key) else {
            continue;
        };
        let branches: Vec<Map<String, Value>> = branches
            .iter()
            .map(|b| {
                let mut b = follow_refs(b, schema);
                merge_all_of(&mut b, schema);
                b
            })
            .collect();
        let required_sets: Vec<Vec<Value>> = branches
            .iter()
            .map(|b| match b.get("required") {
                Some(Value::Array(r)) => r.clone(),
                _ => Vec::new(),
            })
            .collect();
        let common: Vec<Value> = required_sets
            .first()
            .map(|first| {
                first
                    .iter()
                    .filter(|v| required_sets.iter().all(|set| set.contains(v)))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        for mut branch in branches {
            branch.remove("required");
            branch.remove("type");
            branch.remove("title");
            branch.remove("description");
            merge_into(&mut root, branch);
        }
        if !common.is_empty() {
            merge_into(
                &mut root,
                Map::from_iter([("required".to_string(), Value::Array(common))]),
            );
        }
        notes.push(format!(
            "top-level `{key}` merged into one object; properties not required by every \
             alternative are optional"
        ));
    }
    root.insert("type".into(), "object".into());
    root
}

pub(in crate::schema) fn types_of(node: &Map<String, Value>) -> Vec<String> {
    match node.get("type") {
        Some(Value::String(t)) => vec![t.clone()],
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        _ => Vec::new(),
    }
}

/// The type a schema without `type` evidently has.
pub(in crate::schema) fn inferred_type(node: &Map<String, Value>) -> Option<String> {
    if node.contains_key("properties") || node.contains_key("additionalProperties") {
        return Some("object".into());
    }
    if node.contains_key("items") || node.contains_key("prefixItems") {
        return Some("array".into());
    }
    let values: Vec<&Value> = match (node.get("enum"), node.get("const")) {
        (Some(Value::Array(values)), _) => values.iter().filter(|v| !v.is_null()).collect(),
        (_, Some(c)) if !c.is_null() => vec![c],
        _ => return None,
    };
    let kind = |v: &Value| match v {
        Value::String(_) => "string",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
        Value::Null => "null",
    };
    let first = kind(values.first()?);
    if values.iter().all(|v| kind(v) == first) {
        Some(first.to_string())
    } else if values
        .iter()
        .all(|v| matches!(kind(v), "integer" | "number"))
    {
        Some("number".into())
    } else {
        None
    }
}
