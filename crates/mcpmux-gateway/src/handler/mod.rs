//! The gateway as an MCP server: rmcp's `ServerHandler` over a [`mcpmux::Hub`]. `tools/list`
//! is the hub's tool set (named as the hub exposes it, in the configured scope, in pages:
//! `paging`); `tools/call`, `prompts/get` and `resources/read` are made for the client that
//! sends them (`calls`: what the upstream server asks meanwhile goes to that client, a
//! 2026-07-28 client's in rounds of `input_required`); list changes reach every watcher
//! (`watchers`); resources, templates, prompts and completions are `resources_prompts`'s,
//! subscriptions `subscriptions`'s, tasks `upstream_tasks`'s, upstream notices `notices`'s, and each capability is
//! declared once some upstream server offers it. What a session may see and use — on every
//! route: lists, calls, reads, subscriptions, prompts, completions — is its `view`'s to say.
//! Knows nothing of HTTP or stdio: a transport makes one handler per session
//! ([`Gateway::session`]).

use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};

use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, CancelTaskParams, CompleteRequestParams,
        CompleteResult, DiscoverResult, GetPromptRequestParams, GetPromptResponse, GetTaskParams,
        GetTaskResult, Implementation, InitializeRequestParams, InitializeResult,
        ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult,
        PaginatedRequestParams, PromptsCapability, ProtocolVersion, ReadResourceRequestParams,
        ReadResourceResponse, ResourcesCapability, ServerCapabilities, ServerConfig,
        SubscribeRequestParams, SubscriptionFilter, Tool, UnsubscribeRequestParams,
        UpdateTaskParams,
    },
    service::{NotificationContext, RequestContext, SubscriptionContext},
};
use tokio::sync::{Notify, watch};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

// Logging is SEP-2577-deprecated in rmcp, yet the handshake era's `logging/setLevel`.
#[allow(deprecated)]
use rmcp::model::SetLevelRequestParams;

mod calls;
mod lifecycle;
mod reconfigure;
mod search;

pub use reconfigure::ReconfigureError;

use crate::{
    client_rounds::Rounds,
    identity::Identity,
    levels::Levels,
    metrics::Metrics,
    options::GatewayOptions,
    paging::Pager,
    passthrough::{Naming, Refusals},
    resources_prompts::ResourcesAndPrompts,
    search::{Catalog, Found},
    session::Session,
    subscriptions::{Subscriptions, Target},
    view::View,
    watchers::{Looks, Watchers},
};

/// Most resources one `subscriptions/listen` may name: each is an upstream subscription.
const MAX_LISTEN_RESOURCES: usize = 100;

/// The hub served as one MCP server. Cheap to clone; each session gets its own handler
/// ([`Gateway::session`]) over the one gateway they share.
#[derive(Clone)]
pub struct Gateway {
    inner: Arc<Inner>,
    session: Arc<Session>,
    /// What this session may see and use: every route asks it.
    view: View,
    /// The tools this session found with `search_tools` (`--search`).
    found: Arc<Found>,
}

