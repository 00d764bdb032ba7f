//! Resilience (issue 3), the process side: a server that ignores SIGTERM and stdin EOF is still
//! stopped promptly, and hundreds of crash/restart cycles leave no zombie and no orphan. Counts
//! processes from /proc, so it is its own test binary and its tests run one at a time.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "suite/support/mod.rs"]
mod support;

use std::collections::BTreeSet;
use std::path::Path;
use std::time::{Duration, Instant};

use mcpmux::config::ServerOptions;
use mcpmux::{Error, HubEvent, HubOptions, ServerSpec, ServerState};
use serde_json::json;
use support::{ms, state};

/// Tests in one binary run as parallel threads; counting processes needs them one at a time.
/// (tokio's mutex: held across awaits, and a failed test does not poison it.)
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// [`support::fast`] with the default breaker threshold (a server crashing hundreds of times
/// is the point here) and a shorter grace.
fn fast() -> ServerOptions {
    let mut o = support::fast();
    o.breaker.threshold = ServerOptions::default().breaker.threshold;
    o.shutdown_grace = ms(100);
    o
}

/// A test server whose command line carries `marker` (in its call-log path), so that any
/// process left behind can be found in /proc whoever its parent is now.
fn marked_testserver(name: &str, marker: &Path, args: &[&str]) -> ServerSpec {
    let args = args.iter().map(|a| a.to_string()).chain([
        "--call-log".to_string(),
        marker.to_string_lossy().into_owned(),
    ]);
    ServerSpec::stdio(name, support::testserver().to_string_lossy(), args)
        .with_options(fast())
        .with_call_timeout(Duration::from_secs(5))
        .with_startup_timeout(Duration::from_secs(10))
}

fn unique_marker(dir: &Path, tag: &str) -> std::path::PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    dir.join(format!("{tag}-{}-{nanos}.jsonl", std::process::id()))
}

fn marked(marker: &Path) -> Vec<support::Proc> {
    let marker = marker.to_string_lossy().into_owned();
    support::processes()
        .into_iter()
        .filter(|p| p.cmdline.contains(&marker))
        .collect()
}

fn zombie_descendants() -> Vec<support::Proc> {
    support::descendants(std::process::id() as i32)
        .into_iter()
        .filter(|p| p.state == 'Z')
        .collect()
}

// 10 ────────────────────────────────────────────────────────────────────────────────────────

#[tokio::test]
async fn a_server_ignoring_sigterm_and_stdin_eof_is_still_stopped_promptly() {
    let _serial = SERIAL.lock().await;
    let dir = tempfile::tempdir().unwrap();
    let marker = unique_marker(dir.path(), "stubborn");
    let hub = support::started_with(
        vec![marked_testserver(
            "stubborn",
            &marker,
            &["--ignore-sigterm", "--ignore-stdin-eof"],
        )],
        HubOptions::ephemeral().with_shutdown_grace(ms(100)),
    )
    .await;
    let pid = support::pid_of(&hub, "stubborn").await as i32;
    assert_eq!(marked(&marker).len(), 1, "{:?}", marked(&marker));

    let started = Instant::now();
    tokio::time::timeout(Duration::from_secs(5), hub.shutdown())
        .await
        .expect("shutdown hung");
    let took = started.elapsed();
    eprintln!("FIGURE shutdown of a server ignoring SIGTERM and stdin EOF: {took:?}");
    // Grace (100 ms) + SIGTERM grace (500 ms) + SIGKILL: well under 2 s.
    assert!(took < Duration::from_secs(2), "{took:?}");
    assert_eq!(state(&hub, "stubborn"), ServerState::Stopped);
    let left = support::wait_gone(&BTreeSet::from([pid]), ms(500));
    assert!(left.is_empty(), "still there: {left:?}");
    assert!(marked(&marker).is_empty(), "{:?}", marked(&marker));
    assert!(
        zombie_descendants().is_empty(),
        "{:?}",
        zombie_descendants()
    );
}

// 16 ────────────────────────────────────────────────────────────────────────────────────────

#[tokio::test]
async fn two_hundred_crash_restart_cycles_leave_no_zombie_and_no_orphan() {
    const CYCLES: usize = 200;
    let _serial = SERIAL.lock().await;
    let dir = tempfile::tempdir().unwrap();
    let marker = unique_marker(dir.path(), "cycles");
    // Every process answers no call: the first `tools/call` makes it exit with status 3.
    let hub = support::started_with(
        vec![marked_testserver(
            "phoenix",
            &marker,
            &["--crash-after", "0"],
        )],
        HubOptions::ephemeral().with_shutdown_grace(ms(100)),
    )
    .await;
    let mut events = hub.subscribe();
    let started = Instant::now();
    let mut pids = BTreeSet::new();
    for cycle in 0..CYCLES {
        let live = marked(&marker);
        assert_eq!(
            live.iter().filter(|p| p.state != 'Z').count(),
            1,
            "cycle {cycle}: {live:?}"
        );
        pids.extend(live.iter().map(|p| p.pid));
        // `fail` is not read-only: the crash fails it without a retry.
        let err = hub
            .call("mcp__phoenix__fail", json!({"message": "x"}))
            .await
            .unwrap_err();
        assert!(
            matches!(err, Error::ConnectionLost { .. }),
            "cycle {cycle}: {err}"
        );
        assert!(err.to_string().contains("exited with status 3"), "{err}");
        // Wait for the new session.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        loop {
            match tokio::time::timeout_at(deadline, events.recv()).await {
                Err(_) => panic!(
                    "cycle {cycle}: never reconnected: {:?}",
                    state(&hub, "phoenix")
                ),
                Ok(Ok(HubEvent::StateChanged {
                    state: ServerState::Connected { .. },
                    ..
                })) => break,
                Ok(_) => {}
            }
        }
        // The old process was reaped before the new one was started.
        let zombies = zombie_descendants();
        assert!(zombies.is_empty(), "cycle {cycle}: {zombies:?}");
    }
    let took = started.elapsed();
    eprintln!(
        "FIGURE {CYCLES} crash/restart cycles: {took:?} ({:?} per cycle)",
        took / CYCLES as u32
    );
    // Every crash was one call, never resent.
    let log = std::fs::read_to_string(&marker).unwrap();
    assert_eq!(log.lines().count(), CYCLES);

    pids.extend(marked(&marker).iter().map(|p| p.pid));
    assert!(pids.len() > CYCLES, "{} distinct processes", pids.len());
    hub.shutdown().await;
    let left = support::wait_gone(&pids, ms(500));
    assert!(left.is_empty(), "left behind: {left:?}");
    assert!(marked(&marker).is_empty(), "{:?}", marked(&marker));
    assert!(
        zombie_descendants().is_empty(),
        "{:?}",
        zombie_descendants()
    );
    assert!(
        support::descendants(std::process::id() as i32).is_empty(),
        "{:?}",
        support::descendants(std::process::id() as i32)
    );
}
