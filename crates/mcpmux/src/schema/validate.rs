//! Argument validation: a tool's `inputSchema` compiled once with the `jsonschema` crate
//! (draft 2020-12 unless `$schema` names draft 7, 6, 4 or 2019-09; `$ref`/`$defs`, `anyOf`,
//! `oneOf`, enums and formats), problems reported with their JSON pointer in words a model can
//! act on, compiled validators cached per (server, tool, schema hash). A schema that does not
//! compile never panics and never hides its tool: compiling returns an error to log, and calls
//! to that tool go unvalidated. `structuredContent` is checked against `outputSchema` the same
//! way, for reporting only.

use std::collections::HashMap;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex, MutexGuard};

use jsonschema::error::{TypeKind, ValidationErrorKind};
use jsonschema::{Draft, JsonType, ValidationError};
use serde_json::Value;

use crate::sync;

/// Most problems reported for one call: a model fixes the first few, then calls again.
const MAX_PROBLEMS: usize = 20;

/// Longest rendering of an offending value in a message.
const MAX_VALUE_CHARS: usize = 80;

/// One thing wrong with a call's arguments (or a result's structured content).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ArgumentProblem {
    /// JSON pointer to the offending value (`/items/0/name`); empty for the whole object.
    pub path: String,
    /// What is wrong, in words a model can act on.
    pub message: String,
}

impl fmt::Display for ArgumentProblem {
    /// `/count: expected an integer, got "3"`, or the message alone at the root.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

/// All problems as one message: one per line, the way `InvalidArguments` shows them.
pub fn describe(problems: &[ArgumentProblem]) -> String {
    match problems {
        [] => "the arguments do not match the tool's input schema".to_string(),
        [one] => one.to_string(),
        many => {
            let lines: Vec<String> = many.iter().map(|p| format!("- {p}")).collect();
            format!("{} problems:\n{}", many.len(), lines.join("\n"))
        }
    }
}

/// A schema that could not be compiled (the tool stays exposed and goes unvalidated), or one
/// beyond the bounds `budget.rs` keeps (the tool is listed as unusable and calls to it are
/// refused: validating it would never end or overflow the stack).
#[derive(Debug, thiserror::Error)]
#[error("{}{message}", if *unusable { "" } else { "invalid JSON schema: " })]
pub struct SchemaError {
    /// What the compiler (or the bound) said.
    pub message: String,
    /// True when the schema cannot be used at all: calls must be refused, not sent unchecked.
    pub unusable: bool,
    /// The compiler's error, when it refused the schema (a bound's refusal has none).
    #[source]
    pub source: Option<Box<dyn std::error::Error + Send + Sync>>,
}

/// Deepest call arguments (or structured content) validated: a model never needs more, and
/// the validator recurses once per level.
pub const MAX_INSTANCE_DEPTH: usize = 64;

/// A compiled schema.
#[derive(Debug)]
pub struct Validator {
    schema: Value,
    compiled: jsonschema::Validator,
}

/// The draft a schema's `$schema` names; 2020-12 when absent or unknown.
pub fn draft_of(schema: &Value) -> Draft {
    let uri = schema.get("$schema").and_then(Value::as_str).unwrap_or("");
    if uri.contains("draft-07") {
        Draft::Draft7
    } else if uri.contains("draft-06") {
        Draft::Draft6
    } else if uri.contains("draft-04") {
        Draft::Draft4
    } else if uri.contains("2019-09") {
        Draft::Draft201909
    } else {
        Draft::Draft202012
    }
}

impl Validator {
    /// Compiles `schema`; formats are asserted, remote `$ref`s are not fetched.
    pub fn compile(schema: &Value) -> Result<Self, SchemaError> {
        super::budget::check(schema).map_err(|message| SchemaError {
            message,
            unusable: true,
            source: None,
        })?;
        let compiled = jsonschema::options()
            .with_draft(draft_of(schema))
            .should_validate_formats(true)
            .build(schema)
            .map_err(|e| SchemaError {
                message: e.to_string(),
                unusable: false,
                source: Some(Box::new(e)),
            })?;
        Ok(Validator {
            schema: schema.clone(),
            compiled,
        })
    }

