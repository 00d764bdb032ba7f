//! The gateway on loopback: a real `mcpmux serve --http` process in front of a real
//! `mcpmux-testserver --http` process, driven by rmcp's streamable-HTTP client from this one.
//! Three measures, each a phase:
//!
//! - **load**: S downstream sessions at once, each making C echo calls (K at a time); every
//!   call sends a token no other call sends and must get exactly that token back. Answers that
//!   carry another call's token (misrouted), errors, and calls that got nothing within the
//!   deadline (lost; the rest of that session's calls are then counted lost too, so the run
//!   stops by itself) are counted; p50/p99 of the answered calls and calls/s are reported, and
//!   the run fails unless every call was answered.
//! - **latency**: the same client code calling the test server directly and through the
//!   gateway, one call each in turn (the order swapped every call), in rounds; each round's
//!   p50s, and the gateway's added latency as the median over rounds of their difference.
//! - **memory**: the gateway's resident set with N idle sessions open against none (after one
//!   session came and went), divided by N, read once the gateway parked them (`/metrics`); streamable-HTTP sessions and legacy SSE ones, each
//!   on a fresh gateway.
//! - **peers** (only when asked for: `--phase peers`): `mcpmux serve` beside the peer gateways
//!   installed in test-deps/, each in front of the test server over stdio, in interleaved
//!   rounds (`peers`).
//!
//! `cargo run --release -p mcpmux-bench -- gateway [--sessions 64] [--calls 2000]
//! [--in-flight 1] [--rounds 7] [--round-calls 1000] [--idle 256] [--phase
//! all|load|latency|memory|peers] [--quick] [--json] [--mcpmux PATH --server PATH]
//! [--upstream-arg ARG]… [--upstream http|stdio] [--serve-arg ARG]… [--b-mcpmux PATH]
//! [--b-serve-arg ARG]…` (without `--mcpmux`/`--server`, release builds are made).
//! `--serve-arg` adds a flag to `mcpmux serve`; `--b-mcpmux` or `--b-serve-arg` stand up a
//! second gateway, B (another build, or the same with other flags), whose calls the latency
//! phase interleaves with the first's: an A/B in one run, on one machine at one moment. The gateway reaches the test server the direct calls reach, over
//! streamable HTTP; with `--upstream stdio` it runs one of its own over stdio instead (the
//! direct calls still go over HTTP), which leaves out the second HTTP round trip.

mod client;
mod peers;
mod processes;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde::Serialize;

use client::{Outcome, Session, connect, connect_legacy, echo, echo_checked, judge};
use processes::{Listening, Upstream};

/// How long one call may take before it counts as lost.
const CALL_DEADLINE: Duration = Duration::from_secs(30);
/// How long the gateway is left alone before its resident set is read.
const SETTLE: Duration = Duration::from_millis(300);
/// How long idle sessions are given to be parked (the default park-after is 5 s, and the
/// sweep that parks them runs every 2.5 s).
const PARK_WAIT: Duration = Duration::from_secs(15);

/// How many sessions the gateway at `base` says are parked (`/metrics`; 0 if it cannot tell).
async fn parked(http: &reqwest::Client, base: &str) -> u64 {
    let Ok(answer) = http.get(format!("{base}/metrics")).send().await else {
        return 0;
    };
    let text = answer.text().await.unwrap_or_default();
    text.lines()
        .find_map(|line| line.strip_prefix("mcpmux_gateway_sessions_parked "))
        .and_then(|value| value.trim().parse::<f64>().ok())
        .map_or(0, |value| value as u64)
}

struct Args {
    sessions: usize,
    calls: usize,
    in_flight: usize,
    rounds: usize,
    round_calls: usize,
    warm: usize,
    idle: usize,
    phase: String,
    /// How the gateway reaches the test server: `http` (the same server the direct calls
    /// reach) or `stdio` (a child of the gateway).
    upstream: String,
    json: bool,
    mcpmux: Option<PathBuf>,
    server: Option<PathBuf>,
    upstream_args: Vec<String>,
    /// Flags added to `mcpmux serve`.
    serve_args: Vec<String>,
    /// The build of gateway B, when not the same as A's.
    b_mcpmux: Option<PathBuf>,
    /// Flags added to gateway B's `mcpmux serve`.
    b_serve_args: Vec<String>,
    /// Whether the latency and peers phases run a gateway B beside A.
    b: bool,
}

