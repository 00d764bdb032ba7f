//! Messages nested deeper than serde_json decodes. rmcp parses every incoming message with
//! serde_json, whose recursion limit (128) turns a line like `{"result": [[[[…]]]]}` into a
//! syntax error that rmcp drops without a word: the request it answered then waits for its
//! deadline. Here one bounded, iterative pass over the raw bytes measures the nesting and reads
//! the top-level `id`; a response too deep to decode is replaced by a JSON-RPC error for that
//! id, so the one call fails at once with the reason and every other call goes on.
//!
//! Works on bytes of one message: any transport (stdio lines, HTTP bodies, SSE `data:`
//! fields, WebSocket frames) can call [`screen`] before handing a message to rmcp. Knows
//! nothing of tools or the hub.

/// Deepest nesting of arrays and objects serde_json decodes (its recursion limit is 128:
/// the 128th level fails).
pub(crate) const MAX_DECODABLE_DEPTH: usize = 127;

/// JSON-RPC "Parse error": the message could not be read.
const PARSE_ERROR: i64 = -32700;

/// What to do with one incoming message.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Screen {
    /// Decodable: hand it on unchanged.
    Pass,
    /// A response too deep to decode: hand on this error response for its id instead.
    Answer(Vec<u8>),
    /// Too deep, and no response id to fail (a request or notification from the server):
    /// drop it; the reason is for the log.
    Drop(String),
}

/// What one pass over a message saw.
#[derive(Debug, Default, PartialEq, Eq)]
struct Shape {
    depth: usize,
    /// The raw JSON of a top-level string or number `id`.
    id: Option<Vec<u8>>,
    /// A top-level `method` member: a request or notification, not a response.
    method: bool,
}

