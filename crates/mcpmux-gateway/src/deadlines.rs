//! The deadlines of one HTTP connection, kept by its `Clock`: how long a request's head may
//! take to arrive (from the accept for the first request, from its first byte after that), how
//! long a kept-alive connection may sit idle between requests, how long a request's body
//! may take once its head arrived (`Deadlined`, answered 408), and how long an answer may
//! wait on a peer that reads none of it (the socket full: a slow reader holds memory and a
//! connection). An answer being sent — a long call, an SSE stream — is otherwise under no
//! deadline: it is counted (`Counted`) until its body is done. The socket (`Watched`) tells
//! the clock when bytes come in and when writes stall. Knows nothing of MCP nor of the caps
//! on connections (`connections`).

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::{
    BoxError,
    body::Bytes,
    http::{HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
};
use http_body::{Body, Frame, SizeHint};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

/// The timeouts a connection's clock applies.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Timeouts {
    /// A request's head, whole.
    pub header: Duration,
    /// A kept-alive connection between requests, before the next request's first byte; and
    /// an answer the peer reads none of, its socket full.
    pub idle: Duration,
}

/// Which of a connection's deadlines it is under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Deadline {
    /// A request's head is awaited.
    Head,
    /// A kept-alive connection waits for its next request.
    Idle,
    /// An answer waits for the peer to read.
    Unread,
}

impl Deadline {
    /// The word `/metrics` counts it under.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Deadline::Head => "header",
            Deadline::Idle => "idle",
            Deadline::Unread => "unread",
        }
    }
}

/// Where one connection stands: requests in flight, or since when it waits for one.
pub(crate) struct Clock {
    timeouts: Timeouts,
    state: Mutex<State>,
}

struct State {
    /// Requests whose answer is not done (HTTP/1: one at a time).
    in_flight: usize,
    /// When the connection was accepted, or its last answer done.
    since: Instant,
    /// The first byte read since then.
    first_byte: Option<Instant>,
    /// Whether a request was answered on it (then idle waits are kept-alive ones).
    served: bool,
    /// Since when writes wait for the peer to read (none: the last write went through).
    stalled: Option<Instant>,
}

impl Clock {
    /// The clock of a connection accepted now.
    pub(crate) fn new(timeouts: Timeouts) -> Self {
        Clock {
            timeouts,
            state: Mutex::new(State {
                in_flight: 0,
                since: Instant::now(),
                first_byte: None,
                served: false,
                stalled: None,
            }),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        mcpmux::cli_support::sync::lock(&self.state)
    }

    /// When the connection is to be closed unless something happens first; none while a
    /// request is in flight and its answer goes out.
    pub(crate) fn deadline(&self) -> Option<(Instant, Deadline)> {
        let state = self.state();
        let stalled = state
            .stalled
            .map(|since| (since + self.timeouts.idle, Deadline::Unread));
        let waiting = if state.in_flight > 0 {
            None
        } else if !state.served {
            // The first head is timed from the accept: a client that sends nothing is as
            // slow as one that sends a byte a minute.
            Some((state.since + self.timeouts.header, Deadline::Head))
        } else {
            Some(match state.first_byte {
                Some(first) => (first + self.timeouts.header, Deadline::Head),
                None => (state.since + self.timeouts.idle, Deadline::Idle),
            })
        };
        match (stalled, waiting) {
            (Some(a), Some(b)) => Some(if a.0 <= b.0 { a } else { b }),
            (a, b) => a.or(b),
        }
    }

    /// A write waits for the peer to read.
    fn write_stalled(&self) {
        self.state().stalled.get_or_insert_with(Instant::now);
    }

    /// A write went through.
    fn wrote(&self) {
        self.state().stalled = None;
    }

    /// Bytes came in.
    fn read(&self) {
        let mut state = self.state();
        if state.in_flight == 0 && state.first_byte.is_none() {
            state.first_byte = Some(Instant::now());
        }
    }

    /// A request's head has arrived: no deadline of the clock's until its answer is done.
    pub(crate) fn enter(self: &Arc<Self>) -> InFlight {
        self.state().in_flight += 1;
        InFlight(self.clone())
    }
}

/// One request in flight on its connection, until dropped.
pub(crate) struct InFlight(Arc<Clock>);

impl Drop for InFlight {
    fn drop(&mut self) {
        let mut state = self.0.state();
        state.in_flight = state.in_flight.saturating_sub(1);
        if state.in_flight == 0 {
            state.since = Instant::now();
            state.first_byte = None;
            state.served = true;
        }
    }
}

/// A socket that tells its connection's clock when bytes come in.
pub(crate) struct Watched<T> {
    inner: T,
    clock: Arc<Clock>,
}

impl<T> Watched<T> {
    pub(crate) fn new(inner: T, clock: Arc<Clock>) -> Self {
        Watched { inner, clock }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Watched<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.clock.read();
        }
        polled
    }
}

