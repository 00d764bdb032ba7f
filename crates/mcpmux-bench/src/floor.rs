//! The pipe floor of the side-by-side benchmark (`bench-peer-floor`): the least any client must
//! do, with nothing else. One thread of blocking reads and writes on the server's pipes, no
//! runtime, no SDK; each request written as one JSON line, each answer read, parsed and its
//! echo checked. It takes the same load and prints the same figures as the peer clients.
//!
//! With `polling` it reads as the hub does (`HubOptions::read_spin`): after writing a
//! request it polls the pipe up to that budget (yielding the CPU between reads past the first
//! 10 µs) before it sleeps in `poll(2)`.
//!
//! It is not a peer: it shows what the server, the pipes and the machine allow every client,
//! sleeping or polling. A client's latency cannot go below the floor that reads its way, so a
//! goal set under it is a goal about the server.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::AsRawFd;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::{Value, json};

use crate::memory::{cpu_time_us, peak_rss_kib};
use crate::peer_client::{Figures, Load};

/// `bench-peer-floor LOAD_JSON [polling]`: the floor's run, its figures as one JSON line.
pub fn floor_main(mut args: impl Iterator<Item = String>) -> anyhow::Result<()> {
    let load: Load = serde_json::from_str(&args.next().context("the load JSON is missing")?)?;
    let spin = match args.next().as_deref() {
        None => Duration::ZERO,
        Some("polling") => mcpmux::HubOptions::ephemeral().read_spin,
        Some(other) => bail!("unknown floor {other}: polling, or none to sleep on each read"),
    };
    let figures = run(&load, spin)?;
    println!("{}", serde_json::to_string(&figures)?);
    Ok(())
}

fn run(load: &Load, spin: Duration) -> anyhow::Result<Figures> {
    let mut cold = Vec::new();
    for _ in 0..load.cold {
        let start = Instant::now();
        let (session, tools) = Session::start(&load.server, spin)?;
        cold.push(start.elapsed().as_secs_f64() * 1e3);
        if tools == 0 {
            bail!("the server listed no tools");
        }
        session.close()?;
    }
    let (mut session, _) = Session::start(&load.server, spin)?;
    for i in 0..200 {
        session.echo(&format!("warm {i}"))?;
    }
    let mut latencies = Vec::with_capacity(load.calls);
    let cpu = cpu_time_us();
    for i in 0..load.calls {
        let start = Instant::now();
        session.echo(&format!("call {i}"))?;
        latencies.push(start.elapsed().as_secs_f64() * 1e6);
    }
    let cpu_per_call_us = (cpu_time_us() - cpu) / load.calls.max(1) as f64;
    // As the hub: calls in flight are not polled for.
    session.reader.get_mut().spin = Duration::ZERO;
    let total = load.total / load.in_flight.max(1) * load.in_flight.max(1);
    let start = Instant::now();
    let session = session.in_flight(total, load.in_flight.max(1))?;
    let calls_per_sec = total as f64 / start.elapsed().as_secs_f64();
    session.close()?;
    let peak_rss_one_mb = peak_rss_kib() as f64 / 1024.0;
    let start = Instant::now();
    let starting: Vec<_> = (0..load.servers)
        .map(|_| {
            let server = load.server.clone();
            std::thread::spawn(move || Session::start(&server, spin))
        })
        .collect();
    let mut sessions = Vec::new();
    for thread in starting {
        let joined = thread
            .join()
            .map_err(|_| anyhow::anyhow!("a server start panicked"))?;
        sessions.push(joined?.0);
    }
    let servers_ms = start.elapsed().as_secs_f64() * 1e3;
    for session in sessions {
        session.close()?;
    }
    Ok(Figures::of(
        &mut cold,
        &mut latencies,
        cpu_per_call_us,
        calls_per_sec,
        servers_ms,
        peak_rss_one_mb,
    ))
}

/// One server over its pipes: requests written and answers read in turn.
struct Session {
    child: Reaped,
    writer: ChildStdin,
    reader: BufReader<Pipe>,
    line: String,
    next_id: u64,
}