fn parse(args: impl Iterator<Item = String>) -> anyhow::Result<Args> {
    let mut parsed = Args {
        sessions: 64,
        calls: 2000,
        in_flight: 1,
        rounds: 7,
        round_calls: 1000,
        warm: 200,
        idle: 256,
        phase: "all".into(),
        upstream: "http".into(),
        json: false,
        mcpmux: None,
        server: None,
        upstream_args: Vec::new(),
        serve_args: Vec::new(),
        b_mcpmux: None,
        b_serve_args: Vec::new(),
        b: false,
    };
    let mut it = args;
    while let Some(flag) = it.next() {
        let mut value = || it.next().context(format!("{flag} needs a value"));
        match flag.as_str() {
            "--sessions" => parsed.sessions = value()?.parse()?,
            "--calls" => parsed.calls = value()?.parse()?,
            "--in-flight" => parsed.in_flight = value()?.parse()?,
            "--rounds" => parsed.rounds = value()?.parse()?,
            "--round-calls" => parsed.round_calls = value()?.parse()?,
            "--idle" => parsed.idle = value()?.parse()?,
            "--phase" => parsed.phase = value()?,
            "--upstream" => parsed.upstream = value()?,
            "--mcpmux" => parsed.mcpmux = Some(PathBuf::from(value()?)),
            "--server" => parsed.server = Some(PathBuf::from(value()?)),
            "--upstream-arg" => parsed.upstream_args.push(value()?),
            "--serve-arg" => parsed.serve_args.push(value()?),
            "--b-mcpmux" => {
                parsed.b_mcpmux = Some(PathBuf::from(value()?));
                parsed.b = true;
            }
            "--b-serve-arg" => {
                parsed.b_serve_args.push(value()?);
                parsed.b = true;
            }
            "--json" => parsed.json = true,
            "--quick" => {
                parsed.sessions = 4;
                parsed.calls = 50;
                parsed.in_flight = 2;
                parsed.rounds = 3;
                parsed.round_calls = 30;
                parsed.warm = 10;
                parsed.idle = 8;
            }
            other => bail!(
                "unknown flag {other}; flags: --sessions N --calls N --in-flight N --rounds N \
                 --round-calls N --idle N --phase all|load|latency|memory|peers --upstream http|stdio \
                 --quick --json --mcpmux PATH --server PATH --upstream-arg ARG --serve-arg ARG \
                 --b-mcpmux PATH --b-serve-arg ARG"
            ),
        }
    }
    if parsed.sessions == 0 || parsed.in_flight == 0 || parsed.rounds == 0 {
        bail!("--sessions, --in-flight and --rounds must be at least 1");
    }
    if !["all", "load", "latency", "memory", "peers"].contains(&parsed.phase.as_str()) {
        bail!("--phase is all, load, latency, memory or peers");
    }
    if !["http", "stdio"].contains(&parsed.upstream.as_str()) {
        bail!("--upstream is http or stdio");
    }
    Ok(parsed)
}

impl Args {
    /// Whether `phase` is to run: `all` is every phase but `peers`, which starts other
    /// people's gateways and runs only when asked for.
    fn runs(&self, phase: &str) -> bool {
        self.phase == phase || (self.phase == "all" && phase != "peers")
    }
}

/// What a run measured; a phase not run leaves its figures out.
#[derive(Serialize, Default)]
struct Figures {
    load: Option<Load>,
    latency: Option<Latency>,
    memory: Option<Memory>,
    peers: Option<peers::Table>,
}

#[derive(Serialize, Default)]
struct Load {
    sessions: usize,
    calls_per_session: usize,
    in_flight_per_session: usize,
    answered: usize,
    misrouted: usize,
    errored: usize,
    lost: usize,
    p50_us: f64,
    p99_us: f64,
    calls_per_sec: f64,
    /// CPU time the gateway process used per answered call (user and system).
    gateway_cpu_per_call_us: f64,
}

#[derive(Serialize, Default)]
struct Latency {
    rounds: usize,
    calls_per_round: usize,
    direct_p50_us: f64,
    direct_p99_us: f64,
    /// Gateway A, its figures at the top level of the JSON as before B existed.
    #[serde(flatten)]
    a: Through,
    /// Gateway B, when one ran beside A.
    b: Option<Through>,
}

/// One gateway's figures in the latency phase.
#[derive(Serialize, Default)]
struct Through {
    gateway_p50_us: f64,
    gateway_p99_us: f64,
    /// Median over rounds of (gateway p50 − direct p50).
    added_p50_us: f64,
    added_min_us: f64,
    added_max_us: f64,
    /// CPU time the gateway process used per sequential call through it (its upstream
    /// child not counted).
    gateway_cpu_per_call_us: f64,
}

