//! `mcpmux` against a hostile server (the test server's `--tool-schema` and `--deep-result`):
//! every run must end on its own with a normal exit code and say which tool cannot be used
//! and why, while the server's other tools stay listed and callable. Each run has a deadline
//! and is killed past it, so an abort or a hang fails the test instead of stalling it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::time::Duration;

use serde_json::{Value, json};
use support::Sandbox;

/// Longest a single run may take: startup, one listing or call, shutdown.
const DEADLINE: Duration = Duration::from_secs(20);

/// The hostile test server as the person's own (`Sandbox` is the shared test support's).
trait HostileSandbox {
    fn with_testserver(args: &[&str]) -> Self;
}

impl HostileSandbox for Sandbox {
    /// A hermetic HOME whose `~/.claude.json` runs the test server as `ts` (the person's own
    /// config: the hostile part here is the server, not the project), and a project to run in.
    fn with_testserver(args: &[&str]) -> Self {
        Sandbox::with_user_servers(json!({"ts": {
            "command": support::testserver().display().to_string(),
            "args": args,
        }}))
    }
}

const SELF_REF_REASON: &str = "mcpmux: tool `mcp__ts__self_ref` cannot be called: its input \
     schema cannot be used: `/allOf/0` refers back to the root without descending into the \
     value";

fn names(definitions: &[Value], path: &[&str]) -> Vec<String> {
    definitions
        .iter()
        .filter_map(|d| {
            let mut v = d;
            for key in path {
                v = &v[*key];
            }
            v.as_str().map(str::to_string)
        })
        .collect()
}

#[test]
fn provider_exports_leave_out_a_self_referencing_tool_and_say_why() {
    let sandbox = Sandbox::with_testserver(&["--tool-schema", "self-ref"]);
    for (format, path) in [
        ("openai", &["function", "name"][..]),
        ("openai-strict", &["function", "name"][..]),
        ("anthropic", &["name"][..]),
        ("gemini", &["name"][..]),
    ] {
        let run = sandbox.run_within(&["tools", "--format", format], DEADLINE);
        assert_eq!(run.code, Some(0), "{format}: {run:#?}");
        let definitions: Vec<Value> = serde_json::from_str(&run.stdout)
            .unwrap_or_else(|e| panic!("{format}: stdout is not JSON ({e}): {run:#?}"));
        let names = names(&definitions, path);
        assert!(
            names.iter().any(|n| n == "mcp__ts__echo"),
            "{format}: {names:?}"
        );
        assert!(
            !names.iter().any(|n| n.contains("self_ref")),
            "{format}: {names:?}"
        );
        assert!(
            run.stderr.contains(SELF_REF_REASON),
            "{format}: {}",
            run.stderr
        );
    }
}

#[test]
fn tools_lists_the_unusable_tool_with_its_reason() {
    let sandbox = Sandbox::with_testserver(&["--tool-schema", "self-ref"]);
    let run = sandbox.run_within(&["tools"], DEADLINE);
    assert_eq!(run.code, Some(0), "{run:#?}");
    let row = run
        .stdout
        .lines()
        .find(|l| l.starts_with("mcp__ts__self_ref "))
        .unwrap_or_else(|| panic!("no row: {run:#?}"));
    assert!(
        row.contains("UNUSABLE: its input schema cannot be used: `/allOf/0` refers back"),
        "{row}"
    );
    assert!(run.stdout.contains("mcp__ts__echo "), "{run:#?}");
    assert!(run.stderr.contains(SELF_REF_REASON), "{run:#?}");

    let run = sandbox.run_within(&["tools", "--json"], DEADLINE);
    assert_eq!(run.code, Some(0), "{run:#?}");
    let tools: Vec<Value> = serde_json::from_str(&run.stdout).unwrap();
    let bad = tools
        .iter()
        .find(|t| t["name"] == "mcp__ts__self_ref")
        .unwrap();
    assert!(
        bad["unusable"]
            .as_str()
            .unwrap()
            .starts_with("its input schema cannot be used: "),
        "{bad:#}"
    );
    let echo = tools.iter().find(|t| t["name"] == "mcp__ts__echo").unwrap();
    assert!(echo.get("unusable").is_none(), "{echo:#}");
}

