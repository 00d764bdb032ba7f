//! Resources and prompts of the hub's servers: list (page by page, or every page), read,
//! subscribe to updates; list prompts and get one. Each request goes to one server's live
//! session with that server's call deadline; a listing over every server collects what each
//! one answers and the errors of those that could not.
//!
//! Updates of subscribed resources and list changes arrive as
//! [`ResourceEvent`](crate::host::ResourceEvent)s on the [`Host`](crate::Host) the hub was given
//! ([`Host::resource_events`](crate::Host::resource_events)). A handshake-era server is sent
//! `resources/subscribe`; a 2026-07-28 server a `subscriptions/listen`;
//! subscriptions.rs keeps them across reconnects.
//! Knows nothing of tools, policy or the catalog.

use std::collections::HashSet;
use std::future::Future;
use std::time::Duration;

use rmcp::model::{GetPromptRequestParams, PaginatedRequestParams, ReadResourceRequestParams};
use rmcp::service::{Peer, RoleClient, ServiceError};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::connection::Connection;
use crate::defaults;
use crate::error::{Error, Result};
use crate::hub::Hub;
use crate::state::{Era, ServerState};

/// One resource a server offers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Resource {
    /// The server that offers it.
    #[serde(default)]
    pub server: String,
    /// Its URI: what [`Hub::read_resource`] takes.
    pub uri: String,
    /// Its name.
    pub name: String,
    /// A human title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its MIME type, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Its size in bytes, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
}

/// A family of resources a server can read, by URI template (RFC 6570).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ResourceTemplate {
    /// The server that offers it.
    #[serde(default)]
    pub server: String,
    /// The URI template.
    pub uri_template: String,
    /// Its name.
    pub name: String,
    /// A human title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The MIME type of what it gives, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
}

/// What reading a resource gave: text or base64 bytes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum ResourceContents {
    /// Text.
    #[serde(rename_all = "camelCase")]
    Text {
        /// The URI of this part.
        uri: String,
        /// Its MIME type.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        /// The text.
        text: String,
    },
    /// Binary data, base64-encoded.
    #[serde(rename_all = "camelCase")]
    Blob {
        /// The URI of this part.
        uri: String,
        /// Its MIME type.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        /// The bytes, base64.
        blob: String,
    },
}

/// A prompt template a server offers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Prompt {
    /// The server that offers it.
    #[serde(default)]
    pub server: String,
    /// Its name: what [`Hub::get_prompt`] takes.
    pub name: String,
    /// A human title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The arguments it takes.
    #[serde(default)]
    pub arguments: Vec<PromptArgument>,
}

/// One argument of a prompt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PromptArgument {
    /// Its name.
    pub name: String,
    /// What it means.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether it must be given.
    #[serde(default)]
    pub required: bool,
}

/// A prompt filled in with its arguments: the messages to hand a model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PromptMessages {
    /// What the prompt is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The messages, in order.
    pub messages: Vec<PromptMessage>,
}

/// One message of a prompt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PromptMessage {
    /// `user` or `assistant`.
    pub role: String,
    /// One MCP content block (text, image, audio, resource link or embedded resource).
    pub content: Value,
}

/// One page of a paginated listing.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Page<T> {
    /// The items of this page.
    pub items: Vec<T>,
    /// Where the next page starts; `None` on the last page.
    pub next_cursor: Option<String>,
}

/// A listing over every server: what they gave, and why some could not answer.
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct Listing<T> {
    /// Items of every server that answered, in server order.
    pub items: Vec<T>,
    /// One error per server that offers the capability but failed to list.
    pub errors: Vec<Error>,
}

/// Which list a request walks.
#[derive(Clone, Copy)]
enum Kind {
    Resources,
    Templates,
    Prompts,
}

