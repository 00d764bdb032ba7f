//! The conversation as a value: messages of text, tool calls and tool results in one neutral
//! shape that each provider renders into its own wire format, the usage spent, and JSONL to
//! keep it on disk and continue it later. Knows nothing of HTTP, of the hub or of the loop.

use std::io::{BufRead, Write};

use serde::{Deserialize, Serialize};

/// Who said a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The person, or the harness on their behalf; also carries tool results back.
    User,
    /// The model.
    Assistant,
}

/// One piece of a message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Block {
    /// Text.
    Text {
        /// The words.
        text: String,
    },
    /// The model asks for a tool to be called.
    ToolCall {
        /// The provider's id of the call (`call_…`, `toolu_…`), answered by a [`Block::ToolResult`].
        id: String,
        /// The tool's name as the provider saw it (its exported name).
        name: String,
        /// The arguments exactly as the model wrote them: JSON text, possibly malformed.
        arguments: String,
    },
    /// What a tool call gave back.
    ToolResult {
        /// The id of the call this answers.
        id: String,
        /// The result as the model reads it (tool output wrapped as untrusted content).
        content: String,
        /// The call failed: refused, invalid, unknown, or the tool reported an error.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
        /// Tools a `search_tools` call made callable from the next turn on (exposed names).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        discovered: Vec<String>,
    },
}

/// One message of the conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Who said it.
    pub role: Role,
    /// What was said, in order.
    pub content: Vec<Block>,
}

impl Message {
    /// A user message of plain text.
    pub fn user(text: impl Into<String>) -> Self {
        Message {
            role: Role::User,
            content: vec![Block::Text { text: text.into() }],
        }
    }

    /// An assistant message of plain text.
    pub fn assistant(text: impl Into<String>) -> Self {
        Message {
            role: Role::Assistant,
            content: vec![Block::Text { text: text.into() }],
        }
    }

    /// The text blocks joined.
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(|b| match b {
                Block::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }

    /// The tool calls this message asks for.
    pub fn tool_calls(&self) -> impl Iterator<Item = (&str, &str, &str)> {
        self.content.iter().filter_map(|b| match b {
            Block::ToolCall {
                id,
                name,
                arguments,
            } => Some((id.as_str(), name.as_str(), arguments.as_str())),
            _ => None,
        })
    }
}

/// Tokens a provider reports having read and written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Tokens of the request (prompt, tools, history).
    pub input_tokens: u64,
    /// Tokens the model wrote.
    pub output_tokens: u64,
}

impl Usage {
    /// Both together.
    pub fn total(&self) -> u64 {
        self.input_tokens.saturating_add(self.output_tokens)
    }

    /// Adds `other` to this.
    pub fn add(&mut self, other: Usage) {
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
    }
}

/// A conversation a harness keeps: pass it to the next run to continue it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Transcript {
    /// The messages, oldest first.
    pub messages: Vec<Message>,
    /// Tokens spent on it so far, over every run.
    #[serde(default)]
    pub usage: Usage,
}

/// One JSONL line: a message, or the usage line that closes a written transcript.
#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum Line {
    Message(Message),
    Usage { usage: Usage },
}

/// A transcript that cannot be read back.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TranscriptError {
    /// Reading or writing failed.
    #[error("transcript: {0}")]
    Io(#[from] std::io::Error),
    /// A line is not a message.
    #[error("transcript line {line}: {message}")]
    Line {
        /// 1-based line number.
        line: usize,
        /// What is wrong with it.
        message: String,
    },
}

/// The longest JSONL line read back (a message holding a whole cut tool result fits easily).
const MAX_LINE_BYTES: u64 = 64 << 20;

impl Transcript {
    /// An empty conversation.
    pub fn new() -> Self {
        Self::default()
    }

    /// The last assistant message's text, if the conversation ends with one.
    pub fn last_answer(&self) -> Option<String> {
        self.messages
            .last()
            .filter(|m| m.role == Role::Assistant)
            .map(Message::text)
    }