    /// Checks `instance`; every problem (up to 20) with its path.
    pub fn validate(&self, instance: &Value) -> Result<(), Vec<ArgumentProblem>> {
        if super::budget::depth_exceeds(instance, MAX_INSTANCE_DEPTH) {
            return Err(vec![ArgumentProblem {
                path: String::new(),
                message: format!("nested deeper than {MAX_INSTANCE_DEPTH} levels"),
            }]);
        }
        if self.compiled.is_valid(instance) {
            return Ok(());
        }
        let mut problems: Vec<ArgumentProblem> = self
            .compiled
            .iter_errors(instance)
            .map(|e| problem(&self.schema, &e))
            .collect();
        problems.dedup();
        problems.truncate(MAX_PROBLEMS);
        if problems.is_empty() {
            problems.push(ArgumentProblem {
                path: String::new(),
                message: "does not match the tool's input schema".into(),
            });
        }
        Err(problems)
    }
}

fn problem(schema: &Value, error: &ValidationError<'_>) -> ArgumentProblem {
    ArgumentProblem {
        path: error.instance_path().as_str().to_string(),
        message: message(schema, error),
    }
}

/// A value as JSON, cut to a readable length.
fn show(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() <= MAX_VALUE_CHARS {
        text
    } else {
        let cut: String = text.chars().take(MAX_VALUE_CHARS).collect();
        format!("{cut}…")
    }
}

fn article(t: JsonType) -> &'static str {
    match t {
        JsonType::Array => "an array",
        JsonType::Boolean => "a boolean",
        JsonType::Integer => "an integer",
        JsonType::Null => "null",
        JsonType::Number => "a number",
        JsonType::Object => "an object",
        JsonType::String => "a string",
    }
}

fn expected_types(kind: &TypeKind) -> (String, Vec<JsonType>) {
    let types: Vec<JsonType> = match kind {
        TypeKind::Single(t) => vec![*t],
        TypeKind::Multiple(set) => set.iter().collect(),
    };
    let words: Vec<&str> = types.iter().map(|t| article(*t)).collect();
    let text = match words.as_slice() {
        [] => "another type".to_string(),
        [one] => (*one).to_string(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    };
    (text, types)
}

/// A hint when the model quoted a value it should have sent as JSON.
fn quoted_value_hint(types: &[JsonType], instance: &Value) -> &'static str {
    let Some(text) = instance.as_str() else {
        return "";
    };
    let parsed: Option<Value> = serde_json::from_str(text.trim()).ok();
    let wants = |t: JsonType| types.contains(&t);
    match parsed {
        Some(Value::Number(n))
            if wants(JsonType::Number)
                || (wants(JsonType::Integer) && (n.is_i64() || n.is_u64())) =>
        {
            " (send the number itself, not a string)"
        }
        Some(Value::Bool(_)) if wants(JsonType::Boolean) => " (send true or false, not a string)",
        Some(Value::Array(_)) if wants(JsonType::Array) => {
            " (send the array itself, not a string containing JSON)"
        }
        Some(Value::Object(_)) if wants(JsonType::Object) => {
            " (send the object itself, not a string containing JSON)"
        }
        _ => "",
    }
}

