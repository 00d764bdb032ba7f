//! `mcpmux` with servers that fail beside one that works: each failure reported with why
//! (its status, its last stderr lines), a call to a failed server saying why, a server dying
//! mid-call.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::cli::*;
use crate::support;

use std::time::Duration;

use serde_json::{Value, json};
use support::{Run, Sandbox, assert_code, table_row};

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