impl Session {
    /// Spawns the server, does the handshake and lists its tools; the session and how many
    /// tools it lists.
    fn start(server: &[String], spin: Duration) -> anyhow::Result<(Self, usize)> {
        let (program, args) = server.split_first().context("empty server command")?;
        let mut command = Command::new(program);
        // What the SDKs pass a server (the TypeScript SDK's default list), as the hub passes an
        // allowlist: the whole environment here holds `NODE_EXTRA_CA_CERTS`, which costs Node
        // about 35 ms of its start.
        command.env_clear().envs(
            ["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"]
                .into_iter()
                .filter_map(|name| Some((name, std::env::var_os(name)?))),
        );
        let mut child = Reaped(
            command
                .args(args)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .with_context(|| format!("starting {program}"))?,
        );
        let writer = child.0.stdin.take().context("the server's stdin")?;
        let reader = BufReader::new(Pipe::new(
            child.0.stdout.take().context("the server's stdout")?,
            spin,
        )?);
        let mut session = Self {
            child,
            writer,
            reader,
            line: String::new(),
            next_id: 0,
        };
        let init = json!({
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "bench-floor", "version": "1.0.0"},
        });
        session.request("initialize", init)?;
        session.write(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))?;
        let listed = session.request("tools/list", json!({}))?;
        let tools = listed["tools"].as_array().map_or(0, Vec::len);
        Ok((session, tools))
    }

    /// Calls `echo` with `text` and checks the answer.
    fn echo(&mut self, text: &str) -> anyhow::Result<()> {
        let result = self.request("tools/call", echo_params(self.next_id + 1, text))?;
        check_echo(&result, text)
    }

    fn request(&mut self, method: &str, params: Value) -> anyhow::Result<Value> {
        self.next_id += 1;
        let id = self.next_id;
        self.write(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        self.line.clear();
        if self.reader.read_line(&mut self.line)? == 0 {
            bail!("the server closed its output before answering {method}");
        }
        let answer: Value = serde_json::from_str(&self.line)?;
        if answer["id"].as_u64() != Some(id) {
            bail!("asked id {id}, got {}", self.line.trim_end());
        }
        answer
            .get("result")
            .cloned()
            .with_context(|| format!("{method} failed: {}", self.line.trim_end()))
    }

    fn write(&mut self, message: &Value) -> anyhow::Result<()> {
        write_line(&mut self.writer, message)
    }

    /// `total` calls with at most `in_flight` unanswered: this thread writes, another reads
    /// and checks each answer, handing back one permit per answer.
    fn in_flight(mut self, total: usize, in_flight: usize) -> anyhow::Result<Self> {
        let (permits, taken) = std::sync::mpsc::sync_channel::<()>(in_flight);
        for _ in 0..in_flight {
            permits.send(())?;
        }
        let first = self.next_id + 1;
        let mut reader = self.reader;
        let answers = std::thread::spawn(move || -> anyhow::Result<BufReader<Pipe>> {
            let mut line = String::new();
            for id in first..first + total as u64 {
                line.clear();
                if reader.read_line(&mut line)? == 0 {
                    bail!("the server closed its output with calls in flight");
                }
                let answer: Value = serde_json::from_str(&line)?;
                if answer["id"].as_u64() != Some(id) {
                    bail!("expected the answer to {id}, got {}", line.trim_end());
                }
                check_echo(&answer["result"], &format!("c{id}"))?;
                // The writer may be done and gone: a refused permit is not an error.
                let _ = permits.send(());
            }
            Ok(reader)
        });
        for id in first..first + total as u64 {
            taken.recv().context("the answer reader stopped")?;
            let request = json!({
                "jsonrpc": "2.0",
                "id": id,
                "method": "tools/call",
                "params": echo_params(id, &format!("c{id}")),
            });
            write_line(&mut self.writer, &request)?;
        }
        self.reader = answers
            .join()
            .map_err(|_| anyhow::anyhow!("the answer reader panicked"))??;
        self.next_id = first + total as u64 - 1;
        Ok(self)
    }

    /// Closes the server's input and waits for it to exit.
    fn close(self) -> anyhow::Result<()> {
        let Self {
            mut child, writer, ..
        } = self;
        drop(writer);
        child.0.wait()?;
        Ok(())
    }
}

