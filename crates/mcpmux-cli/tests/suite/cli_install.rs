//! What installing `mcpmux` relies on: `--version` names the build, and the binary runs on a
//! plain Debian userland (the Dockerfile's runtime image) with nothing but libc-level libraries.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

use crate::support::{Sandbox, assert_code};

#[test]
fn version_names_the_crate_version_and_the_commit_built() {
    let run = Sandbox::new().run(&["--version"]);
    assert_code(&run, 0);
    let prefix = format!("mcpmux {} (commit ", env!("CARGO_PKG_VERSION"));
    let commit = run
        .stdout
        .trim_end()
        .strip_prefix(&prefix)
        .and_then(|rest| rest.strip_suffix(')'))
        .unwrap_or_else(|| panic!("not `{prefix}<commit>)`: {run:#?}"));
    // This test runs from a checkout: the commit is HEAD's, abbreviated (build.rs reran when HEAD
    // moved). Without git (a source tarball) build.rs says "unknown", and so must the binary.
    let head = Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|out| out.status.success())
        .map(|out| String::from_utf8(out.stdout).unwrap().trim().to_owned());
    match head {
        Some(head) if std::env::var_os("MCPMUX_COMMIT").is_none() => assert!(
            commit.len() >= 7 && head.starts_with(commit),
            "commit `{commit}` is not HEAD {head}: {run:#?}"
        ),
        _ => assert_eq!(commit, env!("MCPMUX_COMMIT"), "{run:#?}"),
    }
}

/// The libraries every glibc system has: what a `debian:bookworm-slim` image (or any distro)
/// provides without installing anything.
#[cfg(target_os = "linux")]
const LIBC_LEVEL: &[&str] = &[
    "libc.so.6",
    "libm.so.6",
    "libgcc_s.so.1",
    "libpthread.so.0",
    "libdl.so.2",
    "librt.so.1",
    "ld-linux-x86-64.so.2",
    "ld-linux-aarch64.so.1",
];

/// The newest glibc the binary may ask for: Debian 12 (bookworm)'s, the Dockerfile's runtime.
#[cfg(target_os = "linux")]
const RUNTIME_GLIBC: (u32, u32) = (2, 36);

#[cfg(target_os = "linux")]
#[test]
fn the_binary_needs_only_libc_level_libraries_of_the_runtime_image() {
    let binary = env!("CARGO_BIN_EXE_mcpmux");
    let readelf = |flag: &str| {
        let out = Command::new("readelf")
            .args([flag, "--wide", binary])
            .output()
            .expect("readelf (binutils) lists the binary's dynamic section");
        assert!(out.status.success(), "readelf {flag}: {out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    let needed: Vec<String> = readelf("-d")
        .lines()
        .filter(|l| l.contains("(NEEDED)"))
        .filter_map(|l| Some(l.split_once('[')?.1.split_once(']')?.0.to_owned()))
        .collect();
    assert!(needed.iter().any(|n| n == "libc.so.6"), "{needed:?}");
    let extra: Vec<&String> = needed
        .iter()
        .filter(|n| !LIBC_LEVEL.contains(&n.as_str()))
        .collect();
    assert!(
        extra.is_empty(),
        "libraries a slim image lacks (OpenSSL? link them statically, e.g. rustls): {extra:?}"
    );
    let newest = readelf("-V")
        .split("GLIBC_")
        .skip(1)
        .filter_map(|v| {
            let v: String = v
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '.')
                .collect();
            let mut parts = v.split('.').map(|p| p.parse::<u32>().ok());
            Some((parts.next()??, parts.next().flatten().unwrap_or(0)))
        })
        .max()
        .expect("a glibc binary names GLIBC_ versions");
    assert!(
        newest <= RUNTIME_GLIBC,
        "needs glibc {newest:?}, the runtime image has {RUNTIME_GLIBC:?}"
    );
}

/// The image's HEALTHCHECK script (deploy/healthcheck.sh, run by the Dockerfile).
fn healthcheck(port: u16) -> std::process::Output {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../deploy/healthcheck.sh");
    Command::new("bash")
        .arg(script)
        .env("MCPMUX_HEALTH_PORT", port.to_string())
        .output()
        .unwrap()
}

#[test]
fn the_image_healthcheck_passes_on_a_serving_gateway_and_fails_once_it_is_gone() {
    let sandbox = Sandbox::new();
    let served = crate::support::Served::start(&sandbox, &[]);
    let port: u16 = served
        .url
        .trim_start_matches("http://127.0.0.1:")
        .trim_end_matches("/mcp")
        .parse()
        .unwrap();
    let up = healthcheck(port);
    assert!(up.status.success(), "{up:?}");
    drop(served);
    let down = healthcheck(port);
    assert_eq!(down.status.code(), Some(1), "{down:?}");
}
