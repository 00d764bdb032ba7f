//! `mcpmux serve --http`: the door (a non-loopback address without a token, the bearer
//! token from a file or the environment), graceful shutdown (SIGTERM with a call in flight,
//! the grace period running out) and `--threads` (one thread by default, more asked for).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mcpmux_test_support as support;

use std::time::{Duration, Instant};

use serde_json::json;
use support::*;

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
fn on_several_threads_serve_answers_calls_and_stops_cleanly() {
    let sandbox = with_testserver(&[]);
    let none = sandbox.run_within(
        &["serve", "--http", "127.0.0.1:0", "--threads", "0"],
        Duration::from_secs(20),
    );
    assert_code(&none, 2);
    assert!(none.stderr.contains("--threads"), "{none:#?}");

    let served = Served::start(&sandbox, &["--threads", "2"]);
    let lines = ts_client(served.target(), list_and_echo());
    assert_listed_and_echoed(&lines, "TypeScript SDK, --threads 2");
    let (status, stderr) = served.terminate(Duration::from_secs(15));
    assert!(status.success(), "{status}: {stderr}");
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