/// The server's output: read as it comes (sleeping in the kernel), or, with a `spin`, polled
/// for that long after each empty read before sleeping in `poll(2)`.
struct Pipe {
    stdout: ChildStdout,
    spin: Duration,
    /// Made non-blocking for the polls: every read then goes through `polled`.
    nonblocking: bool,
}

impl Pipe {
    fn new(stdout: ChildStdout, spin: Duration) -> anyhow::Result<Self> {
        if !spin.is_zero() {
            let fd = stdout.as_raw_fd();
            // SAFETY: `fd` is open (owned by `stdout`); only its status flags change.
            let set = unsafe {
                let flags = libc::fcntl(fd, libc::F_GETFL);
                flags >= 0 && libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) == 0
            };
            if !set {
                bail!("cannot make the server's output non-blocking");
            }
        }
        Ok(Self {
            stdout,
            spin,
            nonblocking: !spin.is_zero(),
        })
    }

    /// A read of a non-blocking pipe: polled for the budget, then slept on.
    fn polled(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let start = Instant::now();
        loop {
            match self.stdout.read(buf) {
                Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => {}
                other => return other,
            }
            let spent = start.elapsed();
            if spent < self.spin {
                // As the hub's reader: past 10 µs, yield between reads to a server queued here.
                if spent >= Duration::from_micros(10) {
                    std::thread::yield_now();
                } else {
                    std::hint::spin_loop();
                }
                continue;
            }
            let mut fd = libc::pollfd {
                fd: self.stdout.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid `pollfd`, for a descriptor `stdout` keeps open.
            if unsafe { libc::poll(&mut fd, 1, -1) } < 0 {
                let error = std::io::Error::last_os_error();
                if error.kind() != std::io::ErrorKind::Interrupted {
                    return Err(error);
                }
            }
        }
    }
}

impl Read for Pipe {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.nonblocking {
            return self.polled(buf);
        }
        self.stdout.read(buf)
    }
}

/// The server's process, killed and reaped if it still runs when dropped: a run that fails
/// part-way leaves no orphan behind.
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// Writes `message` as one line, in one write.
fn write_line(writer: &mut ChildStdin, message: &Value) -> anyhow::Result<()> {
    let mut line = serde_json::to_vec(message)?;
    line.push(b'\n');
    writer.write_all(&line)?;
    Ok(())
}

/// A `tools/call` of `echo`, with the progress token raw rmcp and the hub send too.
fn echo_params(id: u64, text: &str) -> Value {
    json!({"_meta": {"progressToken": id}, "name": "echo", "arguments": {"text": text}})
}

fn check_echo(result: &Value, text: &str) -> anyhow::Result<()> {
    let got = result["content"][0]["text"].as_str();
    if got != Some(text) {
        bail!("asked {text:?}, got {result}");
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn echo_server() -> Vec<String> {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/peers/echo-server.mjs");
        vec!["node".into(), script.into()]
    }

    #[test]
    fn a_session_dropped_part_way_leaves_no_server_running() {
        let (mut session, tools) = Session::start(&echo_server(), Duration::ZERO).unwrap();
        assert_eq!(tools, 1);
        session.echo("before the drop").unwrap();
        let pid = session.child.0.id();
        drop(session);
        // Reaped: no process, not even a zombie, has the pid any more.
        assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists());
    }

    #[test]
    fn a_polling_session_reads_its_answers_and_sleeps_past_its_budget() {
        let (mut session, tools) =
            Session::start(&echo_server(), Duration::from_micros(50)).unwrap();
        assert_eq!(tools, 1);
        for i in 0..20 {
            session.echo(&format!("polled {i}")).unwrap();
        }
        // No budget left for the calls in flight: every read sleeps in poll(2) instead.
        session.reader.get_mut().spin = Duration::ZERO;
        let session = session.in_flight(64, 8).unwrap();
        session.close().unwrap();
    }

    #[test]
    fn an_answer_that_is_not_the_echo_fails_the_run() {
        let (mut session, _) = Session::start(&echo_server(), Duration::ZERO).unwrap();
        let result = session
            .request("tools/call", echo_params(1, "asked"))
            .unwrap();
        assert!(check_echo(&result, "asked").is_ok());
        assert!(check_echo(&result, "something else").is_err());
        session.close().unwrap();
    }
}