/// Measures `message` without recursion: nesting depth (outside strings), and the top-level
/// `id` and `method` members.
fn shape(message: &[u8]) -> Shape {
    let mut shape = Shape::default();
    let mut depth = 0usize;
    let mut expect_key = false;
    let mut last_key: &[u8] = b"";
    let mut i = 0;
    while i < message.len() {
        match message[i] {
            b'"' => {
                let start = i;
                i = string_end(message, i + 1);
                let end = (i + 1).min(message.len());
                if depth == 1 {
                    let token = &message[start..end];
                    if expect_key {
                        last_key = token;
                        expect_key = false;
                        shape.method |= token == b"\"method\"";
                    } else if last_key == b"\"id\"" {
                        shape.id = Some(token.to_vec());
                    }
                }
            }
            open @ (b'{' | b'[') => {
                depth += 1;
                shape.depth = shape.depth.max(depth);
                if depth == 1 {
                    expect_key = open == b'{';
                }
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            b',' if depth == 1 => expect_key = true,
            b'-' | b'0'..=b'9' if depth == 1 && !expect_key && last_key == b"\"id\"" => {
                let start = i;
                while i < message.len()
                    && matches!(message[i], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
                {
                    i += 1;
                }
                shape.id = Some(message[start..i].to_vec());
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    shape
}

/// Where the string whose contents start at `from` ends: the index of its closing quote, or
/// the message's length if it has none. Jumps from one quote or backslash to the next (a
/// vectorised search): a tool result is mostly the text of its strings.
pub(super) fn string_end(message: &[u8], mut from: usize) -> usize {
    while let Some(rest) = message.get(from..) {
        match memchr::memchr2(b'"', b'\\', rest) {
            // An escape: the next byte is taken whatever it is.
            Some(at) if rest[at] == b'\\' => from += at + 2,
            Some(at) => return from + at,
            None => break,
        }
    }
    message.len()
}

/// Judges one incoming message (without its newline).
pub(crate) fn screen(message: &[u8]) -> Screen {
    // Each level opens with a bracket. A message with no more of them than the limit, in
    // strings or not, cannot be too deep, and the walk is skipped: counting is a vectorised
    // search, stopped at the first bracket over the limit.
    let openers = memchr::memchr2_iter(b'{', b'[', message)
        .take(MAX_DECODABLE_DEPTH + 1)
        .count();
    if openers <= MAX_DECODABLE_DEPTH {
        return Screen::Pass;
    }
    let shape = shape(message);
    if shape.depth <= MAX_DECODABLE_DEPTH {
        return Screen::Pass;
    }
    let reason = format!(
        "the server's answer could not be read: it nests arrays and objects deeper than \
         {MAX_DECODABLE_DEPTH} levels ({} found)",
        shape.depth
    );
    match shape.id {
        Some(id) if !shape.method => {
            let mut answer = b"{\"jsonrpc\":\"2.0\",\"id\":".to_vec();
            answer.extend_from_slice(&id);
            answer.extend_from_slice(b",\"error\":{\"code\":");
            answer.extend_from_slice(PARSE_ERROR.to_string().as_bytes());
            answer.extend_from_slice(b",\"message\":");
            answer.extend_from_slice(serde_json::Value::String(reason).to_string().as_bytes());
            answer.extend_from_slice(b"}}");
            Screen::Answer(answer)
        }
        _ => Screen::Drop(reason),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The end of a string as the walk found it before, one byte at a time: what `string_end`
    /// must agree with, the one thing the walk's speed-up changed. (Past a trailing backslash
    /// this ran one beyond the end; the walk reads both as the end.)
    fn string_end_byte_by_byte(message: &[u8], mut i: usize) -> usize {
        while i < message.len() && message[i] != b'"' {
            if message[i] == b'\\' {
                i += 1;
            }
            i += 1;
        }
        i.min(message.len())
    }

    /// Messages made of the bytes the walk cares about, and a little else, after up to 200
    /// opening brackets: as often over the limit as under it.
    fn soup() -> impl Strategy<Value = Vec<u8>> {
        let pieces = prop::sample::select(vec![
            &b"{"[..],
            b"[",
            b"}",
            b"]",
            b"\"",
            b"\\",
            b"\\\"",
            b",",
            b":",
            b"\"id\"",
            b"\"method\"",
            b"-1.5e3",
            b"7",
            b"x",
            b"\"id\":",
            b"{\"id\":",
            b"[[[[",
        ]);
        (0..200usize, prop::collection::vec(pieces, 0..400))
            .prop_map(|(deep, pieces)| [b"[".repeat(deep), pieces.concat()].concat())
    }

    proptest! {
        #[test]
        fn a_string_ends_where_the_byte_by_byte_look_ended_it(message in soup()) {
            for from in 0..=message.len() + 1 {
                prop_assert_eq!(
                    string_end(&message, from),
                    string_end_byte_by_byte(&message, from),
                    "from {}", from
                );
            }
        }

        #[test]
        fn the_bracket_count_never_passes_what_the_walk_refuses(message in soup()) {
            let deep = shape(&message).depth > MAX_DECODABLE_DEPTH;
            prop_assert_eq!(screen(&message) != Screen::Pass, deep);
        }
    }

    #[test]
    fn a_string_ends_at_its_closing_quote_or_the_end() {
        assert_eq!(string_end(br#""ab\"c" x"#, 1), 6);
        // The escaped quote is no end.
        assert_eq!(string_end(br#""ab\""#, 1), 5);
        assert_eq!(string_end(b"\"ab\\", 1), 4);
        assert_eq!(string_end(b"\"", 1), 1);
        assert_eq!(string_end(b"", 1), 0);
    }

    fn nested(levels: usize) -> String {
        format!("{}{}", "[".repeat(levels), "]".repeat(levels))
    }

    #[test]
    fn the_limit_is_serde_jsons() {
        let ok = nested(MAX_DECODABLE_DEPTH);
        assert!(serde_json::from_str::<serde_json::Value>(&ok).is_ok());
        let too_deep = nested(MAX_DECODABLE_DEPTH + 1);
        assert!(serde_json::from_str::<serde_json::Value>(&too_deep).is_err());
    }

    #[test]
    fn a_deep_response_becomes_an_error_for_its_id() {
        for (id, raw) in [
            ("7", "7"),
            ("\"a\\\"b\"", "\"a\\\"b\""),
            ("-1.5e3", "-1.5e3"),
        ] {
            let line = format!(
                r#"{{"jsonrpc":"2.0","result":{{"structuredContent":{{"x":"[{{\"id\":9}}","deep":{}}}}},"id":{id}}}"#,
                nested(100_000)
            );
            let Screen::Answer(answer) = screen(line.as_bytes()) else {
                panic!("not answered: {id}");
            };
            let answer: serde_json::Value = serde_json::from_slice(&answer).unwrap();
            assert_eq!(
                answer["id"],
                serde_json::from_str::<serde_json::Value>(raw).unwrap()
            );
            assert_eq!(answer["error"]["code"], -32700);
            assert_eq!(
                answer["error"]["message"],
                "the server's answer could not be read: it nests arrays and objects deeper \
                 than 127 levels (100003 found)"
            );
        }
    }

    #[test]
    fn decodable_messages_and_deep_requests_are_not_answered() {
        let fine = br#"{"jsonrpc":"2.0","id":1,"result":{"a":[[["]]]]]]"]]]}}"#;
        assert_eq!(screen(fine), Screen::Pass);
        let request = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"sampling/createMessage","params":{}}}"#,
            nested(500)
        );
        assert!(matches!(screen(request.as_bytes()), Screen::Drop(_)));
        let no_id = format!(r#"{{"jsonrpc":"2.0","result":{}}}"#, nested(500));
        assert!(matches!(screen(no_id.as_bytes()), Screen::Drop(_)));
        let nested_id = format!(
            r#"{{"jsonrpc":"2.0","x":{{"id":5}},"result":{}}}"#,
            nested(500)
        );
        assert!(matches!(screen(nested_id.as_bytes()), Screen::Drop(_)));
    }
}
