//! `mcpmux` against a server whose answers are over the 64 MiB cap on one message (#32): the
//! call fails at once with "answer over 64 MiB" instead of waiting for `--timeout`, and a
//! server whose tool list is over it fails its start at once instead of holding `mcpmux tools`
//! for the startup timeout — on every run.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::time::Duration;

use serde_json::json;
use support::Sandbox;

/// Longest a single run may take: startup, one listing or call, shutdown.
const DEADLINE: Duration = Duration::from_secs(30);

/// Well under the `--timeout` given and the startup timeout (30 s): what failing "at once"
/// takes, 64 MiB of pipe included.
const AT_ONCE: Duration = Duration::from_secs(8);

/// The cap on one message.
const CAP: usize = 64 << 20;

/// A hermetic HOME whose `~/.claude.json` runs the test server as `ts` with `args`.
fn sandbox(args: &[&str]) -> Sandbox {
    Sandbox::with_user_servers(json!({"ts": {
        "command": support::testserver().display().to_string(),
        "args": args,
    }}))
}

#[test]
fn a_call_whose_answer_is_over_64_mib_fails_at_once_with_the_reason() {
    let sandbox = sandbox(&["--huge-result"]);
    let arguments = json!({ "bytes": CAP + 1024 }).to_string();
    let run = sandbox.run_within(
        &[
            "call",
            "mcp__ts__huge_result",
            &arguments,
            "--timeout",
            "20",
        ],
        DEADLINE,
    );
    assert_eq!(run.code, Some(2), "{run:#?}");
    assert!(run.stderr.contains("answer over 64 MiB"), "{run:#?}");
    assert!(run.took < AT_ONCE, "{run:#?}");
    let run = sandbox.run_within(&["call", "mcp__ts__echo", r#"{"text":"fine"}"#], DEADLINE);
    assert_eq!(run.code, Some(0), "{run:#?}");
    assert_eq!(run.stdout, "fine\n");
}

#[test]
fn a_server_whose_tool_list_is_over_64_mib_fails_its_start_at_once_on_every_run() {
    let padding = (CAP + 1).to_string();
    let sandbox = sandbox(&["--padded-tools-list", &padding]);
    for _ in 0..2 {
        let run = sandbox.run_within(&["tools"], DEADLINE);
        assert!(run.stderr.contains("answer over 64 MiB"), "{run:#?}");
        assert!(run.took < AT_ONCE, "{run:#?}");
    }
}
