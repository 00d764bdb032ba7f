//! One quick run of the tool-search benchmark, so it cannot rot: the real catalog is listed,
//! its tokens and recall computed, a 1 000-tool catalog indexed and searched, and every figure
//! reported. A smoke run, not a timed test: no latency is compared with a goal.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

use crate::support;

#[test]
fn a_quick_search_run_lists_the_real_catalog_and_reports_every_figure() {
    let output = Command::new(env!("CARGO_BIN_EXE_mcpmux-bench"))
        .args(["search", "--quick", "--json", "--server"])
        .arg(support::testserver())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "search --quick failed: {}\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let figures: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    assert!(
        figures["catalog_tools"].as_u64().unwrap() >= 200,
        "{figures}"
    );
    assert_eq!(figures["big_tools"], 1000, "{figures}");
    for provider in ["anthropic", "openai"] {
        let tokens = &figures[provider];
        let (all, deferred) = (
            tokens["all"].as_u64().unwrap(),
            tokens["deferred"].as_u64().unwrap(),
        );
        assert!(deferred > 0 && deferred < all, "{provider}: {figures}");
    }
    for metric in [
        "recall_at_5",
        "build_ms",
        "search_p50_us",
        "search_p99_us",
        "recall_big",
    ] {
        let value = figures[metric].as_f64().unwrap_or(0.0);
        assert!(value > 0.0, "{metric} = {value} in {figures}");
    }
}