#[test]
fn calling_a_tool_with_a_hostile_schema_is_refused_and_the_others_still_answer() {
    let sandbox =
        Sandbox::with_testserver(&["--tool-schema", "self-ref", "--tool-schema", "ref-bomb"]);
    let run = sandbox.run_within(&["call", "mcp__ts__self_ref", r#"{"x":"a"}"#], DEADLINE);
    assert_eq!(run.code, Some(2), "{run:#?}");
    assert!(run.stderr.contains(SELF_REF_REASON), "{run:#?}");

    let run = sandbox.run_within(&["call", "mcp__ts__ref_bomb", r#"{"x":"a"}"#], DEADLINE);
    assert_eq!(run.code, Some(2), "{run:#?}");
    assert!(
        run.stderr.contains(
            "mcpmux: tool `mcp__ts__ref_bomb` cannot be called: its input schema cannot be used"
        ),
        "{run:#?}"
    );
    assert!(run.took < Duration::from_secs(5), "{run:#?}");

    let run = sandbox.run_within(&["call", "mcp__ts__echo", r#"{"text":"fine"}"#], DEADLINE);
    assert_eq!(run.code, Some(0), "{run:#?}");
    assert_eq!(run.stdout, "fine\n");
}

#[test]
fn a_result_too_deep_to_read_fails_the_call_fast_with_the_reason() {
    let sandbox = Sandbox::with_testserver(&["--deep-result"]);
    let run = sandbox.run_within(
        &["call", "mcp__ts__deep_result", "{}", "--timeout", "15"],
        DEADLINE,
    );
    assert_eq!(run.code, Some(2), "{run:#?}");
    assert!(
        run.stderr.contains(
            "the server's answer could not be read: it nests arrays and objects deeper than \
             127 levels"
        ),
        "{run:#?}"
    );
    assert!(run.took < Duration::from_secs(5), "{run:#?}");
}

/// The whole CLI against one server that does everything hostile at once: a self-referencing
/// schema, a 2^40 `$ref` chain, a 100 000-level answer, terminal escapes and forged delimiters,
/// and a crash on every call of one tool. Every command ends on its own with its normal exit
/// code (never a signal, an abort or a panic's 101), and the server's plain tools still answer.
#[test]
fn a_misbehaving_server_run_of_the_whole_cli_exits_normally_every_time() {
    let sandbox = Sandbox::with_testserver(&[
        "--tool-schema",
        "self-ref",
        "--tool-schema",
        "ref-bomb",
        "--deep-result",
        "--crash-on",
        "pid",
    ]);
    let runs: &[(&[&str], i32)] = &[
        (&["servers"], 0),
        (&["tools"], 0),
        (&["tools", "--json"], 0),
        (&["tools", "--format", "openai"], 0),
        (&["tools", "--format", "openai-strict"], 0),
        (&["tools", "--format", "anthropic"], 0),
        (&["tools", "--format", "gemini"], 0),
        (&["call", "mcp__ts__self_ref", r#"{"x":"a"}"#], 2),
        (&["call", "mcp__ts__ref_bomb", r#"{"x":"a"}"#], 2),
        (
            &["call", "mcp__ts__deep_result", "{}", "--timeout", "15"],
            2,
        ),
        (&["call", "mcp__ts__hostile", "{}"], 0),
        (&["call", "mcp__ts__hostile", r#"{"as":"error"}"#], 2),
        (&["call", "mcp__ts__pid", "{}", "--timeout", "15"], 2),
        (&["call", "mcp__ts__echo", r#"{"text":"still here"}"#], 0),
    ];
    for (args, code) in runs {
        let run = sandbox.run_within(args, DEADLINE);
        assert_eq!(
            run.code,
            Some(*code),
            "`mcpmux {}`: {run:#?}",
            args.join(" ")
        );
        assert!(
            !run.stderr.contains("panicked") && !run.stderr.contains("stack overflow"),
            "`mcpmux {}`: {run:#?}",
            args.join(" ")
        );
    }
    let run = sandbox.run_within(
        &["call", "mcp__ts__echo", r#"{"text":"still here"}"#],
        DEADLINE,
    );
    assert_eq!(run.stdout, "still here\n", "{run:#?}");
}
