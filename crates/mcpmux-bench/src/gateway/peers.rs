//! The gateway bench's side-by-side phase (`--phase peers`): `mcpmux serve` and the gateways
//! people use — supergateway and mcp-proxy from npm, mcp-proxy from PyPI, fastmcp's
//! `create_proxy` — each in front of its own copy of the test server over stdio and driven by
//! the same rmcp streamable-HTTP client, in interleaved rounds (the order turned every round),
//! beside the client calling the test server directly over HTTP. A peer not installed in
//! test-deps/ (`scripts/install-test-deps.sh`) is left out with a note, never an error.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde::Serialize;

use super::client::{connect, echo_checked};
use super::processes::{self, Listening, Upstream};
use super::{CALL_DEADLINE, micros, percentile};

/// How long a peer may take to answer its first handshake (an interpreter starting, its
/// packages imported, its server spawned).
const START_WITHIN: Duration = Duration::from_secs(60);
/// Calls in flight at once in a round's burst (the figure the peer table has always used).
const IN_FLIGHT: usize = 32;
/// Calls made before a round's measured ones, so a connection's first calls are not counted.
const WARM: usize = 10;

/// The peer gateways, as pinned in test-deps/: supergateway and mcp-proxy in `package.json`,
/// the Python mcp-proxy in `requirements-gateways.txt` (its own venv, `.venv-gw`), fastmcp in
/// the Python package's `requirements-test.txt` (`.venv-py`).
#[derive(Clone, Copy, Debug)]
enum Peer {
    Supergateway,
    McpProxyNpm,
    McpProxyPypi,
    Fastmcp,
}

/// Serves fastmcp's proxy of the test server (argv: its path, then the port).
const FASTMCP_PROXY: &str = "\
import sys
from fastmcp.server import create_proxy
proxy = create_proxy({'mcpServers': {'t': {'command': sys.argv[1], 'args': ['--era', 'handshake']}}})
proxy.run(transport='http', host='127.0.0.1', port=int(sys.argv[2]), show_banner=False, log_level='warning')
";

/// A peer found installed: the program to run and the version installed.
struct Found {
    program: PathBuf,
    version: String,
}

impl Peer {
    const ALL: [Peer; 4] = [
        Peer::Supergateway,
        Peer::McpProxyNpm,
        Peer::McpProxyPypi,
        Peer::Fastmcp,
    ];

    fn name(self) -> &'static str {
        match self {
            Peer::Supergateway => "supergateway (npm, --stateful)",
            Peer::McpProxyNpm => "mcp-proxy (npm)",
            Peer::McpProxyPypi => "mcp-proxy (PyPI)",
            Peer::Fastmcp => "fastmcp create_proxy",
        }
    }

    /// Where it is installed under `deps` (test-deps/), or why it is not there.
    fn find(self, deps: &Path) -> Result<Found, String> {
        let found = match self {
            Peer::Supergateway => npm(deps, "supergateway", "supergateway"),
            Peer::McpProxyNpm => npm(deps, "mcp-proxy", "mcp-proxy"),
            Peer::McpProxyPypi => pypi(&deps.join(".venv-gw"), "mcp_proxy", "bin/mcp-proxy"),
            Peer::Fastmcp => pypi(&deps.join(".venv-py"), "fastmcp", "bin/python"),
        };
        found.ok_or_else(|| {
            format!(
                "{} is not installed in {}: run scripts/install-test-deps.sh",
                self.name(),
                deps.display()
            )
        })
    }

    /// The command that serves streamable HTTP at `127.0.0.1:port/mcp` in front of `server`
    /// over stdio, each with its defaults otherwise.
    fn command(self, found: &Found, server: &Path, port: u16) -> Command {
        let mut command = Command::new(&found.program);
        let port = port.to_string();
        let server = server.to_string_lossy();
        match self {
            Peer::Supergateway => {
                command
                    .args(["--stdio", &format!("'{server}' --era handshake")])
                    .args(["--outputTransport", "streamableHttp", "--stateful"])
                    .args(["--port", &port, "--logLevel", "none"]);
            }
            Peer::McpProxyNpm => {
                command
                    .args(["--host", "127.0.0.1", "--port", &port, "--server", "stream"])
                    .args(["--", &server, "--era", "handshake"]);
            }
            Peer::McpProxyPypi => {
                command
                    .args(["--host", "127.0.0.1", "--port", &port])
                    .args(["--log-level", "WARNING"])
                    .args(["--", &server, "--era", "handshake"]);
            }
            Peer::Fastmcp => {
                command.args(["-c", FASTMCP_PROXY, &server, &port]);
            }
        }
        command
    }
}

/// An npm package's program in `deps/node_modules/.bin` and its version.
fn npm(deps: &Path, package: &str, bin: &str) -> Option<Found> {
    let program = deps.join("node_modules/.bin").join(bin);
    let manifest = deps.join("node_modules").join(package).join("package.json");
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(manifest).ok()?).ok()?;
    let version = manifest["version"].as_str()?.to_string();
    program.exists().then_some(Found { program, version })
}

