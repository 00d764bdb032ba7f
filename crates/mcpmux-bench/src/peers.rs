//! The peer clients side by side: the Python SDK, the TypeScript SDK, raw rmcp and the mcpmux
//! hub, each in its own process, against one dependency-free Node echo server over stdio
//! (`peers/echo-server.mjs`), run interleaved round after round; medians printed as a table.
//!
//! `mcpmux-bench peers [--rounds N] [--quick] [--json]` orchestrates; `mcpmux-bench client
//! rmcp|hub LOAD_JSON` is one Rust client's run (the SDK clients are `peers/ts-client.mjs` and
//! `peers/py-client.py`, taking the same load). Every client checks each echo it gets back, so a
//! client that loses or mixes up answers fails the run instead of looking fast.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};

use crate::{Client, hub_connect, peak_rss_kib, raw_connect};

/// How much each client does in one run.
#[derive(Serialize, Deserialize, Clone)]
struct Load {
    /// Cold starts (spawn, handshake, tools listed); the median is reported.
    cold: usize,
    /// Sequential calls after 200 warm-up calls.
    calls: usize,
    /// Calls in the throughput phase, spread over `in_flight` workers.
    total: usize,
    in_flight: usize,
    /// Servers started at once in the last phase.
    servers: usize,
    /// The server command line.
    server: Vec<String>,
}

/// One client's figures, as every client prints them (one JSON line).
#[derive(Serialize, Deserialize, Clone, Default)]
struct Figures {
    cold_ms: f64,
    p50_us: f64,
    p99_us: f64,
    calls_per_sec: f64,
    servers_ms: f64,
    /// Peak resident set before the many-servers phase: one server's worth.
    peak_rss_one_mb: f64,
    /// Peak resident set over the whole run, the many-servers phase included.
    peak_rss_mb: f64,
}

/// The clients, in table order. The Rust clients run twice: on a two-worker runtime (what a
/// harness on tokio's default runtime gets, and what `mcpmux` uses) and on a current-thread
/// runtime (every task on the caller's thread: no wake-up crosses threads, as in the SDKs'
/// single-threaded event loops).
const CLIENTS: [&str; 6] = [
    "Python SDK",
    "TypeScript SDK",
    "rmcp raw",
    "mcpmux hub",
    "rmcp raw, 1 thread",
    "mcpmux hub, 1 thread",
];

