//! The wire log's taps, one per kind of transport, each handing every message that passes to
//! the hub's [`WireLog`]: `Tap` around the pipes of a line transport (a child's stdio, an
//! in-process server) sees the exact bytes of each line written and read, a direct tool call's
//! included; `Tapped` around an rmcp transport (streamable HTTP, legacy SSE, WebSocket) sees
//! each message as rmcp sends and receives it. Without a wire log both pass everything through
//! untouched.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use rmcp::RoleClient;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::telemetry::wire::{Direction, WireLog};

/// The most of one line a tap holds while waiting for its end: a longer line is logged cut
/// (as text, not JSON) at this size. A wire log is for reading messages, not storing results.
const MAX_LINE: usize = 4 << 20;

/// Where one server's messages are logged.
#[derive(Clone)]
pub(crate) struct WireTarget {
    log: WireLog,
    server: Arc<str>,
    /// Held across a line's write and its record, and taken to record what was read: the
    /// server can only answer a request once it is written, so its answer is never logged
    /// before the request, whichever thread reads it.
    order: Arc<Mutex<()>>,
}

impl WireTarget {
    /// `server`'s messages go to `log`, if there is one.
    pub(crate) fn of(log: Option<&WireLog>, server: &str) -> Option<WireTarget> {
        log.map(|log| WireTarget {
            log: log.clone(),
            server: server.into(),
            order: Arc::new(Mutex::new(())),
        })
    }

    /// Logs one message that went `direction`, passing by the taps.
    pub(crate) fn record(&self, direction: Direction, bytes: &[u8]) {
        self.log.record(&self.server, direction, bytes);
    }
}

impl WireLog {
    /// A client's line-delimited JSON-RPC pipes (`mcpmux serve`'s stdin and stdout), each
    /// line logged to `log` (when there is one) under `peer`: what is read as received, what
    /// is written as sent. Without a log they pass everything through untouched.
    pub fn tap_lines<R, W>(
        log: Option<&WireLog>,
        peer: &str,
        reader: R,
        writer: W,
    ) -> (
        impl AsyncRead + Send + Unpin + 'static,
        impl AsyncWrite + Send + Unpin + 'static,
    )
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        let target = WireTarget::of(log, peer);
        (
            Tap::new(reader, target.clone(), Direction::Receive),
            Tap::new(writer, target, Direction::Send),
        )
    }
}

/// A byte stream whose lines are logged as they pass, `direction` of the server.
pub(crate) struct Tap<T> {
    inner: T,
    target: Option<WireTarget>,
    direction: Direction,
    line: Vec<u8>,
}

impl<T> Tap<T> {
    /// `inner`, its lines logged to `target` as going `direction`.
    pub(crate) fn new(inner: T, target: Option<WireTarget>, direction: Direction) -> Self {
        Tap {
            inner,
            target,
            direction,
            line: Vec::new(),
        }
    }

    /// Takes `bytes` that passed: each complete line is logged.
    fn passed(&mut self, mut bytes: &[u8]) {
        let Some(target) = &self.target else {
            return;
        };
        while let Some(end) = memchr::memchr(b'\n', bytes) {
            if self.line.is_empty() {
                target
                    .log
                    .record(&target.server, self.direction, &bytes[..end]);
            } else {
                self.line.extend_from_slice(&bytes[..end]);
                target
                    .log
                    .record(&target.server, self.direction, &self.line);
                self.line.clear();
            }
            bytes = &bytes[end + 1..];
        }
        if self.line.len() + bytes.len() > MAX_LINE {
            let room = MAX_LINE.saturating_sub(self.line.len());
            self.line.extend_from_slice(&bytes[..room.min(bytes.len())]);
            target
                .log
                .record(&target.server, self.direction, &self.line);
            self.line.clear();
        } else {
            self.line.extend_from_slice(bytes);
        }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Tap<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.inner).poll_read(cx, buf);
        if let Some(target) = &this.target
            && matches!(polled, Poll::Ready(Ok(())))
        {
            let order = target.order.clone();
            let _order = crate::sync::lock(&order);
            let read = buf.filled()[before..].to_vec();
            this.passed(&read);
        }
        polled
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Tap<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        let Some(order) = this.target.as_ref().map(|target| target.order.clone()) else {
            return Pin::new(&mut this.inner).poll_write(cx, buf);
        };
        // Written and recorded under the one lock (see `WireTarget::order`).
        let _order = crate::sync::lock(&order);
        let polled = Pin::new(&mut this.inner).poll_write(cx, buf);
        if let Poll::Ready(Ok(written)) = polled {
            this.passed(&buf[..written]);
        }
        polled
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        if this.target.is_none() {
            return Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        }
        // Logged as written: the first non-empty buffer alone, as the default does.
        let buf = bufs
            .iter()
            .find(|b| !b.is_empty())
            .map_or(&[][..], |b| &**b);
        Pin::new(this).poll_write(cx, buf)
    }

    fn is_write_vectored(&self) -> bool {
        self.target.is_none() && self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

/// An rmcp transport whose messages are logged as they are sent and received.
pub(crate) struct Tapped<T> {
    inner: T,
    target: Option<WireTarget>,
}

impl<T> Tapped<T> {
    /// `inner`, its messages logged to `target`.
    pub(crate) fn new(inner: T, target: Option<WireTarget>) -> Self {
        Tapped { inner, target }
    }
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for Tapped<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        if let Some(target) = &self.target
            && let Ok(bytes) = serde_json::to_vec(&item)
        {
            target.log.record(&target.server, Direction::Send, &bytes);
        }
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        let message = self.inner.receive().await;
        if let (Some(target), Some(message)) = (&self.target, &message)
            && let Ok(bytes) = serde_json::to_vec(message)
        {
            target
                .log
                .record(&target.server, Direction::Receive, &bytes);
        }
        message
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    #[tokio::test]
    async fn lines_split_across_reads_and_writes_are_logged_whole_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("wire.jsonl");
        let log = WireLog::open(&path, 1 << 20).unwrap();
        let (near, far) = tokio::io::duplex(64);
        let (far_read, mut far_write) = tokio::io::split(far);
        let (near_read, near_write) = tokio::io::split(near);
        let target = WireTarget::of(Some(&log), "s");
        let mut writer = Tap::new(near_write, target.clone(), Direction::Send);
        let mut reader = Tap::new(near_read, target, Direction::Receive);
        writer.write_all(b"{\"id\":1}\n{\"id\"").await.unwrap();
        writer.write_all(b":2}\n").await.unwrap();
        far_write.write_all(b"{\"id\":").await.unwrap();
        let mut buf = [0u8; 64];
        let n = reader.read(&mut buf).await.unwrap();
        assert_eq!(n, 6);
        far_write.write_all(b"3}\n").await.unwrap();
        let _ = reader.read(&mut buf).await.unwrap();
        drop(far_read);
        let logged: Vec<serde_json::Value> = std::fs::read_to_string(&path)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let seen: Vec<(String, i64)> = logged
            .iter()
            .map(|l| {
                (
                    l["dir"].as_str().unwrap().to_string(),
                    l["message"]["id"].as_i64().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            seen,
            vec![("send".into(), 1), ("send".into(), 2), ("recv".into(), 3)]
        );
    }
}
