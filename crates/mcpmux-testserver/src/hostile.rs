//! Hostile tools for the client's trust-boundary tests: tools whose input schemas make a
//! naive validator or exporter recurse forever (`--tool-schema`), a result no JSON parser
//! with a recursion limit can read (`--deep-result`), names no client should be handed
//! (`--hostile-names`), a result past a client's cap on one message (`--huge-result`) and a
//! tool list past it (`--padded-tools-list`). Listed beside the normal tools; knows nothing
//! about transports except the raw answers the stdio transport writes for them.

use std::sync::Arc;

use rmcp::{
    handler::server::router::tool::{ToolRoute, ToolRouter},
    model::{CallToolResult, ContentBlock, JsonObject, RequestId, Tool},
};
use serde_json::json;

use crate::cli::ToolSchema;
use crate::server::TestServer;

/// Name of the tool whose answer the stdio transport writes itself (`--deep-result`).
pub const DEEP_RESULT_TOOL: &str = "deep_result";

/// How many arrays the `deep_result` answer nests in its structuredContent.
pub const DEEP_RESULT_LEVELS: usize = 100_000;

/// Levels of the `ref-bomb` `$defs` chain: 2^40 subschemas once unfolded.
const REF_BOMB_LEVELS: usize = 40;

impl ToolSchema {
    fn name(self) -> &'static str {
        match self {
            ToolSchema::SelfRef => "self_ref",
            ToolSchema::RefBomb => "ref_bomb",
        }
    }

    fn schema(self) -> serde_json::Value {
        match self {
            ToolSchema::SelfRef => json!({
                "type": "object",
                "properties": {"x": {"type": "string"}},
                "allOf": [{"$ref": "#"}]
            }),
            ToolSchema::RefBomb => {
                let mut defs = serde_json::Map::new();
                for level in 0..REF_BOMB_LEVELS {
                    let next = format!("#/$defs/d{}", level + 1);
                    defs.insert(
                        format!("d{level}"),
                        json!({"allOf": [{"$ref": next}, {"$ref": next}]}),
                    );
                }
                defs.insert(format!("d{REF_BOMB_LEVELS}"), json!({"type": "string"}));
                json!({
                    "type": "object",
                    "properties": {"x": {"$ref": "#/$defs/d0"}},
                    "$defs": defs
                })
            }
        }
    }
}

fn object(value: serde_json::Value) -> Arc<JsonObject> {
    Arc::new(match value {
        serde_json::Value::Object(map) => map,
        _ => JsonObject::new(),
    })
}

/// Adds the hostile tools asked for to `router` (after the normal ones).
pub fn add_tools(router: &mut ToolRouter<TestServer>, schemas: &[ToolSchema], deep_result: bool) {
    for kind in schemas {
        let tool = Tool::new(
            kind.name(),
            "A tool with a hostile input schema. Answers \"called\".",
            object(kind.schema()),
        );
        router.add_route(ToolRoute::new_dyn(tool, |_context| {
            Box::pin(async {
                Ok(CallToolResult::success(vec![ContentBlock::text("called")]).into())
            })
        }));
    }
    if deep_result {
        let tool = Tool::new(
            DEEP_RESULT_TOOL,
            format!(
                "Answered by the stdio transport with structuredContent nesting \
                 {DEEP_RESULT_LEVELS} arrays."
            ),
            object(json!({"type": "object"})),
        );
        router.add_route(ToolRoute::new_dyn(tool, |_context| {
            // Only reached when the transport did not answer (not stdio).
            Box::pin(async {
                Ok(CallToolResult::error(vec![ContentBlock::text(
                    "deep_result is answered by the stdio transport only",
                )])
                .into())
            })
        }));
    }
}

/// The names `--hostile-names` lists, none a valid MCP tool name.
pub fn hostile_names() -> Vec<String> {
    vec![
        "nul\0name".to_owned(),
        "new\nline".to_owned(),
        "evil\u{202e}txt.exe".to_owned(),
        "\u{1f600}".repeat(300),
        "t".repeat(65),
        "../../etc/passwd".to_owned(),
    ]
}

/// Adds a tool for each of [`hostile_names`] to `router`, each answering "called".
pub fn add_named_tools(router: &mut ToolRouter<TestServer>) {
    for name in hostile_names() {
        let tool = Tool::new(
            name,
            "A tool whose name is not a valid MCP tool name. Answers \"called\".",
            object(json!({"type": "object"})),
        );
        router.add_route(ToolRoute::new_dyn(tool, |_context| {
            Box::pin(async {
                Ok(CallToolResult::success(vec![ContentBlock::text("called")]).into())
            })
        }));
    }
}

