//! Provider export: the tool set rendered for a model provider's API.
//!
//! - Anthropic Messages: `{name, description, input_schema}`; the schema as the server gave it,
//!   with a root `$ref`, `allOf`, `anyOf` or `oneOf` folded into one object (Anthropic refuses
//!   them at the top level).
//! - OpenAI chat function tools: `{"type": "function", "function": {name, description,
//!   parameters}}`, descriptions cut to 1024 characters, arrays given `items`.
//! - OpenAI strict: the same with `strict: true` and the schema rewritten to the documented
//!   Structured Outputs subset: every property required (optional ones made nullable), every
//!   object `additionalProperties: false`, only supported keywords and formats, `$ref` only to
//!   `#` or `#/$defs/…`. A schema that cannot be expressed that way (a free-form map, a value of
//!   any type) is exported non-strict, with a note saying why.
//! - Gemini function declarations: the OpenAPI subset Gemini accepts: `$ref` inlined (recursion
//!   cut to a permissive object at a depth limit), `allOf` merged, `oneOf` as `anyOf`, type
//!   arrays and `null` as `nullable`, non-string enums and `const` moved into the description,
//!   every other keyword removed; every schema has a `type` or an `anyOf`.
//!
//! Names are made to fit each provider's rule (`^[a-zA-Z0-9_-]{1,64}$`; Gemini: starts with a
//! letter or `_`, may contain `.` and `:`); a name that had to change gets a stable hash suffix
//! and the export maps it back. Knows nothing of servers: it renders [`Tool`] records.

use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::str::FromStr;

use serde::Serialize;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use super::budget::percent_decode;
use crate::catalog::Tool;

/// Longest function name every provider accepts (Anthropic, OpenAI and Gemini all document 64).
pub const MAX_NAME_LEN: usize = 64;

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

/// How many times Gemini export expands the same `$ref` inside itself before cutting.
pub const GEMINI_REF_DEPTH: usize = 2;

/// Most `$ref` expansions in one Gemini declaration (inlining is exponential in the worst case).
const GEMINI_MAX_EXPANSIONS: usize = 200;

/// Deepest schema nesting Gemini export walks before cutting (guards pathological schemas).
const GEMINI_MAX_DEPTH: usize = 32;

/// The schema keywords Gemini's `Schema` object accepts (Gemini API reference).
pub const GEMINI_KEYWORDS: &[&str] = &[
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

/// The keywords OpenAI strict mode accepts (Structured Outputs "supported schemas").
pub const OPENAI_STRICT_KEYWORDS: &[&str] = &[
    "type",
    "description",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "enum",
    "const",
    "anyOf",
    "$ref",
    "$defs",
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

/// A model provider's tool format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Provider {
    /// Anthropic Messages API tools.
    Anthropic,
    /// OpenAI chat completions function tools.
    OpenAi,
    /// OpenAI function tools with `strict: true`.
    OpenAiStrict,
    /// Gemini function declarations.
    Gemini,
}

impl Provider {
    /// Every provider format.
    pub const ALL: [Provider; 4] = [
        Provider::Anthropic,
        Provider::OpenAi,
        Provider::OpenAiStrict,
        Provider::Gemini,
    ];

    /// The name used on the command line: `anthropic`, `openai`, `openai-strict`, `gemini`.
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::Anthropic => "anthropic",
            Provider::OpenAi => "openai",
            Provider::OpenAiStrict => "openai-strict",
            Provider::Gemini => "gemini",
        }
    }
}

impl fmt::Display for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An unknown provider name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown format `{0}` (expected anthropic, openai, openai-strict or gemini)")]
pub struct UnknownProvider(pub String);

impl FromStr for Provider {
    type Err = UnknownProvider;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Provider::ALL
            .into_iter()
            .find(|p| p.as_str().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| UnknownProvider(s.to_string()))
    }
}

/// Does `name` satisfy `provider`'s function-name rule?
pub fn name_is_valid(name: &str, provider: Provider) -> bool {
    let len_ok = !name.is_empty() && name.len() <= MAX_NAME_LEN;
    match provider {
        Provider::Gemini => {
            len_ok
                && name
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':'))
        }
        _ => {
            len_ok
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        }
    }
}