#[derive(Serialize, Default)]
struct Memory {
    idle_sessions: usize,
    /// How many of them the gateway had parked when its resident set was read.
    parked_sessions: u64,
    rss_none_kib: u64,
    rss_idle_kib: u64,
    per_idle_session_kib: f64,
    /// The same for legacy SSE sessions (`/sse`), on a gateway of their own.
    legacy_rss_none_kib: u64,
    legacy_rss_idle_kib: u64,
    per_idle_legacy_session_kib: f64,
}

/// Runs the phases asked for and prints the figures; fails when a call was not answered.
pub fn main(args: impl Iterator<Item = String>) -> anyhow::Result<()> {
    let args = parse(args)?;
    let (mcpmux, server) = match (&args.mcpmux, &args.server) {
        (Some(mcpmux), Some(server)) => (mcpmux.clone(), server.clone()),
        _ => {
            let (mcpmux, server) = crate::programs::build_cli_and_testserver()?;
            (
                args.mcpmux.clone().unwrap_or(mcpmux),
                args.server.clone().unwrap_or(server),
            )
        }
    };
    // The gateway runs in another directory: a relative path would name nothing there.
    let mcpmux = std::fs::canonicalize(&mcpmux).with_context(|| mcpmux.display().to_string())?;
    let server = std::fs::canonicalize(&server).with_context(|| server.display().to_string())?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let home = std::env::temp_dir().join(format!("mcpmux-bench-gateway-{}", std::process::id()));
    let figures = runtime.block_on(run(&args, &mcpmux, &server, &home));
    let _ = std::fs::remove_dir_all(&home);
    runtime.shutdown_timeout(Duration::from_secs(1));
    let figures = figures?;
    if args.json {
        println!("{}", serde_json::to_string(&figures)?);
    } else {
        // The peers phase puts every gateway in front of the test server over stdio.
        let over = if args.phase == "peers" {
            "stdio"
        } else {
            &args.upstream
        };
        print_table(&mcpmux, over, &figures);
    }
    if let Some(load) = &figures.load {
        let unanswered = load.misrouted + load.errored + load.lost;
        if unanswered > 0 {
            bail!(
                "{unanswered} of {} calls not answered: {} misrouted, {} errored, {} lost",
                load.sessions * load.calls_per_session,
                load.misrouted,
                load.errored,
                load.lost
            );
        }
    }
    Ok(())
}

async fn run(args: &Args, mcpmux: &Path, server: &Path, home: &Path) -> anyhow::Result<Figures> {
    let http = reqwest::Client::builder()
        .pool_idle_timeout(Duration::from_secs(60))
        .build()?;
    let upstream = processes::upstream(server, &args.upstream_args)?;
    if args.runs("peers") {
        let table = peers::run(args, mcpmux, server, &home.join("peers"), upstream, &http).await?;
        return Ok(Figures {
            peers: Some(table),
            ..Figures::default()
        });
    }
    let start_with = |home: PathBuf, mcpmux: PathBuf, extra: Vec<String>| {
        let (http, upstream_url) = (http.clone(), upstream.url.clone());
        async move {
            let to = match args.upstream.as_str() {
                "stdio" => Upstream::Stdio(server, &args.upstream_args),
                _ => Upstream::Http(&upstream_url),
            };
            processes::gateway(&mcpmux, &home, to, &extra, &http).await
        }
    };
    let start = |home: PathBuf| start_with(home, mcpmux.to_path_buf(), args.serve_args.clone());
    let mut figures = Figures::default();
    // Memory first, each kind of session on a gateway of its own that nothing has grown yet
    // (memory an allocator keeps after sessions closed would pass for the next ones').
    if args.runs("memory") {
        let mcp = start(home.join("memory-mcp")).await?;
        let legacy = start(home.join("memory-sse")).await?;
        figures.memory = Some(memory(args, &mcp, &legacy, &http).await?);
    }
    let gateway = start(home.join("gateway")).await?;
    if args.runs("latency") {
        let b = match args.b {
            true => {
                let build = args
                    .b_mcpmux
                    .clone()
                    .unwrap_or_else(|| mcpmux.to_path_buf());
                let build =
                    std::fs::canonicalize(&build).with_context(|| build.display().to_string())?;
                Some(start_with(home.join("gateway-b"), build, args.b_serve_args.clone()).await?)
            }
            false => None,
        };
        figures.latency = Some(latency(args, &upstream, &gateway, b.as_ref(), &http).await?);
    }
    if args.runs("load") {
        figures.load = Some(load(args, &gateway, &http).await?);
    }
    Ok(figures)
}

