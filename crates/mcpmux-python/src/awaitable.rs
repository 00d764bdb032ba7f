//! Rust futures as asyncio futures, completed on the event loop's own thread.
//!
//! `pyo3-async-runtimes` completes each awaitable from a blocking thread that takes the GIL and
//! calls `call_soon_threadsafe`: with many calls in flight those threads and the loop's thread
//! fight over the GIL. Here a finished future only pushes its outcome onto a queue and, when
//! the queue was empty, writes one byte to a socket the loop watches (`add_reader`); the loop
//! then drains the queue in one callback, turning each outcome into a Python value and setting
//! its future — no thread but the loop's ever takes the GIL for a completion. A Python future
//! cancelled by its awaiter aborts the Rust future (dropping a hub call sends the server its
//! cancellation): the completer itself is each future's done-callback, taken off again just
//! before the result is set, so a completed call schedules no callback of ours (one scheduled
//! per call cost more than the rest of the completion: 32 calls in flight, 9.8 → 6.8 µs per
//! future in a loop-only model). Knows nothing of hubs: it runs any future whose outcome
//! becomes a Python value on the loop's thread.
//!
//! The wake-up differs by platform: on Unix a socket pair watched with `add_reader`; on
//! Windows, whose default event loop (the proactor) has no `add_reader`, a pair made by
//! Python's `socket.socketpair` whose read end an asyncio task awaits (`mcpmux._wake`).

use std::collections::HashMap;
use std::io::Write;
#[cfg(unix)]
use std::io::{ErrorKind, Read};
#[cfg(unix)]
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use mcpmux::cli_support::sync::lock;

use pyo3::IntoPyObjectExt;
use pyo3::exceptions::PyRuntimeError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use tokio::task::AbortHandle;

use crate::errors::Failure;
use crate::runtime;

/// What a finished future leaves: made into a Python value on the loop's thread.
pub(crate) type Outcome = Box<dyn for<'py> FnOnce(Python<'py>) -> PyResult<Py<PyAny>> + Send>;

/// The end of the wake-up pair a finished future writes to.
#[cfg(unix)]
type WakeEnd = std::os::unix::net::UnixStream;
#[cfg(windows)]
type WakeEnd = std::net::TcpStream;

/// The queue of finished futures and the socket that wakes the loop.
struct Finished {
    queue: Mutex<Vec<(u64, Outcome)>>,
    wake: WakeEnd,
}

impl Finished {
    fn push(&self, id: u64, outcome: Outcome) {
        let was_empty = {
            let mut queue = lock(&self.queue);
            queue.push((id, outcome));
            queue.len() == 1
        };
        if was_empty {
            // A full socket buffer already holds a wake-up: the loop will drain.
            let _ = (&self.wake).write(&[1]);
        }
    }
}

/// The completions of one asyncio event loop: made once per loop by the package (see
/// `mcpmux._hub`), it registers its socket with `loop.add_reader`.
#[pyclass(frozen, module = "mcpmux._mcpmux")]
pub(crate) struct Completer {
    /// A weak reference to the loop: the package keeps one completer per loop in a
    /// `WeakKeyDictionary`, which a strong reference would keep alive forever.
    event_loop: Py<PyAny>,
    finished: Arc<Finished>,
    /// The end the loop watches (Unix), or the asyncio task reading it (Windows).
    #[cfg(unix)]
    woken: std::os::unix::net::UnixStream,
    #[cfg(windows)]
    pump: std::sync::OnceLock<Py<PyAny>>,
    /// The Python future of each call in flight, and what aborts its task.
    pending: Mutex<HashMap<u64, (Py<PyAny>, AbortHandle)>>,
    next_id: AtomicU64,
}

#[pymethods]
impl Completer {
    /// A completer for `event_loop`, registered with it.
    #[new]
    fn new(py: Python<'_>, event_loop: Bound<'_, PyAny>) -> PyResult<Py<Self>> {
        let io = |e: std::io::Error| PyRuntimeError::new_err(format!("wake-up socket: {e}"));
        #[cfg(unix)]
        let (woken, wake) = {
            let (woken, wake) = std::os::unix::net::UnixStream::pair().map_err(io)?;
            woken.set_nonblocking(true).map_err(io)?;
            (woken, wake)
        };
        #[cfg(windows)]
        let (read_end, wake) = {
            use std::os::windows::io::{FromRawSocket, RawSocket};
            let (read_end, write_end): (Bound<'_, PyAny>, Bound<'_, PyAny>) =
                py.import("socket")?.call_method0("socketpair")?.extract()?;
            read_end.call_method1("setblocking", (false,))?;
            let socket: RawSocket = write_end.call_method0("detach")?.extract()?;
            // SAFETY: `detach` handed over the socket's ownership: Python no longer closes it.
            (read_end, unsafe {
                std::net::TcpStream::from_raw_socket(socket)
            })
        };
        wake.set_nonblocking(true).map_err(io)?;
        let completer = Py::new(
            py,
            Completer {
                event_loop: py
                    .import("weakref")?
                    .getattr("ref")?
                    .call1((&event_loop,))?
                    .unbind(),
                finished: Arc::new(Finished {
                    queue: Mutex::new(Vec::new()),
                    wake,
                }),
                #[cfg(unix)]
                woken,
                #[cfg(windows)]
                pump: std::sync::OnceLock::new(),
                pending: Mutex::new(HashMap::new()),
                next_id: AtomicU64::new(0),
            },
        )?;
        let drain = completer.bind(py).getattr("drain")?;
        #[cfg(unix)]
        event_loop.call_method1("add_reader", (completer.get().woken.as_raw_fd(), drain))?;
        #[cfg(windows)]
        {
            let pump = py
                .import("mcpmux._wake")?
                .call_method1("pump", (&event_loop, read_end, drain))?
                .unbind();
            // Made after the completer, whose `drain` the task calls: set once, in place.
            let _ = completer.get().pump.set(pump);
        }
        Ok(completer)
    }

