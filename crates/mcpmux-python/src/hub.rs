//! The hub handle Python holds (`NativeHub`) and how one is started: servers from the user's
//! config files and/or given inline (read by the library's own `mcpmux.toml` reader, so every
//! option and every message is the library's), Python tool sources and built-ins, policy and
//! approver; then the tool list (per scope, per provider format), calls, status, events and
//! shutdown — each awaitable, and blocking with the GIL released. Knows nothing of how the hub
//! works: every behaviour is the library's.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use mcpmux::config::{self, ConfigSet, LoadOptions, PolicyRules};
use mcpmux::schema::ExportFormat;
use mcpmux::{CallOptions, Error, Hub, HubOptions, LocalTools};

use crate::awaitable::{self, Completer, Outcome};
use crate::convert;
use crate::errors::{self, Failure, new_error};
use crate::events::EventStream;
use crate::progress::{ProgressCall, ProgressStream};
use crate::resources;
use crate::result::ToolResult;
use crate::runtime::{self, block_on};
use crate::sources::{self, PyApprover, PySource};

/// What Python asked for, read while holding the GIL; started without it.
struct Plan {
    /// Read the user's and the project's config files (and these extra files).
    config: Option<LoadOptions>,
    /// Servers given inline, as the text of a `mcpmux.toml`.
    inline: Option<String>,
    policy: PolicyRules,
    lazy: bool,
    ephemeral: bool,
    sources: Vec<PySource>,
    builtins: Vec<mcpmux::Builtin>,
    approver: Option<PyApprover>,
    /// Who answers roots, sampling and elicitation (`host::read`).
    host: mcpmux::Host,
    /// The tool cache's folder and age (config.rs).
    cache: crate::config::CacheOptions,
}

fn item<'py>(options: &Bound<'py, PyDict>, key: &str) -> PyResult<Option<Bound<'py, PyAny>>> {
    Ok(options.get_item(key)?.filter(|v| !v.is_none()))
}

fn flag(options: &Bound<'_, PyDict>, key: &str) -> PyResult<bool> {
    item(options, key)?.map_or(Ok(false), |v| v.extract())
}

fn list<'py>(options: &Bound<'py, PyDict>, key: &str) -> PyResult<Vec<Bound<'py, PyAny>>> {
    match item(options, key)? {
        None => Ok(Vec::new()),
        Some(v) => Ok(v.cast::<PyList>()?.iter().collect()),
    }
}

impl Plan {
    fn read(options: &Bound<'_, PyDict>) -> PyResult<Self> {
        let config = crate::config::load_options(options)?;
        let inline = item(options, "servers")?
            .map(|servers| inline_toml(&servers))
            .transpose()?;
        let policy = match item(options, "policy")? {
            None => PolicyRules::default(),
            Some(p) => policy_rules(&p)?,
        };
        Ok(Plan {
            config,
            inline,
            policy,
            lazy: flag(options, "lazy")?,
            ephemeral: flag(options, "ephemeral")?,
            sources: list(options, "handlers")?
                .iter()
                .map(PySource::new)
                .collect::<PyResult<_>>()?,
            builtins: list(options, "builtins")?
                .iter()
                .map(sources::builtin)
                .collect::<PyResult<_>>()?,
            approver: item(options, "approver")?.map(|a| PyApprover::new(&a)),
            host: crate::host::read(options)?,
            cache: crate::config::CacheOptions::read(options)?,
        })
    }

    /// Loads the servers, lists the Python sources' tools, starts the hub and waits for it.
    async fn start(self) -> Result<NativeHub, Failure> {
        let mut set = match &self.config {
            Some(load) => config::load(load),
            None => ConfigSet::default(),
        };
        let mut policy = self.policy;
        if let Some(text) = &self.inline {
            let inline = load_inline(text)?;
            set.servers.extend(inline.servers);
            set.problems.extend(inline.problems);
            policy.allow.extend(inline.policy.allow);
            policy.ask.extend(inline.policy.ask);
            policy.deny.extend(inline.policy.deny);
        }
        let mut registry = LocalTools::new();
        for builtin in self.builtins {
            registry.register(builtin);
        }
        for source in self.sources {
            registry.register_source(Arc::new(source));
        }
        let handler_errors = registry.refresh().await;
        let mut options = if self.ephemeral {
            HubOptions::ephemeral()
        } else {
            HubOptions::default()
        }
        .with_lazy(self.lazy)
        .with_policy(policy)
        .with_registry(registry);
        options = self.cache.apply(options);
        if let Some(approver) = self.approver {
            options = options.with_approver(Arc::new(approver));
        }
        options = options.with_host(self.host.clone());
        let hub = Hub::from_config(set, options)?;
        if let Err(e) = hub.wait_ready().await {
            hub.shutdown().await;
            return Err(e.into());
        }
        Ok(NativeHub {
            hub: Mutex::new(Some(hub)),
            closed: CancellationToken::new(),
            handler_errors,
            host: self.host,
        })
    }
}

