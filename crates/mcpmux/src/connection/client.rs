//! Our side of each MCP session: the client identity and capabilities we announce, the
//! notifications we route (progress to the call that asked for it, list changes to the
//! supervisor, resource notices and logs to the host, logs to tracing too), and the
//! server→client requests (roots, sampling, elicitation): passed on by the [`Relay`] of the
//! call they belong to (`callers` says which), else handed to the harness's [`Host`]
//! callbacks — converting between rmcp's types and the host's plain ones here, so rmcp stays
//! inside `connection/`.

use std::sync::Arc;

use rmcp::ClientHandler;
#[allow(deprecated)]
use rmcp::model::{
    ClientCapabilities, ClientConfig, CreateMessageRequestParams, CreateMessageResult,
    ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationCapability, ErrorCode,
    ErrorData, FormElicitationCapability, Implementation, ListRootsResult, LoggingLevel,
    LoggingMessageNotificationParam, ProgressNotificationParam, ProtocolVersion,
    ResourceUpdatedNotificationParam, RootsCapabilities, SamplingCapability,
    UrlElicitationCapability,
};
use rmcp::service::{InboundStreamOrigin, NotificationContext, RequestContext, RoleClient};
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::sync::Notify;

use super::callers::{Attribution, CallParty, Callers, LogParty};
use super::progress_routes::ProgressRoutes;
use crate::host::{
    ElicitationKind, ElicitationReply, ElicitationRequest, Host, HostError, Relay, Relayed,
    ResourceEvent, SamplingMessage, SamplingRequest, ServerLog,
};

/// The rmcp client handler of one session.
pub(crate) struct HubClient {
    pub(crate) server: String,
    pub(crate) progress: ProgressRoutes,
    /// Signalled when the server says its tool list changed.
    pub(crate) tools_changed: Arc<Notify>,
    /// The harness's callbacks for server→client requests.
    pub(crate) host: Host,
    /// The calls in flight on this session: whose a server→client request is.
    pub(crate) callers: Callers,
}

/// Who answers one server→client request.
enum Answerer {
    /// The relay of the call it belongs to.
    Relay(Arc<dyn Relay>),
    /// The harness's host callbacks.
    Host,
}

/// The client identity announced in every session (rmcp's default says "rmcp"), with a
/// capability for each host callback that is set and none for the others.
#[allow(deprecated)]
pub(crate) fn client_info(host: &Host) -> ClientConfig {
    let mut capabilities = ClientCapabilities::default();
    if host.offers_roots() {
        // Roots are fixed for a hub's lifetime: no `roots/list_changed` is ever sent.
        capabilities.roots = Some(RootsCapabilities::default());
    }
    if host.offers_sampling() {
        capabilities.sampling = Some(SamplingCapability::default());
    }
    if host.offers_elicitation() {
        let mut elicitation = ElicitationCapability::new();
        elicitation.form = Some(FormElicitationCapability::new());
        if host.offers_url_elicitation() {
            elicitation.url = Some(UrlElicitationCapability::default());
        }
        capabilities.elicitation = Some(elicitation);
    }
    let mut info = ClientConfig::new(
        capabilities,
        Implementation::new("mcpmux", env!("CARGO_PKG_VERSION")),
    );
    // The handshake offers the newest handshake-era version; 2026-07-28 has no `initialize`.
    info.protocol_version = ProtocolVersion::LATEST_WITH_INITIALIZE;
    info
}

/// What rmcp adds to the `_meta` of every request of a 2026-07-28 session (its
/// `configure_direct_peer`: the server's version, our identity and capabilities); `None` for a
/// handshake-era session, whose requests carry none.
pub(crate) fn session_meta(
    peer: &rmcp::Peer<RoleClient>,
    host: &Host,
) -> Option<rmcp::model::RequestMetaObject> {
    let info = peer.peer_info()?;
    if info.protocol_version.has_initialize() {
        return None;
    }
    let config = client_info(host);
    let mut meta = rmcp::model::RequestMetaObject::new();
    meta.set_protocol_version(info.protocol_version.clone());
    meta.set_client_info(config.client_info);
    meta.set_client_capabilities(config.capabilities);
    Some(meta)
}

/// The refusal of a request whose capability we did not advertise.
fn not_offered(method: &str) -> ErrorData {
    ErrorData::new(
        ErrorCode::METHOD_NOT_FOUND,
        format!("{method} is not supported by this client (no host callback is set)"),
        None,
    )
}

/// The refusal of a request no call explains, by a hub that only relays such requests.
fn outside_any_call(method: &str, server: &str) -> ErrorData {
    ErrorData::new(
        ErrorCode::METHOD_NOT_FOUND,
        format!(
            "{method} from server `{server}` came outside any tool call, and this client passes \
             such requests only to the client whose call caused them"
        ),
        None,
    )
}