/// A gateway's resident set with `args.idle` sessions open, against none: streamable-HTTP
/// sessions on `gateway`, legacy SSE ones on `legacy`.
async fn memory(
    args: &Args,
    gateway: &Listening,
    legacy_gateway: &Listening,
    http: &reqwest::Client,
) -> anyhow::Result<Memory> {
    // One session comes and goes first: what the first one costs once is not per session.
    let first = connect(http, &gateway.url).await?;
    echo_checked(&first, "mcp__t__echo", "first", CALL_DEADLINE).await?;
    let _ = first.cancel().await;
    tokio::time::sleep(SETTLE).await;
    let rss_none_kib = gateway.rss_kib()?;
    let mut idle = Vec::with_capacity(args.idle);
    for _ in 0..args.idle {
        idle.push(connect(http, &gateway.url).await?);
    }
    // Idle sessions are parked after `--session-park-after` (5 s by default): read the
    // resident set once they are, or once they plainly will not be.
    let deadline = Instant::now() + PARK_WAIT;
    let mut parked_sessions = parked(http, gateway.base()).await;
    while parked_sessions < args.idle as u64 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(250)).await;
        parked_sessions = parked(http, gateway.base()).await;
    }
    tokio::time::sleep(SETTLE).await;
    let rss_idle_kib = gateway.rss_kib()?;
    futures_close(idle).await;
    // Legacy SSE sessions, one come and gone first as well.
    drop(connect_legacy(http, legacy_gateway.base()).await?);
    tokio::time::sleep(SETTLE).await;
    let legacy_rss_none_kib = legacy_gateway.rss_kib()?;
    let mut legacy = Vec::with_capacity(args.idle);
    for _ in 0..args.idle {
        legacy.push(connect_legacy(http, legacy_gateway.base()).await?);
    }
    tokio::time::sleep(SETTLE).await;
    let legacy_rss_idle_kib = legacy_gateway.rss_kib()?;
    drop(legacy);
    let per = |none: u64, idle: u64| (idle as f64 - none as f64) / args.idle.max(1) as f64;
    Ok(Memory {
        idle_sessions: args.idle,
        parked_sessions,
        rss_none_kib,
        rss_idle_kib,
        per_idle_session_kib: per(rss_none_kib, rss_idle_kib),
        legacy_rss_none_kib,
        legacy_rss_idle_kib,
        per_idle_legacy_session_kib: per(legacy_rss_none_kib, legacy_rss_idle_kib),
    })
}

/// Closes sessions, all at once.
async fn futures_close(sessions: Vec<Session>) {
    let closing: Vec<_> = sessions
        .into_iter()
        .map(|session| tokio::spawn(session.cancel()))
        .collect();
    for closed in closing {
        let _ = closed.await;
    }
}