fn hash_hex(text: &str, len: usize) -> String {
    let digest = Sha256::digest(text.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    hex[..len.min(hex.len())].to_string()
}

/// `name` made to fit `provider`'s rule: unchanged when it fits; otherwise characters outside
/// the rule become `_`, and a stable 6-hex suffix of the original name keeps it distinct.
pub fn provider_name(name: &str, provider: Provider) -> String {
    fit_name(name, provider, 6)
}

fn fit_name(name: &str, provider: Provider, hex: usize) -> String {
    if name_is_valid(name, provider) && hex == 6 {
        return name.to_string();
    }
    let gemini = provider == Provider::Gemini;
    let mut fitted: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric()
                || c == '_'
                || c == '-'
                || (gemini && (c == '.' || c == ':'))
            {
                c
            } else {
                '_'
            }
        })
        .collect();
    if gemini
        && !fitted
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
    {
        fitted.insert(0, '_');
    }
    let suffix = hash_hex(name, hex);
    // ASCII only after the mapping above, so byte truncation is safe.
    fitted.truncate(MAX_NAME_LEN - 1 - suffix.len());
    format!("{fitted}_{suffix}")
}

/// One tool rendered for a provider.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExportedTool {
    /// The name the provider sees (and the model calls).
    pub name: String,
    /// The exposed name of the tool it stands for (what `Hub::call` takes).
    pub tool: String,
    /// The provider's tool definition.
    pub definition: Value,
    /// What had to change to fit the provider, in words.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// A tool set rendered for one provider.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Export {
    /// The format.
    pub provider: Provider,
    /// One entry per tool, in the order given.
    pub tools: Vec<ExportedTool>,
    /// Tools left out because their input schema cannot be used (see
    /// [`super::budget`]), each with the reason: a model must not be offered them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unusable: Vec<UnusableTool>,
}

/// A tool left out of an export, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UnusableTool {
    /// The exposed tool name.
    pub tool: String,
    /// Why its schema cannot be used, naming the place.
    pub reason: String,
}

impl Export {
    /// The definitions as the provider's `tools` array (Gemini: the `functionDeclarations`).
    pub fn definitions(&self) -> Value {
        Value::Array(self.tools.iter().map(|t| t.definition.clone()).collect())
    }

    /// The exposed tool name a provider-side name stands for (to route the model's call).
    pub fn tool_name(&self, provider_name: &str) -> Option<&str> {
        self.tools
            .iter()
            .find(|t| t.name == provider_name)
            .map(|t| t.tool.as_str())
    }
}

/// Renders `tools` for `provider`. Never fails: what a provider cannot express is rewritten or
/// dropped, and said in the tool's notes; a tool whose schema cannot be used at all (a `$ref`
/// cycle, an exponential expansion) is left out and listed in [`Export::unusable`].
pub fn export(tools: &[Tool], provider: Provider) -> Export {
    let mut used: HashSet<String> = HashSet::new();
    let mut unusable = Vec::new();
    let tools = tools
        .iter()
        .filter(|tool| {
            // Every walk below is recursive: only schemas within the bounds reach them.
            let reason = tool.unusable.clone().or_else(|| {
                super::budget::check(&tool.input_schema)
                    .err()
                    .map(|e| format!("its input schema cannot be used: {e}"))
            });
            match reason {
                Some(reason) => {
                    unusable.push(UnusableTool {
                        tool: tool.name.clone(),
                        reason,
                    });
                    false
                }
                None => true,
            }
        })
        .map(|tool| {
            let mut notes = Vec::new();
            let mut name = provider_name(&tool.name, provider);
            let mut hex = 6;
            while used.contains(&name) && hex < 40 {
                hex += 2;
                name = fit_name(&tool.name, provider, hex);
            }
            used.insert(name.clone());
            if name != tool.name {
                notes.push(format!(
                    "name `{}` does not fit {provider}'s rules; exported as `{name}`",
                    tool.name
                ));
            }
            let definition = match provider {
                Provider::Anthropic => anthropic(tool, &name, &mut notes),
                Provider::OpenAi => openai(tool, &name, &mut notes),
                Provider::OpenAiStrict => openai_strict(tool, &name, &mut notes),
                Provider::Gemini => gemini(tool, &name, &mut notes),
            };
            ExportedTool {
                name,
                tool: tool.name.clone(),
                definition,
                notes,
            }
        })
        .collect();
    Export {
        provider,
        tools,
        unusable,
    }
}