/// `mcpmux-bench client rmcp|hub LOAD_JSON [current-thread]`: one Rust client's run, figures
/// on stdout.
pub(crate) fn client_main(mut args: impl Iterator<Item = String>) -> anyhow::Result<()> {
    let kind = args.next().context("client needs a kind: rmcp or hub")?;
    let load: Load = serde_json::from_str(&args.next().context("client needs the load JSON")?)?;
    let (program, server_args) = load.server.split_first().context("empty server command")?;
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
    let (program, server_args) = (program.clone(), server_args.to_vec());
    let client = async move {
        match kind.as_str() {
            "rmcp" => {
                run(
                    &load,
                    || raw_connect(&program, &server_args),
                    ten_raw(&load),
                )
                .await
            }
            "hub" => {
                run(
                    &load,
                    || hub_connect(&program, &server_args),
                    ten_hub(&load),
                )
                .await
            }
            other => bail!("unknown client kind {other}: rmcp or hub"),
        }
    };
    // From a spawned task, as a harness's agent loop runs: `block_on`'s thread is not one of
    // the runtime's workers, so every wake-up between it and the connection's tasks would
    // cross threads (p50 73 vs 96 µs for the hub on two workers; raw rmcp's the same either
    // way).
    let figures = runtime.block_on(runtime.spawn(client))??;
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
    for i in 0..load.calls {
        let start = Instant::now();
        echo(&client, format!("call {i}")).await?;
        latencies.push(start.elapsed().as_secs_f64() * 1e6);
    }
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
    Ok(Figures {
        cold_ms: median(&mut cold),
        p50_us: percentile(&mut latencies, 0.5),
        p99_us: percentile(&mut latencies, 0.99),
        calls_per_sec,
        servers_ms,
        peak_rss_one_mb,
        peak_rss_mb: peak_rss_kib() as f64 / 1024.0,
    })
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

fn median(values: &mut [f64]) -> f64 {
    percentile(values, 0.5)
}

/// Where the pinned peers live: test-deps (installed by `scripts/install-test-deps.sh`).
struct Peers {
    node: PathBuf,
    modules: PathBuf,
    python: PathBuf,
    scripts: PathBuf,
}

impl Peers {
    fn find() -> anyhow::Result<Self> {
        let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
        let workspace = crate_dir.ancestors().nth(2).context("workspace root")?;
        let modules = workspace.join("test-deps");
        let python = modules.join(".venv/bin/python");
        let sdk = modules.join("node_modules/@modelcontextprotocol/sdk/package.json");
        if !sdk.exists() || !python.exists() {
            bail!(
                "the peer SDKs are not installed in {}: run scripts/install-test-deps.sh first",
                modules.display()
            );
        }
        Ok(Self {
            node: PathBuf::from("node"),
            modules,
            python,
            scripts: crate_dir.join("peers"),
        })
    }

    fn command(&self, client: &str, load: &str) -> anyhow::Result<Command> {
        let mut command;
        match client {
            "Python SDK" => {
                command = Command::new(&self.python);
                command.arg(self.scripts.join("py-client.py")).arg(load);
            }
            "TypeScript SDK" => {
                command = Command::new(&self.node);
                command
                    .arg(self.scripts.join("ts-client.mjs"))
                    .arg(&self.modules)
                    .arg(load);
            }
            "rmcp raw" | "mcpmux hub" | "rmcp raw, 1 thread" | "mcpmux hub, 1 thread" => {
                command = Command::new(std::env::current_exe()?);
                let kind = if client.starts_with("rmcp") {
                    "rmcp"
                } else {
                    "hub"
                };
                command.args(["client", kind, load]);
                if client.ends_with("1 thread") {
                    command.arg("current-thread");
                }
            }
            other => bail!("no such client {other}"),
        }
        Ok(command)
    }
}

/// `mcpmux-bench peers`: every client, interleaved for `rounds` rounds, medians as a table.
pub(crate) fn main(args: impl Iterator<Item = String>) -> anyhow::Result<()> {
    let (mut rounds, mut quick, mut json) = (5, false, false);
    let mut args = args;
    while let Some(flag) = args.next() {
        match flag.as_str() {
            "--rounds" => rounds = args.next().context("--rounds needs a value")?.parse()?,
            "--quick" => quick = true,
            "--json" => json = true,
            other => bail!("unknown flag {other}; flags: --rounds N --quick --json"),
        }
    }
    let peers = Peers::find()?;
    let server = vec![
        "node".to_string(),
        peers
            .scripts
            .join("echo-server.mjs")
            .to_string_lossy()
            .into_owned(),
    ];
    let load = if quick {
        rounds = 1;
        Load {
            cold: 1,
            calls: 50,
            total: 320,
            in_flight: 32,
            servers: 2,
            server,
        }
    } else {
        Load {
            cold: 10,
            calls: 5_000,
            total: 20_000,
            in_flight: 32,
            servers: 10,
            server,
        }
    };
    let load_json = serde_json::to_string(&load)?;
    let mut runs: Vec<Vec<Figures>> = vec![Vec::new(); CLIENTS.len()];
    for round in 0..rounds {
        // A different client goes first each round, so none always runs on a warmer machine.
        for k in 0..CLIENTS.len() {
            let index = (round + k) % CLIENTS.len();
            let client = CLIENTS[index];
            let output = peers
                .command(client, &load_json)?
                .stderr(std::process::Stdio::inherit())
                .output()
                .with_context(|| format!("starting the {client} client"))?;
            if !output.status.success() {
                bail!("the {client} client failed ({})", output.status);
            }
            let line = String::from_utf8_lossy(&output.stdout);
            let figures: Figures =
                serde_json::from_str(line.trim().lines().last().unwrap_or(""))
                    .with_context(|| format!("the {client} client printed {line:?}"))?;
            runs[index].push(figures);
        }
    }
    let medians: Vec<Figures> = runs.iter().map(|r| medians(r)).collect();
    if json {
        let table: serde_json::Map<String, serde_json::Value> = CLIENTS
            .iter()
            .zip(&medians)
            .map(|(c, f)| Ok((c.to_string(), serde_json::to_value(f)?)))
            .collect::<anyhow::Result<_>>()?;
        println!("{}", serde_json::Value::Object(table));
        return Ok(());
    }
    print_table(&load, rounds, &medians);
    Ok(())
}

fn medians(runs: &[Figures]) -> Figures {
    let pick = |f: fn(&Figures) -> f64| median(&mut runs.iter().map(f).collect::<Vec<_>>());
    Figures {
        cold_ms: pick(|f| f.cold_ms),
        p50_us: pick(|f| f.p50_us),
        p99_us: pick(|f| f.p99_us),
        calls_per_sec: pick(|f| f.calls_per_sec),
        servers_ms: pick(|f| f.servers_ms),
        peak_rss_one_mb: pick(|f| f.peak_rss_one_mb),
        peak_rss_mb: pick(|f| f.peak_rss_mb),
    }
}

/// A table row: its label, the figure it shows, and the decimals to print.
type Row = (&'static str, fn(&Figures) -> f64, usize);

fn print_table(load: &Load, rounds: usize, medians: &[Figures]) {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    println!(
        "machine: {cpu}, {cores} cores; {rounds} interleaved rounds, medians; server: node echo-server.mjs over stdio"
    );
    println!(
        "load per client run: {} cold starts, {} sequential calls, {} calls with {} in flight, {} servers at once\n",
        load.cold, load.calls, load.total, load.in_flight, load.servers
    );
    print!("| metric |");
    for client in CLIENTS {
        print!(" {client} |");
    }
    println!("\n|---|{}", "---:|".repeat(CLIENTS.len()));
    let rows: [Row; 7] = [
        ("cold start → tools listed (ms)", |f| f.cold_ms, 1),
        ("sequential call p50 (µs)", |f| f.p50_us, 0),
        ("sequential call p99 (µs)", |f| f.p99_us, 0),
        ("calls/s, 32 in flight", |f| f.calls_per_sec, 0),
        ("servers started concurrently (ms)", |f| f.servers_ms, 0),
        ("client peak RSS, one server (MB)", |f| f.peak_rss_one_mb, 1),
        (
            "client peak RSS, with the servers above (MB)",
            |f| f.peak_rss_mb,
            1,
        ),
    ];
    for (label, value, decimals) in rows {
        print!("| {label} |");
        for figures in medians {
            print!(" {:.*} |", decimals, value(figures));
        }
        println!();
    }
}
