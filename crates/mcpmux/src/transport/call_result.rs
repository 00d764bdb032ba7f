//! A `tools/call` answer (a stdio line, or an HTTP answer's event) read straight into rmcp's
//! `CallToolResult`, each big string (a text block's `text`, an image or audio block's `data`)
//! decoded once, from the message into its own `String`.
//!
//! Through serde alone, a string with escapes is unescaped into the parser's scratch buffer and
//! then copied out of it: a 10 MB text is alive three times at once (the line, the scratch, the
//! string). Here the big strings are found without copying (borrowed raw values), decoded
//! each into a string of their own, and the rest of the result, with them emptied, goes
//! through serde as before: two copies at the peak, the line and the text.

use std::borrow::Cow;

use rmcp::model::{CallToolResult, ContentBlock, RequestId};
use serde_json::value::RawValue;

/// Strings shorter than this take serde's path: the copy saved is not worth the second look.
const BIG: usize = 64 * 1024;

/// The content blocks' kinds and their big string fields, borrowed from the line.
#[derive(serde::Deserialize)]
struct Probe<'a> {
    #[serde(borrow, default)]
    content: Vec<ProbeBlock<'a>>,
}

#[derive(serde::Deserialize)]
struct ProbeBlock<'a> {
    #[serde(borrow, rename = "type")]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    text: Option<&'a RawValue>,
    #[serde(borrow)]
    data: Option<&'a RawValue>,
}

/// `message` read as an answer carrying a result: its id and its result's JSON, borrowed;
/// `None` for anything else (a request, a notification, an error, or what does not read as
/// JSON-RPC), which the general reading then reads.
pub(crate) fn answer_parts(message: &[u8]) -> Option<(RequestId, &RawValue)> {
    #[derive(serde::Deserialize)]
    struct Envelope<'a> {
        id: Option<RequestId>,
        #[serde(borrow)]
        result: Option<&'a RawValue>,
        method: Option<serde::de::IgnoredAny>,
    }
    let envelope: Envelope<'_> = serde_json::from_slice(message).ok()?;
    match (envelope.id, envelope.result, envelope.method) {
        (Some(id), Some(result), None) => Some((id, result)),
        _ => None,
    }
}

/// `result` (the JSON of a `tools/call` result) as a tool result; `None` when it does not read
/// as one, exactly when serde would refuse it.
pub(crate) fn read(result: &str) -> Option<CallToolResult> {
    if result.len() < BIG {
        return serde_json::from_str(result).ok();
    }
    read_big_strings_once(result).or_else(|| serde_json::from_str(result).ok())
}

/// The big strings' way; `None` when it does not apply (no big string, or anything unusual:
/// serde's way then reads the result and refuses what it must).
fn read_big_strings_once(result: &str) -> Option<CallToolResult> {
    let probe: Probe<'_> = serde_json::from_str(result).ok()?;
    // (block index, byte range of the string literal, quotes included, within `result`)
    let mut big = Vec::new();
    for (index, block) in probe.content.iter().enumerate() {
        let field = match block.kind.as_deref() {
            Some("text") => block.text,
            Some("image" | "audio") => block.data,
            _ => None,
        };
        let Some(raw) = field.map(RawValue::get) else {
            continue;
        };
        if raw.len() >= BIG && raw.starts_with('"') {
            // Borrowed from `result`, so it lies inside it; checked all the same.
            let start = (raw.as_ptr() as usize).checked_sub(result.as_ptr() as usize)?;
            big.push((index, start..start + raw.len()));
        }
    }
    if big.is_empty() {
        return None;
    }
    let mut decoded = Vec::with_capacity(big.len());
    for (index, range) in &big {
        let literal = result.get(range.start + 1..range.end - 1)?;
        decoded.push((*index, unescape(literal)?));
    }
    let emptied: usize = big.iter().map(|(_, range)| range.len()).sum();
    let mut rest = String::with_capacity(result.len() - emptied + 2 * big.len());
    let mut at = 0;
    for (_, range) in &big {
        rest.push_str(result.get(at..range.start)?);
        rest.push_str("\"\"");
        at = range.end;
    }
    rest.push_str(result.get(at..)?);
    let mut parsed: CallToolResult = serde_json::from_str(&rest).ok()?;
    for (index, string) in decoded {
        match parsed.content.get_mut(index)? {
            ContentBlock::Text(block) => block.text = string,
            ContentBlock::Image(block) => block.data = string,
            ContentBlock::Audio(block) => block.data = string,
            _ => return None,
        }
    }
    Some(parsed)
}

