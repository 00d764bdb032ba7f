//! Messages over a transport's size cap (a stdio line, a legacy SSE event, a streamable HTTP
//! body or event). Such a message is skipped unread, keeping only its first and last
//! [`KEPT`] bytes: enough to find the `id` of the request it answers, so that one request
//! fails at once with the reason instead of waiting for its deadline. When neither end names
//! an id (a server that pads its answer, or writes `id` in the middle), the transport fails
//! every request of that server in flight instead: one of them was answered, and nothing
//! says which.
//!
//! Why not spill it to a file, as a result over `max_result_bytes` is? The cap bounds what
//! one message may cost the hub, and a spill would need the message decoded (its base64, its
//! escapes) as it streams past: a second reader of every tool result for answers no model can
//! take in. The cap is the limit of what mcpmux reads; past it the answer is refused.
//!
//! Knows JSON-RPC's shape and nothing of which transport carried the bytes.

use rmcp::model::{ErrorCode, ErrorData, NumberOrString, RequestId};

use super::nesting::string_end;

/// Bytes of a skipped message kept at each end: far more than any serialiser writes before
/// `id` (`{"jsonrpc":"2.0","id":…` or, in the TypeScript SDK's order, `…,"jsonrpc":"2.0","id":…}`).
pub(crate) const KEPT: usize = 4096;

/// JSON-RPC "Parse error": the answer could not be read, as for one nested too deep.
const PARSE_ERROR: i32 = -32700;

/// The two ends of a message being skipped, fed as it streams past: memory stays at about
/// three times [`KEPT`] whatever its length.
#[derive(Debug, Default)]
pub(crate) struct Skipped {
    head: Vec<u8>,
    tail: Vec<u8>,
}

/// What a skipped message was, as far as its ends tell.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// An answer to request `id`: that request fails.
    Answers(RequestId),
    /// A request or notification of the server's: nothing of ours waits for it.
    FromServer,
    /// Nothing says which request it answers: every request in flight fails.
    Unknown,
}

impl Skipped {
    /// Takes the next bytes of the message.
    pub(crate) fn take(&mut self, mut bytes: &[u8]) {
        if self.head.len() < KEPT {
            let room = (KEPT - self.head.len()).min(bytes.len());
            self.head.extend_from_slice(&bytes[..room]);
            bytes = &bytes[room..];
        }
        if bytes.len() >= KEPT {
            self.tail.clear();
            self.tail.extend_from_slice(&bytes[bytes.len() - KEPT..]);
            return;
        }
        self.tail.extend_from_slice(bytes);
        if self.tail.len() > 2 * KEPT {
            self.tail.drain(..self.tail.len() - KEPT);
        }
    }

    /// What the message was: an answer to the id its head (or else its tail) names, a message
    /// of the server's own, or unknown.
    pub(crate) fn verdict(&self) -> Verdict {
        let head = read_head(&self.head);
        if head.method {
            return Verdict::FromServer;
        }
        if let Some(id) = head.id {
            return Verdict::Answers(id);
        }
        // The tail holds the bytes after the head (the last of them); when they are few, the
        // end of the head goes before them.
        let tail = &self.tail[self.tail.len().saturating_sub(KEPT)..];
        let before = &self.head[self.head.len() - (KEPT - tail.len()).min(self.head.len())..];
        match tail_id(&[before, tail].concat()) {
            Some(id) => Verdict::Answers(id),
            None => Verdict::Unknown,
        }
    }
}

/// Why an answer over `cap` bytes was refused, in words for the caller: "answer over 64 MiB"
/// first, then what it means.
pub(crate) fn reason(cap: usize) -> String {
    format!(
        "answer over {}: the server's message is larger than the most mcpmux reads in one \
         message, so it was skipped unread",
        size(cap)
    )
}

/// The error a request fails with when its answer was over `cap` bytes.
pub(crate) fn error(cap: usize) -> ErrorData {
    ErrorData::new(ErrorCode(PARSE_ERROR), reason(cap), None)
}

/// `bytes` as people read it: whole MiB or KiB when it is one, else bytes.
fn size(bytes: usize) -> String {
    const MIB: usize = 1 << 20;
    const KIB: usize = 1 << 10;
    if bytes >= MIB && bytes.is_multiple_of(MIB) {
        format!("{} MiB", bytes / MIB)
    } else if bytes >= KIB && bytes.is_multiple_of(KIB) {
        format!("{} KiB", bytes / KIB)
    } else {
        format!("{bytes} bytes")
    }
}

