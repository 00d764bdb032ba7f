//! What tracing costs a call (issue #34: off must cost nothing measurable): sequential latency
//! and throughput of the hub over the test server in three processes set up as a program
//! embedding mcpmux would be — no `tracing` subscriber at all; the CLI's subscriber (log lines
//! at `warn`) with no OTLP endpoint, so every call span is disabled; and that subscriber with
//! an OpenTelemetry layer exporting every span over OTLP/HTTP (to a sink in the process that
//! answers 200) with the W3C propagator installed, so each request carries a `traceparent`.
//! Each mode runs in a process of its own (a subscriber is set once per process), the modes
//! interleaved over rounds so machine noise hits them alike; each mode's best round is kept.
//!
//! `cargo run --release -p mcpmux-bench -- tracing [--server PATH] [--calls N] [--rounds N]`

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use mcpmux_bench::clients::{Client, hub_connect};
use opentelemetry::trace::TracerProvider as _;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

use crate::programs::{build_testserver, percentile};

/// The modes, in the order each round runs them.
const MODES: [&str; 3] = ["none", "off", "on"];

/// Calls in flight in the throughput phase, as the main bench.
const IN_FLIGHT: usize = 32;

/// Runs the bench with `args` (after `tracing`).
pub fn main(args: impl Iterator<Item = String>) -> anyhow::Result<()> {
    let mut server = None;
    let (mut calls, mut rounds) = (5000usize, 3usize);
    let mut args = args;
    while let Some(flag) = args.next() {
        let mut value = || args.next().context(format!("{flag} needs a value"));
        match flag.as_str() {
            "--server" => server = Some(PathBuf::from(value()?)),
            "--calls" => calls = value()?.parse()?,
            "--rounds" => rounds = value()?.parse()?,
            other => bail!("unknown flag {other}; flags: --server PATH --calls N --rounds N"),
        }
    }
    let server = match server {
        Some(server) => server,
        None => build_testserver()?,
    };
    let me = std::env::current_exe()?;
    let mut best: Vec<Option<Figures>> = vec![None; MODES.len()];
    for round in 0..rounds {
        for (at, mode) in MODES.iter().enumerate() {
            let output = Command::new(&me)
                .args(["tracing-child", mode, "--calls", &calls.to_string()])
                .arg("--server")
                .arg(&server)
                .stderr(Stdio::inherit())
                .output()?;
            if !output.status.success() {
                bail!("round {round}, mode {mode}: {}", output.status);
            }
            let figures: Figures = serde_json::from_slice(&output.stdout)
                .with_context(|| String::from_utf8_lossy(&output.stdout).into_owned())?;
            best[at] = Some(match best[at].take() {
                Some(before) => before.best(&figures),
                None => figures,
            });
        }
    }
    println!(
        "server: {} (stdio); {calls} sequential calls, {} with {IN_FLIGHT} in flight; best of {rounds} rounds",
        server.display(),
        calls * 4
    );
    println!(
        "{:<44} {:>10} {:>10} {:>10} {:>10}",
        "mode", "p50", "p99", "mean", "calls/s"
    );
    let labels = [
        "no tracing subscriber",
        "CLI subscriber, OTLP endpoint unset (off)",
        "OTLP endpoint set (every span exported)",
    ];
    for (label, figures) in labels.iter().zip(best.iter().flatten()) {
        println!(
            "{label:<44} {:>10} {:>10} {:>10} {:>10.0}",
            us(figures.p50_us),
            us(figures.p99_us),
            us(figures.mean_us),
            figures.calls_per_sec
        );
    }
    Ok(())
}

fn us(micros: f64) -> String {
    format!("{micros:.1} µs")
}

/// What one process measured.
#[derive(Clone, serde::Serialize, serde::Deserialize)]
struct Figures {
    p50_us: f64,
    p99_us: f64,
    mean_us: f64,
    calls_per_sec: f64,
}

impl Figures {
    fn best(&self, other: &Figures) -> Figures {
        Figures {
            p50_us: self.p50_us.min(other.p50_us),
            p99_us: self.p99_us.min(other.p99_us),
            mean_us: self.mean_us.min(other.mean_us),
            calls_per_sec: self.calls_per_sec.max(other.calls_per_sec),
        }
    }
}

