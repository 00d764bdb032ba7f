//! What a tool result becomes before a model sees it: cut to the server's `max_result_bytes`
//! (the full output spilled to a private file the harness can read, images and audio beyond the
//! cap replaced by a note), and wrapped in untrusted-content delimiters (`untrusted`).
//! Also the result type itself, and what a built-in tool may return. Knows nothing of servers:
//! the hub passes the limit and the tool's name.

use std::fmt;
use std::path::PathBuf;

use serde::Serialize;
use serde_json::Value;

use crate::content::Content;
use crate::spill::Spill;

/// A result after [`truncate`], with what was cut.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Truncated {
    /// The result as the model should see it.
    pub result: ToolResult,
    /// Bytes left out (text cut, binary blocks replaced, structured content dropped).
    pub cut_bytes: usize,
    /// The file holding the full text output, when something was cut and it could be written.
    pub spilled_to: Option<PathBuf>,
}

/// The size a result takes in a model's context: text and base64 data bytes, plus the JSON of
/// blocks of unknown type and of the structured content.
pub fn result_size(result: &ToolResult) -> usize {
    let blocks: usize = result.content.iter().map(block_size).sum();
    blocks
        + result
            .structured_content
            .as_ref()
            .map_or(0, |v| v.to_string().len())
}

fn block_size(block: &Content) -> usize {
    match block {
        Content::Text { text } => text.len(),
        Content::Image { data, .. } | Content::Audio { data, .. } => data.len(),
        Content::Resource { resource } => {
            resource.text.as_ref().map_or(0, String::len)
                + resource.blob.as_ref().map_or(0, String::len)
        }
        other => other.to_text().len(),
    }
}

