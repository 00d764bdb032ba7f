//! One call through the hub: the exact lookup of the exposed name, scope, policy, argument
//! validation, the call itself (a server's connection or a local tool), then the checks and
//! the cut of its result. A task-augmented call (`Hub::call_task`) takes the same path.
//! Routing is a lookup, never a parse of the name.
//!
//! And the seam every call crosses ([`Hub::carry`]): a tool call (plain or task-augmented, to
//! a server or a local tool), a resource read, a prompt, a completion all start and end
//! there, whichever path carries them, with what an observer names a call by ([`Work`],
//! [`Site`]) and how it ended ([`Ended`]).

use std::sync::Arc;

use serde_json::Value;

use super::Hub;
use crate::call_options::CallOptions;
use crate::catalog::Tool;
use crate::catalog::merge::ToolOrigin;
use crate::config::ServerSpec;
use crate::connection::{CallKind, Trip};
use crate::defaults;
use crate::error::{Error, Result};
use crate::policy::SideEffects;
use crate::result::{self, ToolResult};
use crate::schema;
use crate::state::{Era, ServerState};
use crate::task::TaskCall;
use crate::telemetry::CallProbe;
use tracing::Instrument;

/// A call's arguments from the hub's entry to the wire (rmcp's `JsonObject`).
type JsonObject = serde_json::Map<String, Value>;

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
        match self
            .call_tool(name, arguments, options, CallKind::Plain)
            .await?
        {
            TaskCall::Completed(result) => Ok(result),
            // The connection takes a task only from a call that declared the extension.
            TaskCall::Started(task) => Err(Error::Protocol {
                server: task.server,
                message: format!("answered `{name}` with a task the call did not ask for"),
                source: None,
            }),
        }
    }

    /// One tool call of `kind` through the seam ([`Hub::carry`]).
    pub(super) async fn call_tool(
        &self,
        name: &str,
        arguments: Value,
        options: CallOptions,
        kind: CallKind,
    ) -> Result<TaskCall> {
        self.carry(Work::Tool(name), |mut site| async move {
            let result = self
                .route_tool(name, arguments, options, kind, &mut site)
                .await;
            (result, site)
        })
        .await
    }

    /// The way of one tool call: lookup, scope, policy, validation, the call (a server's
    /// connection, or a local tool), the checks and the cut. `site` learns where it went.
    async fn route_tool(
        &self,
        name: &str,
        arguments: Value,
        options: CallOptions,
        kind: CallKind,
        site: &mut Site,
    ) -> Result<TaskCall> {
        // The one conversion: an object from here to the wire.
        let arguments: JsonObject = match arguments {
            Value::Object(map) => map,
            Value::Null => JsonObject::new(),
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
        match &server {
            Some(server) => site.spec = Some(server.spec.clone()),
            None => site.local = true,
        }

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
            .prepare(
                tool,
                catalog.attached(&tool.name).map(|compiled| {
                    compiled.get_or_init(|| {
                        inner
                            .validators
                            .input(&tool.server, &tool.raw_name, &tool.input_schema)
                    })
                }),
                arguments,
            )
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

        if site.watched {
            site.bytes_out = Some(crate::telemetry::json_size(&arguments));
        }
        let (result, max_bytes) = match &server {
            Some(server) => {
                let call = server.connection.call(
                    &tool.raw_name,
                    arguments,
                    is_safe(tool),
                    &options,
                    kind,
                    &mut site.trip,
                );
                match call.await.map_err(|e| server.explain(e))? {
                    TaskCall::Completed(result) => (result, server.spec.options.max_result_bytes),
                    started @ TaskCall::Started(_) => return Ok(started),
                }
            }
            None => {
                let Some(resolved) = inner.registry.resolve(&tool.name) else {
                    return Err(Error::UnknownTool {
                        name: name.to_string(),
                        suggestion: None,
                    });
                };
                // A local tool takes a `Value` (its public face): the map moved in, not copied.
                (
                    resolved.call(Value::Object(arguments), &options).await?,
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
        if self.catalog().get_with_origin(name).is_none() {
            // Not a tool of the server its prefix names: the cached lists, read only now,
            // may say whose it is.
            let named = {
                let table = self.inner.table();
                super::tools::read_caches(&table);
                self.catalog()
                    .get_with_origin(name)
                    .and_then(|(tool, _)| table.server(&tool.server).cloned())
            };
            if let Some(server) = named
                && self.wait_for(&server.connection, deadline).await.is_err()
            {
                return Err(self.still_starting(&server, options));
            }
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

/// What a call asks, as the seam names it.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Work<'a> {
    /// `tools/call` of the tool exposed as this name.
    Tool(&'a str),
    /// `resources/read` of this URI.
    Read(&'a str),
    /// `prompts/get` of this prompt.
    Prompt(&'a str),
    /// `completion/complete` of this argument.
    Complete(&'a str),
}

impl<'a> Work<'a> {
    /// Its kind, as spans and observers name it.
    pub(crate) fn kind(self) -> crate::telemetry::CallKind {
        use crate::telemetry::CallKind as Kind;
        match self {
            Work::Tool(_) => Kind::Tool,
            Work::Read(_) => Kind::Read,
            Work::Prompt(_) => Kind::Prompt,
            Work::Complete(_) => Kind::Complete,
        }
    }

    /// What it names: the tool, the URI, the prompt or the argument.
    pub(crate) fn target(self) -> &'a str {
        match self {
            Work::Tool(name) | Work::Read(name) | Work::Prompt(name) | Work::Complete(name) => name,
        }
    }
}

/// Where a call went, learnt on its way (a tool's server is known only once its name is
/// looked up): what an observer names a call by besides its [`Work`].
#[derive(Debug, Default)]
pub(crate) struct Site {
    /// The server that carried it; `None` for a local tool, or a call refused before a
    /// server was chosen.
    pub(crate) spec: Option<Arc<ServerSpec>>,
    /// A local tool ran it.
    pub(crate) local: bool,
    /// The attempts it took and the era of the session that answered.
    pub(crate) trip: Trip,
    /// Someone looks at the call (a span is taken or an observer is there): worth counting
    /// what it sends.
    pub(crate) watched: bool,
    /// The size of the arguments sent, counted when watched.
    pub(crate) bytes_out: Option<usize>,
}

impl Site {
    /// The server's name, if a server carried it.
    pub(crate) fn server(&self) -> Option<&str> {
        self.spec.as_deref().map(|spec| spec.name.as_str())
    }

    /// How it was carried: the transport's short name (`stdio`, `http`, `sse`, `ws`,
    /// `inproc`), `local` for a local tool, `none` when refused before either.
    pub(crate) fn transport(&self) -> &'static str {
        match (&self.spec, self.local) {
            (Some(spec), _) => spec.transport.kind(),
            (None, true) => "local",
            (None, false) => "none",
        }
    }

    /// The era of the session that answered, if one was reached.
    pub(crate) fn era(&self) -> Option<Era> {
        self.trip.era
    }
}

impl Hub {
    /// The seam: every call a caller makes through the hub starts and ends here — a tool
    /// call, plain or task-augmented, to a server or a local tool ([`Hub::call_tool`]), a
    /// resource read, a prompt, a completion (`hub/resources.rs`) — whichever path carries
    /// it. `body` routes and carries it inside the call's span (what it sends to a server
    /// carries that span's trace context), and says where it went ([`Site`]: server,
    /// transport, era, attempts, bytes). The span and the observers (`telemetry::CallProbe`)
    /// hang here, and only here. With nobody looking: a disabled-span check and an atomic
    /// load; no clock read, allocation, lock or task.
    pub(crate) async fn carry<T: Answer, F>(
        &self,
        work: Work<'_>,
        body: impl FnOnce(Site) -> F,
    ) -> Result<T>
    where
        F: Future<Output = (Result<T>, Site)>,
    {
        let mut probe = CallProbe::start(&self.inner.observers, work.kind(), work.target());
        let site = Site {
            watched: probe.wanted(),
            ..Site::default()
        };
        let span = probe.span().clone();
        let (result, site) = body(site).instrument(span).await;
        probe.carried(
            site.server(),
            site.transport(),
            site.era(),
            site.trip.attempts,
            site.bytes_out,
        );
        T::finish(probe, &result);
        result
    }
}

/// What a call answers, as its probe reads it: a tool's result may be an error the tool
/// reported (`isError`), anything else succeeded when it arrived.
pub(crate) trait Answer: Sized {
    /// Ends `probe` with `result`.
    fn finish(probe: CallProbe<'_>, result: &Result<Self>);
}

impl Answer for TaskCall {
    fn finish(probe: CallProbe<'_>, result: &Result<Self>) {
        probe.finish_tool(result);
    }
}

impl Answer for Vec<crate::listings::ResourceContents> {
    fn finish(probe: CallProbe<'_>, result: &Result<Self>) {
        probe.finish(result);
    }
}

impl Answer for crate::listings::PromptMessages {
    fn finish(probe: CallProbe<'_>, result: &Result<Self>) {
        probe.finish(result);
    }
}

impl Answer for crate::listings::Completion {
    fn finish(probe: CallProbe<'_>, result: &Result<Self>) {
        probe.finish(result);
    }
}
