//! Requests to one server beside tool calls: its resources, templates and prompts (a page, or
//! every page with a guard against a cursor that loops), a resource read, a prompt filled in,
//! a completion of an argument, the level of the logs it sends. Each goes to the live session
//! (waiting for the first connection attempt to settle) within the server's call deadline, and
//! its failure is said as an [`Error`] naming the server. A read and a prompt may take rounds
//! of a 2026-07-28 server's `input_required`, as a tool call does (`exchange.rs`); a completion
//! and the log level leave the session the same one way (`outgoing.rs`); the lists still
//! through rmcp's peer (its list cache). Knows nothing of other servers: the hub fans out.

use std::collections::HashSet;
use std::future::Future;

use rmcp::model::{
    ArgumentInfo, ClientRequest, CompleteRequest, CompleteRequestParams, CompletionContext,
    PaginatedRequestParams, Reference, ServerCapabilities, ServerResult,
};
// Logging is SEP-2577-deprecated, yet part of the handshake era.
#[allow(deprecated)]
use rmcp::model::{SetLevelRequest, SetLevelRequestParams};
use rmcp::service::{Peer, RoleClient, ServiceError};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use tracing::Instrument;

use super::Connection;
use super::call_path::Trip;
use super::exchange::{CallKind, CancelOnDrop, Roundtrip, request_meta, service_error};
use crate::call_options::CallOptions;
use crate::defaults;
use crate::error::{Error, Result};
use crate::host::LogLevel;
use crate::listings::{Completion, CompletionRef, Named, Page, PromptMessages, ResourceContents};

/// Which list a request walks.
#[derive(Clone, Copy)]
pub(crate) enum ListKind {
    /// `resources/list`.
    Resources,
    /// `resources/templates/list`.
    Templates,
    /// `prompts/list`.
    Prompts,
}

impl ListKind {
    fn method(self) -> &'static str {
        match self {
            ListKind::Resources => "resources/list",
            ListKind::Templates => "resources/templates/list",
            ListKind::Prompts => "prompts/list",
        }
    }

    /// The field of the result that holds the items.
    fn field(self) -> &'static str {
        match self {
            ListKind::Resources => "resources",
            ListKind::Templates => "resourceTemplates",
            ListKind::Prompts => "prompts",
        }
    }

    /// Whether the server says it has this kind of thing.
    fn offered_by(self, peer: &Peer<RoleClient>) -> bool {
        let Some(info) = peer.peer_info() else {
            return false;
        };
        match self {
            ListKind::Resources | ListKind::Templates => info.capabilities.resources.is_some(),
            ListKind::Prompts => info.capabilities.prompts.is_some(),
        }
    }
}

impl Connection {
    /// Whether the live session says it has this kind of thing (false while not connected).
    pub(crate) fn offers(&self, kind: ListKind) -> bool {
        self.peer().is_some_and(|peer| kind.offered_by(&peer))
    }

    /// What the live session says it offers (nothing while not connected).
    fn capabilities(&self) -> Option<ServerCapabilities> {
        self.peer()
            .and_then(|peer| peer.peer_info())
            .map(|info| info.capabilities.clone())
    }

    /// Whether the live session completes prompt and template arguments.
    pub(crate) fn offers_completions(&self) -> bool {
        self.capabilities().is_some_and(|c| c.completions.is_some())
    }

    /// Whether the live session sends log messages (and takes `logging/setLevel`).
    pub(crate) fn offers_logging(&self) -> bool {
        self.capabilities().is_some_and(|c| c.logging.is_some())
    }

    /// Whether the live session notifies updates of resources one subscribes to.
    pub(crate) fn offers_subscriptions(&self) -> bool {
        self.capabilities().is_some_and(|c| {
            c.resources
                .as_ref()
                .is_some_and(|r| r.subscribe == Some(true))
        })
    }

