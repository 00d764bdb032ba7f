//! `mcpmux serve --http` under a flood of slow connections, as it was reported (#31): with
//! the open-file limit at 1024 (soft and hard, so the gateway cannot raise it), one peer opens
//! 1 100 connections that send half a head and stop. The per-peer cap refuses most of them at
//! once, so descriptors are left: `/healthz` answers at once, and the TypeScript SDK client,
//! from another address, lists and calls.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

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

#[test]
fn a_flood_of_slow_connections_under_a_low_file_limit_leaves_healthz_and_calls_working() {
    const SLOW: usize = 1100;
    let sandbox = with_testserver(&[]);
    let mut cmd = sandbox.command(&["serve", "--http", "127.0.0.1:0", "--header-timeout", "60"]);
    // SAFETY: only async-signal-safe setrlimit runs between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            let limit = libc::rlimit {
                rlim_cur: 1024,
                rlim_max: 1024,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let served = Served::spawn(cmd);
    let addr: SocketAddr = served
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .parse()
        .unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (slow, latency) = runtime.block_on(async {
        let mut slow = Vec::with_capacity(SLOW);
        for _ in 0..SLOW {
            if let Some(mut stream) = connect_from("127.0.0.2", addr).await {
                let _ = stream
                    .write_all(b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\n")
                    .await;
                slow.push(stream);
            }
        }
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
