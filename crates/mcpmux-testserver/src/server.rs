//! The MCP server itself: rmcp's `ServerHandler` for the test tools.
//!
//! Owns what the server says about itself (info, capabilities, protocol versions per era),
//! `tools/list` pagination, and the order of events around every `tools/call` (call log, crash
//! faults, dispatch, answer delay), and its one resource, `test://counter`, with its watchers:
//! sessions that sent `resources/subscribe` (handshake era) and `subscriptions/listen` streams
//! that name it (2026-07-28); with `--prompts`, the prompt, template and completions of
//! `prompts`. The tools live in `tools`; transports know nothing of this.

#![allow(deprecated)] // Logging is SEP-2577-deprecated in rmcp, yet part of the handshake era.

use std::{
    borrow::Cow,
    sync::{
        Arc, Mutex, MutexGuard,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
};

use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    handler::server::tool::{ToolCallContext, ToolRouter},
    model::{
        CallToolRequestParams, CallToolResponse, CompleteRequestParams, CompleteResult,
        DiscoverResult, ErrorCode, GetPromptRequestParams, GetPromptResult, Implementation,
        ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult,
        LoggingLevel, PaginatedRequestParams, PromptsCapability, ProtocolVersion,
        ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Resource,
        ResourceContents, ResourceUpdatedNotificationParam, ServerCapabilities, ServerConfig,
        SetLevelRequestParams, SubscribeRequestParams, SubscriptionFilter, Tool,
        UnsubscribeRequestParams,
    },
    service::{Peer, RequestContext, SubscriptionContext, SubscriptionSink},
};

use crate::{
    cli::Era,
    faults::{CallFaults, CallLog},
};

/// The tool that `change_tools` adds and removes.
pub const EXTRA_TOOL: &str = "extra";

/// Server-wide settings and state, shared by every session (HTTP creates one handler per
/// session or per stateless request).
#[derive(Debug)]
pub struct Shared {
    pub era: Era,
    pub protocol_version: Option<ProtocolVersion>,
    pub page_size: Option<usize>,
    pub repeat_cursor: bool,
    pub call_log: Option<CallLog>,
    pub faults: CallFaults,
    /// Whether `extra` is currently listed (toggled by `change_tools`).
    pub extra_enabled: AtomicBool,
    /// Whether prompts, a resource template and completions are offered (`--prompts`).
    pub prompts: bool,
    pub router: ToolRouter<TestServer>,
}

/// The one resource: a counter that the `bump` tool increments.
pub const COUNTER_URI: &str = "test://counter";

/// Numbers the handlers (one per session, or per request over stateless HTTP) and the listen
/// streams, so a watcher can be found again to be removed.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// The counter and who watches it. One per process, like the resource: every session and
/// every stateless HTTP request sees the same value and the same watchers. (A static rather
/// than a field of [`Shared`], which `main` builds, so the resource code stays in this file.)
static COUNTER: Counter = Counter {
    value: AtomicU64::new(0),
    watchers: Mutex::new(Vec::new()),
    pending_listens: AtomicU64::new(0),
};

/// Longest a `bump` waits for acknowledged listens to start watching.
const PENDING_LISTEN_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// What `bump` changes and notifies.
pub struct Counter {
    value: AtomicU64,
    watchers: Mutex<Vec<Watcher>>,
    /// Listens of the counter acknowledged but not yet watching: rmcp sends the
    /// acknowledgment before it runs the handler's `listen`, so a client told "subscribed" may
    /// bump before the watcher exists. A server handles one client's requests in the order
    /// they came; `bump` waits for these first.
    pending_listens: AtomicU64,
}

/// Someone to tell that a resource changed.
#[derive(Clone)]
enum Watcher {
    /// A handshake-era session that sent `resources/subscribe` for `uri`.
    Session {
        session: u64,
        uri: String,
        peer: Peer<RoleServer>,
    },
    /// A 2026-07-28 `subscriptions/listen` stream; its accepted filter names the URIs.
    Listen { id: u64, sink: SubscriptionSink },
}