    /// Whether the server offers `kind` once its first connection attempt has settled (a
    /// lazy server is started: the listing needs it).
    pub(crate) async fn offers_when_settled(&self, kind: ListKind) -> bool {
        self.started().await;
        self.offers(kind)
    }

    /// Every page, stopping on a repeated cursor (a broken server would loop).
    pub(crate) async fn list_every_page<T: DeserializeOwned + Named>(
        &self,
        kind: ListKind,
    ) -> Result<Vec<T>> {
        let mut items = Vec::new();
        let mut seen = HashSet::new();
        let mut cursor = None;
        for _ in 0..defaults::MAX_LIST_PAGES {
            let mut page = self.list_page(kind, cursor).await?;
            items.append(&mut page.items);
            match page.next_cursor {
                Some(next) if seen.insert(next.clone()) => cursor = Some(next),
                Some(next) => {
                    tracing::warn!(server = %self.spec.name, cursor = %next, "{} repeated a cursor; stopping pagination", kind.method());
                    break;
                }
                None => break,
            }
        }
        Ok(items)
    }

    /// One page of `kind`, from `cursor` (`None`: the first page), in a client span of its
    /// own whose trace context the request carries (SEP-414), as every request mcpmux sends.
    pub(crate) async fn list_page<T: DeserializeOwned + Named>(
        &self,
        kind: ListKind,
        cursor: Option<String>,
    ) -> Result<Page<T>> {
        let span = tracing::info_span!(
            "mcp list",
            otel.name = kind.method(),
            otel.kind = "client",
            mcp.method.name = kind.method(),
            mcpmux.server = self.spec.name.as_str(),
        );
        self.list_page_traced(kind, cursor).instrument(span).await
    }

    async fn list_page_traced<T: DeserializeOwned + Named>(
        &self,
        kind: ListKind,
        cursor: Option<String>,
    ) -> Result<Page<T>> {
        let server = self.spec.name.as_str();
        let mut params = PaginatedRequestParams::default().with_cursor(cursor);
        params.meta = super::trace_meta::traced(None);
        let params = Some(params);
        let value = match kind {
            ListKind::Resources => {
                let result = self
                    .request(kind.method(), |peer| async move {
                        peer.list_resources(params).await
                    })
                    .await?;
                to_json(server, &result)?
            }
            ListKind::Templates => {
                let result = self
                    .request(kind.method(), |peer| async move {
                        peer.list_resource_templates(params).await
                    })
                    .await?;
                to_json(server, &result)?
            }
            ListKind::Prompts => {
                let result = self
                    .request(kind.method(), |peer| async move {
                        peer.list_prompts(params).await
                    })
                    .await?;
                to_json(server, &result)?
            }
        };
        let mut items: Vec<T> = from_field(server, &value, kind.field())?;
        for item in &mut items {
            item.set_server(server);
        }
        let next_cursor = value
            .get("nextCursor")
            .and_then(Value::as_str)
            .filter(|c| !c.is_empty())
            .map(str::to_string);
        Ok(Page { items, next_cursor })
    }

    /// Reads `uri`; a 2026-07-28 server's rounds of `input_required` answered as `options`
    /// says (its relay, else the host).
    pub(crate) async fn read_resource(
        &self,
        uri: &str,
        options: &CallOptions,
        trip: &mut Trip,
    ) -> Result<Vec<ResourceContents>> {
        let roundtrip = Roundtrip::Read {
            uri: uri.to_string(),
        };
        let value = match self
            .roundtrip("resources/read", roundtrip, options, trip)
            .await?
        {
            ServerResult::ReadResourceResult(result) => to_json(&self.spec.name, &result)?,
            other => return Err(self.not_an_answer("resources/read", "resource contents", &other)),
        };
        from_field(&self.spec.name, &value, "contents")
    }

