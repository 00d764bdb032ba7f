//! The `mcpmux` binary as a user runs it: what it prints on stdout and stderr and the exit code,
//! against the built-in demo server and the real fault-injecting test server: a fresh machine
//! (the demo), and a project's `.mcp.json` listed and called. The helpers here are shared by the
//! other `cli_*` files of this kind: calls that go wrong (`cli_call_errors`), bad configs
//! (`cli_config`), failing servers (`cli_failing`), the shared flags (`cli_flags`), the tool
//! surface (`cli_surface`).
//!
//! Every run gets its own HOME, XDG dirs and project directory, so no config of this machine
//! (or of another test) is read.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::collections::HashSet;
use std::path::PathBuf;

use serde_json::{Value, json};
use support::{Run, Sandbox, assert_code, table_row};

/// Project files written and approved (`Sandbox` is the shared test support's).
pub(crate) trait ProjectFiles {
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

pub(crate) fn testserver() -> String {
    support::testserver().display().to_string()
}

/// A stdio entry of `.mcp.json` running the test server with `args`.
pub(crate) fn testserver_entry(args: &[&str]) -> Value {
    json!({ "command": testserver(), "args": args })
}

/// A TOML basic string.
pub(crate) fn toml_str(text: &str) -> String {
    format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
}

pub(crate) fn toml_list(items: &[&str]) -> String {
    let items: Vec<String> = items.iter().map(|s| toml_str(s)).collect();
    format!("[{}]", items.join(", "))
}

/// The JSON array printed by `--json`.
pub(crate) fn json_array(run: &Run) -> Vec<Value> {
    let value = support::json(run);
    value
        .as_array()
        .unwrap_or_else(|| panic!("not a JSON array: {value}"))
        .clone()
}

pub(crate) fn server<'a>(servers: &'a [Value], name: &str) -> &'a Value {
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