fn message(schema: &Value, error: &ValidationError<'_>) -> String {
    let instance = error.instance();
    let got = show(instance);
    match error.kind() {
        ValidationErrorKind::Type { kind } => {
            let (expected, types) = expected_types(kind);
            let hint = quoted_value_hint(&types, instance);
            format!("expected {expected}, got {got}{hint}")
        }
        ValidationErrorKind::Required { property } => match property.as_str() {
            Some(name) => format!("missing required property `{name}`"),
            None => format!("missing required property {property}"),
        },
        ValidationErrorKind::AdditionalProperties { unexpected } => {
            let names: Vec<String> = unexpected.iter().map(|n| format!("`{n}`")).collect();
            let noun = if names.len() == 1 {
                "unexpected property"
            } else {
                "unexpected properties"
            };
            let allowed = allowed_properties(schema, error);
            match allowed {
                Some(list) if !list.is_empty() => {
                    format!("{noun} {}; allowed: {list}", names.join(", "))
                }
                _ => format!("{noun} {} (not in the schema)", names.join(", ")),
            }
        }
        ValidationErrorKind::UnevaluatedProperties { unexpected } => {
            let names: Vec<String> = unexpected.iter().map(|n| format!("`{n}`")).collect();
            format!(
                "unexpected properties {} (not in the schema)",
                names.join(", ")
            )
        }
        ValidationErrorKind::Enum { options } => {
            let list = match options.as_ref() {
                Value::Array(items) => items.iter().map(show).collect::<Vec<_>>().join(", "),
                other => show(other),
            };
            format!("must be one of {list}; got {got}")
        }
        ValidationErrorKind::Constant { expected_value } => {
            format!("must be exactly {}; got {got}", show(expected_value))
        }
        ValidationErrorKind::Format { format } => {
            format!("expected a string in `{format}` format, got {got}")
        }
        ValidationErrorKind::Pattern { pattern } => {
            format!("must match the pattern `{pattern}`; got {got}")
        }
        ValidationErrorKind::Minimum { limit } => format!("must be at least {limit}; got {got}"),
        ValidationErrorKind::Maximum { limit } => format!("must be at most {limit}; got {got}"),
        ValidationErrorKind::ExclusiveMinimum { limit } => {
            format!("must be greater than {limit}; got {got}")
        }
        ValidationErrorKind::ExclusiveMaximum { limit } => {
            format!("must be less than {limit}; got {got}")
        }
        ValidationErrorKind::MultipleOf { multiple_of } => {
            format!("must be a multiple of {multiple_of}; got {got}")
        }
        ValidationErrorKind::MinLength { limit } => {
            format!("must be at least {limit} characters long; got {got}")
        }
        ValidationErrorKind::MaxLength { limit } => {
            format!("must be at most {limit} characters long")
        }
        ValidationErrorKind::MinItems { limit } => format!("must have at least {limit} items"),
        ValidationErrorKind::MaxItems { limit } => format!("must have at most {limit} items"),
        ValidationErrorKind::MinProperties { limit } => {
            format!("must have at least {limit} properties")
        }
        ValidationErrorKind::MaxProperties { limit } => {
            format!("must have at most {limit} properties")
        }
        ValidationErrorKind::UniqueItems => "items must be unique".to_string(),
        ValidationErrorKind::Contains => "must contain at least one matching item".to_string(),
        ValidationErrorKind::FalseSchema => "is not allowed here".to_string(),
        ValidationErrorKind::Not { .. } => "matches a form that is not allowed".to_string(),
        ValidationErrorKind::AnyOf { context } | ValidationErrorKind::OneOfNotValid { context } => {
            let base = error.instance_path().as_str();
            let branches: Vec<String> = context
                .iter()
                .enumerate()
                .map(|(i, errors)| {
                    let inner: Vec<String> = errors
                        .iter()
                        .take(3)
                        .map(|e| {
                            let sub = e.instance_path().as_str();
                            let rel = sub.strip_prefix(base).unwrap_or(sub);
                            let msg = message(schema, e);
                            if rel.is_empty() {
                                msg
                            } else {
                                format!("{rel}: {msg}")
                            }
                        })
                        .collect();
                    format!("({}) {}", i + 1, inner.join("; "))
                })
                .collect();
            if branches.is_empty() {
                format!("does not match any of the allowed forms; got {got}")
            } else {
                format!(
                    "does not match any of the allowed forms: {}",
                    branches.join(" ")
                )
            }
        }
        ValidationErrorKind::OneOfMultipleValid { .. } => {
            "matches more than one of the allowed forms; it must match exactly one".to_string()
        }
        ValidationErrorKind::PropertyNames { error } => {
            format!("property name not allowed: {}", message(schema, error))
        }
        _ => error.to_string(),
    }
}

/// The property names the object schema that raised an `additionalProperties` error declares.
fn allowed_properties(schema: &Value, error: &ValidationError<'_>) -> Option<String> {
    let pointer = error
        .absolute_keyword_location()
        .and_then(|uri| uri.fragment().map(|f| f.as_str().to_string()))
        .or_else(|| {
            let path = error.schema_path().as_str();
            (!path.contains("$ref")).then(|| path.to_string())
        })?;
    let parent = pointer.strip_suffix("/additionalProperties")?;
    let parent = super::budget::percent_decode(parent);
    let object = schema.pointer(&parent)?;
    let names: Vec<String> = object
        .get("properties")?
        .as_object()?
        .keys()
        .map(|k| format!("`{k}`"))
        .collect();
    Some(names.join(", "))
}

