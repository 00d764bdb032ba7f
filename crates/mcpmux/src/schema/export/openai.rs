//! OpenAI export: chat function tools, and strict mode (Structured Outputs) where the schema
//! can be rewritten to its subset, else non-strict with the reason in the notes. Knows nothing of
//! the other providers.

use std::collections::{BTreeMap, HashSet};

use serde_json::{Map, Value, json};

use super::refs::{
    MAX_WALK_DEPTH, inferred_type, merge_all_of, resolve_ref, root_object, types_of,
};
use super::{copy, description};
use crate::catalog::Tool;
use crate::schema::budget::percent_decode;

/// Longest OpenAI function description (the API refuses longer ones).
pub const OPENAI_MAX_DESCRIPTION: usize = 1024;

/// OpenAI strict mode: most object properties in one schema (Structured Outputs limit).
pub const OPENAI_MAX_PROPERTIES: usize = 5000;

/// OpenAI strict mode: deepest object nesting (Structured Outputs limit).
pub const OPENAI_MAX_NESTING: usize = 10;

/// The string formats OpenAI strict mode supports.
pub const OPENAI_FORMATS: &[&str] = &[
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

fn openai_description(tool: &Tool, notes: &mut Vec<String>) -> Option<String> {
    let d = description(tool)?;
    if d.chars().count() <= OPENAI_MAX_DESCRIPTION {
        return Some(d);
    }
    notes.push(format!(
        "description cut to OpenAI's {OPENAI_MAX_DESCRIPTION} characters"
    ));
    let cut: String = d.chars().take(OPENAI_MAX_DESCRIPTION - 1).collect();
    Some(format!("{cut}…"))
}

fn openai_function(
    tool: &Tool,
    name: &str,
    parameters: Map<String, Value>,
    strict: Option<bool>,
    notes: &mut Vec<String>,
) -> Value {
    let mut function = Map::new();
    function.insert("name".into(), name.into());
    if let Some(d) = openai_description(tool, notes) {
        function.insert("description".into(), d.into());
    }
    function.insert("parameters".into(), Value::Object(parameters));
    if let Some(strict) = strict {
        function.insert("strict".into(), strict.into());
    }
    json!({"type": "function", "function": function})
}

/// OpenAI refuses an array schema without `items`, even when not strict.
fn give_arrays_items(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if types_of(map).iter().any(|t| t == "array") && !map.contains_key("items") {
                map.insert("items".into(), json!({}));
            }
            map.values_mut().for_each(give_arrays_items);
        }
        Value::Array(items) => items.iter_mut().for_each(give_arrays_items),
        _ => {}
    }
}

fn openai_parameters(tool: &Tool, notes: &mut Vec<String>) -> Map<String, Value> {
    let mut schema = root_object(&tool.input_schema, notes);
    schema
        .entry("properties")
        .or_insert_with(|| Value::Object(Map::new()));
    let mut value = Value::Object(schema);
    give_arrays_items(&mut value);
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// The OpenAI function tool of `tool`, named `name`.
pub(super) fn openai(tool: &Tool, name: &str, notes: &mut Vec<String>) -> Value {
    let parameters = openai_parameters(tool, notes);
    openai_function(tool, name, parameters, None, notes)
}

/// The OpenAI strict function tool of `tool`, or a non-strict one with the reason noted.
pub(super) fn openai_strict(tool: &Tool, name: &str, notes: &mut Vec<String>) -> Value {
    let mut root_notes = Vec::new();
    let root = root_object(&tool.input_schema, &mut root_notes);
    match strict_schema(&tool.input_schema, &root) {
        Ok(parameters) => {
            notes.extend(root_notes);
            openai_function(tool, name, parameters, Some(true), notes)
        }
        Err(reason) => {
            notes.push(format!("exported without strict mode: {reason}"));
            let parameters = openai_parameters(tool, notes);
            openai_function(tool, name, parameters, Some(false), notes)
        }
    }
}

struct Strict<'a> {
    /// The original schema, for `$ref` resolution.
    source: &'a Value,
    /// Names of `$defs` (and `definitions`) entries, which stay as `#/$defs/<name>`.
    defs: BTreeMap<String, Value>,
    /// Pointers being inlined right now (recursion through them cannot be expressed).
    inlining: Vec<String>,
    /// Schemas being rewritten right now, one inside another. A reference followed while
    /// merging `allOf` can lead back to where it started through `items`, which no object
    /// depth counts: this bounds every such walk.
    nesting: usize,
    properties: usize,
}