/// The text of a JSON string literal's body (between its quotes); `None` where serde_json
/// would refuse it: an unknown escape, a bad `\u` escape, a lone surrogate, a raw control
/// character or quote.
fn unescape(literal: &str) -> Option<String> {
    // A raw control character is refused wherever it is: one pass, eight bytes at a time,
    // then a vectorised search from one backslash or quote to the next.
    if has_control(literal.as_bytes()) {
        return None;
    }
    let mut text = String::with_capacity(literal.len());
    let mut rest = literal;
    while let Some(at) = memchr::memchr2(b'\\', b'"', rest.as_bytes()) {
        text.push_str(&rest[..at]);
        let escape = rest.as_bytes().get(at..)?;
        let (decoded, used) = match escape {
            [b'\\', b'"', ..] => ('"', 2),
            [b'\\', b'\\', ..] => ('\\', 2),
            [b'\\', b'/', ..] => ('/', 2),
            [b'\\', b'b', ..] => ('\u{8}', 2),
            [b'\\', b'f', ..] => ('\u{c}', 2),
            [b'\\', b'n', ..] => ('\n', 2),
            [b'\\', b'r', ..] => ('\r', 2),
            [b'\\', b't', ..] => ('\t', 2),
            [b'\\', b'u', ..] => unicode_escape(&escape[2..])?,
            _ => return None,
        };
        text.push(decoded);
        rest = rest.get(at + used..)?;
    }
    text.push_str(rest);
    text.shrink_to_fit();
    Some(text)
}

/// Whether a byte of `bytes` is below 0x20 (a control character).
fn has_control(bytes: &[u8]) -> bool {
    const ONES: u64 = u64::from_le_bytes([1; 8]);
    const HIGHS: u64 = u64::from_le_bytes([0x80; 8]);
    let mut words = bytes.chunks_exact(8);
    for word in &mut words {
        let Ok(word) = <[u8; 8]>::try_from(word) else {
            return true;
        };
        let word = u64::from_le_bytes(word);
        // A byte under 0x20 borrows in the subtraction and sets its high bit, where the byte
        // itself had none (the "has a byte less than n" test, exact for n up to 128).
        if word.wrapping_sub(ONES * 0x20) & !word & HIGHS != 0 {
            return true;
        }
    }
    words.remainder().iter().any(|&b| b < 0x20)
}

/// The character a `\u` escape names, from the four hex digits after `\u` (and, for a high
/// surrogate, the `\uDCxx` that must follow); with the bytes used, `\u` included.
fn unicode_escape(after: &[u8]) -> Option<(char, usize)> {
    let first = hex4(after)?;
    match first {
        0xD800..=0xDBFF => {
            let low = match after.get(4..)? {
                [b'\\', b'u', low @ ..] => hex4(low)?,
                _ => return None,
            };
            if !(0xDC00..=0xDFFF).contains(&low) {
                return None;
            }
            let code = 0x10000 + ((u32::from(first) - 0xD800) << 10) + (u32::from(low) - 0xDC00);
            Some((char::from_u32(code)?, 12))
        }
        0xDC00..=0xDFFF => None,
        _ => Some((char::from_u32(u32::from(first))?, 6)),
    }
}

