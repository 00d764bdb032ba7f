//! The SSE wire format (WHATWG "event stream interpretation"), incremental and bounded: chunks
//! go in, whole events come out. Lines end in CRLF, LF or CR; `id` and `retry` are read and
//! ignored (nothing reconnects); comments are skipped. An event over the bound is skipped to
//! its end, keeping only the two ends of its data (`oversize.rs`), which come out in its place
//! so the request it answers can fail.

use std::collections::VecDeque;

use super::super::oversize;

/// One dispatched SSE event.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct SseEvent {
    /// The `event` field; `message` when absent.
    pub(super) kind: String,
    /// The `data` lines joined with `\n`.
    pub(super) data: String,
}

/// What the parser hands out, in the order of the stream.
#[derive(Debug)]
pub(super) enum Parsed {
    Event(SseEvent),
    /// An event over the bound, skipped: the ends of its data, and its type when it came
    /// before the bound was passed.
    Skipped {
        kind: String,
        ends: Box<oversize::Skipped>,
    },
}

/// A line of an event being skipped: its first bytes, until they say whether it is `data`
/// (kept, for the ends) or another field (dropped).
#[derive(Debug, Default)]
struct SkippedLine {
    head: Vec<u8>,
    field: Option<bool>,
    /// A data line came before: the next one is joined with a newline.
    had_data: bool,
}

/// Bytes that tell a data line: `data: `.
const DATA_FIELD: usize = 6;

pub(super) struct EventParser {
    max: usize,
    /// The current line so far.
    line: Vec<u8>,
    /// The previous chunk ended in CR: a leading LF belongs to that line end.
    after_cr: bool,
    /// The first line may start with a byte order mark.
    first_line: bool,
    kind: String,
    data: String,
    has_data: bool,
    /// Bytes kept for the current event (event type and data so far).
    size: usize,
    /// The current event is over `max`: the ends of its data, while it is skipped to its
    /// end, and where its current line is.
    skipping: Option<Box<oversize::Skipped>>,
    skipped_line: SkippedLine,
    ready: VecDeque<Parsed>,
}

impl EventParser {
    pub(super) fn new(max: usize) -> Self {
        Self {
            max,
            line: Vec::new(),
            after_cr: false,
            first_line: true,
            kind: String::new(),
            data: String::new(),
            has_data: false,
            size: 0,
            skipping: None,
            skipped_line: SkippedLine::default(),
            ready: VecDeque::new(),
        }
    }

    pub(super) fn next_event(&mut self) -> Option<Parsed> {
        self.ready.pop_front()
    }

    /// Parses a chunk.
    pub(super) fn feed(&mut self, mut chunk: &[u8]) {
        if self.after_cr {
            self.after_cr = false;
            if let Some(rest) = chunk.strip_prefix(b"\n") {
                chunk = rest;
            }
        }
        while !chunk.is_empty() {
            match memchr::memchr2(b'\n', b'\r', chunk) {
                Some(pos) => {
                    self.extend_line(&chunk[..pos]);
                    self.end_line();
                    let cr = chunk[pos] == b'\r';
                    chunk = &chunk[pos + 1..];
                    if cr {
                        match chunk.first() {
                            Some(b'\n') => chunk = &chunk[1..],
                            Some(_) => {}
                            None => self.after_cr = true,
                        }
                    }
                }
                None => {
                    self.extend_line(chunk);
                    chunk = &[];
                }
            }
        }
    }

    fn extend_line(&mut self, bytes: &[u8]) {
        if let Some(ends) = &mut self.skipping {
            self.skipped_line.extend(ends, bytes);
            return;
        }
        if self.size + self.line.len() + bytes.len() > self.max {
            // The data so far, then this line: the head of the message.
            let line = std::mem::take(&mut self.line);
            let mut ends = self.start_skipping();
            self.skipped_line.extend(&mut ends, &line);
            self.skipped_line.extend(&mut ends, bytes);
            self.skipping = Some(ends);
            return;
        }
        self.line.extend_from_slice(bytes);
    }

