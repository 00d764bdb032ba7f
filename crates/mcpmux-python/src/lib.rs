//! The native half of the `mcpmux` Python package (`mcpmux._mcpmux`): the mcpmux [`Hub`]
//! behind a small set of Python classes and functions, awaitable on asyncio and blocking
//! (with the GIL released) for code that is not async.
//!
//! What it owns: the crossing between Python and Rust — one tokio runtime shared with
//! `pyo3-async-runtimes` (`runtime`), calls completed on the event loop's own thread
//! (`awaitable`), values both ways (`convert`), errors as the package's
//! exception classes (`errors`), Python tool sources, built-ins and approvers (`sources`),
//! results (`result`), events (`events`), resources, prompts and completions (`resources`),
//! calls with progress (`progress`), host callbacks (`host`), the hub handle (`hub`), the agent
//! loop (`agent`), tool search for the adapters (`search`), config beyond the servers
//! (`config`) and `reconfigure` (`reload`). What it knows nothing
//! of: how the hub works — every behaviour is the library's; the Python-facing API (classes,
//! docstrings, adapters) is `python/mcpmux/`, which wraps this module.
//!
//! No input from Python may panic here: every failure is a Python exception.
//!
//! [`Hub`]: mcpmux::Hub

mod agent;
mod awaitable;
mod callback;
mod config;
mod convert;
mod errors;
mod events;
mod host;
mod hub;
mod progress;
mod reload;
mod resources;
mod result;
mod runtime;
mod search;
mod sources;

use pyo3::prelude::*;

/// The extension module `mcpmux._mcpmux`.
#[pymodule]
fn _mcpmux(m: &Bound<'_, PyModule>) -> PyResult<()> {
    runtime::configure();
    m.add_class::<hub::NativeHub>()?;
    m.add_class::<result::ToolResult>()?;
    m.add_class::<events::EventStream>()?;
    m.add_class::<awaitable::Completer>()?;
    m.add_class::<progress::ProgressStream>()?;
    m.add_function(wrap_pyfunction!(awaitable::completer, m)?)?;
    m.add_function(wrap_pyfunction!(hub::start, m)?)?;
    m.add_function(wrap_pyfunction!(hub::start_blocking, m)?)?;
    m.add_function(wrap_pyfunction!(result::render_untrusted_text, m)?)?;
    m.add_function(wrap_pyfunction!(result::tool_result, m)?)?;
    // The agent loop and tool search (agent.rs, search.rs).
    m.add_class::<agent::AgentRun>()?;
    m.add_class::<search::ToolSearch>()?;
    m.add_function(wrap_pyfunction!(agent::start_run, m)?)?;
    // reconfigure (reload.rs).
    m.add_function(wrap_pyfunction!(reload::reconfigure, m)?)?;
    m.add_function(wrap_pyfunction!(reload::reconfigure_blocking, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
