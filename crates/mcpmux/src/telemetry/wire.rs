//! The wire log: every JSON-RPC message to and from each server (and, through the gateway,
//! each client), one JSON object a line — when, which server, which way, the message — with
//! what must never be written redacted: values under keys that hold credentials
//! (`authorization`, `token`, `password`, …), the secrets the harness names (header values, a
//! `${secret:…}` value), and URLs' queries and userinfo (`redact`). Bounded: past its size the
//! file is rotated once (`FILE.1`), the older one dropped. Knows nothing of transports: they
//! hand it each message's bytes.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::Value;

/// Which way a message went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// From mcpmux to the server (or from the gateway to its client).
    Send,
    /// From the server to mcpmux (or from a client to the gateway).
    Receive,
}

impl Direction {
    fn as_str(self) -> &'static str {
        match self {
            Direction::Send => "send",
            Direction::Receive => "recv",
        }
    }
}

/// The size a wire log grows to before it is rotated, unless told otherwise (64 MiB).
pub const DEFAULT_MAX_BYTES: u64 = crate::defaults::WIRE_LOG_MAX_BYTES;

/// What stands in for a redacted value.
pub const REDACTED: &str = "[redacted]";

/// Keys (lowercased, `-` and `_` ignored) whose string value is a credential wherever it is.
const SECRET_KEYS: [&str; 12] = [
    "authorization",
    "proxyauthorization",
    "token",
    "accesstoken",
    "refreshtoken",
    "idtoken",
    "password",
    "clientsecret",
    "secret",
    "apikey",
    "xapikey",
    "cookie",
];

/// The shortest configured value treated as a secret: shorter ones (`1`, `on`) would blank
/// out ordinary text everywhere.
const MIN_SECRET_LEN: usize = 6;

/// The values of `servers` (and of the secrets file `secrets_file`) a wire log must never
/// show: every header value of a remote server, every environment value of a stdio server
/// whose name says it holds a credential (`*TOKEN*`, `*KEY*`, `*SECRET*`, `*PASSWORD*`,
/// `*AUTH*`, `*CREDENTIAL*`), and every value of the secrets file (what `${secret:…}` reads).
pub fn config_secrets(
    servers: &[crate::config::ServerSpec],
    secrets_file: Option<&Path>,
) -> Vec<String> {
    use crate::config::TransportSpec;
    let mut out = Vec::new();
    for spec in servers {
        match &spec.transport {
            TransportSpec::Http { headers, .. }
            | TransportSpec::Sse { headers, .. }
            | TransportSpec::Ws { headers, .. } => {
                for value in headers.values() {
                    out.push(value.clone());
                    // `Bearer <token>`: the token alone too, wherever it is echoed.
                    if let Some((_, token)) = value.split_once(' ') {
                        out.push(token.trim().to_string());
                    }
                }
            }
            TransportSpec::Stdio { env, .. } => {
                let named = ["TOKEN", "KEY", "SECRET", "PASSWORD", "AUTH", "CREDENTIAL"];
                for (name, value) in env {
                    let name = name.to_ascii_uppercase();
                    if named.iter().any(|n| name.contains(n)) {
                        out.push(value.clone());
                    }
                }
            }
            TransportSpec::InProcess(_) => {}
        }
    }
    if let Some(file) = secrets_file
        && let Ok(secrets) = crate::config::secrets::read_secrets(file)
    {
        out.extend(secrets.values().map(|v| v.expose().to_string()));
    }
    out
}

/// A wire log, shared by every transport of a hub (clone it freely).
#[derive(Clone)]
pub struct WireLog {
    inner: Arc<Mutex<Writer>>,
    secrets: Arc<Vec<String>>,
}

impl std::fmt::Debug for WireLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let path = crate::sync::lock(&self.inner).path.clone();
        f.debug_struct("WireLog").field("path", &path).finish()
    }
}

struct Writer {
    path: PathBuf,
    file: Option<File>,
    written: u64,
    max_bytes: u64,
}

impl WireLog {
    /// A log appended to `path` (created private to the user), rotated past `max_bytes`.
    pub fn open(path: impl AsRef<Path>, max_bytes: u64) -> std::io::Result<WireLog> {
        let path = path.as_ref().to_path_buf();
        let file = open_private(&path)?;
        let written = file.metadata().map(|m| m.len()).unwrap_or(0);
        Ok(WireLog {
            inner: Arc::new(Mutex::new(Writer {
                path,
                file: Some(file),
                written,
                max_bytes: max_bytes.max(4096),
            })),
            secrets: Arc::new(Vec::new()),
        })
    }

    /// This log, also redacting each of `secrets` wherever it appears (values shorter than
    /// six bytes are ignored).
    pub fn with_secrets(mut self, secrets: impl IntoIterator<Item = String>) -> WireLog {
        let mut all: Vec<String> = self.secrets.iter().cloned().collect();
        all.extend(secrets.into_iter().filter(|s| s.len() >= MIN_SECRET_LEN));
        all.sort();
        all.dedup();
        // Longest first: a secret containing another is replaced whole.
        all.sort_by_key(|s| std::cmp::Reverse(s.len()));
        self.secrets = Arc::new(all);
        self
    }