/// The strict-mode rewrite of a tool's root schema, or why it cannot be made strict.
fn strict_schema(source: &Value, root: &Map<String, Value>) -> Result<Map<String, Value>, String> {
    let mut defs = BTreeMap::new();
    for key in ["definitions", "$defs"] {
        if let Some(Value::Object(map)) = root.get(key) {
            for (name, schema) in map {
                defs.insert(name.clone(), schema.clone());
            }
        }
    }
    let mut ctx = Strict {
        source,
        defs,
        inlining: Vec::new(),
        nesting: 0,
        properties: 0,
    };
    let mut root_node = root.clone();
    root_node.remove("definitions");
    root_node.remove("$defs");
    let mut out = ctx.object(&root_node, 1, "", true)?;
    if !ctx.defs.is_empty() {
        let defs = ctx.defs.clone();
        let mut converted = Map::new();
        for (name, schema) in defs {
            let path = format!("$defs/{name}");
            converted.insert(name, ctx.node(&schema, 1, &path)?);
        }
        out.insert("$defs".into(), Value::Object(converted));
    }
    if ctx.properties > OPENAI_MAX_PROPERTIES {
        return Err(format!(
            "{} properties, more than the {OPENAI_MAX_PROPERTIES} strict mode allows",
            ctx.properties
        ));
    }
    Ok(out)
}

fn at(path: &str) -> String {
    if path.is_empty() {
        "the arguments".to_string()
    } else {
        format!("`{path}`")
    }
}

