//! One call through the hub: the exact lookup of the exposed name, scope, policy, argument
//! validation, the call itself (a server's connection or a local tool), then the checks and
//! the cut of its result. A task-augmented call (`Hub::call_task`) takes the same path.
//! Routing is a lookup, never a parse of the name.

use serde_json::Value;

use super::Hub;
use crate::call::CallOptions;
use crate::catalog::Tool;
use crate::catalog::merge::ToolOrigin;
use crate::defaults;
use crate::error::{Error, Result};
use crate::policy::SideEffects;
use crate::result::{self, ToolResult};
use crate::schema;
use crate::state::ServerState;
use crate::task::TaskCall;
use crate::telemetry::CallProbe;

impl Hub {
    /// Calls the tool exposed as `name` with JSON `arguments` (an object, or null for none).
    pub async fn call(&self, name: &str, arguments: Value) -> Result<ToolResult> {
        self.call_with(name, arguments, CallOptions::default())
            .await
    }

    /// [`Hub::call`] with a deadline, progress or cancellation.
    pub async fn call_with(
        &self,
        name: &str,
        arguments: Value,
        options: CallOptions,
    ) -> Result<ToolResult> {
        match self.call_as(name, arguments, options, false).await? {
            TaskCall::Completed(result) => Ok(result),
            // The connection takes a task only from a call that declared the extension.
            TaskCall::Started(task) => Err(Error::Protocol {
                server: task.server,
                message: format!("answered `{name}` with a task the call did not ask for"),
            }),
        }
    }

    /// One call, declaring the Tasks extension when `as_task` (the server may then answer
    /// with a task): lookup, scope, policy, validation, the call, the checks and the cut.
    /// Watched by `probe` (`Hub::call_as`, hub/observe.rs, starts and ends it).
    pub(super) async fn route_call(
        &self,
        name: &str,
        arguments: Value,
        options: CallOptions,
        as_task: bool,
        probe: &mut CallProbe<'_>,
    ) -> Result<TaskCall> {
        let arguments = match arguments {
            Value::Object(map) => Some(map),
            Value::Null => None,
            other => {
                return Err(Error::InvalidArguments {
                    tool: name.to_string(),
                    message: format!("arguments must be a JSON object, got {}", json_kind(&other)),
                });
            }
        };
        // Borrowed from the catalog snapshot: no per-call copy of the tool and its schemas.
        let catalog = self.catalog();
        let looked_up;
        let (tool, origin) = match catalog.get_with_origin(name) {
            Some(found) if !found.0.cached => found,
            // A cached tool is called as its server lists it now: the server may no longer
            // have it, or take other arguments.
            Some((tool, _)) => {
                looked_up = self
                    .lookup_after_startup(name, Some(&tool.server), &options)
                    .await?;
                (&looked_up.0, &looked_up.1)
            }
            None => {
                looked_up = self.lookup_after_startup(name, None, &options).await?;
                (&looked_up.0, &looked_up.1)
            }
        };
        let inner = &self.inner;
        // Held to the end of the call: a reload that takes the server away lets it finish.
        let (server, policy) = {
            let table = inner.table();
            let server = match &origin {
                ToolOrigin::Mcp { server } => table.server(server).cloned(),
                _ => None,
            };
            (
                server,
                (!table.policy.is_allow_all()).then(|| table.policy.clone()),
            )
        };
        super::observe::routed(probe, &tool.server, server.as_deref());
        let arguments = Value::Object(arguments.unwrap_or_default());

        // Scope: what `tools_for` leaves out cannot be called by name either.
        if let (Some(scope), Some(server)) = (&options.scope, &server) {
            let spec = &server.spec;
            if let Some(reason) = scope.refuses(&spec.options) {
                return Err(Error::OutOfScope {
                    tool: tool.name.clone(),
                    server: spec.name.clone(),
                    scope: scope.to_string(),
                    reason,
                });
            }
        }

        // Policy: a denied call never reaches the server.
        if let Some(policy) = policy {
            let effects = match &server {
                Some(server) => server.effects.effects_of(tool),
                None => SideEffects::from_annotations(&tool.annotations),
            };
            policy
                .enforce(
                    tool,
                    effects,
                    &arguments,
                    options
                        .approver
                        .as_deref()
                        .unwrap_or(inner.approver.as_ref()),
                )
                .await
                .map_err(Error::Denied)?;
        }
        // Validation: the server never sees arguments its own schema rejects.
        let arguments = inner
            .validators
            .prepare(tool, catalog.attached(&tool.name), arguments)
            .map_err(|refusal| match refusal {
                schema::CallRefusal::Arguments(problems) => Error::InvalidArguments {
                    tool: tool.name.clone(),
                    message: schema::validate::describe(&problems),
                },
                schema::CallRefusal::Unusable(reason) => Error::UnusableTool {
                    tool: tool.name.clone(),
                    reason,
                },
            })?;

        probe.sending(&arguments);
        let (result, max_bytes) = match &server {
            Some(server) => {
                let Value::Object(map) = arguments else {
                    return Err(Error::InvalidArguments {
                        tool: tool.name.clone(),
                        message: "arguments must be a JSON object".into(),
                    });
                };
                let connection = &server.connection;
                let result = if as_task {
                    let call =
                        connection.call_task(&tool.raw_name, Some(map), is_safe(tool), &options);
                    match call.await.map_err(|e| server.explain(e))? {
                        TaskCall::Completed(result) => result,
                        started @ TaskCall::Started(_) => return Ok(started),
                    }
                } else {
                    connection
                        .call(&tool.raw_name, Some(map), is_safe(tool), &options)
                        .await
                        .map_err(|e| server.explain(e))?
                };
                (result, server.spec.options.max_result_bytes)
            }
            None => {
                let Some(resolved) = inner.registry.resolve(&tool.name) else {
                    return Err(Error::UnknownTool {
                        name: name.to_string(),
                        suggestion: None,
                    });
                };
                (
                    resolved.call(arguments, &options).await?,
                    defaults::MAX_RESULT_BYTES,
                )
            }
        };
        let mut result = result;
        let limit = schema::budget::MAX_RESULT_DEPTH;
        if result
            .structured_content
            .as_ref()
            .is_some_and(|v| schema::budget::depth_exceeds(v, limit))
        {
            // Only an in-process source can get here (the wire stops at serde_json's limit).
            if let Some(deep) = result.structured_content.take() {
                schema::budget::dispose(deep);
            }
            tracing::warn!(tool = %tool.name, "structuredContent nested deeper than {limit} levels was dropped");
            result.output_problems.push(format!(
                "structuredContent dropped: nested deeper than {limit} levels"
            ));
        }
        if let Some(structured) = &result.structured_content {
            let problems = schema::check_output(&inner.validators, tool, structured);
            if !problems.is_empty() {
                tracing::warn!(
                    tool = %tool.name,
                    "structuredContent does not match the tool's outputSchema: {}",
                    schema::validate::describe(&problems)
                );
                result.output_problems = problems.iter().map(ToString::to_string).collect();
            }
        }
        Ok(TaskCall::Completed(
            result::truncate(result, max_bytes, &tool.name, Some(&inner.spill)).result,
        ))
    }

