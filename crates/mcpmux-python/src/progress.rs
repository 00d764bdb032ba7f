//! A tool call with its progress: the call's `notifications/progress` as an iterator
//! (`ProgressStream`, async) beside the call's awaitable, or handed to a Python callback
//! between waits of a blocking call. The stream ends when the call does (its sender is the
//! call's); cancelling the call's awaitable drops the call, and the library tells the server
//! (`notifications/cancelled`). Progress crosses as plain Rust values, made into Python on the
//! caller's thread. Knows nothing of how calls are made: the hub's `call_with` does.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use pyo3::exceptions::{PyRuntimeError, PyStopAsyncIteration, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use serde_json::Value;
use tokio::sync::{Notify, mpsc};

use mcpmux::cli_support::sync::lock;

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

    /// The call made, its progress kept in `updates` (the newest [`MAX_UNREAD`]); `updates`
    /// ends with the call, answered or dropped.
    fn run(
        self,
        updates: Arc<Updates>,
    ) -> impl Future<Output = Result<ToolResult, Failure>> + Send + 'static {
        let ProgressCall {
            hub,
            name,
            arguments,
            options,
        } = self;
        async move {
            let _ends = Ending(updates.clone());
            let (sender, mut receiver) = mpsc::unbounded_channel();
            let answered = {
                let call = hub.call_with(&name, arguments, options.with_progress(sender));
                tokio::pin!(call);
                loop {
                    tokio::select! {
                        biased;
                        Some(progress) = receiver.recv() => updates.push(progress),
                        answered = &mut call => break answered,
                    }
                }
            };
            // What came before the answer is still told, in order.
            while let Ok(progress) = receiver.try_recv() {
                updates.push(progress);
            }
            Ok(ToolResult {
                inner: answered?,
                tool: name,
            })
        }
    }

    /// The progress stream and the call's awaitable (on the running loop).
    pub(crate) fn start<'py>(
        self,
        py: Python<'py>,
    ) -> PyResult<(ProgressStream, Bound<'py, PyAny>)> {
        let updates = Arc::new(Updates::default());
        let call = awaitable::future_into_py_with(py, self.run(updates.clone()), |py, result| {
            Ok(Py::new(py, result)?.into_any())
        })?;
        Ok((ProgressStream { updates }, call))
    }

    /// The call made with the GIL released, `callback(progress_dict)` called on this thread
    /// (with the GIL) for each notification. A callback that raises ends the call (the server
    /// is told it is cancelled) and the exception is raised.
    pub(crate) fn run_blocking(
        self,
        py: Python<'_>,
        callback: &Bound<'_, PyAny>,
    ) -> PyResult<ToolResult> {
        let updates = Arc::new(Updates::default());
        let call = self.run(updates.clone());
        let callback = callback.clone().unbind();
        // The future runs on this thread (`block_on`): the callback is taken, called and
        // dropped here, never on a runtime thread.
        let outcome = runtime::block_on(py, async move {
            tokio::pin!(call);
            let mut answered = None;
            loop {
                tokio::select! {
                    biased;
                    next = updates.next() => match next {
                        Some(progress) => Python::attach(|py| {
                            let update = to_dict(py, &progress)?;
                            callback.bind(py).call1((update,)).map(drop)
                        })?,
                        // Every update told: the answer is in.
                        None => break,
                    },
                    result = &mut call, if answered.is_none() => answered = Some(result),
                }
            }
            answered.unwrap_or_else(|| {
                Err(Failure::Python(PyRuntimeError::new_err(
                    "the call ended without an answer",
                )))
            })
        })?;
        outcome.map_err(Failure::into_pyerr)
    }
}

/// Most progress notifications kept unread: progress is cumulative (each notification
/// carries the progress so far), so when a harness reads slower than a server sends, the
/// oldest are dropped, never the server's memory grown without bound. A thousand keeps any
/// burst a harness would show.
const MAX_UNREAD: usize = 1024;

/// The unread progress of one call, and whether the call has ended.
#[derive(Default)]
pub(crate) struct Updates {
    queue: std::sync::Mutex<(VecDeque<Progress>, bool)>,
    ready: Notify,
}

impl Updates {
    fn push(&self, progress: Progress) {
        {
            let mut queue = lock(&self.queue);
            if queue.0.len() == MAX_UNREAD {
                queue.0.pop_front();
            }
            queue.0.push_back(progress);
        }
        self.ready.notify_one();
    }

    fn end(&self) {
        lock(&self.queue).1 = true;
        self.ready.notify_one();
    }

    /// The oldest unread notification; `None` once the call has ended and all were read.
    async fn next(&self) -> Option<Progress> {
        loop {
            let ready = self.ready.notified();
            tokio::pin!(ready);
            ready.as_mut().enable();
            {
                let mut queue = lock(&self.queue);
                if let Some(progress) = queue.0.pop_front() {
                    return Some(progress);
                }
                if queue.1 {
                    return None;
                }
            }
            ready.await;
        }
    }
}

/// Ends a call's updates when its future finishes or is dropped (cancelled).
struct Ending(Arc<Updates>);

impl Drop for Ending {
    fn drop(&mut self) {
        self.0.end();
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
    updates: Arc<Updates>,
}

#[pymethods]
impl ProgressStream {
    fn __aiter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// The next notification (awaitable); `StopAsyncIteration` once the call has ended.
    fn __anext__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let updates = self.updates.clone();
        awaitable::future_into_py_with(
            py,
            async move { Ok::<_, Failure>(updates.next().await) },
            |py, next| match next {
                Some(progress) => Ok(to_dict(py, &progress)?.into_any().unbind()),
                None => Err(PyStopAsyncIteration::new_err(())),
            },
        )
    }
}
