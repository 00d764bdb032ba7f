//! The `mcpmux` binary as a user runs it: what it prints on stdout and stderr and the exit code,
//! against the built-in demo server and the real fault-injecting test server.
//!
//! Every run gets its own HOME, XDG dirs and project directory, so no config of this machine
//! (or of another test) is read.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::collections::HashSet;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use support::{Run, Sandbox, assert_code, table_row};

/// Project files written and approved (`Sandbox` is the shared test support's).
trait ProjectFiles {
    fn mcp_json(&self, servers: Value);
    fn write(&self, name: &str, text: &str) -> PathBuf;
}

impl ProjectFiles for Sandbox {
    /// Writes `.mcp.json` in the project with these `mcpServers`.
    fn mcp_json(&self, servers: Value) {
        self.write(".mcp.json", &json!({ "mcpServers": servers }).to_string());
    }

    /// Writes a project file, and approves the project's servers as they now are, as the
    /// person who set the project up would (approval itself: cli_trust.rs).
    fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.project.join(name);
        std::fs::write(&path, text).unwrap();
        let trust = self.command(&["trust"]).output().unwrap();
        assert!(trust.status.success(), "{trust:?}");
        path
    }
}

fn testserver() -> String {
    support::testserver().display().to_string()
}

/// A stdio entry of `.mcp.json` running the test server with `args`.
fn testserver_entry(args: &[&str]) -> Value {
    json!({ "command": testserver(), "args": args })
}

/// A TOML basic string.
fn toml_str(text: &str) -> String {
    format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
}

fn toml_list(items: &[&str]) -> String {
    let items: Vec<String> = items.iter().map(|s| toml_str(s)).collect();
    format!("[{}]", items.join(", "))
}

/// The JSON array printed by `--json`.
fn json_array(run: &Run) -> Vec<Value> {
    let value = support::json(run);
    value
        .as_array()
        .unwrap_or_else(|| panic!("not a JSON array: {value}"))
        .clone()
}

fn server<'a>(servers: &'a [Value], name: &str) -> &'a Value {
    servers
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no server `{name}` in {servers:#?}"))
}

// ----- 1. a fresh machine: the built-in demo -----

#[test]
fn fresh_machine_tools_lists_the_demo_and_says_it_is_the_demo() {
    let sandbox = Sandbox::new();
    let run = sandbox.run(&["tools"]);
    assert_code(&run, 0);
    for tool in ["mcp__demo__echo", "mcp__demo__add", "mcp__demo__time"] {
        assert!(run.stdout.contains(tool), "{tool} missing: {run:#?}");
    }
    let tools: Vec<&str> = run
        .stdout
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(tools.len(), 3, "{run:#?}");
    assert!(
        run.stderr.contains("built-in demo"),
        "stderr should say it is the demo: {run:#?}"
    );
}

