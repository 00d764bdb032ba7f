//! `--conformance`: the server the official MCP conformance suite's server scenarios
//! (`conformance server --url …`) expect, after the suite's own reference "everything" server:
//! the `test_*` tools (`tools`), the `test://` resources and template, the `test_*` prompts
//! and completions (`catalog`), the 2026-07-28 multi round-trip tools and prompt (`input`),
//! the diagnostic tools of the 2026-07-28 stateless scenario (`stateless`) and who hears of
//! list changes (`changes`), the SEP-2663 Tasks extension's fixture tools and `tasks/*`
//! (`tasks`), `logging/setLevel`, and resource subscriptions in both eras.
//!
//! Owns what this server says about itself and the routing of each request to `tools` or
//! `catalog`. Knows nothing of HTTP (`http` serves it) nor of the fault knobs of the default
//! test server: the two share no state.

#![allow(deprecated)] // Logging, sampling and subscriptions are SEP-2577-deprecated in rmcp, yet part of the handshake era the suite tests.

mod catalog;
mod changes;
mod input;
mod stateless;
mod tasks;
mod tools;

use std::{
    borrow::Cow,
    collections::HashSet,
    sync::{Arc, Mutex, MutexGuard},
};

use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::{
        CacheScope, CallToolRequestParams, CallToolResponse, CancelTaskParams,
        CompleteRequestParams, CompleteResult, GetPromptRequestParams, GetPromptResponse,
        GetTaskParams, GetTaskResult, Implementation, JsonObject, ListPromptsResult,
        ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, LoggingLevel,
        LoggingMessageNotificationParam, PaginatedRequestParams, ProtocolVersion,
        ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities, ServerConfig,
        SetLevelRequestParams, SubscribeRequestParams, SubscriptionFilter, TASKS_EXTENSION_ID,
        Tool, UnsubscribeRequestParams, UpdateTaskParams,
    },
    service::{NotificationContext, RequestContext, SubscriptionContext},
};

/// The name the server logs under, as the reference server does.
const LOGGER: &str = "conformance-test-server";

/// One session's handler (over stateless 2026-07-28 requests, one per request).
#[derive(Debug, Clone, Default)]
pub struct ConformanceServer {
    /// URIs this session subscribed to with `resources/subscribe`.
    subscriptions: Arc<Mutex<HashSet<String>>>,
}

impl ConformanceServer {
    /// A handler for a new session.
    pub fn new_session() -> Self {
        Self::default()
    }

    fn subscriptions(&self) -> MutexGuard<'_, HashSet<String>> {
        match self.subscriptions.lock() {
            Ok(subscriptions) => subscriptions,
            Err(poisoned) => poisoned.into_inner(),
        }
    }
}

/// How long lists and reads may be cached (SEP-2549), as the reference server says: five
/// minutes; nothing here depends on who asks.
const CACHE_TTL_MS: u64 = 300_000;

/// A list result with the SEP-2549 caching hints 2026-07-28 requires.
trait Cacheable {
    fn hinted(self) -> Self;
}

macro_rules! cacheable_list {
    ($($result:ty),*) => {$(
        impl Cacheable for $result {
            fn hinted(self) -> Self {
                self.with_ttl_ms(CACHE_TTL_MS).with_cache_scope(CacheScope::Public)
            }
        }
    )*};
}

cacheable_list!(
    ListToolsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListPromptsResult
);

fn cacheable<T: Cacheable>(result: T) -> T {
    result.hinted()
}

/// Sends one `notifications/message` to the client of `context`; a client that went away is
/// only logged.
async fn log(context: &RequestContext<RoleServer>, level: LoggingLevel, data: &str) {
    let message =
        LoggingMessageNotificationParam::new(level, serde_json::json!(data)).with_logger(LOGGER);
    if let Err(error) = context.peer.notify_logging_message(message).await {
        tracing::debug!(%error, "log message not sent");
    }
}

impl ServerHandler for ConformanceServer {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_logging()
            .enable_completions()
            .enable_prompts()
            .enable_prompts_list_changed()
            .enable_resources()
            .enable_resources_subscribe()
            .enable_resources_list_changed()
            .enable_tools()
            .enable_tool_list_changed()
            .build();
        let mut capabilities = capabilities;
        capabilities.extensions = Some(
            [(TASKS_EXTENSION_ID.to_owned(), JsonObject::new())]
                .into_iter()
                .collect(),
        );
        ServerConfig::new(capabilities)
            .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
            .with_server_info(Implementation::new(
                "mcpmux-testserver-conformance",
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(
                "mcpmux's test server in conformance mode: the tools, resources and prompts \
                 the official MCP conformance suite's server scenarios call.",
            )
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(ProtocolVersion::KNOWN_VERSIONS)
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let level = serde_json::to_value(request.level)
            .ok()
            .and_then(|value| value.as_str().map(str::to_owned))
            .unwrap_or_default();
        log(
            &context,
            LoggingLevel::Info,
            &format!("Log level set to: {level}"),
        )
        .await;
        Ok(())
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        Ok(catalog::complete(&request))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(cacheable(ListToolsResult::with_all_items(tools::list())))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        tools::list().into_iter().find(|tool| tool.name == name)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        tools::call(request, context).await
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(cacheable(ListResourcesResult::with_all_items(
            catalog::resources(),
        )))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(cacheable(ListResourceTemplatesResult::with_all_items(
            catalog::templates(),
        )))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        catalog::read(&request.uri).map(Into::into)
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let message = format!("Subscribed to resource: {}", request.uri);
        self.subscriptions().insert(request.uri);
        log(&context, LoggingLevel::Info, &message).await;
        Ok(())
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let message = format!("Unsubscribed from resource: {}", request.uri);
        self.subscriptions().remove(&request.uri);
        log(&context, LoggingLevel::Info, &message).await;
        Ok(())
    }

    /// 2026-07-28 listens: every category asked for that the capabilities offer is accepted
    /// (rmcp keeps the rest off the stream); `changes` tells them of list changes.
    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        changes::expect_listen();
        Some(requested.clone())
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        changes::listen(context).await;
        Ok(())
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        changes::add_session(context.peer);
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        tasks::gate(&context)?;
        tasks::get(&request.task_id)
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        tasks::gate(&context)?;
        tasks::update(&request.task_id, request.input_responses)
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        tasks::gate(&context)?;
        tasks::cancel(&request.task_id)
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        Ok(cacheable(ListPromptsResult::with_all_items(
            catalog::prompts(),
        )))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        catalog::get_prompt(&request)
    }
}