impl Kind {
    fn method(self) -> &'static str {
        match self {
            Kind::Resources => "resources/list",
            Kind::Templates => "resources/templates/list",
            Kind::Prompts => "prompts/list",
        }
    }

    /// The field of the result that holds the items.
    fn field(self) -> &'static str {
        match self {
            Kind::Resources => "resources",
            Kind::Templates => "resourceTemplates",
            Kind::Prompts => "prompts",
        }
    }

    /// Whether the server says it has this kind of thing.
    fn offered_by(self, peer: &Peer<RoleClient>) -> bool {
        let Some(info) = peer.peer_info() else {
            return false;
        };
        match self {
            Kind::Resources | Kind::Templates => info.capabilities.resources.is_some(),
            Kind::Prompts => info.capabilities.prompts.is_some(),
        }
    }
}

impl Hub {
    /// One page of `server`'s resources, from `cursor` (`None`: the first page).
    pub async fn list_resources_page(
        &self,
        server: &str,
        cursor: Option<String>,
    ) -> Result<Page<Resource>> {
        let connection = self.connection_named(server)?;
        list_page(connection, Kind::Resources, cursor).await
    }

    /// Every resource of `server`, or of every server offering resources (`None`).
    pub async fn resources(&self, server: Option<&str>) -> Result<Listing<Resource>> {
        self.list_all(server, Kind::Resources).await
    }

    /// Every resource template of `server`, or of every server offering resources (`None`).
    pub async fn resource_templates(
        &self,
        server: Option<&str>,
    ) -> Result<Listing<ResourceTemplate>> {
        self.list_all(server, Kind::Templates).await
    }

    /// Every prompt of `server`, or of every server offering prompts (`None`).
    pub async fn prompts(&self, server: Option<&str>) -> Result<Listing<Prompt>> {
        self.list_all(server, Kind::Prompts).await
    }

    /// Reads `uri` from `server`; without a server, from the one that lists `uri` (or the only
    /// server offering resources).
    pub async fn read_resource(
        &self,
        server: Option<&str>,
        uri: &str,
    ) -> Result<Vec<ResourceContents>> {
        let connection = match server {
            Some(name) => self.connection_named(name)?,
            None => self.owner_of(uri).await?,
        };
        let params = ReadResourceRequestParams::new(uri);
        let result = request(connection, "resources/read", |peer| async move {
            peer.read_resource(params).await
        })
        .await?;
        let value = to_json(&connection.spec.name, &result)?;
        from_field(&connection.spec.name, &value, "contents")
    }

    /// The prompt `name` of `server` filled in with `arguments`.
    pub async fn get_prompt(
        &self,
        server: &str,
        name: &str,
        arguments: Map<String, Value>,
    ) -> Result<PromptMessages> {
        let connection = self.connection_named(server)?;
        let mut params = GetPromptRequestParams::new(name);
        if !arguments.is_empty() {
            params.arguments = Some(arguments);
        }
        let result = request(connection, "prompts/get", |peer| async move {
            peer.get_prompt(params).await
        })
        .await?;
        let value = to_json(server, &result)?;
        serde_json::from_value(value).map_err(|e| Error::Protocol {
            server: server.to_string(),
            message: format!("prompts/get answered something that is not a prompt: {e}"),
        })
    }

    pub(crate) fn connection_named(&self, server: &str) -> Result<&Connection> {
        self.connections()
            .iter()
            .find(|c| c.spec.name == server)
            .ok_or_else(|| Error::Unavailable {
                server: server.to_string(),
                state: "unknown".into(),
                reason: "no server of that name is configured (`mcpmux servers` lists them)".into(),
            })
    }

    async fn list_all<T: DeserializeOwned + Named>(
        &self,
        server: Option<&str>,
        kind: Kind,
    ) -> Result<Listing<T>> {
        if let Some(name) = server {
            let connection = self.connection_named(name)?;
            return Ok(Listing {
                items: list_every_page(connection, kind).await?,
                errors: Vec::new(),
            });
        }
        let listings = self.connections().iter().map(|connection| async move {
            connection.settled().await;
            match connection.peer() {
                Some(peer) if kind.offered_by(&peer) => {
                    Some(list_every_page::<T>(connection, kind).await)
                }
                _ => None,
            }
        });
        let mut listing = Listing {
            items: Vec::new(),
            errors: Vec::new(),
        };
        for result in futures::future::join_all(listings)
            .await
            .into_iter()
            .flatten()
        {
            match result {
                Ok(mut items) => listing.items.append(&mut items),
                Err(e) => listing.errors.push(e),
            }
        }
        Ok(listing)
    }