/// Name of the tool `--huge-result` lists.
pub const HUGE_RESULT_TOOL: &str = "huge_result";

/// Lists `huge_result`: `{"bytes": N}` is answered with one text block of N bytes. Unlike
/// `huge` (MiB, for the benchmark), over stdio the transport writes the answer itself
/// (`huge_result_line`): 64 MiB through a debug build of serde_json takes seconds, which a
/// test of "fails at once" would measure.
pub fn add_huge_result(router: &mut ToolRouter<TestServer>) {
    let tool = Tool::new(
        HUGE_RESULT_TOOL,
        "Answers one text block of `bytes` bytes.",
        object(json!({
            "type": "object",
            "properties": {"bytes": {"type": "integer", "minimum": 0}},
            "required": ["bytes"]
        })),
    );
    router.add_route(ToolRoute::new_dyn(tool, |context| {
        let bytes = context
            .arguments
            .as_ref()
            .and_then(|arguments| arguments.get("bytes"))
            .and_then(serde_json::Value::as_u64)
            .unwrap_or(0);
        Box::pin(async move {
            let text = "A".repeat(usize::try_from(bytes).unwrap_or(usize::MAX));
            Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
        })
    }));
}

/// The raw `huge_result` answer to request `id` over stdio: one text block of `bytes` bytes,
/// newline included.
pub fn huge_result_line(id: &RequestId, bytes: usize) -> Vec<u8> {
    let id = serde_json::to_string(id).unwrap_or_else(|_| "null".to_owned());
    let mut line = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{\"content\":[{{\"type\":\"text\",\"text\":\""
    )
    .into_bytes();
    line.extend(std::iter::repeat_n(b'A', bytes));
    line.extend_from_slice(b"\"}]}}\n");
    line
}

/// The raw `tools/list` answer of `--padded-tools-list`: `padding` spaces, then an empty
/// list for request `id`, on one line.
pub fn padded_tools_list_line(id: &RequestId, padding: usize) -> Vec<u8> {
    let id = serde_json::to_string(id).unwrap_or_else(|_| "null".to_owned());
    let mut line = vec![b' '; padding];
    line.extend_from_slice(
        format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{\"tools\":[]}}}}\n").as_bytes(),
    );
    line
}

/// The raw `deep_result` answer to request `id`, newline included. Written as bytes: a value
/// this deep cannot pass through serde_json (its serialiser and `Drop` would overflow the
/// stack), which is the point.
pub fn deep_result_line(id: &RequestId) -> Vec<u8> {
    let id = serde_json::to_string(id).unwrap_or_else(|_| "null".to_owned());
    let mut line = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{\"content\":[{{\"type\":\"text\",\
         \"text\":\"deep\"}}],\"structuredContent\":{{\"deep\":"
    )
    .into_bytes();
    line.extend(std::iter::repeat_n(b'[', DEEP_RESULT_LEVELS));
    line.extend(std::iter::repeat_n(b']', DEEP_RESULT_LEVELS));
    line.extend_from_slice(b"}}}\n");
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_deep_line_is_well_formed_and_too_deep_for_serde_json() {
        let line = deep_result_line(&RequestId::Number(7));
        assert!(line.starts_with(b"{\"jsonrpc\":\"2.0\",\"id\":7,"));
        let depth = line
            .iter()
            .scan(0i64, |d, b| {
                *d += i64::from(*b == b'[' || *b == b'{') - i64::from(*b == b']' || *b == b'}');
                Some(*d)
            })
            .max();
        assert_eq!(depth, Some(DEEP_RESULT_LEVELS as i64 + 3));
        assert!(serde_json::from_slice::<serde_json::Value>(&line).is_err());
    }

    #[test]
    fn the_huge_and_padded_lines_are_well_formed() -> serde_json::Result<()> {
        let line = huge_result_line(&RequestId::Number(3), 10);
        let value: serde_json::Value = serde_json::from_slice(&line)?;
        assert_eq!(value["result"]["content"][0]["text"], "AAAAAAAAAA");
        let line = padded_tools_list_line(&RequestId::Number(4), 10);
        assert!(line.starts_with(&[b' '; 10]));
        let value: serde_json::Value = serde_json::from_slice(&line)?;
        assert_eq!(value["id"], 4);
        Ok(())
    }

    #[test]
    fn hostile_schemas_are_objects() {
        for kind in [ToolSchema::SelfRef, ToolSchema::RefBomb] {
            assert!(kind.schema().is_object());
        }
    }
}