/// The servers given inline (`{name: {command, args, env, url, stages, lazy, ...}}`, the keys
/// of a `[servers.NAME]` table of `mcpmux.toml`) as that file's text.
pub(crate) fn inline_toml(servers: &Bound<'_, PyAny>) -> PyResult<String> {
    let json = convert::to_json(servers)?;
    if !json.is_object() {
        return Err(PyTypeError::new_err(
            "servers must be a dict of server name → settings",
        ));
    }
    let file = serde_json::json!({ "servers": json });
    let value = toml::Value::try_from(file).map_err(|e| {
        PyValueError::new_err(format!(
            "servers cannot be written as mcpmux.toml: {e} (a None value has no TOML form: leave the key out)"
        ))
    })?;
    toml::to_string(&value).map_err(|e| {
        PyValueError::new_err(format!("servers cannot be written as mcpmux.toml: {e}"))
    })
}

/// Where inline servers are said to come from in messages.
const INLINE_PLACE: &str = "servers=";

/// Reads inline servers with the library's `mcpmux.toml` reader: a private temporary file, no
/// home (so no user file is read) and no project. A problem that is not a warning is an error.
pub(crate) fn load_inline(text: &str) -> Result<ConfigSet, Failure> {
    let io = |e: std::io::Error| Failure::New {
        class: "ConfigError",
        kind: "config",
        message: format!("servers: {e}"),
    };
    let dir = tempfile::tempdir().map_err(io)?;
    let file = dir.path().join("servers.toml");
    std::fs::write(&file, text).map_err(io)?;
    let load = LoadOptions::new(None, dir.path()).with_extra_files(vec![file.clone()]);
    // `${VAR}` from this process; never the user's config folder.
    let env = |name: &str| match name {
        "XDG_CONFIG_HOME" | "HOME" => None,
        _ => std::env::var(name).ok(),
    };
    let mut set = config::load_with_env(&load, &env);
    let place = file.display().to_string();
    let errors: Vec<String> = set
        .problems
        .iter()
        .filter(|p| !p.is_warning())
        .map(|p| p.error.to_string().replace(&place, INLINE_PLACE))
        .collect();
    if !errors.is_empty() {
        return Err(Failure::New {
            class: "ConfigError",
            kind: "config",
            message: errors.join("\n"),
        });
    }
    for spec in &mut set.servers {
        spec.origin = config::Origin::Code;
    }
    set.problems.clear();
    Ok(set)
}

/// `{"allow": [...], "ask": [...], "deny": [...]}` as policy rules.
fn policy_rules(value: &Bound<'_, PyAny>) -> PyResult<PolicyRules> {
    let dict = value
        .cast::<PyDict>()
        .map_err(|_| PyTypeError::new_err("policy must be a dict with allow / ask / deny lists"))?;
    let mut rules = PolicyRules::default();
    for (key, entries) in dict.iter() {
        let key: String = key.extract()?;
        let entries: Vec<String> = entries.extract()?;
        match key.as_str() {
            "allow" => rules.allow = entries,
            "ask" => rules.ask = entries,
            "deny" => rules.deny = entries,
            other => {
                return Err(PyValueError::new_err(format!(
                    "policy key `{other}`: expected allow, ask or deny"
                )));
            }
        }
    }
    Ok(rules)
}

/// Starts a hub (awaitable): see `mcpmux.Hub` for the options.
#[pyfunction]
pub(crate) fn start<'py>(
    py: Python<'py>,
    options: &Bound<'py, PyDict>,
) -> PyResult<Bound<'py, PyAny>> {
    let plan = Plan::read(options)?;
    awaitable::future_into_py(py, plan.start())
}

