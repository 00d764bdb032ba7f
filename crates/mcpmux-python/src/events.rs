//! What happens to a hub's servers as Python sees it: an iterator over [`HubEvent`]s (state
//! changes, tool-list changes), async (`async for`) and blocking (`next(timeout)`), that ends
//! when the hub shuts down. Knows nothing of how servers get there.

use std::sync::Arc;
use std::time::Duration;

use pyo3::exceptions::PyStopAsyncIteration;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use tokio::sync::{Mutex, broadcast};
use tokio_util::sync::CancellationToken;

use mcpmux::HubEvent;

use crate::awaitable;
use crate::convert;
use crate::errors::Failure;
use crate::runtime;

/// One event, or why there is none.
enum Next {
    Event(HubEvent),
    /// The subscriber fell behind and this many events were dropped.
    Missed(u64),
    /// The hub shut down.
    Closed,
    /// The blocking wait's timeout passed.
    TimedOut,
}

/// The events of one hub from the moment of subscribing.
#[pyclass(frozen, module = "mcpmux._mcpmux")]
pub(crate) struct EventStream {
    receiver: Arc<Mutex<broadcast::Receiver<HubEvent>>>,
    closed: CancellationToken,
}

impl EventStream {
    /// A stream over `receiver` that ends when `closed` is cancelled.
    pub(crate) fn new(receiver: broadcast::Receiver<HubEvent>, closed: CancellationToken) -> Self {
        EventStream {
            receiver: Arc::new(Mutex::new(receiver)),
            closed,
        }
    }

    fn next_future(&self) -> impl Future<Output = Next> + Send + 'static {
        let receiver = self.receiver.clone();
        let closed = self.closed.clone();
        async move {
            let mut receiver = receiver.lock().await;
            tokio::select! {
                _ = closed.cancelled() => Next::Closed,
                got = receiver.recv() => match got {
                    Ok(event) => Next::Event(event),
                    Err(broadcast::error::RecvError::Lagged(n)) => Next::Missed(n),
                    Err(broadcast::error::RecvError::Closed) => Next::Closed,
                },
            }
        }
    }
}

/// The event as a dict: `type` (`state_changed`, `tools_changed`, `missed`), `server`,
/// `state` (the one-word label) and `detail` (the state's fields).
fn to_dict<'py>(py: Python<'py>, next: &Next) -> PyResult<Bound<'py, PyAny>> {
    let dict = PyDict::new(py);
    match next {
        Next::Event(HubEvent::StateChanged { server, state }) => {
            dict.set_item("type", "state_changed")?;
            dict.set_item("server", server)?;
            dict.set_item("state", state.label())?;
            dict.set_item("detail", convert::serialized(py, state)?)?;
        }
        Next::Event(HubEvent::ToolsChanged { server }) => {
            dict.set_item("type", "tools_changed")?;
            dict.set_item("server", server)?;
        }
        Next::Event(_) => dict.set_item("type", "other")?,
        Next::Missed(n) => {
            dict.set_item("type", "missed")?;
            dict.set_item("missed", n)?;
        }
        Next::Closed | Next::TimedOut => return Ok(py.None().into_bound(py)),
    }
    Ok(dict.into_any())
}

#[pymethods]
impl EventStream {
    fn __aiter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// The next event (awaitable); `StopAsyncIteration` once the hub has shut down.
    fn __anext__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let next = self.next_future();
        awaitable::future_into_py_with(
            py,
            async move { Ok::<_, Failure>(next.await) },
            |py, next| match next {
                Next::Closed => Err(PyStopAsyncIteration::new_err(())),
                other => to_dict(py, &other).map(Bound::unbind),
            },
        )
    }

    /// The next event, waiting at most `timeout` seconds (forever when `None`) with the GIL
    /// released: `None` when the timeout passed, `StopIteration` once the hub has shut down.
    #[pyo3(signature = (timeout = None))]
    fn next_blocking<'py>(
        &self,
        py: Python<'py>,
        timeout: Option<f64>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let timeout = timeout
            .map(|t| Duration::try_from_secs_f64(t.max(0.0)))
            .transpose()
            .map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))?;
        let next = self.next_future();
        let next = runtime::block_on(py, async move {
            match timeout {
                Some(after) => tokio::time::timeout(after, next)
                    .await
                    .unwrap_or(Next::TimedOut),
                None => next.await,
            }
        })?;
        match next {
            Next::Closed => Err(pyo3::exceptions::PyStopIteration::new_err(())),
            other => to_dict(py, &other),
        }
    }
}
