//! The official SDK clients (`crates/mcpmux-gateway/tests/clients/`) and `mcpmux serve` as the
//! serve tests start them: an SDK client spawning `mcpmux serve` in a sandbox, or
//! `mcpmux serve --http 127.0.0.1:0` running for a client to reach; raw HTTP where no client
//! would send what a test needs.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, ExitStatus, Stdio};
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::{Value, json};

use crate::call_log::call_log;
use crate::cli::{Sandbox, mcpmux_bin};
use crate::poll::eventually_blocking;
use crate::servers::{testserver, venv_bin, workspace};

/// Longest an SDK client run may take (node and Python start in about a second).
pub const CLIENT_DEADLINE: Duration = Duration::from_secs(60);

pub fn clients() -> PathBuf {
    workspace().join("crates/mcpmux-gateway/tests/clients")
}

/// A sandbox whose one configured server, `t`, is the test server with `args`.
pub fn with_testserver(args: &[&str]) -> Sandbox {
    Sandbox::with_user_servers(json!({
        "t": { "command": testserver(), "args": args }
    }))
}

/// How an SDK client spawns `mcpmux serve ARGS` in the sandbox.
pub fn stdio_target(sandbox: &Sandbox, args: &[&str]) -> Value {
    let mut argv = vec!["serve"];
    argv.extend_from_slice(args);
    json!({
        "command": mcpmux_bin(),
        "args": argv,
        "cwd": sandbox.project,
        "env": {
            "HOME": sandbox.home,
            "XDG_CONFIG_HOME": sandbox.home.join(".config"),
            "XDG_CACHE_HOME": sandbox.home.join(".cache"),
            "PATH": std::env::var("PATH").unwrap_or_default(),
        },
    })
}

/// Runs a client script to its end and returns the JSON lines it printed.
pub fn run_client(mut cmd: Command, what: &str) -> Vec<Value> {
    cmd.env_remove("MCPMUX_LOG")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
    let stdout = read_pipe(child.stdout.take().unwrap());
    let stderr = read_pipe(child.stderr.take().unwrap());
    let status = eventually_blocking(CLIENT_DEADLINE, Duration::from_millis(10), || {
        child.try_wait().unwrap()
    });
    let Some(status) = status else {
        let _ = child.kill();
        let _ = child.wait();
        panic!(
            "{what} did not finish in {CLIENT_DEADLINE:?}: {}",
            stderr.join().unwrap()
        );
    };
    let stdout = stdout.join().unwrap();
    let stderr = stderr.join().unwrap();
    assert!(
        status.success(),
        "{what} failed ({status}):\n{stdout}\n{stderr}"
    );
    stdout
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
}

pub fn read_pipe(mut pipe: impl std::io::Read + Send + 'static) -> JoinHandle<String> {
    std::thread::spawn(move || {
        let mut text = String::new();
        let _ = pipe.read_to_string(&mut text);
        text
    })
}

/// The TypeScript SDK client on `target` (`{"stdio": …}` or `{"url": …}`) doing `actions`.
pub fn ts_client(target: Value, actions: Value) -> Vec<Value> {
    let mut scenario = target;
    scenario["actions"] = actions;
    let mut cmd = Command::new("node");
    cmd.arg(clients().join("ts-client.mjs"))
        .arg(workspace().join("test-deps/node_modules"))
        .arg(scenario.to_string());
    run_client(cmd, "the TypeScript SDK client")
}

/// Several sessions of the TypeScript SDK client on `target`, each declaring and answering as
/// its entry of `sessions` says, doing `actions` (see `ts-sessions.mjs`).
pub fn ts_sessions(target: Value, sessions: Value, actions: Value) -> Vec<Value> {
    let mut scenario = target;
    scenario["sessions"] = sessions;
    scenario["actions"] = actions;
    let mut cmd = Command::new("node");
    cmd.arg(clients().join("ts-sessions.mjs"))
        .arg(workspace().join("test-deps/node_modules"))
        .arg(scenario.to_string());
    run_client(cmd, "the TypeScript SDK sessions")
}

/// The Python SDK client on `target` in `mode` (`auto`: 2026-07-28 here; `legacy`) doing
/// `actions`.
pub fn py_client(target: Value, mode: &str, actions: Value) -> Vec<Value> {
    let mut scenario = target;
    scenario["actions"] = actions;
    scenario["mode"] = json!(mode);
    let mut cmd = Command::new(venv_bin("python"));
    cmd.arg(clients().join("py-client.py"))
        .arg(scenario.to_string());
    run_client(cmd, "the Python SDK client")
}

/// `mcpmux serve --http 127.0.0.1:0 ARGS` running in the sandbox; SIGKILLed when dropped.
pub struct Served {
    pub child: Child,
    pub url: String,
    _stdout: BufReader<ChildStdout>,
    stderr: Option<JoinHandle<String>>,
}

impl Served {
    pub fn start(sandbox: &Sandbox, args: &[&str]) -> Self {
        let mut argv = vec!["serve", "--http", "127.0.0.1:0"];
        argv.extend_from_slice(args);
        Self::spawn(sandbox.command(&argv))
    }

