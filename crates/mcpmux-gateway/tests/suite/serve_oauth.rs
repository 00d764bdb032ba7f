//! `mcpmux serve --http` with the door's newer flags, the real binary: `--oauth-issuer` (a
//! real authorization server on 127.0.0.1, the Python SDK client with a token), `--rate-limit`
//! and `--access-log` (its lines on stderr: what they carry, and never a token).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mcpmux_test_support as support;

use std::time::Duration;

use crate::support::Issuer;
use serde_json::{Value, json};
use support::*;

/// The access log lines (`mcpmux::access`, JSON) among what `mcpmux serve` wrote on stderr.
fn access_lines(stderr: &str) -> Vec<Value> {
    stderr
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|line| line["target"] == "mcpmux::access")
        .collect()
}

#[test]
fn with_oauth_the_python_sdk_calls_with_a_token_and_each_request_is_logged_without_it() {
    let issuer = Issuer::start();
    let sandbox = with_testserver(&[]);
    let served = Served::start(
        &sandbox,
        &["--oauth-issuer", &issuer.url, "--access-log", "json"],
    );
    let token = issuer.token(&served.url, json!({"sub": "alice"}));
    let (status, answer) = post_initialize(&served.url, &[]);
    assert_eq!(status, 401, "{answer}");
    assert!(answer.contains("resource_metadata="), "{answer}");

    let mut target = served.target();
    target["headers"] = json!({"Authorization": format!("Bearer {token}")});
    let lines = py_client(target, "legacy", list_and_echo());
    assert_listed_and_echoed(&lines, "the Python SDK client with a token");
    // A tool name no one should print as it is.
    let (status, _) = post_initialize(
        &served.url,
        &[("Authorization", &format!("Bearer {token}"))],
    );
    assert_eq!(status, 200);
    let hostile = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                         "params": {"name": "evil\u{1b}]0;owned\u{7}\r\nforged line", "arguments": {}}});
    let raw = reqwest_free_post(&served.url, &hostile.to_string(), &token);
    assert!(raw.starts_with("HTTP/1.1 "), "{raw}");

    let (exit, stderr) = served.terminate(Duration::from_secs(15));
    assert!(exit.success(), "{exit}: {stderr}");
    assert!(!stderr.contains(&token), "the token was logged: {stderr}");
    let signature = token.rsplit('.').next().unwrap();
    assert!(!stderr.contains(signature), "part of the token was logged");
    let lines = access_lines(&stderr);
    let refused = lines
        .iter()
        .find(|l| l["status"] == 401)
        .unwrap_or_else(|| panic!("no 401 line: {stderr}"));
    assert_eq!(refused["client"], "ip:127.0.0.1", "{refused}");
    assert_eq!(refused["path"], "/mcp");
    let call = lines
        .iter()
        .find(|l| l["rpc"] == "tools/call" && l["tool"] == "mcp__t__echo")
        .unwrap_or_else(|| panic!("no tools/call line: {stderr}"));
    assert_eq!(call["client"], "sub:alice", "{call}");
    assert_eq!(call["method"], "POST");
    assert_eq!(call["status"], 200);
    assert!(
        call["session"].as_str().is_some_and(|s| !s.is_empty()),
        "{call}"
    );
    assert!(call["duration_ms"].as_f64().is_some(), "{call}");
    assert_eq!(call["peer"], "127.0.0.1");
    let evil = lines
        .iter()
        .find(|l| l["tool"].as_str().is_some_and(|t| t.starts_with("evil")))
        .unwrap_or_else(|| panic!("no line for the hostile call: {stderr}"));
    let tool = evil["tool"].as_str().unwrap();
    assert!(!tool.chars().any(char::is_control), "{tool:?}");
    assert!(tool.contains("forged line"), "{tool:?}");
}

#[test]
fn rate_limit_flags_give_429_and_text_access_lines_say_so() {
    let sandbox = with_testserver(&[]);
    let served = Served::start(
        &sandbox,
        &["--rate-limit", "1/h", "--rate-burst", "2", "--access-log"],
    );
    assert_eq!(post_initialize(&served.url, &[]).0, 200);
    assert_eq!(post_initialize(&served.url, &[]).0, 200);
    let (status, answer) = post_initialize(&served.url, &[]);
    assert_eq!(status, 429, "{answer}");
    assert!(
        answer.to_ascii_lowercase().contains("retry-after: "),
        "{answer}"
    );
    assert!(answer.contains("rate limit exceeded"), "{answer}");
    let (exit, stderr) = served.terminate(Duration::from_secs(15));
    assert!(exit.success(), "{exit}: {stderr}");
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("mcpmux::access"))
        .collect();
    // One line per request, written when its answer is done (in any order).
    assert_eq!(lines.len(), 3, "{stderr}");
    assert_eq!(
        lines.iter().filter(|l| l.contains("status=429")).count(),
        1,
        "{stderr}"
    );
    assert_eq!(
        lines.iter().filter(|l| l.contains("status=200")).count(),
        2,
        "{stderr}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains("rpc=\"initialize\"") && l.contains("client=\"ip:127.0.0.1\"")),
        "{stderr}"
    );
}

#[test]
fn serve_refuses_bad_oauth_and_rate_settings_before_listening() {
    let sandbox = with_testserver(&[]);
    let plain = sandbox.run_within(
        &[
            "serve",
            "--http",
            "127.0.0.1:0",
            "--oauth-issuer",
            "http://auth.example.com",
        ],
        Duration::from_secs(20),
    );
    assert_code(&plain, 2);
    assert!(
        plain
            .stderr
            .contains("--oauth-issuer http://auth.example.com"),
        "{plain:#?}"
    );
    assert!(plain.stderr.contains("https"), "{plain:#?}");
    assert!(plain.stdout.is_empty(), "{plain:#?}");
    let rate = sandbox.run_within(
        &[
            "serve",
            "--http",
            "127.0.0.1:0",
            "--rate-limit",
            "50 per second",
        ],
        Duration::from_secs(20),
    );
    assert_code(&rate, 2);
    assert!(rate.stderr.contains("50/s"), "{rate:#?}");
}

/// A raw `POST` of `body` with `token` (the session-less request no SDK would send): the
/// whole answer.
fn reqwest_free_post(url: &str, body: &str, token: &str) -> String {
    use std::io::{Read, Write};
    let rest = url.strip_prefix("http://").unwrap();
    let (authority, path) = rest.split_at(rest.find('/').unwrap());
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nAuthorization: Bearer {token}\r\n\
         MCP-Protocol-Version: 2025-06-18\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let mut stream = std::net::TcpStream::connect(authority).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer
}
