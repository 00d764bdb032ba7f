//! Side-by-side benchmark: the mcpmux hub and a raw rmcp client, in one process run, against
//! the same test server over stdio. Measures cold start to tools listed, sequential call
//! latency (p50/p99), throughput with 32 calls in flight, and peak RSS of each phase.
//!
//! `cargo run --release -p mcpmux-bench [-- --calls N --cold N --server PATH]`
//!
//! `cargo run --profile dist -p mcpmux-bench -- peers` runs the peer clients side by side
//! instead (see `peers.rs`; `dist` is the profile we ship, `--release` works too); `-- cli`
//! times whole `mcpmux` processes with many servers configured (lazy start and the tool
//! cache, see `cli.rs`); `-- search` measures tool search on a real
//! catalog and at 10 000 tools (see `search.rs`); `-- result` what a large result costs in
//! memory (see `result.rs`); `-- gateway` loads `mcpmux serve --http` with many sessions and
//! measures its added latency and memory per session (see `gateway/`); `-- sandbox` what a
//! server's sandbox adds to its start and calls (see `sandbox.rs`); `-- tracing` what tracing
//! costs a call, off and on (see `tracing_cost.rs`).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use mcpmux_bench::clients::{Client, hub_connect, raw_connect};
use mcpmux_bench::memory::{peak_rss_kib, reset_peak_rss};

mod cli;
mod gateway;
mod peers;
mod programs;
mod result;
mod sandbox;
mod search;
mod tracing_cost;

use programs::{build_testserver, percentile};

struct Args {
    server: PathBuf,
    cold: usize,
    calls: usize,
    concurrent_total: usize,
    in_flight: usize,
}

fn parse_args() -> anyhow::Result<Args> {
    let mut args = Args {
        server: PathBuf::new(),
        cold: 20,
        calls: 5000,
        concurrent_total: 20_000,
        in_flight: 32,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().context(format!("{flag} needs a value"));
        match flag.as_str() {
            "--server" => args.server = PathBuf::from(value()?),
            "--cold" => args.cold = value()?.parse()?,
            "--calls" => args.calls = value()?.parse()?,
            "--concurrent-total" => args.concurrent_total = value()?.parse()?,
            "--in-flight" => args.in_flight = value()?.parse()?,
            other => bail!(
                "unknown flag {other}; flags: --server PATH --cold N --calls N --concurrent-total N --in-flight N"
            ),
        }
    }
    if args.server.as_os_str().is_empty() {
        args.server = build_testserver()?;
    }
    Ok(args)
}

fn us(d: Duration) -> String {
    format!("{:.1} µs", d.as_secs_f64() * 1e6)
}

#[derive(Default)]
struct Figures {
    cold_start_median: Duration,
    p50: Duration,
    p99: Duration,
    calls_per_sec: f64,
    peak_rss_kib: u64,
}

async fn measure<C, F, Fut>(name: &str, args: &Args, connect: F) -> anyhow::Result<Figures>
where
    C: Client,
    F: Fn() -> Fut,
    Fut: Future<Output = anyhow::Result<(C, usize)>>,
{
    let mut figures = Figures::default();
    reset_peak_rss();

    // Cold start: spawn, handshake, tools listed.
    let mut cold = Vec::new();
    for _ in 0..args.cold {
        let start = Instant::now();
        let (client, tools) = connect().await?;
        cold.push(start.elapsed());
        if tools == 0 {
            bail!("{name}: the server listed no tools");
        }
        client.close().await;
    }
    cold.sort();
    figures.cold_start_median = percentile(&cold, 0.5);

    let (client, _) = connect().await?;
    // Warm up the connection and the allocator.
    for i in 0..200 {
        client.call_echo(format!("warm {i}")).await?;
    }
    let start = Instant::now();
    let per_worker = args.concurrent_total / args.in_flight;
    let workers: Vec<_> = (0..args.in_flight)
        .map(|w| {
            let client = client.clone();
            tokio::spawn(async move {
                for i in 0..per_worker {
                    let text = format!("w{w} c{i}");
                    let answer = client.call_echo(text.clone()).await?;
                    if answer != text {
                        bail!("worker {w} call {i} got {answer:?}");
                    }
                }
                anyhow::Ok(())
            })
        })
        .collect();
    for worker in workers {
        worker.await??;
    }
    let elapsed = start.elapsed();
    figures.calls_per_sec = (per_worker * args.in_flight) as f64 / elapsed.as_secs_f64();
    figures.peak_rss_kib = peak_rss_kib();
    client.close().await;
    Ok(figures)
}

