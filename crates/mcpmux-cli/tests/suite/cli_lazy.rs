//! `mcpmux call` starts only the server the call goes to, and a warm `mcpmux tools` answers
//! from the tool cache without starting anything, against real test server processes. Whether
//! a server started is read from a file its command line creates as it starts.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use support::Sandbox;

/// A stdio entry that creates `marker` when it starts, then becomes the test server.
fn marking_server(marker: &Path, args: &[&str]) -> Value {
    let mut script = format!(
        "touch '{}' && exec '{}'",
        marker.display(),
        support::testserver().display()
    );
    for arg in args {
        script.push_str(&format!(" '{arg}'"));
    }
    json!({ "command": "sh", "args": ["-c", script] })
}

struct Servers {
    sandbox: Sandbox,
    fast: PathBuf,
    slow: PathBuf,
}

/// A project with a fast server and one that takes `delay_ms` to start, each marking its start.
fn two_servers(delay_ms: &str) -> Servers {
    let sandbox = Sandbox::new();
    let fast = sandbox.project.join("fast.started");
    let slow = sandbox.project.join("slow.started");
    sandbox.project_servers(json!({
        "fast": marking_server(&fast, &[]),
        "slow": marking_server(&slow, &["--startup-delay-ms", delay_ms]),
    }));
    Servers {
        sandbox,
        fast,
        slow,
    }
}

