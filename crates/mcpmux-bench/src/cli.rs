//! What a person pays at the command line for configuring many servers: the wall time of a
//! whole `mcpmux call` process with 10 servers configured (one of them taking 3 s to start)
//! against one with only the target server, and of a warm `mcpmux tools` (tool cache filled)
//! with the same 10, against the cold one that must start them all.
//!
//! `cargo run --release -p mcpmux-bench -- cli [--runs N] [--slow-ms MS] [--mcpmux PATH]`
//!
//! Runs are interleaved (one of each scenario per round) and medians are printed, so a busy
//! machine weighs on every scenario alike. Everything runs in a temporary HOME: nothing of
//! the person's own config or caches is read or written.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

struct Args {
    runs: usize,
    slow_ms: u64,
    mcpmux: Option<PathBuf>,
}

fn parse(args: impl Iterator<Item = String>) -> anyhow::Result<Args> {
    let mut parsed = Args {
        runs: 15,
        slow_ms: 3000,
        mcpmux: None,
    };
    let mut it = args;
    while let Some(flag) = it.next() {
        let mut value = || it.next().context(format!("{flag} needs a value"));
        match flag.as_str() {
            "--runs" => parsed.runs = value()?.parse()?,
            "--slow-ms" => parsed.slow_ms = value()?.parse()?,
            "--mcpmux" => parsed.mcpmux = Some(PathBuf::from(value()?)),
            other => bail!("unknown flag {other}; flags: --runs N --slow-ms MS --mcpmux PATH"),
        }
    }
    if parsed.runs == 0 {
        bail!("--runs must be at least 1");
    }
    Ok(parsed)
}

/// A config of `target` plus `others` fast test servers and one slow one.
fn config(server: &Path, others: usize, slow_ms: Option<u64>) -> String {
    let mut text = String::new();
    let mut entry = |name: &str, args: &[String]| {
        let args: Vec<String> = args.iter().map(|a| format!("{a:?}")).collect();
        text.push_str(&format!(
            "[servers.{name}]\ncommand = {:?}\nargs = [{}]\n\n",
            server.display().to_string(),
            args.join(", ")
        ));
    };
    entry("target", &[]);
    for i in 0..others {
        // Distinct args: the hub starts a server configured twice only once.
        entry(
            &format!("other{i}"),
            &["--page-size".into(), (500 + i).to_string()],
        );
    }
    if let Some(ms) = slow_ms {
        entry("slow", &["--startup-delay-ms".into(), ms.to_string()]);
    }
    text
}

/// Wall time of one `mcpmux` run in `home`; fails on a non-zero exit.
fn run(mcpmux: &Path, home: &Path, config: &Path, args: &[&str]) -> anyhow::Result<Duration> {
    let started = Instant::now();
    let output = Command::new(mcpmux)
        .arg("--config")
        .arg(config)
        .args(args)
        .current_dir(home)
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_CACHE_HOME", home.join(".cache"))
        .env_remove("RUST_LOG")
        .env_remove("MCPMUX_LOG")
        .stdin(Stdio::null())
        .output()?;
    let took = started.elapsed();
    if !output.status.success() {
        bail!(
            "mcpmux {args:?} failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok(took)
}

fn median(mut values: Vec<Duration>) -> Duration {
    values.sort();
    values[values.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

/// Runs the scenarios and prints their medians.
pub fn main(args: impl Iterator<Item = String>) -> anyhow::Result<()> {
    let args = parse(args)?;
    let (built_mcpmux, server) = crate::programs::build_cli_and_testserver()?;
    let mcpmux = args.mcpmux.clone().unwrap_or(built_mcpmux);
    let dir = std::env::temp_dir().join(format!("mcpmux-bench-cli-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    let write = |name: &str, text: String| -> anyhow::Result<PathBuf> {
        let path = dir.join(name);
        std::fs::write(&path, text)?;
        Ok(path)
    };
    let one = write("one.toml", config(&server, 0, None))?;
    let ten = write("ten.toml", config(&server, 8, Some(args.slow_ms)))?;
    let call = ["call", "mcp__target__echo", r#"{"text":"bench"}"#];
    println!(
        "mcpmux: {}; {} interleaved runs per scenario; the slow server takes {} ms to start",
        mcpmux.display(),
        args.runs,
        args.slow_ms
    );

    // Calls: each scenario in a HOME of its own, so neither warms the other's caches.
    let (home_one, home_ten) = (dir.join("home-one"), dir.join("home-ten"));
    std::fs::create_dir_all(&home_one)?;
    std::fs::create_dir_all(&home_ten)?;
    let (mut with_one, mut with_ten) = (Vec::new(), Vec::new());
    for _ in 0..args.runs {
        with_one.push(run(&mcpmux, &home_one, &one, &call)?);
        with_ten.push(run(&mcpmux, &home_ten, &ten, &call)?);
    }
    let (with_one, with_ten) = (median(with_one), median(with_ten));

    // Listings: cold (no cache: every server starts) and warm (the cache answers).
    let home_list = dir.join("home-list");
    std::fs::create_dir_all(&home_list)?;
    let cold = run(&mcpmux, &home_list, &ten, &["--no-cache", "tools"])?;
    run(&mcpmux, &home_list, &ten, &["tools"])?;
    let mut warm = Vec::new();
    for _ in 0..args.runs {
        warm.push(run(&mcpmux, &home_list, &ten, &["tools"])?);
    }
    let warm = median(warm);
    let _ = std::fs::remove_dir_all(&dir);

    println!();
    println!("| scenario | wall time (median) |");
    println!("|---|---:|");
    println!(
        "| `mcpmux call`, only the target server configured | {} |",
        ms(with_one)
    );
    println!(
        "| `mcpmux call`, 10 servers configured (one slow) | {} |",
        ms(with_ten)
    );
    println!(
        "| `mcpmux tools`, 10 servers, cold (`--no-cache`) | {} |",
        ms(cold)
    );
    println!(
        "| `mcpmux tools`, 10 servers, warm tool cache | {} |",
        ms(warm)
    );
    println!();
    println!(
        "call with 10 servers / call with 1: {:.3}× (goal ≤ 1.05×); warm tools: {} (goal ≤ 50 ms)",
        with_ten.as_secs_f64() / with_one.as_secs_f64(),
        ms(warm)
    );
    Ok(())
}
