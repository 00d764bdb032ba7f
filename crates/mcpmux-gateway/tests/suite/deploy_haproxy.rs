//! `deploy/haproxy.cfg` for real: the Debian `haproxy` in front of two
//! `mcpmux serve --http 127.0.0.1:PORT` replicas, the file run as shipped with only its
//! addresses and check interval replaced, and the official Python SDK client (handshake era)
//! listing and calling through it. The test kills the replica the client's session lives on:
//! every call succeeds or fails with a clear error, and after a new session the client goes
//! on with the other replica.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mcpmux_test_support as support;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::*;

/// The HAProxy binary, or a failure saying how to install it: never a silent skip.
fn haproxy() -> PathBuf {
    for dir in ["/usr/sbin", "/usr/bin", "/usr/local/sbin", "/usr/local/bin"] {
        let path = PathBuf::from(dir).join("haproxy");
        if path.exists() {
            return path;
        }
    }
    panic!(
        "haproxy is not installed: run scripts/install-test-deps.sh (it installs Debian's haproxy)"
    );
}

/// `text` with `from` replaced by `to`, which must be there exactly once.
fn replace_once(text: &str, from: &str, to: &str) -> String {
    assert_eq!(
        text.matches(from).count(),
        1,
        "deploy/haproxy.cfg no longer has `{from}` once: update this test with it"
    );
    text.replacen(from, to, 1)
}

/// A process killed (and reaped) when dropped.
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A raw `GET` of `path` at `addr`: the status, or `None` when nothing answered.
fn status_of(addr: &str, path: &str) -> Option<u16> {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).ok()?;
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer.split_whitespace().nth(1)?.parse().ok()
}

/// The `host:port` of a replica's URL (`http://127.0.0.1:PORT/mcp`).
fn authority(url: &str) -> String {
    url.trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_string()
}

#[test]
fn two_replicas_behind_haproxy_survive_the_loss_of_one() {
    let haproxy = haproxy();
    let sandbox = with_testserver(&[]);
    let replicas = [Served::start(&sandbox, &[]), Served::start(&sandbox, &[])];
    let addrs: Vec<String> = replicas.iter().map(|r| authority(&r.url)).collect();
    let front = format!("127.0.0.1:{}", free_port());

    let shipped = std::fs::read_to_string(workspace().join("deploy/haproxy.cfg")).unwrap();
    let mut config = replace_once(&shipped, "bind :8080", &format!("bind {front}"));
    config = replace_once(&config, "mcpmux-1:8080", &addrs[0]);
    config = replace_once(&config, "mcpmux-2:8080", &addrs[1]);
    config = replace_once(&config, "inter 2s", "inter 100ms");
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("haproxy.cfg");
    std::fs::write(&cfg, config).unwrap();
    let check = Command::new(&haproxy)
        .arg("-c")
        .arg("-f")
        .arg(&cfg)
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "haproxy refuses the config: {}",
        String::from_utf8_lossy(&check.stderr)
    );
    let _balancer = Reaped(
        Command::new(&haproxy)
            .arg("-db")
            .arg("-f")
            .arg(&cfg)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    // Both replicas ready, and the balancer answering for them.
    let ready = eventually_blocking(Duration::from_secs(20), Duration::from_millis(20), || {
        (addrs.iter().all(|a| status_of(a, "/readyz") == Some(200))
            && status_of(&front, "/readyz") == Some(200))
        .then_some(())
    });
    assert!(
        ready.is_some(),
        "the replicas or the balancer never got ready"
    );
    let upstreams: Vec<Vec<i32>> = replicas
        .iter()
        .map(|r| {
            descendants(r.child.id() as i32)
                .iter()
                .map(|p| p.pid)
                .collect()
        })
        .collect();

    let release = dir.path().join("release");
    let scenario = json!({"url": format!("http://{front}/mcp"), "release": release, "calls": 4});
    let mut client = Command::new(venv_bin("python"));
    client
        .arg(clients().join("py-failover.py"))
        .arg(scenario.to_string())
        .env_remove("MCPMUX_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut client = Reaped(client.spawn().unwrap());
    let stderr = read_pipe(client.0.stderr.take().unwrap());
    let mut stdout = BufReader::new(client.0.stdout.take().unwrap());
    let started = Instant::now();
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    let before: Value = match serde_json::from_str(&line) {
        Ok(before) => before,
        Err(_) => panic!(
            "the client printed {line:?}: {}",
            stderr.join().unwrap_or_default()
        ),
    };
    assert!(before["tools"].as_u64().unwrap() > 0, "{before}");
    let pid = before["pid"].as_i64().unwrap() as i32;
    let victim = upstreams
        .iter()
        .position(|pids| pids.contains(&pid))
        .unwrap_or_else(|| panic!("pid {pid} is no replica's upstream: {upstreams:?}"));
    let survivor = 1 - victim;

    // Kill the replica the session lives on, then let the client go on.
    let mut replicas = replicas.map(Some);
    let mut dead = replicas[victim].take().unwrap();
    dead.child.kill().unwrap();
    dead.child.wait().unwrap();
    std::fs::write(&release, "").unwrap();

    let mut lines = Vec::new();
    for line in stdout.lines() {
        lines.push(serde_json::from_str::<Value>(&line.unwrap()).unwrap());
    }
    let status = client.0.wait().unwrap();
    let stderr = stderr.join().unwrap();
    assert!(status.success(), "{status}: {lines:?}\n{stderr}");
    assert!(
        started.elapsed() < Duration::from_secs(40),
        "took {:?}",
        started.elapsed()
    );

    let calls: Vec<&Value> = lines.iter().filter(|l| l.get("call").is_some()).collect();
    assert_eq!(calls.len(), 4, "{lines:?}");
    for call in &calls {
        if call["ok"] == true {
            let i = call["call"].as_u64().unwrap();
            assert_eq!(call["text"], format!("call {i}"), "{call}");
        } else {
            let error = call["error"].as_str().unwrap_or_default();
            assert!(
                !error.is_empty() && !error.contains("TimeoutError"),
                "a call failed without a clear error: {call}"
            );
        }
    }
    assert_eq!(
        calls.last().unwrap()["ok"],
        true,
        "the client never got back to work: {lines:?}"
    );
    let after = lines.iter().find(|l| l["phase"] == "after").unwrap();
    let new_pid = after["pid"].as_i64().unwrap() as i32;
    assert!(
        upstreams[survivor].contains(&new_pid),
        "after the loss the calls went to {new_pid}, not the surviving replica {:?}: {lines:?}",
        upstreams[survivor]
    );
    // The session died with its replica: the other one answers 404, which the SDK reports
    // as the session terminated; the client starts a new session and goes on.
    assert_eq!(calls[0]["ok"], false, "{lines:?}");
    assert!(
        calls[0]["error"]
            .as_str()
            .unwrap()
            .contains("Session terminated"),
        "{lines:?}"
    );
    let failed = calls.iter().filter(|c| c["ok"] != true).count();
    let reinitialized = lines.iter().filter(|l| l["reinitialized"] == true).count();
    assert_eq!(failed, reinitialized, "{lines:?}");

    // The dead replica's upstream server is not left behind.
    drop(dead);
    let orphans: std::collections::BTreeSet<i32> = upstreams[victim].iter().copied().collect();
    for pid in wait_gone(&orphans, Duration::from_secs(5)) {
        unsafe {
            libc::kill(pid.pid, libc::SIGKILL);
        }
    }
    drop(replicas);
}
