//! `mcpmux serve` over stdio, spoken to by hand (newline-delimited JSON-RPC on its stdin and
//! stdout) where an SDK client cannot show it: a signal while a call is in flight.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mcpmux_test_support as support;

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::*;

#[test]
fn sigterm_in_stdio_mode_answers_the_call_in_flight_then_reaps_every_server() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls.jsonl");
    let sandbox = Sandbox::with_user_servers(json!({
        "t": { "command": testserver(), "args": ["--call-log", log.to_str().unwrap()] }
    }));
    let mut cmd = sandbox.command(&["serve"]);
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    for message in [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
               "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                          "clientInfo": {"name": "by-hand", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
               "params": {"name": "mcp__t__slow", "arguments": {"ms": 800, "steps": 2}}}),
    ] {
        writeln!(stdin, "{message}").unwrap();
    }
    stdin.flush().unwrap();
    let called = eventually_blocking(Duration::from_secs(20), Duration::from_millis(10), || {
        (logged_calls(&log, "slow", None) > 0).then_some(())
    });
    assert!(called.is_some(), "the call never reached the server");
    let servers: std::collections::BTreeSet<i32> = descendants(child.id() as i32)
        .iter()
        .map(|p| p.pid)
        .collect();
    assert!(!servers.is_empty());

    let signalled = Instant::now();
    unsafe {
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
    // stdin stays open: the signal alone ends serving.
    let mut answers = Vec::new();
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        answers.push(serde_json::from_str::<Value>(&line.unwrap()).unwrap());
    }
    let status = child.wait().unwrap();
    assert!(status.success(), "{status}");
    assert!(
        signalled.elapsed() < Duration::from_secs(10),
        "took {:?}",
        signalled.elapsed()
    );
    let answer = answers
        .iter()
        .find(|a| a["id"] == 2)
        .unwrap_or_else(|| panic!("the call in flight was not answered: {answers:?}"));
    assert_eq!(
        answer["result"]["content"][0]["text"], "done after 2 steps",
        "{answer}"
    );
    assert!(
        wait_gone(&servers, Duration::from_secs(5)).is_empty(),
        "servers left behind"
    );
    drop(stdin);
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
    let mut cmd = sandbox.command(&["serve", "-vv"]);
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
