//! The searchable text of one [`Tool`], by field: its names, its title, its parameter names,
//! its descriptions. The input schema is a server's, so hostile: the walk is bounded in depth,
//! in nodes and in text taken, and never recurses through `$ref`. Knows nothing of scoring.

use mcpmux::Tool;
use serde_json::Value;

use super::tokens::terms;

/// Deepest schema level whose properties are read (the root's properties are level 1).
const MAX_SCHEMA_DEPTH: usize = 4;
/// Most schema nodes visited per tool.
const MAX_SCHEMA_NODES: usize = 256;
/// Most terms kept per field: a description the length of a book says no more about a tool.
const MAX_FIELD_TERMS: usize = 512;
/// Most characters of one text read (description, parameter description).
const MAX_TEXT_CHARS: usize = 4096;

/// A searchable field, with its weight in the score.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    /// The tool's own name (the raw name the server gave, and its exposed name's parts).
    Name,
    /// Its human title.
    Title,
    /// The names of its parameters.
    Params,
    /// Its description, its parameters' descriptions and its server's name.
    Text,
}

impl Field {
    /// Every field, in index order.
    pub const ALL: [Field; 4] = [Field::Name, Field::Title, Field::Params, Field::Text];

    /// How much a match in this field counts, relative to the description: a name says what a
    /// tool is, a parameter name what it works on, a description has many incidental words.
    pub fn weight(self) -> f32 {
        match self {
            Field::Name => 3.0,
            Field::Title => 2.0,
            Field::Params => 1.5,
            Field::Text => 1.0,
        }
    }

    /// Its index in [`Field::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }
}

/// The terms of each field of `tool`, indexed by [`Field::index`].
pub fn tool_terms(tool: &Tool) -> [Vec<String>; 4] {
    let name = terms(&tool.raw_name, MAX_FIELD_TERMS);
    let title = terms(
        &clip(tool.title.as_deref().unwrap_or_default()),
        MAX_FIELD_TERMS,
    );
    let mut params = String::new();
    let mut text = clip(tool.description.as_deref().unwrap_or_default());
    text.push(' ');
    text.push_str(&clip(&tool.server));
    walk_schema(&tool.input_schema, &mut params, &mut text);
    [
        name,
        title,
        terms(&params, MAX_FIELD_TERMS),
        terms(&text, MAX_FIELD_TERMS * 2),
    ]
}

fn clip(text: &str) -> String {
    text.chars().take(MAX_TEXT_CHARS).collect()
}

/// Collects parameter names into `params` and their descriptions into `text`, breadth first
/// with an explicit queue: no recursion, bounded nodes and depth.
fn walk_schema(schema: &Value, params: &mut String, text: &mut String) {
    let mut queue: std::collections::VecDeque<(&Value, usize)> = [(schema, 1)].into();
    let mut visited = 0;
    while let Some((node, depth)) = queue.pop_front() {
        visited += 1;
        if visited > MAX_SCHEMA_NODES || text.len() > MAX_TEXT_CHARS * 4 {
            return;
        }
        let Some(object) = node.as_object() else {
            continue;
        };
        if let Some(Value::Object(properties)) = object.get("properties") {
            for (name, property) in properties {
                params.push_str(&name.chars().take(MAX_TEXT_CHARS).collect::<String>());
                params.push(' ');
                if let Some(Value::String(description)) = property.get("description") {
                    text.push(' ');
                    text.push_str(&clip(description));
                }
                if depth < MAX_SCHEMA_DEPTH {
                    queue.push_back((property, depth + 1));
                }
            }
        }
        if depth < MAX_SCHEMA_DEPTH {
            if let Some(items) = object.get("items") {
                queue.push_back((items, depth));
            }
            for key in ["anyOf", "oneOf", "allOf"] {
                if let Some(Value::Array(options)) = object.get(key) {
                    queue.extend(options.iter().map(|o| (o, depth + 1)));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parameter_names_and_their_descriptions_are_read_from_nested_schemas() {
        let tool = Tool::local(
            "mcp__gh__create_issue",
            json!({"type": "object", "properties": {
                "repo": {"type": "string", "description": "Owner and repository"},
                "labels": {"type": "array", "items": {"type": "object", "properties": {
                    "colour": {"type": "string", "description": "Hex colour"}}}},
            }}),
        )
        .with_description("Open an issue")
        .with_source("gh");
        let [name, _, params, text] = tool_terms(&tool);
        assert_eq!(name, ["gh", "create", "issue"]);
        // serde_json keeps properties sorted by name.
        assert_eq!(params, ["label", "repo", "colour"]);
        assert!(text.contains(&"owner".to_string()) && text.contains(&"hex".to_string()));
    }

    #[test]
    fn a_deep_or_wide_hostile_schema_is_read_within_bounds() {
        let mut deep = json!({"type": "string"});
        for _ in 0..200 {
            deep = json!({"type": "object", "properties": {"x": deep}, "anyOf": [{"$ref": "#"}]});
        }
        let wide: serde_json::Map<String, Value> = (0..100_000)
            .map(|i| (format!("p{i}"), json!({"description": "word ".repeat(50)})))
            .collect();
        for schema in [
            deep,
            json!({"properties": wide}),
            json!("not an object"),
            json!(null),
        ] {
            let tool = Tool::local("t", schema);
            let [_, _, params, text] = tool_terms(&tool);
            assert!(params.len() <= MAX_FIELD_TERMS);
            assert!(text.len() <= MAX_FIELD_TERMS * 2);
        }
    }
}
