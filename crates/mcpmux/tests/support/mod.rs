//! Shared by the integration tests: where the real servers are, how to start the HTTP ones on
//! 127.0.0.1, and how to see from /proc which processes are left.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeSet, HashMap};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

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

/// The fault-injecting test server, built on first use if `cargo test` ran without it.
pub fn testserver() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let bin = target_dir().join("debug").join("mcpmux-testserver");
        let status = Command::new(env!("CARGO"))
            .args(["build", "--quiet", "-p", "mcpmux-testserver"])
            .current_dir(workspace())
            .status()
            .expect("run cargo build");
        assert!(status.success(), "building mcpmux-testserver failed");
        assert!(bin.exists(), "no test server at {}", bin.display());
        bin
    })
    .clone()
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
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "node server did not listen on {port}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    ServerProcess {
        child,
        url: format!("http://127.0.0.1:{port}{path}"),
    }
}

/// One process as /proc shows it.
#[derive(Debug, Clone)]
pub struct Proc {
    pub pid: i32,
    pub ppid: i32,
    pub pgid: i32,
    pub state: char,
    pub cmdline: String,
}

/// Every process on the machine.
pub fn processes() -> Vec<Proc> {
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    for entry in dir.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // Fields after the command (which may contain spaces) start after the last ')'.
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 2..]) else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.len() < 3 {
            continue;
        }
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline"))
            .map(|b| {
                String::from_utf8_lossy(&b)
                    .replace('\0', " ")
                    .trim()
                    .to_string()
            })
            .unwrap_or_default();
        out.push(Proc {
            pid,
            ppid: fields[1].parse().unwrap_or(0),
            pgid: fields[2].parse().unwrap_or(0),
            state: fields[0].chars().next().unwrap_or('?'),
            cmdline,
        });
    }
    out
}

/// Every descendant of `root` (children, grandchildren, …), zombies included.
pub fn descendants(root: i32) -> Vec<Proc> {
    let all = processes();
    let mut children: HashMap<i32, Vec<&Proc>> = HashMap::new();
    for p in &all {
        children.entry(p.ppid).or_default().push(p);
    }
    let mut out = Vec::new();
    let mut stack = vec![root];
    while let Some(pid) = stack.pop() {
        for child in children.get(&pid).into_iter().flatten() {
            out.push((*child).clone());
            stack.push(child.pid);
        }
    }
    out
}

/// Processes among `pids` that still exist (zombies count: they were not reaped).
pub fn still_alive(pids: &BTreeSet<i32>) -> Vec<Proc> {
    processes()
        .into_iter()
        .filter(|p| pids.contains(&p.pid))
        .collect()
}

/// Waits up to `within` for `pids` to be gone; returns those left.
pub fn wait_gone(pids: &BTreeSet<i32>, within: Duration) -> Vec<Proc> {
    let deadline = Instant::now() + within;
    loop {
        let left = still_alive(pids);
        if left.is_empty() || Instant::now() > deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Reads one HTTP/1.1 request (head and `content-length` body) from `socket`, keeping what
/// follows it in `buffer` for the next call; `None` when the peer closes first.
pub async fn read_http_request(
    socket: &mut tokio::net::TcpStream,
    buffer: &mut Vec<u8>,
) -> Option<Vec<u8>> {
    use tokio::io::AsyncReadExt;
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        match socket.read(&mut chunk).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => buffer.extend_from_slice(&chunk[..n]),
        }
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).to_lowercase();
    let length = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .map_or(0, |v| v.trim().parse::<usize>().unwrap());
    while buffer.len() < head_end + length {
        match socket.read(&mut chunk).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => buffer.extend_from_slice(&chunk[..n]),
        }
    }
    Some(buffer.drain(..head_end + length).collect())
}

/// What [`BreakingProxy`] does with one HTTP request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Break {
    /// Relay it and its response.
    Relay,
    /// Close the connection without sending it on: the server never sees it.
    Before,
    /// Send it on, then close the connection before the response: the server did the work.
    After,
    /// Answer it HTTP 401 with a `Bearer` challenge; the server never sees it.
    Unauthorized,
    /// Answer it `307 Temporary Redirect` to this location; the server never sees it.
    Redirect(&'static str),
}

/// A TCP proxy on 127.0.0.1 in front of an HTTP server that breaks connections on purpose,
/// the way a server closing an idle keep-alive connection as it is reused does. Every
/// relayed response gets `connection: close`, so each request arrives on its own connection
/// and `rule` sees each one (head and body).
pub struct BreakingProxy {
    pub url: String,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for BreakingProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl BreakingProxy {
    /// Proxies `upstream` (`http://host:port/path`); the proxy URL keeps the path.
    pub async fn start<F>(upstream: &str, rule: F) -> Self
    where
        F: Fn(&str) -> Break + Send + Sync + 'static,
    {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let rest = upstream.strip_prefix("http://").expect("http upstream");
        let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        let upstream_addr = authority.to_string();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}{path}", listener.local_addr().unwrap());
        let rule = std::sync::Arc::new(rule);
        let task = tokio::spawn(async move {
            while let Ok((mut client, _)) = listener.accept().await {
                let rule = rule.clone();
                let upstream_addr = upstream_addr.clone();
                tokio::spawn(async move {
                    let mut buffer = Vec::new();
                    let Some(request) = read_http_request(&mut client, &mut buffer).await else {
                        return;
                    };
                    let verdict = rule(&String::from_utf8_lossy(&request));
                    if verdict == Break::Before {
                        return;
                    }
                    if verdict == Break::Unauthorized {
                        let _ = client
                            .write_all(
                                b"HTTP/1.1 401 Unauthorized\r\nwww-authenticate: Bearer\r\n\
                                  content-length: 13\r\nconnection: close\r\n\r\ntoken refused",
                            )
                            .await;
                        return;
                    }
                    if let Break::Redirect(location) = verdict {
                        let answer = format!(
                            "HTTP/1.1 307 Temporary Redirect\r\nlocation: {location}\r\n\
                             content-length: 0\r\nconnection: close\r\n\r\n"
                        );
                        let _ = client.write_all(answer.as_bytes()).await;
                        return;
                    }
                    let Ok(mut server) = tokio::net::TcpStream::connect(&upstream_addr).await
                    else {
                        return;
                    };
                    // The server closes its side after answering, which ends the relay.
                    let mut request = request;
                    if let Some(line_end) = request.windows(2).position(|w| w == b"\r\n") {
                        let at = line_end + 2;
                        request.splice(at..at, b"connection: close\r\n".iter().copied());
                    }
                    if server.write_all(&request).await.is_err() {
                        return;
                    }
                    if verdict == Break::After {
                        // Long enough for the server to read the request and start on it.
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        return;
                    }
                    // Relay the response with `connection: close` added to its head.
                    let mut head = Vec::new();
                    let mut chunk = [0u8; 8192];
                    let head_end = loop {
                        if let Some(at) = head.windows(4).position(|w| w == b"\r\n\r\n") {
                            break at + 2;
                        }
                        match server.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => head.extend_from_slice(&chunk[..n]),
                        }
                    };
                    head.splice(head_end..head_end, b"connection: close\r\n".iter().copied());
                    if client.write_all(&head).await.is_err() {
                        return;
                    }
                    let _ = tokio::io::copy(&mut server, &mut client).await;
                });
            }
        });
        BreakingProxy { url, task }
    }
}
