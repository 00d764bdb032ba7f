//! `mcpmux serve` driven by the official SDK clients (TypeScript 1.32.2: the handshake era;
//! Python 2.3.0: 2026-07-28 by default, the handshake with `mode: legacy`), over stdio and
//! over streamable HTTP, with the test server as the upstream. The client scripts live in
//! `crates/mcpmux-gateway/tests/clients/`; what they print is what the client was told.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, ExitStatus, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::*;

/// Longest an SDK client run may take (node and Python start in about a second).
const CLIENT_DEADLINE: Duration = Duration::from_secs(60);

fn clients() -> PathBuf {
    workspace().join("crates/mcpmux-gateway/tests/clients")
}

/// A sandbox whose one configured server, `t`, is the test server with `args`.
fn with_testserver(args: &[&str]) -> Sandbox {
    Sandbox::with_user_servers(json!({
        "t": { "command": testserver(), "args": args }
    }))
}

/// How an SDK client spawns `mcpmux serve ARGS` in the sandbox.
fn stdio_target(sandbox: &Sandbox, args: &[&str]) -> Value {
    let mut argv = vec!["serve"];
    argv.extend_from_slice(args);
    json!({
        "command": env!("CARGO_BIN_EXE_mcpmux"),
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
fn run_client(mut cmd: Command, what: &str) -> Vec<Value> {
    cmd.env_remove("MCPMUX_LOG")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
    let stdout = read_all(child.stdout.take().unwrap());
    let stderr = read_all(child.stderr.take().unwrap());
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

fn read_all(mut pipe: impl std::io::Read + Send + 'static) -> JoinHandle<String> {
    std::thread::spawn(move || {
        let mut text = String::new();
        let _ = pipe.read_to_string(&mut text);
        text
    })
}

/// The TypeScript SDK client on `target` (`{"stdio": …}` or `{"url": …}`) doing `actions`.
fn ts_client(target: Value, actions: Value) -> Vec<Value> {
    let mut scenario = target;
    scenario["actions"] = actions;
    let mut cmd = Command::new("node");
    cmd.arg(clients().join("ts-client.mjs"))
        .arg(workspace().join("test-deps/node_modules"))
        .arg(scenario.to_string());
    run_client(cmd, "the TypeScript SDK client")
}

/// The Python SDK client on `target` in `mode` (`auto`: 2026-07-28 here; `legacy`) doing
/// `actions`.
fn py_client(target: Value, mode: &str, actions: Value) -> Vec<Value> {
    let mut scenario = target;
    scenario["actions"] = actions;
    scenario["mode"] = json!(mode);
    let mut cmd = Command::new(venv_bin("python"));
    cmd.arg(clients().join("py-client.py"))
        .arg(scenario.to_string());
    run_client(cmd, "the Python SDK client")
}

/// `mcpmux serve --http 127.0.0.1:0 ARGS` running in the sandbox; SIGKILLed when dropped.
struct Served {
    child: Child,
    url: String,
    _stdout: BufReader<ChildStdout>,
    stderr: Option<JoinHandle<String>>,
}

impl Served {
    fn start(sandbox: &Sandbox, args: &[&str]) -> Self {
        let mut argv = vec!["serve", "--http", "127.0.0.1:0"];
        argv.extend_from_slice(args);
        Self::spawn(sandbox.command(&argv))
    }

    /// Starts `cmd` (an `mcpmux serve --http …`) and reads the address it listens on.
    fn spawn(mut cmd: Command) -> Self {
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        let stderr = read_all(child.stderr.take().unwrap());
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

    fn target(&self) -> Value {
        json!({ "url": self.url })
    }

    /// SIGTERM, then its exit status and stderr (failing past `within`).
    fn terminate(mut self, within: Duration) -> (ExitStatus, String) {
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

fn text_of(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn list_and_echo() -> Value {
    json!([
        {"do": "list"},
        {"do": "call", "name": "mcp__t__echo", "arguments": {"text": "through the gateway"}},
    ])
}

/// The listed names hold the test server's tools under the hub's names, and the echo came back.
#[track_caller]
fn assert_listed_and_echoed(lines: &[Value], who: &str) {
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

#[test]
fn sdk_clients_list_and_call_through_serve_over_stdio_in_both_eras() {
    let sandbox = with_testserver(&[]);
    let target = json!({ "stdio": stdio_target(&sandbox, &[]) });

    let ts = ts_client(target.clone(), list_and_echo());
    assert_listed_and_echoed(&ts, "TypeScript client (handshake)");

    let mut actions = json!([{"do": "version"}]);
    actions
        .as_array_mut()
        .unwrap()
        .extend(list_and_echo().as_array().unwrap().clone());
    let modern = py_client(target.clone(), "auto", actions.clone());
    assert_eq!(modern[0]["protocol"], "2026-07-28", "{modern:?}");
    assert_listed_and_echoed(&modern, "Python client (2026-07-28)");

    let legacy = py_client(target, "legacy", actions);
    assert_eq!(legacy[0]["protocol"], "2025-11-25", "{legacy:?}");
    assert_listed_and_echoed(&legacy, "Python client (handshake)");
}

#[test]
fn sdk_clients_list_and_call_through_serve_over_http_in_both_eras() {
    let sandbox = with_testserver(&[]);
    let served = Served::start(&sandbox, &[]);

    let ts = ts_client(served.target(), list_and_echo());
    assert_listed_and_echoed(&ts, "TypeScript client over HTTP (session)");

    let mut actions = json!([{"do": "version"}]);
    actions
        .as_array_mut()
        .unwrap()
        .extend(list_and_echo().as_array().unwrap().clone());
    let modern = py_client(served.target(), "auto", actions.clone());
    assert_eq!(modern[0]["protocol"], "2026-07-28", "{modern:?}");
    assert_listed_and_echoed(&modern, "Python client over HTTP (stateless 2026-07-28)");

    let legacy = py_client(served.target(), "legacy", actions);
    assert_eq!(legacy[0]["protocol"], "2025-11-25", "{legacy:?}");
    assert_listed_and_echoed(&legacy, "Python client over HTTP (session)");

    let (status, stderr) = served.terminate(Duration::from_secs(10));
    assert!(status.success(), "{status}: {stderr}");
}

#[test]
fn progress_comes_back_to_the_client_in_both_eras() {
    let sandbox = with_testserver(&[]);
    let served = Served::start(&sandbox, &[]);
    let slow = json!([{"do": "call", "name": "mcp__t__slow", "arguments": {"ms": 60, "steps": 3}}]);
    for (mode, target) in [
        ("auto", json!({ "stdio": stdio_target(&sandbox, &[]) })),
        ("legacy", json!({ "stdio": stdio_target(&sandbox, &[]) })),
        ("auto", served.target()),
    ] {
        let lines = py_client(target, mode, slow.clone());
        assert_eq!(
            text_of(&lines[0]["result"]),
            "done after 3 steps",
            "{lines:?}"
        );
        assert_eq!(lines[0]["progress"], 3, "{mode}: {lines:?}");
    }
}

#[test]
fn a_downstream_cancel_reaches_the_upstream_call() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls.jsonl");
    let sandbox = with_testserver(&["--call-log", log.to_str().unwrap()]);
    // Twenty seconds of work with progress every 200 ms: the client aborts at the first, then
    // calls once more (so it is still there when the server logs the cancellation).
    let cancel = json!([
        {"do": "progress_then_cancel", "name": "mcp__t__slow",
         "arguments": {"ms": 20000, "steps": 100}},
        {"do": "call", "name": "mcp__t__echo", "arguments": {"text": "after"}},
    ]);
    let started = Instant::now();
    let lines = ts_client(
        json!({ "stdio": stdio_target(&sandbox, &[]) }),
        cancel.clone(),
    );
    assert_eq!(lines[0]["cancelled"], true, "{lines:?}");
    assert!(lines[0]["progress"].as_u64().unwrap() >= 1, "{lines:?}");
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "took {:?}",
        started.elapsed()
    );
    wait_log_blocking(&log, |l| l.iter().any(|e| e["cancelled"] == "slow"));

    // And over HTTP in a session.
    std::fs::remove_file(&log).unwrap();
    let served = Served::start(&sandbox, &[]);
    let lines = ts_client(served.target(), cancel);
    assert_eq!(lines[0]["cancelled"], true, "{lines:?}");
    wait_log_blocking(&log, |l| l.iter().any(|e| e["cancelled"] == "slow"));
}

fn wait_log_blocking(log: &Path, pred: impl Fn(&[Value]) -> bool) {
    let seen = eventually_blocking(Duration::from_secs(10), Duration::from_millis(10), || {
        pred(&call_log(log)).then_some(())
    });
    assert!(
        seen.is_some(),
        "the call log never showed it: {:?}",
        call_log(log)
    );
}

#[test]
fn an_upstream_tool_list_change_reaches_the_client_in_both_eras() {
    let sandbox = with_testserver(&[]);
    let change = json!([{"do": "call_expecting_list_changed", "name": "mcp__t__change_tools"}]);
    let lines = ts_client(json!({ "stdio": stdio_target(&sandbox, &[]) }), change);
    assert_eq!(lines[0]["listChanged"], true, "{lines:?}");
    assert!(
        lines[0]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t == "mcp__t__extra"),
        "{lines:?}"
    );

    // Over HTTP: a handshake session hears it on its GET stream...
    let served = Served::start(&sandbox, &[]);
    let change = json!([{"do": "call_expecting_list_changed", "name": "mcp__t__change_tools"}]);
    let lines = ts_client(served.target(), change);
    assert_eq!(lines[0]["listChanged"], true, "{lines:?}");
    // ... and a 2026-07-28 client on its subscriptions/listen stream.
    let listen = json!([{"do": "listen_then_call", "name": "mcp__t__change_tools"}]);
    let lines = py_client(served.target(), "auto", listen);
    assert_eq!(lines[0]["listChanged"], true, "{lines:?}");
}

#[test]
fn an_upstream_crash_during_a_call_is_an_error_naming_the_server() {
    let sandbox = Sandbox::with_user_servers(json!({
        "t": { "command": testserver(), "args": ["--crash-on", "echo"] },
        "down": { "command": testserver(), "args": ["--exit-at-startup", "1"] },
    }));
    let started = Instant::now();
    let lines = ts_client(
        json!({ "stdio": stdio_target(&sandbox, &[]) }),
        json!([
            {"do": "call", "name": "mcp__t__echo", "arguments": {"text": "boom"}},
            {"do": "call", "name": "mcp__down__echo", "arguments": {"text": "hi"}},
        ]),
    );
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "took {:?}",
        started.elapsed()
    );
    let crashed = &lines[0]["result"];
    assert_eq!(crashed["isError"], true, "{lines:?}");
    let text = text_of(crashed);
    assert!(text.contains("server `t`"), "{text}");
    assert!(
        text.contains("connection lost during tools/call `echo`"),
        "{text}"
    );
    let down = &lines[1]["result"];
    assert_eq!(down["isError"], true, "{lines:?}");
    assert!(
        text_of(down).contains("server `down` is failed"),
        "{}",
        text_of(down)
    );
}

#[test]
fn serve_refuses_a_non_loopback_address_without_a_token() {
    let sandbox = with_testserver(&[]);
    let run = sandbox.run_within(&["serve", "--http", "0.0.0.0:0"], Duration::from_secs(20));
    assert_code(&run, 2);
    assert!(
        run.stderr
            .contains("refusing to serve 0.0.0.0:0 without authentication"),
        "{run:#?}"
    );
    assert!(run.stderr.contains("--token-file"), "{run:#?}");
    assert!(run.stdout.is_empty(), "{run:#?}");
}

#[test]
fn sigterm_lets_the_call_in_flight_finish_then_reaps_every_server() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls.jsonl");
    let sandbox = with_testserver(&["--call-log", log.to_str().unwrap()]);
    let served = Served::start(&sandbox, &[]);
    let target = served.target();
    let client = std::thread::spawn(move || {
        ts_client(
            target,
            json!([{"do": "call", "name": "mcp__t__slow", "arguments": {"ms": 800, "steps": 2}}]),
        )
    });
    wait_log_blocking(&log, |l| l.iter().any(|e| e["tool"] == "slow"));
    let servers = descendants(served.child.id() as i32);
    assert!(!servers.is_empty(), "no upstream server process found");
    let (status, stderr) = served.terminate(Duration::from_secs(15));
    assert!(status.success(), "{status}: {stderr}");
    let lines = client.join().unwrap();
    assert_eq!(
        text_of(&lines[0]["result"]),
        "done after 2 steps",
        "{lines:?}"
    );
    let pids = servers.iter().map(|p| p.pid).collect();
    assert!(
        wait_gone(&pids, Duration::from_secs(5)).is_empty(),
        "servers left behind"
    );
}

#[test]
fn a_server_cut_off_by_its_breaker_has_its_tools_withheld_then_back_with_list_changed() {
    let sandbox = Sandbox::new();
    let config = sandbox.home.join("gateway.toml");
    sandbox.write_file(
        &config,
        &format!(
            "[servers.t]\ncommand = {:?}\nargs = [\"--crash-on\", \"echo\"]\n\
             breaker = {{ threshold = 1, cool_down = \"300ms\" }}\n\
             backoff = {{ initial = \"20ms\", max = \"200ms\" }}\n",
            testserver().to_str().unwrap()
        ),
    );
    let serve = stdio_target(&sandbox, &["--config", config.to_str().unwrap()]);
    let lines = ts_client(
        json!({ "stdio": serve }),
        json!([
            {"do": "list"},
            {"do": "call", "name": "mcp__t__echo", "arguments": {"text": "boom"}},
            {"do": "until_listed", "absent": "mcp__t__echo"},
            {"do": "until_listed", "present": "mcp__t__echo"},
            {"do": "call", "name": "mcp__t__add", "arguments": {"a": 2, "b": 3}},
        ]),
    );
    assert_eq!(lines[1]["result"]["isError"], true, "{lines:?}");
    assert!(
        text_of(&lines[1]["result"]).contains("server `t`"),
        "{lines:?}"
    );
    assert_eq!(lines[2]["ok"], true, "tools never withheld: {lines:?}");
    assert_eq!(lines[3]["ok"], true, "tools never came back: {lines:?}");
    assert_eq!(text_of(&lines[4]["result"]), "5", "{lines:?}");
}

#[test]
fn in_stdio_mode_only_mcp_reaches_stdout_even_with_debug_logs() {
    let sandbox = with_testserver(&[]);
    let initialize = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "by-hand", "version": "1"}}
    });
    let input = format!(
        "{initialize}\n{}\n",
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
    );
    let mut cmd = sandbox.command(&["serve", "-v", "debug"]);
    cmd.stdin(Stdio::piped());
    let run = run_command(cmd, Some(&input));
    assert_code(&run, 0);
    assert!(!run.stdout.is_empty(), "{run:#?}");
    for line in run.stdout.lines() {
        let message: Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("not a JSON-RPC line on stdout ({e}): {line:?}"));
        assert_eq!(message["jsonrpc"], "2.0", "{line}");
    }
    assert!(
        run.stdout.contains("\"serverInfo\":{\"name\":\"mcpmux\""),
        "{run:#?}"
    );
    assert!(
        run.stderr.contains("DEBUG"),
        "the logs went somewhere else: {run:#?}"
    );
}

