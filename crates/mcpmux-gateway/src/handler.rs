//! The gateway as an MCP server: rmcp's `ServerHandler` over a [`mcpmux::Hub`]. `tools/list`
//! is the hub's tool set (named as the hub exposes it, in the configured scope); `tools/call`
//! goes through `Hub::call_with`, with the downstream request's cancellation and progress
//! token passed up and its progress passed down; tool-list changes reach every watcher
//! (`watchers`); resources, templates and prompts are `resources`'s, tasks `tasks`'s, and
//! their capabilities are declared once some upstream server offers them. Owns the count of calls in flight that
//! a graceful shutdown waits for. Knows nothing of HTTP or stdio: a transport hands it
//! sessions.

use std::borrow::Cow;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, CancelTaskParams, DiscoverResult,
        GetPromptRequestParams, GetPromptResponse, GetTaskParams, GetTaskResult, Implementation,
        InitializeRequestParams, InitializeResult, ListPromptsResult, ListResourceTemplatesResult,
        ListResourcesResult, ListToolsResult, PaginatedRequestParams, ProgressNotificationParam,
        ProgressToken, PromptsCapability, ProtocolVersion, ReadResourceRequestParams,
        ReadResourceResponse, ResourcesCapability, ServerCapabilities, ServerConfig,
        SubscriptionFilter, Tool, UpdateTaskParams,
    },
    service::{NotificationContext, RequestContext, SubscriptionContext},
};
use tokio::sync::{Notify, mpsc, watch};
use tokio_util::sync::CancellationToken;

use crate::{
    convert, metrics::Metrics, passthrough::Naming, resources::Catalog, watchers::Watchers,
};

/// How long the first `tools/list` waits for the hub's servers to settle (their first
/// connection attempts), so a client that lists at once sees the servers that start quickly;
/// later lists never wait, and a server that connects later is announced with `list_changed`.
pub const DEFAULT_LIST_WAIT: Duration = Duration::from_secs(10);

/// How long cancelled calls may take to end (their upstream servers told) at shutdown.
const CANCEL_WAIT: Duration = Duration::from_secs(2);

/// How the gateway serves the hub.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct GatewayOptions {
    /// Only the tools of this stage and agent are listed, and calls outside it refused.
    pub scope: Option<mcpmux::Scope>,
    /// Servers `/readyz` waits for (the config's `required` servers).
    pub required: Vec<String>,
    /// How long a `tools/list` waits for startup to settle; see [`DEFAULT_LIST_WAIT`].
    pub list_wait: Duration,
    /// Servers whose resources and prompts are not served (those outside the scope).
    pub hidden: Vec<String>,
    /// Serve the one upstream server's tools and prompts under its own names (`passthrough`).
    pub passthrough: bool,
}

impl Default for GatewayOptions {
    fn default() -> Self {
        Self {
            scope: None,
            required: Vec::new(),
            list_wait: DEFAULT_LIST_WAIT,
            hidden: Vec::new(),
            passthrough: false,
        }
    }
}

impl GatewayOptions {
    /// Builder-style: serve only what `scope` may use.
    pub fn with_scope(mut self, scope: Option<mcpmux::Scope>) -> Self {
        self.scope = scope;
        self
    }

    /// Builder-style: the servers readiness waits for.
    pub fn with_required(mut self, required: Vec<String>) -> Self {
        self.required = required;
        self
    }

    /// Builder-style: servers whose resources and prompts are not served.
    pub fn with_hidden(mut self, hidden: Vec<String>) -> Self {
        self.hidden = hidden;
        self
    }

    /// Builder-style: serve tools and prompts under the upstream server's own names. For one
    /// server only: check the configuration with [`crate::check_one_server`] first.
    pub fn with_passthrough(mut self, passthrough: bool) -> Self {
        self.passthrough = passthrough;
        self
    }

    /// Builder-style: how long a `tools/list` waits for startup to settle.
    pub fn with_list_wait(mut self, wait: Duration) -> Self {
        self.list_wait = wait;
        self
    }
}

/// The hub served as one MCP server. Cheap to clone: every session shares one.
#[derive(Clone)]
pub struct Gateway {
    inner: Arc<Inner>,
}

