//! Where every call of the hub starts and ends (`telemetry::CallProbe`): a tool call
//! (`call_as`, under `call`, `call_with` and `call_task`), a resource read, a prompt get, a
//! completion; and the observers a harness adds (`Hub::observe`). The call itself is
//! `call.rs`'s and `resources.rs`'s; this file only wraps it.

use std::sync::Arc;

use serde_json::{Map, Value};
use tracing::Instrument;

use super::{Hub, Server};
use crate::call::CallOptions;
use crate::connection::Connection;
use crate::error::Result;
use crate::resources::{Completion, CompletionRef, PromptMessages, ResourceContents};
use crate::state::ServerState;
use crate::task::TaskCall;
use crate::telemetry::{CallKind, CallObserver, CallProbe};

impl Hub {
    /// Tells `observer` of every call this hub makes from now on, as it ends (its server,
    /// outcome, duration and sizes): the figures of the `mcpmux::call` spans, for a harness
    /// that does not use `tracing`.
    pub fn observe(&self, observer: Arc<dyn CallObserver>) {
        self.inner.observers.add(observer);
    }

    /// One tool call (see `route_call`), watched from start to end.
    pub(super) async fn call_as(
        &self,
        name: &str,
        arguments: Value,
        options: CallOptions,
        as_task: bool,
    ) -> Result<TaskCall> {
        let mut probe = CallProbe::start(&self.inner.observers, CallKind::Tool, name);
        let span = probe.span().clone();
        let outcome = self
            .route_call(name, arguments, options, as_task, &mut probe)
            .instrument(span)
            .await;
        probe.finish_tool(&outcome);
        outcome
    }

    /// A read of `uri` (see [`Hub::read_resource_with`]), watched from start to end.
    pub(super) async fn observed_read(
        &self,
        server: Option<&str>,
        uri: &str,
        options: CallOptions,
    ) -> Result<Vec<ResourceContents>> {
        let mut probe = CallProbe::start(&self.inner.observers, CallKind::Read, uri);
        let span = probe.span().clone();
        let read = async {
            let connection = match server {
                Some(name) => self.connection_named(name)?,
                None => self.owner_of(uri).await?,
            };
            routed_to(&mut probe, &connection);
            connection.read_resource(uri, &options).await
        };
        let outcome = read.instrument(span).await;
        probe.finish(&outcome);
        outcome
    }

    /// A prompt filled in (see [`Hub::get_prompt_with`]), watched from start to end.
    pub(super) async fn observed_prompt(
        &self,
        server: &str,
        name: &str,
        arguments: Map<String, Value>,
        options: CallOptions,
    ) -> Result<PromptMessages> {
        let mut probe = CallProbe::start(&self.inner.observers, CallKind::Prompt, name);
        let span = probe.span().clone();
        let get = async {
            let connection = self.connection_named(server)?;
            routed_to(&mut probe, &connection);
            connection.get_prompt(name, arguments, &options).await
        };
        let outcome = get.instrument(span).await;
        probe.finish(&outcome);
        outcome
    }

    /// A completion (see [`Hub::complete`]), watched from start to end.
    pub(super) async fn observed_complete(
        &self,
        server: &str,
        reference: &CompletionRef,
        argument: (&str, &str),
        context: std::collections::HashMap<String, String>,
    ) -> Result<Completion> {
        let mut probe = CallProbe::start(&self.inner.observers, CallKind::Complete, argument.0);
        let span = probe.span().clone();
        let complete = async {
            let connection = self.connection_named(server)?;
            routed_to(&mut probe, &connection);
            connection.complete(reference, argument, context).await
        };
        let outcome = complete.instrument(span).await;
        probe.finish(&outcome);
        outcome
    }
}

/// The call goes to `server` (named `name`; `None` for a local tool): its transport and era
/// told to the probe, computed only when someone looks.
pub(super) fn routed(probe: &mut CallProbe<'_>, name: &str, server: Option<&Server>) {
    if !probe.wanted() {
        return;
    }
    match server {
        Some(server) => routed_to(probe, &server.connection),
        None => probe.routed(name, None, None),
    }
}

fn routed_to(probe: &mut CallProbe<'_>, connection: &Connection) {
    if !probe.wanted() {
        return;
    }
    let era = match connection.state() {
        ServerState::Connected { era, .. } => Some(era),
        _ => None,
    };
    let spec = &connection.spec;
    probe.routed(&spec.name, Some(spec.transport.kind()), era);
}