    /// The prompt `name` filled in with `arguments`; a 2026-07-28 server's rounds of
    /// `input_required` answered as `options` says (its relay, else the host).
    pub(crate) async fn get_prompt(
        &self,
        name: &str,
        arguments: Map<String, Value>,
        options: &CallOptions,
        trip: &mut Trip,
    ) -> Result<PromptMessages> {
        let server = self.spec.name.as_str();
        let roundtrip = Roundtrip::Prompt {
            name: name.to_string(),
            arguments: (!arguments.is_empty()).then_some(arguments),
        };
        let value = match self
            .roundtrip("prompts/get", roundtrip, options, trip)
            .await?
        {
            ServerResult::GetPromptResult(result) => to_json(server, &result)?,
            other => return Err(self.not_an_answer("prompts/get", "prompt", &other)),
        };
        serde_json::from_value(value).map_err(|e| Error::Protocol {
            server: server.to_string(),
            message: format!("prompts/get answered something that is not a prompt: {e}"),
            source: crate::error::cause(e),
        })
    }

    /// Sends `roundtrip` on the live session (waiting for the first connection attempt to
    /// settle) in as many rounds as the server asks for, within the call deadline `options`
    /// gives (the server's by default).
    async fn roundtrip(
        &self,
        what: &str,
        roundtrip: Roundtrip,
        options: &CallOptions,
        trip: &mut Trip,
    ) -> Result<ServerResult> {
        let live = self.live_part(what, Connection::live).await?;
        trip.attempts += 1;
        trip.era = Some(live.era);
        let timeout = options.timeout.unwrap_or(self.spec.call_timeout);
        self.exchange(&live, roundtrip, options, timeout, CallKind::Plain)
            .await
    }

    /// The error of an answer to `method` that is not `expected`.
    fn not_an_answer(&self, method: &str, expected: &str, answer: &ServerResult) -> Error {
        Error::Protocol {
            server: self.spec.name.clone(),
            message: format!(
                "{method} answered something that is not a {expected} ({})",
                super::exchange::result_kind(answer)
            ),
            source: None,
        }
    }

    /// Suggestions for the value of `argument` of `reference`, given the `context` of the
    /// arguments already filled in.
    pub(crate) async fn complete(
        &self,
        reference: &CompletionRef,
        argument: (&str, &str),
        context: std::collections::HashMap<String, String>,
        trip: &mut Trip,
    ) -> Result<Completion> {
        let server = self.spec.name.as_str();
        let reference = match reference {
            CompletionRef::Prompt { name } => Reference::for_prompt(name.clone()),
            CompletionRef::Resource { uri } => Reference::for_resource(uri.clone()),
        };
        let mut params =
            CompleteRequestParams::new(reference, ArgumentInfo::new(argument.0, argument.1));
        if !context.is_empty() {
            params.context = Some(CompletionContext::with_arguments(context));
        }
        let request = ClientRequest::CompleteRequest(CompleteRequest::new(params));
        let answer = self.ask("completion/complete", request, trip).await?;
        let value = match answer {
            ServerResult::CompleteResult(result) => to_json(server, &result)?,
            _ => Value::Null,
        };
        value
            .get("completion")
            .cloned()
            .and_then(|c| serde_json::from_value(c).ok())
            .ok_or_else(|| Error::Protocol {
                server: server.to_string(),
                message: "completion/complete answered something that is not a completion".into(),
                source: None,
            })
    }

    /// Asks the server to send log messages of `level` and above (`logging/setLevel`).
    #[allow(deprecated)] // Logging is SEP-2577-deprecated, yet part of the handshake era.
    pub(crate) async fn set_log_level(&self, level: LogLevel) -> Result<()> {
        let params = SetLevelRequestParams::new(crate::rmcp_model::logging_level(level));
        let request = ClientRequest::SetLevelRequest(SetLevelRequest::new(params));
        self.ask("logging/setLevel", request, &mut Trip::default())
            .await
            .map(drop)
    }