/// Sequential calls direct and through the gateway (and gateway B, if any), in turn; each
/// gateway's added latency and CPU time per call.
async fn latency(
    args: &Args,
    upstream: &Listening,
    gateway: &Listening,
    b: Option<&Listening>,
    http: &reqwest::Client,
) -> anyhow::Result<Latency> {
    let direct = connect(http, &upstream.url).await?;
    let mut sides = vec![(gateway, connect(http, &gateway.url).await?, Side::default())];
    if let Some(b) = b {
        sides.push((b, connect(http, &b.url).await?, Side::default()));
    }
    for i in 0..args.warm {
        let token = format!("warm {i}");
        echo_checked(&direct, "echo", &token, CALL_DEADLINE).await?;
        for (_, session, _) in &sides {
            echo_checked(session, "mcp__t__echo", &token, CALL_DEADLINE).await?;
        }
    }
    let mut all_direct = Vec::new();
    let paths = sides.len() + 1;
    for round in 0..args.rounds {
        let mut d = Vec::new();
        let mut g: Vec<Vec<Duration>> = vec![Vec::new(); sides.len()];
        let mut cpu = Vec::new();
        for (process, _, _) in &sides {
            cpu.push(process.cpu()?);
        }
        for i in 0..args.round_calls {
            let token = format!("latency r{round} c{i}");
            // The order turned every call, so no side always runs on a cache another warmed.
            for k in 0..paths {
                match (i + k) % paths {
                    0 => d.push(echo_checked(&direct, "echo", &token, CALL_DEADLINE).await?),
                    n => g[n - 1].push(
                        echo_checked(&sides[n - 1].1, "mcp__t__echo", &token, CALL_DEADLINE)
                            .await?,
                    ),
                }
            }
        }
        d.sort();
        let direct_p50 = micros(percentile(&d, 0.5));
        for (n, (process, _, side)) in sides.iter_mut().enumerate() {
            side.cpu += process.cpu()?.saturating_sub(cpu[n]);
            g[n].sort();
            side.added.push(micros(percentile(&g[n], 0.5)) - direct_p50);
            side.calls.append(&mut g[n]);
        }
        all_direct.extend(d);
    }
    let _ = direct.cancel().await;
    all_direct.sort();
    let mut through = Vec::new();
    for (_, session, mut side) in sides {
        let _ = session.cancel().await;
        side.calls.sort();
        side.added.sort_by(f64::total_cmp);
        through.push(Through {
            gateway_p50_us: micros(percentile(&side.calls, 0.5)),
            gateway_p99_us: micros(percentile(&side.calls, 0.99)),
            added_p50_us: side.added[side.added.len() / 2],
            added_min_us: side.added[0],
            added_max_us: side.added[side.added.len() - 1],
            gateway_cpu_per_call_us: micros(side.cpu) / side.calls.len().max(1) as f64,
        });
    }
    let mut through = through.into_iter();
    Ok(Latency {
        rounds: args.rounds,
        calls_per_round: args.round_calls,
        direct_p50_us: micros(percentile(&all_direct, 0.5)),
        direct_p99_us: micros(percentile(&all_direct, 0.99)),
        a: through.next().unwrap_or_default(),
        b: through.next(),
    })
}

/// What one gateway's calls measured in the latency phase, round by round.
#[derive(Default)]
struct Side {
    calls: Vec<Duration>,
    added: Vec<f64>,
    cpu: Duration,
}

/// What one lane of a session saw.
#[derive(Default)]
struct Tally {
    answered: usize,
    misrouted: usize,
    errored: usize,
    lost: usize,
    latencies: Vec<Duration>,
}

