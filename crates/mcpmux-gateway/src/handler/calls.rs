//! The requests the gateway runs as calls through the hub: `tools/call`, `prompts/get` and
//! `resources/read`, each made for the client that sent it — what the upstream server asks
//! meanwhile goes to that client (`relay`), and a 2026-07-28 upstream server is told what that
//! client declared it can answer. A handshake-era client is asked through real requests; a
//! 2026-07-28 client's request runs in a task of its own and is answered in rounds of
//! `input_required` (`rounds`). A `tools/call` also has the downstream request's cancellation
//! and progress passed up, its progress passed down, a policy `ask` put to its client, is
//! made as a task when its client declared the Tasks extension, and is counted in the metrics. Owns the count of calls in flight a graceful shutdown waits for.
//! Knows nothing of HTTP or stdio.

use std::borrow::Cow;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use rmcp::{
    ErrorData, RoleServer,
    model::{
        CallToolRequestParams, CallToolResponse, GetPromptRequestParams, GetPromptResponse,
        InputRequiredResult, InputResponses, ReadResourceRequestParams, ReadResourceResponse,
    },
    service::RequestContext,
};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{Gateway, Inner};
use crate::progress::forward_progress;
use crate::{
    client_rounds::{Call, Rounds},
    failures,
    relay::{ClientApproval, ClientRelay, DownstreamClient},
};

/// Whether a call is made as a task, and for whom: taken from the request that makes the call
/// (a call answered in rounds takes it from its first).
struct TaskAsk {
    /// Whom a task is held for, when the client wants the call made as one (the holder's
    /// session key is a hash, not worth making for every plain call).
    holder: Option<crate::upstream_tasks::Holder>,
}

impl TaskAsk {
    fn of(context: &RequestContext<RoleServer>) -> Self {
        let wanted = crate::upstream_tasks::wanted(context);
        TaskAsk {
            holder: wanted.then(|| crate::upstream_tasks::Holder::of(context)),
        }
    }
}

/// What a refused new call is told once shutdown has begun.
const SHUTTING_DOWN: &str = "the gateway is shutting down; call again later";