/// One mode's process (`tracing-child MODE --calls N --server PATH`): prints its figures as
/// JSON.
pub fn child_main(args: impl Iterator<Item = String>) -> anyhow::Result<()> {
    let mut args = args;
    let mode = args.next().context("a mode")?;
    let (mut calls, mut server) = (5000usize, None);
    while let Some(flag) = args.next() {
        let mut value = || args.next().context(format!("{flag} needs a value"));
        match flag.as_str() {
            "--calls" => calls = value()?.parse()?,
            "--server" => server = Some(value()?),
            other => bail!("unknown flag {other}"),
        }
    }
    let server = server.context("--server")?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let _guard = runtime.enter();
    let provider = match mode.as_str() {
        "none" => None,
        "off" => {
            tracing_subscriber::registry().with(log_lines()).init();
            None
        }
        "on" => {
            let provider = exporting()?;
            let tracer = provider.tracer("mcpmux");
            let targets = ["mcpmux", "mcpmux_gateway", "mcpmux_agent", "mcpmux_cli"]
                .iter()
                .fold(Targets::new(), |t, name| {
                    t.with_target(*name, LevelFilter::INFO)
                });
            tracing_subscriber::registry()
                .with(log_lines())
                .with(
                    tracing_opentelemetry::layer()
                        .with_tracer(tracer)
                        .with_filter(targets),
                )
                .init();
            mcpmux::telemetry::propagate::install(mcpmux::telemetry::w3c::W3cPropagator::default());
            Some(provider)
        }
        other => bail!("unknown mode {other}"),
    };
    let figures = runtime.block_on(measure(&server, calls))?;
    if let Some(provider) = provider {
        let _ = provider.shutdown();
    }
    println!("{}", serde_json::to_string(&figures)?);
    Ok(())
}

/// Log lines at `warn`, to stderr, as the CLI writes them without `-v`.
fn log_lines<S>() -> impl Layer<S>
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_filter(LevelFilter::WARN)
}

/// An OTLP/HTTP exporter to a sink in this process, batched as the CLI's.
fn exporting() -> anyhow::Result<opentelemetry_sdk::trace::SdkTracerProvider> {
    use opentelemetry_otlp::WithExportConfig;
    let port = sink()?;
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_endpoint(format!("http://127.0.0.1:{port}/v1/traces"))
        .build()?;
    Ok(opentelemetry_sdk::trace::SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .build())
}

/// An OTLP/HTTP receiver that reads each request and answers 200: its port.
fn sink() -> anyhow::Result<u16> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let port = listener.local_addr()?.port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || -> std::io::Result<()> {
                let mut reader = BufReader::new(stream.try_clone()?);
                let mut stream = stream;
                loop {
                    let mut length = 0usize;
                    loop {
                        let mut line = String::new();
                        if reader.read_line(&mut line)? == 0 {
                            return Ok(());
                        }
                        let line = line.trim_end();
                        if line.is_empty() {
                            break;
                        }
                        if let Some((name, value)) = line.split_once(':')
                            && name.eq_ignore_ascii_case("content-length")
                        {
                            length = value.trim().parse().unwrap_or(0);
                        }
                    }
                    let mut body = vec![0; length];
                    reader.read_exact(&mut body)?;
                    stream.write_all(
                        b"HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n",
                    )?;
                }
            });
        }
    });
    Ok(port)
}

/// Sequential latency, then throughput with [`IN_FLIGHT`] calls in flight.
async fn measure(server: &str, calls: usize) -> anyhow::Result<Figures> {
    let (client, _) = hub_connect(server, &[]).await?;
    for i in 0..200 {
        client.call_echo(format!("warm {i}")).await?;
    }
    let mut latencies = Vec::with_capacity(calls);
    for i in 0..calls {
        let text = format!("call {i}");
        let start = Instant::now();
        let answer = client.call_echo(text.clone()).await?;
        latencies.push(start.elapsed());
        if answer != text {
            bail!("call {i} got {answer:?}");
        }
    }
    let mean = latencies.iter().sum::<Duration>() / u32::try_from(calls.max(1))?;
    latencies.sort();
    let total = calls * 4;
    let per_worker = total / IN_FLIGHT;
    let start = Instant::now();
    let workers: Vec<_> = (0..IN_FLIGHT)
        .map(|w| {
            let client = client.clone();
            tokio::spawn(async move {
                for i in 0..per_worker {
                    client.call_echo(format!("w{w} c{i}")).await?;
                }
                anyhow::Ok(())
            })
        })
        .collect();
    for worker in workers {
        worker.await??;
    }
    let elapsed = start.elapsed();
    client.close().await;
    Ok(Figures {
        p50_us: percentile(&latencies, 0.5).as_secs_f64() * 1e6,
        p99_us: percentile(&latencies, 0.99).as_secs_f64() * 1e6,
        mean_us: mean.as_secs_f64() * 1e6,
        calls_per_sec: (per_worker * IN_FLIGHT) as f64 / elapsed.as_secs_f64(),
    })
}
