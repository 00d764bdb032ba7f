//! `mcpmux serve` driven by the official SDK clients (TypeScript 1.32.2: the handshake era;
//! Python 2.3.0: 2026-07-28 by default, the handshake with `mode: legacy`), with the test
//! server as the upstream: listing and calling in every era over stdio and HTTP, progress,
//! cancellation, list_changed, failures, policy, scope. The client scripts live in
//! `crates/mcpmux-gateway/tests/clients/`; what they print is what the client was told.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mcpmux_test_support as support;

use std::time::{Duration, Instant};

use serde_json::json;
use support::*;

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

#[test]
fn a_python_client_cancel_reaches_the_upstream_call_in_both_eras_over_stdio_and_http() {
    let cancel = json!([
        {"do": "progress_then_cancel", "name": "mcp__t__slow",
         "arguments": {"ms": 20000, "steps": 100}},
        {"do": "call", "name": "mcp__t__echo", "arguments": {"text": "after"}},
    ]);
    for (mode, http) in [
        ("auto", false),
        ("legacy", false),
        ("auto", true),
        ("legacy", true),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("calls.jsonl");
        let sandbox = with_testserver(&["--call-log", log.to_str().unwrap()]);
        let served = http.then(|| Served::start(&sandbox, &[]));
        let target = match &served {
            Some(served) => served.target(),
            None => json!({ "stdio": stdio_target(&sandbox, &[]) }),
        };
        let lines = py_client(target, mode, cancel.clone());
        assert_eq!(lines[0]["cancelled"], true, "{mode} http={http}: {lines:?}");
        wait_log_blocking(&log, |l| l.iter().any(|e| e["cancelled"] == "slow"));
    }
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
fn an_entry_that_runs_mcpmux_serve_is_not_served_by_it() {
    // The client's config lists the gateway; the gateway reads that config too.
    let sandbox = Sandbox::with_user_servers(json!({
        "t": { "command": testserver(), "args": [] },
        "mcpmux": { "command": mcpmux_bin(), "args": ["serve"] },
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
