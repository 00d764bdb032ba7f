//! One Rust peer client's run in the side-by-side benchmark (`mcpmux-bench peers`): cold
//! starts, sequential calls, calls in flight, peak memory with one server, then many servers
//! at once; its figures as one JSON line on stdout. The SDK clients (`peers/ts-client.mjs`,
//! `peers/py-client.py`) take the same load and print the same line.
//!
//! Each client is a program of its own (`bench-peer-rmcp`, `bench-peer-hub`), as each SDK's
//! client is: it maps only the code it runs, and no client pays for another's.

use std::time::Instant;

use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};

use crate::clients::{Client, hub_connect, raw_connect};
use crate::memory::{cpu_time_us, peak_rss_kib};

/// How much each client does in one run.
#[derive(Serialize, Deserialize, Clone)]
pub struct Load {
    /// Cold starts (spawn, handshake, tools listed); the median is reported.
    pub cold: usize,
    /// Sequential calls after 200 warm-up calls.
    pub calls: usize,
    /// Calls in the throughput phase, spread over `in_flight` workers.
    pub total: usize,
    /// Workers calling at once in the throughput phase.
    pub in_flight: usize,
    /// Servers started at once in the last phase.
    pub servers: usize,
    /// The server command line.
    pub server: Vec<String>,
}

/// One client's figures, as every client prints them (one JSON line).
#[derive(Serialize, Deserialize, Clone, Default)]
pub struct Figures {
    /// Median cold start, spawn to tools listed (ms).
    pub cold_ms: f64,
    /// Sequential call latency, median (µs).
    pub p50_us: f64,
    /// Sequential call latency, 99th percentile (µs).
    pub p99_us: f64,
    /// The client's CPU time (user and system) per sequential call (µs): what its latency
    /// costs the machine.
    #[serde(default)]
    pub cpu_per_call_us: f64,
    /// Calls answered per second with `in_flight` workers.
    pub calls_per_sec: f64,
    /// `servers` servers started at once until all list their tools (ms).
    pub servers_ms: f64,
    /// Peak resident set before the many-servers phase: one server's worth.
    pub peak_rss_one_mb: f64,
    /// Peak resident set over the whole run, the many-servers phase included.
    pub peak_rss_mb: f64,
}

impl Figures {
    /// The figures of a run: the cold starts (ms) and sequential latencies (µs) as measured
    /// (sorted here), and the peak resident set of the whole run read now.
    pub fn of(
        cold: &mut [f64],
        latencies: &mut [f64],
        cpu_per_call_us: f64,
        calls_per_sec: f64,
        servers_ms: f64,
        peak_rss_one_mb: f64,
    ) -> Self {
        Figures {
            cold_ms: median(cold),
            p50_us: percentile(latencies, 0.5),
            p99_us: percentile(latencies, 0.99),
            cpu_per_call_us,
            calls_per_sec,
            servers_ms,
            peak_rss_one_mb,
            peak_rss_mb: peak_rss_kib() as f64 / 1024.0,
        }
    }
}

/// `bench-peer-rmcp LOAD_JSON [current-thread]`: raw rmcp's run.
pub fn rmcp_main(args: impl Iterator<Item = String>) -> anyhow::Result<()> {
    client_main(args, |load| async move {
        let (program, server_args) = load.server.split_first().context("empty server command")?;
        run(&load, || raw_connect(program, server_args), ten_raw(&load)).await
    })
}

/// `bench-peer-rmcp one-shot PROGRAM ARGS...`: what a person's own rmcp program does for one
/// call, as `mcpmux call` does it: start the server, list its tools, call `echo` once, print
/// the answer, stop the server (on two workers, as `mcpmux call` runs).
pub fn rmcp_one_shot(mut args: impl Iterator<Item = String>) -> anyhow::Result<()> {
    let program = args.next().context("one-shot needs the server's program")?;
    let server_args: Vec<String> = args.collect();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let (client, _tools) = raw_connect(&program, &server_args).await?;
        let text = client.call_echo("bench".into()).await?;
        println!("{text}");
        client.close().await;
        Ok(())
    })
}

/// `bench-peer-hub LOAD_JSON [current-thread]`: the mcpmux hub's run.
pub fn hub_main(args: impl Iterator<Item = String>) -> anyhow::Result<()> {
    client_main(args, |load| async move {
        let (program, server_args) = load.server.split_first().context("empty server command")?;
        run(&load, || hub_connect(program, server_args), ten_hub(&load)).await
    })
}

