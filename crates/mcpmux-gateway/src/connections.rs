//! The connection layer, under everything HTTP and before any request reaches the door (so no
//! token is needed to be bounded): the accept loop (TCP_NODELAY set; an accept error such as
//! EMFILE backed off, never spun on), the caps on connections open overall and per peer
//! address (past either, a connection gets a best-effort 503 and is closed at once), and each
//! connection served by hyper's HTTP/1 under the deadlines `deadlines` keeps (request head,
//! kept-alive idle, request body, an answer nobody reads) and a bound on the head's size
//! (431). Also the open-file
//! limit: raised toward the hard one for `serve`, and the cap kept below it with room left for
//! the upstream servers' pipes. A graceful shutdown stops accepting and lets each connection
//! finish the answer it is sending; `kill` ends what is left.

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::{Future, poll_fn};
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::pin::{Pin, pin};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::Poll;
use std::time::Duration;

use axum::http::{HeaderMap, header};
use axum::{
    Router,
    body::Body,
    extract::{ConnectInfo, Request},
    response::Response,
};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower_service::Service;

use crate::deadlines::{self, Clock, Counted, Deadline, Deadlined, Timeouts, Watched};
use crate::handler::Gateway;

/// How long a request's head (request line and headers) may take to arrive: from the accept
/// for a connection's first request, from its first byte for a later one. Go's
/// `ReadHeaderTimeout` is commonly set so; a head is a few KiB, which any link sends in well
/// under a second.
pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a request's body may take to arrive whole once its head has: a 4 MiB body (the
/// largest taken) at 140 KiB/s. Apache's `mod_reqtimeout` gives a body 20 s at first.
pub const DEFAULT_BODY_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a kept-alive connection may wait for its next request, and an answer for a peer
/// that reads none of it. nginx keeps a connection 75 s, HAProxy's `timeout http-keep-alive`
/// defaults to its request timeout; a minute lets a client's pool reuse a connection between
/// calls a human makes.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// Connections open at once, at most (also kept below what the open-file limit allows). Each
/// SSE stream holds one.
pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;
/// Connections one peer address (an IPv6 peer: its /64) may hold at once: a quarter of the
/// overall cap, so that one peer cannot take every connection, and room for a NAT's or a small
/// proxy's many clients. Behind a proxy every connection comes from it: raise it, or 0 (off).
pub const DEFAULT_MAX_CONNECTIONS_PER_PEER: usize = 256;
/// The largest request head (request line and headers) read; past it: 431. Room for a 16 KiB
/// OAuth token (the most the door reads) and the other headers.
pub const DEFAULT_MAX_HEADER_BYTES: usize = 32 * 1024;
/// File descriptors kept free for everything but client connections (upstream servers'
/// pipes, HTTP upstreams, config and log files): a quarter of the limit, at least this many
/// (or half of a smaller limit).
const FD_RESERVE: usize = 256;
/// The open-file limit `serve` raises its soft limit to, at most: far above any cap here.
#[cfg(unix)]
const FD_TARGET: u64 = 65_536;
/// First and last pause after an accept error other than a connection's own (as Go's
/// `net/http` does: 5 ms doubling to 1 s): the listener stays readable while the process is
/// out of descriptors, so accepting again at once would spin.
const ACCEPT_BACKOFF: (Duration, Duration) = (Duration::from_millis(5), Duration::from_secs(1));
/// What a connection past a cap is sent before it is closed.
const REFUSED: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\nconnection: close\r\n\
content-type: text/plain\r\ncontent-length: 21\r\n\r\ntoo many connections\n";

