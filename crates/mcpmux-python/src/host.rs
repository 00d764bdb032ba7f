//! What a server may ask of a Python harness (MCP's server→client requests) answered by Python
//! callables: the roots (a fixed list, or a callable per server), sampling and elicitation, as
//! the library's [`Host`] callbacks. The library's rules hold unchanged: a capability is
//! advertised only when its callable is given, a request for one that is not is refused
//! ("method not found"), URL-mode elicitation only when the harness says it handles URLs, and
//! an accepted form gets the schema's defaults. Each callable runs on a blocking thread with
//! the GIL taken there (`callback`); what the package's `_host` bridge gives is a
//! plain synchronous object that answers JSON: `{"reply": {...}}`, `{"reject": why}` or
//! `{"fail": why}` for sampling; `{"accept": {...}}`, `{"decline": null}` or
//! `{"cancel": null}` for elicitation. Knows nothing of the hub.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use serde_json::{Value, json};

use mcpmux::Host;
use mcpmux::host::{
    ElicitationKind, ElicitationReply, ElicitationRequest, Elicitor, HostError, Root,
    RootsProvider, Sampler, SamplingReply, SamplingRequest,
};

use crate::callback::call_python;
use crate::convert;

/// How long a Python sampler or elicitor may take before the server is answered without it (a
/// person may be filling in a form: the same bound as an approver's).
const CALLBACK_TIMEOUT: Duration = Duration::from_secs(600);

/// The host the options ask for: `roots` (a list of paths, `file://` URIs or `{"uri", "name"}`
/// dicts, or a bridge with `roots(server)`), `sampler` and `elicitor` (bridges with
/// `sample(request)` / `elicit(request)`; the elicitor's `urls` says whether it takes URL-mode
/// requests). None of them: a host that offers nothing.
pub(crate) fn read(options: &Bound<'_, PyDict>) -> PyResult<Host> {
    let given = |key: &str| -> PyResult<Option<Bound<'_, PyAny>>> {
        Ok(options.get_item(key)?.filter(|v| !v.is_none()))
    };
    let mut host = Host::new();
    if let Some(roots) = given("roots")? {
        host = match roots.cast::<PyList>() {
            Ok(list) => host.with_roots(
                list.iter()
                    .map(|entry| root(&convert::to_json(&entry)?))
                    .collect::<PyResult<Vec<Root>>>()?,
            ),
            Err(_) => host.with_roots(PyRoots(Arc::new(roots.unbind()))),
        };
    }
    if let Some(sampler) = given("sampler")? {
        host = host.with_sampler(PySampler(Arc::new(sampler.unbind())));
    }
    if let Some(elicitor) = given("elicitor")? {
        let urls = elicitor
            .getattr("urls")
            .and_then(|u| u.extract::<bool>())
            .unwrap_or(false);
        host = host.with_elicitor(PyElicitor {
            bridge: Arc::new(elicitor.unbind()),
            urls,
        });
    }
    Ok(host)
}

/// One root: a path (made a `file://` URI), a URI, or `{"uri", "name"}`.
fn root(entry: &Value) -> PyResult<Root> {
    match entry {
        Value::String(text) if text.contains("://") => Ok(Root::new(text.clone(), None)),
        Value::String(path) => Ok(Root::directory(path)),
        Value::Object(map) => match map.get("uri") {
            Some(Value::String(uri)) => Ok(Root::new(
                uri.clone(),
                map.get("name").and_then(Value::as_str).map(str::to_owned),
            )),
            _ => Err(PyTypeError::new_err("a root dict needs a string `uri`")),
        },
        _ => Err(PyTypeError::new_err(
            "a root is a path, a file:// URI or a {\"uri\", \"name\"} dict",
        )),
    }
}

/// Roots asked of Python per server: the bridge's `roots(server)` answers a list as [`read`]
/// takes it. A failure offers no roots (the bridge has warned about it).
struct PyRoots(Arc<Py<PyAny>>);