struct Inner {
    hub: mcpmux::Hub,
    options: GatewayOptions,
    watchers: Arc<Watchers>,
    /// Whether the servers' first connection attempts have settled (or a required one
    /// failed: `Hub::wait_ready` stops there).
    startup: watch::Receiver<bool>,
    /// Set when shutdown begins: new calls are refused.
    closing: CancellationToken,
    /// Cancelled when the grace period is over: calls still running are cancelled upstream.
    abort: CancellationToken,
    /// Ends the background tasks when the gateway is dropped.
    stop: CancellationToken,
    in_flight: AtomicUsize,
    idle: Notify,
    /// Resources, templates and prompts, and the prompt routing table.
    catalog: Catalog,
    /// Calls counted and timed, for `/metrics`.
    metrics: Metrics,
    /// Whether some upstream server has offered resources (then prompts): declared from then
    /// on, so a session never sees a capability vanish because a server is down.
    offers_resources: AtomicBool,
    offers_prompts: AtomicBool,
    /// The tasks upstream servers run for downstream clients (SEP-2663).
    tasks: crate::tasks::Tasks,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl Gateway {
    /// Serves `hub`; call inside a tokio runtime (it starts watching the hub's events and its
    /// startup). The hub stays the caller's: shut it down after serving ends.
    pub fn new(hub: mcpmux::Hub, options: GatewayOptions) -> Self {
        let watchers = Arc::new(Watchers::default());
        let stop = CancellationToken::new();
        let (settled, startup) = watch::channel(false);
        {
            let hub = hub.clone();
            let stop = stop.clone();
            tokio::spawn(async move {
                tokio::select! {
                    () = stop.cancelled() => {}
                    _ = hub.wait_ready() => {
                        let _ = settled.send(true);
                    }
                }
            });
        }
        {
            let events = hub.subscribe();
            let lister = hub.clone();
            let scope = options.scope.clone();
            let mut startup = startup.clone();
            let wait = options.list_wait;
            let settled = async move {
                let _ = tokio::time::timeout(wait, startup.wait_for(|settled| *settled)).await;
            };
            tokio::spawn(crate::watchers::forward_changes(
                events,
                settled,
                move || list(&lister, scope.as_ref()),
                watchers.clone(),
                stop.clone(),
            ));
        }
        let catalog = Catalog::new(options.hidden.clone(), Naming::new(options.passthrough));
        Gateway {
            inner: Arc::new(Inner {
                hub,
                options,
                catalog,
                metrics: Metrics::default(),
                offers_resources: AtomicBool::new(false),
                offers_prompts: AtomicBool::new(false),
                tasks: crate::tasks::Tasks::default(),
                watchers,
                startup,
                closing: CancellationToken::new(),
                abort: CancellationToken::new(),
                stop,
                in_flight: AtomicUsize::new(0),
                idle: Notify::new(),
            }),
        }
    }

    /// The hub served.
    pub fn hub(&self) -> &mcpmux::Hub {
        &self.inner.hub
    }

    /// Whether the gateway is ready, else why not: every required server connected (in the
    /// state it is in now, so one that failed and came back is ready again); with none
    /// required, once the servers' first connection attempts have settled.
    pub fn readiness(&self) -> Result<(), String> {
        let required = &self.inner.options.required;
        if required.is_empty() {
            return if *self.inner.startup.borrow() {
                Ok(())
            } else {
                Err("servers are still starting".into())
            };
        }
        let servers = self.inner.hub.servers();
        let missing: Vec<String> = required
            .iter()
            .filter_map(|name| match servers.iter().find(|s| &s.name == name) {
                None => Some(format!("required server `{name}` is not configured")),
                Some(status) if matches!(status.state, mcpmux::ServerState::Connected { .. }) => {
                    None
                }
                Some(status) => Some(format!(
                    "required server `{name}` is {}{}",
                    status.state.label(),
                    status.error().map(|e| format!(": {e}")).unwrap_or_default()
                )),
            })
            .collect();
        if missing.is_empty() {
            Ok(())
        } else {
            Err(missing.join("; "))
        }
    }

    /// The calls counted and timed so far.
    pub(crate) fn metrics(&self) -> &Metrics {
        &self.inner.metrics
    }

    /// How many downstream parties are told about tool-list changes.
    pub fn watchers(&self) -> usize {
        self.inner.watchers.count()
    }

    /// Refuses new calls from now on (shutdown has begun).
    pub fn close(&self) {
        self.inner.closing.cancel();
    }

    /// Refuses new calls, waits until no call is in flight or `grace` has passed, then
    /// cancels the calls still running (their upstream servers are told) and waits for them
    /// to end. Returns how many were cancelled.
    pub async fn drain(&self, grace: Duration) -> usize {
        self.close();
        if tokio::time::timeout(grace, self.idle()).await.is_ok() {
            return 0;
        }
        let left = self.inner.in_flight.load(Ordering::SeqCst);
        tracing::warn!(
            calls = left,
            "grace period over; cancelling calls in flight"
        );
        self.inner.abort.cancel();
        let _ = tokio::time::timeout(CANCEL_WAIT, self.idle()).await;
        left
    }

    /// Returns once no call is in flight.
    async fn idle(&self) {
        loop {
            let idle = self.inner.idle.notified();
            if self.inner.in_flight.load(Ordering::SeqCst) == 0 {
                return;
            }
            idle.await;
        }
    }

    /// The capabilities offered now: tools always; resources and prompts once some upstream
    /// server (in scope) has offered them.
    fn capabilities(&self) -> ServerCapabilities {
        let inner = &self.inner;
        for server in inner.hub.servers() {
            if inner.options.hidden.contains(&server.name) {
                continue;
            }
            if server.resources {
                inner.offers_resources.store(true, Ordering::Relaxed);
            }
            if server.prompts {
                inner.offers_prompts.store(true, Ordering::Relaxed);
            }
        }
        let mut capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .build();
        if inner.offers_resources.load(Ordering::Relaxed) {
            capabilities.resources = Some(ResourcesCapability::default());
        }
        if inner.offers_prompts.load(Ordering::Relaxed) {
            capabilities.prompts = Some(PromptsCapability::default());
        }
        let hidden = &inner.options.hidden;
        inner.tasks.declare(&inner.hub, hidden, &mut capabilities);
        capabilities
    }

    fn naming(&self) -> Naming {
        Naming::new(self.inner.options.passthrough)
    }

    /// The tools served now.
    fn served(&self) -> Vec<mcpmux::Tool> {
        list(&self.inner.hub, self.inner.options.scope.as_ref())
    }

    async fn wait_for_startup(&self) {
        let mut startup = self.inner.startup.clone();
        let _ = tokio::time::timeout(
            self.inner.options.list_wait,
            startup.wait_for(|settled| *settled),
        )
        .await;
    }

    /// One `tools/call`: through the hub, with the downstream request's cancellation and
    /// progress.
    async fn call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if self.inner.closing.is_cancelled() {
            return Ok(convert::refusal("the gateway is shutting down; call again later").into());
        }
        let _in_flight = InFlight::enter(&self.inner);
        let arguments = request
            .arguments
            .map_or(serde_json::Value::Null, serde_json::Value::Object);
        let cancel = self.inner.abort.child_token();
        let mut options = mcpmux::CallOptions::default().with_cancel(cancel.clone());
        if let Some(scope) = &self.inner.options.scope {
            options = options.with_scope(scope.clone());
        }
        let token = context.meta.get_progress_token();
        let mut progress = None;
        if token.is_some() {
            let (tx, rx) = mpsc::unbounded_channel();
            options = options.with_progress(tx);
            progress = Some(rx);
        }
        let hub = &self.inner.hub;
        let name = self
            .naming()
            .hub_tool(&request.name, &self.served(), &self.inner.hub);
        let started = std::time::Instant::now();
        let as_task = crate::tasks::wanted(&context);
        let mut call = pin!(crate::tasks::call(hub, &name, arguments, options, as_task));
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
        let tool = hub.tool(&name);
        let failed = outcome.as_ref().map_or(true, mcpmux::TaskCall::is_error);
        self.inner.metrics.record(
            tool.as_ref().map(|t| (t.server.as_str(), t.name.as_str())),
            started.elapsed(),
            failed,
        );
        match outcome {
            Ok(mcpmux::TaskCall::Completed(result)) => Ok(convert::result(&result).into()),
            Ok(mcpmux::TaskCall::Started(task)) => {
                let holder = crate::tasks::Holder::of(&context);
                self.inner.tasks.started(hub, task, holder)
            }
            Err(error) => {
                tracing::debug!(tool = %request.name, %error, "call failed");
                convert::error(&error).map(Into::into)
            }
        }
    }
}

