//! Rust futures as asyncio futures, completed on the event loop's own thread.
//!
//! `pyo3-async-runtimes` completes each awaitable from a blocking thread that takes the GIL and
//! calls `call_soon_threadsafe`: with many calls in flight those threads and the loop's thread
//! fight over the GIL. Here a finished future only pushes its outcome onto a queue and, when
//! the queue was empty, writes one byte to a socket the loop watches (`add_reader`); the loop
//! then drains the queue in one callback, turning each outcome into a Python value and setting
//! its future — no thread but the loop's ever takes the GIL for a completion. A Python future
//! cancelled by its awaiter aborts the Rust future (dropping a hub call sends the server its
//! cancellation). Knows nothing of hubs: it runs any future whose outcome becomes a Python
//! value on the loop's thread.

use std::collections::HashMap;
use std::io::{ErrorKind, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use mcpmux::cli_support::sync::lock;

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use tokio::task::AbortHandle;

use crate::runtime;

/// What a finished future leaves: made into a Python value on the loop's thread.
pub(crate) type Outcome = Box<dyn for<'py> FnOnce(Python<'py>) -> PyResult<Py<PyAny>> + Send>;

/// The queue of finished futures and the socket that wakes the loop.
struct Finished {
    queue: Mutex<Vec<(u64, Outcome)>>,
    wake: UnixStream,
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
    woken: UnixStream,
    /// The Python future of each call in flight.
    pending: Arc<Mutex<HashMap<u64, Py<PyAny>>>>,
    next_id: AtomicU64,
}

#[pymethods]
impl Completer {
    /// A completer for `event_loop`, registered with it.
    #[new]
    fn new(py: Python<'_>, event_loop: Bound<'_, PyAny>) -> PyResult<Py<Self>> {
        let io = |e: std::io::Error| PyRuntimeError::new_err(format!("wake-up socket: {e}"));
        let (woken, wake) = UnixStream::pair().map_err(io)?;
        woken.set_nonblocking(true).map_err(io)?;
        wake.set_nonblocking(true).map_err(io)?;
        let fd = woken.as_raw_fd();
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
                woken,
                pending: Arc::new(Mutex::new(HashMap::new())),
                next_id: AtomicU64::new(0),
            },
        )?;
        let drain = completer.bind(py).getattr("drain")?;
        event_loop.call_method1("add_reader", (fd, drain))?;
        Ok(completer)
    }

    /// Sets the future of every finished call (the loop calls it when the socket is readable).
    fn drain(&self, py: Python<'_>) -> PyResult<()> {
        let mut buffer = [0u8; 256];
        loop {
            match (&self.woken).read(&mut buffer) {
                Ok(n) if n == buffer.len() => continue,
                Ok(_) => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(_) => break,
            }
        }
        let finished = std::mem::take(&mut *lock(&self.finished.queue));
        let mut first_error = None;
        for (id, outcome) in finished {
            let Some(future) = lock(&self.pending).remove(&id) else {
                continue;
            };
            // One future that cannot be set (cancelled in between) must not strand the others.
            if let Err(e) = settle(future.bind(py), outcome(py)) {
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// Unregisters the socket from the loop.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let event_loop = self.event_loop.bind(py).call0()?;
        if !event_loop.is_none() {
            event_loop.call_method1("remove_reader", (self.woken.as_raw_fd(),))?;
        }
        Ok(())
    }
}

/// Sets `future` to `outcome`, unless it is already done (cancelled by its awaiter).
fn settle(future: &Bound<'_, PyAny>, outcome: PyResult<Py<PyAny>>) -> PyResult<()> {
    let py = future.py();
    if future.call_method0("done")?.is_truthy()? {
        return Ok(());
    }
    match outcome {
        Ok(value) => future.call_method1("set_result", (value,))?,
        Err(error) => future.call_method1("set_exception", (error.value(py),))?,
    };
    Ok(())
}

/// Aborts a call's task when its Python future is cancelled, and forgets the future.
#[pyclass(frozen, module = "mcpmux._mcpmux")]
struct AbortOnCancel {
    handle: AbortHandle,
    pending: Arc<Mutex<HashMap<u64, Py<PyAny>>>>,
    id: u64,
}

#[pymethods]
impl AbortOnCancel {
    fn __call__(&self, future: &Bound<'_, PyAny>) -> PyResult<()> {
        if future.call_method0("cancelled")?.is_truthy()? {
            self.handle.abort();
            let forgotten = lock(&self.pending).remove(&self.id);
            drop(forgotten);
        }
        Ok(())
    }
}

/// Runs `fut` on the runtime and returns an asyncio future of `completer`'s loop that gets its
/// outcome.
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
    let future = event_loop.call_method0("create_future")?;
    let id = this.next_id.fetch_add(1, Ordering::Relaxed);
    lock(&this.pending).insert(id, future.clone().unbind());
    let finished = this.finished.clone();
    let task = runtime::runtime().spawn(async move {
        let outcome = fut.await;
        finished.push(id, outcome);
    });
    future.call_method1(
        "add_done_callback",
        (AbortOnCancel {
            handle: task.abort_handle(),
            pending: this.pending.clone(),
            id,
        },),
    )?;
    Ok(future)
}