    /// The server to read `uri` from: the one that lists it, else the only one with resources.
    async fn owner_of(&self, uri: &str) -> Result<&Connection> {
        let listing: Listing<Resource> = self.list_all(None, Kind::Resources).await?;
        if let Some(resource) = listing.items.iter().find(|r| r.uri == uri) {
            return self.connection_named(&resource.server);
        }
        let offering: Vec<&Connection> = self
            .connections()
            .iter()
            .filter(|c| c.peer().is_some_and(|p| Kind::Resources.offered_by(&p)))
            .collect();
        match offering.as_slice() {
            [only] => Ok(only),
            [] => Err(Error::Unavailable {
                server: "*".into(),
                state: "none".into(),
                reason: format!("no connected server offers resources, so `{uri}` cannot be read"),
            }),
            _ => Err(Error::Unavailable {
                server: "*".into(),
                state: "ambiguous".into(),
                reason: format!(
                    "no server lists `{uri}` and several offer resources: name the server"
                ),
            }),
        }
    }
}

/// Gives a listed item the name of its server.
trait Named {
    fn set_server(&mut self, server: &str);
}

impl Named for Resource {
    fn set_server(&mut self, server: &str) {
        self.server = server.to_string();
    }
}

impl Named for ResourceTemplate {
    fn set_server(&mut self, server: &str) {
        self.server = server.to_string();
    }
}

impl Named for Prompt {
    fn set_server(&mut self, server: &str) {
        self.server = server.to_string();
    }
}

/// Every page, stopping on a repeated cursor (a broken server would loop).
async fn list_every_page<T: DeserializeOwned + Named>(
    connection: &Connection,
    kind: Kind,
) -> Result<Vec<T>> {
    let mut items = Vec::new();
    let mut seen = HashSet::new();
    let mut cursor = None;
    for _ in 0..defaults::MAX_LIST_PAGES {
        let mut page = list_page(connection, kind, cursor).await?;
        items.append(&mut page.items);
        match page.next_cursor {
            Some(next) if seen.insert(next.clone()) => cursor = Some(next),
            Some(next) => {
                tracing::warn!(server = %connection.spec.name, cursor = %next, "{} repeated a cursor; stopping pagination", kind.method());
                break;
            }
            None => break,
        }
    }
    Ok(items)
}