impl Watcher {
    fn watches(&self, uri: &str) -> bool {
        match self {
            Watcher::Session { uri: watched, .. } => watched == uri,
            Watcher::Listen { sink, .. } => sink
                .accepted()
                .resource_subscriptions
                .as_ref()
                .is_some_and(|uris| uris.iter().any(|u| u == uri)),
        }
    }

    /// The same watcher (a session's subscription to one URI, or one listen stream).
    fn same(&self, other: &Watcher) -> bool {
        match (self, other) {
            (
                Watcher::Session { session, uri, .. },
                Watcher::Session {
                    session: s, uri: u, ..
                },
            ) => session == s && uri == u,
            (Watcher::Listen { id, .. }, Watcher::Listen { id: other, .. }) => id == other,
            _ => false,
        }
    }
}

impl Counter {
    /// The process's counter.
    pub fn get() -> &'static Counter {
        &COUNTER
    }

    /// The current value.
    pub fn value(&self) -> u64 {
        self.value.load(Ordering::SeqCst)
    }

    fn watchers(&self) -> MutexGuard<'_, Vec<Watcher>> {
        match self.watchers.lock() {
            Ok(watchers) => watchers,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    fn watch(&self, watcher: Watcher) {
        let mut watchers = self.watchers();
        if !watchers.iter().any(|w| w.same(&watcher)) {
            watchers.push(watcher);
        }
    }

    fn forget(&self, watcher: &Watcher) {
        self.watchers().retain(|w| !w.same(watcher));
    }

    /// Increments the counter and sends `notifications/resources/updated` to everyone watching
    /// it; a watcher that cannot be reached (session gone, listen cancelled) is forgotten.
    /// Returns the new value.
    pub async fn bump(&self) -> u64 {
        let waiting_since = std::time::Instant::now();
        while self.pending_listens.load(Ordering::SeqCst) > 0
            && waiting_since.elapsed() < PENDING_LISTEN_WAIT
        {
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
        let value = self.value.fetch_add(1, Ordering::SeqCst) + 1;
        let watching: Vec<Watcher> = self
            .watchers()
            .iter()
            .filter(|w| w.watches(COUNTER_URI))
            .cloned()
            .collect();
        for watcher in watching {
            let sent = match &watcher {
                Watcher::Session { peer, .. } => peer
                    .notify_resource_updated(ResourceUpdatedNotificationParam::new(COUNTER_URI))
                    .await
                    .map_err(|e| e.to_string()),
                Watcher::Listen { sink, .. } => sink
                    .notify_resource_updated(COUNTER_URI)
                    .await
                    .map_err(|e| e.to_string()),
            };
            if let Err(send_error) = sent {
                tracing::debug!(%send_error, "resources/updated not sent; forgetting the watcher");
                self.forget(&watcher);
            }
        }
        value
    }
}

/// Whether this server has a resource at `uri`.
fn known_resource(uri: &str) -> bool {
    uri == COUNTER_URI
}

/// One session's handler.
#[derive(Debug, Clone)]
pub struct TestServer {
    pub shared: Arc<Shared>,
    /// Level set by `logging/setLevel` in this session (`None`: everything is sent).
    log_level: Arc<Mutex<Option<LoggingLevel>>>,
    /// Tells this session's resource subscriptions from another's.
    session: u64,
}

impl TestServer {
    pub fn new_session(shared: Arc<Shared>) -> Self {
        Self {
            shared,
            log_level: Arc::default(),
            session: NEXT_ID.fetch_add(1, Ordering::Relaxed),
        }
    }

    /// The tools currently listed, sorted by name.
    pub fn visible_tools(&self) -> Vec<Tool> {
        let extra = self.shared.extra_enabled.load(Ordering::SeqCst);
        self.shared
            .router
            .list_all()
            .into_iter()
            .filter(|tool| extra || tool.name != EXTRA_TOOL)
            .collect()
    }

    /// Whether a log message at `level` should reach this session's client.
    pub fn logs_at(&self, level: LoggingLevel, context: &RequestContext<RoleServer>) -> bool {
        // 2026-07-28 carries the level per request; the handshake era sets it per session.
        let threshold = context
            .meta
            .log_level()
            .or_else(|| match self.log_level.lock() {
                Ok(level) => *level,
                Err(poisoned) => *poisoned.into_inner(),
            });
        threshold.is_none_or(|threshold| severity(level) >= severity(threshold))
    }
}

fn severity(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

/// The versions this server accepts, per era and `--protocol-version`.
///
/// rmcp negotiates `initialize` against this list *after* the handler answered: a client
/// version in the list is echoed back whatever `initialize` returned, so forcing an answer
/// (`--protocol-version V`) means listing only V among the handshake versions.
pub fn supported_versions(era: Era, forced: Option<&ProtocolVersion>) -> Vec<ProtocolVersion> {
    let handshake: Vec<ProtocolVersion> = match forced {
        Some(version) => vec![version.clone()],
        None => ProtocolVersion::known_up_to(&ProtocolVersion::LATEST_WITH_INITIALIZE).to_vec(),
    };
    match era {
        Era::Handshake => handshake,
        Era::Stateless => vec![ProtocolVersion::V_2026_07_28],
        Era::Both => {
            let mut versions = handshake;
            versions.push(ProtocolVersion::V_2026_07_28);
            versions
        }
    }
}

/// One page of `tools/list`: the index range to return and the next cursor.
///
/// Cursors are opaque to clients (`page-OFFSET`); an unknown cursor is an invalid-params error.
/// With `repeat`, every page names the same next cursor, forever.
pub fn page(
    total: usize,
    page_size: Option<usize>,
    repeat: bool,
    cursor: Option<&str>,
) -> Result<(std::ops::Range<usize>, Option<String>), ErrorData> {
    let Some(size) = page_size.filter(|size| *size > 0) else {
        return Ok((0..total, None));
    };
    let start = match cursor {
        None => 0,
        Some(cursor) => cursor
            .strip_prefix("page-")
            .and_then(|offset| offset.parse::<usize>().ok())
            .filter(|offset| *offset <= total)
            .ok_or_else(|| ErrorData::invalid_params(format!("invalid cursor `{cursor}`"), None))?,
    };
    let end = start.saturating_add(size).min(total);
    let next = if repeat {
        Some(format!("page-{}", size.min(total)))
    } else {
        (end < total).then(|| format!("page-{end}"))
    };
    Ok((start..end, next))
}

impl TestServer {
    /// Logs the trace context a list request carried in `_meta` (SEP-414) as
    /// `{METHOD: traceparent}`, for the tests of its propagation on every request.
    fn log_list_trace(&self, method: &str, context: &RequestContext<RoleServer>) {
        if let (Some(log), Some(traceparent)) =
            (&self.shared.call_log, context.meta.get_traceparent())
        {
            log.record_event(method, traceparent);
        }
    }
}

impl ServerHandler for TestServer {
    fn get_info(&self) -> ServerConfig {
        let mut capabilities = ServerCapabilities::builder()
            .enable_logging()
            .enable_resources()
            .enable_resources_subscribe()
            .enable_resources_list_changed()
            .enable_tools()
            .enable_tool_list_changed()
            .build();
        if self.shared.prompts {
            let mut prompts = PromptsCapability::default();
            prompts.list_changed = Some(true);
            capabilities.prompts = Some(prompts);
            capabilities.completions = Some(serde_json::Map::new());
        }
        let protocol_version = match self.shared.era {
            Era::Stateless => ProtocolVersion::V_2026_07_28,
            Era::Both | Era::Handshake => self
                .shared
                .protocol_version
                .clone()
                .unwrap_or(ProtocolVersion::LATEST_WITH_INITIALIZE),
        };
        ServerConfig::new(capabilities)
            .with_protocol_version(protocol_version)
            .with_server_info(Implementation::new(
                "mcpmux-testserver",
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions("Test server for mcpmux: tools with fault knobs.")
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Owned(supported_versions(
            self.shared.era,
            self.shared.protocol_version.as_ref(),
        ))
    }

    async fn discover(
        &self,
        _context: RequestContext<RoleServer>,
    ) -> Result<DiscoverResult, ErrorData> {
        // The gate already answers discover in the handshake era; this covers any path that
        // reaches the handler anyway.
        if self.shared.era == Era::Handshake {
            return Err(ErrorData::new(
                ErrorCode::METHOD_NOT_FOUND,
                "Method not found",
                None,
            ));
        }
        Ok(DiscoverResult::from_server_info(
            supported_versions(self.shared.era, self.shared.protocol_version.as_ref()),
            self.get_info(),
        ))
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        match self.log_level.lock() {
            Ok(mut level) => *level = Some(request.level),
            Err(poisoned) => *poisoned.into_inner() = Some(request.level),
        }
        Ok(())
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.log_list_trace("tools/list", &context);
        let mut tools = self.visible_tools();
        let cursor = request.as_ref().and_then(|params| params.cursor.as_deref());
        let (range, next_cursor) = page(
            tools.len(),
            self.shared.page_size,
            self.shared.repeat_cursor,
            cursor,
        )?;
        tools.truncate(range.end);
        let tools = tools.split_off(range.start);
        let mut result = ListToolsResult::with_all_items(tools);
        result.next_cursor = next_cursor;
        Ok(result)
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        if name == EXTRA_TOOL && !self.shared.extra_enabled.load(Ordering::SeqCst) {
            return None;
        }
        self.shared.router.get(name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if let Some(log) = &self.shared.call_log {
            log.record(&request.name, request.arguments.as_ref());
            // The trace context the caller sent in `_meta` (SEP-414), for the tests of its
            // propagation.
            if let Some(traceparent) = context.meta.get_traceparent() {
                log.record_event("traceparent", traceparent);
            }
            if let Some(baggage) = context.meta.get_baggage() {
                log.record_event("baggage", baggage);
            }
        }
        self.shared.faults.before_call(&request.name);
        let cancelled = context.ct.clone();
        let result =
            if request.name == EXTRA_TOOL && !self.shared.extra_enabled.load(Ordering::SeqCst) {
                // Exactly what rmcp's router answers for a tool it does not have.
                Err(ErrorData::invalid_params("tool not found", None))
            } else {
                self.shared
                    .router
                    .call(ToolCallContext::new(self, request, context))
                    .await
            };
        self.shared.faults.after_call(&cancelled).await;
        result
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        self.log_list_trace("resources/list", &context);
        let counter = Resource::new(COUNTER_URI, "counter")
            .with_description("A number that the `bump` tool increments.")
            .with_mime_type("text/plain");
        Ok(ListResourcesResult::with_all_items(vec![counter]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        if self.shared.prompts
            && let Some(item) = crate::prompts::read_item(&request.uri)
        {
            return Ok(ReadResourceResult::new(vec![item]).into());
        }
        if !known_resource(&request.uri) {
            return Err(not_found(&request.uri));
        }
        let value = Counter::get().value().to_string();
        Ok(ReadResourceResult::new(vec![ResourceContents::text(value, COUNTER_URI)]).into())
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        if !known_resource(&request.uri) {
            return Err(not_found(&request.uri));
        }
        if let Some(log) = &self.shared.call_log {
            log.record_event("subscribe", &request.uri);
        }
        Counter::get().watch(Watcher::Session {
            session: self.session,
            uri: request.uri,
            peer: context.peer,
        });
        Ok(())
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        if let Some(log) = &self.shared.call_log {
            log.record_event("unsubscribe", &request.uri);
        }
        Counter::get().forget(&Watcher::Session {
            session: self.session,
            uri: request.uri,
            peer: context.peer,
        });
        Ok(())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        self.log_list_trace("prompts/list", &context);
        let prompts = if self.shared.prompts {
            crate::prompts::prompts()
        } else {
            Vec::new()
        };
        Ok(ListPromptsResult::with_all_items(prompts))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetPromptResponse, ErrorData> {
        if !self.shared.prompts {
            return Err(ErrorData::method_not_found::<
                rmcp::model::GetPromptRequestMethod,
            >());
        }
        crate::prompts::get(&request).map(GetPromptResult::into)
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let templates = if self.shared.prompts {
            crate::prompts::templates()
        } else {
            Vec::new()
        };
        Ok(ListResourceTemplatesResult::with_all_items(templates))
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        if !self.shared.prompts {
            return Err(ErrorData::method_not_found::<
                rmcp::model::CompleteRequestMethod,
            >());
        }
        crate::prompts::complete(&request)
    }

    /// Listen streams carry resource updates only: a listen that names no resource is refused
    /// (-32601, as before resources were served), so tool-list changes keep arriving as plain
    /// notifications. Of the resources named, the known ones are accepted.
    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        let uris = requested.resource_subscriptions.as_ref()?;
        if uris.iter().any(|uri| uri == COUNTER_URI) {
            COUNTER.pending_listens.fetch_add(1, Ordering::SeqCst);
        }
        Some(
            SubscriptionFilter::builder()
                .resource_subscriptions(uris.iter().filter(|uri| known_resource(uri)).cloned())
                .build(),
        )
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let watcher = Watcher::Listen {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            sink: context.sink().clone(),
        };
        let counted = watcher.watches(COUNTER_URI);
        Counter::get().watch(watcher.clone());
        if counted {
            let _ = COUNTER
                .pending_listens
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
        }
        context.cancelled().await;
        Counter::get().forget(&watcher);
        Ok(())
    }
}

fn not_found(uri: &str) -> ErrorData {
    ErrorData::resource_not_found(format!("no resource `{uri}`"), None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_per_era() {
        let both = supported_versions(Era::Both, None);
        assert_eq!(both.first(), Some(&ProtocolVersion::V_2024_11_05));
        assert_eq!(both.last(), Some(&ProtocolVersion::V_2026_07_28));
        assert!(!supported_versions(Era::Handshake, None).contains(&ProtocolVersion::V_2026_07_28));
        assert_eq!(
            supported_versions(Era::Stateless, None),
            [ProtocolVersion::V_2026_07_28]
        );
        assert_eq!(
            supported_versions(Era::Handshake, Some(&ProtocolVersion::V_2024_11_05)),
            [ProtocolVersion::V_2024_11_05]
        );
    }

    #[test]
    fn pages_walk_to_the_end() {
        assert_eq!(page(5, None, false, None), Ok((0..5, None)));
        assert_eq!(
            page(5, Some(2), false, None),
            Ok((0..2, Some("page-2".into())))
        );
        assert_eq!(
            page(5, Some(2), false, Some("page-2")),
            Ok((2..4, Some("page-4".into())))
        );
        assert_eq!(page(5, Some(2), false, Some("page-4")), Ok((4..5, None)));
        assert!(page(5, Some(2), false, Some("bogus")).is_err());
        assert!(page(5, Some(2), false, Some("page-9")).is_err());
    }

    #[test]
    fn repeated_cursor_never_ends() {
        for cursor in [None, Some("page-2")] {
            let Ok((_, next)) = page(5, Some(2), true, cursor) else {
                panic!("a valid cursor");
            };
            assert_eq!(next.as_deref(), Some("page-2"));
        }
    }
}
