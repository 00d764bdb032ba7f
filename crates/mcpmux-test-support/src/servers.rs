//! Where the real servers are (the test server, the installed Node and Python ones) and how to
//! start the listening ones on 127.0.0.1: a process killed with its whole group when dropped.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use super::poll::eventually_blocking;

/// The workspace root.
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("workspace root")
        .to_path_buf()
}

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join("target"))
}

/// Where the debug programs the tests start are, built on first use (a no-op when
/// `scripts/test.sh` has built them): `mcpmux`, `mcpmux-conformance`, `mcpmux-testserver`.
pub fn test_programs() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        // The one build of them, with the packages every build names (the script says why).
        let mut build = Command::new(workspace().join("scripts/build-test-programs.sh"));
        build.env("CARGO", env!("CARGO"));
        // Not what `cargo test` set for this test binary: build scripts watch some of it (some
        // rerun when CARGO_MANIFEST_DIR changes), so each test binary's values would rebuild
        // those crates and everything above them, and the next build from a shell all that again.
        for (key, _) in std::env::vars_os() {
            if let Some(key) = key.to_str()
                && (key.starts_with("CARGO_PKG_")
                    || key.starts_with("CARGO_BIN_EXE_")
                    || matches!(
                        key,
                        "CARGO_MANIFEST_DIR"
                            | "CARGO_MANIFEST_PATH"
                            | "CARGO_CRATE_NAME"
                            | "CARGO_BIN_NAME"
                            | "CARGO_PRIMARY_PACKAGE"
                            | "CARGO_TARGET_TMPDIR"
                            | "CARGO_RUSTC_CURRENT_DIR"
                    ))
            {
                build.env_remove(key);
            }
        }
        let status = build.status().expect("run scripts/build-test-programs.sh");
        assert!(status.success(), "building the test programs failed");
        target_dir().join("debug")
    })
    .clone()
}

/// The fault-injecting test server, built on first use if `cargo test` ran without it.
pub fn testserver() -> PathBuf {
    let bin = test_programs().join("mcpmux-testserver");
    assert!(bin.exists(), "no test server at {}", bin.display());
    bin
}

/// A user's `mcpmux.toml` `[sandbox]` that lets the servers they did not write (approved
/// project files, imports) run the test server from its build directory, as one hidden behind
/// `sh -c` is not found by the sandbox itself.
pub fn sandbox_reads_testserver() -> String {
    let dir = testserver().canonicalize().unwrap();
    let dir = dir.parent().unwrap().display().to_string();
    format!("[sandbox]\nothers = {{ profile = \"project\", read = [{dir:?}] }}\n")
}

/// A third-party server binary installed by `scripts/install-test-deps.sh`.
pub fn npm_bin(name: &str) -> PathBuf {
    let path = workspace().join("test-deps/node_modules/.bin").join(name);
    assert!(
        path.exists(),
        "{} is missing: run scripts/install-test-deps.sh (or scripts/test.sh)",
        path.display()
    );
    path
}

/// The entry script of an npm server package (to run it under `node --require`).
pub fn npm_script(package: &str, script: &str) -> PathBuf {
    let path = workspace()
        .join("test-deps/node_modules")
        .join(package)
        .join(script);
    assert!(
        path.exists(),
        "{} is missing: run scripts/install-test-deps.sh",
        path.display()
    );
    path
}

/// The preload that pins Node servers to 127.0.0.1.
pub fn bind_loopback() -> PathBuf {
    workspace().join("test-deps/bind-loopback.cjs")
}

/// A Python server installed in the test venv.
pub fn venv_bin(name: &str) -> PathBuf {
    let path = workspace().join("test-deps/.venv/bin").join(name);
    assert!(
        path.exists(),
        "{} is missing: run scripts/install-test-deps.sh (or scripts/test.sh)",
        path.display()
    );
    path
}

/// A free TCP port on 127.0.0.1 (bound then released; fine for tests).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

/// A server process started by a test; killed (its whole group) when dropped.
pub struct ServerProcess {
    pub child: Child,
    pub url: String,
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        unsafe {
            libc::killpg(self.child.id() as i32, libc::SIGKILL);
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts the test server over streamable HTTP on 127.0.0.1 and returns it with its URL.
pub fn testserver_http(args: &[&str]) -> ServerProcess {
    testserver_listening("--http", args)
}

/// Starts the test server in a listening mode (`--http`, `--ws`) on 127.0.0.1 and returns
/// it with the URL it prints once bound.
pub fn testserver_listening(mode: &str, args: &[&str]) -> ServerProcess {
    testserver_listening_at(mode, "127.0.0.1:0", args)
}

/// Starts the test server over streamable HTTP on 127.0.0.1:`port` (to start it again on the
/// port it had: a restart).
pub fn testserver_http_on(port: u16, args: &[&str]) -> ServerProcess {
    testserver_listening_at("--http", &format!("127.0.0.1:{port}"), args)
}

/// Starts the test server in a listening mode on `addr` and returns it with the URL it prints
/// once bound.
pub fn testserver_listening_at(mode: &str, addr: &str, args: &[&str]) -> ServerProcess {
    use std::os::unix::process::CommandExt;
    let mut child = Command::new(testserver())
        .args([mode, addr])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .expect("start test server");
    let stdout = child.stdout.take().expect("stdout");
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .expect("read listening line");
    let url = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("unexpected first line from test server: {line:?}"))
        .to_string();
    ServerProcess { child, url }
}

/// Starts a Node server in HTTP mode pinned to 127.0.0.1 on a free port, waiting until it
/// accepts connections.
pub fn node_http(script: &Path, args: &[&str], path: &str) -> ServerProcess {
    node_http_on(free_port(), script, args, path)
}

/// Starts a Node server in HTTP mode on 127.0.0.1:`port` (to start it again on the port it
/// had: a restart), waiting until it accepts connections.
pub fn node_http_on(port: u16, script: &Path, args: &[&str], path: &str) -> ServerProcess {
    use std::os::unix::process::CommandExt;
    let child = Command::new("node")
        .arg("--require")
        .arg(bind_loopback())
        .arg(script)
        .args(args)
        .env("PORT", port.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .expect("start node server");
    let listening = eventually_blocking(Duration::from_secs(20), Duration::from_millis(50), || {
        std::net::TcpStream::connect(("127.0.0.1", port)).ok()
    });
    assert!(listening.is_some(), "node server did not listen on {port}");
    ServerProcess {
        child,
        url: format!("http://127.0.0.1:{port}{path}"),
    }
}
