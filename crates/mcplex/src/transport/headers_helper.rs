//! `headersHelper`: a shell command whose stdout, a JSON object of strings, supplies request
//! headers (short-lived tokens from a vault or a CLI). It runs before every connection
//! attempt, as Claude Code runs it, with the server's name and URL in its environment.

use std::collections::BTreeMap;
use std::process::Stdio;
use std::time::Duration;

use crate::error::Error;

/// A helper that takes longer than this (or than the startup timeout) is stopped.
const HELPER_TIMEOUT: Duration = Duration::from_secs(10);
/// Output beyond this is not a header object.
const MAX_OUTPUT: usize = 64 * 1024;

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
        .env("MCPLEX_SERVER_NAME", server)
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
            r#"printf '{"Authorization": "Bearer %s", "X-Server": "%s"}' tok "$MCPLEX_SERVER_NAME""#,
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
