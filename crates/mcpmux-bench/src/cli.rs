//! What a person pays at the command line: a whole `mcpmux call` process against an rmcp
//! one-shot program making the same call to the Node echo server (the CLI's own cost); the wall
//! time and peak memory of a call with many servers configured (100 test servers of 53 tools
//! each, warm tool caches) against one with only its own server, and of a warm
//! `mcpmux tools --json` over all of them against one over that one server (and `tools -s` of
//! that server among all of them); the wall time of a
//! call with 10 servers configured (one of them taking 3 s to start), and of a warm
//! `mcpmux tools` over those 10 against the cold one that must start them all.
//!
//! `cargo run --release -p mcpmux-bench -- cli [--runs N] [--slow-ms MS] [--servers N]
//! [--mcpmux PATH] [--testserver PATH] [--prebuilt]`; `--prebuilt` takes `mcpmux` and
//! `bench-peer-rmcp` from this program's own folder (`scripts/build-ordered.sh`) and builds
//! only the release test server (unless `--testserver` names one).
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
    testserver: Option<PathBuf>,
    prebuilt: bool,
    /// Servers configured in the many-servers scenarios.
    servers: usize,
}

/// The test server's own tools plus these from its catalog (`--many-tools`): 53 in all, the
/// size of the Python servers of issue 39's figures.
const MANY_TOOLS: &str = "30";

