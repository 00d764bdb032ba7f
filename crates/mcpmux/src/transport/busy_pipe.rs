//! A child's stdout, read with a short busy poll after each tool call is written.
//!
//! A sequential call over a pipe spends most of its time in wake-ups, not in work: the reader
//! parks in epoll, the CPU goes idle, and the answer must wake both again (on this project's
//! 2-core VMs a blocking round trip to a Node echo server costs ~57 µs at the median, a polling
//! one ~6 µs; `mcpmux-bench peers` shows both floors). So when a call has been written, the
//! reader tries the pipe directly for up to a budget (`HubOptions::read_spin`, default
//! `defaults::READ_SPIN`, at most `defaults::MAX_READ_SPIN`) before it parks as usual. The
//! CPU this burns is bounded: one call buys at most one budget, whatever the server does; only
//! a lone call arms the reader (`lines/direct.rs`); and a hub's readers poll one at a time (a
//! reader that finds another polling parks at once), so polling never holds more than one of
//! the runtime's threads. A budget of zero turns it off. Past its first 10 µs a poll yields the
//! CPU between reads, so a server queued on this CPU is not kept waiting. A poll ends as soon
//! as work is queued on the runtime from outside it (the runtime's global queue): the thread it
//! holds is the one that work waits for. Without that, calls made from another thread (the
//! Python package's event loop) each found the one before answered while the reader polled,
//! so every call was "lone" and the calls went one at a time: with 32 in flight from Python,
//! ~6 reads and one `sched_yield` per call on the runtime's thread.
//!
//! The spin reads through a duplicate of the pipe's descriptor, which shares its non-blocking
//! mode; reading behind tokio's back is safe because tokio treats a stale readiness as a hint
//! and clears it when its own read finds nothing.

use std::fs::File;
use std::io::Read;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures::task::AtomicWaker;
use tokio::io::{AsyncRead, ReadBuf};
use tokio::process::ChildStdout;

use crate::defaults;

/// Arms the reader's next spin: given to the sender of tool calls.
#[derive(Default)]
pub(crate) struct Kick {
    armed: AtomicBool,
    reader: AtomicWaker,
}

impl Kick {
    /// A call was just written: the reader may poll for its answer once, for its budget.
    pub(crate) fn arm(&self) {
        self.armed.store(true, Ordering::Release);
        self.reader.wake();
    }

    /// Whether a call armed the reader since it last looked; disarms it.
    pub(crate) fn take(&self) -> bool {
        self.armed.swap(false, Ordering::AcqRel)
    }
}

/// How the readers of one hub poll: the budget of one call, and who polls now.
pub(crate) struct Polling {
    budget: Duration,
    busy: AtomicBool,
}

impl Polling {
    /// Readers polling up to `budget` for each lone call, one at a time.
    pub(crate) fn new(budget: Duration) -> Arc<Self> {
        Arc::new(Self {
            budget,
            busy: AtomicBool::new(false),
        })
    }

    /// Whether readers never poll (a zero budget): then nobody need arm them.
    pub(crate) fn is_off(&self) -> bool {
        self.budget.is_zero()
    }

    /// The turn to poll, unless polling is off or another reader has it.
    fn turn(&self) -> Option<Turn<'_>> {
        if self.is_off() {
            return None;
        }
        self.busy
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .ok()?;
        Some(Turn(&self.busy))
    }
}

/// A reader's turn to poll, given back when dropped.
struct Turn<'a>(&'a AtomicBool);

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

/// A child's stdout that polls for a budget when a [`Kick`] arms it.
pub(crate) struct BusyPipe {
    pipe: ChildStdout,
    /// The same pipe, for reads tokio does not see; `None` on Windows, where tokio's pipe is
    /// an overlapped named pipe that a plain read would block on: no polling there.
    raw: Option<File>,
    kick: Arc<Kick>,
    polling: Arc<Polling>,
}

impl BusyPipe {
    /// `pipe`, polled as `polling` allows after each kick; its kick for the sender of calls.
    pub(crate) fn new(
        pipe: ChildStdout,
        polling: Arc<Polling>,
    ) -> std::io::Result<(Self, Arc<Kick>)> {
        #[cfg(unix)]
        let raw = {
            use std::os::fd::AsFd;
            Some(File::from(pipe.as_fd().try_clone_to_owned()?))
        };
        #[cfg(not(unix))]
        let raw = None;
        let kick = Arc::new(Kick::default());
        let pipe = Self {
            pipe,
            raw,
            kick: kick.clone(),
            polling,
        };
        Ok((pipe, kick))
    }

    /// Polls the pipe until it gives bytes or the budget is spent.
    fn spin(&mut self, buf: &mut ReadBuf<'_>) -> Option<std::io::Result<()>> {
        let raw = self.raw.as_mut()?;
        let polling = &self.polling;
        let _turn = polling.turn()?;
        let runtime = tokio::runtime::Handle::try_current().ok();
        let queued = || {
            runtime
                .as_ref()
                .is_some_and(|runtime| runtime.metrics().global_queue_depth() > 0)
        };
        let start = Instant::now();
        loop {
            match raw.read(buf.initialize_unfilled()) {
                Ok(n) => {
                    buf.advance(n);
                    return Some(Ok(()));
                }
                Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(error) => return Some(Err(error)),
            }
            let spent = start.elapsed();
            if spent >= polling.budget || queued() {
                return None;
            }
            if spent >= defaults::READ_SPIN_YIELD_AFTER {
                // The server may be queued behind us on this CPU: the kernel puts a woken pipe
                // reader on its writer's CPU, expecting the writer to sleep. Let it run.
                std::thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
        }
    }
}

impl AsyncRead for BusyPipe {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        this.kick.reader.register(cx.waker());
        if this.kick.take()
            && buf.remaining() > 0
            && let Some(read) = this.spin(buf)
        {
            return Poll::Ready(read);
        }
        Pin::new(&mut this.pipe).poll_read(cx, buf)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use std::process::Stdio;