/// The largest char boundary of `text` at or below `at`.
fn floor_boundary(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// Cuts `result` to about `max_bytes` (the marker adds a line). Text beyond the cap is cut at a
/// character boundary with a marker saying how much was cut and where the full output is;
/// images, audio and blobs that do not fit are replaced by a note; structured content larger
/// than the cap is dropped (it is in the spilled file). A result within the cap is returned
/// untouched. `source` (the exposed tool name) names the spilled file.
pub fn truncate(
    result: ToolResult,
    max_bytes: usize,
    source: &str,
    spill: Option<&Spill>,
) -> Truncated {
    let total = result_size(&result);
    if total <= max_bytes {
        return Truncated {
            result,
            cut_bytes: 0,
            spilled_to: None,
        };
    }
    let full_text = full_rendering(&result);
    let spilled = spill.map(|s| s.write(source, &full_text));
    let (spilled_to, where_note) = match spilled {
        Some(Ok(path)) => {
            let note = format!("the full output is in {}", path.display());
            (Some(path), note)
        }
        Some(Err(e)) => {
            tracing::warn!(tool = %source, "could not spill a truncated result: {e}");
            (None, format!("the full output could not be saved: {e}"))
        }
        None => (None, "the full output was not saved".to_string()),
    };

    let ToolResult {
        content,
        structured_content,
        is_error,
        meta,
        output_problems,
    } = result;
    let mut budget = max_bytes;
    let mut cut = 0usize;
    let mut marker_at: Option<usize> = None;
    let mut out: Vec<Content> = Vec::with_capacity(content.len() + 1);
    for block in content {
        let size = block_size(&block);
        if size <= budget {
            budget -= size;
            out.push(block);
            continue;
        }
        match block {
            Content::Text { text } => {
                let keep = floor_boundary(&text, budget);
                cut += text.len() - keep;
                budget -= keep;
                if keep > 0 {
                    out.push(Content::Text {
                        text: text[..keep].to_string(),
                    });
                }
                marker_at.get_or_insert(out.len());
            }
            Content::Resource { mut resource } if resource.text.is_some() => {
                let text = resource.text.take().unwrap_or_default();
                let keep = floor_boundary(&text, budget);
                cut += text.len() - keep;
                budget -= keep;
                resource.text = Some(text[..keep].to_string());
                out.push(Content::Resource { resource });
                marker_at.get_or_insert(out.len());
            }
            other => {
                cut += size;
                out.push(Content::Text {
                    text: omitted_note(&other, size, max_bytes),
                });
            }
        }
    }
    let structured_content = match structured_content {
        Some(value) if value.to_string().len() > max_bytes => {
            let size = value.to_string().len();
            cut += size;
            out.push(Content::Text {
                text: format!(
                    "[structured content of {size} bytes omitted: larger than the {} result limit]",
                    fmt_bytes(max_bytes)
                ),
            });
            None
        }
        other => other,
    };
    let marker = Content::Text {
        text: format!(
            "[output truncated: {} of {} cut to fit the {} result limit; {where_note}]",
            fmt_bytes(cut),
            fmt_bytes(total),
            fmt_bytes(max_bytes)
        ),
    };
    let at = marker_at.unwrap_or(out.len()).min(out.len());
    out.insert(at, marker);
    Truncated {
        result: ToolResult {
            content: out,
            structured_content,
            is_error,
            meta,
            output_problems,
        },
        cut_bytes: cut,
        spilled_to,
    }
}

/// The full output written to the spill file: the text rendering, then the structured content.
fn full_rendering(result: &ToolResult) -> String {
    let mut text = result.to_text();
    if !result.content.is_empty()
        && let Some(structured) = &result.structured_content
    {
        let json = serde_json::to_string_pretty(structured).unwrap_or_default();
        text.push_str("\n\n[structuredContent]\n");
        text.push_str(&json);
    }
    text
}

fn omitted_note(block: &Content, size: usize, max_bytes: usize) -> String {
    let what = match block {
        Content::Image { mime_type, .. } => format!("image ({mime_type})"),
        Content::Audio { mime_type, .. } => format!("audio ({mime_type})"),
        Content::Resource { resource } => format!(
            "resource {} ({})",
            resource.uri,
            resource.mime_type.as_deref().unwrap_or("binary")
        ),
        _ => "content block".to_string(),
    };
    format!(
        "[{what} of {} omitted: larger than the {} result limit]",
        fmt_bytes(size),
        fmt_bytes(max_bytes)
    )
}

/// `812 bytes`, `100 KiB`, `2.4 MiB`.
fn fmt_bytes(n: usize) -> String {
    const KIB: f64 = 1024.0;
    let f = n as f64;
    if f < KIB {
        format!("{n} bytes")
    } else if f < KIB * KIB {
        trim_float(f / KIB, "KiB")
    } else {
        trim_float(f / (KIB * KIB), "MiB")
    }
}

fn trim_float(v: f64, unit: &str) -> String {
    if (v - v.round()).abs() < 0.05 {
        format!("{} {unit}", v.round())
    } else {
        format!("{v:.1} {unit}")
    }
}

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
    /// The server's `_meta` of the result, kept for whoever passes the result on.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<serde_json::Map<String, Value>>,
    /// Where `structuredContent` does not match the tool's `outputSchema` (the result is
    /// returned anyway; the server is at fault, not the caller).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub output_problems: Vec<String>,
}

impl ToolResult {
    /// Reads an MCP `CallToolResult` in its JSON form (`content`, `structuredContent`,
    /// `isError`); a block of an unknown type is kept as [`Content::Other`]. (A server's
    /// answers are read typed, in `connection`, and tested against this.)
    pub fn from_json(mut value: Value) -> Self {
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
            meta: match value.get_mut("_meta").map(Value::take) {
                Some(Value::Object(meta)) => Some(meta),
                _ => None,
            },
            output_problems: Vec::new(),
        }
    }

    /// A text result, for built-in tools and tests.
    pub fn text(text: impl Into<String>) -> Self {
        ToolResult {
            content: vec![Content::Text { text: text.into() }],
            structured_content: None,
            is_error: false,
            meta: None,
            output_problems: Vec::new(),
        }
    }

    /// The whole result as text for an LLM: blocks joined by blank lines; structured content
    /// as JSON when there are no blocks to carry it.
    pub fn to_text(&self) -> String {
        if self.content.is_empty() {
            return self
                .structured_content
                .as_ref()
                .map(|structured| structured.to_string())
                .unwrap_or_default();
        }
        // Written in place, text blocks not copied first: a 10 MB text is then alive twice
        // (the result and this), not three times (and a part list, then its join).
        let text_bytes: usize = self
            .content
            .iter()
            .map(|block| match block {
                Content::Text { text } => text.len(),
                _ => 0,
            })
            .sum();
        let mut text = String::with_capacity(text_bytes + 2 * self.content.len());
        for (index, block) in self.content.iter().enumerate() {
            if index > 0 {
                text.push_str("\n\n");
            }
            match block {
                Content::Text { text: block } => text.push_str(block),
                other => text.push_str(&other.to_text()),
            }
        }
        text
    }
}

