//! The one tokio runtime of the process: the one `pyo3-async-runtimes` drives awaitables on,
//! and the one blocking calls wait on with the GIL released; refused in a process forked after
//! it started, where its threads are missing. Knows nothing of hubs.

use std::future::Future;
use std::sync::OnceLock;

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

/// Sets up the runtime before anything uses it (called when the module is imported): one
/// worker thread. The hub's work per call (route, validate, write a line, read one) is small
/// next to the Python side, which is one thread under the GIL: a second worker (the default
/// is one per core) only moved tasks between threads, each move a wake-up: the Python
/// benchmark's sequential p50 and p99 were lower with one, calls/s with 32 in flight the same.
/// Blocking threads (Python tool sources run there) are left at tokio's default, so many
/// Python tools can still wait at once.
pub(crate) fn configure() {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    builder.enable_all().worker_threads(1).on_thread_start(|| {
        STARTED_IN.get_or_init(std::process::id);
    });
    pyo3_async_runtimes::tokio::init(builder);
}

/// The process the runtime's threads were started in (set by the first of them).
static STARTED_IN: OnceLock<u32> = OnceLock::new();

/// Refuses work in a process forked after the runtime started: `fork` copies the hubs and the
/// runtime but not the threads that run them, so anything waiting on the runtime would wait
/// forever.
pub(crate) fn not_forked() -> PyResult<()> {
    match STARTED_IN.get() {
        Some(&parent) if parent != std::process::id() => Err(PyRuntimeError::new_err(format!(
            "mcpmux cannot be used in a forked child: process {parent} started its hubs, and \
             fork copied them without the threads that run them, so this would hang; use a hub \
             only in the process that started it, and fork before starting any (or use \
             multiprocessing's \"spawn\" start method)"
        ))),
        _ => Ok(()),
    }
}

/// The runtime every hub of this process runs on.
pub(crate) fn runtime() -> &'static tokio::runtime::Runtime {
    pyo3_async_runtimes::tokio::get_runtime()
}

/// Runs `fut` to completion on the runtime, the GIL released meanwhile so other Python threads
/// (and Python tool sources the future calls) run. Safe from many threads at once; refused on
/// a thread of the runtime itself (a Python tool source calling the blocking API), where
/// waiting would stall the runtime, and in a forked child ([`not_forked`]).
pub(crate) fn block_on<F>(py: Python<'_>, fut: F) -> PyResult<F::Output>
where
    F: Future + Send,
    F::Output: Send,
{
    not_forked()?;
    if tokio::runtime::Handle::try_current().is_ok() {
        return Err(PyRuntimeError::new_err(
            "a blocking mcpmux call cannot be made from inside an mcpmux tool source or \
             approver: make the handler async and use the async Hub",
        ));
    }
    Ok(py.detach(|| {
        let output = runtime().block_on(fut);
        park_if_finalizing();
        output
    }))
}

/// Python before 3.14 ends a thread that asks for the GIL once the interpreter is finalizing
/// with `pthread_exit`, whose forced unwind through Rust frames is undefined behaviour: a
/// daemon thread whose blocking call ended after the main thread did crashed the process at
/// exit. Such a thread is parked instead, as Python 3.14 itself does; the process is ending.
fn park_if_finalizing() {
    if interpreter_finalizing() {
        loop {
            std::thread::park();
        }
    }
}

/// Whether the interpreter is finalizing, asked without the GIL (which is what the call is
/// for). `Py_IsFinalizing` is in the limited API only from 3.13, `_Py_IsFinalizing` before:
/// found by name in the running interpreter, whose symbols every extension module sees.
#[cfg(unix)]
fn interpreter_finalizing() -> bool {
    type IsFinalizing = unsafe extern "C" fn() -> std::ffi::c_int;
    static CHECK: OnceLock<Option<IsFinalizing>> = OnceLock::new();
    let check = CHECK.get_or_init(|| {
        [c"Py_IsFinalizing", c"_Py_IsFinalizing"]
            .into_iter()
            .find_map(|name| {
                // SAFETY: dlsym with RTLD_DEFAULT only looks a name up.
                let found = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
                // SAFETY: both names are CPython's `int (void)` functions, safe to call
                // without the GIL (they read one atomic of the runtime).
                (!found.is_null()).then(|| unsafe {
                    std::mem::transmute::<*mut libc::c_void, IsFinalizing>(found)
                })
            })
    });
    // SAFETY: see above.
    check.is_some_and(|is_finalizing| unsafe { is_finalizing() } != 0)
}

/// Elsewhere the check is not made (no `dlsym`); Windows has no `pthread_exit`.
#[cfg(not(unix))]
fn interpreter_finalizing() -> bool {
    false
}