    /// Sends `request` on the live session (waiting for the first connection attempt to
    /// settle) the one way every request leaves it (`Live::send`), within the server's call
    /// deadline; the server is told to stop if it is given up.
    async fn ask(
        &self,
        what: &str,
        request: ClientRequest,
        trip: &mut Trip,
    ) -> Result<ServerResult> {
        let live = self.live_part(what, Connection::live).await?;
        trip.attempts += 1;
        trip.era = Some(live.era);
        let answer = async {
            let meta = request_meta(&live, &CallOptions::default(), CallKind::Plain);
            let sent = live.send(request, meta, None, None).await?;
            let mut cancel = CancelOnDrop {
                peer: Some(live.peer.clone()),
                id: sent.id.clone(),
            };
            let answer = sent.answer.await;
            // Answered, or the session is gone: nothing left to cancel.
            cancel.peer = None;
            answer.unwrap_or(Err(ServiceError::TransportClosed))
        };
        self.send(what, answer).await
    }

    /// Sends one request on the live session (waiting for the first connection attempt to
    /// settle), within the server's call deadline.
    async fn request<T, F, Fut>(&self, what: &str, sender: F) -> Result<T>
    where
        F: FnOnce(Peer<RoleClient>) -> Fut,
        Fut: Future<Output = std::result::Result<T, ServiceError>>,
    {
        let peer = self.live_part(what, Connection::peer).await?;
        self.send(what, sender(peer)).await
    }

    /// What `get` takes from the live session, once the first connection attempt has settled
    /// (within the server's call deadline; a lazy server is started); why not, when there is
    /// no live session.
    pub(super) async fn live_part<T>(
        &self,
        what: &str,
        get: impl FnOnce(&Connection) -> Option<T>,
    ) -> Result<T> {
        let got = match tokio::time::timeout(self.spec.call_timeout, self.started()).await {
            Ok(()) => get(self),
            Err(_) => None,
        };
        got.ok_or_else(|| {
            tracing::debug!(server = %self.spec.name, "`{what}` not sent: no live session");
            self.unavailable(self.state())
        })
    }

    /// Awaits one request within the server's call deadline, its failure said as an [`Error`].
    pub(super) async fn send<T>(
        &self,
        what: &str,
        request: impl Future<Output = std::result::Result<T, ServiceError>>,
    ) -> Result<T> {
        let server = self.spec.name.as_str();
        let timeout = self.spec.call_timeout;
        match tokio::time::timeout(timeout, request).await {
            Ok(Ok(result)) => Ok(result),
            Ok(Err(e)) => Err(service_error(server, what, e)),
            Err(_) => Err(Error::Timeout {
                server: server.to_string(),
                what: what.to_string(),
                after: timeout,
            }),
        }
    }
}

fn to_json<T: Serialize>(server: &str, value: &T) -> Result<Value> {
    serde_json::to_value(value).map_err(|e| Error::Protocol {
        server: server.to_string(),
        message: format!("cannot read the answer: {e}"),
        source: crate::error::cause(e),
    })
}

/// The list in `field` of a result; items that do not parse are skipped with a warning.
fn from_field<T: DeserializeOwned>(server: &str, value: &Value, field: &str) -> Result<Vec<T>> {
    let Some(items) = value.get(field).and_then(Value::as_array) else {
        return Err(Error::Protocol {
            server: server.to_string(),
            message: format!("the answer has no `{field}` list"),
            source: None,
        });
    };
    Ok(items
        .iter()
        .filter_map(|item| match serde_json::from_value(item.clone()) {
            Ok(parsed) => Some(parsed),
            Err(e) => {
                tracing::warn!(server, "skipping an entry of `{field}`: {e}");
                None
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;
    use crate::listings::Prompt;

    #[test]
    fn items_that_do_not_parse_are_skipped() {
        let value = json!({"prompts": [{"name": "p", "arguments": [{"name": "x", "required": true}]}, {"nope": 1}]});
        let prompts: Vec<Prompt> = from_field("s", &value, "prompts").unwrap();
        assert_eq!(prompts.len(), 1);
        assert!(prompts[0].arguments[0].required);
        assert!(from_field::<Prompt>("s", &json!({}), "prompts").is_err());
    }
}
