//! What a hub announces as Python sees it: an iterator over one broadcast channel — the hub's
//! [`HubEvent`]s (state changes, tool-list changes) or its host's resource notices — async
//! (`async for`) and blocking (`next(timeout)`), that ends when the hub shuts down. One stream
//! type for every channel: each event is made JSON by the channel's own function when received.
//! Knows nothing of how servers get there.

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use pyo3::exceptions::{PyStopAsyncIteration, PyStopIteration, PyValueError};
use pyo3::prelude::*;
use serde_json::{Value, json};
use tokio::sync::{Mutex, broadcast};
use tokio_util::sync::CancellationToken;

use mcpmux::HubEvent;
use mcpmux::host::ResourceEvent;

use crate::awaitable;
use crate::convert;
use crate::errors::Failure;
use crate::runtime;

/// One event (as JSON, or why it could not be made JSON), or why there is none.
enum Next {
    Event(Result<Value, String>),
    /// The subscriber fell behind and this many events were dropped.
    Missed(u64),
    /// The hub shut down.
    Closed,
    /// The blocking wait's timeout passed.
    TimedOut,
}

type NextFuture = Pin<Box<dyn Future<Output = Next> + Send>>;

/// The events of one channel of a hub from the moment of subscribing.
#[pyclass(frozen, module = "mcpmux._mcpmux")]
pub(crate) struct EventStream {
    next: Box<dyn Fn() -> NextFuture + Send + Sync>,
}

impl EventStream {
    /// A stream over `receiver`, each event made JSON by `to_json`, that ends when `closed` is
    /// cancelled.
    fn over<T: Clone + Send + 'static>(
        receiver: broadcast::Receiver<T>,
        closed: CancellationToken,
        to_json: fn(&T) -> Result<Value, serde_json::Error>,
    ) -> Self {
        let receiver = Arc::new(Mutex::new(receiver));
        EventStream {
            next: Box::new(move || {
                let receiver = receiver.clone();
                let closed = closed.clone();
                Box::pin(async move {
                    let mut receiver = receiver.lock().await;
                    tokio::select! {
                        _ = closed.cancelled() => Next::Closed,
                        got = receiver.recv() => match got {
                            Ok(event) => Next::Event(to_json(&event).map_err(|e| e.to_string())),
                            Err(broadcast::error::RecvError::Lagged(n)) => Next::Missed(n),
                            Err(broadcast::error::RecvError::Closed) => Next::Closed,
                        },
                    }
                })
            }),
        }
    }

    /// The hub's events: dicts with `type` (`state_changed`, `tools_changed`, `missed`),
    /// `server`, `state` (the one-word label) and `detail` (the state's fields).
    pub(crate) fn hub(receiver: broadcast::Receiver<HubEvent>, closed: CancellationToken) -> Self {
        Self::over(receiver, closed, |event| {
            Ok(match event {
                HubEvent::StateChanged { server, state } => json!({
                    "type": "state_changed",
                    "server": server,
                    "state": state.label(),
                    "detail": serde_json::to_value(state)?,
                }),
                HubEvent::ToolsChanged { server } => {
                    json!({"type": "tools_changed", "server": server})
                }
                _ => json!({"type": "other"}),
            })
        })
    }

    /// The host's resource notices: dicts with `type` (`updated`, `subscription_lost`,
    /// `resources_changed`, `prompts_changed`, `missed`), `server`, `uri`, `reason`.
    pub(crate) fn resources(
        receiver: broadcast::Receiver<ResourceEvent>,
        closed: CancellationToken,
    ) -> Self {
        Self::over(receiver, closed, |event| {
            Ok(match event {
                ResourceEvent::Updated { server, uri } => {
                    json!({"type": "updated", "server": server, "uri": uri})
                }
                ResourceEvent::SubscriptionLost {
                    server,
                    uri,
                    reason,
                } => {
                    json!({"type": "subscription_lost", "server": server, "uri": uri, "reason": reason})
                }
                ResourceEvent::ResourcesChanged { server } => {
                    json!({"type": "resources_changed", "server": server})
                }
                ResourceEvent::PromptsChanged { server } => {
                    json!({"type": "prompts_changed", "server": server})
                }
                _ => json!({"type": "other"}),
            })
        })
    }
}

/// The event as Python: a dict, or `None` (closed, timed out).
fn to_py<'py>(py: Python<'py>, next: &Next) -> PyResult<Bound<'py, PyAny>> {
    match next {
        Next::Event(Ok(event)) => convert::to_py(py, event),
        Next::Event(Err(e)) => Err(PyValueError::new_err(format!(
            "could not convert an event: {e}"
        ))),
        Next::Missed(n) => convert::to_py(py, &json!({"type": "missed", "missed": n})),
        Next::Closed | Next::TimedOut => Ok(py.None().into_bound(py)),
    }
}

#[pymethods]
impl EventStream {
    fn __aiter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// The next event (awaitable); `StopAsyncIteration` once the hub has shut down.
    fn __anext__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let next = (self.next)();
        awaitable::future_into_py_with(
            py,
            async move { Ok::<_, Failure>(next.await) },
            |py, next| match next {
                Next::Closed => Err(PyStopAsyncIteration::new_err(())),
                other => to_py(py, &other).map(Bound::unbind),
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
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        let next = (self.next)();
        let next = runtime::block_on(py, async move {
            match timeout {
                Some(after) => tokio::time::timeout(after, next)
                    .await
                    .unwrap_or(Next::TimedOut),
                None => next.await,
            }
        })?;
        match next {
            Next::Closed => Err(PyStopIteration::new_err(())),
            other => to_py(py, &other),
        }
    }
}