impl Gateway {
    /// One `tools/call`: through the hub, with the downstream request's cancellation and
    /// progress; a 2026-07-28 client's in rounds of `input_required` (`rounds`).
    pub(super) async fn call(
        &self,
        mut request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        // What the upstream server asks during this call goes to this call's client, and a
        // policy `ask` is asked of it when it can answer.
        let caller = DownstreamClient::of(self.session.id, &context);
        if caller.is_stateless() {
            let resumed = resumed(&mut request.request_state, &mut request.input_responses);
            if resumed.is_none() && self.inner.closing.is_cancelled() {
                return Ok(failures::refusal(SHUTTING_DOWN).into());
            }
            let gateway = self.clone();
            let cancel = self.inner.abort.child_token();
            let rounds = self.inner.rounds.clone();
            let task = TaskAsk::of(&context);
            return self
                .in_rounds(
                    &rounds,
                    resumed,
                    caller,
                    &context,
                    move |caller, progress| async move {
                        gateway.run(request, caller, task, cancel, progress).await
                    },
                )
                .await;
        }
        if self.inner.closing.is_cancelled() {
            return Ok(failures::refusal(SHUTTING_DOWN).into());
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

    /// One `prompts/get` through the hub, made for its client; a 2026-07-28 client's in
    /// rounds of `input_required`.
    pub(super) async fn get_prompt_for(
        &self,
        mut request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let caller = DownstreamClient::of(self.session.id, &context);
        if !caller.is_stateless() {
            return self.fill(request, caller, None).await;
        }
        let resumed = resumed(&mut request.request_state, &mut request.input_responses);
        let gateway = self.clone();
        let rounds = self.inner.prompt_rounds.clone();
        self.in_rounds(
            &rounds,
            resumed,
            caller,
            &context,
            move |caller, progress| async move { gateway.fill(request, caller, progress).await },
        )
        .await
    }

    /// One `resources/read` through the hub, made for its client; a 2026-07-28 client's in
    /// rounds of `input_required`.
    pub(super) async fn read_for(
        &self,
        mut request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let caller = DownstreamClient::of(self.session.id, &context);
        if !caller.is_stateless() {
            return self.read(request, caller, None).await;
        }
        let resumed = resumed(&mut request.request_state, &mut request.input_responses);
        let gateway = self.clone();
        let rounds = self.inner.read_rounds.clone();
        self.in_rounds(
            &rounds,
            resumed,
            caller,
            &context,
            move |caller, progress| async move { gateway.read(request, caller, progress).await },
        )
        .await
    }

    /// A 2026-07-28 client's request: with a `requestState`, the answers to a waiting call's
    /// last round (`resumed`); else a new call, `run` in a task of its own for `caller`, asked
    /// in rounds. Either way, what the call does next: its answer, or its next round.
    async fn in_rounds<R, F>(
        &self,
        rounds: &Arc<Rounds<R>>,
        resumed: Option<(String, InputResponses)>,
        caller: DownstreamClient,
        context: &RequestContext<RoleServer>,
        run: impl FnOnce(DownstreamClient, Option<mpsc::UnboundedSender<mcpmux::Progress>>) -> F,
    ) -> Result<R, ErrorData>
    where
        R: From<InputRequiredResult> + Send + 'static,
        F: Future<Output = Result<R, ErrorData>> + Send + 'static,
    {
        let token = context.meta.get_progress_token();
        // Only the identity a call waits for may bring its answers.
        let owner = self.session.identity.client.to_string();
        let call = match resumed {
            Some((state, responses)) => rounds.resume(&state, responses, &owner)?,
            None => {
                let wants_progress = token.is_some();
                Call::spawn(move |asks, progress| {
                    run(caller.in_rounds(asks), wants_progress.then_some(progress))
                })
            }
        };
        rounds.next(call, context, token.as_ref(), &owner).await
    }

    /// The options of a call made for `caller`: its relay, its cancellation and progress, the
    /// answers it already holds.
    fn options_for(
        &self,
        caller: &DownstreamClient,
        cancel: CancellationToken,
        progress: Option<mpsc::UnboundedSender<mcpmux::Progress>>,
        input_responses: Option<InputResponses>,
    ) -> mcpmux::CallOptions {
        let mut options = mcpmux::CallOptions::default()
            .with_cancel(cancel)
            .with_relay(Arc::new(ClientRelay(caller.clone())));
        if let Some(progress) = progress {
            options = options.with_progress(progress);
        }
        if let Some(given) = input_responses.filter(|given| !given.is_empty()) {
            options = options.with_input_responses(given.into_iter().collect());
        }
        options
    }

    /// The call itself, made for `caller`: through the hub, counted in flight and in the
    /// metrics (by the hub), its outcome in MCP's words.
    async fn run(
        &self,
        mut request: CallToolRequestParams,
        caller: DownstreamClient,
        task: TaskAsk,
        cancel: CancellationToken,
        progress: Option<mpsc::UnboundedSender<mcpmux::Progress>>,
    ) -> Result<CallToolResponse, ErrorData> {
        let _in_flight = InFlight::enter(&self.inner);
        let arguments = request
            .arguments
            .take()
            .map_or(serde_json::Value::Null, serde_json::Value::Object);
        let given = request.input_responses.take();
        let mut options = self.options_for(&caller, cancel, progress, given);
        // A policy `ask` goes to the client only when this identity's route says so.
        let route = self.session.identity.ask_route(self.inner.options.ask);
        if self.inner.options.ask_clients
            && route == crate::access::AskRoute::Client
            && caller.takes_forms()
        {
            options = options.with_approver(Arc::new(ClientApproval(caller)));
        }
        // The library refuses a tool outside the scope: the view hands it the scope.
        options = self.view.call_options(options);
        let hub = &self.inner.hub;
        // In pass-through or short mode the name served is not the hub's: the hub's is looked up.
        let name: Cow<'_, str> = if self.naming().renames() {
            Cow::Owned(self.naming().hub_tool(&request.name, &self.served(), hub))
        } else {
            Cow::Borrowed(&request.name)
        };
        // access rule (identity): a tool it may not use is unknown to it.
        if !self.view.call_allowed(hub, &name) {
            return Err(ErrorData::invalid_params(
                format!("unknown tool `{}`", request.name),
                None,
            ));
        }
        // Counted in the metrics by the hub's call seam (`Metrics` observes the hub).
        let outcome =
            crate::upstream_tasks::call(hub, &name, arguments, options, task.holder.is_some())
                .await;
        match outcome {
            Ok(mcpmux::TaskCall::Completed(result)) => {
                Ok(mcpmux::rmcp_model::tool_result(result).into())
            }
            Ok(mcpmux::TaskCall::Started(started)) => match task.holder {
                Some(holder) => self.inner.tasks.started(hub, started, holder),
                // `upstream_tasks::call` makes a task-augmented call only when asked to.
                None => Err(ErrorData::internal_error(
                    "an upstream task was started for a call not made as one",
                    None,
                )),
            },
            Err(error) => {
                tracing::debug!(tool = %request.name, %error, "call failed");
                failures::error(&error).map(Into::into)
            }
        }
    }

    /// The prompt filled in for `caller`, counted in flight.
    async fn fill(
        &self,
        mut request: GetPromptRequestParams,
        caller: DownstreamClient,
        progress: Option<mpsc::UnboundedSender<mcpmux::Progress>>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let _in_flight = InFlight::enter(&self.inner);
        self.wait_for_startup().await;
        let given = request.input_responses.take();
        let options = self.options_for(&caller, self.inner.abort.child_token(), progress, given);
        let arguments = request.arguments.unwrap_or_default();
        let filled =
            self.inner
                .resources_prompts
                .get_prompt(self.seen(), &request.name, arguments, options);
        Ok(filled.await?.into())
    }

    /// The resource read for `caller`, counted in flight.
    async fn read(
        &self,
        mut request: ReadResourceRequestParams,
        caller: DownstreamClient,
        progress: Option<mpsc::UnboundedSender<mcpmux::Progress>>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let _in_flight = InFlight::enter(&self.inner);
        self.wait_for_startup().await;
        let given = request.input_responses.take();
        let options = self.options_for(&caller, self.inner.abort.child_token(), progress, given);
        let read = self
            .inner
            .resources_prompts
            .read(self.seen(), &request.uri, options);
        Ok(read.await?.into())
    }
}

/// The waiting call a 2026-07-28 client's request resumes (its `requestState`) with the
/// answers it brings; `None` for a new call, whose answers, if any, stay in the request (a
/// round whose server kept no state, retried: they go upstream with the first request).
fn resumed(
    state: &mut Option<String>,
    responses: &mut Option<InputResponses>,
) -> Option<(String, InputResponses)> {
    let state = state.take()?;
    Some((state, responses.take().unwrap_or_default()))
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

/// Counts one call in flight while it lives (in a task of its own, too).
struct InFlight(Arc<Inner>);

impl InFlight {
    fn enter(inner: &Arc<Inner>) -> Self {
        inner.in_flight.fetch_add(1, Ordering::SeqCst);
        InFlight(inner.clone())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if self.0.in_flight.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}