/// What a built-in tool function may return.
pub trait IntoToolResult {
    /// Converts into the result the model sees.
    fn into_tool_result(self) -> ToolResult;
}

impl IntoToolResult for ToolResult {
    fn into_tool_result(self) -> ToolResult {
        self
    }
}

impl IntoToolResult for String {
    fn into_tool_result(self) -> ToolResult {
        ToolResult::text(self)
    }
}

impl IntoToolResult for &'static str {
    fn into_tool_result(self) -> ToolResult {
        ToolResult::text(self)
    }
}

impl IntoToolResult for Value {
    /// JSON as text; an object is also given as `structuredContent`.
    fn into_tool_result(self) -> ToolResult {
        let text = self.to_string();
        let structured = self.is_object().then_some(self);
        ToolResult {
            content: vec![Content::Text { text }],
            structured_content: structured,
            is_error: false,
            meta: None,
            output_problems: Vec::new(),
        }
    }
}

/// Any serialisable value, returned as JSON text and `structuredContent`.
#[derive(Debug, Clone)]
pub struct Json<T>(pub T);

impl<T: Serialize> IntoToolResult for Json<T> {
    fn into_tool_result(self) -> ToolResult {
        match serde_json::to_value(self.0) {
            Ok(value) => value.into_tool_result(),
            Err(e) => error_result(format!("could not serialise the result: {e}")),
        }
    }
}

impl<T: IntoToolResult, E: fmt::Display> IntoToolResult for std::result::Result<T, E> {
    /// `Err` becomes a tool error (`isError: true`) the model sees and may act on.
    fn into_tool_result(self) -> ToolResult {
        match self {
            Ok(value) => value.into_tool_result(),
            Err(e) => error_result(e.to_string()),
        }
    }
}