// ---------------------------------------------------------------------------------------------
// Shared schema helpers.

/// The schema a local `$ref` (`#`, `#/$defs/x`, any `#/json/pointer`) points at in `root`.
fn resolve_ref<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
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
fn follow_refs(node: &Value, root: &Value) -> Map<String, Value> {
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
fn merge_into(target: &mut Map<String, Value>, branch: Map<String, Value>) {
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
fn merge_all_of(node: &mut Map<String, Value>, root: &Value) {
    if let Some(Value::Array(branches)) = node.remove("allOf") {
        for branch in branches {
            let mut branch = follow_refs(&branch, root);
            merge_all_of(&mut branch, root);
            merge_into(node, branch);
        }
    }
}

/// A root schema every provider takes: a root `$ref`, `allOf`, `anyOf` or `oneOf` folded into
/// one object whose properties are the union (required only where every alternative requires
/// them), `type: object`.
fn root_object(schema: &Value, notes: &mut Vec<String>) -> Map<String, Value> {
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

fn types_of(node: &Map<String, Value>) -> Vec<String> {
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
fn inferred_type(node: &Map<String, Value>) -> Option<String> {
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

fn description(tool: &Tool) -> Option<String> {
    tool.description
        .clone()
        .or_else(|| tool.title.clone())
        .filter(|d| !d.trim().is_empty())
}

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

// ---------------------------------------------------------------------------------------------
// Anthropic.

fn anthropic(tool: &Tool, name: &str, notes: &mut Vec<String>) -> Value {
    let schema = root_object(&tool.input_schema, notes);
    let mut def = Map::new();
    def.insert("name".into(), name.into());
    if let Some(d) = description(tool) {
        def.insert("description".into(), d.into());
    }
    def.insert("input_schema".into(), Value::Object(schema));
    Value::Object(def)
}

// ---------------------------------------------------------------------------------------------
// OpenAI.

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

fn openai(tool: &Tool, name: &str, notes: &mut Vec<String>) -> Value {
    let parameters = openai_parameters(tool, notes);
    openai_function(tool, name, parameters, None, notes)
}

fn openai_strict(tool: &Tool, name: &str, notes: &mut Vec<String>) -> Value {
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

fn copy(from: &Map<String, Value>, to: &mut Map<String, Value>, keys: &[&str]) {
    for key in keys {
        if let Some(v) = from.get(*key) {
            to.insert((*key).to_string(), v.clone());
        }
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

// ---------------------------------------------------------------------------------------------
// Gemini.

fn gemini(tool: &Tool, name: &str, notes: &mut Vec<String>) -> Value {
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

// ---------------------------------------------------------------------------------------------
// Arguments coming back.

/// Removes `null` values the model sent for optional properties whose schema does not accept
/// `null` — what a model working from an OpenAI strict export sends for "not given". Harmless
/// for any call: such a `null` would fail validation anyway. Follows `properties`, `items` and
/// local `$ref`s of `schema`. Does nothing for a schema beyond [`super::budget`]'s bounds.
pub fn drop_null_optionals(schema: &Value, arguments: &mut Value) {
    if super::budget::check(schema).is_ok() {
        strip(schema, schema, arguments, 0);
    }
}

/// [`drop_null_optionals`] for a schema already within the bounds (it compiled).
pub(crate) fn drop_null_optionals_checked(schema: &Value, arguments: &mut Value) {
    strip(schema, schema, arguments, 0);
}

fn strip(root: &Value, schema: &Value, value: &mut Value, depth: usize) {
    if depth > GEMINI_MAX_DEPTH {
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
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    /// The fixture tools shared with `tests/provider_rules.rs`.
    pub(crate) fn fixtures() -> Vec<Tool> {
        let list: Vec<Value> =
            serde_json::from_str(include_str!("testdata/fixtures.json")).unwrap();
        list.iter()
            .map(|t| {
                let mut tool = Tool::local(t["name"].as_str().unwrap(), t["inputSchema"].clone());
                if let Some(d) = t["description"].as_str() {
                    tool = tool.with_description(d);
                }
                tool
            })
            .collect()
    }

    fn snapshot(provider: Provider) -> Export {
        export(&fixtures(), provider)
    }

    #[test]
    fn anthropic_golden() {
        insta::assert_json_snapshot!("anthropic", snapshot(Provider::Anthropic));
    }

    #[test]
    fn openai_golden() {
        insta::assert_json_snapshot!("openai", snapshot(Provider::OpenAi));
    }

    #[test]
    fn openai_strict_golden() {
        insta::assert_json_snapshot!("openai_strict", snapshot(Provider::OpenAiStrict));
    }

    #[test]
    fn gemini_golden() {
        insta::assert_json_snapshot!("gemini", snapshot(Provider::Gemini));
    }

    #[test]
    fn names_fit_each_provider() {
        assert!(name_is_valid("mcp__github__create_issue", Provider::OpenAi));
        assert!(!name_is_valid("a.b", Provider::OpenAi));
        assert!(name_is_valid("a.b:c", Provider::Gemini));
        assert!(!name_is_valid("9lives", Provider::Gemini));
        assert!(name_is_valid("9lives", Provider::Anthropic));
        assert!(!name_is_valid("", Provider::Anthropic));
        assert!(!name_is_valid(&"x".repeat(65), Provider::Anthropic));
        assert!(name_is_valid(&"x".repeat(64), Provider::Gemini));

        assert_eq!(provider_name("read_file", Provider::OpenAi), "read_file");
        let dotted = provider_name("fs.read", Provider::OpenAi);
        assert!(dotted.starts_with("fs_read_"), "{dotted}");
        assert_eq!(provider_name("fs.read", Provider::Gemini), "fs.read");
        let digit = provider_name("2fa", Provider::Gemini);
        assert!(digit.starts_with("_2fa_"), "{digit}");
        let long = provider_name(&"ü".repeat(70), Provider::Anthropic);
        assert_eq!(long.len(), MAX_NAME_LEN);
        for p in Provider::ALL {
            for name in ["", "a b", "ä", &"y".repeat(200), "-x", ".x"] {
                let fitted = provider_name(name, p);
                assert!(name_is_valid(&fitted, p), "{p}: {name:?} → {fitted:?}");
            }
        }
        // Stable.
        assert_eq!(
            provider_name("fs.read", Provider::OpenAi),
            provider_name("fs.read", Provider::OpenAi)
        );
    }

    #[test]
    fn fitted_names_stay_unique_and_map_back() {
        let tools = vec![
            Tool::local("a.b", json!({"type": "object"})),
            Tool::local("a_b", json!({"type": "object"})),
            Tool::local("a:b", json!({"type": "object"})),
        ];
        for p in Provider::ALL {
            let e = export(&tools, p);
            let names: HashSet<&str> = e.tools.iter().map(|t| t.name.as_str()).collect();
            assert_eq!(names.len(), 3, "{p}: {names:?}");
            for t in &e.tools {
                assert_eq!(e.tool_name(&t.name), Some(t.tool.as_str()));
            }
        }
        let e = export(&tools, Provider::OpenAi);
        assert_eq!(e.tools[1].name, "a_b");
        assert!(
            e.tools[0].notes[0].contains("exported as"),
            "{:?}",
            e.tools[0].notes
        );
    }

    #[test]
    fn providers_parse_from_their_names() {
        for p in Provider::ALL {
            assert_eq!(p.as_str().parse::<Provider>(), Ok(p));
        }
        assert!("claude".parse::<Provider>().is_err());
    }

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
        let e = export(std::slice::from_ref(&tool), Provider::OpenAiStrict);
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
        let validator = super::super::validate::Validator::compile(&schema).unwrap();
        assert!(validator.validate(&args).is_ok());
    }

    #[test]
    fn strict_falls_back_with_a_reason() {
        let tool = Tool::local(
            "t",
            json!({"type": "object", "properties": {"env": {"type": "object", "additionalProperties": {"type": "string"}}}}),
        );
        let e = export(&[tool], Provider::OpenAiStrict);
        assert_eq!(e.tools[0].definition["function"]["strict"], false);
        assert_eq!(
            e.tools[0].notes,
            [
                "exported without strict mode: `/env` is a free-form object, which strict mode cannot express"
            ]
        );
    }

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
        let e = export(&[tool], Provider::Gemini);
        let text = e.definitions().to_string();
        assert!(!text.contains("$ref"), "{text}");
        assert!(
            text.contains("recursive structure; deeper levels omitted"),
            "{text}"
        );
    }
}