struct Inner {
    hub: mcpmux::Hub,
    options: GatewayOptions,
    /// The servers `/readyz` waits for: the options' until a reload replaces them.
    required: RwLock<Vec<String>>,
    /// What a session sees: the scope (which servers it admits is the hub's to say).
    view: View,
    /// The log level each session wants, and the one asked of the servers.
    levels: Arc<Levels>,
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
    /// Resources, templates, prompts and completions, as the hub lists and routes them.
    resources_prompts: ResourcesAndPrompts,
    /// Calls counted and timed, for `/metrics`.
    metrics: Arc<Metrics>,
    /// Whether some upstream server has offered resources (then prompts): declared from then
    /// on, so a session never sees a capability vanish because a server is down.
    offers_resources: AtomicBool,
    offers_prompts: AtomicBool,
    offers_subscriptions: AtomicBool,
    offers_completions: AtomicBool,
    offers_logging: AtomicBool,
    /// Who holds which resource.
    subscriptions: Arc<Subscriptions>,
    /// Cuts the lists served into pages.
    pager: Pager,
    /// 2026-07-28 calls, prompts and reads waiting for their clients' answers.
    rounds: Arc<Rounds<CallToolResponse>>,
    prompt_rounds: Arc<Rounds<GetPromptResponse>>,
    read_rounds: Arc<Rounds<ReadResourceResponse>>,
    /// The tasks upstream servers run for downstream clients (SEP-2663).
    tasks: crate::upstream_tasks::Tasks,
    /// Pass-through mode: the tools not served for their names.
    refusals: Refusals,
    /// Tool search (`--search`; never with pass-through): the index behind `search_tools`.
    search: Option<Catalog>,
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
        let view = View::new(options.scope.clone(), hub.clone());
        let levels = Levels::new(hub.clone());
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
            let offerer = hub.clone();
            let (seen, shown) = (view.clone(), view.clone());
            let mut startup = startup.clone();
            let wait = options.list_wait;
            let settled = async move {
                let _ = tokio::time::timeout(wait, startup.wait_for(|settled| *settled)).await;
            };
            tokio::spawn(crate::watchers::forward_changes(
                events,
                settled,
                Looks {
                    tools: move || seen.tools(&lister),
                    offers: move || crate::watchers::offers(&offerer, &shown),
                },
                watchers.clone(),
                stop.clone(),
            ));
        }
        let subscriptions = Subscriptions::new(hub.clone());
        if let Some(host) = &options.host {
            let to = crate::notices::To {
                subscriptions: subscriptions.clone(),
                watchers: watchers.clone(),
                levels: levels.clone(),
                view: view.clone(),
            };
            tokio::spawn(crate::notices::forward(host.clone(), to, stop.clone()));
        }
        let resources_prompts =
            ResourcesAndPrompts::new(Naming::of(options.passthrough, options.short_names));
        // Told of every tool call by the hub's own seam as it ends: no second lookup of the
        // tool here.
        let metrics = Arc::new(Metrics::default());
        hub.observe(metrics.clone());
        let pager = Pager::new(options.page_size);
        let waiting = options.waiting;
        let search = match &options.search {
            Some(search) if !options.passthrough => Some(Catalog::new(search)),
            _ => None,
        };
        Gateway {
            found: Arc::default(),
            session: Session::new(
                subscriptions.clone(),
                levels.clone(),
                watchers.clone(),
                Identity::local(),
            ),
            view: view.clone(),
            inner: Arc::new(Inner {
                hub,
                required: RwLock::new(options.required.clone()),
                view,
                levels,
                options,
                resources_prompts,
                metrics,
                offers_resources: AtomicBool::new(false),
                offers_prompts: AtomicBool::new(false),
                offers_subscriptions: AtomicBool::new(false),
                offers_completions: AtomicBool::new(false),
                offers_logging: AtomicBool::new(false),
                subscriptions,
                pager,
                rounds: Arc::new(Rounds::new(waiting)),
                prompt_rounds: Arc::new(Rounds::new(waiting)),
                read_rounds: Arc::new(Rounds::new(waiting)),
                tasks: crate::upstream_tasks::Tasks::default(),
                refusals: Refusals::default(),
                search,
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

    /// The handler of a new session: what the session asks mid-call and what it subscribes
    /// to are its own. A transport calls this once per session. The session is the local
    /// client's (stdio): the gateway's whole authority.
    pub fn session(&self) -> Gateway {
        self.session_for(Identity::local())
    }

    /// The handler of a new session of `identity`: what it may use is `identity`'s.
    pub(crate) fn session_for(&self, identity: Identity) -> Gateway {
        let inner = &self.inner;
        let view = inner.view.with_rule(identity.rule.clone());
        Gateway {
            inner: inner.clone(),
            session: Session::new(
                inner.subscriptions.clone(),
                inner.levels.clone(),
                inner.watchers.clone(),
                identity,
            ),
            view,
            found: Arc::default(),
        }
    }

    /// This session's own state.
    pub(crate) fn own_session(&self) -> &Session {
        &self.session
    }

    /// The answer to `initialize` of a session born parked (`handshake`), as
    /// [`ServerHandler::initialize`] gives it once startup settled, and its place among the
    /// watchers, told through `outbox`; its peer-bound side effects (the peer kept, its
    /// client's capabilities) are its restored handler's, when the handshake is replayed.
    pub(crate) async fn answer_born(
        &self,
        request: &InitializeRequestParams,
        outbox: Arc<crate::outbox::Outbox>,
    ) -> Result<InitializeResult, ErrorData> {
        self.wait_for_startup().await;
        let answer = self.negotiate_initialize(request)?;
        let tools = self.inner.view.tools(&self.inner.hub);
        self.session.watch_born(outbox, &tools);
        Ok(answer)
    }

    /// Whether this session's handler is at rest: held only by `holders` (its worker's and the
    /// session manager's copy: no call running, none lent to `inline`), and its session holds
    /// nothing beyond its handshake. Then a new handler, given the same `initialize`, is the
    /// same session to its client (`sessions` lets its worker go).
    pub(crate) fn at_rest(&self, holders: usize) -> bool {
        Arc::strong_count(&self.session) <= holders && !self.session.keeps()
    }

    /// The hub served.
    pub fn hub(&self) -> &mcpmux::Hub {
        &self.inner.hub
    }

    /// How many upstream resource subscriptions are held for downstream clients.
    pub fn subscriptions(&self) -> usize {
        self.inner.subscriptions.count()
    }

    /// The calls counted and timed so far.
    pub(crate) fn metrics(&self) -> &Metrics {
        &self.inner.metrics
    }

    /// How many downstream parties are told about tool-list changes.
    pub fn watchers(&self) -> usize {
        self.inner.watchers.count()
    }

    /// This gateway serves one client for good (stdio): a server log no call explains goes
    /// to it, as it could be nobody else's.
    pub(crate) fn serve_alone(&self) {
        self.inner.watchers.serve_alone();
    }

    /// The capabilities offered now: tools always; resources (with subscriptions), prompts,
    /// completions and logging once some upstream server (in scope) has offered them.
    fn capabilities(&self) -> ServerCapabilities {
        let inner = &self.inner;
        for server in inner.hub.servers() {
            if !self.view.server_shown(&server.name) {
                continue;
            }
            for (offered, latch) in [
                (server.resources, &inner.offers_resources),
                (server.prompts, &inner.offers_prompts),
                (server.subscriptions, &inner.offers_subscriptions),
                (server.completions, &inner.offers_completions),
                (server.logging, &inner.offers_logging),
            ] {
                if offered {
                    latch.store(true, Ordering::Relaxed);
                }
            }
        }
        let offers = |latch: &AtomicBool| latch.load(Ordering::Relaxed);
        let mut capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .build();
        if offers(&inner.offers_resources) {
            let mut resources = ResourcesCapability::default();
            resources.list_changed = Some(true);
            if offers(&inner.offers_subscriptions) {
                resources.subscribe = Some(true);
            }
            capabilities.resources = Some(resources);
        }
        if offers(&inner.offers_prompts) {
            let mut prompts = PromptsCapability::default();
            prompts.list_changed = Some(true);
            capabilities.prompts = Some(prompts);
        }
        if offers(&inner.offers_completions) {
            capabilities.completions = Some(serde_json::Map::new());
        }
        if offers(&inner.offers_logging) {
            capabilities.logging = Some(serde_json::Map::new());
        }
        inner
            .tasks
            .declare(&inner.hub, &self.view, &mut capabilities);
        capabilities
    }

    fn naming(&self) -> Naming {
        let options = &self.inner.options;
        Naming::of(options.passthrough, options.short_names)
    }

    /// The tools served now, to this session's identity: in pass-through mode, those whose
    /// own names may be served.
    fn served(&self) -> Vec<mcpmux::Tool> {
        let tools = self.view.tools(&self.inner.hub);
        if self.inner.options.passthrough {
            self.inner.refusals.servable(tools)
        } else {
            tools
        }
    }

    /// The hub, and what this session may see of it.
    fn seen(&self) -> (&mcpmux::Hub, &View) {
        (&self.inner.hub, &self.view)
    }

    /// What this session's identity may use (its access rule).
    fn rule(&self) -> &crate::access::Rule {
        self.view.rule()
    }

    async fn wait_for_startup(&self) {
        let mut startup = self.inner.startup.clone();
        let _ = tokio::time::timeout(
            self.inner.options.list_wait,
            startup.wait_for(|settled| *settled),
        )
        .await;
    }
}

/// The cursor a list request carries.
fn cursor_of(request: Option<&PaginatedRequestParams>) -> Option<&str> {
    request.and_then(|r| r.cursor.as_deref())
}

impl ServerHandler for Gateway {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(self.capabilities())
            .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
            .with_server_info(Implementation::new("mcpmux", env!("CARGO_PKG_VERSION")))
            .with_instructions(match self.naming() {
                Naming::Own => "mcpmux: one MCP server's tools, under the server's own names.",
                Naming::Short(_) => "mcpmux: the tools of several MCP servers, named SERVER__TOOL.",
                Naming::Hub if self.inner.search.is_some() => {
                    "mcpmux: the tools of several MCP servers, named mcp__SERVER__TOOL; most are \
                     found with search_tools, then called by name or through call_tool."
                }
                Naming::Hub => "mcpmux: the tools of several MCP servers, named mcp__SERVER__TOOL.",
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
        self.session.keep_peer(context.peer);
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
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let span = crate::trace::request_span("resources/list", None, self.session.id, &context);
        async {
            self.wait_for_startup().await;
            let page = (&self.inner.pager, cursor_of(request.as_ref()));
            self.inner
                .resources_prompts
                .resources(self.seen(), page)
                .await
        }
        .instrument(span)
        .await
    }

    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let span =
            crate::trace::request_span("resources/templates/list", None, self.session.id, &context);
        async {
            self.wait_for_startup().await;
            let page = (&self.inner.pager, cursor_of(request.as_ref()));
            self.inner
                .resources_prompts
                .templates(self.seen(), page)
                .await
        }
        .instrument(span)
        .await
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let span = crate::trace::request_span("resources/read", None, self.session.id, &context);
        self.read_for(request, context).instrument(span).await
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let span = crate::trace::request_span("prompts/list", None, self.session.id, &context);
        async {
            self.wait_for_startup().await;
            let page = (&self.inner.pager, cursor_of(request.as_ref()));
            self.inner
                .resources_prompts
                .prompts(self.seen(), page)
                .await
        }
        .instrument(span)
        .await
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let span = crate::trace::request_span(
            "prompts/get",
            Some(&request.name),
            self.session.id,
            &context,
        );
        self.get_prompt_for(request, context).instrument(span).await
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.wait_for_startup().await;
        let tools = match &self.inner.search {
            Some(catalog) => self.listed(catalog),
            None => self.served(),
        };
        let named = self.naming().named(tools);
        let (page, next) =
            self.inner
                .pager
                .page("tools/list", named, cursor_of(request.as_ref()))?;
        let served = page
            .into_iter()
            .map(|(tool, name)| mcpmux::rmcp_model::tool(&tool, name))
            .collect();
        let mut result = ListToolsResult::with_all_items(served);
        result.next_cursor = next;
        Ok(result)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let span = crate::trace::request_span(
            "tools/call",
            Some(&request.name),
            self.session.id,
            &context,
        );
        match &self.inner.search {
            Some(catalog) if crate::search::is_meta(&request.name) => {
                self.meta_call(catalog, request, context)
                    .instrument(span)
                    .await
            }
            _ => self.call(request, context).instrument(span).await,
        }
    }

    // rmcp checks a call's `Mcp-Param-*` headers (SEP-2243) against the tool's schema.
    fn get_tool(&self, name: &str) -> Option<Tool> {
        if let Some(meta) = self.meta_tool(name) {
            return Some(meta);
        }
        let served = if self.naming().renames() {
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

    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        let span =
            crate::trace::request_span("completion/complete", None, self.session.id, &context);
        async {
            self.wait_for_startup().await;
            self.inner
                .resources_prompts
                .complete(self.seen(), request)
                .await
        }
        .instrument(span)
        .await
    }

    #[allow(deprecated)]
    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        // The servers send what the most talkative session wants; each session is then sent
        // only what it asked for (`levels`).
        let level = mcpmux::rmcp_model::log_level(request.level);
        self.session.keep();
        self.inner.levels.set(self.session.id, level).await;
        Ok(())
    }

    #[allow(deprecated)] // resources/subscribe is the handshake era's; listen is 2026-07-28's.
    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.wait_for_startup().await;
        // access rule (identity): a resource of a server it may not use is not found.
        let rule = self.rule();
        crate::access::check_resource(&self.inner.hub, rule, &request.uri).await?;
        let target = Target::Session(context.peer);
        self.session.keep();
        self.inner
            .subscriptions
            .subscribe((self.session.id, &self.view), target, &request.uri)
            .await
    }

    #[allow(deprecated)]
    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.inner
            .subscriptions
            .unsubscribe(self.session.id, &request.uri)
            .await
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        self.inner.levels.join(self.session.id).await;
        // What a session that sees part of the tools was told of: the tools of the whole
        // gateway's view, as the watch compares them later.
        let tools = self.inner.view.tools(&self.inner.hub);
        self.session.watch(context.peer, &tools);
    }

    // A session's roots are asked of it afresh each time an upstream server asks during one
    // of its calls; nothing is kept that this would make stale, and the upstream servers are
    // shared by every session, so they are not told.
    async fn on_roots_list_changed(&self, _context: NotificationContext<RoleServer>) {
        tracing::debug!(session = self.session.id, "a client's roots changed");
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        let mut accepted = SubscriptionFilter::new();
        let asked = |flag: Option<bool>| (flag == Some(true)).then_some(true);
        accepted.tools_list_changed = asked(requested.tools_list_changed);
        accepted.resources_list_changed = asked(requested.resources_list_changed);
        accepted.prompts_list_changed = asked(requested.prompts_list_changed);
        accepted.resource_subscriptions = requested
            .resource_subscriptions
            .as_ref()
            .map(|uris| uris.iter().take(MAX_LISTEN_RESOURCES).cloned().collect());
        Some(accepted)
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let accepted = context.accepted().clone();
        let lists = [
            accepted.tools_list_changed,
            accepted.resources_list_changed,
            accepted.prompts_list_changed,
        ]
        .contains(&Some(true));
        let uris = accepted.resource_subscriptions.unwrap_or_default();
        if !lists && uris.is_empty() {
            context.cancelled().await;
            return Ok(());
        }
        let watcher = lists.then(|| self.inner.watchers.add_listen(context.sink().clone()));
        let holder = crate::session::next_id();
        for uri in &uris {
            // access rule (identity)
            if let Err(error) =
                crate::access::check_resource(&self.inner.hub, self.rule(), uri).await
            {
                tracing::debug!(%uri, %error, "a listen's resource is not this identity's");
                continue;
            }
            let target = Target::Listen(context.sink().clone());
            match self
                .inner
                .subscriptions
                .subscribe((holder, &self.view), target, uri)
                .await
            {
                // rmcp acknowledged the listen before this method ran, and the upstream
                // subscription is only made now: a change in between reached nobody. One
                // update per resource closes that gap (an update means "read it again").
                Ok(()) => {
                    if let Err(error) = context.sink().notify_resource_updated(uri).await {
                        tracing::debug!(%uri, %error, "a listen's first update was not delivered");
                    }
                }
                Err(error) => {
                    tracing::warn!(%uri, %error, "a listen's resource could not be subscribed upstream");
                }
            }
        }
        tokio::select! {
            () = context.cancelled() => {}
            () = self.inner.stop.cancelled() => {}
            // Shutdown begins: a listen would hold the graceful wait to its end.
            () = self.inner.closing.cancelled() => {}
        }
        if let Some(id) = watcher {
            self.inner.watchers.remove(id);
        }
        self.inner.subscriptions.release(holder).await;
        Ok(())
    }
}
