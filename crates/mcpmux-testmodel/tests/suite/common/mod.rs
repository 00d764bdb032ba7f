//! What the integration tests share: plain reqwest posts and a server-sent events reader.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use serde_json::Value;

/// One server-sent event: its `event:` name (if any) and its `data:` text.
#[derive(Debug, Clone)]
pub struct Event {
    pub name: Option<String>,
    pub data: String,
}

impl Event {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.data).unwrap_or_else(|e| panic!("{e}: {}", self.data))
    }
}

/// Splits an event-stream body into events.
pub fn events(text: &str) -> Vec<Event> {
    text.split("\n\n")
        .filter(|frame| !frame.trim().is_empty())
        .map(|frame| {
            let mut name = None;
            let mut data = Vec::new();
            for line in frame.lines() {
                if let Some(rest) = line.strip_prefix("event: ") {
                    name = Some(rest.to_owned());
                } else if let Some(rest) = line.strip_prefix("data: ") {
                    data.push(rest.to_owned());
                } else {
                    panic!("unexpected line in an event stream: {line:?}");
                }
            }
            Event {
                name,
                data: data.join("\n"),
            }
        })
        .collect()
}

/// POSTs an OpenAI request to `{base}/chat/completions`.
pub async fn post_openai(base: &str, body: &Value) -> reqwest::Response {
    reqwest::Client::new()
        .post(format!("{base}/chat/completions"))
        .bearer_auth("sk-test")
        .json(body)
        .send()
        .await
        .unwrap()
}

/// POSTs an Anthropic request to `{base}/v1/messages` with the documented headers.
pub async fn post_anthropic(base: &str, body: &Value) -> reqwest::Response {
    reqwest::Client::new()
        .post(format!("{base}/v1/messages"))
        .header("x-api-key", "sk-ant-test")
        .header("anthropic-version", "2023-06-01")
        .json(body)
        .send()
        .await
        .unwrap()
}
