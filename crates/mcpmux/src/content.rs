//! Tool results as the harness sees them: typed content blocks (text, image, audio, embedded
//! resource, resource link), `structuredContent`, `isError`, and a plain-text rendering for an
//! LLM. Knows nothing of servers or transports.

use serde::Serialize;
use serde_json::Value;

/// The outcome of a tool call that reached the tool. `is_error` means the *tool* failed
/// (bad input, upstream API error): the model should see it and may retry differently.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ToolResult {
    /// The content blocks, in the server's order.
    pub content: Vec<Content>,
    /// Structured output, when the tool declares an output schema.
    #[serde(rename = "structuredContent", skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// The tool reported failure.
    #[serde(rename = "isError")]
    pub is_error: bool,
    /// Where `structuredContent` does not match the tool's `outputSchema` (the result is
    /// returned anyway; the server is at fault, not the caller).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub output_problems: Vec<String>,
}

/// One content block of a result.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Content {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// An image, base64-encoded.
    Image {
        /// Base64 data.
        data: String,
        /// e.g. `image/png`.
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
    /// Audio, base64-encoded.
    Audio {
        /// Base64 data.
        data: String,
        /// e.g. `audio/wav`.
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
    /// A resource whose contents are inlined.
    Resource {
        /// The resource.
        resource: EmbeddedResource,
    },
    /// A link to a resource the client may read.
    ResourceLink {
        /// Its URI.
        uri: String,
        /// Its name.
        name: String,
        /// What it is.
        #[serde(skip_serializing_if = "Option::is_none")]
        description: Option<String>,
        /// Its MIME type.
        #[serde(rename = "mimeType", skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
    },
    /// A block of a type this version does not know; kept as sent.
    #[serde(untagged)]
    Other(Value),
}

/// The contents of an embedded resource: text or a base64 blob.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct EmbeddedResource {
    /// Its URI.
    pub uri: String,
    /// Its MIME type.
    #[serde(rename = "mimeType", skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Text contents.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Base64 contents.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blob: Option<String>,
}

fn str_field(value: &Value, key: &str) -> Option<String> {
    value.get(key).and_then(Value::as_str).map(str::to_string)
}

impl Content {
    /// Reads one MCP content block; anything unrecognised is kept as [`Content::Other`].
    pub(crate) fn from_json(block: Value) -> Self {
        let kind = block.get("type").and_then(Value::as_str).unwrap_or("");
        let parsed = match kind {
            "text" => str_field(&block, "text").map(|text| Content::Text { text }),
            "image" | "audio" => match (str_field(&block, "data"), str_field(&block, "mimeType")) {
                (Some(data), Some(mime_type)) if kind == "image" => {
                    Some(Content::Image { data, mime_type })
                }
                (Some(data), Some(mime_type)) => Some(Content::Audio { data, mime_type }),
                _ => None,
            },
            "resource" => block.get("resource").and_then(|r| {
                Some(Content::Resource {
                    resource: EmbeddedResource {
                        uri: str_field(r, "uri")?,
                        mime_type: str_field(r, "mimeType"),
                        text: str_field(r, "text"),
                        blob: str_field(r, "blob"),
                    },
                })
            }),
            "resource_link" => match (str_field(&block, "uri"), str_field(&block, "name")) {
                (Some(uri), Some(name)) => Some(Content::ResourceLink {
                    uri,
                    name,
                    description: str_field(&block, "description"),
                    mime_type: str_field(&block, "mimeType"),
                }),
                _ => None,
            },
            _ => None,
        };
        parsed.unwrap_or(Content::Other(block))
    }