/// Four hex digits at the start of `bytes`.
fn hex4(bytes: &[u8]) -> Option<u16> {
    let digits = std::str::from_utf8(bytes.get(..4)?).ok()?;
    if !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u16::from_str_radix(digits, 16).ok()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// What serde_json makes of `literal` (a string literal's body).
    fn serde(literal: &str) -> Option<String> {
        serde_json::from_str(&format!("\"{literal}\"")).ok()
    }

    #[test]
    fn every_escape_decodes_as_serde_json_decodes_it() {
        for literal in [
            r#"plain"#,
            r#"a\"b\\c\/d\be\ff\ng\rh\ti"#,
            r#"\u0041\u00e9\u4e2d\u0000"#,
            r#"\ud83d\ude00 astral"#,
            "raw é 中 😀",
            "",
        ] {
            assert_eq!(unescape(literal), serde(literal), "{literal}");
            assert!(unescape(literal).is_some(), "{literal}");
        }
    }

    #[test]
    fn what_serde_json_refuses_is_refused() {
        for literal in [
            r#"\x"#,
            r#"\u12"#,
            r#"\u12g4"#,
            r#"\ud83d"#,
            r#"\ud83d\u0041"#,
            r#"\ude00"#,
            "tab\there",
            "\\",
        ] {
            assert_eq!(serde(literal), None, "serde accepts {literal:?}");
            assert_eq!(unescape(literal), None, "{literal:?}");
        }
    }

    fn big_result(text: &str, data: &str) -> String {
        serde_json::json!({
            "content": [
                {"type": "text", "text": "small"},
                {"type": "text", "text": text, "annotations": {"priority": 0.5}},
                {"type": "image", "data": data, "mimeType": "image/png"},
                {"type": "resource", "resource": {"uri": "file:///x", "text": text}},
            ],
            "structuredContent": {"text": "not a block"},
            "isError": false,
        })
        .to_string()
    }

    #[test]
    fn a_big_result_reads_as_serde_reads_it() {
        // Quotes, backslashes, control characters and a forged end of the block and the list
        // inside the text: only serde's own reading says where the string ends.
        let text = "line \"quoted\" \\ tab\t 😀 é\u{1}\"}],\"isError\":true,{\"text\":\"\n"
            .repeat(3000)
            + "\\";
        let data = "QUJD".repeat(20_000);
        let json = big_result(&text, &data);
        assert!(
            read_big_strings_once(&json).is_some(),
            "the big strings' way applies"
        );
        let ours = read(&json).unwrap();
        let serde: CallToolResult = serde_json::from_str(&json).unwrap();
        assert_eq!(
            serde_json::to_value(&ours).unwrap(),
            serde_json::to_value(&serde).unwrap()
        );
    }

    #[test]
    fn a_result_serde_refuses_is_refused() {
        let text = "x".repeat(BIG);
        // A text block whose `text` is a number; a content that is not a list; a lone
        // surrogate in a big text.
        for json in [
            format!(r#"{{"content":[{{"type":"text","text":1}}],"pad":"{text}"}}"#),
            format!(r#"{{"content":"{text}"}}"#),
            format!(r#"{{"content":[{{"type":"text","text":"{text}\ud800"}}]}}"#),
        ] {
            assert!(serde_json::from_str::<CallToolResult>(&json).is_err());
            assert!(read(&json).is_none());
        }
    }

    #[test]
    fn a_control_character_is_found_at_any_place() {
        for place in 0..19 {
            for byte in 0..=255u8 {
                let mut bytes = vec![b'a'; 19];
                bytes[place] = byte;
                assert_eq!(has_control(&bytes), byte < 0x20, "{byte:#x} at {place}");
            }
        }
        assert!(!has_control(b""));
        assert!(!has_control("\u{7f}é\u{ffff}𝄞 \"\\".as_bytes()));
    }

    proptest! {
        #[test]
        fn control_characters_are_found_as_a_byte_by_byte_look_finds_them(
            // Mostly other bytes: most words then hold none, and some exactly one.
            bytes in prop::collection::vec(prop_oneof![30 => 0x20..=0xffu8, 1 => 0..0x20u8], 0..64)
        ) {
            prop_assert_eq!(has_control(&bytes), bytes.iter().any(|&b| b < 0x20));
        }

        #[test]
        fn any_string_round_trips(text in any::<String>()) {
            let literal = serde_json::to_string(&text).unwrap();
            prop_assert_eq!(unescape(&literal[1..literal.len() - 1]), Some(text));
        }

        #[test]
        fn any_literal_decodes_as_serde_json_decodes_it(
            literal in r#"([a-z\\"/]|\\[\\"/bfnrtux]|\\u[0-9a-fA-F]{4}|\\u[dD][89abAB][0-9a-f]{2}(\\u[dD][c-fC-F][0-9a-f]{2})?|é|\x01)*"#
        ) {
            prop_assert_eq!(unescape(&literal), serde(&literal));
        }
    }
}
