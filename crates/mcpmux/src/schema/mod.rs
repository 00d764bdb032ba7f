//! Tool schemas: argument validation before a call goes on the wire (`validate`) and the tool
//! set rendered for model providers (`export`). Knows nothing of connections: it works on
//! schemas and [`Tool`] records.

pub mod budget;
pub mod export;
#[cfg(test)]
mod fuzz;
pub mod validate;

use serde_json::Value;

use crate::catalog::Tool;

pub use export::{Export, ExportedTool, Provider, UnusableTool, drop_null_optionals, export};
pub use validate::{ArgumentProblem, SchemaError, Validator, ValidatorCache, describe};

/// Prepares a call's arguments (an object; `{}` for none) for `tool`: `null`s the model sent
/// for optional properties that do not take `null` are dropped (what an OpenAI strict export
/// leads to), then the rest is validated against the input schema. A schema that does not
/// compile lets the call through unvalidated; one that cannot be used refuses it.
pub fn check_call(
    cache: &ValidatorCache,
    tool: &Tool,
    arguments: &mut Value,
) -> Result<(), Vec<ArgumentProblem>> {
    let compiled = cache.input(&tool.server, &tool.raw_name, &tool.input_schema);
    match prepare_call(&compiled, &tool.input_schema, arguments) {
        Ok(()) => Ok(()),
        Err(CallRefusal::Arguments(problems)) => Err(problems),
        Err(CallRefusal::Unusable(reason)) => Err(vec![ArgumentProblem {
            path: String::new(),
            message: reason,
        }]),
    }
}

/// Why a call was stopped before it reached the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallRefusal {
    /// The arguments do not match the schema.
    Arguments(Vec<ArgumentProblem>),
    /// The schema itself cannot be used (see [`budget`]); the reason names the place.
    Unusable(String),
}

/// [`check_call`] with the schema already compiled: an unusable schema is refused before any
/// walk over it; otherwise strict-mode `null`s are dropped and the arguments validated.
pub fn prepare_call(
    compiled: &validate::Compiled,
    schema: &Value,
    arguments: &mut Value,
) -> Result<(), CallRefusal> {
    match compiled.as_ref() {
        Err(e) if e.unusable => Err(CallRefusal::Unusable(format!(
            "its input schema cannot be used: {}",
            e.message
        ))),
        Ok(validator) => {
            export::drop_null_optionals_checked(schema, arguments);
            validator
                .validate(arguments)
                .map_err(CallRefusal::Arguments)
        }
        // Within the bounds but not compilable: sent unvalidated, as documented.
        Err(_) => {
            drop_null_optionals(schema, arguments);
            Ok(())
        }
    }
}

/// Problems of a result's `structuredContent` against `tool`'s output schema (empty when it
/// has none or they match): for logs and warnings, never a reason to fail the call.
pub fn check_output(
    cache: &ValidatorCache,
    tool: &Tool,
    structured: &Value,
) -> Vec<ArgumentProblem> {
    match &tool.output_schema {
        Some(schema) => cache.check_output(&tool.server, &tool.raw_name, schema, structured),
        None => Vec::new(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn check_call_drops_strict_nulls_then_validates() {
        let cache = ValidatorCache::new();
        let tool = Tool::local(
            "read",
            json!({
                "type": "object",
                "properties": {"path": {"type": "string"}, "tail": {"type": "integer"}},
                "required": ["path"]
            }),
        );
        let mut args = json!({"path": "/a", "tail": null});
        assert!(check_call(&cache, &tool, &mut args).is_ok());
        assert_eq!(args, json!({"path": "/a"}));

        let mut args = json!({"path": null, "tail": "3"});
        let problems: Vec<String> = check_call(&cache, &tool, &mut args)
            .unwrap_err()
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            problems,
            [
                "/path: expected a string, got null",
                "/tail: expected an integer, got \"3\" (send the number itself, not a string)",
            ]
        );
    }

    #[test]
    fn check_output_only_when_declared() {
        let cache = ValidatorCache::new();
        let tool = Tool::local("sum", json!({"type": "object"}));
        assert!(check_output(&cache, &tool, &json!({"x": 1})).is_empty());
        let tool = tool.with_output_schema(json!({"type": "object", "required": ["sum"]}));
        assert_eq!(check_output(&cache, &tool, &json!({"x": 1})).len(), 1);
    }
}