impl<T> Watched<T> {
    /// Tells the clock whether a write went through or waits.
    fn wrote(&self, polled: &Poll<io::Result<usize>>) {
        match polled {
            Poll::Pending => self.clock.write_stalled(),
            Poll::Ready(Ok(n)) if *n > 0 => self.clock.wrote(),
            Poll::Ready(_) => {}
        }
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Watched<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.wrote(&polled);
        polled
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.wrote(&polled);
        polled
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

/// The body of a request did not arrive in time.
#[derive(Debug, thiserror::Error)]
#[error("the request body did not arrive within {0:?}")]
pub(crate) struct BodyTimedOut(Duration);

/// A request body that must arrive whole by a deadline, timed from its head; past it, reading
/// fails and `expired` is set (the answer becomes 408).
pub(crate) struct Deadlined<B> {
    inner: B,
    deadline: Instant,
    within: Duration,
    sleep: Option<Pin<Box<Sleep>>>,
    expired: Arc<AtomicBool>,
    done: bool,
}

impl<B> Deadlined<B> {
    /// `inner`, to arrive whole within `within` of now.
    pub(crate) fn new(inner: B, within: Duration, expired: Arc<AtomicBool>) -> Self {
        Deadlined {
            inner,
            deadline: Instant::now() + within,
            within,
            sleep: None,
            expired,
            done: false,
        }
    }
}

impl<B> Body for Deadlined<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        if this.expired.load(Ordering::Relaxed) {
            return Poll::Ready(None);
        }
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(None) => {
                this.done = true;
                Poll::Ready(None)
            }
            Poll::Ready(Some(frame)) => {
                if this.inner.is_end_stream() {
                    this.done = true;
                }
                Poll::Ready(Some(frame.map_err(Into::into)))
            }
            Poll::Pending if this.done => Poll::Pending,
            Poll::Pending => {
                let deadline = this.deadline;
                let sleep = this
                    .sleep
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
                if sleep.as_mut().poll(cx).is_pending() {
                    return Poll::Pending;
                }
                this.done = true;
                this.expired.store(true, Ordering::Relaxed);
                Poll::Ready(Some(Err(BodyTimedOut(this.within).into())))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// What a request whose body came too slowly is answered, whatever its handler said; the
/// connection is closed after it.
pub(crate) fn body_timed_out(within: Duration) -> Response {
    let mut response = (
        StatusCode::REQUEST_TIMEOUT,
        format!(
            "Request Timeout: the request body did not arrive within {} s\n",
            within.as_secs_f64()
        ),
    )
        .into_response();
    response
        .headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

/// An answer's body, its request counted in flight on the connection until it is done.
pub(crate) struct Counted<B> {
    inner: B,
    _in_flight: InFlight,
}

impl<B> Counted<B> {
    pub(crate) fn new(inner: B, in_flight: InFlight) -> Self {
        Counted {
            inner,
            _in_flight: in_flight,
        }
    }
}

impl<B: Body + Unpin> Body for Counted<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<B::Data>, B::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    fn clock() -> Arc<Clock> {
        Arc::new(Clock::new(Timeouts {
            header: Duration::from_secs(10),
            idle: Duration::from_secs(60),
        }))
    }

    /// Whether `deadline` falls `after` from now, give or take a second.
    #[track_caller]
    fn about(deadline: Option<(Instant, Deadline)>, after: u64) {
        let (deadline, _) = deadline.expect("a deadline");
        let wanted = Instant::now() + Duration::from_secs(after);
        assert!(
            deadline <= wanted && deadline + Duration::from_secs(1) > wanted,
            "{:?} from now, not {after} s",
            deadline - Instant::now()
        );
    }

    #[test]
    fn the_first_head_is_timed_from_the_accept_and_later_ones_from_their_first_byte() {
        let clock = clock();
        let first = clock.deadline();
        about(first, 10);
        clock.read();
        assert_eq!(
            clock.deadline(),
            first,
            "a byte does not push the first head's on"
        );
        let in_flight = clock.enter();
        assert_eq!(
            clock.deadline(),
            None,
            "an answer in flight has no deadline"
        );
        drop(in_flight);
        about(clock.deadline(), 60);
        clock.read();
        let next = clock.deadline();
        about(next, 10);
        clock.read();
        assert_eq!(
            clock.deadline(),
            next,
            "timed from the first byte, not the last"
        );
    }

    #[test]
    fn an_answer_the_peer_does_not_read_is_timed_as_an_idle_wait() {
        let clock = clock();
        let _in_flight = clock.enter();
        clock.write_stalled();
        let stalled = clock.deadline();
        about(stalled, 60);
        clock.write_stalled();
        assert_eq!(
            clock.deadline(),
            stalled,
            "timed from the first stalled write"
        );
        clock.wrote();
        assert_eq!(clock.deadline(), None, "a write that goes through lifts it");
    }

    #[tokio::test]
    async fn a_body_past_its_deadline_fails_and_says_so() {
        let (_sender, body) = futures::channel::mpsc::channel::<Result<Frame<Bytes>, io::Error>>(1);
        let body = http_body_util_stream(body);
        let expired = Arc::new(AtomicBool::new(false));
        let deadlined = Deadlined::new(body, Duration::from_millis(50), expired.clone());
        let read = axum::body::to_bytes(axum::body::Body::new(deadlined), 1024);
        let error = tokio::time::timeout(Duration::from_secs(5), read)
            .await
            .unwrap()
            .unwrap_err();
        assert!(expired.load(Ordering::Relaxed));
        assert!(format!("{error:?}").contains("BodyTimedOut"), "{error:?}");
    }

    /// A body of the frames `stream` yields.
    fn http_body_util_stream(
        stream: futures::channel::mpsc::Receiver<Result<Frame<Bytes>, io::Error>>,
    ) -> impl Body<Data = Bytes, Error = io::Error> + Unpin {
        struct Frames(futures::channel::mpsc::Receiver<Result<Frame<Bytes>, io::Error>>);
        impl Body for Frames {
            type Data = Bytes;
            type Error = io::Error;
            fn poll_frame(
                mut self: Pin<&mut Self>,
                cx: &mut Context<'_>,
            ) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
                use futures::Stream;
                Pin::new(&mut self.0).poll_next(cx)
            }
        }
        Frames(stream)
    }
}
