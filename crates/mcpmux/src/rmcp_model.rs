//! The library's records in rmcp's model and back, typed to typed: each string moved, never
//! copied and never through a `serde_json::Value` (a 10 MB text result is held once on its way
//! from a server to the caller, and once on its way on to a client a gateway serves). One
//! place for both directions: a server's `CallToolResult` and log level read by `connection/`;
//! results, tools, resources, templates, read contents, prompts, prompt messages and log levels
//! written for a client by a harness that serves the hub over rmcp (`mcpmux-gateway`), public
//! behind the `rmcp-model` feature so that an rmcp upgrade is not a change of the library's
//! default face. Knows nothing of servers, sessions or transports.

// Logging is SEP-2577-deprecated in rmcp, yet the handshake era's `logging/setLevel`.
#![allow(deprecated)]

use rmcp::model as wire;
use serde_json::{Map, Value};

use crate::catalog::Tool;
use crate::content::{Content, EmbeddedResource};
use crate::host::LogLevel;
use crate::listings::{
    Prompt, PromptArgument, PromptMessage, PromptMessages, Resource, ResourceContents,
    ResourceTemplate,
};
use crate::result::ToolResult;

/// A server's `result` as a [`ToolResult`]; a `structuredContent` of `null` is none.
pub(crate) fn tool_result_from_rmcp(result: wire::CallToolResult) -> ToolResult {
    ToolResult {
        content: result.content.into_iter().map(content_from_rmcp).collect(),
        structured_content: result.structured_content.filter(|v| !v.is_null()),
        is_error: result.is_error.unwrap_or(false),
        meta: result.meta.map(|meta| meta.0),
        output_problems: Vec::new(),
    }
}