    /// The ends of the current event's data so far, its buffers given back.
    fn start_skipping(&mut self) -> Box<oversize::Skipped> {
        let mut ends = Box::<oversize::Skipped>::default();
        ends.take(self.data.as_bytes());
        self.skipped_line = SkippedLine {
            had_data: self.has_data,
            ..SkippedLine::default()
        };
        self.data = String::new();
        self.line = Vec::new();
        ends
    }

    fn end_line(&mut self) {
        if let Some(ends) = &mut self.skipping {
            if !self.skipped_line.end(ends) {
                return;
            }
            // The blank line: the skipped event ends.
            if let Some(ends) = self.skipping.take() {
                self.ready.push_back(Parsed::Skipped {
                    kind: std::mem::take(&mut self.kind),
                    ends,
                });
            }
            self.has_data = false;
            self.size = 0;
            return;
        }
        let mut line = std::mem::take(&mut self.line);
        if std::mem::take(&mut self.first_line) && line.starts_with(b"\xEF\xBB\xBF") {
            line.drain(..3);
        }
        if line.is_empty() {
            self.dispatch();
            return;
        }
        if line[0] == b':' {
            return;
        }
        let (field, value) = match line.iter().position(|b| *b == b':') {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (&line[..], &[][..]),
        };
        match field {
            b"event" => {
                self.kind = String::from_utf8_lossy(value).into_owned();
                self.size += self.kind.len();
            }
            b"data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(&String::from_utf8_lossy(value));
                self.has_data = true;
                self.size += value.len() + 1;
            }
            // `id` and `retry` matter only for reconnecting, which this transport does not do.
            _ => {}
        }
        if self.size > self.max {
            self.skipping = Some(self.start_skipping());
        }
    }

    fn dispatch(&mut self) {
        let kind = std::mem::take(&mut self.kind);
        let data = std::mem::take(&mut self.data);
        if std::mem::take(&mut self.has_data) {
            let kind = if kind.is_empty() {
                "message".to_string()
            } else {
                kind
            };
            self.ready.push_back(Parsed::Event(SseEvent { kind, data }));
        }
        self.size = 0;
    }
}

impl SkippedLine {
    /// The next bytes of the line: the value of a data line goes to `ends`.
    fn extend(&mut self, ends: &mut oversize::Skipped, mut bytes: &[u8]) {
        if self.field.is_none() {
            let wanted = (DATA_FIELD - self.head.len()).min(bytes.len());
            self.head.extend_from_slice(&bytes[..wanted]);
            bytes = &bytes[wanted..];
            if self.head.len() < DATA_FIELD {
                return;
            }
            self.decide(ends);
        }
        if self.field == Some(true) {
            ends.take(bytes);
        }
    }

    /// Reads what the line's head says it is; its value so far goes to `ends`.
    fn decide(&mut self, ends: &mut oversize::Skipped) {
        let head = std::mem::take(&mut self.head);
        let value = head
            .strip_prefix(b"data:")
            .map(|value| value.strip_prefix(b" ").unwrap_or(value));
        self.field = Some(value.is_some());
        if let Some(value) = value {
            if std::mem::replace(&mut self.had_data, true) {
                ends.take(b"\n");
            }
            ends.take(value);
        }
    }

    /// The line ends: true when it was blank (the event's end).
    fn end(&mut self, ends: &mut oversize::Skipped) -> bool {
        if self.field.is_none() {
            if self.head.is_empty() {
                return true;
            }
            self.decide(ends);
        }
        self.field = None;
        false
    }
}

/// Server-sent events read from the bytes of an answer, each event bounded: the one parser of
/// the workspace (the legacy SSE transport's, and the agent's for streamed model answers).
pub struct SseParser(EventParser);

/// What [`SseParser`] hands out, in the order of the stream.
#[derive(Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SseItem {
    /// One event: its `event` field (`message` when absent) and its `data` lines joined.
    Event {
        /// The `event` field.
        kind: String,
        /// The data.
        data: String,
    },
    /// An event over the bound, skipped to its end.
    TooLarge,
}

