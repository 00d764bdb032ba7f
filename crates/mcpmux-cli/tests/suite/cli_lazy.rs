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