/// The refusal of a request that could belong to the calls of several parties.
fn ambiguous(method: &str, server: &str, parties: usize) -> ErrorData {
    ErrorData::new(
        ErrorCode::INVALID_REQUEST,
        format!(
            "{method} from server `{server}` cannot be tied to one tool call: calls made for \
             {parties} different clients are in flight on this session and its transport does \
             not say which one asks (streamable HTTP does; stdio does not), so it is refused \
             rather than shown to the wrong client"
        ),
        None,
    )
}

fn host_error(error: HostError) -> ErrorData {
    ErrorData::new(ErrorCode(error.code), error.message, None)
}

/// Runs a host callback until it answers or the server cancels the request.
async fn unless_cancelled<T>(
    context: &RequestContext<RoleClient>,
    work: impl Future<Output = T>,
) -> Result<T, ErrorData> {
    tokio::select! {
        result = work => Ok(result),
        () = context.ct.cancelled() => Err(ErrorData::new(
            ErrorCode::INTERNAL_ERROR,
            "the request was cancelled by the server",
            None,
        )),
    }
}

#[allow(deprecated)]
fn sampling_request(server: &str, params: CreateMessageRequestParams) -> SamplingRequest {
    let system_prompt = params.system_prompt.clone();
    let max_tokens = params.max_tokens;
    let raw = serde_json::to_value(&params).unwrap_or(Value::Null);
    let messages = raw
        .get("messages")
        .and_then(Value::as_array)
        .map(|messages| {
            messages
                .iter()
                .map(|m| {
                    let role = m.get("role").and_then(Value::as_str).unwrap_or("user");
                    let content = match m.get("content") {
                        Some(Value::Array(blocks)) => blocks.clone(),
                        Some(block) => vec![block.clone()],
                        None => Vec::new(),
                    };
                    SamplingMessage::new(role, content)
                })
                .collect()
        })
        .unwrap_or_default();
    SamplingRequest {
        server: server.to_string(),
        messages,
        system_prompt,
        max_tokens,
        params: raw,
    }
}

impl HubClient {
    /// Who answers `method`, asked as `context` says: the relay of the call it belongs to,
    /// else the host's callback; refused when neither can.
    async fn answerer(
        &self,
        method: &str,
        context: &RequestContext<RoleClient>,
    ) -> Result<Answerer, ErrorData> {
        let origin = context.extensions.get::<InboundStreamOrigin>();
        match self.callers.attribute(origin).await {
            Attribution::Call(CallParty {
                relay: Some(relay), ..
            }) => Ok(Answerer::Relay(relay)),
            Attribution::Call(_) | Attribution::Outside if self.host.answers(method) => {
                Ok(Answerer::Host)
            }
            Attribution::Outside if self.host.is_relaying() => {
                Err(outside_any_call(method, &self.server))
            }
            Attribution::Call(_) | Attribution::Outside => Err(not_offered(method)),
            Attribution::Ambiguous(parties) => Err(ambiguous(method, &self.server, parties)),
        }
    }

    /// Passes `method` with `params` on through `relay` and reads its answer as `T`.
    async fn relay<T: DeserializeOwned>(
        &self,
        relay: Arc<dyn Relay>,
        method: &str,
        params: Value,
        context: &RequestContext<RoleClient>,
    ) -> Result<T, ErrorData> {
        tracing::debug!(server = %self.server, method, party = relay.party(), "relaying a server request to the caller's client");
        let request = Relayed {
            server: self.server.clone(),
            method: method.to_string(),
            params,
        };
        let answer = unless_cancelled(context, relay.relay(request))
            .await?
            .map_err(host_error)?;
        serde_json::from_value(answer).map_err(|e| {
            ErrorData::new(
                ErrorCode::INTERNAL_ERROR,
                format!("the answer relayed to {method} is not a valid MCP result: {e}"),
                None,
            )
        })
    }
}

/// A request's params as JSON, to be relayed.
fn params_of(params: &impl serde::Serialize) -> Result<Value, ErrorData> {
    serde_json::to_value(params).map_err(|e| {
        ErrorData::new(
            ErrorCode::INTERNAL_ERROR,
            format!("the request could not be encoded to be relayed: {e}"),
            None,
        )
    })
}

impl ClientHandler for HubClient {
    fn get_info(&self) -> ClientConfig {
        client_info(&self.host)
    }

    // Roots are deprecated by SEP-2577, but every handshake-era server may still ask.
    #[allow(deprecated)]
    async fn list_roots(
        &self,
        context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        if let Answerer::Relay(relay) = self.answerer("roots/list", &context).await? {
            let params = Value::Object(serde_json::Map::new());
            return self.relay(relay, "roots/list", params, &context).await;
        }
        let roots = unless_cancelled(&context, self.host.roots(&self.server))
            .await?
            .ok_or_else(|| not_offered("roots/list"))?;
        tracing::debug!(server = %self.server, roots = roots.len(), "answering roots/list");
        let roots = roots
            .into_iter()
            .map(|root| {
                let r = rmcp::model::Root::new(root.uri);
                match root.name {
                    Some(name) => r.with_name(name),
                    None => r,
                }
            })
            .collect();
        Ok(ListRootsResult::new(roots))
    }

