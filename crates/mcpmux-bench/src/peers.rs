//! The peer clients side by side: the Python SDK, the TypeScript SDK, raw rmcp and the mcpmux
//! hub, each in its own process, against one dependency-free Node echo server over stdio
//! (`peers/echo-server.mjs`), run interleaved round after round; medians printed as a table.
//!
//! `mcpmux-bench peers [--rounds N] [--quick] [--json] [--prebuilt]` orchestrates; each Rust
//! client is a program of its own, `bench-peer-rmcp` and `bench-peer-hub` (see
//! `peer_client.rs`), as the SDK clients are `peers/ts-client.mjs` and `peers/py-client.py`,
//! all taking the same load. Every client checks each echo it gets back, so a
//! client that loses or mixes up answers fails the run instead of looking fast. Beside them
//! runs the pipe floor (`bench-peer-floor`, `floor.rs`): blocking reads and writes on one
//! thread and nothing else, the least any client must spend against this server here; and
//! the same floor polling the pipe as the hub does, the least a polling client must spend.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, bail};

use mcpmux_bench::peer_client::{Figures, Load, median};

/// The clients, in table order. The Rust clients run twice: on a two-worker runtime (what a
/// harness on tokio's default runtime gets, and what `mcpmux` uses) and on a current-thread
/// runtime (every task on the caller's thread: no wake-up crosses threads, as in the SDKs'
/// single-threaded event loops). The last two columns are not clients: the pipe floor
/// (`floor.rs`), what the server and the machine allow any client, sleeping or polling.
const CLIENTS: [&str; 8] = [
    "Python SDK",
    "TypeScript SDK",
    "rmcp raw",
    "mcpmux hub",
    "rmcp raw, 1 thread",
    "mcpmux hub, 1 thread",
    FLOOR,
    POLLING_FLOOR,
];

/// The pipe floor's column: a reader that sleeps until the answer comes.
const FLOOR: &str = "pipe floor";

/// The pipe floor reading as the hub does: polling the pipe briefly before it sleeps.
const POLLING_FLOOR: &str = "pipe floor, polling";

/// The Rust programs, built beside this one: the two peer clients and the floor.
const RUST_CLIENTS: [&str; 3] = ["bench-peer-rmcp", "bench-peer-hub", "bench-peer-floor"];

/// Where the peers live: the pinned SDKs in test-deps (installed by
/// `scripts/install-test-deps.sh`), the Rust clients beside this program.
struct Peers {
    node: PathBuf,
    modules: PathBuf,
    python: PathBuf,
    scripts: PathBuf,
    rust_clients: PathBuf,
}

impl Peers {
    /// Finds the SDKs; builds the Rust clients with this program's profile unless `prebuilt`
    /// (`cargo run` builds only the program it runs, and a stale client would measure old code).
    fn find(prebuilt: bool) -> anyhow::Result<Self> {
        let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
        let workspace = crate::programs::workspace()?;
        let modules = workspace.join("test-deps");
        let python = modules.join(".venv/bin/python");
        let sdk = modules.join("node_modules/@modelcontextprotocol/sdk/package.json");
        if !sdk.exists() || !python.exists() {
            bail!(
                "the peer SDKs are not installed in {}: run scripts/install-test-deps.sh first",
                modules.display()
            );
        }
        let exe = std::env::current_exe()?;
        let rust_clients = exe
            .parent()
            .context("this program's directory")?
            .to_path_buf();
        if !prebuilt {
            build_rust_clients(&rust_clients)?;
        }
        for client in RUST_CLIENTS {
            if !rust_clients.join(client).exists() {
                bail!(
                    "{client} is not in {}: build it with this program's profile",
                    rust_clients.display()
                );
            }
        }
        Ok(Self {
            node: PathBuf::from("node"),
            modules,
            python,
            scripts: crate_dir.join("peers"),
            rust_clients,
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
                let program = if client.starts_with("rmcp") {
                    RUST_CLIENTS[0]
                } else {
                    RUST_CLIENTS[1]
                };
                command = Command::new(self.rust_clients.join(program));
                command.arg(load);
                if client.ends_with("1 thread") {
                    command.arg("current-thread");
                }
            }
            FLOOR | POLLING_FLOOR => {
                command = Command::new(self.rust_clients.join(RUST_CLIENTS[2]));
                command.arg(load);
                if client == POLLING_FLOOR {
                    command.arg("polling");
                }
            }
            other => bail!("no such client {other}"),
        }
        Ok(command)
    }
}

/// Builds the Rust clients into `dir` (`target/PROFILE`) with the profile that built this
/// program.
fn build_rust_clients(dir: &Path) -> anyhow::Result<()> {
    let profile = match dir.file_name().and_then(|n| n.to_str()) {
        Some("debug") => "dev",
        Some(name) => name,
        None => bail!("cannot tell this program's profile from {}", dir.display()),
    };
    let target_dir = dir.parent().context("the target directory")?;
    let mut args: Vec<&OsStr> = vec![
        "--profile".as_ref(),
        profile.as_ref(),
        "-p".as_ref(),
        "mcpmux-bench".as_ref(),
        "--target-dir".as_ref(),
        target_dir.as_os_str(),
    ];
    for client in RUST_CLIENTS {
        args.extend([OsStr::new("--bin"), client.as_ref()]);
    }
    crate::programs::cargo_build(args, &RUST_CLIENTS.join(", "))
}

/// `mcpmux-bench peers`: every client, interleaved for `rounds` rounds, medians as a table.
pub(crate) fn main(args: impl Iterator<Item = String>) -> anyhow::Result<()> {
    let (mut rounds, mut quick, mut json, mut prebuilt) = (5, false, false, false);
    let mut args = args;
    while let Some(flag) = args.next() {
        match flag.as_str() {
            "--rounds" => rounds = args.next().context("--rounds needs a value")?.parse()?,
            "--quick" => quick = true,
            "--json" => json = true,
            "--prebuilt" => prebuilt = true,
            other => {
                bail!("unknown flag {other}; flags: --rounds N --quick --json --prebuilt")
            }
        }
    }
    let peers = Peers::find(prebuilt)?;
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
        cpu_per_call_us: pick(|f| f.cpu_per_call_us),
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
    let rows: [Row; 8] = [
        ("cold start → tools listed (ms)", |f| f.cold_ms, 1),
        ("sequential call p50 (µs)", |f| f.p50_us, 0),
        ("sequential call p99 (µs)", |f| f.p99_us, 0),
        (
            "client CPU per sequential call (µs)",
            |f| f.cpu_per_call_us,
            0,
        ),
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
