//! No server process outlives `mcpmux`: not its children, not their children, whether it exits
//! normally, on an error, or on Ctrl-C/SIGTERM, and not even a server that ignores SIGTERM and
//! stdin EOF.
//!
//! Each server is started through `sh -c 'sleep MARKER & exec mcpmux-testserver ...'`, so the
//! `sleep` is a grandchild of `mcpmux` in the server's process group. While `mcpmux` runs the
//! test records every descendant; after it exits they must all be gone, and no process with the
//! test's unique marker may be left anywhere (an orphan is reparented away from `mcpmux`, so
//! `descendants` alone would not see it). The tests take turns so timing stays predictable.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "suite/support/mod.rs"]
mod support;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{Run, Running};

/// One test at a time: timing assertions and /proc scans stay undisturbed.
fn serial() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// How long processes may take to disappear after `mcpmux` exits.
const GONE_WITHIN: Duration = Duration::from_secs(3);

/// A [`support::Sandbox`] with a marker of its own.
struct Sandbox {
    base: support::Sandbox,
    /// A `sleep` duration no other process on the machine has on its command line.
    marker: String,
}

impl std::ops::Deref for Sandbox {
    type Target = support::Sandbox;

    fn deref(&self) -> &support::Sandbox {
        &self.base
    }
}

impl Sandbox {
    fn new() -> Self {
        static NEXT: AtomicU32 = AtomicU32::new(1);
        let marker = format!(
            "300.{}{:04}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        Sandbox {
            base: support::Sandbox::new(),
            marker,
        }
    }

    /// A stdio entry: `sh` forks `sleep MARKER` into the background, then becomes the test
    /// server with `args`.
    fn forking_server(&self, args: &[&str]) -> Value {
        let mut script = format!(
            "sleep {} & exec '{}'",
            self.marker,
            support::testserver().display()
        );
        for arg in args {
            script.push_str(&format!(" '{arg}'"));
        }
        json!({ "command": "sh", "args": ["-c", script] })
    }

    fn call_log(&self) -> PathBuf {
        self.project.join("calls.jsonl")
    }

    /// Processes anywhere on the machine that carry this test's marker.
    fn marked(&self) -> Vec<support::Proc> {
        support::processes()
            .into_iter()
            .filter(|p| p.cmdline.contains(&self.marker))
            .collect()
    }
}

/// What these tests do to a running `mcpmux` (its type lives in the shared test support).
trait Watched {
    fn signal(&self, signal: i32);
    fn wait_for_servers(&mut self, sandbox: &Sandbox, servers: usize) -> BTreeSet<i32>;
}

impl Watched for Running {
    fn signal(&self, signal: i32) {
        // SAFETY: kill(2) has no memory-safety preconditions; the pid is our own unreaped child.
        assert_eq!(unsafe { libc::kill(self.pid(), signal) }, 0);
    }