    /// Starts, without waiting, the server a call to `name` would go to (the one its tools
    /// are listed under, else the one its prefix names): a harness, or the CLI reading a
    /// call's arguments, lets a lazy server start meanwhile. Does nothing for a name no server
    /// explains or a server already started.
    pub fn prepare(&self, name: &str) {
        let catalog = self.catalog();
        let table = self.inner.table();
        let server = match catalog.get_with_origin(name) {
            Some((_, ToolOrigin::Mcp { server })) => table.server(server),
            Some(_) => None,
            None => table.owner_by_prefix(name),
        };
        if let Some(server) = server {
            server.connection.ensure_started();
        }
    }

    /// A name not found, or found only in the tool cache, may belong to a server that is
    /// still starting, or a lazy one not started yet: start and wait for its server (`server`
    /// when known, else the one its prefix names) within the call's deadline, and look again;
    /// a name no prefix explains, or one the named server turns out not to have, waits for
    /// every server.
    async fn lookup_after_startup(
        &self,
        name: &str,
        server: Option<&str>,
        options: &CallOptions,
    ) -> Result<(Tool, ToolOrigin)> {
        let deadline =
            tokio::time::Instant::now() + options.timeout.unwrap_or(defaults::CALL_TIMEOUT);
        let owner = {
            let table = self.inner.table();
            match server {
                Some(server) => table.server(server).cloned(),
                None => table.owner_by_prefix(name).cloned(),
            }
        };
        if let Some(server) = &owner
            && self.wait_for(&server.connection, deadline).await.is_err()
        {
            return Err(self.still_starting(server, options));
        }
        let connections: Vec<_> = self.inner.table().connections().cloned().collect();
        if self.catalog().get_with_origin(name).is_none()
            && connections.iter().any(|c| c.is_idle() || is_starting(c))
        {
            for connection in &connections {
                connection.ensure_started();
            }
            for connection in &connections {
                if self.wait_for(connection, deadline).await.is_err() {
                    // Still starting when the call's deadline ran out: say so, not "no such
                    // tool".
                    if let Some(server) = owner.as_ref().filter(|s| is_starting(&s.connection)) {
                        return Err(self.still_starting(server, options));
                    }
                    break;
                }
            }
        }
        let catalog = self.catalog();
        match catalog.get_with_origin(name) {
            Some((tool, origin)) if !tool.cached => Ok((tool.clone(), origin.clone())),
            found => {
                // A known server that is down deserves a better answer than "no such tool".
                let table = self.inner.table();
                let owner = match found {
                    Some((tool, _)) => table.server(&tool.server),
                    None => table.owner_by_prefix(name),
                };
                if let Some(server) = owner {
                    let state = server.connection.state();
                    if !matches!(state, ServerState::Connected { .. }) {
                        return Err(server.connection.unavailable(state));
                    }
                }
                Err(Error::UnknownTool {
                    name: name.to_string(),
                    suggestion: catalog.suggest(name),
                })
            }
        }
    }
}

impl Hub {
    /// Starts `connection` if idle and waits until its first attempt settled, up to
    /// `deadline`.
    async fn wait_for(
        &self,
        connection: &crate::connection::Connection,
        deadline: tokio::time::Instant,
    ) -> std::result::Result<(), tokio::time::error::Elapsed> {
        tokio::time::timeout_at(deadline, connection.started()).await
    }

    fn still_starting(&self, server: &super::Server, options: &CallOptions) -> Error {
        Error::Timeout {
            server: server.spec.name.clone(),
            what: "waiting for the server to start".into(),
            after: options.timeout.unwrap_or(defaults::CALL_TIMEOUT),
        }
    }
}

/// Whether the server is making its first connection attempt.
fn is_starting(connection: &crate::connection::Connection) -> bool {
    matches!(
        connection.state(),
        ServerState::Pending {
            attempt: 1,
            last_error: None,
            ..
        }
    )
}

/// A tool whose call may be sent again after a lost connection: the server says it is
/// read-only or idempotent.
fn is_safe(tool: &Tool) -> bool {
    tool.annotations.read_only_hint == Some(true) || tool.annotations.idempotent_hint == Some(true)
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
