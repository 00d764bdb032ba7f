//! The library's [`Error`] as the package's exceptions (`mcpmux.errors`): one class per thing
//! a harness acts on, each carrying the variant's fields as attributes, the message the Rust
//! error prints, and `for_model` (the error as a model should see it, the server's words
//! wrapped as untrusted). Knows nothing of how the error arose.

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use mcpmux::Error;

use crate::callback::PythonException;

/// The Python exception for `error`.
pub(crate) fn to_pyerr(error: Error) -> PyErr {
    to_pyerr_ref(&error)
}

/// The Python exception for `error`, which stays the caller's.
pub(crate) fn to_pyerr_ref(error: &Error) -> PyErr {
    Python::attach(|py| match build(py, error) {
        Ok(err) => err,
        // The package's module could not be imported or the class refused its fields: the
        // message still reaches the caller.
        Err(_) => PyRuntimeError::new_err(error.to_string()),
    })
}

/// A hub-level failure that is not an [`Error`] (a bad option, a config problem) as
/// `McpmuxError` subclass `class`.
pub(crate) fn new_error(class: &str, kind: &str, message: String) -> PyErr {
    Python::attach(|py| {
        let made = (|| -> PyResult<PyErr> {
            let fields = PyDict::new(py);
            fields.set_item("kind", kind)?;
            instantiate(py, class, &message, &fields)
        })();
        made.unwrap_or_else(|_| PyRuntimeError::new_err(message))
    })
}

fn instantiate(
    py: Python<'_>,
    class: &str,
    message: &str,
    fields: &Bound<'_, PyDict>,
) -> PyResult<PyErr> {
    let module = py.import("mcpmux.errors")?;
    let instance = module.getattr(class)?.call((message,), Some(fields))?;
    Ok(PyErr::from_value(instance))
}

/// A text field as Python is given it: its URLs without query or userinfo, as the error's
/// message shows them.
fn clean(text: &str) -> String {
    mcpmux::cli_support::redact::redact_text(text).into_owned()
}

/// A server's stderr lines, each [`clean`]ed.
fn clean_lines(lines: &[String]) -> Vec<String> {
    lines.iter().map(|line| clean(line)).collect()
}

