//! Anthropic Messages export: `{name, description, input_schema}`, the schema as the server
//! gave it with its root folded into one object. Knows nothing of the other providers.

use serde_json::{Map, Value};

use super::description;
use super::refs::root_object;
use crate::catalog::Tool;

/// The Anthropic tool definition of `tool`, named `name`.
pub(super) fn anthropic(tool: &Tool, name: &str, notes: &mut Vec<String>) -> Value {
    let schema = root_object(&tool.input_schema, notes);
    let mut def = Map::new();
    def.insert("name".into(), name.into());
    if let Some(d) = description(tool) {
        def.insert("description".into(), d.into());
    }
    def.insert("input_schema".into(), Value::Object(schema));
    Value::Object(def)
}