#[test]
fn fresh_machine_call_add_prints_the_sum() {
    let sandbox = Sandbox::new();
    let run = sandbox.run(&["call", "mcp__demo__add", r#"{"a":2,"b":3}"#]);
    assert_code(&run, 0);
    assert_eq!(run.stdout.trim(), "5", "{run:#?}");
}

#[test]
fn fresh_machine_servers_json_shows_the_demo_connected() {
    let sandbox = Sandbox::new();
    let run = sandbox.run(&["servers", "--json"]);
    assert_code(&run, 0);
    let servers = json_array(&run);
    assert_eq!(servers.len(), 1, "{servers:#?}");
    let demo = server(&servers, "demo");
    assert_eq!(demo["state"], "connected", "{demo:#}");
    assert_eq!(demo["tools"], 3, "{demo:#}");
}

/// A JSON value that refuses an object with the same key twice (RFC 8259: names SHOULD be
/// unique; `jq`, JavaScript and serde_json silently keep only one of them).
struct Strict;

impl<'de> serde::Deserialize<'de> for Strict {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(StrictVisitor)
    }
}

struct StrictVisitor;

impl<'de> serde::de::Visitor<'de> for StrictVisitor {
    type Value = Strict;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<Strict, E> {
        Ok(Strict)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Strict, E> {
        Ok(Strict)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Strict, E> {
        Ok(Strict)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Strict, E> {
        Ok(Strict)
    }
    fn visit_str<E>(self, _: &str) -> Result<Strict, E> {
        Ok(Strict)
    }
    fn visit_unit<E>(self) -> Result<Strict, E> {
        Ok(Strict)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Strict, A::Error> {
        while seq.next_element::<Strict>()?.is_some() {}
        Ok(Strict)
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Strict, A::Error> {
        let mut seen = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if !seen.insert(key.clone()) {
                return Err(serde::de::Error::custom(format!("duplicate key \"{key}\"")));
            }
            map.next_value::<Strict>()?;
        }
        Ok(Strict)
    }
}

/// `ServerStatus` flattens `ServerState`, whose `connected` variant already carries `era`,
/// `version` and `tools`, next to its own fields of the same names.
#[test]
fn servers_json_has_no_duplicate_keys() {
    let sandbox = Sandbox::new();
    let run = sandbox.run(&["servers", "--json"]);
    assert_code(&run, 0);
    if let Err(e) = serde_json::from_str::<Strict>(&run.stdout) {
        panic!(
            "`mcpmux servers --json` prints invalid JSON objects: {e}:\n{}",
            run.stdout
        );
    }
}

// ----- 2. a project `.mcp.json` with the test server -----

#[test]
fn project_server_is_listed_connected_in_the_servers_table() {
    let sandbox = Sandbox::new();
    sandbox.mcp_json(json!({ "ts": testserver_entry(&[]) }));
    let run = sandbox.run(&["servers"]);
    assert_code(&run, 0);
    let header: Vec<&str> = run
        .stdout
        .lines()
        .next()
        .unwrap()
        .split_whitespace()
        .collect();
    assert_eq!(
        header,
        [
            "NAME",
            "TRANSPORT",
            "ERA/VERSION",
            "STATE",
            "TOOLS",
            "SOURCE",
            "ERROR"
        ],
        "{run:#?}"
    );
    let row: Vec<&str> = table_row(&run.stdout, "ts").split_whitespace().collect();
    assert_eq!(row[1], "stdio", "{run:#?}");
    assert!(row[2].contains('/'), "era/version missing: {run:#?}");
    assert_eq!(row[3], "connected", "{run:#?}");
    assert!(row[4].parse::<usize>().unwrap() >= 6, "{run:#?}");
    assert!(row[5].ends_with(".mcp.json"), "source file: {run:#?}");
    assert_eq!(row[6], "(claude)", "source dialect: {run:#?}");
    assert_eq!(row.len(), 7, "a connected server has no error: {run:#?}");
    assert!(
        !run.stderr.contains("built-in demo"),
        "a configured project must not fall back to the demo: {run:#?}"
    );
}

#[test]
fn tools_of_one_server_as_json() {
    let sandbox = Sandbox::new();
    sandbox.mcp_json(json!({ "ts": testserver_entry(&[]) }));
    let run = sandbox.run(&["tools", "--server", "ts", "--json"]);
    assert_code(&run, 0);
    let tools = json_array(&run);
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    assert!(names.contains(&"mcp__ts__echo"), "{names:?}");
    assert!(tools.iter().all(|t| t["server"] == "ts"), "{tools:#?}");
    let echo = tools.iter().find(|t| t["name"] == "mcp__ts__echo").unwrap();
    assert!(
        echo["inputSchema"]["properties"]["text"].is_object(),
        "the schema should be there: {echo:#}"
    );
}

#[test]
fn tools_server_filter_hides_other_servers() {
    let sandbox = Sandbox::new();
    // Different arguments: identical servers would be started once (see the dedup tests).
    sandbox.mcp_json(json!({
        "one": testserver_entry(&[]),
        "two": testserver_entry(&["--stderr-lines", "1"]),
    }));
    let run = sandbox.run(&["tools", "--server", "two"]);
    assert_code(&run, 0);
    assert!(run.stdout.contains("mcp__two__echo"), "{run:#?}");
    assert!(!run.stdout.contains("mcp__one__"), "{run:#?}");
}

#[test]
fn call_echo_prints_the_text() {
    let sandbox = Sandbox::new();
    sandbox.mcp_json(json!({ "ts": testserver_entry(&[]) }));
    let run = sandbox.run(&["call", "mcp__ts__echo", r#"{"text":"hi"}"#]);
    assert_code(&run, 0);
    assert_eq!(run.stdout, "hi\n", "{run:#?}");
    assert_eq!(run.stderr, "", "a successful call is quiet: {run:#?}");
}

#[test]
fn call_reads_arguments_from_stdin() {
    let sandbox = Sandbox::new();
    sandbox.mcp_json(json!({ "ts": testserver_entry(&[]) }));
    let run = sandbox.run_with_stdin(&["call", "mcp__ts__echo", "-"], Some(r#"{"text":"piped"}"#));
    assert_code(&run, 0);
    assert_eq!(run.stdout, "piped\n", "{run:#?}");
}

#[test]
fn call_json_prints_the_structured_result() {
    let sandbox = Sandbox::new();
    sandbox.mcp_json(json!({ "ts": testserver_entry(&[]) }));
    let run = sandbox.run(&["call", "mcp__ts__add", r#"{"a":1.5,"b":2}"#, "--json"]);
    assert_code(&run, 0);
    let result: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(result["isError"], false, "{result:#}");
    assert_eq!(result["structuredContent"]["sum"], 3.5, "{result:#}");
    assert_eq!(result["content"][0]["text"], "3.5", "{result:#}");
}

// ----- 3. calls that go wrong -----

#[test]
fn tool_error_exits_1_and_says_is_error() {
    let sandbox = Sandbox::new();
    sandbox.mcp_json(json!({ "ts": testserver_entry(&[]) }));
    let run = sandbox.run(&["call", "mcp__ts__fail", r#"{"message":"disk full"}"#]);
    assert_code(&run, 1);
    assert!(
        run.stdout.contains("disk full"),
        "the tool's message: {run:#?}"
    );
    assert!(run.stderr.contains("isError"), "{run:#?}");
    assert!(run.stderr.contains("mcp__ts__fail"), "{run:#?}");
}

#[test]
fn tool_error_with_json_exits_1_and_prints_is_error_true() {
    let sandbox = Sandbox::new();
    sandbox.mcp_json(json!({ "ts": testserver_entry(&[]) }));
    let run = sandbox.run(&["call", "mcp__ts__fail", r#"{"message":"nope"}"#, "--json"]);
    assert_code(&run, 1);
    let result: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(result["isError"], true, "{result:#}");
}

#[test]
fn unknown_tool_exits_2_and_suggests_the_near_name() {
    let sandbox = Sandbox::new();
    sandbox.mcp_json(json!({ "ts": testserver_entry(&[]) }));
    let run = sandbox.run(&["call", "mcp__ts__ecko", r#"{"text":"hi"}"#]);
    assert_code(&run, 2);
    assert!(run.stderr.contains("mcp__ts__ecko"), "{run:#?}");
    assert!(
        run.stderr.contains("did you mean `mcp__ts__echo`"),
        "{run:#?}"
    );
    assert_eq!(run.stdout, "", "{run:#?}");
}

#[test]
fn bad_json_arguments_exit_2_with_a_clear_message() {
    let sandbox = Sandbox::new();
    sandbox.mcp_json(json!({ "ts": testserver_entry(&[]) }));
    let run = sandbox.run(&["call", "mcp__ts__echo", "{text: hi}"]);
    assert_code(&run, 2);
    assert!(
        run.stderr.contains("arguments are not valid JSON"),
        "{run:#?}"
    );
}

#[test]
fn non_object_arguments_exit_2() {
    let sandbox = Sandbox::new();
    let run = sandbox.run(&["call", "mcp__demo__echo", "[\"hi\"]"]);
    assert_code(&run, 2);
    assert!(run.stderr.contains("JSON object"), "{run:#?}");
}

#[test]
fn tools_of_an_unknown_server_exit_2() {
    let sandbox = Sandbox::new();
    sandbox.mcp_json(json!({ "ts": testserver_entry(&[]) }));
    let run = sandbox.run(&["tools", "--server", "nosuch"]);
    assert_code(&run, 2);
    assert!(run.stderr.contains("nosuch"), "{run:#?}");
}

#[test]
fn call_timeout_flag_bounds_the_call() {
    let sandbox = Sandbox::new();
    sandbox.mcp_json(json!({ "ts": testserver_entry(&[]) }));
    let run = sandbox.run(&["call", "mcp__ts__hang", "{}", "--timeout", "0.5"]);
    assert_code(&run, 2);
    assert!(run.stderr.contains("timed out after 500ms"), "{run:#?}");
    assert!(run.took < Duration::from_secs(10), "{run:#?}");
}

/// `--timeout 0` is not "a positive number of seconds" (the CLI's own words); today it is
/// taken, spent entirely on waiting for startup, and the user reads that the server "is
/// pending: not connected" — nothing about a timeout.
#[test]
fn zero_timeout_is_reported_as_a_timeout_problem() {
    let sandbox = Sandbox::new();
    sandbox.mcp_json(json!({ "ts": testserver_entry(&[]) }));
    let run = sandbox.run(&[
        "call",
        "mcp__ts__echo",
        r#"{"text":"hi"}"#,
        "--timeout",
        "0",
    ]);
    assert_code(&run, 2);
    let stderr = run.stderr.to_lowercase();
    assert!(
        stderr.contains("timeout") || stderr.contains("timed out"),
        "the message should be about the timeout: {run:#?}"
    );
}

// ----- 4. bad config -----

#[test]
fn entry_without_command_is_listed_beside_the_good_one() {
    let sandbox = Sandbox::new();
    sandbox.mcp_json(json!({
        "good": testserver_entry(&[]),
        "bad": { "args": ["--verbose"] },
    }));
    let run = sandbox.run(&["servers"]);
    assert_code(&run, 0);
    let good: Vec<&str> = table_row(&run.stdout, "good").split_whitespace().collect();
    assert_eq!(good[3], "connected", "{run:#?}");
    let bad = table_row(&run.stdout, "bad");
    assert!(bad.contains("failed"), "{run:#?}");
    assert!(
        bad.contains(r#"field "command" is missing"#),
        "the table names the field: {run:#?}"
    );

    let run = sandbox.run(&["servers", "--json"]);
    let servers = json_array(&run);
    let bad = server(&servers, "bad");
    assert_eq!(bad["state"], "failed", "{bad:#}");
    let error = bad["error"].as_str().unwrap();
    assert!(error.contains(".mcp.json"), "{error}");
    assert!(error.contains(r#"field "command" is missing"#), "{error}");

    let run = sandbox.run(&["call", "mcp__good__echo", r#"{"text":"still works"}"#]);
    assert_code(&run, 0);
    assert_eq!(run.stdout, "still works\n", "{run:#?}");
}

#[test]
fn broken_json_file_is_a_row_while_other_files_work() {
    let sandbox = Sandbox::new();
    sandbox.write(".mcp.json", "{\"mcpServers\": {\"x\": ");
    sandbox.write(
        "mcpmux.toml",
        &format!("[servers.good]\ncommand = {}\n", toml_str(&testserver())),
    );
    let run = sandbox.run(&["servers"]);
    assert_code(&run, 0);
    let good: Vec<&str> = table_row(&run.stdout, "good").split_whitespace().collect();
    assert_eq!(good[3], "connected", "{run:#?}");
    let broken = run
        .stdout
        .lines()
        .find(|l| l.contains(".mcp.json") && l.contains("failed"))
        .unwrap_or_else(|| panic!("no row naming .mcp.json: {run:#?}"));
    assert!(broken.contains("not valid JSON"), "{broken}");
    assert!(
        !run.stderr.contains("built-in demo"),
        "a broken config must not fall back to the demo: {run:#?}"
    );

    let run = sandbox.run(&["call", "mcp__good__add", r#"{"a":2,"b":3}"#]);
    assert_code(&run, 0);
    assert_eq!(run.stdout.trim(), "5", "{run:#?}");
}

#[test]
fn broken_json_file_alone_is_reported_not_replaced_by_the_demo() {
    let sandbox = Sandbox::new();
    sandbox.write(".mcp.json", "{ not json");
    let run = sandbox.run(&["tools"]);
    assert_code(&run, 0);
    assert!(!run.stdout.contains("mcp__demo__"), "{run:#?}");
    assert!(run.stderr.contains(".mcp.json"), "{run:#?}");
    assert!(run.stderr.contains("not valid JSON"), "{run:#?}");
}

#[test]
fn missing_config_file_is_reported() {
    let sandbox = Sandbox::new();
    sandbox.mcp_json(json!({ "ts": testserver_entry(&[]) }));
    let run = sandbox.run(&["servers", "--config", "missing.toml"]);
    let row = run
        .stdout
        .lines()
        .find(|l| l.contains("missing.toml"))
        .unwrap_or_else(|| panic!("no row for missing.toml: {run:#?}"));
    assert!(row.contains("no such file"), "{row}");
    let ts: Vec<&str> = table_row(&run.stdout, "ts").split_whitespace().collect();
    assert_eq!(ts[3], "connected", "{run:#?}");

    let run = sandbox.run(&["tools", "--config", "missing.toml"]);
    assert!(run.stderr.contains("missing.toml"), "{run:#?}");
    assert!(run.stdout.contains("mcp__ts__echo"), "{run:#?}");
}

/// A user who mistypes `--config` and calls a tool of that file is told only "no tool named
/// ..."; the unreadable file the user named is never mentioned.
#[test]
fn call_with_a_missing_config_file_says_so() {
    let sandbox = Sandbox::new();
    let run = sandbox.run(&[
        "call",
        "mcp__ts__echo",
        r#"{"text":"hi"}"#,
        "--config",
        "mcpmux.tml",
    ]);
    assert_code(&run, 2);
    assert!(
        run.stderr.contains("mcpmux.tml"),
        "the unreadable config file should be named: {run:#?}"
    );
}

// ----- 5. failing servers beside a working one -----

#[test]
fn failing_servers_are_reported_while_the_good_one_works() {
    let sandbox = Sandbox::new();
    let ts = testserver();
    sandbox.mcp_json(json!({
        "good": testserver_entry(&[]),
        "gone": { "command": "/nonexistent/mcpmux-no-such-server" },
        "crash": testserver_entry(&["--exit-at-startup", "3", "--stderr-lines", "2"]),
    }));
    let toml = sandbox.write(
        "hang.toml",
        &format!(
            "[servers.hang]\ncommand = {}\nargs = {}\nstartup_timeout = \"1s\"\n",
            toml_str(&ts),
            toml_list(&["--never-answer-initialize"]),
        ),
    );
    let toml = toml.to_str().unwrap();

    let run = sandbox.run(&["servers", "--config", toml]);
    assert_code(&run, 0);
    assert!(
        run.took < Duration::from_secs(10),
        "bounded by the 1s startup timeout: {run:#?}"
    );
    let good: Vec<&str> = table_row(&run.stdout, "good").split_whitespace().collect();
    assert_eq!(good[3], "connected", "{run:#?}");

    let gone = table_row(&run.stdout, "gone");
    assert!(gone.contains("failed"), "{run:#?}");
    assert!(gone.contains("not found"), "{run:#?}");

    let crash = table_row(&run.stdout, "crash");
    assert!(crash.contains("failed"), "{run:#?}");
    assert!(crash.contains("status 3"), "the exit status: {run:#?}");
    let tail = run
        .stdout
        .split_once("crash stderr")
        .unwrap_or_else(|| panic!("no stderr tail section for crash: {run:#?}"))
        .1;
    assert!(tail.contains("testserver stderr line 1"), "{run:#?}");
    assert!(tail.contains("testserver stderr line 2"), "{run:#?}");

    let hang = table_row(&run.stdout, "hang");
    assert!(hang.contains("failed"), "{run:#?}");
    assert!(hang.contains("startup timeout of 1s"), "{run:#?}");

    let run = sandbox.run(&["servers", "--json", "--config", toml]);
    let servers = json_array(&run);
    let crash = server(&servers, "crash");
    let tail: Vec<&str> = crash["stderr_tail"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        tail.contains(&"testserver stderr line 1") && tail.contains(&"testserver stderr line 2"),
        "{crash:#}"
    );

    let run = sandbox.run(&["tools", "--config", toml]);
    assert_code(&run, 0);
    assert!(run.stdout.contains("mcp__good__echo"), "{run:#?}");
    for name in ["gone", "crash", "hang"] {
        assert!(
            run.stderr.contains(&format!("server `{name}` is failed")),
            "{name} should be warned about: {run:#?}"
        );
    }
    assert!(run.took < Duration::from_secs(10), "{run:#?}");

    let run = sandbox.run(&[
        "call",
        "mcp__good__add",
        r#"{"a":2,"b":3}"#,
        "--config",
        toml,
    ]);
    assert_code(&run, 0);
    assert_eq!(run.stdout.trim(), "5", "{run:#?}");
    assert!(run.took < Duration::from_secs(10), "{run:#?}");
}

#[test]
fn calling_a_failed_server_says_why() {
    let sandbox = Sandbox::new();
    sandbox.mcp_json(json!({
        "good": testserver_entry(&[]),
        "crash": testserver_entry(&["--exit-at-startup", "3"]),
    }));
    let run = sandbox.run(&["call", "mcp__crash__echo", r#"{"text":"hi"}"#]);
    assert_code(&run, 2);
    assert!(run.stderr.contains("`crash`"), "{run:#?}");
    assert!(run.stderr.contains("failed"), "{run:#?}");
    assert!(run.stderr.contains("status 3"), "{run:#?}");
}

/// A server that dies during a call: the user must read its exit status and its last stderr
/// lines. Repeated because the status is lost in a race: the call's error is built as soon as
/// the pipe closes, before the reaper task has recorded the exit.
#[test]
fn a_server_dying_mid_call_is_reported_with_its_status_and_stderr() {
    let sandbox = Sandbox::new();
    sandbox.mcp_json(json!({ "ts": testserver_entry(&["--crash-on", "echo"]) }));
    for _ in 0..8 {
        let run = sandbox.run(&["call", "mcp__ts__echo", r#"{"text":"hi"}"#]);
        assert_code(&run, 2);
        assert!(run.stderr.contains("connection lost"), "{run:#?}");
        assert!(
            run.stderr.contains("crashing on a call to echo"),
            "{run:#?}"
        );
        assert!(
            run.stderr.contains("process exited with status 3"),
            "the exit status should be in the message: {run:#?}"
        );
    }
}

/// The last stderr line of a server that exits at startup is the one that says why; it must be
/// in the report every time, not only when the stderr reader wins the race with the reaper.
/// Runs many at once: under load the race shows up (the tail is read as soon as the exit is
/// seen, before the stderr reader task has drained the pipe).
#[test]
fn startup_failure_always_shows_the_last_stderr_lines() {
    let sandbox = Sandbox::new();
    sandbox.mcp_json(json!({
        "crash": testserver_entry(&["--exit-at-startup", "3", "--stderr-lines", "2"]),
    }));
    let expected = [
        "testserver stderr line 1",
        "testserver stderr line 2",
        "testserver: exiting at startup with code 3",
    ];
    for _ in 0..3 {
        let runs: Vec<Run> = std::thread::scope(|scope| {
            let threads: Vec<_> = (0..16)
                .map(|_| scope.spawn(|| sandbox.run(&["servers", "--json"])))
                .collect();
            threads.into_iter().map(|t| t.join().unwrap()).collect()
        });
        for run in runs {
            let servers = json_array(&run);
            let crash = server(&servers, "crash");
            let tail: Vec<&str> = crash["stderr_tail"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(Value::as_str)
                .collect();
            assert_eq!(tail, expected, "{crash:#}");
        }
    }
}

#[test]
fn home_config_is_read_and_project_overrides_it() {
    let sandbox = Sandbox::new();
    std::fs::write(
        sandbox.home.join(".claude.json"),
        json!({ "mcpServers": { "ts": { "command": "/nonexistent/from-home" } } }).to_string(),
    )
    .unwrap();
    let run = sandbox.run(&["servers"]);
    assert!(table_row(&run.stdout, "ts").contains("failed"), "{run:#?}");

    sandbox.mcp_json(json!({ "ts": testserver_entry(&[]) }));
    let run = sandbox.run(&["servers"]);
    let row: Vec<&str> = table_row(&run.stdout, "ts").split_whitespace().collect();
    assert_eq!(row[3], "connected", "the project entry wins: {run:#?}");
}

#[test]
fn verbose_flag_logs_to_stderr_only() {
    let sandbox = Sandbox::new();
    let run = sandbox.run(&["-vv", "call", "mcp__demo__echo", r#"{"text":"x"}"#]);
    assert_code(&run, 0);
    assert_eq!(run.stdout, "x\n", "logs must not reach stdout: {run:#?}");
    assert!(
        run.stderr.contains("DEBUG"),
        "debug logs expected: {run:#?}"
    );
}

/// `-v` counts: it takes no value, so `mcpmux -v tools` is the `tools` command, said louder.
#[test]
fn v_before_a_command_is_a_count_not_a_filter_that_swallows_the_command() {
    let sandbox = Sandbox::new();
    let run = sandbox.run(&["-v", "tools"]);
    assert_code(&run, 0);
    assert!(run.stdout.contains("mcp__demo__echo"), "{run:#?}");
    let run = sandbox.run(&["-vv", "tools"]);
    assert_code(&run, 0);
    assert!(run.stdout.contains("mcp__demo__echo"), "{run:#?}");
}

#[test]
fn log_flag_and_mcpmux_log_take_a_filter_and_a_malformed_one_is_refused() {
    let sandbox = Sandbox::new();
    let echo = ["call", "mcp__demo__echo", r#"{"text":"x"}"#];
    let run = sandbox.run(&[&["--log", "mcpmux=debug"][..], &echo].concat());
    assert_code(&run, 0);
    assert_eq!(run.stdout, "x\n", "{run:#?}");
    assert!(run.stderr.contains("DEBUG"), "{run:#?}");
    let run = sandbox.run_with_env(&echo, &[("MCPMUX_LOG", "mcpmux=debug")]);
    assert_code(&run, 0);
    assert!(run.stderr.contains("DEBUG"), "{run:#?}");
    let run = sandbox.run(&[&["--log", "mcpmux=loud"][..], &echo].concat());
    assert_code(&run, 2);
    assert!(run.stderr.contains("not a log filter"), "{run:#?}");
}

/// `mcpmux tools | head -1`: the reader goes away; `print!` then panics with a backtrace
/// instead of mcpmux exiting quietly. Every command that prints ends as if all was read:
/// exit 0, nothing on stderr about the pipe.
#[test]
fn every_command_ends_quietly_with_status_0_on_a_closed_stdout() {
    use std::os::fd::{FromRawFd, OwnedFd};
    let sandbox = Sandbox::new();
    let commands: &[&[&str]] = &[
        &["tools"],
        &["tools", "--format", "openai"],
        &["tools", "--json"],
        &["servers"],
        &["servers", "--json"],
        &["prompts"],
        &["call", "mcp__demo__echo", r#"{"text":"x"}"#],
        &["trust"],
        &["trust", "--revoke"],
        &["secret", "list"],
        &["add", "fs", "--", "echo", "hi"],
        &["remove", "fs"],
        &["completions", "bash"],
        &["man"],
        &["--help"],
        &["--version"],
    ];
    for args in commands {
        let mut fds = [0; 2];
        // SAFETY: `fds` has room for the two descriptors pipe(2) writes.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        // SAFETY: both descriptors were just opened by pipe(2) and are owned by nothing else.
        let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        drop(read);
        let output = sandbox
            .command(args)
            .stdin(Stdio::null())
            .stdout(Stdio::from(write))
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        let shown = args.join(" ");
        assert!(
            !stderr.contains("panicked") && !stderr.to_lowercase().contains("broken pipe"),
            "`mcpmux {shown}` with a closed stdout: {stderr}"
        );
        assert_eq!(output.status.code(), Some(0), "`mcpmux {shown}`: {stderr}");
    }
}

// ----- tool surface -----

#[test]
fn tools_export_for_each_provider() {
    let sandbox = Sandbox::new();
    sandbox.mcp_json(json!({ "ts": testserver_entry(&[]) }));
    for provider in ["anthropic", "openai", "openai-strict", "gemini"] {
        let run = sandbox.run(&["tools", "--format", provider]);
        assert_code(&run, 0);
        let tools: Vec<Value> = serde_json::from_str(&run.stdout)
            .unwrap_or_else(|e| panic!("{provider}: not JSON ({e}): {run:#?}"));
        assert!(tools.len() >= 10, "{provider}: {}", tools.len());
        let echo = match provider {
            "anthropic" => tools.iter().find(|t| t["name"] == "mcp__ts__echo").cloned(),
            "gemini" => tools.iter().find(|t| t["name"] == "mcp__ts__echo").cloned(),
            _ => tools
                .iter()
                .find(|t| t["function"]["name"] == "mcp__ts__echo")
                .cloned(),
        };
        assert!(echo.is_some(), "{provider}: no echo in {}", run.stdout);
    }
    let run = sandbox.run(&["tools", "--format", "cobol"]);
    assert_code(&run, 2);
    assert!(run.stderr.contains("openai-strict"), "{run:#?}");
}

#[test]
fn ask_rules_refuse_without_a_terminal_unless_yes() {
    let sandbox = Sandbox::new();
    let server = testserver();
    sandbox.write(
        "mcpmux.toml",
        &format!(
            "[servers.ts]\ncommand = {}\n\n[policy]\nask = [\"mcp__ts__add\"]\ndeny = [\"mcp__ts__fail\"]\n",
            toml_str(&server)
        ),
    );
    let run = sandbox.run(&["call", "mcp__ts__add", r#"{"a":1,"b":2}"#]);
    assert_code(&run, 2);
    assert!(run.stderr.contains("needs approval"), "{run:#?}");
    let run = sandbox.run(&["--yes", "call", "mcp__ts__add", r#"{"a":1,"b":2}"#]);
    assert_code(&run, 0);
    assert_eq!(run.stdout.trim(), "3");
    let run = sandbox.run(&["--yes", "call", "mcp__ts__fail", "{}"]);
    assert_code(&run, 2);
    assert!(
        run.stderr.contains("denied by policy rule `mcp__ts__fail`"),
        "{run:#?}"
    );
}

#[test]
fn call_with_a_scope_refuses_a_tool_outside_it_and_tools_lists_only_the_scopes() {
    let sandbox = Sandbox::new();
    sandbox.mcp_json(json!({
        "deploy": testserver_entry(&[]),
        "notes": testserver_entry(&["--stderr-lines", "1"]),
    }));
    sandbox.write(
        "mcpmux.toml",
        "[servers.deploy]\nstages = [\"build\"]\nagents = [\"coder\"]\n",
    );
    let refused = sandbox.run(&[
        "call",
        "mcp__deploy__echo",
        r#"{"text":"ship"}"#,
        "--scope",
        "plan/coder",
    ]);
    assert_code(&refused, 2);
    assert!(
        refused
            .stderr
            .contains("`mcp__deploy__echo` is outside scope `plan/coder`"),
        "{refused:#?}"
    );
    assert!(!refused.stdout.contains("ship"), "{refused:#?}");
    let allowed = sandbox.run(&[
        "call",
        "mcp__deploy__echo",
        r#"{"text":"ship"}"#,
        "--scope",
        "build/coder",
    ]);
    assert_code(&allowed, 0);
    assert!(allowed.stdout.contains("ship"), "{allowed:#?}");
    let listed = sandbox.run(&["tools", "--json", "--scope", "plan/coder"]);
    assert_code(&listed, 0);
    let servers: Vec<Value> = json_array(&listed)
        .iter()
        .map(|t| t["server"].clone())
        .collect();
    assert!(servers.contains(&json!("notes")), "{servers:?}");
    assert!(!servers.contains(&json!("deploy")), "{servers:?}");
    let bad = sandbox.run(&["tools", "--scope", "a/b/c"]);
    assert_code(&bad, 2);
    assert!(bad.stderr.contains("STAGE/AGENT"), "{bad:#?}");
}
