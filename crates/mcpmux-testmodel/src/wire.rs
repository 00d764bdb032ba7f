//! Which provider's wire format a model speaks ([`Wire`]), and one request as the endpoint
//! received it ([`Received`]): what the checks and the HTTP side share, below the public face.

/// Which provider's wire format a `ScriptedModel` speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Wire {
    /// OpenAI Chat Completions: `POST {base}/chat/completions` with `base` ending in `/v1`.
    OpenAi,
    /// Anthropic Messages: `POST {base}/v1/messages`.
    Anthropic,
}

/// One request as the endpoint received it.
#[derive(Clone, Debug, PartialEq)]
pub struct Received {
    /// The request path, e.g. `/v1/chat/completions`.
    pub path: String,
    /// Every header, names lower-case, in the order received.
    pub headers: Vec<(String, String)>,
    /// The JSON body (a string holding the raw text when it was not JSON, `null` when unread).
    pub body: serde_json::Value,
}

impl Received {
    /// The first value of a header, by case-insensitive name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    /// The tool definitions of this request (`body.tools`), empty when there are none.
    pub fn tools(&self) -> Vec<serde_json::Value> {
        self.body
            .get("tools")
            .and_then(serde_json::Value::as_array)
            .cloned()
            .unwrap_or_default()
    }
}
