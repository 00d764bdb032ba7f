//! `mcpmux serve` reloading its config while the official Python SDK client holds one
//! connection: an edit of the config file, or SIGHUP, reaches the client as
//! `notifications/tools/list_changed` (a session notification in the handshake era, a
//! `subscriptions/listen` event in 2026-07-28), and the new tool is listed and called on the
//! same connection; a server the edit keeps keeps its process; one it removes is stopped; a
//! broken edit changes nothing. Over HTTP in both eras, and over stdio.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mcpmux_test_support as support;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use support::*;

/// How long a reload may take to reach the client (it takes well under a second).
const WITHIN: Duration = Duration::from_secs(20);

/// The test server as a config entry; `marker` (an unused `--page-size`) tells its process
/// apart.
fn entry(marker: &str) -> Value {
    json!({ "command": testserver(), "args": ["--page-size", marker] })
}

/// Writes the user's `~/.claude.json` with `servers`.
fn configure(sandbox: &Sandbox, servers: Value) {
    let text = json!({ "mcpServers": servers }).to_string();
    // Replaced whole, as an editor saves: a reader never sees half a file.
    let path = sandbox.home.join(".claude.json");
    let temp = sandbox.home.join(".claude.json.saving");
    std::fs::write(&temp, text).unwrap();
    std::fs::rename(&temp, &path).unwrap();
}

/// `mcpmux serve --http 127.0.0.1:0 ARGS` whose stderr is read as it comes.
struct Gateway {
    child: Child,
    url: String,
    stderr: Arc<Mutex<Vec<String>>>,
}