/// What the start of a message says.
#[derive(Debug, Default)]
struct Head {
    id: Option<RequestId>,
    method: bool,
}

/// Reads the top-level members of an object from its first bytes, as far as they go: the
/// `id` (when its value ends inside them) and whether a `method` is there.
fn read_head(bytes: &[u8]) -> Head {
    let mut head = Head::default();
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let mut i = skip_space(bytes, 0);
    if bytes.get(i) != Some(&b'{') {
        return head;
    }
    i += 1;
    loop {
        i = skip_space(bytes, i);
        if bytes.get(i) != Some(&b'"') {
            return head;
        }
        let key_end = string_end(bytes, i + 1);
        if key_end >= bytes.len() {
            return head;
        }
        let key = &bytes[i + 1..key_end];
        i = skip_space(bytes, key_end + 1);
        if bytes.get(i) != Some(&b':') {
            return head;
        }
        i = skip_space(bytes, i + 1);
        let Some(value_end) = value_end(bytes, i) else {
            return head;
        };
        match key {
            b"method" => head.method = true,
            b"id" => head.id = request_id(&bytes[i..value_end]),
            _ => {}
        }
        i = skip_space(bytes, value_end);
        if bytes.get(i) != Some(&b',') {
            return head;
        }
        i += 1;
    }
}