    /// Writes one message `bytes` (a JSON-RPC message, or a line that is not one) that went
    /// `direction` between mcpmux and `peer`.
    pub fn record(&self, peer: &str, direction: Direction, bytes: &[u8]) {
        let bytes = trim_line(bytes);
        if bytes.is_empty() {
            return;
        }
        let message = match serde_json::from_slice::<Value>(bytes) {
            Ok(mut value) => {
                redact_value(&mut value, &self.secrets);
                value
            }
            Err(_) => {
                let text = String::from_utf8_lossy(bytes);
                Value::String(redact_str(&text, &self.secrets))
            }
        };
        let line = serde_json::json!({
            "ts": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
            "server": peer,
            "dir": direction.as_str(),
            "message": message,
        });
        let mut text = line.to_string();
        text.push('\n');
        crate::sync::lock(&self.inner).write(text.as_bytes());
    }
}

impl Writer {
    fn write(&mut self, line: &[u8]) {
        if self.written + line.len() as u64 > self.max_bytes && self.written > 0 {
            self.rotate();
        }
        let Some(file) = self.file.as_mut() else {
            return;
        };
        match file.write_all(line) {
            Ok(()) => self.written += line.len() as u64,
            Err(e) => {
                tracing::warn!(path = %self.path.display(), "the wire log stopped: {e}");
                self.file = None;
            }
        }
    }

    /// The full file becomes `FILE.1` (an older one dropped), and a new one is begun.
    fn rotate(&mut self) {
        self.file = None;
        let mut old = self.path.clone().into_os_string();
        old.push(".1");
        let reopened = std::fs::rename(&self.path, &old).and_then(|()| open_private(&self.path));
        match reopened {
            Ok(file) => {
                self.file = Some(file);
                self.written = 0;
            }
            Err(e) => {
                tracing::warn!(path = %self.path.display(), "the wire log stopped at its size limit: {e}");
            }
        }
    }
}

fn open_private(path: &Path) -> std::io::Result<File> {
    let mut options = OpenOptions::new();
    options.create(true).append(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(path)
}

/// `bytes` without a trailing line feed or carriage return.
fn trim_line(mut bytes: &[u8]) -> &[u8] {
    while let [rest @ .., b'\n' | b'\r'] = bytes {
        bytes = rest;
    }
    bytes
}

/// Whether `key` names a credential.
fn secret_key(key: &str) -> bool {
    let folded: String = key
        .chars()
        .filter(|c| *c != '-' && *c != '_')
        .map(|c| c.to_ascii_lowercase())
        .collect();
    SECRET_KEYS.contains(&folded.as_str())
}

/// `value` with every credential in it redacted, in place.
fn redact_value(value: &mut Value, secrets: &[String]) {
    match value {
        Value::String(text) => {
            let redacted = redact_str(text, secrets);
            if redacted != *text {
                *text = redacted;
            }
        }
        Value::Array(items) => {
            for item in items {
                redact_value(item, secrets);
            }
        }
        Value::Object(map) => {
            for (key, item) in map.iter_mut() {
                if secret_key(key) && !item.is_null() {
                    *item = Value::String(REDACTED.into());
                } else {
                    redact_value(item, secrets);
                }
            }
        }
        _ => {}
    }
}

/// `text` with each secret and each URL's query and userinfo redacted.
fn redact_str(text: &str, secrets: &[String]) -> String {
    let mut out = crate::redact::redact_text(text).into_owned();
    for secret in secrets {
        if out.contains(secret.as_str()) {
            out = out.replace(secret.as_str(), REDACTED);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    fn lines(path: &Path) -> Vec<Value> {
        std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    #[test]
    fn a_message_is_written_whole_with_its_credentials_and_named_secrets_redacted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("wire.jsonl");
        let log = WireLog::open(&path, 1 << 20)
            .unwrap()
            .with_secrets(["planted-S3CRET".to_string(), "ab".to_string()]);
        log.record(
            "s",
            Direction::Send,
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"note":"x planted-S3CRET y","api_key":"k1","ab":"ab"},"_meta":{"progressToken":3}}}
"#,
        );
        log.record("s", Direction::Receive, b"not json at http://u:p@h/x?q=1");
        let written = std::fs::read_to_string(&path).unwrap();
        assert!(
            !written.contains("S3CRET") && !written.contains("k1") && !written.contains("u:p@")
        );
        let lines = lines(&path);
        assert_eq!(lines[0]["dir"], "send");
        assert_eq!(lines[0]["server"], "s");
        let arguments = &lines[0]["message"]["params"]["arguments"];
        assert_eq!(arguments["note"], "x [redacted] y");
        assert_eq!(arguments["api_key"], REDACTED);
        // Too short to be taken for a secret.
        assert_eq!(arguments["ab"], "ab");
        assert_eq!(lines[0]["message"]["params"]["_meta"]["progressToken"], 3);
        assert_eq!(lines[1]["dir"], "recv");
        assert_eq!(lines[1]["message"], "not json at http://h/x?…");
    }

    #[test]
    fn past_its_size_the_log_is_rotated_once_and_stays_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("wire.jsonl");
        let log = WireLog::open(&path, 4096).unwrap();
        for n in 0..200 {
            log.record("s", Direction::Send, format!(r#"{{"id":{n}}}"#).as_bytes());
        }
        let now = std::fs::metadata(&path).unwrap().len();
        let old = std::fs::metadata(dir.path().join("wire.jsonl.1"))
            .unwrap()
            .len();
        assert!(now <= 4096 && old <= 4096, "{now} {old}");
        let last = lines(&path).pop().unwrap();
        assert_eq!(last["message"]["id"], 199);
    }
}