/// The bounds of the connections the gateway serves: applied before any request reaches the
/// door.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ConnectionLimits {
    /// How long a request's head may take to arrive (10 s by default).
    pub header_timeout: Duration,
    /// How long a request's body may take once its head arrived (then 408;
    /// 30 s by default).
    pub body_timeout: Duration,
    /// How long a kept-alive connection may wait for its next request, and an answer for a
    /// peer that reads none of it (60 s by default).
    pub idle_timeout: Duration,
    /// Connections open at once (also kept below the open-file limit).
    pub max_connections: usize,
    /// Connections one peer address (IPv6: its /64) may hold at once; 0: no such cap.
    pub max_connections_per_peer: usize,
    /// The largest request head in bytes (then 431).
    pub max_header_bytes: usize,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        ConnectionLimits {
            header_timeout: DEFAULT_HEADER_TIMEOUT,
            body_timeout: DEFAULT_BODY_TIMEOUT,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_connections_per_peer: DEFAULT_MAX_CONNECTIONS_PER_PEER,
            max_header_bytes: DEFAULT_MAX_HEADER_BYTES,
        }
    }
}

/// Raises the soft open-file limit toward the hard one (at most 65 536) and returns the soft
/// limit then in force; none where it cannot be read. For a process that serves: each client
/// connection, and each upstream server's pipes, take descriptors.
// `rlim_t` is u64 where this is built, but not on every Unix.
#[allow(clippy::unnecessary_cast)]
pub fn raise_open_file_limit() -> Option<u64> {
    #[cfg(unix)]
    {
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes the struct it is given, which lives for the call.
        if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
            return None;
        }
        let target = limit.rlim_max.min(FD_TARGET as libc::rlim_t);
        if target > limit.rlim_cur {
            let raised = libc::rlimit {
                rlim_cur: target,
                rlim_max: limit.rlim_max,
            };
            // SAFETY: setrlimit reads the struct it is given, which lives for the call.
            if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
                limit.rlim_cur = target;
            }
        }
        Some(limit.rlim_cur as u64)
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// The soft open-file limit, if known and finite.
fn open_file_limit() -> Option<usize> {
    #[cfg(unix)]
    {
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes the struct it is given, which lives for the call.
        if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0
            || limit.rlim_cur == libc::RLIM_INFINITY
        {
            return None;
        }
        usize::try_from(limit.rlim_cur).ok()
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// The connections the open-file limit `fds` leaves for clients.
fn connections_allowed(fds: usize) -> usize {
    let reserve = (fds / 4).max(FD_RESERVE.min(fds / 2));
    fds.saturating_sub(reserve).max(1)
}

/// The overall cap `wanted` once the open-file limit is heeded (logged when lowered).
pub(crate) fn effective_cap(wanted: usize) -> usize {
    let Some(fds) = open_file_limit() else {
        return wanted.max(1);
    };
    let allowed = connections_allowed(fds);
    if wanted > allowed {
        tracing::warn!(
            wanted,
            allowed,
            open_file_limit = fds,
            "connection cap lowered to stay under the open-file limit (raise `ulimit -n`)"
        );
        return allowed;
    }
    wanted.max(1)
}

/// Who holds the connections open, counted against the caps.
pub(crate) struct Admission {
    max: usize,
    per_peer: usize,
    open: Mutex<Open>,
}

#[derive(Default)]
struct Open {
    total: usize,
    peers: HashMap<IpAddr, usize>,
}

/// Why a connection was not taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    /// The overall cap is reached.
    Full,
    /// The peer's cap is reached.
    Peer,
}

/// One connection counted against the caps, until dropped.
pub(crate) struct Admitted {
    admission: Arc<Admission>,
    peer: IpAddr,
}

/// The address a peer's connections are counted under: an IPv4-mapped address as IPv4, an
/// IPv6 one by its /64 (one host is commonly given a whole /64).
fn peer_key(ip: IpAddr) -> IpAddr {
    match ip.to_canonical() {
        IpAddr::V6(v6) => {
            let prefix = u128::from(v6) & !((1u128 << 64) - 1);
            IpAddr::V6(Ipv6Addr::from(prefix))
        }
        v4 => v4,
    }
}

impl Admission {
    /// Caps of `max` connections overall and `per_peer` per peer (0: none).
    pub(crate) fn new(max: usize, per_peer: usize) -> Self {
        Admission {
            max,
            per_peer,
            open: Mutex::new(Open::default()),
        }
    }

    fn open(&self) -> MutexGuard<'_, Open> {
        mcpmux::cli_support::sync::lock(&self.open)
    }

    /// Counts a connection from `ip`, unless a cap is reached.
    pub(crate) fn admit(self: &Arc<Self>, ip: IpAddr) -> Result<Admitted, Refused> {
        let peer = peer_key(ip);
        let mut open = self.open();
        if open.total >= self.max {
            return Err(Refused::Full);
        }
        let held = open.peers.get(&peer).copied().unwrap_or(0);
        if self.per_peer > 0 && held >= self.per_peer {
            return Err(Refused::Peer);
        }
        open.total += 1;
        open.peers.insert(peer, held + 1);
        Ok(Admitted {
            admission: self.clone(),
            peer,
        })
    }

    /// Connections open now.
    #[cfg(test)]
    fn open_now(&self) -> usize {
        self.open().total
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        let mut open = self.admission.open();
        open.total = open.total.saturating_sub(1);
        if let Some(held) = open.peers.get_mut(&self.peer) {
            *held -= 1;
            if *held == 0 {
                open.peers.remove(&self.peer);
            }
        }
    }
}

