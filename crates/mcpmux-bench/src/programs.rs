//! Where the workspace is, building the programs a bench runs (the release test server and
//! CLI, the peer clients) with cargo, and the quantile every bench reports.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, bail};

/// The workspace root.
pub fn workspace() -> anyhow::Result<PathBuf> {
    Ok(Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .context("workspace root")?
        .to_path_buf())
}

/// Where cargo puts the builds of `workspace`.
pub fn target_dir(workspace: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace.join("target"))
}

/// `cargo build --quiet ARGS` in the workspace; `what` names what was built, for the error.
pub fn cargo_build<A: AsRef<std::ffi::OsStr>>(
    args: impl IntoIterator<Item = A>,
    what: &str,
) -> anyhow::Result<()> {
    let status = Command::new(env!("CARGO"))
        .args(["build", "--quiet"])
        .args(args)
        .current_dir(workspace()?)
        .status()?;
    if !status.success() {
        bail!("building {what} failed");
    }
    Ok(())
}

/// Builds the release test server next to this binary's workspace.
pub fn build_testserver() -> anyhow::Result<PathBuf> {
    cargo_build(
        ["--release", "-p", "mcpmux-testserver"],
        "mcpmux-testserver",
    )?;
    Ok(target_dir(&workspace()?)
        .join("release")
        .join("mcpmux-testserver"))
}

/// Builds the release CLI and test server; their paths.
pub fn build_cli_and_testserver() -> anyhow::Result<(PathBuf, PathBuf)> {
    cargo_build(
        ["--release", "-p", "mcpmux-cli", "-p", "mcpmux-testserver"],
        "mcpmux and mcpmux-testserver",
    )?;
    let release = target_dir(&workspace()?).join("release");
    Ok((release.join("mcpmux"), release.join("mcpmux-testserver")))
}

/// The `p` quantile (0 to 1) of `sorted`, zero when it is empty.
pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}