/// Parses the load and the runtime flavour, runs `client` and prints its figures.
fn client_main<Fut>(
    mut args: impl Iterator<Item = String>,
    client: impl FnOnce(Load) -> Fut,
) -> anyhow::Result<()>
where
    Fut: Future<Output = anyhow::Result<Figures>> + Send + 'static,
{
    let load: Load = serde_json::from_str(&args.next().context("the load JSON is missing")?)?;
    let runtime = match args.next().as_deref() {
        Some("current-thread") => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?,
        None => tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()?,
        Some(other) => bail!("unknown runtime {other}: current-thread, or none for two workers"),
    };
    // From a spawned task, as a harness's agent loop runs: `block_on`'s thread is not one of
    // the runtime's workers, so every wake-up between it and the connection's tasks would
    // cross threads (p50 73 vs 96 µs for the hub on two workers; raw rmcp's the same either
    // way).
    let figures = runtime.block_on(runtime.spawn(client(load)))??;
    println!("{}", serde_json::to_string(&figures)?);
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    Ok(())
}

async fn run<C, F, Fut>(
    load: &Load,
    connect: F,
    ten: impl Future<Output = anyhow::Result<f64>>,
) -> anyhow::Result<Figures>
where
    C: Client,
    F: Fn() -> Fut,
    Fut: Future<Output = anyhow::Result<(C, usize)>>,
{
    let mut cold = Vec::new();
    for _ in 0..load.cold {
        let start = Instant::now();
        let (client, tools) = connect().await?;
        cold.push(start.elapsed().as_secs_f64() * 1e3);
        if tools == 0 {
            bail!("the server listed no tools");
        }
        client.close().await;
    }
    let (client, _) = connect().await?;
    for i in 0..200 {
        echo(&client, format!("warm {i}")).await?;
    }
    let mut latencies = Vec::with_capacity(load.calls);
    let cpu = cpu_time_us();
    for i in 0..load.calls {
        let start = Instant::now();
        echo(&client, format!("call {i}")).await?;
        latencies.push(start.elapsed().as_secs_f64() * 1e6);
    }
    let cpu_per_call_us = (cpu_time_us() - cpu) / load.calls.max(1) as f64;
    let per_worker = load.total / load.in_flight.max(1);
    let start = Instant::now();
    let workers: Vec<_> = (0..load.in_flight)
        .map(|w| {
            let client = client.clone();
            tokio::spawn(async move {
                for i in 0..per_worker {
                    echo(&client, format!("w{w} c{i}")).await?;
                }
                anyhow::Ok(())
            })
        })
        .collect();
    for worker in workers {
        worker.await??;
    }
    let calls_per_sec = (per_worker * load.in_flight) as f64 / start.elapsed().as_secs_f64();
    client.close().await;
    let peak_rss_one_mb = peak_rss_kib() as f64 / 1024.0;
    let servers_ms = ten.await?;
    Ok(Figures::of(
        &mut cold,
        &mut latencies,
        cpu_per_call_us,
        calls_per_sec,
        servers_ms,
        peak_rss_one_mb,
    ))
}

async fn echo<C: Client>(client: &C, text: String) -> anyhow::Result<()> {
    let answer = client.call_echo(text.clone()).await?;
    if answer != text {
        bail!("asked {text:?}, got {answer:?}");
    }
    Ok(())
}

/// Raw rmcp: `servers` connections made concurrently, until each has listed its tools.
async fn ten_raw(load: &Load) -> anyhow::Result<f64> {
    let (program, args) = load.server.split_first().context("empty server command")?;
    let start = Instant::now();
    let mut set = tokio::task::JoinSet::new();
    for _ in 0..load.servers {
        let (program, args) = (program.clone(), args.to_vec());
        set.spawn(async move { raw_connect(&program, &args).await });
    }
    let mut clients = Vec::new();
    while let Some(joined) = set.join_next().await {
        clients.push(joined??.0);
    }
    let elapsed = start.elapsed().as_secs_f64() * 1e3;
    for client in clients {
        client.close().await;
    }
    Ok(elapsed)
}

/// The hub: one hub over `servers` configured servers, until all are ready.
async fn ten_hub(load: &Load) -> anyhow::Result<f64> {
    let (program, args) = load.server.split_first().context("empty server command")?;
    let specs = (0..load.servers)
        .map(|i| {
            // A distinct argument each (the echo server ignores it): identical definitions
            // would be started once.
            let args = args.iter().cloned().chain([format!("bench{i}")]);
            mcpmux::ServerSpec::stdio(format!("bench{i}"), program, args)
        })
        .collect();
    let start = Instant::now();
    let hub = mcpmux::Hub::start(specs, mcpmux::HubOptions::ephemeral())?;
    hub.wait_ready().await?;
    let elapsed = start.elapsed().as_secs_f64() * 1e3;
    let listed = hub.tools().len();
    hub.shutdown().await;
    if listed != load.servers {
        bail!("{listed} tools listed from {} servers", load.servers);
    }
    Ok(elapsed)
}

fn percentile(values: &mut [f64], p: f64) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_by(f64::total_cmp);
    let idx = ((values.len() as f64 - 1.0) * p).round() as usize;
    values[idx.min(values.len() - 1)]
}

/// The median of `values` (sorted in place); 0 when empty.
pub fn median(values: &mut [f64]) -> f64 {
    percentile(values, 0.5)
}