/// What every connection shares.
pub(crate) struct Serving {
    pub app: Router,
    /// Whose metrics count connections.
    pub gateway: Gateway,
    pub limits: ConnectionLimits,
    pub admission: Arc<Admission>,
    /// Cancelled: stop accepting, and end each connection once its answer is sent.
    pub stopping: CancellationToken,
    /// Cancelled: close every connection now.
    pub killed: CancellationToken,
    pub tracker: TaskTracker,
}

/// Whether an accept error is the connection's own (the next accept is unaffected).
fn is_connection_error(error: &std::io::Error) -> bool {
    use std::io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    matches!(
        error.kind(),
        ConnectionRefused | ConnectionAborted | ConnectionReset
    )
}

/// Accepts connections until `stopping`, each served in a task of `tracker`'s.
pub(crate) async fn accept(listener: TcpListener, serving: Arc<Serving>) {
    let mut backoff = ACCEPT_BACKOFF.0;
    loop {
        let accepted = tokio::select! {
            () = serving.stopping.cancelled() => return,
            accepted = listener.accept() => accepted,
        };
        let (tcp, peer) = match accepted {
            Ok(pair) => {
                backoff = ACCEPT_BACKOFF.0;
                pair
            }
            Err(error) if is_connection_error(&error) => continue,
            Err(error) => {
                tracing::warn!(%error, ?backoff, "cannot accept a connection; pausing");
                tokio::select! {
                    () = serving.stopping.cancelled() => return,
                    () = tokio::time::sleep(backoff) => {}
                }
                backoff = (backoff * 2).min(ACCEPT_BACKOFF.1);
                continue;
            }
        };
        let admitted = match serving.admission.admit(peer.ip()) {
            Ok(admitted) => admitted,
            Err(refused) => {
                tracing::debug!(?refused, "connection refused: too many open");
                serving.gateway.metrics().connection_refused(match refused {
                    Refused::Full => "total",
                    Refused::Peer => "peer",
                });
                // Best effort: a peer that already sent its request may see a reset instead.
                let _ = tcp.try_write(REFUSED);
                continue;
            }
        };
        serving.gateway.metrics().connection(true);
        // Without TCP_NODELAY an answer written in pieces (headers, then SSE chunks) waits
        // for the client's delayed ACK: ~40 ms a call on loopback.
        if let Err(error) = tcp.set_nodelay(true) {
            tracing::debug!(%error, "TCP_NODELAY not set");
        }
        serving
            .tracker
            .spawn(serve_connection(tcp, peer, admitted, serving.clone()));
    }
}

/// How a connection ended.
enum Ended {
    /// hyper is done with it (closed by either side, or an HTTP error).
    Done(Result<(), hyper::Error>),
    /// A deadline of its clock passed.
    TimedOut(Deadline),
    /// The server is closing what is left.
    Killed,
}

