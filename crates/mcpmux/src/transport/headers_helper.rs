//! `headersHelper`: a shell command whose stdout, a JSON object of strings, supplies request
//! headers (short-lived tokens from a vault or a CLI). It runs before every connection
//! attempt, as Claude Code runs it, with the server's name and URL in its environment; over
//! streamable HTTP it runs again when the server refuses what it printed (HTTP 401), so a token
//! that expires mid-session is replaced without losing the session. The helper and whatever it
//! starts run in a process group that is killed when it is done, and its output is capped as
//! it is read.

use std::collections::{BTreeMap, HashMap};
use std::process::Stdio;
use std::time::Duration;

use reqwest::header::{HeaderName, HeaderValue};
use tokio::io::{AsyncRead, AsyncReadExt};

use crate::error::Error;
use crate::platform::process::{self, Group};

/// Output beyond this is not a header object.
const MAX_OUTPUT: usize = 64 * 1024;
/// How much of the helper's stderr is kept for the error message.
const MAX_STDERR: usize = 4 * 1024;

/// A server's helper for the life of a session: the headers it printed last, and a run again
/// when the server refuses them.
pub(crate) struct Helper {
    server: String,
    command: String,
    within: Duration,
    sandbox: Option<crate::config::Sandbox>,
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
        sandbox: Option<&crate::config::Sandbox>,
        printed: &BTreeMap<String, String>,
    ) -> Result<Self, Error> {
        Ok(Self {
            server: server.to_owned(),
            command: command.to_owned(),
            within,
            sandbox: sandbox.cloned(),
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
        let printed = run(
            &self.server,
            &self.command,
            self.within,
            self.sandbox.as_ref(),
        )
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

/// Runs `command` through the shell (`sh -c`; `cmd /C` on Windows) and reads the headers it prints.
///
/// The helper runs in a process group of its own, and the whole group is killed when the
/// helper exits, overruns its time or prints too much: nothing it started outlives it. Its
/// output is read up to the cap and no further, so a helper that prints without end costs
/// `MAX_OUTPUT` bytes, not memory until the timeout.
pub(super) async fn run(
    server: &str,
    command: &str,
    within: Duration,
    sandbox: Option<&crate::config::Sandbox>,
) -> Result<BTreeMap<String, String>, Error> {
    let prepared =
        super::sandbox::prepare(server, process::SHELL.0, sandbox, &BTreeMap::new(), None)?;
    let failed = |message: String| Error::Connect {
        server: server.to_owned(),
        message: format!("headersHelper `{command}` {message}"),
        stderr_tail: Vec::new(),
        source: None,
    };
    let (shell, run_flag) = process::SHELL;
    let mut cmd = tokio::process::Command::new(shell);
    process::isolate(&mut cmd);
    // Lives until the helper is reaped below.
    let _keep = prepared.map(|prepared| prepared.install(&mut cmd));
    let mut child = cmd
        .arg(run_flag)
        .arg(command)
        .env("MCPMUX_SERVER_NAME", server)
        .env("CLAUDE_CODE_MCP_SERVER_NAME", server)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| failed(format!("could not start: {e}")).caused_by(e))?;
    let group = Group::of(&child);
    let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
        return Err(failed("could not be given pipes".into()));
    };
    let limit = within.min(crate::defaults::HEADERS_HELPER_TIMEOUT);
    let outcome = tokio::time::timeout(limit, async {
        let exited = async {
            let status = child.wait().await.map_err(|e| format!("failed: {e}"));
            // Whatever it left running would hold the pipes open: the helper is done.
            group.kill();
            status
        };
        tokio::try_join!(read_capped(stdout), read_tail(stderr), exited)
    })
    .await;
    group.kill();
    // The helper itself too, should the group be gone; then it is reaped.
    let _ = child.start_kill();
    let _ = child.wait().await;
    let (stdout, stderr, status) = outcome
        .map_err(|_| failed(format!("did not finish within {} ms", limit.as_millis())))?
        .map_err(failed)?;
    if !status.success() {
        let stderr = String::from_utf8_lossy(&stderr);
        let last = stderr.lines().last().unwrap_or("").trim();
        return Err(failed(
            match super::sandbox::denial(sandbox, &[last.to_owned()]) {
                Some(denial) => format!("exited with {status}: {last}: {denial}"),
                None => format!("exited with {status}: {last}"),
            },
        ));
    }
    parse(&stdout).map_err(failed)
}

/// The helper's stdout, up to `MAX_OUTPUT`; more than that fails at once.
async fn read_capped(stdout: impl AsyncRead + Unpin) -> Result<Vec<u8>, String> {
    let mut printed = Vec::new();
    stdout
        .take(MAX_OUTPUT as u64 + 1)
        .read_to_end(&mut printed)
        .await
        .map_err(|e| format!("could not be read: {e}"))?;
    if printed.len() > MAX_OUTPUT {
        return Err(format!(
            "printed more than {} KiB; it should print one JSON object of headers",
            MAX_OUTPUT / 1024
        ));
    }
    Ok(printed)
}

/// The start of the helper's stderr (its error message), the rest read and dropped so a
/// chatty helper is not blocked on a full pipe.
async fn read_tail(mut stderr: impl AsyncRead + Unpin) -> Result<Vec<u8>, String> {
    let mut kept = Vec::new();
    (&mut stderr)
        .take(MAX_STDERR as u64)
        .read_to_end(&mut kept)
        .await
        .map_err(|e| format!("could not be read: {e}"))?;
    tokio::io::copy(&mut stderr, &mut tokio::io::sink())
        .await
        .map_err(|e| format!("could not be read: {e}"))?;
    Ok(kept)
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
            // The value is a secret, whatever its type: only its type is named.
            other => Err(format!(
                "printed a {} for header `{name}`; a header's value must be a string",
                json_kind(&other)
            )),
        })
        .collect()
}

