//! `mcpmux serve --http` passing tasks (SEP-2663) through, in front of two test servers in
//! conformance mode (`one`, `two`: their tools prefixed): a task id is good only in the session
//! whose call made it, requests about a task go to the server that runs it, and a task whose
//! server crashed is `failed` at once, naming the server. No official SDK speaks SEP-2663 yet
//! (the TypeScript and Python SDKs have the earlier, `tasks` capability draft), so the clients
//! here are raw JSON-RPC over HTTP: handshake-era sessions and stateless 2026-07-28 requests.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mcpmux_test_support as support;

use std::time::Duration;

use serde_json::{Value, json};
use support::*;

const TASKS: &str = "io.modelcontextprotocol/tasks";

/// A JSON-RPC client of the gateway: a handshake-era session (`Mcp-Session-Id`) or stateless
/// 2026-07-28 requests, declaring the Tasks extension.
struct Client {
    http: reqwest::Client,
    url: String,
    session: Option<String>,
    /// A handshake-era session (else stateless 2026-07-28 requests).
    handshake: bool,
    /// The capabilities each stateless request declares.
    capabilities: Value,
    next_id: u64,
}

impl Client {
    /// A handshake-era session that declared the extension at `initialize`.
    async fn session(url: &str) -> (Self, Value) {
        let mut client = Client {
            handshake: true,
            ..Client::stateless(url)
        };
        let initialized = client
            .request(
                "initialize",
                json!({"protocolVersion": "2025-11-25",
                       "capabilities": {"extensions": {TASKS: {}}},
                       "clientInfo": {"name": "tasks-test", "version": "1"}}),
            )
            .await;
        assert!(client.session.is_some(), "no session id: {initialized}");
        client
            .send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        (client, initialized)
    }

    /// Stateless 2026-07-28 requests, each declaring the extension in its `_meta`.
    fn stateless(url: &str) -> Self {
        Client {
            http: reqwest::Client::new(),
            url: url.to_string(),
            session: None,
            handshake: false,
            capabilities: json!({"extensions": {TASKS: {}}}),
            next_id: 1,
        }
    }

    /// Stateless 2026-07-28 requests declaring nothing.
    fn stateless_without_tasks(url: &str) -> Self {
        Client {
            capabilities: json!({}),
            ..Client::stateless(url)
        }
    }

    /// Sends `method` and returns the JSON-RPC response (`result` or `error`).
    async fn request(&mut self, method: &str, mut params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        if !self.handshake {
            params["_meta"] = json!({
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": self.capabilities,
                "io.modelcontextprotocol/clientInfo": {"name": "tasks-test", "version": "1"},
            });
        }
        let name = params
            .get("taskId")
            .or_else(|| params.get("name"))
            .and_then(Value::as_str)
            .map(str::to_string);
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let mut request = self.post(&message).header("mcp-method", method);
        if let Some(name) = name {
            request = request.header("mcp-name", name);
        }
        let mut response = request.send().await.unwrap();
        if let Some(session) = response.headers().get("mcp-session-id") {
            self.session = Some(session.to_str().unwrap().to_string());
        }
        let status = response.status();
        // The answer is one JSON body or an SSE stream carrying it; read until it is in.
        let mut body = String::new();
        while let Some(chunk) = response.chunk().await.unwrap() {
            body.push_str(&String::from_utf8_lossy(&chunk));
            if let Some(answer) = answer_to(&body, id) {
                return answer;
            }
        }
        answer_to(&body, id).unwrap_or_else(|| panic!("{method}: HTTP {status}, no answer: {body}"))
    }

    async fn send(&self, message: Value) {
        let status = self.post(&message).send().await.unwrap().status();
        assert!(status.is_success(), "{message}: HTTP {status}");
    }

    fn post(&self, message: &Value) -> reqwest::RequestBuilder {
        let version = if self.handshake {
            "2025-11-25"
        } else {
            "2026-07-28"
        };
        let mut request = self
            .http
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", version)
            .timeout(Duration::from_secs(30))
            .body(message.to_string());
        if let Some(session) = &self.session {
            request = request.header("mcp-session-id", session);
        }
        request
    }