    /// Polls until the server and its `sleep` grandchild show up under `mcpmux`, and returns
    /// every descendant pid seen then.
    fn wait_for_servers(&mut self, sandbox: &Sandbox, servers: usize) -> BTreeSet<i32> {
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            let found = support::descendants(self.pid());
            let sleeps = found
                .iter()
                .filter(|p| p.cmdline.contains(&sandbox.marker))
                .count();
            let testservers = found
                .iter()
                .filter(|p| p.cmdline.contains("mcpmux-testserver"))
                .count();
            if sleeps >= servers && testservers >= servers {
                return found.iter().map(|p| p.pid).collect();
            }
            if let Some(status) = self.child.try_wait().unwrap() {
                panic!("mcpmux ended ({status}) before its servers were seen: {found:#?}");
            }
            assert!(
                Instant::now() < deadline,
                "servers never showed up under mcpmux: {found:#?}"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// Every recorded pid is gone, and nothing with the marker is left anywhere.
#[track_caller]
fn assert_all_gone(sandbox: &Sandbox, pids: &BTreeSet<i32>, ended: &Run) {
    let left = support::wait_gone(pids, GONE_WITHIN);
    assert!(
        left.is_empty(),
        "processes left after mcpmux exited: {left:#?}\n{ended:#?}"
    );
    let gone = support::eventually_blocking(GONE_WITHIN, Duration::from_millis(20), || {
        sandbox.marked().is_empty().then_some(())
    });
    let marked = if gone.is_some() {
        Vec::new()
    } else {
        sandbox.marked()
    };
    assert!(
        marked.is_empty(),
        "grandchildren left after mcpmux exited: {marked:#?}\n{ended:#?}"
    );
}

/// Polls until the test server's call log shows a call to `tool`.
fn wait_for_call(log: &Path, tool: &str) {
    support::wait_for_call_blocking(log, tool, Duration::from_secs(15));
}

#[test]
fn normal_exit_leaves_no_child_or_grandchild() {
    let _turn = serial();
    let sandbox = Sandbox::new();
    sandbox.project_servers(json!({
        "one": sandbox.forking_server(&[]),
        "two": sandbox.forking_server(&["--stderr-lines", "1"]),
    }));
    // `-` makes mcpmux wait for its arguments on stdin while the server the call goes to
    // starts (only that one: `two` is lazy and unused): a gate.
    let mut mcpmux = sandbox.spawn(&["call", "mcp__one__echo", "-"]);
    let pids = mcpmux.wait_for_servers(&sandbox, 1);
    mcpmux.send_arguments(r#"{"text":"bye"}"#);
    let ended = mcpmux.finish(Duration::from_secs(10));
    assert_eq!(ended.code, Some(0), "{ended:#?}");
    assert_eq!(ended.stdout, "bye\n", "{ended:#?}");
    assert_all_gone(&sandbox, &pids, &ended);
}

#[test]
fn tool_error_exit_leaves_no_child_or_grandchild() {
    let _turn = serial();
    let sandbox = Sandbox::new();
    sandbox.project_servers(json!({ "x": sandbox.forking_server(&[]) }));
    let mut mcpmux = sandbox.spawn(&["call", "mcp__x__fail", "-"]);
    let pids = mcpmux.wait_for_servers(&sandbox, 1);
    mcpmux.send_arguments(r#"{"message":"no"}"#);
    let ended = mcpmux.finish(Duration::from_secs(10));
    assert_eq!(ended.code, Some(1), "{ended:#?}");
    assert_all_gone(&sandbox, &pids, &ended);
}

#[test]
fn server_crashing_mid_call_leaves_no_child_or_grandchild() {
    let _turn = serial();
    let sandbox = Sandbox::new();
    sandbox.project_servers(json!({
        "x": sandbox.forking_server(&["--crash-on", "echo"]),
        "ok": sandbox.forking_server(&[]),
    }));
    let mut mcpmux = sandbox.spawn(&["call", "mcp__x__echo", "-"]);
    let pids = mcpmux.wait_for_servers(&sandbox, 1);
    mcpmux.send_arguments(r#"{"text":"boom"}"#);
    let ended = mcpmux.finish(Duration::from_secs(10));
    assert_eq!(ended.code, Some(2), "{ended:#?}");
    assert!(ended.stderr.contains("connection lost"), "{ended:#?}");
    assert_all_gone(&sandbox, &pids, &ended);
}

#[test]
fn server_failing_at_startup_leaves_no_grandchild() {
    let _turn = serial();
    let sandbox = Sandbox::new();
    sandbox.project_servers(json!({
        "crash": sandbox.forking_server(&["--exit-at-startup", "3"]),
    }));
    let ended = sandbox.spawn(&["servers"]).finish(Duration::from_secs(10));
    assert_eq!(ended.code, Some(0), "{ended:#?}");
    assert!(ended.stdout.contains("status 3"), "{ended:#?}");
    assert_all_gone(&sandbox, &BTreeSet::new(), &ended);
}

fn interrupt_a_hanging_call(signal: i32) {
    let _turn = serial();
    let sandbox = Sandbox::new();
    let log = sandbox.call_log();
    sandbox.project_servers(json!({
        "x": sandbox.forking_server(&["--call-log", log.to_str().unwrap()]),
        "y": sandbox.forking_server(&[]),
    }));
    let mut mcpmux = sandbox.spawn(&["call", "mcp__x__hang", "{}"]);
    let pids = mcpmux.wait_for_servers(&sandbox, 1);
    wait_for_call(&log, "hang");

    let sent = Instant::now();
    mcpmux.signal(signal);
    let ended = mcpmux.finish(Duration::from_secs(10));
    let took = sent.elapsed();
    assert_eq!(ended.code, Some(130), "{ended:#?}");
    assert!(ended.stderr.contains("interrupted"), "{ended:#?}");
    assert!(
        took < Duration::from_secs(5),
        "exit took {took:?} after the signal: {ended:#?}"
    );
    assert_all_gone(&sandbox, &pids, &ended);
}

#[test]
fn ctrl_c_during_a_call_exits_130_promptly_and_leaves_nothing() {
    interrupt_a_hanging_call(libc::SIGINT);
}

#[test]
fn sigterm_during_a_call_exits_130_promptly_and_leaves_nothing() {
    interrupt_a_hanging_call(libc::SIGTERM);
}

#[test]
fn ctrl_c_while_a_server_is_still_starting_exits_promptly() {
    let _turn = serial();
    let sandbox = Sandbox::new();
    // The default startup timeout is 30 s: only the interrupt can end this quickly.
    sandbox.project_servers(json!({
        "slow": sandbox.forking_server(&["--never-answer-initialize"]),
    }));
    let mut mcpmux = sandbox.spawn(&["servers"]);
    let pids = mcpmux.wait_for_servers(&sandbox, 1);
    let sent = Instant::now();
    mcpmux.signal(libc::SIGINT);
    let ended = mcpmux.finish(Duration::from_secs(10));
    assert_eq!(ended.code, Some(130), "{ended:#?}");
    assert!(
        sent.elapsed() < Duration::from_secs(5),
        "exit took {:?} after Ctrl-C: {ended:#?}",
        sent.elapsed()
    );
    assert_all_gone(&sandbox, &pids, &ended);
}

#[test]
fn server_ignoring_sigterm_and_stdin_eof_is_still_gone_after_exit() {
    let _turn = serial();
    let sandbox = Sandbox::new();
    sandbox.project_servers(json!({
        "stubborn": sandbox.forking_server(&["--ignore-sigterm", "--ignore-stdin-eof"]),
    }));
    let mut mcpmux = sandbox.spawn(&["call", "mcp__stubborn__echo", "-"]);
    let pids = mcpmux.wait_for_servers(&sandbox, 1);
    mcpmux.send_arguments(r#"{"text":"done"}"#);
    let ended = mcpmux.finish(Duration::from_secs(10));
    assert_eq!(ended.code, Some(0), "{ended:#?}");
    assert_eq!(ended.stdout, "done\n", "{ended:#?}");
    assert_all_gone(&sandbox, &pids, &ended);
}

#[test]
fn ctrl_c_with_a_stubborn_server_still_exits_within_a_few_seconds() {
    let _turn = serial();
    let sandbox = Sandbox::new();
    let log = sandbox.call_log();
    sandbox.project_servers(json!({
        "stubborn": sandbox.forking_server(&[
            "--ignore-sigterm",
            "--ignore-stdin-eof",
            "--call-log",
            log.to_str().unwrap(),
        ]),
    }));
    let mut mcpmux = sandbox.spawn(&["call", "mcp__stubborn__hang", "{}"]);
    let pids = mcpmux.wait_for_servers(&sandbox, 1);
    wait_for_call(&log, "hang");
    let sent = Instant::now();
    mcpmux.signal(libc::SIGINT);
    let ended = mcpmux.finish(Duration::from_secs(10));
    assert_eq!(ended.code, Some(130), "{ended:#?}");
    assert!(
        sent.elapsed() < Duration::from_secs(5),
        "exit took {:?} after Ctrl-C: {ended:#?}",
        sent.elapsed()
    );
    assert_all_gone(&sandbox, &pids, &ended);
}
