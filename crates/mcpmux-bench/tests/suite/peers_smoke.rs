//! One quick run of the side-by-side peer benchmark, so it cannot rot: every client (the pinned
//! Python and TypeScript SDKs, raw rmcp, the mcpmux hub) and both pipe floors start, list, call
//! with the echoes checked, and report figures (CPU time per call included). A smoke run, not a
//! timed test: no figure is compared.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

#[test]
fn every_peer_client_completes_a_quick_run_and_reports_its_figures() {
    let output = Command::new(env!("CARGO_BIN_EXE_mcpmux-bench"))
        // Built by `cargo test` beside the bench: it need not run cargo itself.
        .args(["peers", "--quick", "--json", "--prebuilt"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "peers --quick failed: {}\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let table: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    for client in [
        "Python SDK",
        "TypeScript SDK",
        "rmcp raw",
        "mcpmux hub",
        "rmcp raw, 1 thread",
        "mcpmux hub, 1 thread",
        "pipe floor",
        "pipe floor, polling",
    ] {
        let figures = &table[client];
        for metric in [
            "cold_ms",
            "p50_us",
            "p99_us",
            "cpu_per_call_us",
            "calls_per_sec",
            "servers_ms",
            "peak_rss_one_mb",
            "peak_rss_mb",
        ] {
            let value = figures[metric].as_f64().unwrap_or(0.0);
            assert!(value > 0.0, "{client}: {metric} = {value} in {stdout}");
        }
        // The peak with one server is read before the many-servers phase: never above the
        // whole run's.
        let (one, all) = (
            figures["peak_rss_one_mb"].as_f64(),
            figures["peak_rss_mb"].as_f64(),
        );
        assert!(
            one <= all,
            "{client}: one-server peak {one:?} above the whole run's {all:?}"
        );
    }
}
