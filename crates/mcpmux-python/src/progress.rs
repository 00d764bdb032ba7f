//! A tool call with its progress: the call's `notifications/progress` as an iterator
//! (`ProgressStream`, async) beside the call's awaitable, or handed to a Python callback
//! between waits of a blocking call. The stream ends when the call does (its sender is the
//! call's); cancelling the call's awaitable drops the call, and the library tells the server
//! (`notifications/cancelled`). Progress crosses as plain Rust values, made into Python on the
//! caller's thread. Knows nothing of how calls are made: the hub's `call_with` does.

use std::sync::Arc;
use std::time::Duration;

use pyo3::exceptions::{PyStopAsyncIteration, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use serde_json::Value;
use tokio::sync::{Mutex, mpsc};

use mcpmux::{CallOptions, Hub, Progress};

use crate::awaitable;
use crate::convert;
use crate::errors::Failure;
use crate::result::ToolResult;
use crate::runtime;

/// What a call with progress needs, read with the GIL.
pub(crate) struct ProgressCall {
    hub: Hub,
    name: String,
    arguments: Value,
    options: CallOptions,
}

impl ProgressCall {
    /// The call of `name` with `arguments` (a deadline of `timeout` s, in `scope`).
    pub(crate) fn new(
        hub: Hub,
        name: String,
        arguments: Option<&Bound<'_, PyAny>>,
        timeout: Option<f64>,
        scope: Option<&str>,
    ) -> PyResult<Self> {
        let arguments = match arguments {
            None => Value::Null,
            Some(a) => convert::to_json(a)?,
        };
        let mut options = CallOptions::default();
        if let Some(t) = timeout {
            let after = Duration::try_from_secs_f64(t)
                .map_err(|e| PyValueError::new_err(format!("timeout: {e}")))?;
            options = options.with_timeout(after);
        }
        if let Some(scope) = convert::scope(scope)? {
            options = options.with_scope(scope);
        }
        Ok(ProgressCall {
            hub,
            name,
            arguments,
            options,
        })
    }

    /// The call made, its progress sent to `sender`.
    fn run(
        self,
        sender: mpsc::UnboundedSender<Progress>,
    ) -> impl Future<Output = Result<ToolResult, Failure>> + Send + 'static {
        let ProgressCall {
            hub,
            name,
            arguments,
            options,
        } = self;
        async move {
            let inner = hub
                .call_with(&name, arguments, options.with_progress(sender))
                .await?;
            Ok(ToolResult { inner, tool: name })
        }
    }

    /// The progress stream and the call's awaitable (on the running loop).
    pub(crate) fn start<'py>(
        self,
        py: Python<'py>,
    ) -> PyResult<(ProgressStream, Bound<'py, PyAny>)> {
        let (sender, receiver) = mpsc::unbounded_channel();
        let call = awaitable::future_into_py_with(py, self.run(sender), |py, result| {
            Ok(Py::new(py, result)?.into_any())
        })?;
        Ok((
            ProgressStream {
                receiver: Arc::new(Mutex::new(receiver)),
            },
            call,
        ))
    }

    /// The call made with the GIL released, `callback(progress_dict)` called on this thread
    /// (with the GIL) for each notification. A callback that raises ends the call (the server
    /// is told it is cancelled) and the exception is raised.
    pub(crate) fn run_blocking(
        self,
        py: Python<'_>,
        callback: &Bound<'_, PyAny>,
    ) -> PyResult<ToolResult> {
        let (sender, mut receiver) = mpsc::unbounded_channel();
        let call = self.run(sender);
        let callback = callback.clone().unbind();
        // The future runs on this thread (`block_on`): the callback is taken, called and
        // dropped here, never on a runtime thread.
        let outcome = runtime::block_on(py, async move {
            tokio::pin!(call);
            let mut open = true;
            loop {
                tokio::select! {
                    biased;
                    got = receiver.recv(), if open => match got {
                        Some(progress) => {
                            let called = Python::attach(|py| {
                                let update = to_dict(py, &progress)?;
                                callback.bind(py).call1((update,)).map(drop)
                            });
                            if let Err(error) = called {
                                return Err(Failure::Python(error));
                            }
                        }
                        None => open = false,
                    },
                    result = &mut call => {
                        // Progress that came before the answer is still told, in order.
                        while let Ok(progress) = receiver.try_recv() {
                            Python::attach(|py| {
                                let update = to_dict(py, &progress)?;
                                callback.bind(py).call1((update,)).map(drop)
                            })?;
                        }
                        return result;
                    }
                }
            }
        })?;
        outcome.map_err(Failure::into_pyerr)
    }
}

/// One notification as a dict: `progress`, `total` (or `None`), `message` (or `None`).
fn to_dict<'py>(py: Python<'py>, progress: &Progress) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    dict.set_item("progress", progress.progress)?;
    dict.set_item("total", progress.total)?;
    dict.set_item("message", progress.message.as_deref())?;
    Ok(dict)
}

/// The progress notifications of one call, until it ends.
#[pyclass(frozen, module = "mcpmux._mcpmux")]
pub(crate) struct ProgressStream {
    receiver: Arc<Mutex<mpsc::UnboundedReceiver<Progress>>>,
}

#[pymethods]
impl ProgressStream {
    fn __aiter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// The next notification (awaitable); `StopAsyncIteration` once the call has ended.
    fn __anext__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let receiver = self.receiver.clone();
        awaitable::future_into_py_with(
            py,
            async move { Ok::<_, Failure>(receiver.lock().await.recv().await) },
            |py, next| match next {
                Some(progress) => Ok(to_dict(py, &progress)?.into_any().unbind()),
                None => Err(PyStopAsyncIteration::new_err(())),
            },
        )
    }
}
