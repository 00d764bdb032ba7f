//! Resources and prompts as a harness sees them: the records a server lists, the contents it
//! reads, a prompt's messages, and one page or a whole listing over servers. Plain data that
//! knows nothing of how it is fetched (`connection::requests` asks one server, the hub fans
//! out over every server).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::Error;

/// One resource a server offers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Resource {
    /// The server that offers it.
    #[serde(default)]
    pub server: String,
    /// Its URI: what [`Hub::read_resource`](crate::Hub::read_resource) takes.
    pub uri: String,
    /// Its name.
    pub name: String,
    /// A human title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its MIME type, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Its size in bytes, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
}

/// A family of resources a server can read, by URI template (RFC 6570).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ResourceTemplate {
    /// The server that offers it.
    #[serde(default)]
    pub server: String,
    /// The URI template.
    pub uri_template: String,
    /// Its name.
    pub name: String,
    /// A human title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The MIME type of what it gives, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
}

impl ResourceTemplate {
    /// Whether `uri` is one of this template's resources: its literal parts in order, each
    /// `{expression}` standing for at least one character (no `/` for a plain `{var}`).
    pub fn matches(&self, uri: &str) -> bool {
        template_matches(&self.uri_template, uri)
    }
}

/// Longest template or URI matched: a hostile server's template cannot make matching slow
/// (it takes pieces × length steps).
const MAX_MATCH_LEN: usize = 4096;

/// One piece of a URI template.
enum Piece<'a> {
    Literal(&'a str),
    /// An expression: `plain` (`{var}`) stays within one path segment; `{+var}`, `{/var}`,
    /// `{#var}` … may not.
    Expression {
        plain: bool,
    },
}

/// [`ResourceTemplate::matches`], over the template's text.
fn template_matches(template: &str, uri: &str) -> bool {
    if template.len() > MAX_MATCH_LEN || uri.len() > MAX_MATCH_LEN {
        return false;
    }
    let mut pieces = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}').map(|i| open + i) else {
            return false;
        };
        if open > 0 {
            pieces.push(Piece::Literal(&rest[..open]));
        }
        let plain = rest[open + 1..close]
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
        pieces.push(Piece::Expression { plain });
        rest = &rest[close + 1..];
    }
    if !rest.is_empty() {
        pieces.push(Piece::Literal(rest));
    }
    // From the last piece back: `next[p]` says whether the pieces after this one match
    // `uri[p..]`.
    let bytes = uri.as_bytes();
    let n = bytes.len();
    let mut next = vec![false; n + 1];
    next[n] = true;
    for piece in pieces.iter().rev() {
        let mut here = vec![false; n + 1];
        match piece {
            Piece::Literal(text) => {
                for (p, slot) in here.iter_mut().enumerate() {
                    *slot = bytes[p..].starts_with(text.as_bytes()) && next[p + text.len()];
                }
            }
            Piece::Expression { plain } => {
                // At least one character, ending on a character boundary.
                for p in (0..n).rev() {
                    let stops = *plain && matches!(bytes[p], b'/' | b'?' | b'#');
                    here[p] =
                        !stops && ((uri.is_char_boundary(p + 1) && next[p + 1]) || here[p + 1]);
                }
            }
        }
        next = here;
    }
    next[0]
}

/// What reading a resource gave: text or base64 bytes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum ResourceContents {
    /// Text.
    #[serde(rename_all = "camelCase")]
    Text {
        /// The URI of this part.
        uri: String,
        /// Its MIME type.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        /// The text.
        text: String,
    },
    /// Binary data, base64-encoded.
    #[serde(rename_all = "camelCase")]
    Blob {
        /// The URI of this part.
        uri: String,
        /// Its MIME type.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        /// The bytes, base64.
        blob: String,
    },
}

/// A prompt template a server offers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Prompt {
    /// The server that offers it.
    #[serde(default)]
    pub server: String,
    /// Its name: what [`Hub::get_prompt`](crate::Hub::get_prompt) takes.
    pub name: String,
    /// The name it is served under beside the tools, `mcp__SERVER__PROMPT`, fitted and kept
    /// apart as tool names are (`Hub::prompts` sets it; a server cannot): what
    /// [`Hub::prompt_named`](crate::Hub::prompt_named) takes.
    #[serde(default, skip_deserializing, skip_serializing_if = "String::is_empty")]
    pub exposed_name: String,
    /// A human title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The arguments it takes.
    #[serde(default)]
    pub arguments: Vec<PromptArgument>,
}