/// A stable hash of a JSON value (same process), cheaper than serialising it.
pub fn schema_hash(value: &Value) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    hash_value(value, &mut hasher);
    hasher.finish()
}

fn hash_value(value: &Value, h: &mut impl Hasher) {
    match value {
        Value::Null => 0u8.hash(h),
        Value::Bool(b) => (1u8, b).hash(h),
        Value::Number(n) => (2u8, n.to_string()).hash(h),
        Value::String(s) => (3u8, s).hash(h),
        Value::Array(items) => {
            (4u8, items.len()).hash(h);
            items.iter().for_each(|v| hash_value(v, h));
        }
        Value::Object(map) => {
            (5u8, map.len()).hash(h);
            for (k, v) in map {
                k.hash(h);
                hash_value(v, h);
            }
        }
    }
}

/// The compiled form of one schema, or why it did not compile.
pub type Compiled = Arc<Result<Validator, SchemaError>>;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct CacheKey {
    server: String,
    tool: String,
    output: bool,
}

/// Compiled validators, reused while a tool's schema stays the same (keyed by server, raw
/// tool name and schema hash; a changed schema replaces the old entry). Cheap to share.
#[derive(Debug, Default)]
pub struct ValidatorCache {
    entries: Mutex<HashMap<CacheKey, (u64, Compiled)>>,
}

impl ValidatorCache {
    /// An empty cache.
    #[cfg(test)]
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<CacheKey, (u64, Compiled)>> {
        sync::lock(&self.entries)
    }

    fn compiled(&self, key: CacheKey, schema: &Value) -> Compiled {
        let hash = schema_hash(schema);
        if let Some((h, compiled)) = self.lock().get(&key)
            && *h == hash
        {
            return compiled.clone();
        }
        // Compile outside the lock: other tools keep validating meanwhile.
        let compiled = Arc::new(Validator::compile(schema));
        match compiled.as_ref() {
            Err(e) if e.unusable => tracing::warn!(
                server = %key.server,
                tool = %key.tool,
                "{} schema cannot be used, {}: {e}",
                if key.output { "output" } else { "input" },
                if key.output { "results go unchecked" } else { "calls are refused" }
            ),
            Err(e) => tracing::warn!(
                server = %key.server,
                tool = %key.tool,
                "{} schema does not compile, calls go unvalidated: {e}",
                if key.output { "output" } else { "input" }
            ),
            Ok(_) => {}
        }
        self.lock().insert(key, (hash, compiled.clone()));
        compiled
    }

    /// The compiled input schema of `server`'s tool `tool`.
    pub fn input(&self, server: &str, tool: &str, schema: &Value) -> Compiled {
        self.compiled(
            CacheKey {
                server: server.to_string(),
                tool: tool.to_string(),
                output: false,
            },
            schema,
        )
    }

    /// The compiled output schema of `server`'s tool `tool`.
    pub fn output(&self, server: &str, tool: &str, schema: &Value) -> Compiled {
        self.compiled(
            CacheKey {
                server: server.to_string(),
                tool: tool.to_string(),
                output: true,
            },
            schema,
        )
    }

    /// Checks `structuredContent` against an output schema: the problems, never an error.
    pub fn check_output(
        &self,
        server: &str,
        tool: &str,
        schema: &Value,
        structured: &Value,
    ) -> Vec<ArgumentProblem> {
        match self.output(server, tool, schema).as_ref() {
            Ok(validator) => validator.validate(structured).err().unwrap_or_default(),
            Err(_) => Vec::new(),
        }
    }

    /// Keeps only the validators of tools `listed` says are still there: a server that renames
    /// its tools on every `list_changed` (or one removed by a reload) must not grow the cache
    /// for as long as the hub lives.
    pub(crate) fn retain_listed(&self, listed: impl Fn(&str, &str) -> bool) {
        self.lock().retain(|key, _| listed(&key.server, &key.tool));
    }