    /// How the block reads to a model that only takes text.
    pub fn to_text(&self) -> String {
        match self {
            Content::Text { text } => text.clone(),
            Content::Image { data, mime_type } => {
                format!("[image: {mime_type}, {} bytes]", base64_len(data))
            }
            Content::Audio { data, mime_type } => {
                format!("[audio: {mime_type}, {} bytes]", base64_len(data))
            }
            Content::Resource { resource } => match (&resource.text, &resource.blob) {
                (Some(text), _) => format!("[resource {}]\n{text}", resource.uri),
                (None, Some(blob)) => format!(
                    "[resource {}: {}, {} bytes]",
                    resource.uri,
                    resource.mime_type.as_deref().unwrap_or("binary"),
                    base64_len(blob)
                ),
                (None, None) => format!("[resource {}]", resource.uri),
            },
            Content::ResourceLink {
                uri,
                name,
                description,
                ..
            } => match description {
                Some(d) => format!("[resource link: {name} <{uri}> — {d}]"),
                None => format!("[resource link: {name} <{uri}>]"),
            },
            Content::Other(value) => value.to_string(),
        }
    }
}

/// Decoded size of base64 data, without decoding it.
fn base64_len(data: &str) -> usize {
    let padding = data.bytes().rev().take_while(|b| *b == b'=').count();
    (data.len() / 4 * 3).saturating_sub(padding)
}

impl ToolResult {
    /// Reads an MCP `CallToolResult` in its JSON form.
    pub(crate) fn from_json(mut value: Value) -> Self {
        let content = match value.get_mut("content").map(Value::take) {
            Some(Value::Array(blocks)) => blocks.into_iter().map(Content::from_json).collect(),
            _ => Vec::new(),
        };
        ToolResult {
            content,
            structured_content: value
                .get_mut("structuredContent")
                .map(Value::take)
                .filter(|v| !v.is_null()),
            is_error: value
                .get("isError")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            output_problems: Vec::new(),
        }
    }

    /// A text result, for built-in tools and tests.
    pub fn text(text: impl Into<String>) -> Self {
        ToolResult {
            content: vec![Content::Text { text: text.into() }],
            structured_content: None,
            is_error: false,
            output_problems: Vec::new(),
        }
    }

    /// The whole result as text for an LLM: blocks joined by blank lines; structured content
    /// as JSON when there are no blocks to carry it.
    pub fn to_text(&self) -> String {
        let mut parts: Vec<String> = self.content.iter().map(Content::to_text).collect();
        if parts.is_empty()
            && let Some(structured) = &self.structured_content
        {
            parts.push(structured.to_string());
        }
        parts.join("\n\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_every_block_type_and_keeps_unknown_ones() {
        let result = ToolResult::from_json(json!({
            "content": [
                {"type": "text", "text": "hello"},
                {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
                {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"},
                {"type": "resource", "resource": {"uri": "file:///a.txt", "text": "body"}},
                {"type": "resource_link", "uri": "file:///b", "name": "b"},
                {"type": "hologram", "depth": 3}
            ],
            "structuredContent": {"sum": 5},
            "isError": false
        }));
        assert_eq!(result.content.len(), 6);
        assert!(
            matches!(&result.content[1], Content::Image { mime_type, .. } if mime_type == "image/png")
        );
        assert!(matches!(&result.content[2], Content::Audio { .. }));
        assert!(matches!(&result.content[5], Content::Other(v) if v["depth"] == 3));
        assert_eq!(result.structured_content, Some(json!({"sum": 5})));
        let text = result.to_text();
        assert!(
            text.starts_with("hello\n\n[image: image/png, 8 bytes]"),
            "{text}"
        );
        assert!(text.contains("[resource file:///a.txt]\nbody"), "{text}");
        assert!(text.contains("[resource link: b <file:///b>]"), "{text}");
    }

    #[test]
    fn structured_only_results_render_as_json_and_errors_are_flagged() {
        let result = ToolResult::from_json(
            json!({"content": [], "structuredContent": {"a": 1}, "isError": true}),
        );
        assert!(result.is_error);
        assert_eq!(result.to_text(), r#"{"a":1}"#);
    }

    #[test]
    fn serialises_back_to_mcp_shape() {
        let result = ToolResult::from_json(json!({"content": [{"type": "text", "text": "x"}]}));
        assert_eq!(
            serde_json::to_value(&result).unwrap_or_default(),
            json!({"content": [{"type": "text", "text": "x"}], "isError": false})
        );
    }
}
