//! Tool results as the harness sees them: typed content blocks (text, image, audio, embedded
//! resource, resource link), `structuredContent`, `isError`, and a plain-text rendering for an
//! LLM. Knows nothing of servers or transports.

use serde::Serialize;
use serde_json::Value;

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
