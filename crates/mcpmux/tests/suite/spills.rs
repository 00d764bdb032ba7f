//! The spill folder over a hub's life, with the real test server's `huge` tool cut to a small
//! `max_result_bytes`: a hub removes its spill files when it shuts down (unless it keeps them),
//! removes files older than a day when it starts, and keeps the folder under its cap.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use mcpmux::Hub;
use mcpmux::Spill;
use mcpmux::config::ServerOptions;
use serde_json::json;

async fn hub(spill: Spill, keep: bool) -> Hub {
    let mut options = ServerOptions::default();
    options.max_result_bytes = 1024;
    let spec = support::stdio_testserver("t", &[]).with_options(options);
    support::started_with(
        vec![spec],
        support::hub_options()
            .with_spill(spill)
            .with_keep_spills(keep),
    )
    .await
}

/// Calls `huge` for `mb` MiB and returns the spill file the cut result names.
async fn spill_one(hub: &Hub, mb: f64) -> PathBuf {
    let result = hub.call("mcp__t__huge", json!({"mb": mb})).await.unwrap();
    let text = result.to_text();
    let at = text.find("the full output is in ").expect("a spill note") + 22;
    let end = text[at..].find(']').unwrap() + at;
    let path = PathBuf::from(&text[at..end]);
    assert!(path.exists(), "{}", path.display());
    path
}

fn files(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|entries| entries.flatten().map(|e| e.path()).collect())
        .unwrap_or_default()
}

#[tokio::test]
async fn a_hub_removes_its_spill_files_when_it_shuts_down() {
    let dir = tempfile::tempdir().unwrap();
    let hub = hub(Spill::new(dir.path().join("spill")), false).await;
    let path = spill_one(&hub, 0.01).await;
    hub.shutdown().await;
    assert!(!path.exists(), "{} is left", path.display());
}

#[tokio::test]
async fn with_keep_spills_the_files_outlive_the_hub() {
    let dir = tempfile::tempdir().unwrap();
    let hub = hub(Spill::new(dir.path().join("spill")), true).await;
    let path = spill_one(&hub, 0.01).await;
    hub.shutdown().await;
    drop(hub);
    assert!(path.exists());
}

#[tokio::test]
async fn files_older_than_a_day_are_removed_when_a_hub_starts() {
    let dir = tempfile::tempdir().unwrap();
    let spill = Spill::new(dir.path().join("spill"));
    let first = hub(spill.clone(), true).await;
    let old = spill_one(&first, 0.01).await;
    let recent = spill_one(&first, 0.01).await;
    first.shutdown().await;
    std::fs::File::options()
        .write(true)
        .open(&old)
        .unwrap()
        .set_modified(SystemTime::now() - Duration::from_secs(2 * 24 * 3600))
        .unwrap();
    let second = hub(spill, false).await;
    assert!(!old.exists(), "the two-day-old file is removed at startup");
    assert!(recent.exists(), "a recent file (of another hub) stays");
    second.shutdown().await;
    assert!(
        recent.exists(),
        "another hub's file is not this hub's to remove"
    );
}

#[tokio::test]
async fn the_spill_folder_stays_under_its_cap_oldest_first() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("spill");
    // Each spill is about 10 KiB; room for two.
    let hub = hub(Spill::new(&folder).with_max_total_bytes(25 * 1024), true).await;
    let mut written = Vec::new();
    for _ in 0..4 {
        written.push(spill_one(&hub, 0.01).await);
        // Distinct modification times, so "oldest" is well defined.
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let total: u64 = files(&folder)
        .iter()
        .map(|p| std::fs::metadata(p).unwrap().len())
        .sum();
    assert!(total <= 25 * 1024, "{total} bytes in the folder");
    assert_eq!(files(&folder).len(), 2, "{:?}", files(&folder));
    assert!(!written[0].exists() && !written[1].exists());
    assert!(written[2].exists() && written[3].exists());
    hub.shutdown().await;
}
