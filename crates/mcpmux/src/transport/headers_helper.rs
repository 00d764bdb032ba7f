//! `headersHelper`: a shell command whose stdout, a JSON object of strings, supplies request
//! headers (short-lived tokens from a vault or a CLI). It runs before every connection
//! attempt, as Claude Code runs it, with the server's name and URL in its environment; over
//! streamable HTTP it runs again when the server refuses what it printed (HTTP 401), so a token
//! that expires mid-session is replaced without losing the session.

use std::collections::{BTreeMap, HashMap};
use std::process::Stdio;
use std::time::Duration;

use reqwest::header::{HeaderName, HeaderValue};

use crate::error::Error;

/// A helper that takes longer than this (or than the startup timeout) is stopped.
const HELPER_TIMEOUT: Duration = Duration::from_secs(10);
/// Output beyond this is not a header object.
const MAX_OUTPUT: usize = 64 * 1024;

/// A server's helper for the life of a session: the headers it printed last, and a run again
/// when the server refuses them.
pub(crate) struct Helper {
    server: String,
    command: String,
    within: Duration,
    /// Held across a run, so a burst of refused requests runs the helper once.
    latest: tokio::sync::Mutex<HashMap<HeaderName, HeaderValue>>,
    /// Whether the server took `latest` once: only headers that worked can have gone stale; a
    /// helper whose fresh output is refused would print the same again.
    worked: std::sync::atomic::AtomicBool,
}

impl Helper {
    /// `printed`: what the helper printed for this connection.
    pub(crate) fn new(
        server: &str,
        command: &str,
        within: Duration,
        printed: &BTreeMap<String, String>,
    ) -> Result<Self, Error> {
        Ok(Self {
            server: server.to_owned(),
            command: command.to_owned(),
            within,
            latest: tokio::sync::Mutex::new(header_values(server, printed)?),
            worked: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// The server took the latest headers.
    pub(crate) fn worked(&self) {
        self.worked
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// The headers the helper printed last.
    pub(crate) async fn latest(&self) -> HashMap<HeaderName, HeaderValue> {
        self.latest.lock().await.clone()
    }

    /// After the server refused `sent`: the helper's headers printed since (by another
    /// request's renewal), or those it prints when run again now; `None` when they never
    /// worked, or it prints the same ones (the refusal stands), or it fails (logged).
    pub(crate) async fn renew(
        &self,
        sent: &HashMap<HeaderName, HeaderValue>,
    ) -> Option<HashMap<HeaderName, HeaderValue>> {
        let mut latest = self.latest.lock().await;
        if *latest != *sent {
            return Some(latest.clone());
        }
        if !self
            .worked
            .swap(false, std::sync::atomic::Ordering::Relaxed)
        {
            return None;
        }
        let printed = run(&self.server, &self.command, self.within)
            .await
            .and_then(|printed| header_values(&self.server, &printed));
        match printed {
            Ok(fresh) if fresh != *latest => {
                tracing::info!(server = %self.server, "the server refused the headersHelper's headers; it printed new ones");
                *latest = fresh.clone();
                Some(fresh)
            }
            Ok(_) => {
                tracing::warn!(server = %self.server, "the server refused the headersHelper's headers and it prints the same ones again");
                None
            }
            Err(e) => {
                tracing::warn!(server = %self.server, "the server refused the headersHelper's headers and running it again failed: {e}");
                None
            }
        }
    }
}

fn header_values(
    server: &str,
    printed: &BTreeMap<String, String>,
) -> Result<HashMap<HeaderName, HeaderValue>, Error> {
    Ok(super::header_map(server, printed, &[])?
        .into_iter()
        .filter_map(|(name, value)| name.map(|name| (name, value)))
        .collect())
}

/// Runs `command` through `sh -c` and reads the headers it prints.
pub(super) async fn run(
    server: &str,
    command: &str,
    within: Duration,
) -> Result<BTreeMap<String, String>, Error> {
    let failed = |message: String| Error::Connect {
        server: server.to_owned(),
        message: format!("headersHelper `{command}` {message}"),
        stderr_tail: Vec::new(),
    };
    let child = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(command)
        .env("MCPMUX_SERVER_NAME", server)
        .env("CLAUDE_CODE_MCP_SERVER_NAME", server)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| failed(format!("could not start: {e}")))?;
    let limit = within.min(HELPER_TIMEOUT);
    let output = tokio::time::timeout(limit, child.wait_with_output())
        .await
        .map_err(|_| failed(format!("did not finish within {} ms", limit.as_millis())))?
        .map_err(|e| failed(format!("failed: {e}")))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let last = stderr.lines().last().unwrap_or("").trim();
        return Err(failed(format!("exited with {}: {last}", output.status)));
    }
    if output.stdout.len() > MAX_OUTPUT {
        return Err(failed(format!(
            "printed {} bytes; it should print one JSON object of headers",
            output.stdout.len()
        )));
    }
    parse(&output.stdout).map_err(failed)
}

/// The headers in a helper's output: a JSON object whose values are strings.
fn parse(stdout: &[u8]) -> Result<BTreeMap<String, String>, String> {
    let value: serde_json::Value = serde_json::from_slice(stdout).map_err(|e| {
        format!("printed something that is not JSON ({e}); it should print an object like {{\"Authorization\": \"Bearer ...\"}}")
    })?;
    let serde_json::Value::Object(map) = value else {
        return Err(
            "printed JSON that is not an object; it should print {\"Header-Name\": \"value\"}"
                .into(),
        );
    };
    map.into_iter()
        .map(|(name, value)| match value {
            serde_json::Value::String(text) => Ok((name, text)),
            other => Err(format!(
                "printed a non-string value for header `{name}`: {other}"
            )),
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn reads_the_printed_headers_with_the_server_name() {
        let headers = run(
            "api",
            r#"printf '{"Authorization": "Bearer %s", "X-Server": "%s"}' tok "$MCPMUX_SERVER_NAME""#,
            Duration::from_secs(5),
        )
        .await
        .unwrap();
        assert_eq!(headers["Authorization"], "Bearer tok");
        assert_eq!(headers["X-Server"], "api");
    }

    #[tokio::test]
    async fn failures_say_what_the_helper_did() {
        let error = run("api", "echo nope >&2; exit 3", Duration::from_secs(5))
            .await
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("exited with") && error.contains("nope"),
            "{error}"
        );
        let error = run("api", "echo '[1]'", Duration::from_secs(5))
            .await
            .unwrap_err()
            .to_string();
        assert!(error.contains("not an object"), "{error}");
        let error = run("api", "sleep 5", Duration::from_millis(100))
            .await
            .unwrap_err()
            .to_string();
        assert!(error.contains("did not finish"), "{error}");
    }
}