/// What kind of JSON value `value` is, in words.
fn json_kind(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "boolean",
        serde_json::Value::Number(_) => "number",
        serde_json::Value::String(_) => "string",
        serde_json::Value::Array(_) => "array",
        serde_json::Value::Object(_) => "object",
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn a_value_that_is_not_a_string_is_named_by_its_type_not_shown() {
        let error = parse(br#"{"X-Api-Key": 123456789}"#).unwrap_err();
        assert!(
            error.contains("printed a number for header `X-Api-Key`"),
            "{error}"
        );
        assert!(!error.contains("123456789"), "{error}");
    }

    #[tokio::test]
    async fn reads_the_printed_headers_with_the_server_name() {
        let headers = run(
            "api",
            r#"printf '{"Authorization": "Bearer %s", "X-Server": "%s"}' tok "$MCPMUX_SERVER_NAME""#,
            Duration::from_secs(5),
            None,
        )
        .await
        .unwrap();
        assert_eq!(headers["Authorization"], "Bearer tok");
        assert_eq!(headers["X-Server"], "api");
    }

    #[tokio::test]
    async fn failures_say_what_the_helper_did() {
        let error = run("api", "echo nope >&2; exit 3", Duration::from_secs(5), None)
            .await
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("exited with") && error.contains("nope"),
            "{error}"
        );
        let error = run("api", "echo '[1]'", Duration::from_secs(5), None)
            .await
            .unwrap_err()
            .to_string();
        assert!(error.contains("not an object"), "{error}");
        let error = run("api", "sleep 5", Duration::from_millis(100), None)
            .await
            .unwrap_err()
            .to_string();
        assert!(error.contains("did not finish"), "{error}");
    }

    #[tokio::test]
    async fn a_helper_that_hangs_is_killed_with_what_it_started() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("grandchild.pid");
        let command = format!("sleep 60 & echo $! > {}; sleep 60", pid_file.display());
        let started = std::time::Instant::now();
        let error = run("api", &command, Duration::from_millis(300), None)
            .await
            .unwrap_err()
            .to_string();
        assert!(error.contains("did not finish"), "{error}");
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
        let grandchild: i32 = std::fs::read_to_string(&pid_file)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        // Killed at once; reaped by whoever inherited it, which may take a moment.
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while alive(grandchild) && std::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(
            !alive(grandchild),
            "the helper's child {grandchild} outlived it"
        );
    }

    /// Whether `pid` is a process that has not exited (a zombie has).
    fn alive(pid: i32) -> bool {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Ok(stat) => !stat
                .rsplit(')')
                .next()
                .is_some_and(|rest| rest.trim_start().starts_with('Z')),
            Err(_) => false,
        }
    }

    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn a_sandboxed_helper_cannot_read_outside_its_grants_and_is_told_what_to_grant() {
        use crate::config::{Profile, Sandbox};
        let outside = tempfile::tempdir().unwrap();
        let secret = outside.path().join("vault-token");
        std::fs::write(&secret, "s3cr3t").unwrap();
        let command = format!(
            r#"printf '{{"Authorization": "Bearer %s"}}' "$(cat {})""#,
            secret.display()
        );
        let open = run("api", &command, Duration::from_secs(10), None)
            .await
            .unwrap();
        assert_eq!(
            open["Authorization"], "Bearer s3cr3t",
            "unsandboxed it reads"
        );

        let boxed = Sandbox::profile(Profile::Project);
        // `cat` fails, and `set -e` makes the helper fail with it.
        let command = format!("set -e; token=$(cat {}); echo {{}}", secret.display());
        let error = run("api", &command, Duration::from_secs(10), Some(&boxed))
            .await
            .unwrap_err()
            .to_string();
        assert!(error.contains("Permission denied"), "{error}");
        assert!(
            error.contains(&format!("fs denied: {} — add it", secret.display())),
            "{error}"
        );
        assert!(!error.contains("s3cr3t"), "{error}");

        // Granted, it reads.
        let granted = boxed.with_read([outside.path().to_string_lossy().to_string()]);
        let command = format!(
            r#"printf '{{"Authorization": "Bearer %s"}}' "$(cat {})""#,
            secret.display()
        );
        let headers = run("api", &command, Duration::from_secs(10), Some(&granted))
            .await
            .unwrap();
        assert_eq!(headers["Authorization"], "Bearer s3cr3t");
    }

    #[tokio::test]
    async fn a_helper_that_prints_without_end_is_cut_at_the_cap() {
        let started = std::time::Instant::now();
        let error = run("api", "yes", Duration::from_secs(10), None)
            .await
            .unwrap_err()
            .to_string();
        assert!(error.contains("printed more than 64 KiB"), "{error}");
        // Cut as soon as the cap is passed, not at the timeout.
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
    }
}
