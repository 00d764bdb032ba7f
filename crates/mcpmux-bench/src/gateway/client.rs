//! The downstream client of the gateway bench: one handshake-era streamable-HTTP session per
//! rmcp client (the same code against the gateway and against the test server directly), an
//! echo call bounded by a deadline, and the judgement of what came back: the answer to exactly
//! that call, another call's answer (misrouted), an error, or nothing (lost). And an idle
//! legacy SSE session (`/sse`), opened with plain HTTP.

use std::time::{Duration, Instant};

use anyhow::Context;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{RunningService, ServiceError};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{RoleClient, ServiceExt};
use serde_json::json;

/// One downstream session.
pub type Session = RunningService<RoleClient, ()>;

/// Opens a session (the `initialize` handshake) at `url` over the shared, pooled `http`.
pub async fn connect(http: &reqwest::Client, url: &str) -> anyhow::Result<Session> {
    let mut config = StreamableHttpClientTransportConfig::with_uri(url);
    config.max_concurrent_requests = 64;
    let transport = StreamableHttpClientTransport::with_client(http.clone(), config);
    Ok(().serve(transport).await?)
}

/// An idle legacy SSE session: its stream, held open and not read past the handshake.
pub struct LegacySession {
    _stream: reqwest::Response,
}

/// Opens a legacy SSE session at `base`: `GET /sse`, then the handshake over the `POST`
/// endpoint its first event names, the answer read from the stream.
pub async fn connect_legacy(http: &reqwest::Client, base: &str) -> anyhow::Result<LegacySession> {
    let mut stream = http
        .get(format!("{base}/sse"))
        .header("accept", "text/event-stream")
        .send()
        .await?
        .error_for_status()?;
    let mut events = String::new();
    let endpoint = loop {
        if let Some(end) = events.find("\n\n") {
            let event: String = events.drain(..end + 2).collect();
            if let Some(data) = event.lines().find_map(|l| l.strip_prefix("data:")) {
                break data.trim().to_string();
            }
            continue;
        }
        let chunk = stream
            .chunk()
            .await?
            .context("the SSE stream ended before `endpoint`")?;
        events.push_str(&String::from_utf8_lossy(&chunk));
    };
    let endpoint = format!("{base}{endpoint}");
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2024-11-05", "capabilities": {},
        "clientInfo": {"name": "mcpmux-bench", "version": "1"}}});
    http.post(&endpoint)
        .json(&initialize)
        .send()
        .await?
        .error_for_status()?;
    while !events.contains("\"id\":1") {
        let chunk = stream
            .chunk()
            .await?
            .context("the SSE stream ended before the answer")?;
        events.push_str(&String::from_utf8_lossy(&chunk));
    }
    http.post(&endpoint)
        .json(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .send()
        .await?
        .error_for_status()?;
    Ok(LegacySession { _stream: stream })
}

/// What one call came back with.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub enum Outcome {
    /// The answer to exactly this call.
    Answered,
    /// The text of some other call: an answer delivered to the wrong caller.
    Misrouted,
    /// A JSON-RPC error, or a result marked `isError`.
    Errored,
    /// No answer within the deadline, or the session broke before it came.
    Lost,
}

/// What the client got back, before judging.
#[derive(Debug)]
pub enum Reply {
    /// A result: its first text block and whether it is marked `isError`.
    Result { text: String, is_error: bool },
    /// A JSON-RPC error answered the call.
    Error,
    /// Nothing: the deadline passed or the transport closed.
    Nothing,
}

/// Judges `reply` to a call that sent `token`.
pub fn judge(token: &str, reply: &Reply) -> Outcome {
    match reply {
        Reply::Nothing => Outcome::Lost,
        Reply::Error | Reply::Result { is_error: true, .. } => Outcome::Errored,
        Reply::Result { text, .. } if text == token => Outcome::Answered,
        Reply::Result { .. } => Outcome::Misrouted,
    }
}

/// Calls `tool` (an echo) with `token` on `session`, within `deadline`; the reply and how long
/// it took.
pub async fn echo(
    session: &Session,
    tool: &str,
    token: &str,
    deadline: Duration,
) -> (Reply, Duration) {
    let mut params = CallToolRequestParams::new(tool.to_string());
    params.arguments = json!({ "text": token }).as_object().cloned();
    let started = Instant::now();
    let called = tokio::time::timeout(deadline, session.call_tool(params)).await;
    let took = started.elapsed();
    let reply = match called {
        Err(_elapsed) => Reply::Nothing,
        Ok(Err(ServiceError::McpError(_))) => Reply::Error,
        Ok(Err(_transport)) => Reply::Nothing,
        Ok(Ok(result)) => {
            let value = serde_json::to_value(&result).unwrap_or_default();
            Reply::Result {
                text: value["content"][0]["text"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                is_error: value["isError"].as_bool().unwrap_or(false),
            }
        }
    };
    (reply, took)
}

/// Calls `tool` with `token` and fails unless the echo came back; how long it took.
pub async fn echo_checked(
    session: &Session,
    tool: &str,
    token: &str,
    deadline: Duration,
) -> anyhow::Result<Duration> {
    let (reply, took) = echo(session, tool, token, deadline).await;
    match judge(token, &reply) {
        Outcome::Answered => Ok(took),
        outcome => anyhow::bail!("{tool} with {token:?}: {outcome:?} ({reply:?})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(text: &str) -> Reply {
        Reply::Result {
            text: text.into(),
            is_error: false,
        }
    }

    #[test]
    fn only_the_echo_of_this_very_call_counts_as_answered() {
        assert_eq!(judge("s1c7", &text("s1c7")), Outcome::Answered);
        assert_eq!(judge("s1c7", &text("s2c7")), Outcome::Misrouted);
        assert_eq!(judge("s1c7", &text("")), Outcome::Misrouted);
        assert_eq!(
            judge(
                "s1c7",
                &Reply::Result {
                    text: "s1c7".into(),
                    is_error: true
                }
            ),
            Outcome::Errored
        );
        assert_eq!(judge("s1c7", &Reply::Error), Outcome::Errored);
        assert_eq!(judge("s1c7", &Reply::Nothing), Outcome::Lost);
    }
}
