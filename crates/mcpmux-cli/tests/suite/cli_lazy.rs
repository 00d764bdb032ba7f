//! `mcpmux call` starts only the server the call goes to (and reads only the config entries its
//! name may belong to), a warm `mcpmux tools` answers from the tool cache without starting
//! anything, and a listing of many servers prints what the hub lists, byte for byte, against
//! real test server processes. Whether
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

/// Servers of a one-call test: `t` and `t__x` (whose tools' names both start `mcp__t__`), each
/// marking its start, and `bad`, an entry with a mistyped key. In mcpmux.toml, the strict file.
fn focused_servers(sandbox: &Sandbox, marks: &Path) -> String {
    let entry = |name: &str| {
        format!(
            "[servers.{}]\ncommand = \"sh\"\nargs = [\"-c\", \"touch '{}' && exec '{}'\"]\n\n",
            toml_key(name),
            marks.join(name).display(),
            support::testserver().display()
        )
    };
    let text = format!(
        "{}{}[servers.bad]\ncomand = \"{}\"\n",
        entry("t"),
        entry("t__x"),
        support::testserver().display()
    );
    std::fs::write(sandbox.home.join("servers.toml"), &text).unwrap();
    sandbox.home.join("servers.toml").display().to_string()
}

fn toml_key(name: &str) -> String {
    format!("\"{name}\"")
}

fn started(marks: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(marks)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// A call reads only the entries its tool's name may belong to: a broken other entry is not
/// even read when the call works (and, as before, not mentioned), and is named, with what is
/// wrong with it, when the call fails, as a call that read every entry says it.
#[test]
fn a_call_reads_only_the_entries_its_name_may_belong_to() {
    let sandbox = Sandbox::new();
    let marks = sandbox.project.join("marks");
    std::fs::create_dir(&marks).unwrap();
    let config = focused_servers(&sandbox, &marks);
    let call = |name: &str| {
        sandbox.run(&[
            "--config",
            &config,
            "--log",
            "mcpmux=debug",
            "call",
            name,
            r#"{"text":"mine"}"#,
        ])
    };

    let run = call("mcp__t__x__echo");
    assert_eq!(
        (run.code, run.stdout.as_str()),
        (Some(0), "mine\n"),
        "{run:#?}"
    );
    assert_eq!(
        started(&marks),
        ["t__x"],
        "the longest prefix's server: {run:#?}"
    );
    assert!(
        !run.stderr.contains("comand"),
        "the broken other entry was read: {run:#?}"
    );

    let run = call("mcp__t__echo");
    assert_eq!(
        (run.code, run.stdout.as_str()),
        (Some(0), "mine\n"),
        "{run:#?}"
    );
    assert_eq!(started(&marks), ["t", "t__x"], "{run:#?}");

    let run = call("mcp__t__no_such_tool");
    assert_eq!(run.code, Some(2), "{run:#?}");
    assert!(
        run.stderr.contains("server `bad` is failed")
            && run
                .stderr
                .contains(r#"unknown key "comand": did you mean "command"?"#),
        "a failed call names the broken other entry: {run:#?}"
    );

    // The broken entry itself, called: its own error, as ever.
    let run = call("mcp__bad__echo");
    assert_eq!(run.code, Some(2), "{run:#?}");
    assert!(run.stderr.contains(r#"unknown key "comand""#), "{run:#?}");
    // A name no entry explains: every entry is read (and the broken one named).
    let run = call("echo");
    assert_eq!(run.code, Some(2), "{run:#?}");
    assert!(run.stderr.contains("server `bad` is failed"), "{run:#?}");
}

/// `tools --json` over many servers prints, byte for byte, what the hub over the same config
/// lists, as `serde_json`'s pretty form: names that share prefixes (`a`, `a__b`), that differ
/// only in case or in a character names cannot hold (`a.b` and `a_b` collide, and get hashes).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listing_of_many_servers_prints_the_hub_s_list_byte_for_byte() {
    let mut servers = serde_json::Map::new();
    let names = ["a", "a__b", "aB", "a.b", "a_b", "z"];
    for (i, name) in names.iter().enumerate() {
        let page = (2000 + i).to_string();
        let entry = json!({
            "command": support::testserver(),
            "args": ["--many-tools", "30", "--page-size", page],
        });
        servers.insert((*name).to_owned(), entry);
    }
    let sandbox = Sandbox::with_user_servers(Value::Object(servers));
    let run = sandbox.run(&["--no-cache", "tools", "--json"]);
    assert_eq!(run.code, Some(0), "{run:#?}");

    let options = mcpmux::LoadOptions::new(Some(sandbox.home.clone()), &sandbox.project);
    let config = mcpmux::config::load_with_env(&options, &|_| None);
    assert_eq!(config.servers.len(), names.len(), "{:?}", config.problems);
    let hub = mcpmux::Hub::from_config(config, mcpmux::HubOptions::ephemeral()).unwrap();
    hub.wait_ready().await.unwrap();
    let tools = hub.tools();
    hub.shutdown().await;
    // Each server's own tools and 30 of its catalog's.
    assert!(tools.len() > names.len() * 30, "{}", tools.len());
    let expected = serde_json::to_string_pretty(&tools).unwrap() + "\n";
    assert!(
        run.stdout == expected,
        "the listing differs from the hub's list"
    );
}

/// A warm `tools --json` over many servers, streamed server by server from their cached lists
/// (none of which the hub keeps), prints what the cold one printed, each tool marked cached,
/// in the same order and with the same names (prefixes shared, case and hash collisions),
/// starts no server, and says on stderr whose lists came from the cache.
#[test]
fn a_warm_listing_of_many_servers_prints_from_the_cache_what_the_cold_one_printed() {
    let sandbox = Sandbox::new();
    let names = ["a", "a__b", "aB", "a.b", "a_b", "z"];
    let mut servers = serde_json::Map::new();
    let mut markers = Vec::new();
    for (i, name) in names.iter().enumerate() {
        let marker = sandbox.project.join(format!("{i}.started"));
        let page = (2000 + i).to_string();
        let entry = marking_server(&marker, &["--many-tools", "30", "--page-size", &page]);
        servers.insert((*name).to_owned(), entry);
        markers.push(marker);
    }
    sandbox.project_servers(Value::Object(servers));
    let cold = sandbox.run(&["tools", "--json"]);
    assert_eq!(cold.code, Some(0), "{cold:#?}");
    assert!(!cold.stderr.contains("tool cache"), "{cold:#?}");
    for marker in &markers {
        std::fs::remove_file(marker).unwrap();
    }

    let warm = sandbox.run(&["tools", "--json"]);
    assert_eq!(warm.code, Some(0), "{warm:#?}");
    assert!(markers.iter().all(|m| !m.exists()), "a server was started");
    assert!(
        warm.stderr
            .contains("the tools of a, a.b, aB, a__b, a_b, z are from the tool cache"),
        "{warm:#?}"
    );
    let cold: Vec<Value> = serde_json::from_str(&cold.stdout).unwrap();
    let mut warm: Vec<Value> = serde_json::from_str(&warm.stdout).unwrap();
    assert!(cold.len() > names.len() * 30, "{}", cold.len());
    for tool in &mut warm {
        let cached = tool.as_object_mut().unwrap().remove("cached");
        assert_eq!(cached, Some(Value::Bool(true)), "{tool:#}");
    }
    assert!(warm == cold, "the warm listing differs from the cold one");
}