    async fn call(&mut self, tool: &str, arguments: Value) -> Value {
        self.request("tools/call", json!({"name": tool, "arguments": arguments}))
            .await
    }

    /// `tools/call` that must answer with a task: its id.
    async fn start(&mut self, tool: &str, arguments: Value) -> String {
        let answer = self.call(tool, arguments).await;
        let result = &answer["result"];
        assert_eq!(result["resultType"], "task", "{answer}");
        result["taskId"].as_str().unwrap().to_string()
    }

    async fn get(&mut self, task: &str) -> Value {
        self.request("tasks/get", json!({"taskId": task})).await
    }

    /// `tasks/get` until `done` holds (within 20 s).
    async fn until(&mut self, task: &str, done: impl Fn(&Value) -> bool) -> Value {
        for _ in 0..200 {
            let answer = self.get(task).await;
            if done(&answer) {
                return answer;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("task {task} never got there: {}", self.get(task).await)
    }
}

/// The JSON-RPC response to `id` in `body` (a JSON document or SSE `data:` lines), if there.
fn answer_to(body: &str, id: u64) -> Option<Value> {
    let candidates = std::iter::once(body.trim()).chain(
        body.lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .map(str::trim),
    );
    candidates
        .filter_map(|text| serde_json::from_str::<Value>(text).ok())
        .find(|message| {
            message["id"] == id
                && (message.get("result").is_some() || message.get("error").is_some())
        })
}

fn code(answer: &Value) -> i64 {
    answer["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("not an error: {answer}"))
}

/// The gateway in front of `one` and `two`, the test server in conformance mode over stdio;
/// `one` carries a marker argument so its process can be told apart.
fn gateway() -> (Sandbox, Served) {
    let sandbox = Sandbox::with_user_servers(json!({
        "one": {"command": testserver(), "args": ["--conformance", "--page-size", "4101"]},
        "two": {"command": testserver(), "args": ["--conformance"]},
    }));
    let served = Served::start(&sandbox, &[]);
    (sandbox, served)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn a_task_id_is_good_only_in_the_session_whose_call_made_it() {
    let (_sandbox, served) = gateway();
    runtime().block_on(async {
        let (mut a, initialized) = Client::session(&served.url).await;
        assert!(
            initialized["result"]["capabilities"]["extensions"][TASKS].is_object(),
            "the gateway declares the extension its servers declare: {initialized}"
        );
        let (mut b, _) = Client::session(&served.url).await;
        let mut stateless = Client::stateless(&served.url);

        let task = a
            .start("mcp__one__slow_compute", json!({"seconds": 60}))
            .await;
        assert!(
            task.len() == 32 && task.chars().all(|c| c.is_ascii_hexdigit()),
            "the gateway's own id, not the server's: {task}"
        );
        assert_eq!(a.get(&task).await["result"]["status"], "working");

        // Another session, and a stateless client, cannot read, answer or cancel it: to them
        // it does not exist.
        for other in [&mut b, &mut stateless] {
            let read = other.get(&task).await;
            assert_eq!(code(&read), -32602, "{read}");
            let update = other
                .request(
                    "tasks/update",
                    json!({"taskId": task, "inputResponses": {}}),
                )
                .await;
            assert_eq!(code(&update), -32602, "{update}");
            let cancel = other.request("tasks/cancel", json!({"taskId": task})).await;
            assert_eq!(code(&cancel), -32602, "{cancel}");
        }
        assert_eq!(a.get(&task).await["result"]["status"], "working");

        // Its own session cancels it.
        let ack = a.request("tasks/cancel", json!({"taskId": task})).await;
        assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
        let cancelled = a.until(&task, |s| s["result"]["status"] != "working").await;
        assert_eq!(cancelled["result"]["status"], "cancelled", "{cancelled}");

        // A stateless client's task is its own the same way: the session cannot reach it.
        let mine = stateless
            .start("mcp__two__slow_compute", json!({"seconds": 0.1}))
            .await;
        assert_eq!(code(&a.get(&mine).await), -32602);
        let done = stateless
            .until(&mine, |s| s["result"]["status"] == "completed")
            .await;
        assert_eq!(
            done["result"]["result"]["content"][0]["text"], "computed after 0.1s",
            "{done}"
        );
    });
    let (status, stderr) = served.terminate(Duration::from_secs(10));
    assert!(status.success(), "{status}: {stderr}");
}

#[test]
fn requests_about_a_task_go_to_the_server_that_runs_it() {
    let (_sandbox, served) = gateway();
    runtime().block_on(async {
        let (mut a, _) = Client::session(&served.url).await;
        // A task on each server: each asks its own server (the other has no such task).
        let asking = a.start("mcp__two__confirm_delete", json!({})).await;
        let slow = a
            .start("mcp__one__slow_compute", json!({"seconds": 0.2}))
            .await;
        let state = a
            .until(&asking, |s| s["result"]["status"] == "input_required")
            .await;
        let request = &state["result"]["inputRequests"]["confirm"];
        assert_eq!(request["method"], "elicitation/create", "{state}");
        let ack = a
            .request(
                "tasks/update",
                json!({"taskId": asking, "inputResponses": {
                    "confirm": {"action": "accept", "content": {"confirm": "yes"}}}}),
            )
            .await;
        assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
        let done = a
            .until(&asking, |s| s["result"]["status"] == "completed")
            .await;
        assert_eq!(
            done["result"]["result"]["content"][0]["text"], "delete: yes",
            "{done}"
        );
        let done = a
            .until(&slow, |s| s["result"]["status"] == "completed")
            .await;
        assert_eq!(
            done["result"]["result"]["content"][0]["text"], "computed after 0.2s",
            "{done}"
        );

        // A tool that only runs as a task, called by a client without the extension: the
        // server's -32021 reaches it, saying what it needs.
        let mut plain = Client::stateless_without_tasks(&served.url);
        let refused = plain.call("mcp__one__failing_job", json!({})).await;
        assert_eq!(code(&refused), -32021, "{refused}");
        let required = &refused["error"]["data"]["requiredCapabilities"];
        assert!(required["extensions"][TASKS].is_object(), "{refused}");
        let message = refused["error"]["message"].as_str().unwrap();
        assert!(message.contains("server `one`"), "{message}");
        // Its task-supporting tools run at once for it.
        let at_once = plain
            .call("mcp__one__slow_compute", json!({"seconds": 0}))
            .await;
        assert_eq!(at_once["result"]["resultType"], "complete", "{at_once}");
    });
    let (status, stderr) = served.terminate(Duration::from_secs(10));
    assert!(status.success(), "{status}: {stderr}");
}

#[test]
fn a_task_whose_server_crashed_is_failed_at_once_naming_the_server() {
    let (_sandbox, served) = gateway();
    runtime().block_on(async {
        let (mut a, _) = Client::session(&served.url).await;
        let task = a
            .start("mcp__one__slow_compute", json!({"seconds": 60}))
            .await;
        let one = descendants(served.child.id() as i32)
            .into_iter()
            .find(|p| p.cmdline.contains("--conformance") && p.cmdline.contains("4101"))
            .expect("server one's process");
        unsafe {
            libc::kill(one.pid, libc::SIGKILL);
        }
        // The hub's call deadline is 120 s and the server restarts: an answer that waited for
        // either would not come within this test's 20 s.
        let failed = tokio::time::timeout(
            Duration::from_secs(20),
            a.until(&task, |s| s["result"]["status"] != "working"),
        )
        .await
        .expect("an answer, not a wait");
        assert_eq!(failed["result"]["status"], "failed", "{failed}");
        let message = failed["result"]["error"]["message"].as_str().unwrap();
        assert!(message.contains("server `one`"), "{message}");
        assert!(message.contains("is lost"), "{message}");
        assert!(message.contains("signal 9"), "{message}");
        assert!(failed["result"].get("result").is_none(), "{failed}");
        // It stays failed, and cancelling it is acknowledged: there is nothing left to stop.
        assert_eq!(a.get(&task).await["result"]["status"], "failed");
        let ack = a.request("tasks/cancel", json!({"taskId": task})).await;
        assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
        // The restarted server takes new tasks.
        let mut started = None;
        for _ in 0..200 {
            let answer = a
                .call("mcp__one__slow_compute", json!({"seconds": 0}))
                .await;
            if answer["result"]["resultType"] == "task" {
                started = answer["result"]["taskId"].as_str().map(str::to_string);
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let again = started.expect("the restarted server answers with a task");
        let done = a
            .until(&again, |s| s["result"]["status"] == "completed")
            .await;
        assert_eq!(done["result"]["status"], "completed", "{done}");
    });
    let (status, stderr) = served.terminate(Duration::from_secs(10));
    assert!(status.success(), "{status}: {stderr}");
}

#[test]
fn a_task_whose_http_server_went_away_gets_a_clear_error_at_once() {
    let upstream = testserver_http(&["--conformance"]);
    let sandbox = Sandbox::with_user_servers(json!({"one": {"type": "http", "url": upstream.url}}));
    let served = Served::start(&sandbox, &["--passthrough"]);
    runtime().block_on(async {
        let (mut a, _) = Client::session(&served.url).await;
        let task = a.start("slow_compute", json!({"seconds": 60})).await;
        drop(upstream);
        // Stateless HTTP has no session to end: each request says the server is unreachable
        // (then that its breaker is open), within the test's 20 s, not the call deadline's 120.
        let answer = tokio::time::timeout(Duration::from_secs(20), a.get(&task))
            .await
            .expect("an answer, not a wait");
        assert_eq!(code(&answer), -32603, "{answer}");
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(message.contains("server `one`"), "{message}");
        assert!(
            message.contains("connection lost during tasks/get"),
            "{message}"
        );
        assert!(
            !message.contains("Transport ["),
            "no transport type names: {message}"
        );
    });
    let (status, stderr) = served.terminate(Duration::from_secs(10));
    assert!(status.success(), "{status}: {stderr}");
}

#[test]
fn over_stdio_the_one_client_gets_its_tasks_through_the_passthrough() {
    use std::io::{BufRead, BufReader, Write};
    let sandbox = Sandbox::with_user_servers(json!({
        "c": {"command": testserver(), "args": ["--conformance"]},
    }));
    let mut child = sandbox
        .command(&["serve", "--passthrough"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let (lines, answers) = std::sync::mpsc::channel::<Value>();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if let Ok(message) = serde_json::from_str(&line) {
                let _ = lines.send(message);
            }
        }
    });
    let mut ask = |id: u64, method: &str, params: Value| -> Value {
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(stdin, "{message}").unwrap();
        loop {
            let answer = answers
                .recv_timeout(Duration::from_secs(20))
                .unwrap_or_else(|_| panic!("no answer to {method}"));
            if answer["id"] == id {
                return answer;
            }
        }
    };
    let initialized = ask(
        1,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {"extensions": {TASKS: {}}},
               "clientInfo": {"name": "tasks-test", "version": "1"}}),
    );
    assert!(
        initialized["result"]["capabilities"]["extensions"][TASKS].is_object(),
        "{initialized}"
    );
    let created = ask(
        2,
        "tools/call",
        json!({"name": "slow_compute", "arguments": {"seconds": 0.1}}),
    );
    let task = created["result"]["taskId"].as_str().unwrap().to_string();
    let mut done = Value::Null;
    for id in 3..200 {
        done = ask(id, "tasks/get", json!({"taskId": task}));
        if done["result"]["status"] == "completed" {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        done["result"]["result"]["content"][0]["text"], "computed after 0.1s",
        "{done}"
    );
    drop(stdin);
    let exited = eventually_blocking(Duration::from_secs(10), Duration::from_millis(10), || {
        child.try_wait().unwrap()
    });
    if exited.is_none() {
        let _ = child.kill();
        let _ = child.wait();
        panic!("mcpmux serve did not exit when its stdin closed");
    }
}