fn build(py: Python<'_>, error: &Error) -> PyResult<PyErr> {
    let fields = PyDict::new(py);
    let set = |key: &str, value: Bound<'_, PyAny>| fields.set_item(key, value);
    let class = match error {
        Error::Config(e) => {
            set("kind", "config".into_pyobject(py)?.into_any())?;
            if let Some(server) = e.server() {
                set("server", server.into_pyobject(py)?.into_any())?;
            }
            "ConfigError"
        }
        Error::Policy(_) => {
            set("kind", "policy".into_pyobject(py)?.into_any())?;
            "ConfigError"
        }
        Error::DuplicateServer { name } => {
            set("kind", "duplicate_server".into_pyobject(py)?.into_any())?;
            set("server", name.into_pyobject(py)?.into_any())?;
            "ConfigError"
        }
        Error::Connect {
            server,
            message,
            stderr_tail,
            source,
        } => {
            set("kind", "connect".into_pyobject(py)?.into_any())?;
            set("server", server.into_pyobject(py)?.into_any())?;
            set("reason", clean(message).into_pyobject(py)?.into_any())?;
            set(
                "stderr_tail",
                clean_lines(stderr_tail).into_pyobject(py)?.into_any(),
            )?;
            match source
                .as_deref()
                .and_then(|s| s.downcast_ref::<PythonException>())
            {
                Some(raised) => {
                    set("kind", "tool_source".into_pyobject(py)?.into_any())?;
                    set(
                        "exception_type",
                        raised.type_name.as_str().into_pyobject(py)?.into_any(),
                    )?;
                    set(
                        "exception_message",
                        clean(&raised.message).into_pyobject(py)?.into_any(),
                    )?;
                    "ToolSourceError"
                }
                None => "ServerUnavailable",
            }
        }
        Error::Auth {
            server, message, ..
        } => {
            set("kind", "auth".into_pyobject(py)?.into_any())?;
            set("server", server.into_pyobject(py)?.into_any())?;
            set("reason", clean(message).into_pyobject(py)?.into_any())?;
            "AuthRequired"
        }
        Error::Timeout {
            server,
            what,
            after,
        } => {
            set("kind", "timeout".into_pyobject(py)?.into_any())?;
            set("server", server.into_pyobject(py)?.into_any())?;
            set("what", what.into_pyobject(py)?.into_any())?;
            set("after", after.as_secs_f64().into_pyobject(py)?.into_any())?;
            "ToolTimeout"
        }
        Error::Unavailable {
            server,
            state,
            reason,
            ..
        } => {
            set("kind", "unavailable".into_pyobject(py)?.into_any())?;
            set("server", server.into_pyobject(py)?.into_any())?;
            set("state", state.label().into_pyobject(py)?.into_any())?;
            set("reason", clean(reason).into_pyobject(py)?.into_any())?;
            "ServerUnavailable"
        }
        Error::RequiredServerFailed { server, message } => {
            set(
                "kind",
                "required_server_failed".into_pyobject(py)?.into_any(),
            )?;
            set("server", server.into_pyobject(py)?.into_any())?;
            set("reason", clean(message).into_pyobject(py)?.into_any())?;
            "ServerUnavailable"
        }
        Error::CircuitOpen { server, message } => {
            set("kind", "circuit_open".into_pyobject(py)?.into_any())?;
            set("server", server.into_pyobject(py)?.into_any())?;
            set("reason", clean(message).into_pyobject(py)?.into_any())?;
            "CircuitOpen"
        }
        Error::ConnectionLost {
            server,
            what,
            reason,
            stderr_tail,
            ..
        } => {
            set("kind", "connection_lost".into_pyobject(py)?.into_any())?;
            set("server", server.into_pyobject(py)?.into_any())?;
            set("what", what.into_pyobject(py)?.into_any())?;
            set("reason", clean(reason).into_pyobject(py)?.into_any())?;
            set(
                "stderr_tail",
                clean_lines(stderr_tail).into_pyobject(py)?.into_any(),
            )?;
            "ConnectionLost"
        }
        Error::UnknownServer { name } => {
            set("kind", "unknown_server".into_pyobject(py)?.into_any())?;
            set("server", name.into_pyobject(py)?.into_any())?;
            "UnknownServer"
        }
        Error::UnknownTool { name, suggestion } => {
            set("kind", "unknown_tool".into_pyobject(py)?.into_any())?;
            set("tool", name.into_pyobject(py)?.into_any())?;
            set("suggestion", suggestion.into_pyobject(py)?.into_any())?;
            "UnknownTool"
        }
        Error::Server {
            server,
            code,
            message,
            ..
        } => {
            set("kind", "server".into_pyobject(py)?.into_any())?;
            set("server", server.into_pyobject(py)?.into_any())?;
            set("code", code.into_pyobject(py)?.into_any())?;
            set("reason", clean(message).into_pyobject(py)?.into_any())?;
            "ServerError"
        }
        Error::Protocol {
            server, message, ..
        } => {
            set("kind", "protocol".into_pyobject(py)?.into_any())?;
            set("server", server.into_pyobject(py)?.into_any())?;
            set("reason", clean(message).into_pyobject(py)?.into_any())?;
            "ProtocolError"
        }
        Error::Cancelled(reason) => {
            set("kind", "cancelled".into_pyobject(py)?.into_any())?;
            set("reason", clean(reason).into_pyobject(py)?.into_any())?;
            "Cancelled"
        }
        Error::InvalidArguments { tool, message } => {
            set("kind", "invalid_arguments".into_pyobject(py)?.into_any())?;
            set("tool", tool.into_pyobject(py)?.into_any())?;
            set("reason", clean(message).into_pyobject(py)?.into_any())?;
            "InvalidArguments"
        }
        Error::Denied(refusal) => {
            set("kind", "denied".into_pyobject(py)?.into_any())?;
            set("tool", refusal.tool.as_str().into_pyobject(py)?.into_any())?;
            set("rule", refusal.rule.as_str().into_pyobject(py)?.into_any())?;
            set(
                "asked",
                refusal.asked.into_pyobject(py)?.to_owned().into_any(),
            )?;
            set("reason", refusal.reason.as_deref().into_pyobject(py)?)?;
            "PolicyRefused"
        }
        Error::OutOfScope {
            tool,
            server,
            scope,
            reason,
        } => {
            set("kind", "out_of_scope".into_pyobject(py)?.into_any())?;
            set("tool", tool.into_pyobject(py)?.into_any())?;
            set("server", server.into_pyobject(py)?.into_any())?;
            set("scope", scope.into_pyobject(py)?.into_any())?;
            set("reason", clean(reason).into_pyobject(py)?.into_any())?;
            "OutOfScope"
        }
        Error::UnusableTool { tool, reason } => {
            set("kind", "unusable_tool".into_pyobject(py)?.into_any())?;
            set("tool", tool.into_pyobject(py)?.into_any())?;
            set("reason", clean(reason).into_pyobject(py)?.into_any())?;
            "UnusableTool"
        }
        Error::NoResourceServer { uri, .. } => {
            set("kind", "no_resource_server".into_pyobject(py)?.into_any())?;
            set("reason", uri.into_pyobject(py)?.into_any())?;
            "McpmuxError"
        }
        _ => {
            set("kind", "other".into_pyobject(py)?.into_any())?;
            "McpmuxError"
        }
    };
    set(
        "for_model",
        mcpmux::render_untrusted_error(error)
            .into_pyobject(py)?
            .into_any(),
    )?;
    instantiate(py, class, &error.to_string(), &fields)
}

/// An error made where Python must not be touched (a runtime thread, in a call's future) and
/// turned into its exception later, on a thread that holds the GIL: the library's error, a
/// hub-level failure of a class of `mcpmux.errors`, or an exception made without Python (a
/// lazy `PyErr`, which holds only Rust values until it is raised).
pub(crate) enum Failure {
    /// The library's error (see [`to_pyerr`]).
    Hub(Error),
    /// A failure that is not the library's (see [`new_error`]).
    New {
        /// The class in `mcpmux.errors`.
        class: &'static str,
        /// Its `kind` field.
        kind: &'static str,
        /// What went wrong.
        message: String,
    },
    /// An exception already made.
    Python(PyErr),
}

impl Failure {
    /// The exception, made with the GIL (on the thread that raises it).
    pub(crate) fn into_pyerr(self) -> PyErr {
        match self {
            Failure::Hub(error) => to_pyerr(error),
            Failure::New {
                class,
                kind,
                message,
            } => new_error(class, kind, message),
            Failure::Python(error) => error,
        }
    }
}

impl From<Error> for Failure {
    fn from(error: Error) -> Self {
        Failure::Hub(error)
    }
}

impl From<PyErr> for Failure {
    fn from(error: PyErr) -> Self {
        Failure::Python(error)
    }
}
