//! TOML read as JSON, so that `mcpmux.toml` and Codex's `config.toml` share one set of field
//! checks with the JSON dialects, and a TOML syntax error with its line and column. Knows
//! nothing of either dialect's keys.

use std::path::Path;

use serde_json::{Map, Value};

use super::ConfigError;

/// A parse error with the line and column of toml's span.
pub(crate) fn parse_error(file: &Path, text: &str, error: &toml::de::Error) -> ConfigError {
    let (line, column) = match error.span() {
        Some(span) => {
            let (line, column) = super::line_column(text.as_bytes(), span.start);
            (Some(line), Some(column))
        }
        None => (None, None),
    };
    ConfigError::Parse {
        file: file.to_path_buf(),
        format: "TOML",
        line,
        column,
        message: error.message().trim_end().to_owned(),
    }
}

/// A TOML table as JSON, so both dialects share one set of field checks. Datetimes become their
/// text; non-finite floats become null (absent), as JSON has no such numbers.
pub(crate) fn table_to_json(table: toml::Table) -> Map<String, Value> {
    table
        .into_iter()
        .map(|(key, value)| (key, to_json(value)))
        .collect()
}

pub(crate) fn to_json(value: toml::Value) -> Value {
    match value {
        toml::Value::String(text) => Value::String(text),
        toml::Value::Integer(number) => Value::from(number),
        toml::Value::Float(number) => {
            serde_json::Number::from_f64(number).map_or(Value::Null, Value::Number)
        }
        toml::Value::Boolean(flag) => Value::Bool(flag),
        toml::Value::Datetime(datetime) => Value::String(datetime.to_string()),
        toml::Value::Array(items) => Value::Array(items.into_iter().map(to_json).collect()),
        toml::Value::Table(table) => Value::Object(table_to_json(table)),
    }
}
