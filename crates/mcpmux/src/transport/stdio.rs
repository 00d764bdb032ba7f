//! Local servers as child processes: spawn in a process group of their own, with an env
//! allowlist, stderr captured into a bounded tail, and a task that owns the child until it is
//! reaped, so that no child or grandchild (`npx` → `node`) outlives its connection.
//!
//! rmcp only sees the pipes; the process itself stays ours (rmcp's `TokioChildProcess` would
//! orphan `npx` grandchildren and waits a fixed 3 s on shutdown).

use std::collections::{BTreeMap, VecDeque};
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::process::{Child, ChildStderr, ChildStdin, Command};
use tokio::sync::{oneshot, watch};

use super::busy_pipe::BusyPipe;
use super::wire_tap::Tap;
use crate::defaults;
use crate::error::Error;
use crate::platform::process::{self, Group};
use crate::sync::lock;
use crate::telemetry::wire::Direction;

/// The rmcp transport over a child's stdout and its stdin.
pub(crate) type StdioTransport = super::lines::LineTransport<Tap<BusyPipe>, Tap<ChildStdin>>;

/// How a server process ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExitInfo {
    /// Exit code, when it exited normally.
    pub code: Option<i32>,
    /// Signal number, when a signal ended it.
    pub signal: Option<i32>,
}

impl std::fmt::Display for ExitInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.code, self.signal) {
            (Some(code), _) => write!(f, "process exited with status {code}"),
            (None, Some(signal)) => write!(f, "process killed by signal {signal}"),
            (None, None) => write!(f, "process ended"),
        }
    }
}

/// The last lines a server wrote to stderr, shared with whoever reports its errors.
#[derive(Clone)]
pub(crate) struct StderrTail {
    lines: Arc<Mutex<VecDeque<String>>>,
    /// Turns true when the reader reached end of file: the tail is complete.
    eof: Arc<watch::Sender<bool>>,
}

impl Default for StderrTail {
    fn default() -> Self {
        Self {
            lines: Arc::default(),
            eof: Arc::new(watch::channel(false).0),
        }
    }
}

impl StderrTail {
    /// Waits, at most `within`, until every line the server wrote has been read.
    pub(crate) async fn drained(&self, within: Duration) {
        let mut eof = self.eof.subscribe();
        let _ = tokio::time::timeout(within, eof.wait_for(|done| *done)).await;
    }

    fn push(&self, line: String) {
        let mut lines = lock(&self.lines);
        if lines.len() == defaults::STDERR_TAIL_LINES {
            lines.pop_front();
        }
        lines.push_back(line);
    }

    /// A copy of the kept lines, oldest first.
    pub(crate) fn lines(&self) -> Vec<String> {
        lock(&self.lines).iter().cloned().collect()
    }

    /// The last `n` lines, for error messages.
    pub(crate) fn last(&self, n: usize) -> Vec<String> {
        let lines = self.lines();
        lines[lines.len().saturating_sub(n)..].to_vec()
    }
}

/// Our side of a running server process: its exit, its stderr, and the way to stop it.
pub(crate) struct ProcessHandle {
    pid: u32,
    exit: watch::Receiver<Option<ExitInfo>>,
    stderr: StderrTail,
    stop: Option<oneshot::Sender<Duration>>,
    reaper: Option<tokio::task::JoinHandle<()>>,
}

impl ProcessHandle {
    /// The child's pid (also its process group id).
    pub(crate) fn pid(&self) -> u32 {
        self.pid
    }

    /// Its stderr tail.
    pub(crate) fn stderr(&self) -> &StderrTail {
        &self.stderr
    }

    /// A receiver that turns `Some` when the process has exited.
    pub(crate) fn exit_watch(&self) -> watch::Receiver<Option<ExitInfo>> {
        self.exit.clone()
    }

    /// Stops the process: after its stdin is closed (the caller drops the transport first) it
    /// gets `grace` to exit, then SIGTERM, then SIGKILL; then its whole group is killed and it
    /// is reaped. Returns how it ended.
    pub(crate) async fn stop(mut self, grace: Duration) -> Option<ExitInfo> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(grace);
        }
        if let Some(reaper) = self.reaper.take() {
            let _ = reaper.await;
        }
        self.exit.borrow().clone()
    }
}

impl Drop for ProcessHandle {
    fn drop(&mut self) {
        // Dropped without `stop` (a connection task aborted, a panic): the reaper still owns
        // the child; tell it to stop at once so nothing is orphaned.
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(Duration::ZERO);
        }
    }
}