    /// How many schemas are cached.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_schema_that_does_not_compile_keeps_the_compilers_error_as_its_cause() {
        let Err(error) = Validator::compile(&json!({"type": 3})) else {
            panic!("a schema of type 3 compiled");
        };
        let cause = std::error::Error::source(&error).unwrap_or_else(|| panic!("{error}"));
        assert!(
            cause
                .downcast_ref::<jsonschema::ValidationError<'static>>()
                .is_some(),
            "{cause}"
        );
        assert_eq!(error.to_string(), format!("invalid JSON schema: {cause}"));
    }

    fn problems(schema: Value, args: Value) -> Vec<String> {
        Validator::compile(&schema)
            .unwrap()
            .validate(&args)
            .err()
            .unwrap_or_default()
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    fn file_schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "count": {"type": "integer", "minimum": 1},
                "mode": {"enum": ["read", "write"]},
                "items": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {"name": {"type": "string"}, "size": {"type": "number"}},
                        "required": ["name"],
                        "additionalProperties": false
                    }
                }
            },
            "required": ["path"]
        })
    }

    #[test]
    fn valid_arguments_pass() {
        let v = Validator::compile(&file_schema()).unwrap();
        assert!(
            v.validate(&json!({"path": "/a", "count": 2, "items": [{"name": "x"}]}))
                .is_ok()
        );
    }

    #[test]
    fn messages_name_the_path_and_what_to_send() {
        assert_eq!(
            problems(file_schema(), json!({"count": "3"})),
            [
                "missing required property `path`",
                "/count: expected an integer, got \"3\" (send the number itself, not a string)",
            ]
        );
        assert_eq!(
            problems(
                file_schema(),
                json!({"path": "p", "items": [{"name": "a"}, {"size": 1, "nmae": "b"}]})
            ),
            [
                "/items/1: unexpected property `nmae`; allowed: `name`, `size`",
                "/items/1: missing required property `name`",
            ]
        );
        assert_eq!(
            problems(
                file_schema(),
                json!({"path": "p", "mode": "append", "count": 0})
            ),
            [
                "/count: must be at least 1; got 0",
                "/mode: must be one of \"read\", \"write\"; got \"append\"",
            ]
        );
        assert_eq!(
            problems(file_schema(), json!({"path": 5, "items": "[]"})),
            [
                "/items: expected an array, got \"[]\" (send the array itself, not a string containing JSON)",
                "/path: expected a string, got 5",
            ]
        );
    }

    #[test]
    fn refs_defs_any_of_and_one_of() {
        let schema = json!({
            "type": "object",
            "$defs": {
                "point": {
                    "type": "object",
                    "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
                    "required": ["x", "y"]
                }
            },
            "properties": {
                "at": {"$ref": "#/$defs/point"},
                "size": {"anyOf": [{"type": "integer"}, {"type": "string", "pattern": "^[0-9]+px$"}]},
                "shape": {"oneOf": [{"const": "circle"}, {"const": "square"}]}
            }
        });
        assert_eq!(
            problems(schema.clone(), json!({"at": {"x": 1}})),
            ["/at: missing required property `y`"]
        );
        assert_eq!(
            problems(schema.clone(), json!({"size": "12em"})),
            [
                "/size: does not match any of the allowed forms: (1) expected an integer, got \"12em\" \
                 (2) must match the pattern `^[0-9]+px$`; got \"12em\""
            ]
        );
        assert_eq!(
            problems(schema, json!({"shape": "hexagon"})),
            [
                "/shape: does not match any of the allowed forms: (1) must be exactly \"circle\"; \
                 got \"hexagon\" (2) must be exactly \"square\"; got \"hexagon\""
            ]
        );
    }

    #[test]
    fn formats_are_asserted_in_every_draft() {
        for schema_uri in [None, Some("http://json-schema.org/draft-07/schema#")] {
            let mut schema = json!({
                "type": "object",
                "properties": {"when": {"type": "string", "format": "date-time"}}
            });
            if let Some(uri) = schema_uri {
                schema["$schema"] = json!(uri);
            }
            assert_eq!(
                problems(schema, json!({"when": "yesterday"})),
                ["/when: expected a string in `date-time` format, got \"yesterday\""]
            );
        }
    }

    #[test]
    fn the_draft_follows_dollar_schema() {
        assert_eq!(draft_of(&json!({})), Draft::Draft202012);
        assert_eq!(
            draft_of(&json!({"$schema": "http://json-schema.org/draft-07/schema#"})),
            Draft::Draft7
        );
        assert_eq!(
            draft_of(&json!({"$schema": "https://json-schema.org/draft/2020-12/schema"})),
            Draft::Draft202012
        );
        assert_eq!(
            draft_of(&json!({"$schema": "http://json-schema.org/draft-04/schema#"})),
            Draft::Draft4
        );
        // Draft 7: `definitions` and array-form `items` work.
        let schema = json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "definitions": {"n": {"type": "integer"}},
            "properties": {"pair": {"type": "array", "items": [{"$ref": "#/definitions/n"}, {"type": "string"}]}}
        });
        assert_eq!(
            problems(schema, json!({"pair": ["a", "b"]})),
            ["/pair/0: expected an integer, got \"a\""]
        );
    }

    #[test]
    fn describe_lists_every_problem() {
        let ps = vec![
            ArgumentProblem {
                path: String::new(),
                message: "missing required property `path`".into(),
            },
            ArgumentProblem {
                path: "/count".into(),
                message: "expected an integer, got \"3\"".into(),
            },
        ];
        assert_eq!(
            describe(&ps),
            "2 problems:\n- missing required property `path`\n- /count: expected an integer, got \"3\""
        );
        assert_eq!(describe(&ps[1..]), "/count: expected an integer, got \"3\"");
    }

    #[test]
    fn invalid_schemas_are_errors_not_panics_and_skip_validation() {
        let bad = [
            json!({"type": "object", "properties": {"x": {"type": "strnig"}}}),
            json!({"type": "object", "properties": {"x": {"type": "string", "pattern": "(unclosed"}}}),
            json!({"$ref": "#/$defs/missing"}),
            json!({"$ref": "https://example.com/remote.json"}),
        ];
        let cache = ValidatorCache::new();
        for schema in bad {
            assert!(Validator::compile(&schema).is_err(), "{schema}");
            let tool = crate::catalog::Tool::local("t", schema);
            assert!(
                cache
                    .prepare(&tool, None, json!({"x": 1}).as_object().cloned().unwrap())
                    .is_ok()
            );
        }
    }

    #[test]
    fn the_cache_reuses_and_replaces_compiled_validators() {
        let cache = ValidatorCache::new();
        let schema = file_schema();
        let a = cache.input("fs", "read", &schema);
        let b = cache.input("fs", "read", &schema.clone());
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!(cache.len(), 1);
        let changed = json!({"type": "object", "required": ["other"]});
        let c = cache.input("fs", "read", &changed);
        assert!(!Arc::ptr_eq(&a, &c));
        assert_eq!(cache.len(), 1, "a new schema version replaces the old one");
        let mut tool = crate::catalog::Tool::local("read", changed);
        tool.server = "fs".into();
        assert!(cache.prepare(&tool, None, serde_json::Map::new()).is_err());
        cache.input("other", "read", &schema);
        assert_eq!(cache.len(), 2);
        cache.retain_listed(|server, _| server != "fs");
        assert_eq!(cache.len(), 1);
    }

    #[test]
    fn a_server_renaming_its_tools_on_every_list_does_not_grow_the_cache() {
        let cache = ValidatorCache::new();
        for round in 0..100 {
            let name = format!("tool-{round}");
            cache.input("churn", &name, &file_schema());
            cache.output("churn", &name, &file_schema());
            cache.retain_listed(|server, tool| server == "churn" && tool == name);
        }
        assert_eq!(
            cache.len(),
            2,
            "only the listed tool's input and output validators stay"
        );
    }

    #[test]
    fn output_checks_report_without_failing() {
        let cache = ValidatorCache::new();
        let schema = json!({"type": "object", "properties": {"sum": {"type": "number"}}, "required": ["sum"]});
        assert!(
            cache
                .check_output("s", "add", &schema, &json!({"sum": 3}))
                .is_empty()
        );
        let found: Vec<String> = cache
            .check_output("s", "add", &schema, &json!({"sum": "3"}))
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            found,
            ["/sum: expected a number, got \"3\" (send the number itself, not a string)"]
        );
        // Input and output schemas of the same tool are cached apart.
        cache.input("s", "add", &json!({"type": "object"}));
        assert_eq!(cache.len(), 2);
    }

    #[test]
    fn hashes_are_stable_and_distinguish_schemas() {
        let a = file_schema();
        assert_eq!(schema_hash(&a), schema_hash(&a.clone()));
        assert_ne!(schema_hash(&a), schema_hash(&json!({"type": "object"})));
        assert_ne!(schema_hash(&json!([1, [2]])), schema_hash(&json!([[1], 2])));
    }
}
