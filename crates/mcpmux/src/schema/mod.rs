//! Tool schemas: argument validation before a call goes on the wire (`validate`; every call
//! goes through the one entry point, `ValidatorCache::prepare`) and the tool set rendered for
//! model providers (`export`). Knows nothing of connections: it works on schemas and [`Tool`]
//! records.

mod arguments;
pub(crate) mod budget;
pub(crate) mod export;
#[cfg(test)]
mod fuzz;
pub(crate) mod validate;

use serde_json::Value;

use crate::catalog::Tool;

pub use export::{Export, ExportFormat, ExportedTool, UnknownExportFormat, UnusableTool, export};
pub use validate::{ArgumentProblem, SchemaError, Validator};

pub(crate) use arguments::CallRefusal;
pub(crate) use validate::ValidatorCache;

/// Problems of a result's `structuredContent` against `tool`'s output schema (empty when it
/// has none or they match): for logs and warnings, never a reason to fail the call.
pub(crate) fn check_output(
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
    fn check_output_only_when_declared() {
        let cache = ValidatorCache::new();
        let tool = Tool::local("sum", json!({"type": "object"}));
        assert!(check_output(&cache, &tool, &json!({"x": 1})).is_empty());
        let tool = tool.with_output_schema(json!({"type": "object", "required": ["sum"]}));
        assert_eq!(check_output(&cache, &tool, &json!({"x": 1})).len(), 1);
    }
}