/// Sends one progress step to the downstream client under its progress token.
async fn forward_progress(
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

/// The tools served: the hub's, or those of the scope.
fn list(hub: &mcpmux::Hub, scope: Option<&mcpmux::Scope>) -> Vec<mcpmux::Tool> {
    let tools = match scope {
        Some(scope) => hub.tools_for(scope),
        None => hub.tools(),
    };
    tools.into_iter().filter(|t| t.unusable.is_none()).collect()
}

/// Counts one call in flight while it lives.
struct InFlight<'a>(&'a Inner);

impl<'a> InFlight<'a> {
    fn enter(inner: &'a Inner) -> Self {
        inner.in_flight.fetch_add(1, Ordering::SeqCst);
        InFlight(inner)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if self.0.in_flight.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}

impl ServerHandler for Gateway {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(self.capabilities())
            .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
            .with_server_info(Implementation::new("mcpmux", env!("CARGO_PKG_VERSION")))
            .with_instructions(if self.inner.options.passthrough {
                "mcpmux: one MCP server's tools, under the server's own names."
            } else {
                "mcpmux: the tools of several MCP servers, named mcp__SERVER__TOOL."
            })
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(ProtocolVersion::KNOWN_VERSIONS)
    }

    // The capabilities depend on what the upstream servers offer: both openers wait for
    // startup to settle (as the first `tools/list` does) before answering.
    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        self.wait_for_startup().await;
        context.peer.set_peer_info(request.clone());
        self.negotiate_initialize(&request)
    }

    async fn discover(
        &self,
        _context: RequestContext<RoleServer>,
    ) -> Result<DiscoverResult, ErrorData> {
        self.wait_for_startup().await;
        Ok(DiscoverResult::from_server_info(
            self.supported_protocol_versions().into_owned(),
            self.get_info(),
        ))
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        self.wait_for_startup().await;
        self.inner.catalog.resources(&self.inner.hub).await
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        self.wait_for_startup().await;
        self.inner.catalog.templates(&self.inner.hub).await
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        self.wait_for_startup().await;
        let read = self.inner.catalog.read(&self.inner.hub, &request.uri);
        Ok(read.await?.into())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        self.wait_for_startup().await;
        self.inner.catalog.prompts(&self.inner.hub).await
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        self.wait_for_startup().await;
        let arguments = request.arguments.unwrap_or_default();
        let filled = self
            .inner
            .catalog
            .get_prompt(&self.inner.hub, &request.name, arguments);
        Ok(filled.await?.into())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.wait_for_startup().await;
        let tools = self.naming().served_tools(&self.served());
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.call(request, context).await
    }

    // rmcp checks a call's `Mcp-Param-*` headers (SEP-2243) against the tool's schema.
    fn get_tool(&self, name: &str) -> Option<Tool> {
        let served = if self.inner.options.passthrough {
            self.served()
        } else {
            Vec::new()
        };
        self.naming().served_tool(name, &served, &self.inner.hub)
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        let tasks = &self.inner.tasks;
        tasks.get(&self.inner.hub, &request.task_id, &context).await
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let responses = request.input_responses.into_iter().collect();
        let tasks = &self.inner.tasks;
        let update = tasks.update(&self.inner.hub, &request.task_id, responses, &context);
        update.await
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let tasks = &self.inner.tasks;
        tasks
            .cancel(&self.inner.hub, &request.task_id, &context)
            .await
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        self.inner.watchers.add_session(context.peer);
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(if requested.tools_list_changed == Some(true) {
            SubscriptionFilter::builder().tools_list_changed().build()
        } else {
            SubscriptionFilter::new()
        })
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        if context.accepted().tools_list_changed != Some(true) {
            context.cancelled().await;
            return Ok(());
        }
        let id = self.inner.watchers.add_listen(context.sink().clone());
        tokio::select! {
            () = context.cancelled() => {}
            () = self.inner.stop.cancelled() => {}
            // Shutdown begins: a listen would hold the graceful wait to its end.
            () = self.inner.closing.cancelled() => {}
        }
        self.inner.watchers.remove(id);
        Ok(())
    }
}