async fn list_page<T: DeserializeOwned + Named>(
    connection: &Connection,
    kind: Kind,
    cursor: Option<String>,
) -> Result<Page<T>> {
    let server = connection.spec.name.as_str();
    let params = Some(PaginatedRequestParams::default().with_cursor(cursor));
    let value = match kind {
        Kind::Resources => {
            let result = request(connection, kind.method(), |peer| async move {
                peer.list_resources(params).await
            })
            .await?;
            to_json(server, &result)?
        }
        Kind::Templates => {
            let result = request(connection, kind.method(), |peer| async move {
                peer.list_resource_templates(params).await
            })
            .await?;
            to_json(server, &result)?
        }
        Kind::Prompts => {
            let result = request(connection, kind.method(), |peer| async move {
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

/// Sends one request on the live session of `connection` (waiting for its first connection
/// attempt to settle), within the server's call deadline.
async fn request<T, F, Fut>(connection: &Connection, what: &str, sender: F) -> Result<T>
where
    F: FnOnce(Peer<RoleClient>) -> Fut,
    Fut: Future<Output = std::result::Result<T, ServiceError>>,
{
    let peer = live(connection, what, Connection::peer).await?;
    send(connection, what, sender(peer)).await
}

/// What `get` takes from the live session of `connection`, once its first connection attempt
/// has settled (within the server's call deadline); why not, when there is no live session.
pub(crate) async fn live<T>(
    connection: &Connection,
    what: &str,
    get: impl FnOnce(&Connection) -> Option<T>,
) -> Result<T> {
    let got = match tokio::time::timeout(connection.spec.call_timeout, connection.settled()).await {
        Ok(()) => get(connection),
        Err(_) => None,
    };
    got.ok_or_else(|| {
        let state = connection.state();
        Error::Unavailable {
            server: connection.spec.name.clone(),
            state: state.label().into(),
            reason: match state {
                ServerState::Failed { error, .. } => error,
                ServerState::NeedsAuth { message } => message,
                ServerState::Disabled { reason } => reason,
                _ => format!("not connected, so `{what}` cannot be sent"),
            },
        }
    })
}

/// Awaits one request within the server's call deadline, its failure said as an [`Error`].
pub(crate) async fn send<T>(
    connection: &Connection,
    what: &str,
    request: impl Future<Output = std::result::Result<T, ServiceError>>,
) -> Result<T> {
    let server = connection.spec.name.as_str();
    let timeout = connection.spec.call_timeout;
    match tokio::time::timeout(timeout, request).await {
        Ok(Ok(result)) => Ok(result),
        Ok(Err(e)) => Err(service_error(server, what, timeout, e)),
        Err(_) => Err(Error::Timeout {
            server: server.to_string(),
            what: what.to_string(),
            after: timeout,
        }),
    }
}

/// The era of a live session, by the rule the handshake named it with: a protocol version
/// without `initialize` is 2026-07-28's. Read from the session itself, so it holds while the
/// circuit breaker has the server `disabled` and cannot describe another session than the
/// one the request goes to.
pub(crate) fn era_of(peer: &Peer<RoleClient>) -> Era {
    match peer.peer_info() {
        Some(info) if !info.protocol_version.has_initialize() => Era::Stateless,
        _ => Era::Handshake,
    }
}

fn service_error(server: &str, what: &str, timeout: Duration, e: ServiceError) -> Error {
    match e {
        ServiceError::McpError(data) => Error::Server {
            server: server.to_string(),
            code: data.code.0,
            message: data.message.into_owned(),
        },
        ServiceError::Timeout { .. } => Error::Timeout {
            server: server.to_string(),
            what: what.to_string(),
            after: timeout,
        },
        ServiceError::TransportClosed | ServiceError::TransportSend(_) => Error::ConnectionLost {
            server: server.to_string(),
            what: what.to_string(),
            reason: e.to_string(),
            stderr_tail: Vec::new(),
        },
        other => Error::Protocol {
            server: server.to_string(),
            message: format!("{what}: {other}"),
        },
    }
}

fn to_json<T: Serialize>(server: &str, value: &T) -> Result<Value> {
    serde_json::to_value(value).map_err(|e| Error::Protocol {
        server: server.to_string(),
        message: format!("cannot read the answer: {e}"),
    })
}

/// The list in `field` of a result; items that do not parse are skipped with a warning.
fn from_field<T: DeserializeOwned>(server: &str, value: &Value, field: &str) -> Result<Vec<T>> {
    let Some(items) = value.get(field).and_then(Value::as_array) else {
        return Err(Error::Protocol {
            server: server.to_string(),
            message: format!("the answer has no `{field}` list"),
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

    use super::*;
    use serde_json::json;

    #[test]
    fn contents_are_text_or_blob() {
        let contents: Vec<ResourceContents> = serde_json::from_value(json!([
            {"uri": "a://1", "mimeType": "text/plain", "text": "hi"},
            {"uri": "a://2", "blob": "AAE="}
        ]))
        .unwrap();
        assert!(matches!(&contents[0], ResourceContents::Text { text, .. } if text == "hi"));
        assert!(
            matches!(&contents[1], ResourceContents::Blob { blob, mime_type: None, .. } if blob == "AAE=")
        );
    }

    #[test]
    fn items_that_do_not_parse_are_skipped() {
        let value = json!({"prompts": [{"name": "p", "arguments": [{"name": "x", "required": true}]}, {"nope": 1}]});
        let prompts: Vec<Prompt> = from_field("s", &value, "prompts").unwrap();
        assert_eq!(prompts.len(), 1);
        assert!(prompts[0].arguments[0].required);
        assert!(from_field::<Prompt>("s", &json!({}), "prompts").is_err());
    }
}
