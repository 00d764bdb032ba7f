//! The processes the gateway bench stands up on loopback: the test server serving
//! streamable HTTP, `mcpmux serve --http` in a temporary HOME whose one configured server
//! is that test server, and the peer gateways (`peers`), started on a port chosen here. Each
//! is stopped (and reaped) when dropped; nothing of the person's own config or caches is read
//! or written.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

/// How long a process may take to print where it listens, and the gateway to be ready.
const START_WITHIN: Duration = Duration::from_secs(30);
/// How long a stopped process may take to exit after SIGTERM before it is killed.
const STOP_WITHIN: Duration = Duration::from_secs(15);

/// A child process serving HTTP at `url`; SIGTERM, then SIGKILL, when dropped.
pub struct Listening {
    child: Child,
    /// Kept open when it printed where it listens: a write after the first line must not fail.
    _stdout: Option<BufReader<ChildStdout>>,
    /// The URL it printed (`http://ADDR/mcp`).
    pub url: String,
}

impl Listening {
    /// Starts `command` and reads the `listening on …` line it prints.
    fn start(mut command: Command, what: &str) -> anyhow::Result<Self> {
        command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .env_remove("RUST_LOG")
            .env_remove("MCPMUX_LOG");
        let mut child = command
            .spawn()
            .with_context(|| format!("cannot start {what}"))?;
        let mut stdout = BufReader::new(child.stdout.take().context("no stdout")?);
        // Owned before the first read: an error from here on still stops the child.
        let mut listening = Listening {
            child,
            _stdout: None,
            url: String::new(),
        };
        let mut line = String::new();
        stdout.read_line(&mut line)?;
        let Some(url) = line.trim().strip_prefix("listening on ") else {
            bail!("{what} printed {line:?} instead of `listening on URL`");
        };
        listening.url = url.to_string();
        listening._stdout = Some(stdout);
        Ok(listening)
    }

    /// Starts `command`, which is to serve at `url` (a port it was told), its output
    /// discarded; whether it does is the caller's to find out.
    pub fn spawn_at(mut command: Command, what: &str, url: String) -> anyhow::Result<Self> {
        command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .env_remove("RUST_LOG");
        let child = command
            .spawn()
            .with_context(|| format!("cannot start {what}"))?;
        Ok(Listening {
            child,
            _stdout: None,
            url,
        })
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `http://ADDR`, without the path.
    pub fn base(&self) -> &str {
        self.url.strip_suffix("/mcp").unwrap_or(&self.url)
    }

    /// Its resident set size now, in KiB (Linux).
    pub fn rss_kib(&self) -> anyhow::Result<u64> {
        mcpmux_bench::memory::rss_kib(&self.pid().to_string())
    }

    /// The largest its resident set has been, in KiB (Linux).
    pub fn peak_rss_kib(&self) -> anyhow::Result<u64> {
        mcpmux_bench::memory::peak_rss_kib_of(&self.pid().to_string())
    }

    /// Whether it has exited.
    pub fn exited(&mut self) -> bool {
        !matches!(self.child.try_wait(), Ok(None))
    }
}

impl Listening {
    /// CPU time it has used so far (user and system), from `/proc/PID/stat` (Linux).
    pub fn cpu(&self) -> anyhow::Result<Duration> {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.pid()))?;
        // The fields after the command name, which is in parentheses and may hold spaces.
        let fields: Vec<&str> = stat
            .rsplit_once(')')
            .context("no command name in /proc/PID/stat")?
            .1
            .split_whitespace()
            .collect();
        let ticks = |i: usize| -> anyhow::Result<u64> {
            Ok(fields.get(i).context("short /proc/PID/stat")?.parse()?)
        };
        // utime and stime are fields 14 and 15 of stat(5); 12 and 13 after the name.
        let total = ticks(11)? + ticks(12)?;
        // SAFETY: sysconf has no preconditions.
        let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        let per_second = u64::try_from(per_second)
            .ok()
            .filter(|&t| t > 0)
            .unwrap_or(100);
        Ok(Duration::from_secs_f64(total as f64 / per_second as f64))
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        if let Ok(pid) = i32::try_from(self.child.id()) {
            // SAFETY: kill(2) on our own child's pid; it is not reaped yet, so the pid is its.
            unsafe {
                libc::kill(pid, libc::SIGTERM);
            }
        }
        let deadline = Instant::now() + STOP_WITHIN;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The test server serving streamable HTTP on a free loopback port, in the handshake era (as
/// the bench's direct client and the gateway's hub both then hold a session with it, the
/// server does the same work for either). `extra` adds flags (faults).
pub fn upstream(server: &Path, extra: &[String]) -> anyhow::Result<Listening> {
    let mut command = Command::new(server);
    command
        .args(["--http", "127.0.0.1:0", "--era", "handshake"])
        .args(extra);
    Listening::start(command, "the test server")
}

/// How the gateway reaches its one server `t`.
pub enum Upstream<'a> {
    /// The streamable HTTP server at this URL.
    Http(&'a str),
    /// The test server at this path with these arguments, over stdio (a child of the gateway).
    Stdio(&'a Path, &'a [String]),
}

/// `mcpmux serve --http 127.0.0.1:0` in `home` (with `extra` flags), its one server `t`
/// reached as `upstream` says; returns once `/readyz` answers 200.
pub async fn gateway(
    mcpmux: &Path,
    home: &Path,
    upstream: Upstream<'_>,
    extra: &[String],
    http: &reqwest::Client,
) -> anyhow::Result<Listening> {
    std::fs::create_dir_all(home)?;
    let server = match upstream {
        Upstream::Http(url) => serde_json::json!({"type": "http", "url": url}),
        Upstream::Stdio(command, extra) => {
            let mut args = vec!["--era".to_string(), "handshake".to_string()];
            args.extend(extra.iter().cloned());
            serde_json::json!({"command": command, "args": args})
        }
    };
    std::fs::write(
        home.join(".claude.json"),
        serde_json::json!({"mcpServers": {"t": server}}).to_string(),
    )?;
    let mut command = Command::new(mcpmux);
    command
        .args(["serve", "--http", "127.0.0.1:0"])
        // Every session of the bench comes from 127.0.0.1: one peer, whose 256 idle SSE
        // sessions alone hold 256 connections.
        .args(["--max-connections-per-peer", "0"])
        // Every bench session comes from 127.0.0.1, one identity: room for all of them.
        .args([
            "--max-sessions-per-client",
            "100000",
            "--max-sessions",
            "100000",
        ])
        .args(extra)
        .current_dir(home)
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_CACHE_HOME", home.join(".cache"))
        .env_remove("MCPMUX_GATEWAY_TOKEN");
    let gateway = Listening::start(command, "mcpmux serve")?;
    let readyz = format!("{}/readyz", gateway.base());
    let deadline = Instant::now() + START_WITHIN;
    loop {
        if let Ok(response) = http.get(&readyz).send().await
            && response.status().is_success()
        {
            return Ok(gateway);
        }
        if Instant::now() > deadline {
            bail!("mcpmux serve was not ready within {START_WITHIN:?}");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
