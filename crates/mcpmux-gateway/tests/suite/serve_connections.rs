//! `mcpmux serve --http` under a flood of slow connections, as it was reported (#31): with
//! the open-file limit at 1024 (soft and hard, so the gateway cannot raise it), one peer opens
//! 1 100 connections that send half a head and stop. The per-peer cap refuses most of them at
//! once, so descriptors are left: `/healthz` answers at once, and the TypeScript SDK client,
//! from another address, lists and calls. And with a soft limit below the hard one, `serve`
//! raises it: connections past what the soft limit allowed are held.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mcpmux_test_support as support;

use std::net::SocketAddr;
use std::os::unix::process::CommandExt;
use std::time::{Duration, Instant};

use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

/// A connection to `to` from the loopback address `from`, if made within a second.
async fn connect_from(from: &str, to: SocketAddr) -> Option<TcpStream> {
    let socket = TcpSocket::new_v4().unwrap();
    socket
        .bind(SocketAddr::new(from.parse().unwrap(), 0))
        .unwrap();
    tokio::time::timeout(Duration::from_secs(1), socket.connect(to))
        .await
        .ok()?
        .ok()
}

/// `GET /healthz` from 127.0.0.1: the answer's first line and how long it took; `None` past 5 s.
async fn healthz(to: SocketAddr) -> Option<(String, Duration)> {
    let started = Instant::now();
    let asking = async {
        let mut stream = connect_from("127.0.0.1", to).await?;
        stream
            .write_all(b"GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n")
            .await
            .ok()?;
        let mut answer = String::new();
        stream.read_to_string(&mut answer).await.ok()?;
        Some(answer.lines().next().unwrap_or_default().to_string())
    };
    let line = tokio::time::timeout(Duration::from_secs(5), asking)
        .await
        .ok()??;
    Some((line, started.elapsed()))
}

/// `cmd` started with its open-file limit at `soft` and `hard`.
fn with_file_limit(cmd: &mut std::process::Command, soft: u64, hard: u64) {
    // SAFETY: only async-signal-safe setrlimit runs between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            let limit = libc::rlimit {
                rlim_cur: soft,
                rlim_max: hard,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// The address `served` listens on.
fn address(served: &Served) -> SocketAddr {
    served
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .parse()
        .unwrap()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// `count` connections from `from` that send half a head and stop (those made within a
/// second each).
async fn slow_heads(to: SocketAddr, from: &str, count: usize) -> Vec<TcpStream> {
    let mut slow = Vec::with_capacity(count);
    for _ in 0..count {
        if let Some(mut stream) = connect_from(from, to).await {
            let _ = stream
                .write_all(b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\n")
                .await;
            slow.push(stream);
        }
    }
    slow
}

#[test]
fn serve_raises_its_soft_file_limit_and_holds_connections_past_what_the_soft_one_allowed() {
    const HELD: usize = 500;
    let sandbox = with_testserver(&[]);
    let mut cmd = sandbox.command(&[
        "serve",
        "--http",
        "127.0.0.1:0",
        "--header-timeout",
        "60",
        "--max-connections-per-peer",
        "0",
    ]);
    // Left at 512, the cap would be 384 (a quarter kept for upstream pipes, at least 128).
    with_file_limit(&mut cmd, 512, 4096);
    let served = Served::spawn(cmd);
    let addr = address(&served);
    let (slow, metrics) = runtime().block_on(async {
        let slow = slow_heads(addr, "127.0.0.2", HELD).await;
        let mut stream = connect_from("127.0.0.1", addr).await.unwrap();
        stream
            .write_all(b"GET /metrics HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n")
            .await
            .unwrap();
        let mut metrics = String::new();
        tokio::time::timeout(Duration::from_secs(5), stream.read_to_string(&mut metrics))
            .await
            .expect("/metrics did not answer")
            .unwrap_or_else(|error| panic!("/metrics refused ({error}): the cap is full"));
        (slow, metrics)
    });
    // A connect now and then times out on a loaded machine: most are made.
    assert!(
        slow.len() > HELD * 9 / 10,
        "{} connections made",
        slow.len()
    );
    let open: usize = metrics
        .lines()
        .find_map(|line| line.strip_prefix("mcpmux_gateway_connections "))
        .unwrap_or_else(|| panic!("no connection gauge in {metrics}"))
        .trim()
        .parse()
        .unwrap();
    assert!(
        open > slow.len(),
        "{open} connections open: some were refused"
    );
    assert!(!metrics.contains("connections_refused_total{"), "{metrics}");
    drop(slow);
    let (status, stderr) = served.terminate(Duration::from_secs(10));
    assert!(status.success(), "{status}: {stderr}");
    assert!(!stderr.contains("connection cap lowered"), "{stderr}");
}

#[test]
fn a_flood_of_slow_connections_under_a_low_file_limit_leaves_healthz_and_calls_working() {
    const SLOW: usize = 1100;
    let sandbox = with_testserver(&[]);
    let mut cmd = sandbox.command(&["serve", "--http", "127.0.0.1:0", "--header-timeout", "60"]);
    with_file_limit(&mut cmd, 1024, 1024);
    let served = Served::spawn(cmd);
    let addr = address(&served);
    let runtime = runtime();
    let (slow, latency) = runtime.block_on(async {
        let slow = slow_heads(addr, "127.0.0.2", SLOW).await;
        let mut latency = Vec::new();
        for _ in 0..10 {
            let (line, took) = healthz(addr)
                .await
                .expect("/healthz did not answer under the flood");
            assert!(line.starts_with("HTTP/1.1 200"), "{line}");
            latency.push(took);
        }
        (slow, latency)
    });
    eprintln!(
        "{} of {SLOW} slow connections made; /healthz took {:?} at most",
        slow.len(),
        latency.iter().max().unwrap()
    );
    assert!(
        latency.iter().all(|took| *took < Duration::from_secs(1)),
        "{latency:?}"
    );
    let lines = ts_client(served.target(), list_and_echo());
    assert_listed_and_echoed(
        &lines,
        "TypeScript client under a flood of slow connections",
    );
    drop(slow);
    let (status, stderr) = served.terminate(Duration::from_secs(10));
    assert!(status.success(), "{status}: {stderr}");
}
