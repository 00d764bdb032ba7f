//! Python code the hub calls: custom tool sources (an object with `list_tools`/`call_tool`)
//! as [`ToolSource`]s beside MCP servers, Python functions as [`Builtin`]s, and a Python
//! approver for `ask` rules. Each Python call starts on a blocking thread of the runtime with
//! the GIL taken there, never on a runtime worker (`callback`); what the package's `_bridge`
//! adapter gives is a plain synchronous object that answers with a `concurrent.futures.Future`
//! (the callable run on Python's own threads, or its coroutine on the caller's event loop). A Python
//! exception in a tool becomes an error result the model sees. Knows nothing of the hub.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use pyo3::prelude::*;
use serde_json::Value;

use mcpmux::policy::{Approval, ApprovalRequest};
use mcpmux::{
    Approver, Builtin, CallOptions, Error, SourceKind, Tool, ToolAnnotations, ToolResult,
    ToolSource, error_result,
};

use crate::callback::{CallbackError, call_python};
use crate::convert;
use crate::result;

/// A custom tool source written in Python.
pub(crate) struct PySource {
    name: String,
    bridge: Arc<Py<PyAny>>,
}

impl PySource {
    /// Wraps the package's bridge around a handler (it has `name`, `list_tools`, `call_tool`).
    pub(crate) fn new(bridge: &Bound<'_, PyAny>) -> PyResult<Self> {
        Ok(PySource {
            name: bridge.getattr("name")?.extract()?,
            bridge: Arc::new(bridge.clone().unbind()),
        })
    }
}

impl ToolSource for PySource {
    fn name(&self) -> &str {
        &self.name
    }

    fn kind(&self) -> SourceKind {
        SourceKind::Custom
    }

    fn tools(&self) -> BoxFuture<'_, mcpmux::Result<Vec<Tool>>> {
        let bridge = self.bridge.clone();
        let source = self.name.clone();
        Box::pin(async move {
            let listed = call_python(
                move |py| bridge.bind(py).call_method0("list_tools"),
                convert::to_json,
            )
            .await;
            let fail = |message: String| Error::Connect {
                server: source.clone(),
                message,
                stderr_tail: Vec::new(),
                source: None,
            };
            let listed = match listed {
                Ok(listed) => listed,
                Err(CallbackError::Raised(raised)) => {
                    return Err(Error::Connect {
                        server: source.clone(),
                        message: format!(
                            "the Python tool source's list_tools raised {raised}; \
                             fix what it reaches (or catch the error and return []), \
                             then start the hub again"
                        ),
                        stderr_tail: Vec::new(),
                        source: Some(Box::new(raised)),
                    });
                }
                Err(other) => return Err(fail(format!("list_tools gave no answer: {other}"))),
            };
            let Value::Array(entries) = listed else {
                return Err(fail(
                    "list_tools must return a list of tool dicts".to_owned(),
                ));
            };
            entries
                .into_iter()
                .map(|entry| tool_from_json(entry, &source).map_err(fail))
                .collect()
        })
    }

    fn call<'a>(
        &'a self,
        name: &'a str,
        arguments: Value,
        options: &'a CallOptions,
    ) -> BoxFuture<'a, mcpmux::Result<ToolResult>> {
        let bridge = self.bridge.clone();
        let tool = name.to_owned();
        let call = async move {
            let answered = call_python(
                move |py| {
                    let arguments = convert::to_py(py, &arguments)?;
                    bridge
                        .bind(py)
                        .call_method1("call_tool", (tool.as_str(), arguments))
                },
                result::from_python,
            )
            .await;
            answered.unwrap_or_else(|e| error_result(format!("tool `{name}` failed: {e}")))
        };
        Box::pin(options.run_local(&self.name, name, call))
    }
}

