//! A server's typed `CallToolResult` (rmcp's model) as the library's [`ToolResult`], each
//! string moved, never copied: a 10 MB text result is held once on its way to the caller, not
//! once as rmcp's value, again as JSON and a third time as ours. Knows nothing of calls.

use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};

use crate::content::{Content, EmbeddedResource};
use crate::result::ToolResult;

/// `result` as a [`ToolResult`]; a `structuredContent` of `null` is none.
pub(super) fn from_rmcp(result: CallToolResult) -> ToolResult {
    ToolResult {
        content: result.content.into_iter().map(block).collect(),
        structured_content: result.structured_content.filter(|v| !v.is_null()),
        is_error: result.is_error.unwrap_or(false),
        output_problems: Vec::new(),
    }
}

fn block(block: ContentBlock) -> Content {
    match block {
        ContentBlock::Text(text) => Content::Text { text: text.text },
        ContentBlock::Image(image) => Content::Image {
            data: image.data,
            mime_type: image.mime_type,
        },
        ContentBlock::Audio(audio) => Content::Audio {
            data: audio.data,
            mime_type: audio.mime_type,
        },
        ContentBlock::Resource(embedded) => match embedded.resource {
            ResourceContents::TextResourceContents {
                uri,
                mime_type,
                text,
                ..
            } => Content::Resource {
                resource: EmbeddedResource {
                    uri,
                    mime_type,
                    text: Some(text),
                    blob: None,
                },
            },
            ResourceContents::BlobResourceContents {
                uri,
                mime_type,
                blob,
                ..
            } => Content::Resource {
                resource: EmbeddedResource {
                    uri,
                    mime_type,
                    text: None,
                    blob: Some(blob),
                },
            },
            other => Content::from_json(serde_json::json!({"type": "resource", "resource": other})),
        },
        ContentBlock::ResourceLink(link) => Content::ResourceLink {
            uri: link.uri,
            name: link.name,
            description: link.description,
            mime_type: link.mime_type,
        },
        // A block kind added to rmcp after this was written: kept as sent.
        #[allow(unreachable_patterns)]
        other => Content::from_json(serde_json::to_value(&other).unwrap_or_default()),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Every kind of block reads the same typed as it does from its JSON.
    #[test]
    fn the_typed_result_reads_as_its_json_does() {
        let wire = json!({
            "content": [
                {"type": "text", "text": "hello"},
                {"type": "image", "data": "aGk=", "mimeType": "image/png"},
                {"type": "audio", "data": "aGk=", "mimeType": "audio/wav"},
                {"type": "resource", "resource": {"uri": "file:///a", "mimeType": "text/plain", "text": "A"}},
                {"type": "resource", "resource": {"uri": "file:///b", "blob": "Qg=="}},
                {"type": "resource_link", "uri": "file:///c", "name": "c", "description": "C"}
            ],
            "structuredContent": {"n": 1},
            "isError": true
        });
        let typed: CallToolResult = serde_json::from_value(wire.clone()).unwrap();
        assert_eq!(from_rmcp(typed), ToolResult::from_json(wire));
        let typed: CallToolResult =
            serde_json::from_value(json!({"content": [], "structuredContent": null})).unwrap();
        let result = from_rmcp(typed);
        assert_eq!(result.structured_content, None);
        assert!(!result.is_error);
    }
}