    /// Starts `cmd` (an `mcpmux serve --http …`) and reads the address it listens on.
    pub fn spawn(mut cmd: Command) -> Self {
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        let stderr = read_pipe(child.stderr.take().unwrap());
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        let Some(url) = line.trim().strip_prefix("listening on ") else {
            let _ = child.kill();
            panic!(
                "no `listening on` line: {line:?}; stderr: {}",
                stderr.join().unwrap()
            );
        };
        Served {
            url: url.to_string(),
            child,
            _stdout: stdout,
            stderr: Some(stderr),
        }
    }

    pub fn target(&self) -> Value {
        json!({ "url": self.url })
    }

    /// SIGTERM, then its exit status and stderr (failing past `within`).
    pub fn terminate(mut self, within: Duration) -> (ExitStatus, String) {
        unsafe {
            libc::kill(self.child.id() as i32, libc::SIGTERM);
        }
        let status = eventually_blocking(within, Duration::from_millis(10), || {
            self.child.try_wait().unwrap()
        });
        let status =
            status.unwrap_or_else(|| panic!("mcpmux serve did not exit within {within:?}"));
        let stderr = self.stderr.take().unwrap().join().unwrap();
        (status, stderr)
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

pub fn text_of(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

pub fn list_and_echo() -> Value {
    json!([
        {"do": "list"},
        {"do": "call", "name": "mcp__t__echo", "arguments": {"text": "through the gateway"}},
    ])
}

/// The listed names hold the test server's tools under the hub's names, and the echo came back.
#[track_caller]
pub fn assert_listed_and_echoed(lines: &[Value], who: &str) {
    let tools = lines
        .iter()
        .find_map(|l| l["tools"].as_array())
        .unwrap_or_else(|| panic!("{who} listed nothing: {lines:?}"));
    assert!(
        tools.iter().any(|t| t == "mcp__t__echo"),
        "{who}: {tools:?}"
    );
    assert!(
        tools
            .iter()
            .all(|t| t.as_str().unwrap().starts_with("mcp__t__")),
        "{who}: {tools:?}"
    );
    let result = lines
        .iter()
        .find_map(|l| l.get("result"))
        .unwrap_or_else(|| panic!("{who} got no result: {lines:?}"));
    assert_eq!(text_of(result), "through the gateway", "{who}: {result}");
    assert_eq!(result["isError"], false, "{who}: {result}");
}

pub fn wait_log_blocking(log: &Path, pred: impl Fn(&[Value]) -> bool) {
    let seen = eventually_blocking(Duration::from_secs(10), Duration::from_millis(10), || {
        pred(&call_log(log)).then_some(())
    });
    assert!(
        seen.is_some(),
        "the call log never showed it: {:?}",
        call_log(log)
    );
}

/// A raw HTTP/1.1 POST of an `initialize` to `url` with `headers`: the status and the whole
/// answer as text.
pub fn post_initialize(url: &str, headers: &[(&str, &str)]) -> (u16, String) {
    use std::io::{Read, Write};
    let rest = url.strip_prefix("http://").unwrap();
    let (authority, path) = rest.split_at(rest.find('/').unwrap());
    let body = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "raw", "version": "1"}}
    })
    .to_string();
    let mut request = format!(
        "POST {path} HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(&body);
    let mut stream = std::net::TcpStream::connect(authority).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = Vec::new();
    // An SSE answer may stay open after the result: read what comes until the result is in.
    let mut buf = [0u8; 4096];
    loop {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => answer.extend_from_slice(&buf[..n]),
        }
        let text = String::from_utf8_lossy(&answer);
        if !text.starts_with("HTTP/1.1 200") || text.contains("\"result\"") {
            break;
        }
    }
    let text = String::from_utf8_lossy(&answer).into_owned();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line: {text:?}"));
    (status, text)
}

/// A raw `GET` of `path` on the server at `url` with `headers`: the status and the body.
pub fn http_get(url: &str, path: &str, headers: &[(&str, &str)]) -> (u16, String) {
    use std::io::{Read, Write};
    let authority = url
        .strip_prefix("http://")
        .unwrap()
        .split('/')
        .next()
        .unwrap();
    let mut request = format!("GET {path} HTTP/1.1\r\nConnection: close\r\n");
    if !headers
        .iter()
        .any(|(name, _)| name.eq_ignore_ascii_case("host"))
    {
        request.push_str(&format!("Host: {authority}\r\n"));
    }
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    let mut stream = std::net::TcpStream::connect(authority).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let status = answer
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line: {answer:?}"));
    let body = answer
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_string())
        .unwrap_or_default();
    (status, body)
}

/// The body of a chunked answer, joined (the exposition comes in chunks or not).
pub fn unchunk(body: &str) -> String {
    if body.starts_with("# HELP") || body.starts_with("# TYPE") {
        return body.to_string();
    }
    let mut out = String::new();
    let mut rest = body;
    while let Some((size, tail)) = rest.split_once("\r\n") {
        let size = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if size == 0 {
            break;
        }
        out.push_str(&tail[..size]);
        rest = tail[size..].trim_start_matches("\r\n");
    }
    out
}