/// A tool record from what `list_tools` gave: `name`, and optionally `description`, `title`,
/// `input_schema` (or `inputSchema`), `output_schema`, `annotations` (MCP hint names).
fn tool_from_json(entry: Value, source: &str) -> Result<Tool, String> {
    let Value::Object(mut map) = entry else {
        return Err("each tool listed must be a dict with at least a `name`".to_owned());
    };
    let Some(Value::String(name)) = map.remove("name") else {
        return Err("a tool listed has no string `name`".to_owned());
    };
    let schema = map
        .remove("input_schema")
        .or_else(|| map.remove("inputSchema"))
        .filter(|s| !s.is_null())
        .unwrap_or_else(|| serde_json::json!({"type": "object", "properties": {}}));
    if !schema.is_object() {
        return Err(format!(
            "tool `{name}`: its input schema must be a JSON object"
        ));
    }
    let mut tool = Tool::local(name, schema).with_source(source);
    if let Some(Value::String(d)) = map.remove("description") {
        tool = tool.with_description(d);
    }
    if let Some(Value::String(t)) = map.remove("title") {
        tool = tool.with_title(t);
    }
    if let Some(s) = map
        .remove("output_schema")
        .or_else(|| map.remove("outputSchema"))
        .filter(Value::is_object)
    {
        tool = tool.with_output_schema(s);
    }
    if let Some(a) = map.remove("annotations") {
        tool = tool.with_annotations(annotations(&a));
    }
    Ok(tool)
}

/// MCP's hint names (`readOnlyHint`, or `read_only_hint`) as [`ToolAnnotations`].
fn annotations(value: &Value) -> ToolAnnotations {
    let hint = |camel: &str, snake: &str| {
        value
            .get(camel)
            .or_else(|| value.get(snake))
            .and_then(Value::as_bool)
    };
    let mut a = ToolAnnotations::default();
    a.read_only_hint = hint("readOnlyHint", "read_only_hint");
    a.destructive_hint = hint("destructiveHint", "destructive_hint");
    a.idempotent_hint = hint("idempotentHint", "idempotent_hint");
    a.open_world_hint = hint("openWorldHint", "open_world_hint");
    a
}

/// A Python function as a built-in tool: the bridge has `name`, `description`, `input_schema`,
/// `annotations` and `call(arguments)`. Custom sources of the same name override it.
pub(crate) fn builtin(bridge: &Bound<'_, PyAny>) -> PyResult<Builtin> {
    let name: String = bridge.getattr("name")?.extract()?;
    let description: String = bridge.getattr("description")?.extract()?;
    let schema = convert::to_json(&bridge.getattr("input_schema")?)?;
    let hints = convert::to_json(&bridge.getattr("annotations")?)?;
    let bridge = Arc::new(bridge.clone().unbind());
    let tool = name.clone();
    let run = move |arguments: Value| {
        let bridge = bridge.clone();
        let tool = tool.clone();
        async move {
            let answered = call_python(
                move |py| {
                    let arguments = convert::to_py(py, &arguments)?;
                    bridge.bind(py).call_method1("call", (arguments,))
                },
                result::from_python,
            )
            .await;
            answered.unwrap_or_else(|e| error_result(format!("tool `{tool}` failed: {e}")))
        }
    };
    Ok(Builtin::new::<Value, _, _, _>(name, description, run)
        .with_input_schema(schema)
        .with_annotations(annotations(&hints)))
}

/// A Python approver for calls matching an `ask` rule: the bridge's
/// `approve(tool, arguments, rule)` answers `(approved, reason)`.
pub(crate) struct PyApprover {
    bridge: Arc<Py<PyAny>>,
}

impl PyApprover {
    /// Wraps the package's approver bridge.
    pub(crate) fn new(bridge: &Bound<'_, PyAny>) -> Self {
        PyApprover {
            bridge: Arc::new(bridge.clone().unbind()),
        }
    }
}

/// How long a Python approver may think before the call is refused.
const APPROVAL_TIMEOUT: Duration = Duration::from_secs(600);

impl Approver for PyApprover {
    fn approve(&self, request: ApprovalRequest) -> BoxFuture<'_, Approval> {
        let bridge = self.bridge.clone();
        Box::pin(async move {
            let asked = call_python(
                move |py| {
                    let arguments = convert::to_py(py, &request.arguments)?;
                    bridge.bind(py).call_method1(
                        "approve",
                        (request.tool.name.as_str(), arguments, request.rule.as_str()),
                    )
                },
                |out| out.extract::<(bool, Option<String>)>(),
            );
            match tokio::time::timeout(APPROVAL_TIMEOUT, asked).await {
                Ok(Ok((true, _))) => Approval::Approve,
                Ok(Ok((false, reason))) => Approval::Deny { reason },
                Ok(Err(e)) => Approval::Deny {
                    reason: Some(format!("the approver failed: {e}")),
                },
                Err(_) => Approval::Deny {
                    reason: Some("the approver did not answer in time".to_owned()),
                },
            }
        })
    }
}