impl RootsProvider for PyRoots {
    fn roots(&self, server: &str) -> BoxFuture<'_, Vec<Root>> {
        let bridge = self.0.clone();
        let server = server.to_owned();
        Box::pin(async move {
            let listed = call_python(
                move |py| bridge.bind(py).call_method1("roots", (server,)),
                convert::to_json,
            );
            match tokio::time::timeout(CALLBACK_TIMEOUT, listed).await {
                Ok(Ok(Value::Array(entries))) => {
                    entries.iter().filter_map(|e| root(e).ok()).collect()
                }
                _ => Vec::new(),
            }
        })
    }
}

/// A Python sampler.
struct PySampler(Arc<Py<PyAny>>);

impl Sampler for PySampler {
    fn create_message(
        &self,
        request: SamplingRequest,
    ) -> BoxFuture<'_, Result<SamplingReply, HostError>> {
        let bridge = self.0.clone();
        let asked = json!({
            "server": request.server,
            "messages": request
                .messages
                .iter()
                .map(|m| json!({"role": m.role, "content": m.content}))
                .collect::<Vec<_>>(),
            "system_prompt": request.system_prompt,
            "max_tokens": request.max_tokens,
            "params": request.params,
        });
        Box::pin(async move {
            let answer = ask(bridge, "sample", asked).await?;
            if let Some(why) = answer.get("reject") {
                return Err(HostError::rejected(text_or(why, "the host declined")));
            }
            if let Some(why) = answer.get("fail") {
                return Err(HostError::failed(text_or(why, "the host's sampler failed")));
            }
            let Some(Value::Object(reply)) = answer.get("reply") else {
                return Err(HostError::failed("the host's sampler gave no reply"));
            };
            let model = reply.get("model").and_then(Value::as_str).unwrap_or("");
            let mut made = SamplingReply::text(model, "");
            made.content = reply.get("content").cloned().unwrap_or(Value::Null);
            made.stop_reason = reply
                .get("stop_reason")
                .and_then(Value::as_str)
                .map(str::to_owned);
            Ok(made)
        })
    }
}

/// A Python elicitor.
struct PyElicitor {
    bridge: Arc<Py<PyAny>>,
    urls: bool,
}

impl Elicitor for PyElicitor {
    fn elicit(&self, request: ElicitationRequest) -> BoxFuture<'_, ElicitationReply> {
        let bridge = self.bridge.clone();
        let mut asked = json!({"server": request.server, "message": request.message});
        match request.kind {
            ElicitationKind::Form { schema } => {
                asked["mode"] = json!("form");
                asked["schema"] = schema;
            }
            ElicitationKind::Url {
                url,
                elicitation_id,
            } => {
                asked["mode"] = json!("url");
                asked["url"] = json!(url);
                asked["elicitation_id"] = json!(elicitation_id);
            }
            _ => asked["mode"] = json!("other"),
        }
        Box::pin(async move {
            match ask(bridge, "elicit", asked).await {
                Ok(answer) => match answer.get("accept") {
                    Some(Value::Object(content)) => ElicitationReply::Accept(content.clone()),
                    _ if answer.get("decline").is_some() => ElicitationReply::Decline,
                    _ => ElicitationReply::Cancel,
                },
                // The callable failed or took too long: dismissed, never a guess.
                Err(_) => ElicitationReply::Cancel,
            }
        })
    }

    fn supports_url(&self) -> bool {
        self.urls
    }
}

/// Calls the bridge's `method` with `request` and reads its JSON answer, bounded in time.
async fn ask(
    bridge: Arc<Py<PyAny>>,
    method: &'static str,
    request: Value,
) -> Result<Value, HostError> {
    let asked = call_python(
        move |py| {
            let request = convert::to_py(py, &request)?;
            bridge.bind(py).call_method1(method, (request,))
        },
        convert::to_json,
    );
    match tokio::time::timeout(CALLBACK_TIMEOUT, asked).await {
        Ok(Ok(answer)) => Ok(answer),
        // The bridge catches the callable's own exceptions; this is the bridge or the exit.
        Ok(Err(_)) => Err(HostError::failed("the host could not answer")),
        Err(_) => Err(HostError::failed("the host did not answer in time")),
    }
}

/// `value` as text, or `fallback` when it is not a string.
fn text_or(value: &Value, fallback: &str) -> String {
    value.as_str().unwrap_or(fallback).to_owned()
}