/// Serves one connection until it ends, under its clock's deadlines.
async fn serve_connection(
    tcp: TcpStream,
    peer: SocketAddr,
    admitted: Admitted,
    serving: Arc<Serving>,
) {
    let limits = &serving.limits;
    let clock = Arc::new(Clock::new(Timeouts {
        header: limits.header_timeout,
        idle: limits.idle_timeout,
    }));
    let io = TokioIo::new(Watched::new(tcp, clock.clone()));
    let service = Requests {
        app: serving.app.clone(),
        gateway: serving.gateway.clone(),
        peer,
        clock: clock.clone(),
        body_timeout: limits.body_timeout,
    };
    let mut http = hyper::server::conn::http1::Builder::new();
    // The clock times heads: hyper's own timer would count a kept-alive wait as a head's.
    http.header_read_timeout(None)
        .max_header_size(limits.max_header_bytes);
    let mut conn = pin!(http.serve_connection(io, service));
    let mut stopping = pin!(serving.stopping.cancelled());
    let mut killed = pin!(serving.killed.cancelled());
    let mut shutting = false;
    let mut sleep = pin!(tokio::time::sleep(Duration::ZERO));
    let ended = poll_fn(|cx| {
        if killed.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Ended::Killed);
        }
        if !shutting && stopping.as_mut().poll(cx).is_ready() {
            shutting = true;
            conn.as_mut().graceful_shutdown();
        }
        if let Poll::Ready(done) = conn.as_mut().poll(cx) {
            return Poll::Ready(Ended::Done(done));
        }
        // Everything that moves the deadline happens inside the poll of `conn` above.
        let Some((deadline, which)) = clock.deadline() else {
            return Poll::Pending;
        };
        if sleep.deadline() != deadline {
            sleep.as_mut().reset(deadline);
        }
        sleep.as_mut().poll(cx).map(|()| Ended::TimedOut(which))
    })
    .await;
    match ended {
        Ended::Done(Err(error)) => tracing::debug!(%error, "connection ended"),
        Ended::TimedOut(which) => {
            tracing::debug!(
                deadline = which.label(),
                "connection closed: a deadline passed"
            );
            serving.gateway.metrics().connection_cut(which.label());
        }
        Ended::Done(Ok(())) | Ended::Killed => {}
    }
    drop(admitted);
    serving.gateway.metrics().connection(false);
}

/// The requests of one connection, handed to the router with the peer's address, each body
/// under its deadline and each answer counted in flight until done.
#[derive(Clone)]
struct Requests {
    app: Router,
    /// Whose metrics count a body too slow.
    gateway: Gateway,
    peer: SocketAddr,
    clock: Arc<Clock>,
    body_timeout: Duration,
}

type Answer = Pin<Box<dyn Future<Output = Result<Response<Counted<Body>>, Infallible>> + Send>>;

impl hyper::service::Service<Request<Incoming>> for Requests {
    type Response = Response<Counted<Body>>;
    type Error = Infallible;
    type Future = Answer;

    fn call(&self, request: Request<Incoming>) -> Answer {
        let in_flight = self.clock.enter();
        let expired = Arc::new(AtomicBool::new(false));
        let within = self.body_timeout;
        let mut request =
            request.map(|body| Body::new(Deadlined::new(body, within, expired.clone())));
        request.extensions_mut().insert(ConnectInfo(self.peer));
        let mut app = self.app.clone();
        let gateway = self.gateway.clone();
        Box::pin(async move {
            // A router is always ready (axum's `Router::poll_ready` returns `Ready` at once).
            let response = match app.call(request).await {
                Ok(response) => response,
                Err(never) => match never {},
            };
            let mut response = if expired.load(std::sync::atomic::Ordering::Relaxed) {
                gateway.metrics().connection_cut("body");
                deadlines::body_timed_out(within)
            } else {
                response
            };
            fit_headers_of_a_stream(response.headers_mut());
            Ok(response.map(|body| Counted::new(body, in_flight)))
        })
    }
}