/// Starts a hub, blocking with the GIL released: see `mcpmux.BlockingHub`.
#[pyfunction]
pub(crate) fn start_blocking(py: Python<'_>, options: &Bound<'_, PyDict>) -> PyResult<NativeHub> {
    let plan = Plan::read(options)?;
    block_on(py, plan.start())?.map_err(Failure::into_pyerr)
}

/// A running hub. Every method is safe from many threads at once.
#[pyclass(frozen, module = "mcpmux._mcpmux")]
pub(crate) struct NativeHub {
    /// Taken at drop so the hub is released on the runtime (its tasks own child processes).
    hub: Mutex<Option<Hub>>,
    /// Cancelled at shutdown: ends event streams.
    closed: CancellationToken,
    /// Python tool sources whose `list_tools` failed at start: (name, error).
    handler_errors: Vec<(String, Error)>,
    /// The hub's host: its resource notices.
    host: mcpmux::Host,
}

impl NativeHub {
    fn slot(&self) -> MutexGuard<'_, Option<Hub>> {
        mcpmux::cli_support::sync::lock(&self.hub)
    }

    /// The hub, or the error that it is closed.
    pub(crate) fn hub(&self) -> PyResult<Hub> {
        self.slot()
            .clone()
            .ok_or_else(|| new_error("McpmuxError", "closed", "the hub is closed".to_owned()))
    }

    /// The call's options and its future, made with the GIL held.
    fn prepare_call(
        &self,
        name: String,
        arguments: Option<&Bound<'_, PyAny>>,
        timeout: Option<f64>,
        scope: Option<&str>,
    ) -> PyResult<impl Future<Output = Result<ToolResult, Failure>> + Send + 'static> {
        let hub = self.hub()?;
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
        Ok(async move {
            match hub.call_with(&name, arguments, options).await {
                Ok(inner) => Ok(ToolResult { inner, tool: name }),
                Err(e) => Err(e.into()),
            }
        })
    }
}

impl Drop for NativeHub {
    fn drop(&mut self) {
        let taken = self.slot().take();
        if let Some(hub) = taken {
            let closed = self.closed.is_cancelled();
            // Shut down (and drop) on the runtime: child processes are reaped there.
            runtime::runtime().spawn(async move {
                if !closed {
                    hub.shutdown().await;
                }
                drop(hub);
            });
        }
    }
}