fn content_from_rmcp(block: wire::ContentBlock) -> Content {
    match block {
        wire::ContentBlock::Text(text) => Content::Text { text: text.text },
        wire::ContentBlock::Image(image) => Content::Image {
            data: image.data,
            mime_type: image.mime_type,
        },
        wire::ContentBlock::Audio(audio) => Content::Audio {
            data: audio.data,
            mime_type: audio.mime_type,
        },
        wire::ContentBlock::Resource(embedded) => match embedded.resource {
            wire::ResourceContents::TextResourceContents {
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
            wire::ResourceContents::BlobResourceContents {
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
        wire::ContentBlock::ResourceLink(link) => Content::ResourceLink {
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

/// `result` as a client is sent it: the same blocks, structured content, `_meta` and
/// `isError`. A block rmcp cannot carry (one of a kind this version does not know) is given
/// as its text rendering.
pub fn tool_result(result: ToolResult) -> wire::CallToolResult {
    let content = result.content.into_iter().map(content).collect();
    let mut out = if result.is_error {
        wire::CallToolResult::error(content)
    } else {
        wire::CallToolResult::success(content)
    };
    out.structured_content = result.structured_content;
    out.meta = result.meta.map(wire::MetaObject);
    out
}

/// One block as rmcp's.
pub fn content(block: Content) -> wire::ContentBlock {
    match block {
        Content::Text { text } => wire::ContentBlock::text(text),
        Content::Image { data, mime_type } => {
            wire::ContentBlock::Image(wire::ImageContent::new(data, mime_type))
        }
        Content::Audio { data, mime_type } => {
            wire::ContentBlock::Audio(wire::AudioContent::new(data, mime_type))
        }
        Content::Resource { resource } => {
            let EmbeddedResource {
                uri,
                mime_type,
                text,
                blob,
            } = resource;
            let contents = match (text, blob) {
                (Some(text), _) => wire::ResourceContents::TextResourceContents {
                    uri,
                    mime_type,
                    text,
                    meta: None,
                },
                (None, blob) => wire::ResourceContents::BlobResourceContents {
                    uri,
                    mime_type,
                    blob: blob.unwrap_or_default(),
                    meta: None,
                },
            };
            wire::ContentBlock::Resource(wire::EmbeddedResource::new(contents))
        }
        Content::ResourceLink {
            uri,
            name,
            description,
            mime_type,
        } => {
            let mut link = wire::Resource::new(uri, name);
            link.description = description;
            link.mime_type = mime_type;
            wire::ContentBlock::ResourceLink(link)
        }
        Content::Other(value) => {
            let text = Content::Other(value.clone()).to_text();
            serde_json::from_value(value).unwrap_or_else(|_| wire::ContentBlock::text(text))
        }
    }
}

/// `tool` as a client lists it, under `name` (its exposed name, or another a server of the
/// hub's chooses to serve it under): title, description, schemas and behaviour hints. An input
/// schema that is not an object is served as the empty object schema.
pub fn tool(tool: &Tool, name: String) -> wire::Tool {
    let input = match &tool.input_schema {
        Value::Object(schema) => schema.clone(),
        _ => {
            let mut schema = Map::new();
            schema.insert("type".into(), Value::from("object"));
            schema
        }
    };
    let description = tool.description.clone().map(Into::into);
    let mut out = wire::Tool::new_with_raw(name, description, input);
    out.title = tool.title.clone();
    if let Some(Value::Object(schema)) = &tool.output_schema {
        out.output_schema = Some(std::sync::Arc::new(schema.clone()));
    }
    let hints = &tool.annotations;
    if [
        hints.read_only_hint,
        hints.destructive_hint,
        hints.idempotent_hint,
        hints.open_world_hint,
    ]
    .iter()
    .any(Option::is_some)
    {
        let mut annotations = wire::ToolAnnotations::default();
        annotations.read_only_hint = hints.read_only_hint;
        annotations.destructive_hint = hints.destructive_hint;
        annotations.idempotent_hint = hints.idempotent_hint;
        annotations.open_world_hint = hints.open_world_hint;
        out.annotations = Some(annotations);
    }
    out
}

/// A listed resource as a client lists it (without the hub's `server`).
pub fn resource(resource: Resource) -> wire::Resource {
    let mut out = wire::Resource::new(resource.uri, resource.name);
    out.title = resource.title;
    out.description = resource.description;
    out.mime_type = resource.mime_type;
    out.size = resource.size;
    out
}

/// A listed resource template as a client lists it (without the hub's `server`).
pub fn resource_template(template: ResourceTemplate) -> wire::ResourceTemplate {
    let mut out = wire::ResourceTemplate::new(template.uri_template, template.name);
    out.title = template.title;
    out.description = template.description;
    out.mime_type = template.mime_type;
    out
}

/// One part of a read as a client is sent it.
pub fn resource_contents(part: ResourceContents) -> wire::ResourceContents {
    match part {
        ResourceContents::Text {
            uri,
            mime_type,
            text,
        } => wire::ResourceContents::TextResourceContents {
            uri,
            mime_type,
            text,
            meta: None,
        },
        ResourceContents::Blob {
            uri,
            mime_type,
            blob,
        } => wire::ResourceContents::BlobResourceContents {
            uri,
            mime_type,
            blob,
            meta: None,
        },
    }
}

/// A listed prompt as a client lists it, under `name` (without the hub's `server`).
pub fn prompt(prompt: Prompt, name: String) -> wire::Prompt {
    let arguments: Vec<wire::PromptArgument> =
        prompt.arguments.into_iter().map(prompt_argument).collect();
    let mut out = wire::Prompt::new(name, prompt.description, Some(arguments));
    out.title = prompt.title;
    out
}

fn prompt_argument(argument: PromptArgument) -> wire::PromptArgument {
    let mut out = wire::PromptArgument::new(argument.name);
    out.description = argument.description;
    out.required = Some(argument.required);
    out
}

/// A filled-in prompt as a client is sent it. The library keeps each message's block as the
/// server's JSON (`PromptMessage::content`): it is read into rmcp's block once, moved, not
/// written out and read back. A message whose role or block is not MCP's is an error naming
/// what was wrong.
pub fn prompt_result(filled: PromptMessages) -> Result<wire::GetPromptResult, serde_json::Error> {
    let messages = filled
        .messages
        .into_iter()
        .map(|PromptMessage { role, content }| {
            let role = match role.as_str() {
                "user" => wire::Role::User,
                "assistant" => wire::Role::Assistant,
                other => {
                    return Err(serde::de::Error::custom(format_args!(
                        "a prompt message's role is `user` or `assistant`, not {other:?}"
                    )));
                }
            };
            Ok(wire::PromptMessage::new(
                role,
                serde_json::from_value(content)?,
            ))
        })
        .collect::<Result<Vec<_>, _>>()?;
    // Built by rmcp's constructor: it carries the `resultType` 2026-07-28 requires.
    let mut result = wire::GetPromptResult::new(messages);
    result.description = filled.description;
    Ok(result)
}

/// rmcp's log level as the library's.
pub fn log_level(level: wire::LoggingLevel) -> LogLevel {
    match level {
        wire::LoggingLevel::Debug => LogLevel::Debug,
        wire::LoggingLevel::Info => LogLevel::Info,
        wire::LoggingLevel::Notice => LogLevel::Notice,
        wire::LoggingLevel::Warning => LogLevel::Warning,
        wire::LoggingLevel::Error => LogLevel::Error,
        wire::LoggingLevel::Critical => LogLevel::Critical,
        wire::LoggingLevel::Alert => LogLevel::Alert,
        wire::LoggingLevel::Emergency => LogLevel::Emergency,
    }
}

/// The library's log level as rmcp's.
pub fn logging_level(level: LogLevel) -> wire::LoggingLevel {
    match level {
        LogLevel::Debug => wire::LoggingLevel::Debug,
        LogLevel::Info => wire::LoggingLevel::Info,
        LogLevel::Notice => wire::LoggingLevel::Notice,
        LogLevel::Warning => wire::LoggingLevel::Warning,
        LogLevel::Error => wire::LoggingLevel::Error,
        LogLevel::Critical => wire::LoggingLevel::Critical,
        LogLevel::Alert => wire::LoggingLevel::Alert,
        LogLevel::Emergency => wire::LoggingLevel::Emergency,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A result with a block of every kind, structured content, `_meta` and `isError`.
    fn every_kind() -> Value {
        json!({
            "content": [
                {"type": "text", "text": "hello"},
                {"type": "image", "data": "aGk=", "mimeType": "image/png"},
                {"type": "audio", "data": "aGk=", "mimeType": "audio/wav"},
                {"type": "resource", "resource": {"uri": "file:///a", "mimeType": "text/plain", "text": "A"}},
                {"type": "resource", "resource": {"uri": "file:///b", "blob": "Qg=="}},
                {"type": "resource_link", "uri": "file:///c", "name": "c", "description": "C", "mimeType": "text/x"}
            ],
            "structuredContent": {"n": 1},
            "isError": true,
            "_meta": {"trace": "t-1"}
        })
    }

    /// Every kind of block reads the same typed as it does from its JSON.
    #[test]
    fn the_typed_result_reads_as_its_json_does() {
        let wire = every_kind();
        let typed: wire::CallToolResult = serde_json::from_value(wire.clone()).unwrap();
        assert_eq!(tool_result_from_rmcp(typed), ToolResult::from_json(wire));
        let typed: wire::CallToolResult =
            serde_json::from_value(json!({"content": [], "structuredContent": null})).unwrap();
        let result = tool_result_from_rmcp(typed);
        assert_eq!(result.structured_content, None);
        assert!(!result.is_error);
    }

    #[test]
    fn a_result_of_every_kind_is_written_back_as_it_was_read() {
        let typed: wire::CallToolResult = serde_json::from_value(every_kind()).unwrap();
        let out = tool_result(tool_result_from_rmcp(typed));
        let mut json = serde_json::to_value(&out).unwrap();
        // rmcp's constructor adds the 2026-07-28 `resultType`; the rest is the server's.
        json.as_object_mut().unwrap().remove("resultType");
        assert_eq!(json, every_kind());
    }

    #[test]
    fn a_block_of_an_unknown_kind_is_kept_or_rendered_as_text() {
        let odd = Content::Other(json!({"type": "hologram", "beams": 3}));
        let text = serde_json::to_value(content(odd)).unwrap();
        assert_eq!(text["type"], "text");
        assert!(
            text["text"].as_str().unwrap().contains("hologram"),
            "{text}"
        );
    }

    #[test]
    fn a_tool_is_listed_with_its_hints_and_an_object_input_schema() {
        let tool = Tool {
            name: "mcp__s__t".into(),
            server: "s".into(),
            raw_name: "t".into(),
            title: None,
            description: None,
            input_schema: json!("nonsense"),
            output_schema: None,
            annotations: crate::catalog::ToolAnnotations {
                read_only_hint: Some(true),
                ..Default::default()
            },
            unusable: None,
            cached: false,
        };
        let listed = serde_json::to_value(super::tool(&tool, "t".into())).unwrap();
        assert_eq!(listed["name"], "t");
        assert_eq!(listed["inputSchema"], json!({"type": "object"}));
        assert_eq!(listed["annotations"], json!({"readOnlyHint": true}));
        assert!(listed.get("description").is_none(), "{listed}");
    }

    #[test]
    fn prompt_messages_keep_their_blocks_and_refuse_an_unknown_role() {
        let messages = |role: &str| PromptMessages {
            description: None,
            messages: vec![PromptMessage {
                role: role.into(),
                content: json!({"type": "text", "text": "hi"}),
            }],
        };
        let out = prompt_result(messages("user")).unwrap();
        assert_eq!(
            serde_json::to_value(&out.messages).unwrap(),
            json!([{"role": "user", "content": {"type": "text", "text": "hi"}}])
        );
        let refused = prompt_result(messages("system")).unwrap_err();
        assert!(refused.to_string().contains("\"system\""), "{refused}");
    }

    #[test]
    fn log_levels_map_both_ways() {
        for level in [
            LogLevel::Debug,
            LogLevel::Info,
            LogLevel::Notice,
            LogLevel::Warning,
            LogLevel::Error,
            LogLevel::Critical,
            LogLevel::Alert,
            LogLevel::Emergency,
        ] {
            assert_eq!(log_level(logging_level(level)), level);
        }
    }
}
