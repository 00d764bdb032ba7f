//! The agent loop (`mcpmux-agent`) for Python: `start_run` starts one run of an [`Agent`] over a
//! hub on the runtime and hands back an [`AgentRun`], an iterator (async and blocking) over the
//! run's events that ends with a `done` item carrying the outcome (stop reason, answer, usage)
//! and the transcript to continue from. The provider is named as the CLI names it
//! (`openai:MODEL`, `anthropic:MODEL`), configured from the environment unless a base URL or
//! key is given. Dropping the run, or `cancel()`, cancels it and its tool calls. Only plain Rust
//! values cross from the runtime to Python: the dicts are made on the Python thread.

use std::sync::Arc;
use std::time::Duration;

use pyo3::exceptions::{PyStopAsyncIteration, PyStopIteration, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use serde_json::{Value, json};
use tokio::sync::{Mutex, mpsc};
use tokio_util::sync::CancellationToken;

use mcpmux_agent::{
    Agent, AgentEvent, AgentOptions, DeferralOptions, RunOutcome, StopReason, Transcript, provider,
};

use crate::convert;
use crate::errors::new_error;
use crate::hub::NativeHub;
use crate::runtime;

/// What a run sends to Python: its events, then its end.
enum Item {
    Event(AgentEvent),
    Done(Box<(RunOutcome, Transcript)>),
}

fn item<'py>(options: &Bound<'py, PyDict>, key: &str) -> PyResult<Option<Bound<'py, PyAny>>> {
    Ok(options.get_item(key)?.filter(|v| !v.is_none()))
}

fn seconds(value: f64, what: &str) -> PyResult<Duration> {
    Duration::try_from_secs_f64(value).map_err(|e| PyValueError::new_err(format!("{what}: {e}")))
}

/// When tools go behind `search_tools`: `search` is `None`/`"auto"` (past the default share of
/// the context), `True` (always), `False` (never); `pinned` are always sent.
fn deferral(options: &Bound<'_, PyDict>) -> PyResult<Option<DeferralOptions>> {
    let pinned: Vec<String> = item(options, "pinned")?.map_or(Ok(Vec::new()), |v| v.extract())?;
    let mut deferral = match item(options, "search")? {
        None => DeferralOptions::default(),
        Some(v) if v.extract::<String>().is_ok_and(|s| s == "auto") => DeferralOptions::default(),
        Some(v) => match v.extract::<bool>() {
            Ok(true) => DeferralOptions::default()
                .without_token_limit()
                .with_max_tools(0),
            Ok(false) => return Ok(None),
            Err(_) => {
                return Err(PyValueError::new_err(
                    "search must be True (always), False (never) or \"auto\"",
                ));
            }
        },
    };
    for pattern in pinned {
        deferral = deferral.with_pinned(pattern);
    }
    Ok(Some(deferral))
}

/// The run's options and its provider, read with the GIL held.
fn plan(
    model: &str,
    options: &Bound<'_, PyDict>,
) -> PyResult<(AgentOptions, Transcript, Arc<dyn mcpmux_agent::Provider>)> {
    let mut agent = AgentOptions::default().with_deferral(deferral(options)?);
    if let Some(system) = item(options, "system")? {
        agent = agent.with_system(system.extract::<String>()?);
    }
    if let Some(max) = item(options, "max_iterations")? {
        agent = agent.with_max_iterations(max.extract()?);
    }
    if let Some(max) = item(options, "max_tokens")? {
        agent = agent.with_max_tokens(max.extract()?);
    }
    if let Some(max) = item(options, "max_request_bytes")? {
        agent = agent.with_max_request_bytes(max.extract()?);
    }
    let scope: Option<String> = item(options, "scope")?.map(|v| v.extract()).transpose()?;
    if let Some(scope) = convert::scope(scope.as_deref())? {
        agent = agent.with_scope(scope);
    }
    if let Some(timeout) = item(options, "call_timeout")? {
        agent = agent.with_call_timeout(seconds(timeout.extract()?, "call_timeout")?);
    }
    let transcript = match item(options, "transcript")? {
        None => Transcript::new(),
        Some(t) => serde_json::from_value(convert::to_json(&t)?).map_err(|e| {
            PyValueError::new_err(format!(
                "transcript: {e} (pass the transcript of an earlier run's result)"
            ))
        })?,
    };
    let base_url: Option<String> = item(options, "base_url")?
        .map(|v| v.extract())
        .transpose()?;
    let api_key: Option<String> = item(options, "api_key")?.map(|v| v.extract()).transpose()?;
    let env = |name: &str| match name {
        "OPENAI_BASE_URL" | "ANTHROPIC_BASE_URL" if base_url.is_some() => base_url.clone(),
        "OPENAI_API_KEY" | "ANTHROPIC_API_KEY" if api_key.is_some() => api_key.clone(),
        _ => std::env::var(name).ok(),
    };
    let provider = provider::from_env(model, env)
        .map_err(|e| new_error("McpmuxError", "provider", e.to_string()))?;
    Ok((agent, transcript, Arc::from(provider)))
}

