//! One quick run of the gateway bench, so it cannot rot: a real `mcpmux serve --http` in front
//! of a real test server, a few sessions each making calls two at a time with every answer
//! checked, the latency rounds and the idle-session memory (`/mcp` and `/sse`), every figure
//! reported. And a run whose upstream starts failing mid-way, which must fail and say what went
//! wrong: the bench is only worth its figures if it cannot pass when calls go unanswered. Smoke
//! runs, not timed tests: no figure is compared with a goal.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::process::{Command, Output};

use crate::support;

/// The debug `mcpmux` and test server (the bench would build release ones).
fn binaries() -> (PathBuf, PathBuf) {
    let debug = support::test_programs();
    (debug.join("mcpmux"), debug.join("mcpmux-testserver"))
}

fn bench(extra: &[&str]) -> Output {
    let (mcpmux, server) = binaries();
    Command::new(env!("CARGO_BIN_EXE_mcpmux-bench"))
        .args(["gateway", "--quick", "--json", "--mcpmux"])
        .arg(mcpmux)
        .arg("--server")
        .arg(server)
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn a_quick_gateway_run_answers_every_call_and_reports_every_figure() {
    let output = bench(&[]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "gateway --quick failed: {}\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let figures: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    let load = &figures["load"];
    let expected = load["sessions"].as_u64().unwrap() * load["calls_per_session"].as_u64().unwrap();
    assert_eq!(load["answered"].as_u64(), Some(expected), "{figures}");
    for count in ["misrouted", "errored", "lost"] {
        assert_eq!(load[count].as_u64(), Some(0), "{count} in {figures}");
    }
    for (phase, figure) in [
        ("load", "p50_us"),
        ("load", "p99_us"),
        ("load", "calls_per_sec"),
        ("latency", "direct_p50_us"),
        ("latency", "gateway_p50_us"),
        ("latency", "gateway_p99_us"),
        ("memory", "rss_none_kib"),
        ("memory", "rss_idle_kib"),
        ("memory", "legacy_rss_idle_kib"),
    ] {
        let value = figures[phase][figure].as_f64().unwrap_or(0.0);
        assert!(value > 0.0, "{phase}.{figure} = {value} in {figures}");
    }
    // Differences may be of either sign on a busy machine; they must be there.
    assert!(figures["latency"]["added_p50_us"].is_number(), "{figures}");
    assert!(
        figures["memory"]["per_idle_session_kib"].is_number(),
        "{figures}"
    );
}

#[test]
fn a_run_whose_upstream_starts_failing_fails_and_counts_the_calls_not_answered() {
    // The test server answers HTTP 500 from its 71st request on: the hub's handshake and the
    // warm-up (4 sessions × 10 calls) pass, the load does not.
    let output = bench(&[
        "--phase",
        "load",
        "--upstream-arg",
        "--http-fail",
        "--upstream-arg",
        "500",
        "--upstream-arg",
        "--http-fail-after",
        "--upstream-arg",
        "70",
    ]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !output.status.success(),
        "passed with a dead upstream: {stdout}"
    );
    let figures: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    let load = &figures["load"];
    let unanswered = ["misrouted", "errored", "lost"]
        .iter()
        .map(|count| load[count].as_u64().unwrap())
        .sum::<u64>();
    assert!(unanswered > 0, "{figures}");
    assert!(stderr.contains("not answered"), "{stderr}");
}