#[pymethods]
impl NativeHub {
    /// The tools callable now, as dicts, in `scope` (`STAGE/AGENT`) when given.
    #[pyo3(signature = (scope = None))]
    fn tools<'py>(&self, py: Python<'py>, scope: Option<&str>) -> PyResult<Bound<'py, PyAny>> {
        let hub = self.hub()?;
        let tools = match convert::scope(scope)? {
            Some(scope) => hub.tools_for(&scope),
            None => hub.tools(),
        };
        convert::serialized(py, &tools)
    }

    /// The tools of `scope` rendered for `provider` (`openai`, `openai-strict`, `anthropic`,
    /// `gemini`): `{"provider", "tools": [{"name", "tool", "definition", "notes"}], "unusable"}`.
    #[pyo3(signature = (provider, scope = None))]
    fn export<'py>(
        &self,
        py: Python<'py>,
        provider: &str,
        scope: Option<&str>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let provider: ExportFormat = provider
            .parse()
            .map_err(|e| PyValueError::new_err(format!("{e}")))?;
        let hub = self.hub()?;
        let tools = match convert::scope(scope)? {
            Some(scope) => hub.tools_for(&scope),
            None => hub.tools(),
        };
        let export = convert::serialized(py, &mcpmux::schema::export(&tools, provider))?;
        // The name the provider is asked by (`openai-strict`), not serde's spelling.
        export.set_item("provider", provider.as_str())?;
        Ok(export)
    }

    /// Every configured server's status, as dicts (`mcpmux servers --json`).
    fn servers<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        convert::serialized(py, &self.hub()?.servers())
    }

    /// Python tool sources whose `list_tools` failed at start, as (name, exception) pairs:
    /// a `ToolSourceError` when it raised, a `ServerUnavailable` when its answer was wrong.
    #[getter]
    fn handler_errors(&self) -> Vec<(String, PyErr)> {
        self.handler_errors
            .iter()
            .map(|(name, e)| (name.clone(), errors::to_pyerr_ref(e)))
            .collect()
    }

    /// Calls the tool exposed as `name` (awaitable), its result set on the loop's own thread by
    /// `completer` (the running loop's when not given).
    #[pyo3(signature = (name, arguments = None, timeout = None, scope = None, completer = None))]
    fn call<'py>(
        &self,
        py: Python<'py>,
        name: String,
        arguments: Option<&Bound<'py, PyAny>>,
        timeout: Option<f64>,
        scope: Option<&str>,
        completer: Option<&Bound<'py, Completer>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let call = self.prepare_call(name, arguments, timeout, scope)?;
        let completer = match completer {
            Some(completer) => completer.clone(),
            None => awaitable::running(py)?,
        };
        awaitable::spawn(py, &completer, async move {
            let outcome = call.await;
            let finish: Outcome = Box::new(move |py: Python<'_>| {
                Ok(Py::new(py, outcome.map_err(Failure::into_pyerr)?)?.into_any())
            });
            finish
        })
    }

    /// Calls the tool exposed as `name`, blocking with the GIL released.
    #[pyo3(signature = (name, arguments = None, timeout = None, scope = None))]
    fn call_blocking(
        &self,
        py: Python<'_>,
        name: String,
        arguments: Option<&Bound<'_, PyAny>>,
        timeout: Option<f64>,
        scope: Option<&str>,
    ) -> PyResult<ToolResult> {
        let call = self.prepare_call(name, arguments, timeout, scope)?;
        block_on(py, call)?.map_err(Failure::into_pyerr)
    }

    /// Events from now on (state changes, tool-list changes) until the hub shuts down.
    fn events(&self) -> PyResult<EventStream> {
        Ok(EventStream::hub(
            self.hub()?.subscribe(),
            self.closed.clone(),
        ))
    }

    /// Waits until every server's first connection attempt has settled (awaitable).
    fn wait_ready<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let hub = self.hub()?;
        awaitable::future_into_py(
            py,
            async move { hub.wait_ready().await.map_err(Failure::Hub) },
        )
    }

    /// Closes every server and reaps their processes: awaitable, or blocking with the GIL
    /// released when `blocking`. Idempotent.
    #[pyo3(signature = (blocking = false))]
    fn shutdown<'py>(&self, py: Python<'py>, blocking: bool) -> PyResult<Bound<'py, PyAny>> {
        let hub = self.slot().clone();
        self.closed.cancel();
        let closing = async move {
            if let Some(hub) = hub {
                hub.shutdown().await;
            }
            Ok::<_, Failure>(())
        };
        awaitable::awaitable_or_blocking(py, blocking, closing, |py, ()| Ok(py.None()))
    }

    // Resources, prompts, completions (`resources`), calls with progress (`progress`).

    /// Asks for resources, templates, prompts, a read, a prompt filled in, a completion or a
    /// (un)subscription (`resources::Ask`): awaitable, or answered with the GIL released when
    /// `blocking`; the answer as JSON values.
    #[pyo3(signature = (op, params, blocking = false))]
    fn ask<'py>(
        &self,
        py: Python<'py>,
        op: &str,
        params: &Bound<'py, PyDict>,
        blocking: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        resources::ask(py, self.hub()?, op, params, blocking)
    }

    /// Resource notices from now on, until the hub shuts down.
    fn resource_events(&self) -> PyResult<EventStream> {
        self.hub()?;
        Ok(EventStream::resources(
            self.host.resource_events(),
            self.closed.clone(),
        ))
    }

    /// Calls `name` with its progress: `(progress stream, awaitable of the result)`.
    #[pyo3(signature = (name, arguments = None, timeout = None, scope = None))]
    fn call_progress<'py>(
        &self,
        py: Python<'py>,
        name: String,
        arguments: Option<&Bound<'py, PyAny>>,
        timeout: Option<f64>,
        scope: Option<&str>,
    ) -> PyResult<(ProgressStream, Bound<'py, PyAny>)> {
        ProgressCall::new(self.hub()?, name, arguments, timeout, scope)?.start(py)
    }

    /// Calls `name` blocking, `progress(dict)` called on this thread for each notification.
    #[pyo3(signature = (name, progress, arguments = None, timeout = None, scope = None))]
    fn call_blocking_progress(
        &self,
        py: Python<'_>,
        name: String,
        progress: &Bound<'_, PyAny>,
        arguments: Option<&Bound<'_, PyAny>>,
        timeout: Option<f64>,
        scope: Option<&str>,
    ) -> PyResult<ToolResult> {
        ProgressCall::new(self.hub()?, name, arguments, timeout, scope)?.run_blocking(py, progress)
    }
}