/// A Python distribution's version in `venv` (its `NAME-VERSION.dist-info`) and the program
/// `bin` of that venv.
fn pypi(venv: &Path, distribution: &str, bin: &str) -> Option<Found> {
    let program = venv.join(bin);
    if !program.exists() {
        return None;
    }
    let prefix = format!("{distribution}-");
    for python in std::fs::read_dir(venv.join("lib")).ok()?.flatten() {
        let Ok(packages) = std::fs::read_dir(python.path().join("site-packages")) else {
            continue;
        };
        for entry in packages.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if let Some(version) = name
                .strip_prefix(&prefix)
                .and_then(|rest| rest.strip_suffix(".dist-info"))
            {
                return Some(Found {
                    program,
                    version: version.to_string(),
                });
            }
        }
    }
    None
}

/// A free loopback port (the peers take a port, not 0).
fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// Starts `peer` in front of `server` and waits until it answers a handshake.
async fn start_peer(
    peer: Peer,
    found: &Found,
    server: &Path,
    http: &reqwest::Client,
) -> anyhow::Result<Listening> {
    let port = free_port()?;
    let url = format!("http://127.0.0.1:{port}/mcp");
    let mut process = Listening::spawn_at(peer.command(found, server, port), peer.name(), url)?;
    let deadline = Instant::now() + START_WITHIN;
    loop {
        if let Ok(Ok(session)) =
            tokio::time::timeout(Duration::from_secs(5), connect(http, &process.url)).await
        {
            let _ = session.cancel().await;
            return Ok(process);
        }
        if process.exited() {
            bail!("{} exited before it answered", peer.name());
        }
        if Instant::now() > deadline {
            bail!("{} did not answer within {START_WITHIN:?}", peer.name());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// One row of the table: a gateway, or the direct calls.
struct Contender {
    name: String,
    process: Listening,
    /// Whether its process is a gateway, whose CPU and memory are the point.
    gateway: bool,
    connect_list: Vec<Duration>,
    latencies: Vec<Duration>,
    calls_per_sec: Vec<f64>,
    cpu: Duration,
    calls: usize,
}

/// One row of the printed table, as measured.
#[derive(Serialize)]
pub struct Row {
    name: String,
    connect_list_ms: f64,
    p50_us: f64,
    p99_us: f64,
    calls_per_sec: f64,
    /// The gateway process's CPU time (user and system) per sequential call; none for the
    /// direct calls.
    cpu_per_call_us: Option<f64>,
    /// The gateway process's peak resident set; none for the direct calls.
    peak_rss_mib: Option<f64>,
}

/// What the phase measured, and the peers it left out.
#[derive(Serialize, Default)]
pub struct Table {
    rounds: usize,
    calls_per_round: usize,
    burst_calls: usize,
    rows: Vec<Row>,
    skipped: Vec<String>,
}

/// Runs the side-by-side rounds (`--rounds` of `--round-calls` sequential calls and a
/// `--calls` burst each): `upstream` is the test server the direct calls reach.
pub async fn run(
    args: &super::Args,
    mcpmux: &Path,
    server: &Path,
    home: &Path,
    upstream: Listening,
    http: &reqwest::Client,
) -> anyhow::Result<Table> {
    let (rounds, calls, burst) = (args.rounds, args.round_calls, args.calls);
    let deps = crate::programs::workspace()?.join("test-deps");
    let mut table = Table {
        rounds,
        calls_per_round: calls,
        burst_calls: burst,
        ..Table::default()
    };
    let mut contenders = vec![
        contender(
            "none (the client straight to the test server, HTTP)",
            upstream,
            false,
        ),
        contender(
            "mcpmux serve (1 thread)",
            processes::gateway(
                mcpmux,
                home,
                Upstream::Stdio(server, &[]),
                &args.serve_args,
                http,
            )
            .await?,
            true,
        ),
    ];
    // The A/B's other build or flags (`--b-mcpmux`, `--b-serve-arg`) beside it, in the same
    // interleaved rounds.
    if args.b {
        let build = args
            .b_mcpmux
            .clone()
            .unwrap_or_else(|| mcpmux.to_path_buf());
        let name = format!("mcpmux serve, B ({})", b_label(&build, &args.b_serve_args));
        let process = processes::gateway(
            &build,
            &home.join("b"),
            Upstream::Stdio(server, &[]),
            &args.b_serve_args,
            http,
        )
        .await?;
        contenders.push(contender(&name, process, true));
    }
    for peer in Peer::ALL {
        match peer.find(&deps) {
            Err(why) => table.skipped.push(why),
            Ok(found) => match start_peer(peer, &found, server, http).await {
                Ok(process) => contenders.push(contender(
                    &format!("{} {}", peer.name(), found.version),
                    process,
                    true,
                )),
                Err(why) => table.skipped.push(format!("{why:#}")),
            },
        }
    }
    for round in 0..rounds {
        let n = contenders.len();
        for k in 0..n {
            let contender = &mut contenders[(round + k) % n];
            measure(contender, round, calls, burst, http).await?;
        }
    }
    for c in contenders {
        table.rows.push(row(c)?);
    }
    Ok(table)
}

/// What sets the B gateway apart, for its row's name.
fn b_label(build: &Path, serve_args: &[String]) -> String {
    let mut parts: Vec<String> = serve_args.to_vec();
    if let Some(name) = build.file_name() {
        parts.insert(0, name.to_string_lossy().into_owned());
    }
    parts.join(" ")
}

fn contender(name: &str, process: Listening, gateway: bool) -> Contender {
    Contender {
        name: name.to_string(),
        process,
        gateway,
        connect_list: Vec::new(),
        latencies: Vec::new(),
        calls_per_sec: Vec::new(),
        cpu: Duration::ZERO,
        calls: 0,
    }
}

/// One round of `c`: a new session (handshake and tool list timed), `calls` sequential echo
/// calls (timed, and the gateway's CPU read around them), then `burst` calls `IN_FLIGHT` at
/// a time; every echo checked.
async fn measure(
    c: &mut Contender,
    round: usize,
    calls: usize,
    burst: usize,
    http: &reqwest::Client,
) -> anyhow::Result<()> {
    let started = Instant::now();
    let session = connect(http, &c.process.url)
        .await
        .with_context(|| format!("{}: the handshake", c.name))?;
    let tools = session
        .list_all_tools()
        .await
        .with_context(|| format!("{}: listing tools", c.name))?;
    c.connect_list.push(started.elapsed());
    // Each names the test server's `echo` its own way (`mcp__t__echo`, `echo`, `t_echo`).
    let tool = tools
        .iter()
        .map(|t| t.name.to_string())
        .find(|name| name.ends_with("echo"))
        .with_context(|| format!("{} lists no echo tool", c.name))?;
    for i in 0..WARM {
        echo_checked(
            &session,
            &tool,
            &format!("warm r{round} c{i}"),
            CALL_DEADLINE,
        )
        .await?;
    }
    let cpu_before = c.process.cpu()?;
    for i in 0..calls {
        let token = format!("seq r{round} c{i}");
        c.latencies
            .push(echo_checked(&session, &tool, &token, CALL_DEADLINE).await?);
    }
    c.cpu += c.process.cpu()?.saturating_sub(cpu_before);
    c.calls += calls;
    let session = Arc::new(session);
    let started = Instant::now();
    let lanes: Vec<_> = (0..IN_FLIGHT.min(burst.max(1)))
        .map(|lane| {
            let (session, tool) = (session.clone(), tool.clone());
            tokio::spawn(async move {
                for i in (lane..burst).step_by(IN_FLIGHT) {
                    let token = format!("burst r{round} c{i}");
                    echo_checked(&session, &tool, &token, CALL_DEADLINE).await?;
                }
                anyhow::Ok(())
            })
        })
        .collect();
    for lane in lanes {
        lane.await??;
    }
    c.calls_per_sec
        .push(burst as f64 / started.elapsed().as_secs_f64());
    if let Ok(session) = Arc::try_unwrap(session) {
        let _ = session.cancel().await;
    }
    Ok(())
}

fn row(mut c: Contender) -> anyhow::Result<Row> {
    c.latencies.sort();
    c.connect_list.sort();
    c.calls_per_sec.sort_by(f64::total_cmp);
    let median = |v: &[f64]| v.get(v.len() / 2).copied().unwrap_or(0.0);
    let connect: Vec<f64> = c
        .connect_list
        .iter()
        .map(|d| d.as_secs_f64() * 1e3)
        .collect();
    Ok(Row {
        connect_list_ms: median(&connect),
        p50_us: micros(percentile(&c.latencies, 0.5)),
        p99_us: micros(percentile(&c.latencies, 0.99)),
        calls_per_sec: median(&c.calls_per_sec),
        cpu_per_call_us: c.gateway.then(|| micros(c.cpu) / c.calls.max(1) as f64),
        peak_rss_mib: if c.gateway {
            Some(c.process.peak_rss_kib()? as f64 / 1024.0)
        } else {
            None
        },
        name: c.name,
    })
}

/// Prints the table in markdown, the notes of the peers left out after it.
pub fn print(table: &Table) {
    println!(
        "side by side, each gateway in front of the test server over stdio; {} interleaved \
         rounds of {} sequential calls and {} calls {IN_FLIGHT} in flight:",
        table.rounds, table.calls_per_round, table.burst_calls
    );
    println!(
        "| gateway | connect + list (ms) | seq p50 (µs) | seq p99 (µs) | calls/s, \
         {IN_FLIGHT} in flight | gateway CPU per call (µs) | gateway peak RSS (MB) |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|");
    let or_dash = |v: Option<f64>, digits: usize| {
        v.map_or_else(|| "—".to_string(), |v| format!("{v:.digits$}"))
    };
    for r in &table.rows {
        println!(
            "| {} | {:.1} | {:.0} | {:.0} | {:.0} | {} | {} |",
            r.name,
            r.connect_list_ms,
            r.p50_us,
            r.p99_us,
            r.calls_per_sec,
            or_dash(r.cpu_per_call_us, 0),
            or_dash(r.peak_rss_mib, 1),
        );
    }
    for why in &table.skipped {
        println!("left out: {why}");
    }
}