    #[allow(deprecated)]
    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        let method = "sampling/createMessage";
        if let Answerer::Relay(relay) = self.answerer(method, &context).await? {
            return self
                .relay(relay, method, params_of(&params)?, &context)
                .await;
        }
        tracing::debug!(server = %self.server, "asking the host to sample");
        let request = sampling_request(&self.server, params);
        let reply = unless_cancelled(&context, self.host.sample(request))
            .await?
            .ok_or_else(|| not_offered("sampling/createMessage"))?
            .map_err(host_error)?;
        let mut result = serde_json::json!({
            "model": reply.model,
            "role": "assistant",
            "content": reply.content,
        });
        if let Some(reason) = reply.stop_reason {
            result["stopReason"] = Value::String(reason);
        }
        serde_json::from_value(result).map_err(|e| {
            ErrorData::new(
                ErrorCode::INTERNAL_ERROR,
                format!("the host's sampling reply is not a valid MCP message: {e}"),
                None,
            )
        })
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let method = "elicitation/create";
        if let Answerer::Relay(relay) = self.answerer(method, &context).await? {
            return self
                .relay(relay, method, params_of(&request)?, &context)
                .await;
        }
        let (message, kind) = match request {
            ElicitRequestParams::FormElicitationParams {
                message,
                requested_schema,
                ..
            } => (
                message,
                ElicitationKind::Form {
                    schema: serde_json::to_value(&requested_schema).unwrap_or(Value::Null),
                },
            ),
            ElicitRequestParams::UrlElicitationParams {
                message,
                url,
                elicitation_id,
                ..
            } => {
                if !self.host.elicitor_takes_urls() {
                    return Err(not_offered("URL-mode elicitation/create"));
                }
                (
                    message,
                    ElicitationKind::Url {
                        url,
                        elicitation_id,
                    },
                )
            }
            #[allow(unreachable_patterns)]
            _ => return Err(not_offered("this elicitation/create mode")),
        };
        tracing::debug!(server = %self.server, "asking the host for input (elicitation)");
        let request = ElicitationRequest {
            server: self.server.clone(),
            message,
            kind,
        };
        let reply = unless_cancelled(&context, self.host.elicit(request))
            .await?
            .ok_or_else(|| not_offered("elicitation/create"))?;
        Ok(match reply {
            ElicitationReply::Accept(content) => {
                ElicitResult::new(ElicitationAction::Accept).with_content(Value::Object(content))
            }
            ElicitationReply::Decline => ElicitResult::new(ElicitationAction::Decline),
            ElicitationReply::Cancel => ElicitResult::new(ElicitationAction::Cancel),
        })
    }

    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        tracing::debug!(server = %self.server, uri = %params.uri, "resource updated");
        self.host.publish(ResourceEvent::Updated {
            server: self.server.clone(),
            uri: params.uri,
        });
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        use crate::telemetry::lifecycle::{Moment, mark};
        mark(&self.server, Moment::ResourcesChanged, None);
        self.host.publish(ResourceEvent::ResourcesChanged {
            server: self.server.clone(),
        });
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        use crate::telemetry::lifecycle::{Moment, mark};
        mark(&self.server, Moment::PromptsChanged, None);
        self.host.publish(ResourceEvent::PromptsChanged {
            server: self.server.clone(),
        });
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        if !self.progress.deliver(&params) {
            tracing::trace!(server = %self.server, token = ?params.progress_token, "progress for a call that has ended");
        }
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        tracing::debug!(server = %self.server, "server says its tool list changed");
        self.tools_changed.notify_one();
    }

    // Logging is deprecated by SEP-2577, but the Node reference servers still send it and a
    // server's own log is worth keeping in ours.
    #[allow(deprecated)]
    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        context: NotificationContext<RoleClient>,
    ) {
        let logger = params.logger.as_deref().unwrap_or("");
        if self.host.wants_logs() {
            // Stamped as the message was read (`progress_tap`): this task may run after the
            // call that caused it has ended.
            let party = context.extensions.get::<LogParty>().and_then(|p| p.0);
            self.host.publish_log(ServerLog {
                server: self.server.clone(),
                level: crate::rmcp_model::log_level(params.level),
                logger: params.logger.clone(),
                data: params.data.clone(),
                party,
            });
        }
        match params.level {
            LoggingLevel::Emergency
            | LoggingLevel::Alert
            | LoggingLevel::Critical
            | LoggingLevel::Error => {
                tracing::warn!(server = %self.server, logger, data = %params.data, "server log")
            }
            _ => tracing::debug!(server = %self.server, logger, data = %params.data, "server log"),
        }
    }
}