impl Strict<'_> {
    /// Inlines the schema `reference` points at, merged with the keywords beside `$ref`,
    /// guarding against a reference that leads back to itself while it is being inlined.
    fn inline(
        &mut self,
        target: Option<Value>,
        map: &Map<String, Value>,
        reference: &str,
        depth: usize,
        path: &str,
    ) -> Result<Value, String> {
        let Some(Value::Object(mut merged)) = target else {
            return Err(format!(
                "{} refers to a schema that accepts any value",
                at(path)
            ));
        };
        for (k, v) in map {
            if k != "$ref" {
                merged.insert(k.clone(), v.clone());
            }
        }
        self.inlining.push(reference.to_string());
        let result = self.node(&Value::Object(merged), depth, path);
        self.inlining.pop();
        result
    }

    fn node(&mut self, node: &Value, depth: usize, path: &str) -> Result<Value, String> {
        if self.nesting >= MAX_WALK_DEPTH {
            return Err(format!(
                "{} nests schemas deeper than {MAX_WALK_DEPTH} levels (or refers back to itself)",
                at(path)
            ));
        }
        self.nesting += 1;
        let result = self.rewrite(node, depth, path);
        self.nesting -= 1;
        result
    }

    fn rewrite(&mut self, node: &Value, depth: usize, path: &str) -> Result<Value, String> {
        let Value::Object(map) = node else {
            return Err(format!("{} accepts any value", at(path)));
        };
        if let Some(Value::String(reference)) = map.get("$ref") {
            return self.reference(reference, map, depth, path);
        }
        let mut map = map.clone();
        merge_all_of(&mut map, self.source);
        if let Some(branches) = map.remove("oneOf") {
            map.entry("anyOf").or_insert(branches);
        }
        if let Some(Value::Array(branches)) = map.get("anyOf").cloned() {
            let mut out = Map::new();
            let converted = branches
                .iter()
                .enumerate()
                .map(|(i, b)| self.node(b, depth, &format!("{path}/anyOf/{i}")))
                .collect::<Result<Vec<_>, _>>()?;
            out.insert("anyOf".into(), Value::Array(converted));
            copy(&map, &mut out, &["description"]);
            return Ok(Value::Object(out));
        }
        let mut types = types_of(&map);
        if types.is_empty()
            && let Some(t) = inferred_type(&map)
        {
            types.push(t);
        }
        let nullable = types.iter().any(|t| t == "null");
        let concrete: Vec<String> = types.into_iter().filter(|t| t != "null").collect();
        match concrete.as_slice() {
            [] if nullable => Ok(json!({"type": "null"})),
            [] if map.contains_key("enum") => {
                let mut out = Map::new();
                copy(&map, &mut out, &["enum", "description"]);
                Ok(Value::Object(out))
            }
            [] => Err(format!("{} accepts any value", at(path))),
            [single] => {
                let mut out = self.typed(&map, single, depth, path)?;
                if nullable {
                    make_nullable_map(&mut out);
                }
                Ok(Value::Object(out))
            }
            many => {
                let mut branches = Vec::new();
                for t in many {
                    branches.push(Value::Object(self.typed(&map, t, depth, path)?));
                }
                if nullable {
                    branches.push(json!({"type": "null"}));
                }
                let mut out = Map::new();
                out.insert("anyOf".into(), Value::Array(branches));
                copy(&map, &mut out, &["description"]);
                Ok(Value::Object(out))
            }
        }
    }

    fn reference(
        &mut self,
        reference: &str,
        map: &Map<String, Value>,
        depth: usize,
        path: &str,
    ) -> Result<Value, String> {
        let def = reference
            .strip_prefix("#/$defs/")
            .or_else(|| reference.strip_prefix("#/definitions/"))
            .map(percent_decode);
        let mut out = Map::new();
        let siblings = map.keys().any(|k| k != "$ref");
        match def {
            // Strict mode refuses keywords beside `$ref`: a ref with a description is inlined,
            // unless that would recurse.
            Some(name)
                if self.defs.contains_key(&name)
                    && siblings
                    && !self.inlining.iter().any(|r| r == reference) =>
            {
                let target = self.defs.get(&name).cloned();
                return self.inline(target, map, reference, depth, path);
            }
            Some(name) if self.defs.contains_key(&name) => {
                out.insert("$ref".into(), format!("#/$defs/{name}").into());
                return Ok(Value::Object(out));
            }
            _ if reference == "#" => {
                out.insert("$ref".into(), "#".into());
            }
            _ => {
                // Any other local pointer: inline it, unless it refers to itself.
                if self.inlining.iter().any(|r| r == reference) {
                    return Err(format!(
                        "{} is recursive through `{reference}`, which strict mode cannot express",
                        at(path)
                    ));
                }
                let Some(target) = resolve_ref(self.source, reference).cloned() else {
                    return Err(format!(
                        "{} refers to `{reference}`, which is not in the schema",
                        at(path)
                    ));
                };
                return self.inline(Some(target), map, reference, depth, path);
            }
        }
        Ok(Value::Object(out))
    }

    fn typed(
        &mut self,
        map: &Map<String, Value>,
        t: &str,
        depth: usize,
        path: &str,
    ) -> Result<Map<String, Value>, String> {
        match t {
            "object" => self.object(map, depth, path, false),
            "array" => {
                let mut out = Map::new();
                out.insert("type".into(), "array".into());
                let items = match map.get("items").or_else(|| map.get("prefixItems")) {
                    Some(Value::Array(_)) | None => {
                        return Err(format!(
                            "{} is an array without one schema for its items",
                            at(path)
                        ));
                    }
                    Some(items) => items,
                };
                out.insert(
                    "items".into(),
                    self.node(items, depth, &format!("{path}/items"))?,
                );
                copy(map, &mut out, &["description", "minItems", "maxItems"]);
                Ok(out)
            }
            "string" => {
                let mut out = Map::new();
                out.insert("type".into(), "string".into());
                copy(map, &mut out, &["description", "enum", "const", "pattern"]);
                if let Some(Value::String(format)) = map.get("format")
                    && OPENAI_FORMATS.contains(&format.as_str())
                {
                    out.insert("format".into(), format.clone().into());
                }
                Ok(out)
            }
            "number" | "integer" => {
                let mut out = Map::new();
                out.insert("type".into(), t.into());
                copy(
                    map,
                    &mut out,
                    &[
                        "description",
                        "enum",
                        "const",
                        "multipleOf",
                        "minimum",
                        "maximum",
                    ],
                );
                // Draft-4 boolean exclusive bounds have no strict-mode form.
                for key in ["exclusiveMinimum", "exclusiveMaximum"] {
                    if let Some(v) = map.get(key).filter(|v| v.is_number()) {
                        out.insert(key.into(), v.clone());
                    }
                }
                Ok(out)
            }
            "boolean" | "null" => {
                let mut out = Map::new();
                out.insert("type".into(), t.into());
                copy(map, &mut out, &["description", "enum", "const"]);
                Ok(out)
            }
            other => Err(format!("{} has unknown type `{other}`", at(path))),
        }
    }

    fn object(
        &mut self,
        map: &Map<String, Value>,
        depth: usize,
        path: &str,
        is_root: bool,
    ) -> Result<Map<String, Value>, String> {
        if depth > OPENAI_MAX_NESTING {
            return Err(format!(
                "{} is nested deeper than the {OPENAI_MAX_NESTING} levels strict mode allows",
                at(path)
            ));
        }
        let properties = match map.get("properties") {
            Some(Value::Object(p)) => p.clone(),
            _ => Map::new(),
        };
        if properties.is_empty() && !is_root {
            return Err(format!(
                "{} is a free-form object, which strict mode cannot express",
                at(path)
            ));
        }
        let required: HashSet<&str> = match map.get("required") {
            Some(Value::Array(r)) => r.iter().filter_map(Value::as_str).collect(),
            _ => HashSet::new(),
        };
        let mut out_props = Map::new();
        for (name, schema) in &properties {
            self.properties += 1;
            let mut converted = self.node(schema, depth + 1, &format!("{path}/{name}"))?;
            if !required.contains(name.as_str()) && !accepts_null(&converted) {
                make_nullable(&mut converted);
            }
            out_props.insert(name.clone(), converted);
        }
        let mut out = Map::new();
        out.insert("type".into(), "object".into());
        copy(map, &mut out, &["description"]);
        out.insert(
            "required".into(),
            Value::Array(
                properties
                    .keys()
                    .map(|k| Value::String(k.clone()))
                    .collect(),
            ),
        );
        out.insert("properties".into(), Value::Object(out_props));
        out.insert("additionalProperties".into(), Value::Bool(false));
        Ok(out)
    }
}