#[test]
fn an_entry_that_runs_mcpmux_serve_is_not_served_by_it() {
    // The client's config lists the gateway; the gateway reads that config too.
    let sandbox = Sandbox::with_user_servers(json!({
        "t": { "command": testserver(), "args": [] },
        "mcpmux": { "command": env!("CARGO_BIN_EXE_mcpmux"), "args": ["serve"] },
    }));
    let started = Instant::now();
    let lines = ts_client(
        json!({ "stdio": stdio_target(&sandbox, &[]) }),
        list_and_echo(),
    );
    assert_listed_and_echoed(&lines, "TypeScript client");
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "took {:?}",
        started.elapsed()
    );
}

/// A raw HTTP/1.1 POST of an `initialize` to `url` with `headers`: the status and the whole
/// answer as text.
fn post_initialize(url: &str, headers: &[(&str, &str)]) -> (u16, String) {
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

#[test]
fn with_a_token_file_or_variable_serve_wants_the_token() {
    use std::os::unix::fs::PermissionsExt;
    let sandbox = with_testserver(&[]);
    let file = sandbox.home.join("gateway-token");
    sandbox.write_file(&file, "file-token-123\n");

    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let loose = sandbox.run_within(
        &[
            "serve",
            "--http",
            "127.0.0.1:0",
            "--token-file",
            file.to_str().unwrap(),
        ],
        Duration::from_secs(20),
    );
    assert_code(&loose, 2);
    assert!(loose.stderr.contains("chmod 600"), "{loose:#?}");

    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let served = Served::start(&sandbox, &["--token-file", file.to_str().unwrap()]);
    let (status, answer) = post_initialize(&served.url, &[]);
    assert_eq!(status, 401, "{answer}");
    assert!(
        answer
            .to_ascii_lowercase()
            .contains("www-authenticate: bearer"),
        "{answer}"
    );
    let (status, _) = post_initialize(&served.url, &[("Authorization", "Bearer file-token-12")]);
    assert_eq!(status, 401);
    let (status, answer) =
        post_initialize(&served.url, &[("Authorization", "Bearer file-token-123")]);
    assert_eq!(status, 200, "{answer}");
    assert!(answer.contains("\"serverInfo\""), "{answer}");
    drop(served);

    let mut cmd = sandbox.command(&["serve", "--http", "127.0.0.1:0"]);
    cmd.env("MCPMUX_GATEWAY_TOKEN", "env-token-456");
    let served = Served::spawn(cmd);
    let (status, _) = post_initialize(&served.url, &[]);
    assert_eq!(status, 401);
    let (status, _) = post_initialize(&served.url, &[("Authorization", "Bearer env-token-456")]);
    assert_eq!(status, 200);
}

#[test]
fn past_the_grace_period_a_call_in_flight_is_cancelled_upstream() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls.jsonl");
    let sandbox = with_testserver(&["--call-log", log.to_str().unwrap()]);
    let served = Served::start(&sandbox, &["--grace", "0"]);
    let target = served.target();
    let client = std::thread::spawn(move || {
        ts_client(
            target,
            json!([{"do": "call", "name": "mcp__t__slow", "arguments": {"ms": 20000, "steps": 2}}]),
        )
    });
    wait_log_blocking(&log, |l| l.iter().any(|e| e["tool"] == "slow"));
    let started = Instant::now();
    let (status, stderr) = served.terminate(Duration::from_secs(15));
    assert!(status.success(), "{status}: {stderr}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "took {:?}",
        started.elapsed()
    );
    wait_log_blocking(&log, |l| l.iter().any(|e| e["cancelled"] == "slow"));
    let lines = client.join().unwrap();
    let told = lines[0].to_string();
    assert!(told.contains("cancel"), "the client was told: {told}");
}