/// Fits an event stream's header map to what it holds. hyper keeps a connection's last
/// answer's map (emptied) to read the next request into, so a connection held by a stream (a
/// `GET` stream, open for hours) holds it that long: one built a header at a time has room for
/// six (about 0.6 KiB), and a stream's has three or four.
fn fit_headers_of_a_stream(headers: &mut HeaderMap) {
    let streams = headers
        .get(header::CONTENT_TYPE)
        .is_some_and(|kind| kind.as_bytes().starts_with(b"text/event-stream"))
        && !headers.contains_key(header::CONTENT_LENGTH);
    if !streams || headers.capacity() <= headers.keys_len() {
        return;
    }
    let mut fitted = HeaderMap::with_capacity(headers.keys_len());
    fitted.extend(std::mem::take(headers));
    *headers = fitted;
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn a_peer_past_its_cap_is_refused_while_others_come_in_up_to_the_overall_cap() {
        let admission = Arc::new(Admission::new(3, 2));
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        let first = admission.admit(a).unwrap();
        let _second = admission.admit(a).unwrap();
        assert_eq!(admission.admit(a).err(), Some(Refused::Peer));
        let _third = admission.admit(b).unwrap();
        assert_eq!(admission.admit(b).err(), Some(Refused::Full));
        drop(first);
        assert_eq!(admission.open_now(), 2);
        let _again = admission.admit(a).unwrap();
    }

    #[test]
    fn ipv6_peers_are_counted_by_their_64_and_mapped_ipv4_as_ipv4() {
        let admission = Arc::new(Admission::new(10, 1));
        let _one = admission.admit("2001:db8:1:2::1".parse().unwrap()).unwrap();
        assert_eq!(
            admission
                .admit("2001:db8:1:2:ffff::9".parse().unwrap())
                .err(),
            Some(Refused::Peer)
        );
        let _other = admission.admit("2001:db8:1:3::1".parse().unwrap()).unwrap();
        let _v4 = admission.admit("10.0.0.1".parse().unwrap()).unwrap();
        assert_eq!(
            admission.admit("::ffff:10.0.0.1".parse().unwrap()).err(),
            Some(Refused::Peer)
        );
    }

    #[test]
    fn no_per_peer_cap_when_it_is_zero() {
        let admission = Arc::new(Admission::new(3, 0));
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let held: Vec<_> = (0..3).map(|_| admission.admit(a).unwrap()).collect();
        assert_eq!(admission.admit(a).err(), Some(Refused::Full));
        drop(held);
        assert_eq!(admission.open_now(), 0);
    }

    fn answer_headers(kind: &'static str, length: bool) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        headers.append("x-two", HeaderValue::from_static("a"));
        headers.append("x-two", HeaderValue::from_static("b"));
        if length {
            headers.insert(header::CONTENT_LENGTH, HeaderValue::from_static("2"));
        }
        headers
    }

    #[test]
    fn a_stream_s_headers_are_fitted_and_kept_while_other_answers_are_left_alone() {
        let mut stream = answer_headers("text/event-stream", false);
        let (before, capacity) = (stream.clone(), stream.capacity());
        fit_headers_of_a_stream(&mut stream);
        assert_eq!(stream, before);
        assert_eq!(stream.get_all("x-two").iter().count(), 2);
        assert_eq!((capacity, stream.capacity()), (6, 3));

        for (kind, length) in [("application/json", false), ("text/event-stream", true)] {
            let mut other = answer_headers(kind, length);
            let capacity = other.capacity();
            fit_headers_of_a_stream(&mut other);
            assert_eq!(other.capacity(), capacity, "{kind}, length {length}");
        }
    }

    #[test]
    fn the_open_file_limit_leaves_room_for_upstream_pipes() {
        assert_eq!(connections_allowed(1024), 768);
        assert_eq!(connections_allowed(65_536), 49_152);
        assert_eq!(connections_allowed(256), 128);
        assert_eq!(connections_allowed(1), 1);
    }
}