impl Gateway {
    fn start(sandbox: &Sandbox, args: &[&str]) -> Self {
        let mut argv = vec!["serve", "--http", "127.0.0.1:0"];
        argv.extend_from_slice(args);
        let mut cmd = sandbox.command(&argv);
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let lines = stderr.clone();
        let pipe = BufReader::new(child.stderr.take().unwrap());
        std::thread::spawn(move || {
            for line in pipe.lines().map_while(Result::ok) {
                lines.lock().unwrap().push(line);
            }
        });
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        let url = line
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("no `listening on` line: {line:?}"))
            .to_string();
        Gateway { child, url, stderr }
    }

    fn target(&self) -> Value {
        json!({ "url": self.url })
    }

    /// Waits for a stderr line holding `text`, and returns it.
    fn said(&self, text: &str) -> String {
        let line = eventually_blocking(WITHIN, Duration::from_millis(10), || {
            self.stderr
                .lock()
                .unwrap()
                .iter()
                .find(|line| line.contains(text))
                .cloned()
        });
        line.unwrap_or_else(|| {
            panic!(
                "the gateway never said {text:?}; it said: {:#?}",
                self.stderr.lock().unwrap()
            )
        })
    }

    fn hang_up(&self) {
        unsafe {
            libc::kill(self.child.id() as i32, libc::SIGHUP);
        }
    }

    /// The processes of test servers started with `marker`.
    fn servers_marked(&self, marker: &str) -> std::collections::BTreeSet<i32> {
        descendants(self.child.id() as i32)
            .into_iter()
            .filter(|p| p.state != 'Z' && p.cmdline.contains(&format!("--page-size {marker}")))
            .map(|p| p.pid)
            .collect()
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The Python SDK client holding one connection, driven an action at a time.
struct Session {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<Value>,
}

impl Session {
    fn start(target: Value, mode: &str) -> Self {
        let mut scenario = target;
        scenario["mode"] = json!(mode);
        let mut child = Command::new(venv_bin("python"))
            .arg(clients().join("py-session.py"))
            .arg(scenario.to_string())
            .env_remove("MCPMUX_LOG")
            .env_remove("RUST_LOG")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("cannot start the Python SDK client");
        let (tx, lines) = mpsc::channel();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        std::thread::spawn(move || {
            for line in stdout.lines().map_while(Result::ok) {
                if let Ok(value) = serde_json::from_str::<Value>(&line) {
                    let _ = tx.send(value);
                }
            }
        });
        let mut session = Session {
            stdin: child.stdin.take(),
            child,
            lines,
        };
        let ready = session.next();
        assert_eq!(ready["ready"], true, "{ready}");
        session
    }

    fn next(&mut self) -> Value {
        self.lines
            .recv_timeout(CLIENT_DEADLINE)
            .unwrap_or_else(|_| panic!("the client said nothing in {CLIENT_DEADLINE:?}"))
    }

    fn ask(&mut self, action: Value) -> Value {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{action}").unwrap();
        stdin.flush().unwrap();
        self.next()
    }

    fn tools(&mut self) -> Vec<String> {
        let answer = self.ask(json!({"do": "list"}));
        serde_json::from_value(answer["tools"].clone())
            .unwrap_or_else(|_| panic!("not a listing: {answer}"))
    }

    fn call(&mut self, name: &str, arguments: Value) -> Value {
        self.ask(json!({"do": "call", "name": name, "arguments": arguments}))
    }

    /// Whether tools/list_changed came since the last look (waiting for it).
    fn heard_of_a_change(&mut self) -> bool {
        let answer = self.ask(json!({"do": "changed", "within": WITHIN.as_secs()}));
        answer["changed"] == true
    }

    fn pid_of(&mut self, server: &str) -> String {
        text_of(&self.call(&format!("mcp__{server}__pid"), json!({}))["result"])
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let done = eventually_blocking(Duration::from_secs(10), Duration::from_millis(10), || {
            self.child.try_wait().unwrap()
        });
        if done.is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// An edit adding a server reaches a client of `mode` over HTTP: it hears of the change,
/// lists the new tool and calls it on the same connection; the server kept keeps its process.
fn an_edit_adds_a_server_for_a_client(mode: &str) {
    let sandbox = Sandbox::with_user_servers(json!({ "t": entry("7401") }));
    let gateway = Gateway::start(&sandbox, &[]);
    let mut session = Session::start(gateway.target(), mode);
    let tools = session.tools();
    assert!(tools.contains(&"mcp__t__echo".to_string()), "{tools:?}");
    assert!(
        !tools.iter().any(|t| t.starts_with("mcp__u__")),
        "{tools:?}"
    );
    let t_pid = session.pid_of("t");

    configure(&sandbox, json!({ "t": entry("7401"), "u": entry("7402") }));
    assert!(session.heard_of_a_change(), "no tools/list_changed");
    let tools = session.tools();
    assert!(tools.contains(&"mcp__u__echo".to_string()), "{tools:?}");
    let answer = session.call("mcp__u__echo", json!({"text": "hot"}));
    assert_eq!(text_of(&answer["result"]), "hot", "{answer}");
    assert_eq!(
        session.pid_of("t"),
        t_pid,
        "the unchanged server was restarted"
    );
    let said = gateway.said("mcpmux: reloaded the config");
    assert!(
        said.contains("(a config file changed): added u; 1 unchanged"),
        "{said}"
    );
}

#[test]
fn an_edit_of_the_config_file_adds_a_server_to_an_open_http_session() {
    an_edit_adds_a_server_for_a_client("legacy");
}

#[test]
fn an_edit_of_the_config_file_reaches_a_2026_07_28_client_listening_for_changes() {
    an_edit_adds_a_server_for_a_client("auto");
}

#[test]
fn sighup_reloads_and_a_removed_server_is_stopped_while_the_session_stays() {
    let sandbox = Sandbox::with_user_servers(json!({ "t": entry("7411"), "u": entry("7412") }));
    let gateway = Gateway::start(&sandbox, &["--no-watch"]);
    let mut session = Session::start(gateway.target(), "legacy");
    assert!(session.tools().contains(&"mcp__u__echo".to_string()));
    let u_pids = gateway.servers_marked("7412");
    assert_eq!(u_pids.len(), 1, "u's process not found");
    let (_, before) = http_get(&gateway.url, "/metrics", &[]);
    assert!(unchunk(&before).contains("server=\"u\""), "{before}");

    configure(&sandbox, json!({ "t": entry("7411") }));
    gateway.hang_up();
    assert!(session.heard_of_a_change(), "no tools/list_changed");
    let tools = session.tools();
    assert!(
        !tools.iter().any(|t| t.starts_with("mcp__u__")),
        "{tools:?}"
    );
    let answer = session.call("mcp__u__echo", json!({"text": "gone"}));
    assert!(
        answer.get("result").is_none_or(|r| r["isError"] == true),
        "{answer}"
    );
    assert_eq!(
        text_of(&session.call("mcp__t__echo", json!({"text": "kept"}))["result"]),
        "kept"
    );
    let said = gateway.said("mcpmux: reloaded the config");
    assert!(said.contains("(SIGHUP): removed u; 1 unchanged"), "{said}");
    assert!(
        wait_gone(&u_pids, Duration::from_secs(10)).is_empty(),
        "the removed server's process is still there"
    );
    let (status, body) = http_get(&gateway.url, "/metrics", &[]);
    assert_eq!(status, 200, "{body}");
    let metrics = unchunk(&body);
    assert!(metrics.contains("server=\"t\""), "{metrics}");
    assert!(
        !metrics.contains("server=\"u\""),
        "the removed server still has series: {metrics}"
    );
}

#[test]
fn a_broken_edit_keeps_the_servers_and_the_session_and_the_next_good_one_applies() {
    let sandbox = Sandbox::with_user_servers(json!({ "t": entry("7421") }));
    let gateway = Gateway::start(&sandbox, &[]);
    let mut session = Session::start(gateway.target(), "legacy");
    let before = session.tools();
    let t_pid = session.pid_of("t");

    let path = sandbox.home.join(".claude.json");
    std::fs::write(&path, "{ \"mcpServers\": { \"t\": ").unwrap();
    let said = gateway.said("refused");
    assert!(said.contains("the servers running are kept"), "{said}");
    assert!(
        said.contains(".claude.json"),
        "the file is not named: {said}"
    );
    assert_eq!(session.tools(), before);
    assert_eq!(session.pid_of("t"), t_pid);

    configure(&sandbox, json!({ "t": entry("7421"), "u": entry("7422") }));
    assert!(
        session.heard_of_a_change(),
        "no tools/list_changed after the fix"
    );
    let answer = session.call("mcp__u__echo", json!({"text": "fixed"}));
    assert_eq!(text_of(&answer["result"]), "fixed", "{answer}");
    assert_eq!(session.pid_of("t"), t_pid);
}

#[test]
fn over_stdio_an_edit_reaches_the_client_that_spawned_the_gateway() {
    let sandbox = Sandbox::with_user_servers(json!({ "t": entry("7431") }));
    let mut session = Session::start(json!({ "stdio": stdio_target(&sandbox, &[]) }), "legacy");
    assert!(!session.tools().iter().any(|t| t.starts_with("mcp__u__")));

    configure(&sandbox, json!({ "t": entry("7431"), "u": entry("7432") }));
    assert!(session.heard_of_a_change(), "no tools/list_changed");
    assert!(session.tools().contains(&"mcp__u__echo".to_string()));
    let answer = session.call("mcp__u__echo", json!({"text": "piped"}));
    assert_eq!(text_of(&answer["result"]), "piped", "{answer}");
}

#[test]
fn in_passthrough_mode_a_reload_to_two_servers_is_refused_and_the_one_keeps_its_own_names() {
    let sandbox = Sandbox::with_user_servers(json!({ "t": entry("7431") }));
    let gateway = Gateway::start(&sandbox, &["--passthrough"]);
    let mut session = Session::start(gateway.target(), "legacy");
    let before = session.tools();
    assert!(before.iter().any(|name| name == "echo"), "{before:?}");

    configure(&sandbox, json!({ "t": entry("7431"), "u": entry("7432") }));
    let said = gateway.said("refused");
    assert!(said.contains("exactly one upstream server"), "{said}");
    assert_eq!(session.tools(), before);
    let answer = session.call("echo", json!({"text": "still one"}));
    assert_eq!(text_of(&answer["result"]), "still one", "{answer}");
    assert!(
        gateway.servers_marked("7432").is_empty(),
        "the second server was started"
    );
}

/// Saves `servers` as `path` with `mode`, replaced whole (one change for the watcher).
fn save_with_mode(path: &std::path::Path, servers: Value, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    let temp = path.with_extension("saving");
    std::fs::write(&temp, json!({ "mcpServers": servers }).to_string()).unwrap();
    std::fs::set_permissions(&temp, std::fs::Permissions::from_mode(mode)).unwrap();
    std::fs::rename(&temp, path).unwrap();
}

/// The case: a `-c` file at mode 0666 gained a server while `serve` ran, and its
/// command ran. Such an edit is refused, naming the `chmod`; once fixed, it applies.
#[test]
fn an_edit_of_a_config_file_anyone_can_write_is_refused_and_its_server_never_starts() {
    let sandbox = Sandbox::new();
    let path = sandbox.home.join("extra.json");
    save_with_mode(&path, json!({ "t": entry("7431") }), 0o600);
    let gateway = Gateway::start(&sandbox, &["-c", path.to_str().unwrap()]);
    let mut session = Session::start(gateway.target(), "legacy");
    let before = session.tools();
    assert!(before.contains(&"mcp__t__echo".to_string()), "{before:?}");

    save_with_mode(
        &path,
        json!({ "t": entry("7431"), "u": entry("7432") }),
        0o666,
    );
    let said = gateway.said("refused");
    assert!(said.contains("chmod go-w"), "{said}");
    assert!(said.contains("mode 0666"), "{said}");
    assert!(
        gateway.servers_marked("7432").is_empty(),
        "the server added to a file anyone can write was started"
    );
    assert_eq!(session.tools(), before);

    save_with_mode(
        &path,
        json!({ "t": entry("7431"), "u": entry("7432") }),
        0o600,
    );
    let said = gateway.said("mcpmux: reloaded the config");
    assert!(said.contains("added u"), "{said}");
}
