//! The commit `mcpmux --version` names, as `MCPMUX_COMMIT` for `env!`.
//!
//! Where it comes from, first found wins: the `MCPMUX_COMMIT` variable of the build (a build
//! from a tarball or a container context without `.git`); the `.cargo_vcs_info.json` that
//! `cargo package` writes (a `cargo install mcpmux-cli` from crates.io); `git rev-parse` in a
//! checkout; otherwise "unknown". Reruns only when HEAD or the branch it names moves, never on
//! every build.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=MCPMUX_COMMIT");
    let dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let commit = std::env::var("MCPMUX_COMMIT")
        .ok()
        .filter(|c| !c.trim().is_empty())
        .map(|c| c.trim().to_owned())
        .or_else(|| from_package(&dir))
        .or_else(|| from_git(&dir))
        .unwrap_or_else(|| "unknown".to_owned());
    println!("cargo:rustc-env=MCPMUX_COMMIT={commit}");
}

/// The commit `cargo package` recorded, in a crate unpacked from a registry.
fn from_package(dir: &Path) -> Option<String> {
    let info = dir.join(".cargo_vcs_info.json");
    let text = std::fs::read_to_string(&info).ok()?;
    println!("cargo:rerun-if-changed={}", info.display());
    // `"sha1": "<40 hex>"`: a string search, so the build needs no JSON parser.
    let after = text.split("\"sha1\"").nth(1)?;
    let sha: String = after
        .trim_start_matches([' ', ':', '"'])
        .chars()
        .take_while(char::is_ascii_hexdigit)
        .take(7)
        .collect();
    (sha.len() == 7).then_some(sha)
}

/// The short hash of HEAD, when this is a git checkout with git installed.
fn from_git(dir: &Path) -> Option<String> {
    let commit = git(dir, &["rev-parse", "--short", "HEAD"])?;
    // HEAD moves on checkout; the branch file it names moves on commit (a ref packed away has no
    // file: packed-refs then). Only existing paths: cargo reruns every time for a missing one.
    let mut watched = vec![git(dir, &["rev-parse", "--git-path", "HEAD"])];
    if let Some(branch) = git(dir, &["symbolic-ref", "-q", "HEAD"]) {
        watched.push(git(dir, &["rev-parse", "--git-path", &branch]));
    }
    watched.push(git(dir, &["rev-parse", "--git-path", "packed-refs"]));
    for path in watched.into_iter().flatten() {
        let path = dir.join(path);
        if path.exists() {
            println!("cargo:rerun-if-changed={}", path.display());
        }
    }
    Some(commit)
}

/// One line of git's output, or None when git is missing or fails.
fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .ok()?;
    let line = String::from_utf8(out.stdout).ok()?.trim().to_owned();
    (out.status.success() && !line.is_empty()).then_some(line)
}
