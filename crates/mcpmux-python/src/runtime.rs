//! The one tokio runtime of the process: the one `pyo3-async-runtimes` drives awaitables on,
//! and the one blocking calls wait on with the GIL released. Knows nothing of hubs.

use std::future::Future;

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
    builder.enable_all().worker_threads(1);
    pyo3_async_runtimes::tokio::init(builder);
}

/// The runtime every hub of this process runs on.
pub(crate) fn runtime() -> &'static tokio::runtime::Runtime {
    pyo3_async_runtimes::tokio::get_runtime()
}

/// Runs `fut` to completion on the runtime, the GIL released meanwhile so other Python threads
/// (and Python tool sources the future calls) run. Safe from many threads at once; refused on
/// a thread of the runtime itself (a Python tool source calling the blocking API), where
/// waiting would stall the runtime.
pub(crate) fn block_on<F>(py: Python<'_>, fut: F) -> PyResult<F::Output>
where
    F: Future + Send,
    F::Output: Send,
{
    if tokio::runtime::Handle::try_current().is_ok() {
        return Err(PyRuntimeError::new_err(
            "a blocking mcpmux call cannot be made from inside an mcpmux tool source or \
             approver: make the handler async and use the async Hub",
        ));
    }
    Ok(py.detach(|| runtime().block_on(fut)))
}
