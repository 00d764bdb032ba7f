//! Python code the hub calls back (tool sources, built-ins, the approver, host callbacks), run
//! so that no runtime thread is attached to Python longer than it takes to start it: the GIL is
//! taken on a blocking thread to call the package's bridge, which answers at once with a
//! `concurrent.futures.Future` (the callable runs on a thread of Python's own pool, or, a
//! coroutine, on the hub's event loop) or with the answer itself. A future is not waited for
//! there: its done-callback, on the thread that settles it, reads the answer into plain Rust
//! and sends it back. So a script that ends with such calls in flight is not crashed by a
//! runtime thread taking the GIL back while the interpreter finalizes: Python waits for its
//! own threads, cancels its loop's tasks, and what reaches the runtime is plain Rust. Knows
//! nothing of what the callbacks are for.

use std::sync::Mutex;

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use tokio::sync::oneshot;

/// What reads the answer of a callable that answered later, on the thread that settled it.
type Then = Box<dyn for<'py> FnOnce(Python<'py>, PyResult<Bound<'py, PyAny>>) + Send>;

/// The done-callback of a pending answer: reads the future's outcome once.
#[pyclass(frozen, module = "mcpmux._mcpmux")]
struct Deliver {
    then: Mutex<Option<Then>>,
}

#[pymethods]
impl Deliver {
    fn __call__(&self, future: &Bound<'_, PyAny>) {
        let then = mcpmux::cli_support::sync::lock(&self.then).take();
        if let Some(then) = then {
            then(future.py(), future.call_method0("result"));
        }
    }
}

/// `concurrent.futures.Future`, looked up once.
static FUTURE_CLASS: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

fn is_pending(value: &Bound<'_, PyAny>) -> PyResult<bool> {
    let py = value.py();
    let class = FUTURE_CLASS.get_or_try_init(py, || -> PyResult<Py<PyAny>> {
        Ok(py.import("concurrent.futures")?.getattr("Future")?.unbind())
    })?;
    value.is_instance(class.bind(py))
}

/// The longest exception message kept, in characters: a tool source's words reach logs and
/// a model, so a huge message (a dumped payload) is cut.
const MESSAGE_LIMIT: usize = 500;

/// A Python exception as plain Rust: its class name and message, never its traceback (frames
/// hold local values, secrets among them), the message cut to [`MESSAGE_LIMIT`] characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PythonException {
    /// The exception's class name (`ConnectionError`).
    pub(crate) type_name: String,
    /// `str(exception)`, bounded.
    pub(crate) message: String,
}

impl PythonException {
    /// The exception `error` as plain Rust.
    pub(crate) fn from_pyerr(py: Python<'_>, error: &PyErr) -> Self {
        let type_name = error
            .get_type(py)
            .name()
            .map(|n| n.to_string())
            .unwrap_or_else(|_| "Exception".to_owned());
        let message = error
            .value(py)
            .str()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|_| "(its message could not be read)".to_owned());
        PythonException::new(type_name, &message)
    }

    fn new(type_name: String, message: &str) -> Self {
        let message = match message.char_indices().nth(MESSAGE_LIMIT) {
            Some((cut, _)) => format!("{}… (cut)", &message[..cut]),
            None => message.to_owned(),
        };
        PythonException { type_name, message }
    }
}

impl std::fmt::Display for PythonException {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.type_name, self.message)
    }
}

impl std::error::Error for PythonException {}

/// Why a call into Python gave no answer.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CallbackError {
    /// The Python code raised.
    #[error("{0}")]
    Raised(#[source] PythonException),
    /// The interpreter is exiting: Python is no longer called.
    #[error("the Python interpreter is exiting")]
    Exiting,
    /// The pending answer was dropped unanswered.
    #[error("the Python callback was dropped without an answer (its event loop closed)")]
    Dropped,
    /// The blocking thread that called Python panicked or was cancelled.
    #[error("the Python call did not finish: {0}")]
    Unfinished(String),
}

impl CallbackError {
    fn raised(py: Python<'_>, error: &PyErr) -> Self {
        CallbackError::Raised(PythonException::from_pyerr(py, error))
    }
}

/// Calls Python: `start` with the GIL on a blocking thread of the runtime, its answer read by
/// `read` into plain Rust — there at once, or, when `start` gave a `concurrent.futures.Future`,
/// by the future's done-callback on the thread that settles it. Refused once the interpreter
/// is exiting. Whatever Python objects the closures hold are dropped with the GIL.
pub(crate) async fn call_python<T, S, R>(start: S, read: R) -> Result<T, CallbackError>
where
    T: Send + 'static,
    S: for<'py> FnOnce(Python<'py>) -> PyResult<Bound<'py, PyAny>> + Send + 'static,
    R: for<'py> FnOnce(&Bound<'py, PyAny>) -> PyResult<T> + Send + 'static,
{
    let (sender, later) = oneshot::channel::<Result<T, CallbackError>>();
    let joined = tokio::task::spawn_blocking(move || {
        Python::try_attach(|py| -> Option<Result<T, CallbackError>> {
            let answer = match start(py) {
                Ok(answer) => answer,
                Err(e) => return Some(Err(CallbackError::raised(py, &e))),
            };
            match is_pending(&answer) {
                Ok(true) => {
                    let then: Then = Box::new(move |py, outcome| {
                        let read = outcome
                            .and_then(|value| read(&value))
                            .map_err(|e| CallbackError::raised(py, &e));
                        // The caller may have gone (its call cancelled): nothing to tell.
                        let _ = sender.send(read);
                    });
                    let deliver = Deliver {
                        then: Mutex::new(Some(then)),
                    };
                    match answer.call_method1("add_done_callback", (deliver,)) {
                        Ok(_) => None,
                        Err(e) => Some(Err(CallbackError::raised(py, &e))),
                    }
                }
                Ok(false) => Some(read(&answer).map_err(|e| CallbackError::raised(py, &e))),
                Err(e) => Some(Err(CallbackError::raised(py, &e))),
            }
        })
        .unwrap_or_else(|| Some(Err(CallbackError::Exiting)))
    })
    .await;
    match joined {
        Ok(Some(now)) => now,
        Ok(None) => later.await.unwrap_or(Err(CallbackError::Dropped)),
        Err(e) => Err(CallbackError::Unfinished(e.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_message_is_cut_on_a_character_boundary() {
        let long = "é".repeat(MESSAGE_LIMIT + 10);
        let e = PythonException::new("ValueError".to_owned(), &long);
        assert_eq!(
            e.message.chars().count(),
            MESSAGE_LIMIT + "… (cut)".chars().count()
        );
        assert!(e.to_string().starts_with("ValueError: éé"));
        let short = PythonException::new("KeyError".to_owned(), "'x'");
        assert_eq!(short.to_string(), "KeyError: 'x'");
    }
}