/// Kills the whole process group on drop unless disarmed: the last line of defence when the
/// reaper task itself is dropped (runtime shutdown, panic unwinding).
struct GroupGuard {
    group: Group,
    armed: bool,
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if self.armed {
            self.group.kill();
        }
    }
}

/// Spawns `command` as a server and returns the rmcp transport over its pipes plus our handle.
pub(crate) fn spawn(
    server: &str,
    command: &str,
    args: &[String],
    env: &BTreeMap<String, String>,
    cwd: Option<&Path>,
    sandbox: Option<&crate::config::Sandbox>,
    ctx: &super::TransportContext,
) -> Result<(StdioTransport, ProcessHandle), Error> {
    let prepared = super::sandbox::prepare(server, command, sandbox, env, cwd)?;
    let mut cmd = Command::new(crate::platform::program::resolve(command, env, cwd));
    cmd.args(args)
        .env_clear()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    // A group of its own (a job object on Windows), killed by the kernel too if we die.
    process::isolate(&mut cmd);
    for key in defaults::ENV_ALLOWLIST {
        if let Some(value) = std::env::var_os(key) {
            cmd.env(key, value);
        }
    }
    cmd.envs(env);
    if let Some(cwd) = cwd {
        cmd.current_dir(cwd);
    }
    // After ours: PR_SET_PDEATHSIG must come before the sandbox, which sets it again after
    // changing credentials.
    let keep = prepared.map(|prepared| prepared.install(&mut cmd));

    let mut child = cmd
        .spawn()
        .map_err(|e| spawn_error(server, command, cwd, e))?;
    let pid = child.id().unwrap_or(0);
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(Error::Connect {
            server: server.to_string(),
            message: "the child process has no stdio pipes".into(),
            stderr_tail: Vec::new(),
            source: None,
        });
    };

    let tail = StderrTail::default();
    tokio::spawn(read_stderr(server.to_string(), stderr, tail.clone()));

    let (exit_tx, exit_rx) = watch::channel(None);
    let (stop_tx, stop_rx) = oneshot::channel();
    let guard = GroupGuard {
        group: Group::of(&child),
        armed: true,
    };
    let reaper = ctx.reapers.spawn(reap(
        server.to_string(),
        child,
        guard,
        exit_tx,
        stop_rx,
        keep,
    ));

    let (stdout, kick) =
        BusyPipe::new(stdout, ctx.polling.clone()).map_err(|e| Error::Connect {
            server: server.to_string(),
            message: format!("cannot read the server's output: {e}"),
            stderr_tail: Vec::new(),
            source: crate::error::cause(e),
        })?;
    let wire = ctx.wire_target(server);
    let transport = super::lines::LineTransport::kicked(
        Tap::new(stdout, wire.clone(), Direction::Receive),
        Tap::new(stdin, wire, Direction::Send),
        server,
        ctx.max_message,
        (!ctx.polling.is_off()).then_some(kick),
    );
    Ok((
        transport,
        ProcessHandle {
            pid,
            exit: exit_rx,
            stderr: tail,
            stop: Some(stop_tx),
            reaper: Some(reaper),
        },
    ))
}

fn spawn_error(server: &str, command: &str, cwd: Option<&Path>, e: std::io::Error) -> Error {
    let message = match e.kind() {
        std::io::ErrorKind::NotFound => match cwd {
            Some(dir) if !dir.is_dir() => {
                format!("working directory `{}` does not exist", dir.display())
            }
            _ if Path::new(command).is_file() => match interpreter(Path::new(command)) {
                Some(interpreter) => format!(
                    "`{command}` is a script whose interpreter `{interpreter}` does not exist \
                     (a moved virtualenv or node install?)"
                ),
                None => format!("`{command}` exists but the system cannot execute it"),
            },
            _ => format!(
                "command `{command}` not found: install it or put its directory on PATH \
                 (PATH is passed to servers; use an absolute path to be sure)"
            ),
        },
        std::io::ErrorKind::PermissionDenied => {
            format!("command `{command}` is not executable (permission denied)")
        }
        _ => format!("cannot start `{command}`: {e}"),
    };
    Error::Connect {
        server: server.to_string(),
        message,
        stderr_tail: Vec::new(),
        source: crate::error::cause(e),
    }
}

