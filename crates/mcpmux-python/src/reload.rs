//! `reconfigure` for Python: a running hub swapped to a new config (the config files re-read
//! by the library's loader, the servers given inline), answered with what changed, as the
//! CLI's `serve` reloads.

use pyo3::prelude::*;
use pyo3::types::PyDict;

use mcpmux::Reload;
use mcpmux::config::{self, ConfigSet};

use crate::config::load_options;
use crate::errors::{Failure, to_pyerr};
use crate::hub::{NativeHub, inline_toml, load_inline};
use crate::runtime::block_on;

fn item<'py>(options: &Bound<'py, PyDict>, key: &str) -> PyResult<Option<Bound<'py, PyAny>>> {
    Ok(options.get_item(key)?.filter(|v| !v.is_none()))
}

/// The new config: the files re-read (when the hub was made from them) and the inline servers,
/// whose `[policy]` joins the config's rules.
fn new_config(options: &Bound<'_, PyDict>) -> PyResult<ConfigSet> {
    let mut set = match load_options(options)? {
        Some(load) => config::load(&load),
        None => ConfigSet::default(),
    };
    if let Some(servers) = item(options, "servers")? {
        let inline = load_inline(&inline_toml(&servers)?).map_err(Failure::into_pyerr)?;
        set.servers.extend(inline.servers);
        set.policy.allow.extend(inline.policy.allow);
        set.policy.ask.extend(inline.policy.ask);
        set.policy.deny.extend(inline.policy.deny);
    }
    Ok(set)
}

/// What a reconfiguration changed, as a dict of server-name lists.
fn changes(py: Python<'_>, reload: &Reload) -> PyResult<Py<PyAny>> {
    let dict = PyDict::new(py);
    dict.set_item("added", &reload.added)?;
    dict.set_item("removed", &reload.removed)?;
    dict.set_item("restarted", &reload.restarted)?;
    dict.set_item("updated", &reload.updated)?;
    dict.set_item("kept", &reload.kept)?;
    dict.set_item("policy_changed", reload.policy_changed)?;
    Ok(dict.into_any().unbind())
}

/// Swaps `hub` to the config `options` describe (awaitable): see `Hub.reconfigure`.
#[pyfunction]
pub(crate) fn reconfigure<'py>(
    py: Python<'py>,
    hub: &NativeHub,
    options: &Bound<'py, PyDict>,
) -> PyResult<Bound<'py, PyAny>> {
    let set = new_config(options)?;
    let hub = hub.hub()?;
    crate::awaitable::future_into_py_with(
        py,
        async move { hub.reconfigure(set).await },
        |py, reload| changes(py, &reload),
    )
}

/// [`reconfigure`], blocking with the GIL released.
#[pyfunction]
pub(crate) fn reconfigure_blocking(
    py: Python<'_>,
    hub: &NativeHub,
    options: &Bound<'_, PyDict>,
) -> PyResult<Py<PyAny>> {
    let set = new_config(options)?;
    let hub = hub.hub()?;
    let reload = block_on(py, async move { hub.reconfigure(set).await })?.map_err(to_pyerr)?;
    changes(py, &reload)
}