    /// Sets the future of every finished call (the loop calls it when the socket is readable).
    fn drain(slf: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        let this = slf.get();
        // On Windows the pump task has read the wake-up bytes already.
        #[cfg(unix)]
        let mut buffer = [0u8; 256];
        #[cfg(unix)]
        loop {
            match (&this.woken).read(&mut buffer) {
                Ok(n) if n == buffer.len() => continue,
                Ok(_) => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(_) => break,
            }
        }
        let finished = std::mem::take(&mut *lock(&this.finished.queue));
        let mut first_error = None;
        for (id, outcome) in finished {
            let Some((future, _)) = lock(&this.pending).remove(&id) else {
                continue;
            };
            // One future that cannot be set (cancelled in between) must not strand the others.
            if let Err(e) = settle(slf, future.bind(py), outcome(py)) {
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// The done-callback of every future in flight: one cancelled by its awaiter aborts its
    /// call (a completed one has had the callback taken off, see [`settle`]).
    fn __call__(&self, future: &Bound<'_, PyAny>) -> PyResult<()> {
        if !future.call_method0("cancelled")?.is_truthy()? {
            return Ok(());
        }
        // Rare (a cancellation), so a scan of the calls in flight rather than a second index.
        let forgotten = {
            let mut pending = lock(&self.pending);
            let id = pending
                .iter()
                .find_map(|(id, (pending, _))| pending.is(future).then_some(*id));
            id.and_then(|id| pending.remove(&id))
        };
        if let Some((_, handle)) = &forgotten {
            handle.abort();
        }
        drop(forgotten);
        Ok(())
    }

    /// Unregisters the socket from the loop.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        #[cfg(unix)]
        {
            let event_loop = self.event_loop.bind(py).call0()?;
            if !event_loop.is_none() {
                event_loop.call_method1("remove_reader", (self.woken.as_raw_fd(),))?;
            }
        }
        #[cfg(windows)]
        if let Some(pump) = self.pump.get() {
            pump.bind(py).call_method0("cancel")?;
        }
        Ok(())
    }
}

/// Sets `future` to `outcome`, unless it is already done (cancelled by its awaiter, its
/// done-callback not yet run). `completer` is taken off its callbacks first: a set future
/// schedules each of them on the loop, and only a cancelled one needs ours.
fn settle(
    completer: &Bound<'_, Completer>,
    future: &Bound<'_, PyAny>,
    outcome: PyResult<Py<PyAny>>,
) -> PyResult<()> {
    let py = future.py();
    future.call_method1(intern!(py, "remove_done_callback"), (completer,))?;
    let set = match outcome {
        Ok(value) => future.call_method1(intern!(py, "set_result"), (value,)),
        Err(error) => future.call_method1(intern!(py, "set_exception"), (error.value(py),)),
    };
    match set {
        // Asked only when setting failed: a cancelled future refuses a result.
        Err(_) if future.call_method0(intern!(py, "done"))?.is_truthy()? => Ok(()),
        Err(e) => Err(e),
        Ok(_) => Ok(()),
    }
}

/// Runs `fut` on the runtime and returns an asyncio future of `completer`'s loop that gets its
/// outcome. Called on the loop's thread (the completer is the running loop's), so the call is
/// in `pending` before [`Completer::drain`] can look for it.
pub(crate) fn spawn<'py, F>(
    py: Python<'py>,
    completer: &Bound<'py, Completer>,
    fut: F,
) -> PyResult<Bound<'py, PyAny>>
where
    F: Future<Output = Outcome> + Send + 'static,
{
    runtime::not_forked()?;
    let this = completer.get();
    let event_loop = this.event_loop.bind(py).call0()?;
    if event_loop.is_none() {
        return Err(PyRuntimeError::new_err(
            "the event loop of this completer is gone",
        ));
    }
    let future = event_loop.call_method0(intern!(py, "create_future"))?;
    future.call_method1(intern!(py, "add_done_callback"), (completer,))?;
    let id = this.next_id.fetch_add(1, Ordering::Relaxed);
    let finished = this.finished.clone();
    let task = runtime::runtime().spawn(async move {
        let outcome = fut.await;
        finished.push(id, outcome);
    });
    lock(&this.pending).insert(id, (future.clone().unbind(), task.abort_handle()));
    Ok(future)
}

/// Runs `fut` on the runtime as an awaitable of the running event loop, its output made into a
/// Python value by `convert` on the loop's thread ([`not_forked`](runtime::not_forked) first).
pub(crate) fn future_into_py_with<'py, F, T, E, C>(
    py: Python<'py>,
    fut: F,
    convert: C,
) -> PyResult<Bound<'py, PyAny>>
where
    F: Future<Output = Result<T, E>> + Send + 'static,
    T: Send + 'static,
    E: Into<Failure> + Send + 'static,
    C: for<'a> FnOnce(Python<'a>, T) -> PyResult<Py<PyAny>> + Send + 'static,
{
    let completer = running(py)?;
    spawn(py, &completer, async move {
        let outcome = fut.await;
        let finish: Outcome = Box::new(move |py: Python<'_>| match outcome {
            Ok(value) => convert(py, value),
            Err(failure) => Err(failure.into().into_pyerr()),
        });
        finish
    })
}