#[test]
fn a_policy_ask_rule_refuses_the_call_unless_serve_was_told_yes() {
    let sandbox = Sandbox::new();
    let config = sandbox.home.join("gateway.toml");
    sandbox.write_file(
        &config,
        &format!(
            "[servers.t]\ncommand = {:?}\n\n[policy]\nask = [\"mcp__t__echo\"]\ndeny = [\"mcp__t__add\"]\n",
            testserver().to_str().unwrap()
        ),
    );
    let config = config.to_str().unwrap();
    let calls = json!([
        {"do": "call", "name": "mcp__t__echo", "arguments": {"text": "may I"}},
        {"do": "call", "name": "mcp__t__add", "arguments": {"a": 1, "b": 1}},
    ]);
    let asked = ts_client(
        json!({ "stdio": stdio_target(&sandbox, &["--config", config]) }),
        calls.clone(),
    );
    for line in &asked {
        assert_eq!(line["result"]["isError"], true, "{asked:?}");
    }
    assert!(
        text_of(&asked[0]["result"]).contains("mcp__t__echo"),
        "{asked:?}"
    );
    let approved = ts_client(
        json!({ "stdio": stdio_target(&sandbox, &["--config", config, "--yes"]) }),
        calls,
    );
    assert_eq!(text_of(&approved[0]["result"]), "may I", "{approved:?}");
    assert_eq!(
        approved[1]["result"]["isError"], true,
        "deny holds: {approved:?}"
    );
}