/// One argument of a prompt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PromptArgument {
    /// Its name.
    pub name: String,
    /// What it means.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether it must be given.
    #[serde(default)]
    pub required: bool,
}

/// A prompt filled in with its arguments: the messages to hand a model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PromptMessages {
    /// What the prompt is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The messages, in order.
    pub messages: Vec<PromptMessage>,
}

/// One message of a prompt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PromptMessage {
    /// `user` or `assistant`.
    pub role: String,
    /// One MCP content block (text, image, audio, resource link or embedded resource).
    pub content: Value,
}

/// What a completion is asked for: an argument of a prompt, or of a resource template.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type")]
#[non_exhaustive]
pub enum CompletionRef {
    /// An argument of the prompt the server names `name`.
    #[serde(rename = "ref/prompt")]
    Prompt {
        /// The server's own name of the prompt.
        name: String,
    },
    /// A variable of the resource template `uri` (the template as the server lists it).
    #[serde(rename = "ref/resource")]
    Resource {
        /// The URI template.
        uri: String,
    },
}

/// A server's suggestions for an argument's value (`completion/complete`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Completion {
    /// Suggested values, best first (MCP allows at most 100).
    pub values: Vec<String>,
    /// How many values there are in all, if the server says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<u32>,
    /// Whether there are more values than these.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub has_more: Option<bool>,
}

/// One page of a paginated listing.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Page<T> {
    /// The items of this page.
    pub items: Vec<T>,
    /// Where the next page starts; `None` on the last page.
    pub next_cursor: Option<String>,
}

/// A listing over every server: what they gave, and why some could not answer.
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct Listing<T> {
    /// Items of every server that answered, in server order.
    pub items: Vec<T>,
    /// One error per server that offers the capability but failed to list.
    pub errors: Vec<Error>,
}

/// Gives a listed item the name of its server.
pub(crate) trait Named {
    fn set_server(&mut self, server: &str);
}

impl Named for Resource {
    fn set_server(&mut self, server: &str) {
        self.server = server.to_string();
    }
}

impl Named for ResourceTemplate {
    fn set_server(&mut self, server: &str) {
        self.server = server.to_string();
    }
}

impl Named for Prompt {
    fn set_server(&mut self, server: &str) {
        self.server = server.to_string();
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use serde_json::json;

    #[test]
    fn a_template_matches_the_uris_it_makes() {
        let template = |t: &str| ResourceTemplate {
            server: String::new(),
            uri_template: t.into(),
            name: "n".into(),
            title: None,
            description: None,
            mime_type: None,
        };
        let text = template("demo://resource/dynamic/text/{resourceId}");
        assert!(text.matches("demo://resource/dynamic/text/1"));
        assert!(!text.matches("demo://resource/dynamic/text/"));
        assert!(!text.matches("demo://resource/dynamic/text/1/2"));
        assert!(!text.matches("demo://resource/dynamic/blob/1"));
        let two = template("gh://{owner}/{repo}/issues");
        assert!(two.matches("gh://me/mine/issues"));
        assert!(!two.matches("gh://me/issues"));
        assert!(template("file:///{+path}").matches("file:///a/b/c"));
        assert!(template("a://x").matches("a://x"));
        assert!(!template("a://{x").matches("a://x"));
        // Many expressions and a URI that almost matches: answered at once, not after
        // trying every split.
        let many = template(&"{+a}x".repeat(16));
        let started = std::time::Instant::now();
        assert!(!many.matches(&format!("{}y", "x".repeat(1000))));
        assert!(started.elapsed() < std::time::Duration::from_secs(2));
    }

    #[test]
    fn contents_are_text_or_blob() {
        let contents: Vec<ResourceContents> = serde_json::from_value(json!([
            {"uri": "a://1", "mimeType": "text/plain", "text": "hi"},
            {"uri": "a://2", "blob": "AAE="}
        ]))
        .unwrap();
        assert!(matches!(&contents[0], ResourceContents::Text { text, .. } if text == "hi"));
        assert!(
            matches!(&contents[1], ResourceContents::Blob { blob, mime_type: None, .. } if blob == "AAE=")
        );
    }
}