    /// Tools found by `search_tools` calls in this conversation: callable from now on.
    pub fn discovered(&self) -> impl Iterator<Item = &str> {
        self.messages
            .iter()
            .flat_map(|m| &m.content)
            .flat_map(|b| match b {
                Block::ToolResult { discovered, .. } => discovered.as_slice(),
                _ => &[],
            })
            .map(String::as_str)
    }

    /// Writes the transcript as JSON lines: one message a line, then `{"usage": …}`.
    pub fn write_jsonl(&self, mut out: impl Write) -> Result<(), TranscriptError> {
        for message in &self.messages {
            serde_json::to_writer(&mut out, &Line::Message(message.clone()))
                .map_err(std::io::Error::other)?;
            out.write_all(b"\n")?;
        }
        serde_json::to_writer(&mut out, &Line::Usage { usage: self.usage })
            .map_err(std::io::Error::other)?;
        out.write_all(b"\n")?;
        out.flush()?;
        Ok(())
    }

    /// Reads what [`Transcript::write_jsonl`] wrote; blank lines are skipped, a line over
    /// 64 MiB or one that is not a message is an error naming it.
    pub fn read_jsonl(mut input: impl BufRead) -> Result<Self, TranscriptError> {
        let mut transcript = Transcript::new();
        let mut number = 0;
        loop {
            let mut line = Vec::new();
            let read =
                std::io::Read::take(&mut input, MAX_LINE_BYTES + 1).read_until(b'\n', &mut line)?;
            if read == 0 {
                break;
            }
            number += 1;
            if line.len() as u64 > MAX_LINE_BYTES {
                return Err(TranscriptError::Line {
                    line: number,
                    message: "longer than 64 MiB".into(),
                });
            }
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match serde_json::from_slice::<Line>(&line) {
                Ok(Line::Message(message)) => transcript.messages.push(message),
                Ok(Line::Usage { usage }) => transcript.usage = usage,
                Err(e) => {
                    return Err(TranscriptError::Line {
                        line: number,
                        message: format!("not a message: {e}"),
                    });
                }
            }
        }
        Ok(transcript)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn sample() -> Transcript {
        Transcript {
            messages: vec![
                Message::user("add 2 and 3"),
                Message {
                    role: Role::Assistant,
                    content: vec![
                        Block::Text {
                            text: "Adding.".into(),
                        },
                        Block::ToolCall {
                            id: "call_1".into(),
                            name: "mcp__demo__add".into(),
                            arguments: "{\"a\":2,\"b\":3".into(),
                        },
                    ],
                },
                Message {
                    role: Role::User,
                    content: vec![Block::ToolResult {
                        id: "call_1".into(),
                        content: "5".into(),
                        is_error: false,
                        discovered: vec!["mcp__x__y".into()],
                    }],
                },
                Message::assistant("It is 5."),
            ],
            usage: Usage {
                input_tokens: 10,
                output_tokens: 4,
            },
        }
    }

    #[test]
    fn a_transcript_written_as_jsonl_reads_back_the_same_malformed_arguments_included() {
        let transcript = sample();
        let mut bytes = Vec::new();
        transcript.write_jsonl(&mut bytes).unwrap();
        let text = String::from_utf8(bytes.clone()).unwrap();
        assert_eq!(text.lines().count(), 5, "{text}");
        let back = Transcript::read_jsonl(bytes.as_slice()).unwrap();
        assert_eq!(back, transcript);
        assert_eq!(back.last_answer().as_deref(), Some("It is 5."));
        assert_eq!(back.discovered().collect::<Vec<_>>(), ["mcp__x__y"]);
    }

    #[test]
    fn a_line_that_is_not_a_message_is_named_by_its_number() {
        let input = b"{\"role\":\"user\",\"content\":[]}\n\n{\"role\":\"robot\"}\n";
        let err = Transcript::read_jsonl(&input[..]).unwrap_err();
        assert!(
            matches!(err, TranscriptError::Line { line: 3, .. }),
            "{err}"
        );
    }
}