#[test]
fn the_served_tools_are_filtered_scoped_and_validated_as_the_hub_has_them() {
    let sandbox = Sandbox::new();
    let config = sandbox.home.join("gateway.toml");
    let server = testserver();
    sandbox.write_file(
        &config,
        &format!(
            "[servers.t]\ncommand = {server:?}\ntools = {{ deny = [\"add\"] }}\n\n\
             [servers.builder]\ncommand = {server:?}\nargs = [\"--page-size\", \"99\"]\n\
             stages = [\"build\"]\n",
        ),
    );
    let config = config.to_str().unwrap();
    let lines = ts_client(
        json!({ "stdio": stdio_target(&sandbox, &["--config", config, "--scope", "plan/coder"]) }),
        json!([
            {"do": "list"},
            {"do": "call", "name": "mcp__builder__echo", "arguments": {"text": "out of scope"}},
            {"do": "call", "name": "mcp__t__echo", "arguments": {"text": 5}},
        ]),
    );
    let tools = lines[0]["tools"].as_array().unwrap();
    assert!(tools.iter().any(|t| t == "mcp__t__echo"), "{tools:?}");
    assert!(
        !tools.iter().any(|t| t == "mcp__t__add"),
        "denied tool listed: {tools:?}"
    );
    assert!(
        !tools
            .iter()
            .any(|t| t.as_str().unwrap().starts_with("mcp__builder__")),
        "out-of-scope server listed: {tools:?}"
    );
    assert_eq!(lines[1]["result"]["isError"], true, "{lines:?}");
    assert!(
        text_of(&lines[1]["result"]).contains("outside scope `plan/coder`"),
        "{lines:?}"
    );
    assert_eq!(lines[2]["result"]["isError"], true, "{lines:?}");
    assert!(
        text_of(&lines[2]["result"]).contains("invalid arguments"),
        "{lines:?}"
    );
}
