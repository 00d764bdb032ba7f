//! The one tokio runtime of the process: the one `pyo3-async-runtimes` drives awaitables on,
//! and the one blocking calls wait on with the GIL released. Knows nothing of hubs.

use std::future::Future;

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

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