/// Where the JSON value starting at `from` ends (one past its last byte), if it ends before
/// the bytes do.
fn value_end(bytes: &[u8], from: usize) -> Option<usize> {
    match bytes.get(from)? {
        b'"' => {
            let end = string_end(bytes, from + 1);
            (end < bytes.len()).then_some(end + 1)
        }
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut i = from;
            while i < bytes.len() {
                match bytes[i] {
                    b'"' => i = string_end(bytes, i + 1),
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            None
        }
        _ => {
            // A number or a literal: it ends where a delimiter is; one cut by the end of the
            // bytes may go on.
            let len = bytes[from..]
                .iter()
                .position(|b| matches!(b, b',' | b'}' | b']') || b.is_ascii_whitespace())?;
            Some(from + len)
        }
    }
}

/// The id a message ends with: `…,"id":7}` or `…,"id":"abc"}`, when the last member of the
/// object is its `id`.
fn tail_id(bytes: &[u8]) -> Option<RequestId> {
    let end = trim_end(bytes, bytes.len());
    let close = end.checked_sub(1)?;
    if bytes[close] != b'}' {
        return None;
    }
    let value_end = trim_end(bytes, close);
    let value_start = match bytes.get(value_end.checked_sub(1)?)? {
        b'"' => {
            // A plain string id: the quote before it must not be escaped.
            let open = bytes[..value_end - 1].iter().rposition(|b| *b == b'"')?;
            if open == 0
                || bytes[open - 1] == b'\\'
                || bytes[open + 1..value_end - 1].contains(&b'\\')
            {
                return None;
            }
            open
        }
        _ => {
            let digits = bytes[..value_end]
                .iter()
                .rev()
                .take_while(|b| matches!(b, b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9'))
                .count();
            value_end - digits
        }
    };
    let colon = trim_end(bytes, value_start).checked_sub(1)?;
    if bytes[colon] != b':' {
        return None;
    }
    let key_end = trim_end(bytes, colon);
    let key_start = key_end.checked_sub(4)?;
    if &bytes[key_start..key_end] != b"\"id\"" {
        return None;
    }
    let before = trim_end(bytes, key_start).checked_sub(1)?;
    if !matches!(bytes[before], b',' | b'{') {
        return None;
    }
    request_id(&bytes[value_start..value_end])
}

/// A JSON string or integer as a request id.
fn request_id(raw: &[u8]) -> Option<RequestId> {
    match serde_json::from_slice::<serde_json::Value>(raw).ok()? {
        serde_json::Value::String(id) => Some(NumberOrString::String(id.into())),
        serde_json::Value::Number(n) => n.as_i64().map(NumberOrString::Number),
        _ => None,
    }
}

fn skip_space(bytes: &[u8], mut i: usize) -> usize {
    while bytes.get(i).is_some_and(u8::is_ascii_whitespace) {
        i += 1;
    }
    i
}

/// Where `bytes[..end]` ends once trailing whitespace is left off.
fn trim_end(bytes: &[u8], mut end: usize) -> usize {
    while end > 0 && bytes[end - 1].is_ascii_whitespace() {
        end -= 1;
    }
    end
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn verdict_of(message: &[u8], pieces: usize) -> Verdict {
        let mut skipped = Skipped::default();
        for piece in message.chunks(message.len().div_ceil(pieces).max(1)) {
            skipped.take(piece);
        }
        skipped.verdict()
    }

    fn padded(before: &str, after: &str) -> Vec<u8> {
        let mut message = before.as_bytes().to_vec();
        message.extend(std::iter::repeat_n(b'x', 100_000));
        message.extend_from_slice(after.as_bytes());
        message
    }

    #[test]
    fn the_id_is_read_from_the_head_whatever_comes_before_it() {
        let cases = [
            (
                r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"text":""#,
                7,
            ),
            (
                r#" {"jsonrpc" : "2.0" , "id" : 4294967296 , "result":"#,
                1 << 32,
            ),
            (r#"{"a":{"id":1,"b":["}"]},"id":9,"result":"#, 9),
        ];
        for (head, id) in cases {
            for pieces in [1, 3, 1000] {
                let message = padded(head, r#""}]}}"#);
                assert_eq!(
                    verdict_of(&message, pieces),
                    Verdict::Answers(NumberOrString::Number(id)),
                    "{head}"
                );
            }
        }
        let message = padded(r#"{"jsonrpc":"2.0","id":"a\"b","result":""#, r#""}"#);
        assert_eq!(
            verdict_of(&message, 7),
            Verdict::Answers(NumberOrString::String("a\"b".into()))
        );
    }

    #[test]
    fn the_id_is_read_from_the_tail_when_the_head_does_not_name_it() {
        // The TypeScript SDK writes `result` first.
        let message = padded(
            r#"{"result":{"content":[{"text":""#,
            r#""}]},"jsonrpc":"2.0","id":12}"#,
        );
        assert_eq!(
            verdict_of(&message, 5),
            Verdict::Answers(NumberOrString::Number(12))
        );
        let message = padded(r#"{"result":""#, "\",\"id\" : \"k-1\" }\r");
        assert_eq!(
            verdict_of(&message, 5),
            Verdict::Answers(NumberOrString::String("k-1".into()))
        );
    }

    #[test]
    fn a_message_whose_ends_name_no_id_is_unknown() {
        for message in [
            padded(
                "      ",
                r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}"#,
            ),
            padded(r#"{"result":""#, r#"","id":1,"jsonrpc":"2.0"}"#),
            // An id cut by the end of the head may go on: 12 could be 123.
            [&br#"{"jsonrpc":"2.0","id":12"#[..], &[b'3'; KEPT]].concat(),
            // An `id` inside a string at the end is no id.
            padded(r#"{"result":{"text":""#, r#"\",\"id\":5}"}}"#),
            padded(r#"{"result":{"text":""#, r#"x\"id\":5}"#),
            padded("not json", "at all"),
        ] {
            assert_eq!(
                verdict_of(&message, 3),
                Verdict::Unknown,
                "{}",
                String::from_utf8_lossy(&message[message.len() - 40..])
            );
        }
    }

    #[test]
    fn a_request_of_the_servers_is_its_own() {
        let message = padded(
            r#"{"jsonrpc":"2.0","id":3,"method":"sampling/createMessage","params":{"x":""#,
            r#""}}"#,
        );
        assert_eq!(verdict_of(&message, 2), Verdict::FromServer);
    }

    #[test]
    fn the_reason_names_the_cap() {
        assert!(reason(64 << 20).starts_with("answer over 64 MiB: "));
        assert!(reason(1000).starts_with("answer over 1000 bytes: "));
        assert!(reason(16 << 10).starts_with("answer over 16 KiB: "));
        assert_eq!(error(64 << 20).code.0, PARSE_ERROR);
    }

    #[test]
    fn memory_stays_bounded_whatever_the_length() {
        let mut skipped = Skipped::default();
        for _ in 0..10_000 {
            skipped.take(&[b'y'; 100]);
        }
        assert_eq!(skipped.head.len(), KEPT);
        assert!(skipped.tail.len() <= 2 * KEPT);
        assert!(
            skipped.tail.capacity() <= 4 * KEPT,
            "{}",
            skipped.tail.capacity()
        );
    }
}