/// `fut` as the async API wants it (an awaitable, [`future_into_py_with`]) or as the blocking
/// one does (run to its end with the GIL released, [`runtime::block_on`]), its output made
/// Python by `convert` either way: one method serves both hubs.
pub(crate) fn awaitable_or_blocking<'py, F, T, E, C>(
    py: Python<'py>,
    blocking: bool,
    fut: F,
    convert: C,
) -> PyResult<Bound<'py, PyAny>>
where
    F: Future<Output = Result<T, E>> + Send + 'static,
    T: Send + 'static,
    E: Into<Failure> + Send + 'static,
    C: for<'a> FnOnce(Python<'a>, T) -> PyResult<Py<PyAny>> + Send + 'static,
{
    if !blocking {
        return future_into_py_with(py, fut, convert);
    }
    let value = runtime::block_on(py, fut)?.map_err(|e| e.into().into_pyerr())?;
    Ok(convert(py, value)?.into_bound(py))
}

/// Runs `fut` on the runtime as an awaitable of the running event loop (see
/// [`future_into_py_with`]); its output becomes Python as `IntoPyObject` makes it.
pub(crate) fn future_into_py<'py, F, T, E>(py: Python<'py>, fut: F) -> PyResult<Bound<'py, PyAny>>
where
    F: Future<Output = Result<T, E>> + Send + 'static,
    T: for<'a> IntoPyObject<'a> + Send + 'static,
    E: Into<Failure> + Send + 'static,
{
    future_into_py_with(py, fut, |py, value: T| value.into_py_any(py))
}

/// One completer per event loop, by a weak reference to the loop (a `WeakKeyDictionary`: a
/// closed loop that is collected takes its completer with it).
static COMPLETERS: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// The completer found last: a program runs one loop at a time, so most calls find it here
/// without the `WeakKeyDictionary` (a Python-level lookup per call).
static LAST: Mutex<Option<Py<Completer>>> = Mutex::new(None);

/// `asyncio.get_running_loop`, looked up once.
static GET_RUNNING_LOOP: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// The completer of the running event loop, made and registered on first use.
pub(crate) fn running<'py>(py: Python<'py>) -> PyResult<Bound<'py, Completer>> {
    runtime::not_forked()?;
    let event_loop = GET_RUNNING_LOOP
        .get_or_try_init(py, || -> PyResult<Py<PyAny>> {
            Ok(py.import("asyncio")?.getattr("get_running_loop")?.unbind())
        })?
        .bind(py)
        .call0()?;
    let last = lock(&LAST).as_ref().map(|last| last.clone_ref(py));
    if let Some(last) = last {
        // The weak reference is to this very loop only while it lives: no address reuse.
        if last.get().event_loop.bind(py).call0()?.is(&event_loop) {
            return Ok(last.into_bound(py));
        }
    }
    let completers = COMPLETERS
        .get_or_try_init(py, || -> PyResult<Py<PyAny>> {
            Ok(py
                .import("weakref")?
                .getattr("WeakKeyDictionary")?
                .call0()?
                .unbind())
        })?
        .bind(py);
    let found = match completers
        .call_method1("get", (&event_loop,))?
        .cast_into::<Completer>()
    {
        Ok(known) => known,
        Err(_) => {
            let made = Completer::new(py, event_loop.clone())?.into_bound(py);
            completers.set_item(&event_loop, &made)?;
            made
        }
    };
    // The one replaced is dropped here, with the GIL held.
    let replaced = lock(&LAST).replace(found.clone().unbind());
    drop(replaced);
    Ok(found)
}

/// The completer of the running event loop (what `NativeHub.call` takes).
#[pyfunction]
pub(crate) fn completer(py: Python<'_>) -> PyResult<Bound<'_, Completer>> {
    running(py)
}