#[test]
fn a_call_starts_only_the_server_it_goes_to() {
    let s = two_servers("0");
    let run = s
        .sandbox
        .run(&["call", "mcp__fast__echo", r#"{"text":"only me"}"#]);
    assert_eq!(run.code, Some(0), "{run:#?}");
    assert_eq!(run.stdout, "only me\n");
    assert!(s.fast.exists());
    assert!(!s.slow.exists(), "the other server was started: {run:#?}");
}

#[test]
fn a_warm_tools_lists_from_the_cache_without_starting_any_server() {
    let s = two_servers("200");
    let cold = s.sandbox.run(&["tools"]);
    assert_eq!(cold.code, Some(0), "{cold:#?}");
    assert!(cold.stdout.contains("mcp__slow__echo"), "{cold:#?}");
    assert!(!cold.stderr.contains("tool cache"), "{cold:#?}");
    std::fs::remove_file(&s.fast).unwrap();
    std::fs::remove_file(&s.slow).unwrap();

    let warm = s.sandbox.run(&["tools"]);
    assert_eq!(warm.code, Some(0), "{warm:#?}");
    assert_eq!(warm.stdout, cold.stdout, "the same tools, from the cache");
    assert!(
        warm.stderr
            .contains("the tools of fast, slow are from the tool cache"),
        "{warm:#?}"
    );
    assert!(!s.fast.exists() && !s.slow.exists(), "a server was started");

    let json = s.sandbox.run(&["tools", "--json"]);
    let tools: Vec<Value> = serde_json::from_str(&json.stdout).unwrap();
    assert!(tools.iter().all(|t| t["cached"] == true), "{tools:#?}");

    // A call through a cached tool starts its server and uses what it lists now.
    let call = s
        .sandbox
        .run(&["call", "mcp__slow__echo", r#"{"text":"woken"}"#]);
    assert_eq!((call.code, call.stdout.as_str()), (Some(0), "woken\n"));
    assert!(s.slow.exists() && !s.fast.exists());

    let fresh = s.sandbox.run(&["--no-cache", "tools", "--json"]);
    let tools: Vec<Value> = serde_json::from_str(&fresh.stdout).unwrap();
    assert!(
        tools.iter().all(|t| t.get("cached").is_none()),
        "{tools:#?}"
    );
    assert!(s.fast.exists(), "--no-cache asks every server");
}

#[test]
fn servers_shows_a_lazy_server_idle_with_its_cached_tools() {
    let s = two_servers("0");
    assert_eq!(s.sandbox.run(&["tools"]).code, Some(0));
    s.sandbox.write_file(
        &s.sandbox.project.join("mcpmux.toml"),
        "[servers.slow]\nlazy = true\n",
    );
    // The project's mcpmux.toml adjusts a project server: approve the project as it is now.
    let trust = s.sandbox.run_with_stdin(&["trust"], Some("y\n"));
    assert_eq!(trust.code, Some(0), "{trust:#?}");
    std::fs::remove_file(&s.slow).unwrap();

    let run = s.sandbox.run(&["servers", "--json"]);
    assert_eq!(run.code, Some(0), "{run:#?}");
    let rows: Vec<Value> = serde_json::from_str(&run.stdout).unwrap();
    let slow = rows.iter().find(|r| r["name"] == "slow").unwrap();
    assert_eq!(slow["state"], "idle", "{rows:#?}");
    assert!(slow["tools"].as_u64().unwrap() > 0 && slow["cached_at"].is_u64());
    assert_eq!(
        rows.iter().find(|r| r["name"] == "fast").unwrap()["state"],
        "connected"
    );
    assert!(!s.slow.exists());

    let table = s.sandbox.run(&["servers"]);
    let line = table
        .stdout
        .lines()
        .find(|l| l.starts_with("slow"))
        .unwrap();
    assert!(line.contains("idle") && line.contains("(cached)"), "{line}");
}

/// The tool cache's files, one per server.
fn cache_files(sandbox: &Sandbox) -> Vec<PathBuf> {
    let dir = sandbox.home.join(".cache/mcpmux/tools");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files
}

/// Writes bytes that are not JSON over every cached list; their number.
fn spoil_caches(sandbox: &Sandbox) -> usize {
    let files = cache_files(sandbox);
    for file in &files {
        std::fs::write(file, "{not json").unwrap();
    }
    files.len()
}

/// The debug log's lines about a cached list that was read and found bad, for `server`.
fn spoiled_reads<'a>(stderr: &'a str, server: &str) -> Vec<&'a str> {
    stderr
        .lines()
        .filter(|l| {
            l.contains("corrupt tool cache entry") && l.contains(&format!("server={server}"))
        })
        .collect()
}

#[test]
fn tools_of_one_server_reads_and_starts_only_that_server() {
    let s = two_servers("0");
    assert_eq!(s.sandbox.run(&["tools"]).code, Some(0));
    assert_eq!(spoil_caches(&s.sandbox), 2);
    std::fs::remove_file(&s.fast).unwrap();
    std::fs::remove_file(&s.slow).unwrap();

    let run = s
        .sandbox
        .run(&["--log", "mcpmux=debug", "tools", "-s", "fast", "--json"]);
    assert_eq!(run.code, Some(0), "{run:#?}");
    let tools: Vec<Value> = serde_json::from_str(&run.stdout).unwrap();
    assert!(
        tools.iter().any(|t| t["name"] == "mcp__fast__echo"),
        "{tools:#?}"
    );
    assert!(tools.iter().all(|t| t["server"] == "fast"), "{tools:#?}");
    assert!(s.fast.exists(), "its own list is bad: the server is asked");
    assert!(!s.slow.exists(), "the other server was started: {run:#?}");
    assert!(
        spoiled_reads(&run.stderr, "slow").is_empty(),
        "{}",
        run.stderr
    );

    // The same log does say when a listing reads that server's bad list.
    let all = s.sandbox.run(&["--log", "mcpmux=debug", "tools", "--json"]);
    assert_eq!(all.code, Some(0), "{all:#?}");
    assert!(
        !spoiled_reads(&all.stderr, "slow").is_empty(),
        "{}",
        all.stderr
    );

    let unknown = s.sandbox.run(&["tools", "-s", "nope"]);
    assert_eq!(unknown.code, Some(2), "{unknown:#?}");
    assert!(unknown.stderr.contains("nope"), "{unknown:#?}");
}

#[test]
fn a_call_among_many_servers_reads_none_of_their_cached_lists() {
    let sandbox = Sandbox::new();
    let marks = sandbox.project.join("marks");
    std::fs::create_dir(&marks).unwrap();
    let mut servers = serde_json::Map::new();
    for i in 0..12 {
        let name = format!("s{i}");
        let marker = marks.join(&name);
        servers.insert(name, marking_server(&marker, &[]));
    }
    sandbox.project_servers(Value::Object(servers));
    assert_eq!(sandbox.run(&["tools"]).code, Some(0));
    assert_eq!(spoil_caches(&sandbox), 12);
    // One cannot be read at all: a folder where its file was.
    let unreadable = cache_files(&sandbox).remove(0);
    std::fs::remove_file(&unreadable).unwrap();
    std::fs::create_dir(&unreadable).unwrap();
    for mark in std::fs::read_dir(&marks).unwrap() {
        std::fs::remove_file(mark.unwrap().path()).unwrap();
    }

    let run = sandbox.run(&[
        "--log",
        "mcpmux=debug",
        "call",
        "mcp__s7__echo",
        r#"{"text":"among many"}"#,
    ]);
    assert_eq!(
        (run.code, run.stdout.as_str()),
        (Some(0), "among many\n"),
        "{run:#?}"
    );
    let started: Vec<_> = std::fs::read_dir(&marks)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(started, ["s7"], "{run:#?}");
    let read: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| {
            l.contains("corrupt tool cache entry") || l.contains("cannot read the tool cache entry")
        })
        .collect();
    assert!(read.is_empty(), "a cached list was read: {read:#?}");
}
