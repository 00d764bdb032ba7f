//! A hermetic place to run the `mcpmux` binary (its own HOME, XDG dirs and project directory,
//! none of this machine's config, tokens or display), what a run showed the user, and a run
//! that may not outlast its deadline. The binary is the one `scripts/build-test-programs.sh`
//! builds, so any crate's suite can run it.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::poll::eventually_blocking;
use crate::servers::{sandbox_reads_testserver, test_programs};

/// The `mcpmux` binary, built on first use if `cargo test` ran without it.
pub fn mcpmux_bin() -> PathBuf {
    let bin = test_programs().join("mcpmux");
    assert!(bin.exists(), "no mcpmux at {}", bin.display());
    bin
}

/// A hermetic place to run `mcpmux`: a temp HOME and a temp project directory.
pub struct Sandbox {
    _dir: tempfile::TempDir,
    pub home: PathBuf,
    pub project: PathBuf,
}

/// What one run of `mcpmux` showed the user.
#[derive(Debug)]
pub struct Run {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub took: Duration,
}

impl Sandbox {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let project = dir.path().join("project");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&project).unwrap();
        Sandbox {
            _dir: dir,
            home,
            project,
        }
    }

    /// A sandbox whose `~/.claude.json` holds `servers` (the person's own config: nothing to
    /// approve).
    pub fn with_user_servers(servers: Value) -> Self {
        let sandbox = Self::new();
        sandbox.write_file(
            &sandbox.home.join(".claude.json"),
            &json!({ "mcpServers": servers }).to_string(),
        );
        sandbox
    }

    /// Writes the project's `.mcp.json` with these `mcpServers`, and approves the project's
    /// servers (`enableAllProjectMcpServers` in `~/.claude/settings.json`) as the person who
    /// set it up would (approval itself: cli_trust.rs).
    pub fn project_servers(&self, servers: Value) {
        self.write_file(
            &self.project.join(".mcp.json"),
            &json!({ "mcpServers": servers }).to_string(),
        );
        self.write_file(
            &self.home.join(".claude").join("settings.json"),
            r#"{"enableAllProjectMcpServers": true}"#,
        );
        // Approved project servers run in the `project` sandbox; one that starts the test
        // server behind `sh -c` needs its directory granted, as the person would.
        let user_config = self.home.join(".config/mcpmux/config.toml");
        if !user_config.exists() {
            self.write_file(&user_config, &sandbox_reads_testserver());
        }
    }

    /// Writes `text` to `path`, creating its folders.
    pub fn write_file(&self, path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    /// Points `cmd` at the sandbox: run in the project, with its HOME and XDG dirs, none of the
    /// variables that would reach this machine's tokens, logs or display, and an empty stdin.
    pub fn hermetic<'c>(&self, cmd: &'c mut Command) -> &'c mut Command {
        cmd.current_dir(&self.project)
            .env("HOME", &self.home)
            .env("XDG_CONFIG_HOME", self.home.join(".config"))
            .env("XDG_CACHE_HOME", self.home.join(".cache"))
            .env_remove("MCPMUX_TOKEN_FILE")
            .env_remove("MCPMUX_AUTH_HEADLESS")
            .env_remove("DISPLAY")
            .env_remove("WAYLAND_DISPLAY")
            .env_remove("MCPMUX_LOG")
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
    }

    /// `mcpmux ARGS` in the sandbox, not started yet.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(mcpmux_bin());
        cmd.args(args);
        self.hermetic(&mut cmd);
        cmd
    }

    /// Runs `mcpmux ARGS` with an empty stdin.
    pub fn run(&self, args: &[&str]) -> Run {
        self.run_with_stdin(args, None)
    }

    /// Runs `mcpmux ARGS` with `stdin` (or an empty one).
    pub fn run_with_stdin(&self, args: &[&str], stdin: Option<&str>) -> Run {
        run_command(self.command(args), stdin)
    }

    /// Runs `mcpmux ARGS` with these variables set too.
    pub fn run_with_env(&self, args: &[&str], env: &[(&str, &str)]) -> Run {
        let mut cmd = self.command(args);
        cmd.envs(env.iter().copied());
        run_command(cmd, None)
    }

    /// Starts `mcpmux ARGS` with stdin, stdout and stderr on pipes; the output is read on
    /// threads so that it never blocks on a full pipe.
    pub fn spawn(&self, args: &[&str]) -> Running {
        let mut cmd = self.command(args);
        cmd.stdin(Stdio::piped());
        Running::start(cmd, args)
    }

    /// Runs `mcpmux ARGS` with an empty stdin, killing it and failing the test past `within`.
    pub fn run_within(&self, args: &[&str], within: Duration) -> Run {
        Running::start(self.command(args), args).finish(within)
    }
}

/// Runs `cmd` to its end, giving it `stdin` (or an empty one).
pub fn run_command(mut cmd: Command, stdin: Option<&str>) -> Run {
    let start = Instant::now();
    let mut child = cmd
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    if let Some(text) = stdin {
        let mut pipe = child.stdin.take().unwrap();
        pipe.write_all(text.as_bytes()).unwrap();
    }
    let output = child.wait_with_output().unwrap();
    Run {
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        took: start.elapsed(),
    }
}

/// A running `mcpmux`.
pub struct Running {
    pub child: Child,
    stdout: JoinHandle<String>,
    stderr: JoinHandle<String>,
    command_line: String,
    started: Instant,
}

impl Running {
    fn start(mut cmd: Command, args: &[&str]) -> Self {
        let started = Instant::now();
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = read_all(child.stdout.take().unwrap());
        let stderr = read_all(child.stderr.take().unwrap());
        Running {
            child,
            stdout,
            stderr,
            command_line: format!("mcpmux {}", args.join(" ")),
            started,
        }
    }

    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// Gives the `-` arguments on stdin and closes it.
    pub fn send_arguments(&mut self, arguments: &str) {
        let mut stdin = self.child.stdin.take().unwrap();
        stdin.write_all(arguments.as_bytes()).unwrap();
    }

    /// Waits for it to exit (killing it and failing if it takes longer than `within`).
    pub fn finish(mut self, within: Duration) -> Run {
        let status = eventually_blocking(within, Duration::from_millis(10), || {
            self.child.try_wait().unwrap()
        });
        let Some(status) = status else {
            let _ = self.child.kill();
            let _ = self.child.wait();
            panic!(
                "`{}` did not exit within {within:?}; stderr: {}",
                self.command_line,
                self.stderr.join().unwrap()
            );
        };
        Run {
            code: status.code(),
            stdout: self.stdout.join().unwrap(),
            stderr: self.stderr.join().unwrap(),
            took: self.started.elapsed(),
        }
    }
}

/// Reads `pipe` to its end on a thread of its own.
fn read_all(mut pipe: impl Read + Send + 'static) -> JoinHandle<String> {
    std::thread::spawn(move || {
        let mut text = String::new();
        let _ = pipe.read_to_string(&mut text);
        text
    })
}

#[track_caller]
pub fn assert_code(run: &Run, code: i32) {
    assert_eq!(run.code, Some(code), "unexpected exit code: {run:#?}");
}

/// The row of a table (`mcpmux servers`, `mcpmux auth status`) whose first cell is `name`.
pub fn table_row<'a>(stdout: &'a str, name: &str) -> &'a str {
    stdout
        .lines()
        .find(|line| line.split_whitespace().next() == Some(name))
        .unwrap_or_else(|| panic!("no row for `{name}` in:\n{stdout}"))
}

/// The JSON a `--json` run printed.
pub fn json(run: &Run) -> Value {
    serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {run:#?}"))
}
