//! What a sandbox costs (issue #33's goal: start ≤ +5 ms, calls unchanged): cold start to
//! tools listed and sequential call latency of the test server through the hub, unsandboxed
//! and under each kind of sandbox (Landlock only; with a user and network namespace; with a
//! pids cgroup for a process limit), the variants interleaved so machine noise hits them alike.
//!
//! `cargo run -p mcpmux-bench -- sandbox [--server PATH] [--cold N] [--calls N]` (the debug
//! test server of `scripts/build-test-programs.sh` by default).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use mcpmux::config::{Limits, Profile, Sandbox};
use mcpmux::{Hub, HubOptions, ServerSpec};
use serde_json::json;

/// The variants measured: a name and the server's sandbox.
fn variants() -> Vec<(&'static str, Option<Sandbox>)> {
    let mut limits = Limits::default();
    limits.processes = Some(256);
    vec![
        ("none", None),
        (
            "project (Landlock)",
            Some(Sandbox::profile(Profile::Project)),
        ),
        (
            "offline (+ user/net ns)",
            Some(Sandbox::profile(Profile::Offline)),
        ),
        (
            "project + processes",
            Some(Sandbox::profile(Profile::Project).with_limits(limits)),
        ),
    ]
}

/// A hub over the test server under `sandbox`, its tools listed.
async fn start(server: &str, sandbox: Option<&Sandbox>) -> anyhow::Result<Hub> {
    let mut spec = ServerSpec::stdio("bench", server, Vec::<String>::new());
    spec.options.sandbox = sandbox.cloned();
    let hub = Hub::start(vec![spec], HubOptions::ephemeral())?;
    hub.wait_ready().await?;
    if hub.tools().is_empty() {
        bail!("the server listed no tools");
    }
    Ok(hub)
}

async fn echo(hub: &Hub, text: String) -> anyhow::Result<()> {
    let answer = hub
        .call("mcp__bench__echo", json!({"text": text}))
        .await?
        .to_text();
    if answer != text {
        bail!("echo answered {answer:?} to {text:?}");
    }
    Ok(())
}

/// Runs the sandbox bench with `args` (after `sandbox`).
pub fn main(args: impl Iterator<Item = String>) -> anyhow::Result<()> {
    let mut server = None;
    let (mut cold, mut calls) = (20usize, 2000usize);
    let mut args = args;
    while let Some(flag) = args.next() {
        let mut value = || args.next().context(format!("{flag} needs a value"));
        match flag.as_str() {
            "--server" => server = Some(PathBuf::from(value()?)),
            "--cold" => cold = value()?.parse()?,
            "--calls" => calls = value()?.parse()?,
            other => bail!("unknown flag {other}; flags: --server PATH --cold N --calls N"),
        }
    }
    let server = match server {
        Some(path) => path,
        None => crate::programs::target_dir(&crate::programs::workspace()?)
            .join("debug")
            .join("mcpmux-testserver"),
    };
    let server = server.to_string_lossy().into_owned();
    let variants = variants();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let mut starts = vec![Vec::new(); variants.len()];
        for _ in 0..cold {
            for (i, (_, sandbox)) in variants.iter().enumerate() {
                let begun = Instant::now();
                let hub = start(&server, sandbox.as_ref()).await?;
                starts[i].push(begun.elapsed());
                hub.shutdown().await;
            }
        }
        let mut hubs = Vec::new();
        for (_, sandbox) in &variants {
            hubs.push(start(&server, sandbox.as_ref()).await?);
        }
        let mut latencies = vec![Vec::new(); variants.len()];
        for n in 0..calls + 100 {
            for (i, hub) in hubs.iter().enumerate() {
                let begun = Instant::now();
                echo(hub, format!("call {n}")).await?;
                if n >= 100 {
                    latencies[i].push(begun.elapsed());
                }
            }
        }
        for hub in hubs {
            hub.shutdown().await;
        }
        println!("server: {server}; cold starts: {cold} each; sequential calls: {calls} each");
        println!(
            "{:<26} {:>12} {:>10} {:>12} {:>12}",
            "sandbox", "start p50", "vs none", "call p50", "call p99"
        );
        let median = |list: &mut Vec<Duration>, p: f64| {
            list.sort();
            super::percentile(list, p)
        };
        let base = median(&mut starts[0], 0.5);
        for (i, (name, _)) in variants.iter().enumerate() {
            let start = median(&mut starts[i], 0.5);
            let delta = start.as_secs_f64() - base.as_secs_f64();
            println!(
                "{name:<26} {:>9.2} ms {:>+7.2} ms {:>12} {:>12}",
                start.as_secs_f64() * 1e3,
                delta * 1e3,
                super::us(median(&mut latencies[i], 0.5)),
                super::us(median(&mut latencies[i], 0.99)),
            );
        }
        anyhow::Ok(())
    })?;
    runtime.shutdown_timeout(Duration::from_secs(1));
    Ok(())
}
