//! Resources, resource templates, prompts and completions as Python asks for them: one request
//! (`op` and its parameters, read with the GIL) run on the hub without it, its answer plain
//! JSON made into Python on the caller's thread (the resource notices are an `EventStream`,
//! events.rs). Every behaviour is
//! the library's (`Hub::resources`, `read_resource_with`, `get_prompt_with`, `complete`,
//! `subscribe_resource` …); this file only carries requests across.

use std::collections::HashMap;
use std::time::Duration;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use serde::Serialize;
use serde_json::{Map, Value, json};

use mcpmux::{CallOptions, CompletionRef, Hub, Listing};

use crate::awaitable;
use crate::convert;
use crate::errors::Failure;

/// One request about resources, prompts or completions.
pub(crate) enum Ask {
    Resources(Option<String>),
    Templates(Option<String>),
    Read {
        server: Option<String>,
        uri: String,
        options: CallOptions,
    },
    Prompts(Option<String>),
    /// A prompt by its server's name for it (with `server`), or by the name it is served
    /// under beside the tools (`mcp__SERVER__PROMPT`, without).
    Prompt {
        server: Option<String>,
        name: String,
        arguments: Map<String, Value>,
        options: CallOptions,
    },
    Complete {
        server: String,
        reference: CompletionRef,
        argument: String,
        value: String,
        context: HashMap<String, String>,
    },
    Subscribe {
        server: Option<String>,
        uri: String,
        on: bool,
    },
}

fn text(params: &Bound<'_, PyDict>, key: &str) -> PyResult<Option<String>> {
    match params.get_item(key)? {
        Some(v) if !v.is_none() => Ok(Some(v.extract()?)),
        _ => Ok(None),
    }
}

fn required(params: &Bound<'_, PyDict>, key: &str) -> PyResult<String> {
    text(params, key)?.ok_or_else(|| PyValueError::new_err(format!("`{key}` is required")))
}

/// The call options of a read or a prompt: `timeout` (seconds).
fn options(params: &Bound<'_, PyDict>) -> PyResult<CallOptions> {
    let mut options = CallOptions::default();
    if let Some(t) = params.get_item("timeout")?.filter(|v| !v.is_none()) {
        let after = Duration::try_from_secs_f64(t.extract()?)
            .map_err(|e| PyValueError::new_err(format!("timeout: {e}")))?;
        options = options.with_timeout(after);
    }
    Ok(options)
}

impl Ask {
    /// `op` (`resources`, `templates`, `read`, `prompts`, `prompt`, `complete`, `subscribe`,
    /// `unsubscribe`) with its parameters.
    pub(crate) fn read(op: &str, params: &Bound<'_, PyDict>) -> PyResult<Self> {
        let server = text(params, "server")?;
        Ok(match op {
            "resources" => Ask::Resources(server),
            "templates" => Ask::Templates(server),
            "prompts" => Ask::Prompts(server),
            "read" => Ask::Read {
                server,
                uri: required(params, "uri")?,
                options: options(params)?,
            },
            "prompt" => Ask::Prompt {
                server,
                name: required(params, "name")?,
                arguments: match params.get_item("arguments")?.filter(|v| !v.is_none()) {
                    None => Map::new(),
                    Some(a) => match convert::to_json(&a)? {
                        Value::Object(map) => map,
                        _ => return Err(PyValueError::new_err("prompt arguments must be a dict")),
                    },
                },
                options: options(params)?,
            },
            "complete" => Ask::Complete {
                server: required(params, "server")?,
                reference: match (text(params, "prompt")?, text(params, "template")?) {
                    (Some(name), None) => CompletionRef::Prompt { name },
                    (None, Some(uri)) => CompletionRef::Resource { uri },
                    _ => {
                        return Err(PyValueError::new_err(
                            "complete the argument of one prompt or of one resource template",
                        ));
                    }
                },
                argument: required(params, "argument")?,
                value: text(params, "value")?.unwrap_or_default(),
                context: match params.get_item("context")?.filter(|v| !v.is_none()) {
                    None => HashMap::new(),
                    Some(c) => c.extract()?,
                },
            },
            "subscribe" | "unsubscribe" => Ask::Subscribe {
                server,
                uri: required(params, "uri")?,
                on: op == "subscribe",
            },
            other => return Err(PyValueError::new_err(format!("unknown request `{other}`"))),
        })
    }

    /// Asks `hub`; the answer as JSON.
    pub(crate) async fn run(self, hub: Hub) -> Result<Value, Failure> {
        match self {
            Ask::Resources(server) => listing(hub.resources(server.as_deref()).await?),
            Ask::Templates(server) => listing(hub.resource_templates(server.as_deref()).await?),
            Ask::Prompts(server) => listing(hub.prompts(server.as_deref()).await?),
            Ask::Read {
                server,
                uri,
                options,
            } => json_of(
                &hub.read_resource_with(server.as_deref(), &uri, options)
                    .await?,
            ),
            Ask::Prompt {
                server,
                name,
                arguments,
                options,
            } => {
                let (server, name) = match server {
                    Some(server) => (server, name),
                    None => match hub.prompt_named(&name).await? {
                        Some(prompt) => (prompt.server, prompt.name),
                        None => {
                            return Err(Failure::New {
                                class: "McpmuxError",
                                kind: "unknown_prompt",
                                message: format!(
                                    "no server lists a prompt served as `{name}`: see prompts()"
                                ),
                            });
                        }
                    },
                };
                let filled = hub
                    .get_prompt_with(&server, &name, arguments, options)
                    .await?;
                let mut answer = json_of(&filled)?;
                answer["server"] = json!(server);
                Ok(answer)
            }
            Ask::Complete {
                server,
                reference,
                argument,
                value,
                context,
            } => json_of(
                &hub.complete(&server, &reference, &argument, &value, context)
                    .await?,
            ),
            Ask::Subscribe { server, uri, on } => {
                let server = match server {
                    Some(server) => server,
                    None => hub.resource_owner(&uri).await?,
                };
                if on {
                    hub.subscribe_resource(&server, &uri).await?;
                } else {
                    hub.unsubscribe_resource(&server, &uri).await?;
                }
                Ok(json!({"server": server, "uri": uri}))
            }
        }
    }
}

fn json_of<T: Serialize>(value: &T) -> Result<Value, Failure> {
    serde_json::to_value(value).map_err(|e| {
        Failure::Python(PyValueError::new_err(format!(
            "could not convert an answer: {e}"
        )))
    })
}

/// A listing over servers: `{"items": [...], "errors": [message, ...]}`.
fn listing<T: Serialize>(listing: Listing<T>) -> Result<Value, Failure> {
    let errors: Vec<String> = listing.errors.iter().map(ToString::to_string).collect();
    Ok(json!({"items": json_of(&listing.items)?, "errors": errors}))
}

/// `op` asked of `hub`: awaitable on the running loop, or answered with the GIL released
/// when `blocking`.
pub(crate) fn ask<'py>(
    py: Python<'py>,
    hub: Hub,
    op: &str,
    params: &Bound<'py, PyDict>,
    blocking: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let asked = Ask::read(op, params)?;
    awaitable::awaitable_or_blocking(py, blocking, asked.run(hub), |py, answer| {
        Ok(convert::to_py(py, &answer)?.unbind())
    })
}
