//! One `tools/call` served: through the hub with the downstream request's cancellation,
//! progress and caller (who answers what the upstream asks mid-call, and approves a policy
//! `ask`); a 2026-07-28 client's in rounds of `input_required`; made as a task when the
//! client declared the Tasks extension. Counted in flight and in the metrics.

use std::borrow::Cow;
use std::pin::pin;
use std::sync::Arc;

use rmcp::{
    ErrorData, RoleServer,
    model::{CallToolRequestParams, CallToolResponse, ProgressNotificationParam, ProgressToken},
    service::RequestContext,
};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{Gateway, InFlight};
use crate::convert;
use crate::relay::{Caller, ClientApproval, ClientRelay};
use crate::rounds::Call;

/// Whether a call is made as a task, and for whom: taken from the request that makes the call
/// (a call answered in rounds takes it from its first).
struct TaskAsk {
    wanted: bool,
    holder: crate::tasks::Holder,
}

impl TaskAsk {
    fn of(context: &RequestContext<RoleServer>) -> Self {
        TaskAsk {
            wanted: crate::tasks::wanted(context),
            holder: crate::tasks::Holder::of(context),
        }
    }
}

impl Gateway {
    /// One `tools/call`: through the hub, with the downstream request's cancellation and
    /// progress; a 2026-07-28 client's in rounds of `input_required` (`rounds`).
    pub(super) async fn call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        // What the upstream server asks during this call goes to this call's client, and a
        // policy `ask` is asked of it when it can answer.
        let caller = Caller::of(self.session.id, &context);
        if caller.is_stateless() {
            return self.call_in_rounds(request, context, caller).await;
        }
        if self.inner.closing.is_cancelled() {
            return Ok(convert::refusal("the gateway is shutting down; call again later").into());
        }
        let cancel = self.inner.abort.child_token();
        let token = context.meta.get_progress_token();
        let mut progress = None;
        let mut progress_tx = None;
        if token.is_some() {
            let (tx, rx) = mpsc::unbounded_channel();
            progress_tx = Some(tx);
            progress = Some(rx);
        }
        let task = TaskAsk::of(&context);
        let mut call = pin!(self.run(request, caller, task, cancel.clone(), progress_tx));
        let mut cancelled = false;
        let outcome = loop {
            tokio::select! {
                // Progress first: a step sent before the answer is passed on before it.
                biased;
                Some(step) = next(&mut progress) => {
                    forward_progress(&context, token.as_ref(), step).await;
                }
                // The downstream client cancelled: cancel upstream, then take the call's answer.
                () = context.ct.cancelled(), if !cancelled => {
                    cancelled = true;
                    cancel.cancel();
                }
                outcome = &mut call => break outcome,
            }
        };
        // Steps still queued when the answer came: they happened before it.
        if let Some(rx) = progress.as_mut() {
            while let Ok(step) = rx.try_recv() {
                forward_progress(&context, token.as_ref(), step).await;
            }
        }
        outcome
    }

    /// A 2026-07-28 client's `tools/call`: a new call run in a task of its own, or, with a
    /// `requestState`, the answers to a waiting call's last round; either way, what the call
    /// does next.
    async fn call_in_rounds(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
        caller: Caller,
    ) -> Result<CallToolResponse, ErrorData> {
        let rounds = &self.inner.rounds;
        let token = context.meta.get_progress_token();
        let call = match request.request_state.clone() {
            Some(state) => {
                let responses = request.input_responses.clone().unwrap_or_default();
                rounds.resume(&state, responses)?
            }
            None => {
                if self.inner.closing.is_cancelled() {
                    let refused = "the gateway is shutting down; call again later";
                    return Ok(convert::refusal(refused).into());
                }
                let gateway = self.clone();
                let cancel = self.inner.abort.child_token();
                let wants_progress = token.is_some();
                let task = TaskAsk::of(&context);
                Call::spawn(move |asks, progress| async move {
                    let progress = wants_progress.then_some(progress);
                    gateway
                        .run(request, caller.in_rounds(asks), task, cancel, progress)
                        .await
                })
            }
        };
        rounds.next(call, &context, token.as_ref()).await
    }

    /// The call itself, made for `caller`: through the hub, counted in flight and in the
    /// metrics, its outcome in MCP's words.
    async fn run(
        &self,
        request: CallToolRequestParams,
        caller: Caller,
        task: TaskAsk,
        cancel: CancellationToken,
        progress: Option<mpsc::UnboundedSender<mcpmux::Progress>>,
    ) -> Result<CallToolResponse, ErrorData> {
        let _in_flight = InFlight::enter(&self.inner);
        let arguments = request
            .arguments
            .map_or(serde_json::Value::Null, serde_json::Value::Object);
        let mut options = mcpmux::CallOptions::default()
            .with_cancel(cancel)
            .with_relay(Arc::new(ClientRelay(caller.clone())));
        if self.inner.options.ask_clients && caller.takes_forms() {
            options = options.with_approver(Arc::new(ClientApproval(caller)));
        }
        if let Some(scope) = &self.inner.options.scope {
            options = options.with_scope(scope.clone());
        }
        if let Some(progress) = progress {
            options = options.with_progress(progress);
        }
        let hub = &self.inner.hub;
        // In pass-through mode the name served is the server's own: the hub's is looked up.
        let name: Cow<'_, str> = if self.inner.options.passthrough {
            Cow::Owned(self.naming().hub_tool(&request.name, &self.served(), hub))
        } else {
            Cow::Borrowed(&request.name)
        };
        let started = std::time::Instant::now();
        let outcome = crate::tasks::call(hub, &name, arguments, options, task.wanted).await;
        let tool = hub.tool(&name);
        let failed = outcome.as_ref().map_or(true, mcpmux::TaskCall::is_error);
        self.inner.metrics.record(
            tool.as_ref().map(|t| (t.server.as_str(), t.name.as_str())),
            started.elapsed(),
            failed,
        );
        match outcome {
            Ok(mcpmux::TaskCall::Completed(result)) => Ok(convert::result(&result).into()),
            Ok(mcpmux::TaskCall::Started(started)) => {
                self.inner.tasks.started(hub, started, task.holder)
            }
            Err(error) => {
                tracing::debug!(tool = %request.name, %error, "call failed");
                convert::error(&error).map(Into::into)
            }
        }
    }
}

/// Sends one progress step to the downstream client under its progress token.
pub(crate) async fn forward_progress(
    context: &RequestContext<RoleServer>,
    token: Option<&ProgressToken>,
    step: mcpmux::Progress,
) {
    let Some(token) = token else {
        return;
    };
    let mut param = ProgressNotificationParam::new(token.clone(), step.progress);
    param.total = step.total;
    param.message = step.message;
    if let Err(error) = context.peer.notify_progress(param).await {
        tracing::debug!(%error, "progress not passed downstream");
    }
}

/// The next progress step, or never when the call has no progress channel.
async fn next(
    progress: &mut Option<mpsc::UnboundedReceiver<mcpmux::Progress>>,
) -> Option<mcpmux::Progress> {
    match progress {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}