/// A failed tool's result: its message as text, `isError: true`.
pub fn error_result(message: impl Into<String>) -> ToolResult {
    ToolResult {
        content: vec![Content::Text {
            text: message.into(),
        }],
        structured_content: None,
        is_error: true,
        meta: None,
        output_problems: Vec::new(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn text_result(text: &str) -> ToolResult {
        ToolResult::text(text)
    }

    #[test]
    fn small_results_are_untouched() {
        let r = text_result("hello");
        let t = truncate(r.clone(), 100, "mcp__s__t", None);
        assert_eq!(t.result, r);
        assert_eq!(t.cut_bytes, 0);
        assert_eq!(t.spilled_to, None);
    }

    #[test]
    fn large_text_is_cut_and_spilled_to_a_private_file() {
        let dir = tempfile::tempdir().unwrap();
        let spill = Spill::new(dir.path().join("spill"));
        let text = "0123456789".repeat(1000); // 10 000 bytes
        let t = truncate(text_result(&text), 4096, "mcp__fs__read_file", Some(&spill));
        assert_eq!(t.cut_bytes, 10_000 - 4096);
        let rendered = t.result.to_text();
        assert!(rendered.starts_with(&text[..4096]), "kept the head");
        let path = t.spilled_to.clone().unwrap();
        assert!(
            rendered.contains(&format!(
                "[output truncated: 5.8 KiB of 9.8 KiB cut to fit the 4 KiB result limit; \
                 the full output is in {}]",
                path.display()
            )),
            "{}",
            &rendered[4096..]
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
        assert!(
            path.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("mcp__fs__read_file-")
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
            let dir_mode = std::fs::metadata(spill.dir()).unwrap().permissions().mode();
            assert_eq!(dir_mode & 0o777, 0o700);
        }
        // A second spill of the same tool gets its own file.
        let again = truncate(text_result(&text), 4096, "mcp__fs__read_file", Some(&spill));
        assert_ne!(again.spilled_to.unwrap(), path);
    }

    #[test]
    fn cuts_fall_on_character_boundaries() {
        let text = "é".repeat(100); // 200 bytes
        let t = truncate(text_result(&text), 51, "t", None);
        let Content::Text { text: kept } = &t.result.content[0] else {
            panic!("text first")
        };
        assert_eq!(kept.len(), 50);
        assert_eq!(t.cut_bytes, 150);
        assert!(t.result.to_text().contains("the full output was not saved"));
    }

    #[test]
    fn later_blocks_are_cut_and_binary_blocks_replaced_by_notes() {
        let result = ToolResult::from_json(json!({
            "content": [
                {"type": "text", "text": "a".repeat(60)},
                {"type": "image", "data": "A".repeat(400), "mimeType": "image/png"},
                {"type": "text", "text": "b".repeat(60)},
                {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"},
            ]
        }));
        let t = truncate(result, 100, "mcp__x__y", None);
        let texts: Vec<String> = t.result.content.iter().map(Content::to_text).collect();
        assert_eq!(texts[0], "a".repeat(60));
        assert_eq!(
            texts[1],
            "[image (image/png) of 400 bytes omitted: larger than the 100 bytes result limit]"
        );
        assert_eq!(texts[2], "b".repeat(40));
        assert!(
            texts[3].starts_with("[output truncated: 424 bytes of 524 bytes cut"),
            "{}",
            texts[3]
        );
        // Nothing is left of the budget for the audio block after the cut.
        assert_eq!(
            texts[4],
            "[audio (audio/wav) of 4 bytes omitted: larger than the 100 bytes result limit]"
        );
        assert_eq!(t.cut_bytes, 400 + 20 + 4);
    }

    #[test]
    fn oversized_structured_content_is_dropped_but_spilled() {
        let dir = tempfile::tempdir().unwrap();
        let spill = Spill::new(dir.path());
        let result = ToolResult::from_json(json!({
            "content": [{"type": "text", "text": "summary"}],
            "structuredContent": {"rows": "x".repeat(500)}
        }));
        let t = truncate(result, 100, "t", Some(&spill));
        assert_eq!(t.result.structured_content, None);
        let saved = std::fs::read_to_string(t.spilled_to.unwrap()).unwrap();
        assert!(saved.starts_with("summary\n\n[structuredContent]\n"));
        assert!(saved.contains(&"x".repeat(500)));
        assert!(
            t.result
                .to_text()
                .contains("[structured content of 511 bytes omitted")
        );
    }

    #[cfg(unix)]
    #[test]
    fn refuses_a_spill_dir_others_can_write() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let shared = dir.path().join("shared");
        std::fs::create_dir(&shared).unwrap();
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o777)).unwrap();
        let err = Spill::new(&shared).write("t", "x").unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::PermissionDenied);
        let t = truncate(text_result("abcdef"), 3, "t", Some(&Spill::new(&shared)));
        assert!(
            t.result
                .to_text()
                .contains("the full output could not be saved")
        );
    }

    #[test]
    fn byte_sizes_read_naturally() {
        assert_eq!(fmt_bytes(812), "812 bytes");
        assert_eq!(fmt_bytes(100 * 1024), "100 KiB");
        assert_eq!(fmt_bytes(2_500_000), "2.4 MiB");
    }

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
        // Six blocks, joined by five blank lines; nothing else in it is one.
        assert_eq!(text.split("\n\n").count(), 6, "{text}");
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