    use futures::task::noop_waker_ref;
    use tokio::io::AsyncWriteExt;
    use tokio::process::{Child, Command};

    use super::*;

    /// `program` with piped stdin and stdout, its stdout read through a busy pipe.
    fn child(program: &str, polling: &Arc<Polling>) -> (Child, BusyPipe, Arc<Kick>) {
        let mut child = Command::new(program)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let (pipe, kick) = BusyPipe::new(child.stdout.take().unwrap(), polling.clone()).unwrap();
        (child, pipe, kick)
    }

    /// One poll of a read, with a waker nobody will use: what the pipe gives without waiting.
    fn poll_once(pipe: &mut BusyPipe, bytes: &mut [u8]) -> Poll<std::io::Result<usize>> {
        let mut buf = ReadBuf::new(bytes);
        let mut cx = Context::from_waker(noop_waker_ref());
        Pin::new(pipe)
            .poll_read(&mut cx, &mut buf)
            .map_ok(|()| buf.filled().len())
    }

    #[tokio::test]
    async fn an_armed_read_takes_the_answer_the_moment_the_server_writes_it() {
        // A budget far beyond `cat`'s echo: the one poll finds it without parking.
        let polling = Polling::new(Duration::from_secs(10));
        let (mut child, mut pipe, kick) = child("cat", &polling);
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(b"answer\n").await.unwrap();
        kick.arm();
        let mut bytes = [0; 64];
        let Poll::Ready(read) = poll_once(&mut pipe, &mut bytes) else {
            panic!("an armed read parked before its budget was spent");
        };
        assert_eq!(&bytes[..read.unwrap()], b"answer\n");
        assert!(!kick.take(), "the read used its arming");
    }

    #[tokio::test]
    async fn an_armed_read_of_a_silent_server_parks_once_its_budget_is_spent() {
        let budget = Duration::from_millis(20);
        let (_child, mut pipe, kick) = child("cat", &Polling::new(budget));
        kick.arm();
        let start = Instant::now();
        assert!(poll_once(&mut pipe, &mut [0; 64]).is_pending());
        assert!(
            start.elapsed() >= budget,
            "gave up after {:?}",
            start.elapsed()
        );
        // Disarmed: the next poll parks at once instead of spending another budget.
        assert!(!kick.take());
        assert!(poll_once(&mut pipe, &mut [0; 64]).is_pending());
    }

    #[tokio::test]
    async fn an_armed_read_stops_polling_when_work_is_queued_from_outside_the_runtime() {
        let budget = Duration::from_secs(20);
        let (_child, mut pipe, kick) = child("cat", &Polling::new(budget));
        let runtime = tokio::runtime::Handle::current();
        // Spawned from another thread, as the Python package's event loop does: the task waits
        // in the runtime's global queue for the thread the poll holds.
        std::thread::spawn(move || drop(runtime.spawn(async {})))
            .join()
            .unwrap();
        kick.arm();
        let start = Instant::now();
        assert!(poll_once(&mut pipe, &mut [0; 64]).is_pending());
        assert!(
            start.elapsed() < budget / 2,
            "polled for {:?} with a task waiting",
            start.elapsed()
        );
    }

    #[tokio::test]
    async fn an_armed_read_of_a_server_that_exits_sees_the_end_at_once() {
        let (mut child, mut pipe, kick) = child("true", &Polling::new(Duration::from_secs(10)));
        child.wait().await.unwrap();
        kick.arm();
        let start = Instant::now();
        let Poll::Ready(read) = poll_once(&mut pipe, &mut [0; 64]) else {
            panic!("the end of the output was not seen");
        };
        assert_eq!(read.unwrap(), 0);
        assert!(start.elapsed() < Duration::from_secs(10));
    }

    #[tokio::test]
    async fn with_no_budget_an_armed_read_never_polls() {
        let (mut child, mut pipe, kick) = child("cat", &Polling::new(Duration::ZERO));
        let mut stdin = child.stdin.take().unwrap();
        kick.arm();
        assert!(poll_once(&mut pipe, &mut [0; 64]).is_pending());
        // The reactor's way still reads what comes.
        stdin.write_all(b"late\n").await.unwrap();
        let mut bytes = [0; 64];
        let read = tokio::time::timeout(Duration::from_secs(10), async {
            use tokio::io::AsyncReadExt;
            pipe.read(&mut bytes).await
        })
        .await
        .expect("the line")
        .unwrap();
        assert_eq!(&bytes[..read], b"late\n");
    }

    #[tokio::test]
    async fn a_reader_that_finds_another_polling_parks_at_once() {
        // A budget no test waits out: a reader that polled would hold the test for minutes.
        let polling = Polling::new(Duration::from_secs(600));
        let (_first, _pipe, _kick) = child("cat", &polling);
        let (_second, mut second, kick) = child("cat", &polling);
        let held = polling.turn().expect("nobody polls yet");
        kick.arm();
        let start = Instant::now();
        assert!(poll_once(&mut second, &mut [0; 64]).is_pending());
        assert!(start.elapsed() < Duration::from_secs(60));
        // The turn given back, the next armed read may poll again.
        drop(held);
        assert!(polling.turn().is_some());
    }
}