/// Does a (converted) schema already accept `null`?
fn accepts_null(schema: &Value) -> bool {
    let Value::Object(map) = schema else {
        return true;
    };
    if types_of(map).iter().any(|t| t == "null") {
        return true;
    }
    if let Some(Value::Array(branches)) = map.get("anyOf") {
        return branches.iter().any(accepts_null);
    }
    false
}

/// Makes a converted schema also accept `null`: a type array gains `null` (and an enum the
/// `null` value); anything else becomes `anyOf: [schema, {"type": "null"}]`.
fn make_nullable(schema: &mut Value) {
    let Value::Object(map) = schema else {
        return;
    };
    if map.contains_key("type") && !map.contains_key("$ref") {
        make_nullable_map(map);
        return;
    }
    if let Some(Value::Array(branches)) = map.get_mut("anyOf") {
        branches.push(json!({"type": "null"}));
        return;
    }
    let description = map.remove("description");
    let inner = std::mem::take(map);
    map.insert(
        "anyOf".into(),
        json!([Value::Object(inner), {"type": "null"}]),
    );
    if let Some(d) = description {
        map.insert("description".into(), d);
    }
}

fn make_nullable_map(map: &mut Map<String, Value>) {
    let types = types_of(map);
    if !types.iter().any(|t| t == "null") {
        let mut list: Vec<Value> = types.into_iter().map(Value::String).collect();
        list.push("null".into());
        map.insert("type".into(), Value::Array(list));
    }
    if let Some(c) = map.remove("const") {
        map.insert("enum".into(), json!([c]));
    }
    if let Some(Value::Array(values)) = map.get_mut("enum")
        && !values.contains(&Value::Null)
    {
        values.push(Value::Null);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::super::{ExportFormat, export};
    use super::*;
    use crate::schema::arguments::drop_null_optionals;

    #[test]
    fn strict_optional_properties_become_nullable_and_nulls_come_back_out() {
        let schema = json!({
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "tail": {"type": "integer"},
                "mode": {"enum": ["a", "b"]},
                "opts": {"type": "object", "properties": {"deep": {"type": "boolean"}}},
                "maybe": {"type": ["string", "null"]}
            },
            "required": ["path"]
        });
        let tool = Tool::local("t", schema.clone());
        let e = export(std::slice::from_ref(&tool), ExportFormat::OpenAiStrict);
        let params = &e.tools[0].definition["function"]["parameters"];
        assert_eq!(e.tools[0].definition["function"]["strict"], true);
        assert_eq!(
            params["required"],
            json!(["maybe", "mode", "opts", "path", "tail"])
        );
        assert_eq!(
            params["properties"]["tail"]["type"],
            json!(["integer", "null"])
        );
        assert_eq!(
            params["properties"]["mode"]["enum"],
            json!(["a", "b", null])
        );
        assert_eq!(params["properties"]["path"]["type"], "string");
        assert_eq!(
            params["properties"]["opts"]["properties"]["deep"]["type"],
            json!(["boolean", "null"])
        );

        // What a model sends from that export, back to what the server expects.
        let mut args = json!({
            "path": "/a", "tail": null, "mode": null, "maybe": null,
            "opts": {"deep": null}
        });
        drop_null_optionals(&schema, &mut args);
        assert_eq!(args, json!({"path": "/a", "maybe": null, "opts": {}}));
        let validator = crate::schema::validate::Validator::compile(&schema).unwrap();
        assert!(validator.validate(&args).is_ok());
    }

    #[test]
    fn strict_falls_back_with_a_reason() {
        let tool = Tool::local(
            "t",
            json!({"type": "object", "properties": {"env": {"type": "object", "additionalProperties": {"type": "string"}}}}),
        );
        let e = export(&[tool], ExportFormat::OpenAiStrict);
        assert_eq!(e.tools[0].definition["function"]["strict"], false);
        assert_eq!(
            e.tools[0].notes,
            [
                "exported without strict mode: `/env` is a free-form object, which strict mode cannot express"
            ]
        );
    }

    /// Found by the fuzz tests: `allOf` reaching its own definition through a percent-encoded
    /// pointer, under `items`, recursed until the stack overflowed.
    #[test]
    fn a_definition_reaching_itself_through_all_of_falls_back_instead_of_recursing() {
        let tool = Tool::local(
            "t",
            json!({
                "type": "object",
                "properties": {"x": {"$ref": "#/$defs/d0"}},
                "$defs": {"d0": {"type": "array", "items": {"allOf": [{"$ref": "#/%24defs/d0"}]}}}
            }),
        );
        let e = export(&[tool], ExportFormat::OpenAiStrict);
        assert_eq!(e.tools[0].definition["function"]["strict"], false);
        assert!(
            e.tools[0].notes[0].contains("refers back to itself"),
            "{:?}",
            e.tools[0].notes
        );
    }
}