/// `args.sessions` sessions at once, each making `args.calls` calls, every answer checked.
async fn load(args: &Args, gateway: &Listening, http: &reqwest::Client) -> anyhow::Result<Load> {
    let opening: Vec<_> = (0..args.sessions)
        .map(|_| {
            let (http, url) = (http.clone(), gateway.url.clone());
            tokio::spawn(async move { connect(&http, &url).await })
        })
        .collect();
    let mut sessions = Vec::with_capacity(args.sessions);
    for opened in opening {
        sessions.push(Arc::new(opened.await??));
    }
    for (s, session) in sessions.iter().enumerate() {
        for i in 0..args.warm.min(20) {
            echo_checked(
                session,
                "mcp__t__echo",
                &format!("warm s{s} c{i}"),
                CALL_DEADLINE,
            )
            .await?;
        }
    }
    // Tokens of this run only: an answer left from another run cannot pass for one.
    let run = format!(
        "{:x}{:x}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .subsec_nanos()
    );
    let cpu_before = gateway.cpu()?;
    let started = Instant::now();
    let mut lanes = Vec::new();
    for (s, session) in sessions.iter().enumerate() {
        for lane in 0..args.in_flight {
            let session = session.clone();
            let run = run.clone();
            let calls: Vec<usize> = (lane..args.calls).step_by(args.in_flight).collect();
            lanes.push(tokio::spawn(async move {
                let mut tally = Tally::default();
                for (n, i) in calls.iter().enumerate() {
                    let token = format!("{run}-s{s}-c{i}");
                    let (reply, took) = echo(&session, "mcp__t__echo", &token, CALL_DEADLINE).await;
                    match judge(&token, &reply) {
                        Outcome::Answered => {
                            tally.answered += 1;
                            tally.latencies.push(took);
                        }
                        Outcome::Misrouted => tally.misrouted += 1,
                        Outcome::Errored => tally.errored += 1,
                        Outcome::Lost => {
                            // A session that lost an answer is not waited on again.
                            tally.lost += calls.len() - n;
                            break;
                        }
                    }
                }
                tally
            }));
        }
    }
    let mut total = Tally::default();
    for lane in lanes {
        let tally = lane.await?;
        total.answered += tally.answered;
        total.misrouted += tally.misrouted;
        total.errored += tally.errored;
        total.lost += tally.lost;
        total.latencies.extend(tally.latencies);
    }
    let elapsed = started.elapsed();
    let cpu = gateway.cpu()?.saturating_sub(cpu_before);
    let sessions: Vec<Session> = sessions
        .into_iter()
        .filter_map(|s| Arc::try_unwrap(s).ok())
        .collect();
    futures_close(sessions).await;
    total.latencies.sort();
    Ok(Load {
        sessions: args.sessions,
        calls_per_session: args.calls,
        in_flight_per_session: args.in_flight,
        answered: total.answered,
        misrouted: total.misrouted,
        errored: total.errored,
        lost: total.lost,
        p50_us: micros(percentile(&total.latencies, 0.5)),
        p99_us: micros(percentile(&total.latencies, 0.99)),
        calls_per_sec: total.answered as f64 / elapsed.as_secs_f64(),
        gateway_cpu_per_call_us: micros(cpu) / total.answered.max(1) as f64,
    })
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    crate::programs::percentile(sorted, p)
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn print_table(mcpmux: &Path, upstream: &str, figures: &Figures) {
    println!(
        "mcpmux: {}; gateway and test server on loopback; the gateway's upstream over {upstream}",
        mcpmux.display()
    );
    if let Some(table) = &figures.peers {
        println!();
        peers::print(table);
    }
    if let Some(m) = &figures.memory {
        println!();
        println!("| idle sessions | gateway RSS, none | with them | per idle session |");
        println!("|---|---:|---:|---:|");
        for (kind, none, idle, per) in [
            (
                "streamable HTTP (`/mcp`)",
                m.rss_none_kib,
                m.rss_idle_kib,
                m.per_idle_session_kib,
            ),
            (
                "legacy SSE (`/sse`)",
                m.legacy_rss_none_kib,
                m.legacy_rss_idle_kib,
                m.per_idle_legacy_session_kib,
            ),
        ] {
            println!(
                "| {} {kind} | {:.1} MiB | {:.1} MiB | {per:.1} KiB |",
                m.idle_sessions,
                none as f64 / 1024.0,
                idle as f64 / 1024.0,
            );
        }
        println!(
            "({} of the {} `/mcp` sessions parked when it was read)",
            m.parked_sessions, m.idle_sessions
        );
    }
    if let Some(l) = &figures.latency {
        println!();
        println!(
            "sequential echo, {} rounds × {} calls each way, interleaved:",
            l.rounds, l.calls_per_round
        );
        println!("| path | p50 | p99 |");
        println!("|---|---:|---:|");
        println!(
            "| direct to the test server | {:.0} µs | {:.0} µs |",
            l.direct_p50_us, l.direct_p99_us
        );
        println!(
            "| through the gateway | {:.0} µs | {:.0} µs |",
            l.a.gateway_p50_us, l.a.gateway_p99_us
        );
        if let Some(b) = &l.b {
            println!(
                "| through gateway B | {:.0} µs | {:.0} µs |",
                b.gateway_p50_us, b.gateway_p99_us
            );
        }
        // Issue 39's goals: the second HTTP exchange an HTTP upstream costs is allowed for.
        let goal = if upstream == "stdio" { 50 } else { 100 };
        println!(
            "gateway's added latency (median of the rounds' p50 differences): {:.0} µs \
             (rounds: {:.0} … {:.0} µs; goal ≤ {goal} µs); its CPU per call {:.0} µs",
            l.a.added_p50_us, l.a.added_min_us, l.a.added_max_us, l.a.gateway_cpu_per_call_us
        );
        if let Some(b) = &l.b {
            println!(
                "gateway B's added latency: {:.0} µs (rounds: {:.0} … {:.0} µs); its CPU per \
                 call {:.0} µs",
                b.added_p50_us, b.added_min_us, b.added_max_us, b.gateway_cpu_per_call_us
            );
        }
    }
    if let Some(l) = &figures.load {
        println!();
        println!(
            "{} sessions × {} calls ({} in flight each) through the gateway:",
            l.sessions, l.calls_per_session, l.in_flight_per_session
        );
        println!(
            "| answered | misrouted | errored | lost | p50 | p99 | calls/s | gateway CPU per call |"
        );
        println!("|---:|---:|---:|---:|---:|---:|---:|---:|");
        println!(
            "| {} | {} | {} | {} | {:.0} µs | {:.0} µs | {:.0} | {:.0} µs |",
            l.answered,
            l.misrouted,
            l.errored,
            l.lost,
            l.p50_us,
            l.p99_us,
            l.calls_per_sec,
            l.gateway_cpu_per_call_us
        );
    }
}