impl SseParser {
    /// A parser whose events are at most `max_event` bytes (type and data).
    pub fn new(max_event: usize) -> Self {
        Self(EventParser::new(max_event))
    }

    /// Parses the next bytes of the stream.
    pub fn feed(&mut self, chunk: &[u8]) {
        self.0.feed(chunk);
    }

    /// The next whole event read, if any.
    pub fn next_event(&mut self) -> Option<SseItem> {
        self.0.next_event().map(|parsed| match parsed {
            Parsed::Event(SseEvent { kind, data }) => SseItem::Event { kind, data },
            Parsed::Skipped { .. } => SseItem::TooLarge,
        })
    }

    /// Whether the event being read is already over the bound (a reader that will not wait
    /// for its end stops here).
    pub fn over_bound(&self) -> bool {
        self.0.skipping.is_some()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use rmcp::model::NumberOrString;

    /// The events parsed, as (type, data); a skipped event as ("skipped", its verdict).
    fn events(parser: &mut EventParser) -> Vec<(String, String)> {
        std::iter::from_fn(|| parser.next_event())
            .map(|parsed| match parsed {
                Parsed::Event(e) => (e.kind, e.data),
                Parsed::Skipped { kind, ends } => {
                    (format!("skipped {kind}"), format!("{:?}", ends.verdict()))
                }
            })
            .collect()
    }

    fn pair(kind: &str, data: &str) -> (String, String) {
        (kind.to_string(), data.to_string())
    }

    #[test]
    fn parses_events_split_anywhere_with_any_line_ending() {
        let wire = "\u{feff}: comment\r\nevent: endpoint\r\ndata: /message?sessionId=1\r\n\r\n\
                    data: {\"a\":\ndata: 1}\n\nid: 7\rretry: 10\rdata:x\r\r";
        let whole = {
            let mut parser = EventParser::new(1024);
            parser.feed(wire.as_bytes());
            events(&mut parser)
        };
        assert_eq!(
            whole,
            vec![
                pair("endpoint", "/message?sessionId=1"),
                pair("message", "{\"a\":\n1}"),
                pair("message", "x"),
            ]
        );
        // Byte by byte (CR and LF in separate chunks) gives the same events.
        let mut parser = EventParser::new(1024);
        for byte in wire.as_bytes() {
            parser.feed(std::slice::from_ref(byte));
        }
        assert_eq!(events(&mut parser), whole);
    }

    #[test]
    fn an_event_without_data_is_not_dispatched_and_empty_data_is() {
        let mut parser = EventParser::new(1024);
        parser.feed(b"event: ping\n\ndata:\n\n");
        assert_eq!(events(&mut parser), vec![pair("message", "")]);
    }

    #[test]
    fn an_oversized_event_is_skipped_to_its_end_keeping_its_ends_and_the_next_is_read() {
        let big = format!(
            "data: {{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":\"{}\"}}\n\n",
            "x".repeat(10_000)
        );
        let wire = format!("data: small\n\n{big}event: message\ndata: after\n\n");
        for piece in [wire.len(), 100, 1] {
            let mut parser = EventParser::new(64);
            for chunk in wire.as_bytes().chunks(piece) {
                parser.feed(chunk);
            }
            let answers = format!(
                "{:?}",
                oversize::Verdict::Answers(NumberOrString::Number(7))
            );
            assert_eq!(
                events(&mut parser),
                vec![
                    pair("message", "small"),
                    pair("skipped ", &answers),
                    pair("message", "after"),
                ],
                "in pieces of {piece}"
            );
            assert!(parser.line.capacity() <= 1024, "{}", parser.line.capacity());
        }
        // Many short data lines add up too; the id at the end of the last is found.
        let mut parser = EventParser::new(16);
        parser.feed(b"event: message\ndata: {\"result\":\ndata: 12345678901234567890,\ndata: \"id\":\"k\"}\n\n");
        let answers = format!(
            "{:?}",
            oversize::Verdict::Answers(NumberOrString::String("k".into()))
        );
        assert_eq!(events(&mut parser), vec![pair("skipped message", &answers)]);
    }
}