fn parse(args: impl Iterator<Item = String>) -> anyhow::Result<Args> {
    let mut parsed = Args {
        runs: 15,
        slow_ms: 3000,
        mcpmux: None,
        testserver: None,
        prebuilt: false,
        servers: 100,
    };
    let mut it = args;
    while let Some(flag) = it.next() {
        let mut value = || it.next().context(format!("{flag} needs a value"));
        match flag.as_str() {
            "--runs" => parsed.runs = value()?.parse()?,
            "--slow-ms" => parsed.slow_ms = value()?.parse()?,
            "--mcpmux" => parsed.mcpmux = Some(PathBuf::from(value()?)),
            "--testserver" => parsed.testserver = Some(PathBuf::from(value()?)),
            "--servers" => parsed.servers = value()?.parse()?,
            "--prebuilt" => parsed.prebuilt = true,
            other => bail!(
                "unknown flag {other}; flags: --runs N --slow-ms MS --servers N --mcpmux PATH \
                 --testserver PATH --prebuilt"
            ),
        }
    }
    if parsed.runs == 0 || parsed.servers == 0 {
        bail!("--runs and --servers must be at least 1");
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

/// A config of `servers` test servers of 53 tools each, the first named `target`.
fn many_config(server: &Path, servers: usize) -> String {
    let mut text = String::new();
    for i in 0..servers {
        let name = if i == 0 {
            "target".to_string()
        } else {
            format!("other{i}")
        };
        // Distinct args: the hub starts a server configured twice only once.
        text.push_str(&format!(
            "[servers.{name}]\ncommand = {:?}\nargs = [\"--many-tools\", \"{MANY_TOOLS}\", \
             \"--page-size\", \"{}\"]\n\n",
            server.display().to_string(),
            1000 + i
        ));
    }
    text
}

/// `mcpmux --config CONFIG ARGS` in `home`, as a person's own run would be.
fn mcpmux_command(mcpmux: &Path, home: &Path, config: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(mcpmux);
    command
        .arg("--config")
        .arg(config)
        .args(args)
        .current_dir(home)
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_CACHE_HOME", home.join(".cache"))
        .env_remove("RUST_LOG")
        .env_remove("MCPMUX_LOG");
    command
}

/// Wall time of one `mcpmux` run in `home`; fails on a non-zero exit.
fn run(mcpmux: &Path, home: &Path, config: &Path, args: &[&str]) -> anyhow::Result<Duration> {
    Ok(measured(mcpmux_command(mcpmux, home, config, args))?.0)
}

/// Wall time and peak resident set (KiB) of one run of `command`, its output discarded;
/// fails on a non-zero exit, with what the program said.
fn measured(mut command: Command) -> anyhow::Result<(Duration, u64)> {
    let started = Instant::now();
    let child = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    let mut status = 0;
    // SAFETY: an all-zero `rusage` is a valid value of the plain C struct `wait4` fills.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waits for our own child, writing only into the two locals.
    let reaped = unsafe { libc::wait4(child.id() as libc::pid_t, &mut status, 0, &mut usage) };
    let took = started.elapsed();
    if reaped < 0 {
        bail!(
            "waiting for {command:?}: {}",
            std::io::Error::last_os_error()
        );
    }
    if !libc::WIFEXITED(status) || libc::WEXITSTATUS(status) != 0 {
        let output = command
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .output()?;
        bail!(
            "{command:?} failed ({status}): {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok((took, usage.ru_maxrss as u64))
}

/// The median run of `runs`, by wall time, and the median peak resident set (MB).
fn medians(runs: &[(Duration, u64)]) -> (Duration, f64) {
    let times = median(runs.iter().map(|r| r.0).collect());
    let mut rss: Vec<u64> = runs.iter().map(|r| r.1).collect();
    rss.sort_unstable();
    (times, rss[rss.len() / 2] as f64 / 1024.0)
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
    let (mcpmux, server, rmcp) = programs(&args)?;
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
    let one_shot = one_shot(&args, &mcpmux, &rmcp, &dir)?;
    let many = many(&args, &mcpmux, &server, &dir)?;

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
    one_shot.print();
    many.print(args.servers);
    Ok(())
}

/// `mcpmux`, the test server and `bench-peer-rmcp`: built now, or beside this program.
fn programs(args: &Args) -> anyhow::Result<(PathBuf, PathBuf, PathBuf)> {
    let here = std::env::current_exe()?
        .parent()
        .context("this program's folder")?
        .to_path_buf();
    let (mcpmux, server) = if args.prebuilt {
        let server = match &args.testserver {
            // Absolute: each server runs in its own HOME.
            Some(path) => std::fs::canonicalize(path)
                .with_context(|| format!("the test server {}", path.display()))?,
            None => crate::programs::build_testserver()?,
        };
        (here.join("mcpmux"), server)
    } else {
        crate::programs::cargo_build(
            [
                "--release",
                "-p",
                "mcpmux-bench",
                "--bin",
                "bench-peer-rmcp",
            ],
            "bench-peer-rmcp",
        )?;
        let (mcpmux, server) = crate::programs::build_cli_and_testserver()?;
        (mcpmux, args.testserver.clone().unwrap_or(server))
    };
    let rmcp = if args.prebuilt {
        here.join("bench-peer-rmcp")
    } else {
        crate::programs::target_dir(&crate::programs::workspace()?)
            .join("release")
            .join("bench-peer-rmcp")
    };
    Ok((args.mcpmux.clone().unwrap_or(mcpmux), server, rmcp))
}

/// A cold `mcpmux call` beside an rmcp one-shot, on the Node echo server.
struct OneShot {
    mcpmux: (Duration, f64),
    rmcp: (Duration, f64),
    version: (Duration, f64),
}

impl OneShot {
    fn print(&self) {
        println!();
        println!(
            "| one call to the Node echo server, whole process | wall time (median) | peak RSS (MB) |"
        );
        println!("|---|---:|---:|");
        let row = |what: &str, (took, rss): (Duration, f64)| {
            println!("| {what} | {} | {rss:.1} |", ms(took));
        };
        row("rmcp one-shot (`bench-peer-rmcp one-shot`)", self.rmcp);
        row("`mcpmux call`", self.mcpmux);
        row("`mcpmux --version` (no call)", self.version);
        println!();
        println!(
            "mcpmux call / rmcp one-shot: {:.3}× (goal ≤ 1.05×)",
            self.mcpmux.0.as_secs_f64() / self.rmcp.0.as_secs_f64()
        );
    }
}

/// The CLI's cold call against an rmcp one-shot's, interleaved.
fn one_shot(args: &Args, mcpmux: &Path, rmcp: &Path, dir: &Path) -> anyhow::Result<OneShot> {
    let echo = crate::programs::workspace()?.join("crates/mcpmux-bench/peers/echo-server.mjs");
    let config = dir.join("echo.toml");
    std::fs::write(
        &config,
        format!(
            "[servers.echo]\ncommand = \"node\"\nargs = [{:?}]\n",
            echo.display().to_string()
        ),
    )?;
    let home = dir.join("home-echo");
    std::fs::create_dir_all(&home)?;
    let call = ["call", "mcp__echo__echo", r#"{"text":"bench"}"#];
    let (mut with_mcpmux, mut with_rmcp, mut version) = (Vec::new(), Vec::new(), Vec::new());
    // One call first: the era cache a person's second call has.
    run(mcpmux, &home, &config, &call)?;
    for _ in 0..args.runs {
        with_rmcp.push(measured({
            let mut command = Command::new(rmcp);
            command.arg("one-shot").arg("node").arg(&echo);
            same_child_env(&mut command, &home);
            command
        })?);
        with_mcpmux.push(measured(mcpmux_command(mcpmux, &home, &config, &call))?);
        version.push(measured({
            let mut command = Command::new(mcpmux);
            command.arg("--version");
            command
        })?);
    }
    Ok(OneShot {
        mcpmux: medians(&with_mcpmux),
        rmcp: medians(&with_rmcp),
        version: medians(&version),
    })
}

/// The environment `mcpmux` gives a stdio server (its allowlist, `defaults::ENV_ALLOWLIST`,
/// with the run's HOME), given to the whole one-shot, which passes it on to its server: Node
/// starts the same way under both. The whole environment may hold `NODE_EXTRA_CA_CERTS`,
/// which costs Node about 35 ms here, and made the one-shot look slower than it is.
fn same_child_env(command: &mut Command, home: &Path) {
    command.env_clear().env("HOME", home).envs(
        ["LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "TMPDIR"]
            .into_iter()
            .filter_map(|name| Some((name, std::env::var_os(name)?))),
    );
}

/// A call and a listing with one server configured and with many.
struct Many {
    call_one: (Duration, f64),
    call_many: (Duration, f64),
    list_one: (Duration, f64),
    list_many: (Duration, f64),
    /// `tools -s target --json` with every server configured: one server's listing.
    list_own: (Duration, f64),
}

impl Many {
    fn print(&self, servers: usize) {
        println!();
        println!("| 53-tool test servers, warm tool caches | wall time (median) | peak RSS (MB) |");
        println!("|---|---:|---:|");
        let row = |what: String, (took, rss): (Duration, f64)| {
            println!("| {what} | {} | {rss:.1} |", ms(took));
        };
        row(
            "`mcpmux call`, only its server configured".into(),
            self.call_one,
        );
        row(
            format!("`mcpmux call`, {servers} servers configured"),
            self.call_many,
        );
        row("`mcpmux tools --json`, one server".into(), self.list_one);
        row(
            format!("`mcpmux tools --json`, {servers} servers"),
            self.list_many,
        );
        row(
            format!("`mcpmux tools -s target --json`, {servers} servers configured"),
            self.list_own,
        );
        println!();
        println!(
            "call with {servers} / call with 1: {:.3}× the time (goal ≤ 1.1×), {:+.1} MB (goal ≤ +5 MB)",
            self.call_many.0.as_secs_f64() / self.call_one.0.as_secs_f64(),
            self.call_many.1 - self.call_one.1
        );
    }
}

/// The many-servers scenarios, interleaved, each in a HOME of its own whose tool cache the
/// first (cold) listing filled.
fn many(args: &Args, mcpmux: &Path, server: &Path, dir: &Path) -> anyhow::Result<Many> {
    let one = dir.join("many-one.toml");
    let all = dir.join("many-all.toml");
    std::fs::write(&one, many_config(server, 1))?;
    std::fs::write(&all, many_config(server, args.servers))?;
    let (home_one, home_all) = (dir.join("home-many-one"), dir.join("home-many-all"));
    for (home, config) in [(&home_one, &one), (&home_all, &all)] {
        std::fs::create_dir_all(home)?;
        run(mcpmux, home, config, &["tools"])?;
    }
    let call = ["call", "mcp__target__echo", r#"{"text":"bench"}"#];
    let list = ["tools", "--json"];
    let list_own = ["tools", "-s", "target", "--json"];
    let mut runs: [Vec<(Duration, u64)>; 5] = Default::default();
    for _ in 0..args.runs {
        runs[0].push(measured(mcpmux_command(mcpmux, &home_one, &one, &call))?);
        runs[1].push(measured(mcpmux_command(mcpmux, &home_all, &all, &call))?);
        runs[2].push(measured(mcpmux_command(mcpmux, &home_one, &one, &list))?);
        runs[3].push(measured(mcpmux_command(mcpmux, &home_all, &all, &list))?);
        runs[4].push(measured(mcpmux_command(
            mcpmux, &home_all, &all, &list_own,
        ))?);
    }
    Ok(Many {
        call_one: medians(&runs[0]),
        call_many: medians(&runs[1]),
        list_one: medians(&runs[2]),
        list_many: medians(&runs[3]),
        list_own: medians(&runs[4]),
    })
}