fn main() -> anyhow::Result<()> {
    match std::env::args().nth(1).as_deref() {
        Some("peers") => return peers::main(std::env::args().skip(2)),
        Some("cli") => return cli::main(std::env::args().skip(2)),
        Some("search") => return search::main(std::env::args().skip(2)),
        Some("result") => return result::main(std::env::args().skip(2)),
        Some("result-client") => return result::client_main(std::env::args().skip(2)),
        Some("gateway") => return gateway::main(std::env::args().skip(2)),
        Some("sandbox") => return sandbox::main(std::env::args().skip(2)),
        Some("tracing") => return tracing_cost::main(std::env::args().skip(2)),
        Some("tracing-child") => return tracing_cost::child_main(std::env::args().skip(2)),
        _ => {}
    }
    let args = parse_args()?;
    let server = args.server.to_string_lossy().into_owned();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(async {
        println!(
            "server: {} (stdio); cold starts: {}; sequential calls: {}; concurrent: {} calls, {} in flight",
            args.server.display(),
            args.cold,
            args.calls,
            args.concurrent_total,
            args.in_flight
        );
        // Cold start, throughput and memory, each side on its own; run twice, alternating, and
        // keep each side's best so neither always runs on a warmer machine.
        let raw = measure("raw rmcp", &args, || raw_connect(&server, &[])).await?;
        let hub = measure("mcpmux hub", &args, || hub_connect(&server, &[])).await?;
        let raw2 = measure("raw rmcp", &args, || raw_connect(&server, &[])).await?;
        let hub2 = measure("mcpmux hub", &args, || hub_connect(&server, &[])).await?;
        let best = |a: &Figures, b: &Figures| Figures {
            cold_start_median: a.cold_start_median.min(b.cold_start_median),
            p50: a.p50.min(b.p50),
            p99: a.p99.min(b.p99),
            calls_per_sec: a.calls_per_sec.max(b.calls_per_sec),
            peak_rss_kib: a.peak_rss_kib.max(b.peak_rss_kib),
        };
        let mut raw = best(&raw, &raw2);
        let mut hub = best(&hub, &hub2);
        // Sequential latency interleaved call by call over two live connections: machine noise
        // (another process, frequency changes) then hits both sides alike.
        let (raw_client, _) = raw_connect(&server, &[]).await?;
        let (hub_client, _) = hub_connect(&server, &[]).await?;
        let (mut raw_lat, mut hub_lat) = (Vec::new(), Vec::new());
        for i in 0..(args.calls + 200) {
            let text = format!("call {i}");
            let start = Instant::now();
            let a = raw_client.call_echo(text.clone()).await?;
            let raw_time = start.elapsed();
            let start = Instant::now();
            let b = hub_client.call_echo(text.clone()).await?;
            let hub_time = start.elapsed();
            if a != text || b != text {
                bail!("call {i}: raw {a:?}, hub {b:?}");
            }
            if i >= 200 {
                raw_lat.push(raw_time);
                hub_lat.push(hub_time);
            }
        }
        raw_lat.sort();
        hub_lat.sort();
        raw.p50 = percentile(&raw_lat, 0.5);
        raw.p99 = percentile(&raw_lat, 0.99);
        hub.p50 = percentile(&hub_lat, 0.5);
        hub.p99 = percentile(&hub_lat, 0.99);
        raw_client.close().await;
        hub_client.close().await;
        println!();
        println!("{:<28} {:>14} {:>14} {:>9}", "", "raw rmcp", "mcpmux hub", "hub/raw");
        let row = |label: &str, r: f64, h: f64, fmt: &dyn Fn(f64) -> String| {
            println!("{label:<28} {:>14} {:>14} {:>8.2}x", fmt(r), fmt(h), h / r);
        };
        let ms = |v: f64| format!("{:.2} ms", v * 1e3);
        let micro = |v: f64| us(Duration::from_secs_f64(v));
        row("cold start → tools listed", raw.cold_start_median.as_secs_f64(), hub.cold_start_median.as_secs_f64(), &ms);
        row("sequential call p50", raw.p50.as_secs_f64(), hub.p50.as_secs_f64(), &micro);
        row("sequential call p99", raw.p99.as_secs_f64(), hub.p99.as_secs_f64(), &micro);
        row("calls/s, 32 in flight", raw.calls_per_sec, hub.calls_per_sec, &|v| format!("{v:.0}"));
        row("peak RSS", raw.peak_rss_kib as f64, hub.peak_rss_kib as f64, &|v| format!("{:.1} MiB", v / 1024.0));
        let overhead = (hub.p50.as_secs_f64() / raw.p50.as_secs_f64() - 1.0) * 100.0;
        println!("\nhub sequential p50 overhead vs raw rmcp: {overhead:+.1}% (target: within 10%)");
        anyhow::Ok(())
    })?;
    runtime.shutdown_timeout(Duration::from_secs(1));
    Ok(())
}