/// Starts `prompt` (or, without one, continues the transcript) on `hub`'s tools with `model`.
#[pyfunction]
#[pyo3(signature = (hub, prompt, model, options))]
pub(crate) fn start_run(
    hub: &NativeHub,
    prompt: Option<String>,
    model: &str,
    options: &Bound<'_, PyDict>,
) -> PyResult<AgentRun> {
    runtime::not_forked()?;
    let (agent_options, mut transcript, provider) = plan(model, options)?;
    let agent = Agent::new(hub.hub()?, provider, agent_options);
    let (sender, receiver) = mpsc::unbounded_channel();
    let cancel = CancellationToken::new();
    let token = cancel.clone();
    runtime::runtime().spawn(async move {
        let events = sender.clone();
        let report = move |event: AgentEvent| {
            // A reader that went away cancels the run (below); nothing to do here.
            let _ = events.send(Item::Event(event));
        };
        let outcome = agent
            .run_with(&mut transcript, prompt.as_deref(), &report, &token)
            .await;
        let _ = sender.send(Item::Done(Box::new((outcome, transcript))));
    });
    Ok(AgentRun {
        receiver: Arc::new(Mutex::new(receiver)),
        cancel,
    })
}

/// One run of the agent loop: its events, then `{"type": "done", ...}`.
#[pyclass(frozen, module = "mcpmux._mcpmux")]
pub(crate) struct AgentRun {
    // Unbounded: a run's events are bounded by its turns and tool calls, and the loop must
    // never wait on a slow Python reader.
    receiver: Arc<Mutex<mpsc::UnboundedReceiver<Item>>>,
    cancel: CancellationToken,
}

impl Drop for AgentRun {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

impl AgentRun {
    fn next_future(&self) -> impl Future<Output = Option<Item>> + Send + 'static {
        let receiver = self.receiver.clone();
        async move { receiver.lock().await.recv().await }
    }
}

fn stop_kind(stop: &StopReason) -> &'static str {
    match stop {
        StopReason::Final => "final",
        StopReason::IterationLimit { .. } => "iteration_limit",
        StopReason::Budget { .. } => "budget",
        StopReason::Refusal { .. } => "refusal",
        StopReason::MaxTokens => "max_tokens",
        StopReason::Provider(_) => "provider_error",
        StopReason::Cancelled => "cancelled",
        _ => "other",
    }
}

/// The item as JSON: the event's fields under `type`, or the outcome and transcript.
fn to_value(item: &Item) -> Value {
    match item {
        Item::Event(event) => match event {
            AgentEvent::Text(text) => json!({"type": "text", "text": text}),
            AgentEvent::ToolCallStarted { id, name } => {
                json!({"type": "tool_call_started", "id": id, "name": name})
            }
            AgentEvent::ToolCall {
                id,
                tool,
                arguments,
            } => json!({"type": "tool_call", "id": id, "tool": tool, "arguments": arguments}),
            AgentEvent::ToolResult {
                id,
                tool,
                is_error,
                text,
            } => {
                json!({"type": "tool_result", "id": id, "tool": tool, "is_error": is_error, "text": text})
            }
            AgentEvent::Retrying {
                attempt,
                after,
                reason,
            } => {
                json!({"type": "retrying", "attempt": attempt, "after": after.as_secs_f64(), "reason": reason})
            }
            AgentEvent::Turn { iteration, usage } => {
                json!({"type": "turn", "iteration": iteration, "usage": usage})
            }
            _ => json!({"type": "other"}),
        },
        Item::Done(done) => {
            let (outcome, transcript) = done.as_ref();
            json!({
                "type": "done",
                "stop": stop_kind(&outcome.stop),
                "stop_message": outcome.stop.to_string(),
                "answer": outcome.answer,
                "usage": outcome.usage,
                "iterations": outcome.iterations,
                "tool_calls": outcome.tool_calls,
                "transcript": transcript,
            })
        }
    }
}

#[pymethods]
impl AgentRun {
    fn __aiter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// The next event (awaitable); the last is `done`, then `StopAsyncIteration`.
    fn __anext__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let next = self.next_future();
        // The event is made plain on the runtime and into Python on the loop's thread.
        crate::awaitable::future_into_py_with(
            py,
            async move { Ok::<_, crate::errors::Failure>(next.await.map(|item| to_value(&item))) },
            |py, value| match value {
                None => Err(PyStopAsyncIteration::new_err(())),
                Some(value) => convert::to_py(py, &value).map(Bound::unbind),
            },
        )
    }

    /// The next event, blocking with the GIL released; `StopIteration` after `done`.
    fn next_blocking<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let next = self.next_future();
        match runtime::block_on(py, async move { next.await.map(|item| to_value(&item)) })? {
            None => Err(PyStopIteration::new_err(())),
            Some(value) => convert::to_py(py, &value),
        }
    }

    /// Stops the run and its tool calls; its last item says `cancelled`.
    fn cancel(&self) {
        self.cancel.cancel();
    }
}