/// The interpreter named on a script's `#!` line.
fn interpreter(script: &Path) -> Option<String> {
    use std::io::Read;
    let mut head = [0u8; 256];
    let n = std::fs::File::open(script).ok()?.read(&mut head).ok()?;
    let line = head[..n].split(|b| *b == b'\n').next()?;
    let line = std::str::from_utf8(line.strip_prefix(b"#!")?).ok()?;
    line.split_whitespace().next().map(str::to_string)
}

/// Owns the child until it is reaped: reports a crash the moment it happens, and on request
/// runs the shutdown ladder (grace → SIGTERM → SIGKILL). Always kills the rest of the group.
async fn reap(
    server: String,
    mut child: Child,
    mut guard: GroupGuard,
    exit_tx: watch::Sender<Option<ExitInfo>>,
    stop_rx: oneshot::Receiver<Duration>,
    // The sandbox's private temp dir, removed once the server is reaped.
    keep: Option<super::sandbox::Keep>,
) {
    let status = tokio::select! {
        status = child.wait() => status,
        grace = stop_rx => {
            let grace = grace.unwrap_or(Duration::ZERO);
            match tokio::time::timeout(grace, child.wait()).await {
                Ok(status) => status,
                Err(_) => {
                    tracing::debug!(server = %server, "server did not exit after stdin closed; sending SIGTERM");
                    guard.group.terminate();
                    match tokio::time::timeout(defaults::TERM_GRACE, child.wait()).await {
                        Ok(status) => status,
                        Err(_) => {
                            tracing::debug!(server = %server, "server ignored SIGTERM; sending SIGKILL");
                            guard.group.kill();
                            child.wait().await
                        }
                    }
                }
            }
        }
    };
    // Grandchildren (`npx` → `node`) may outlive the leader: the group goes with it.
    guard.group.kill();
    guard.armed = false;
    let info = match status {
        Ok(status) => ExitInfo {
            code: status.code(),
            signal: process::exit_signal(&status),
        },
        Err(e) => {
            tracing::warn!(server = %server, error = %e, "could not wait for server process");
            ExitInfo {
                code: None,
                signal: None,
            }
        }
    };
    tracing::debug!(server = %server, %info, "server process reaped");
    drop(keep);
    let _ = exit_tx.send(Some(info));
}

/// Forwards stderr to tracing at debug level and keeps a bounded tail; never to our terminal.
async fn read_stderr(server: String, stderr: ChildStderr, tail: StderrTail) {
    // Room for one whole line (tokio's 8 KiB default is zeroed, so resident, per server).
    let mut reader = BufReader::with_capacity(defaults::STDERR_LINE_MAX, stderr);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        // Bounded: a server printing one endless line must not grow our memory.
        let mut limited = (&mut reader).take(defaults::STDERR_LINE_MAX as u64);
        match limited.read_until(b'\n', &mut buf).await {
            Ok(0) => break,
            Ok(_) => {
                let ends_line = buf.last() == Some(&b'\n');
                let line = String::from_utf8_lossy(&buf).trim_end().to_string();
                if !ends_line && skip_line(&mut reader).await.is_err() {
                    break;
                }
                if !line.is_empty() {
                    tracing::debug!(server = %server, "stderr: {line}");
                    tail.push(line);
                }
            }
            Err(_) => break,
        }
    }
    tail.eof.send_replace(true);
}

/// Discards the rest of an over-long line chunk by chunk, without buffering it.
async fn skip_line(reader: &mut BufReader<ChildStderr>) -> std::io::Result<()> {
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(());
        }
        match available.iter().position(|b| *b == b'\n') {
            Some(pos) => {
                reader.consume(pos + 1);
                return Ok(());
            }
            None => {
                let n = available.len();
                reader.consume(n);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_keeps_only_the_last_lines() {
        let tail = StderrTail::default();
        for i in 0..(defaults::STDERR_TAIL_LINES + 5) {
            tail.push(format!("line {i}"));
        }
        let lines = tail.lines();
        assert_eq!(lines.len(), defaults::STDERR_TAIL_LINES);
        assert_eq!(lines[0], "line 5");
        assert_eq!(tail.last(2), vec!["line 43", "line 44"]);
    }

    #[test]
    fn exit_info_reads_naturally() {
        let crashed = ExitInfo {
            code: Some(3),
            signal: None,
        };
        assert_eq!(crashed.to_string(), "process exited with status 3");
        let killed = ExitInfo {
            code: None,
            signal: Some(9),
        };
        assert_eq!(killed.to_string(), "process killed by signal 9");
    }
}
