//! What a server may ask of the harness (MCP's server→client requests): the filesystem roots it
//! may work in (`roots/list`), a model completion (`sampling/createMessage`) and input from the
//! user (`elicitation/create`). The harness registers callbacks on a [`Host`] and hands it to the
//! hub in [`HubOptions::with_host`](crate::HubOptions::with_host).
//!
//! A capability is advertised in the handshake only when its callback is set, and a request for
//! one that is not set is refused with "method not found" — never answered with a guess.
//!
//! Roots are offered only when the harness asks for them ([`Host::project`] offers the project
//! directory, [`Host::with_roots`] any list): a server such as the reference filesystem server
//! *replaces* the directories it was configured with by the client's roots, so offering the
//! current directory unasked would silently narrow a server the user set up explicitly.
//!
//! A harness that serves the hub to MCP clients of its own (a gateway) answers none of these
//! itself: each is passed on, as MCP's JSON, to the client whose call caused it — the
//! [`Relay`] that call carries ([`CallOptions::with_relay`](crate::CallOptions::with_relay)).
//! [`Host::relaying`] advertises the three to every server for that.
//!
//! Also here: resource-update and list-change notices, which a harness receives from
//! [`Host::resource_events`], and the servers' own log messages ([`Host::logs`]).
//!
//! Knows nothing of rmcp or connections: requests and replies are plain types and JSON, so an
//! rmcp upgrade does not reach the harness.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tokio::sync::broadcast;

use crate::broadcast::Broadcast;

/// Room for bursts of resource notices before a slow subscriber starts missing them.
const RESOURCE_EVENT_BUFFER: usize = 256;

/// Room for bursts of server log messages before a slow subscriber starts missing them (a
/// server may log thousands of lines a second; the oldest are dropped, never the server
/// slowed).
const LOG_BUFFER: usize = 1024;

/// The harness's answers to server→client requests. Cheap to clone; clones share callbacks and
/// the resource-event channel.
#[derive(Clone)]
pub struct Host {
    roots: Option<Arc<dyn RootsProvider>>,
    sampler: Option<Arc<dyn Sampler>>,
    elicitor: Option<Arc<dyn Elicitor>>,
    /// Roots, sampling and elicitation are advertised though no callback answers them: the
    /// relay of the call that caused each one does.
    relaying: bool,
    events: Broadcast<ResourceEvent>,
    logs: Broadcast<ServerLog>,
}

impl std::fmt::Debug for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Host")
            .field("roots", &self.roots.is_some())
            .field("sampling", &self.sampler.is_some())
            .field("elicitation", &self.elicitor.is_some())
            .field("relaying", &self.relaying)
            .finish()
    }
}

impl Default for Host {
    /// Offers nothing: no roots, no sampling, no elicitation.
    fn default() -> Self {
        Self::new()
    }
}

impl Host {
    /// A host that offers nothing: no roots, no sampling, no elicitation.
    pub fn new() -> Self {
        Self {
            roots: None,
            sampler: None,
            elicitor: None,
            relaying: false,
            events: Broadcast::new(RESOURCE_EVENT_BUFFER),
            logs: Broadcast::new(LOG_BUFFER),
        }
    }

    /// A host for a hub served to MCP clients: roots, sampling and elicitation (form and URL)
    /// are advertised to every server, and each such request is passed on by the [`Relay`] of
    /// the call that caused it. A request no call explains (asked outside any call, or while
    /// calls of several parties are in flight on a session that cannot tell them apart) goes to
    /// this host's own callbacks, if any were set, and is refused otherwise.
    pub fn relaying() -> Self {
        Self {
            relaying: true,
            ..Self::new()
        }
    }

    /// A host whose one root is the project directory (the current directory); nothing else.
    pub fn project() -> Self {
        // A deleted current directory leaves only "." to go on.
        let project = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
        Self::new().with_project_dir(project)
    }

    /// Builder-style: the one root is this directory.
    pub fn with_project_dir(self, dir: impl AsRef<Path>) -> Self {
        self.with_roots(vec![Root::directory(dir)])
    }

    /// Builder-style: where the roots come from (a `Vec<Root>` is a fixed list).
    pub fn with_roots(mut self, roots: impl RootsProvider + 'static) -> Self {
        self.roots = Some(Arc::new(roots));
        self
    }

    /// Builder-style: offer no roots (`roots/list` is refused and not advertised).
    pub fn without_roots(mut self) -> Self {
        self.roots = None;
        self
    }

    /// Builder-style: who answers `sampling/createMessage`.
    pub fn with_sampler(mut self, sampler: impl Sampler + 'static) -> Self {
        self.sampler = Some(Arc::new(sampler));
        self
    }

    /// Builder-style: who answers `elicitation/create`.
    pub fn with_elicitor(mut self, elicitor: impl Elicitor + 'static) -> Self {
        self.elicitor = Some(Arc::new(elicitor));
        self
    }

    /// Resource updates (of subscribed resources) and resource/prompt list changes, from every
    /// server of the hubs this host is given to.
    pub fn resource_events(&self) -> broadcast::Receiver<ResourceEvent> {
        self.events.subscribe()
    }

    /// The servers' log messages (`notifications/message`), from every server of the hubs
    /// this host is given to.
    pub fn logs(&self) -> broadcast::Receiver<ServerLog> {
        self.logs.subscribe()
    }

    /// Whether `roots/list` is advertised (answered by a callback, or relayed).
    pub fn offers_roots(&self) -> bool {
        self.roots.is_some() || self.relaying
    }

    /// Whether `sampling/createMessage` is advertised.
    pub fn offers_sampling(&self) -> bool {
        self.sampler.is_some() || self.relaying
    }

    /// Whether form-mode `elicitation/create` is advertised.
    pub fn offers_elicitation(&self) -> bool {
        self.elicitor.is_some() || self.relaying
    }

    /// Whether URL-mode `elicitation/create` is advertised too.
    pub fn offers_url_elicitation(&self) -> bool {
        self.relaying || self.elicitor.as_ref().is_some_and(|e| e.supports_url())
    }

    /// Whether these requests are meant to be relayed (see [`Host::relaying`]).
    pub fn is_relaying(&self) -> bool {
        self.relaying
    }

    /// Whether this host's own elicitor handles URL-mode requests.
    pub(crate) fn elicitor_takes_urls(&self) -> bool {
        self.elicitor.as_ref().is_some_and(|e| e.supports_url())
    }

    /// Whether a callback of this host answers `method` itself.
    pub(crate) fn answers(&self, method: &str) -> bool {
        match method {
            "roots/list" => self.roots.is_some(),
            "sampling/createMessage" => self.sampler.is_some(),
            "elicitation/create" => self.elicitor.is_some(),
            _ => false,
        }
    }

    /// The roots for `server`, or `None` when none are offered.
    pub(crate) async fn roots(&self, server: &str) -> Option<Vec<Root>> {
        match &self.roots {
            Some(provider) => Some(provider.roots(server).await),
            None => None,
        }
    }

    /// Asks the sampler, or `None` when there is none.
    pub(crate) async fn sample(
        &self,
        request: SamplingRequest,
    ) -> Option<Result<SamplingReply, HostError>> {
        match &self.sampler {
            Some(sampler) => Some(sampler.create_message(request).await),
            None => None,
        }
    }

    /// Asks the elicitor, or `None` when there is none. An accepted form gets the schema's
    /// defaults for the fields the user left out (SEP-1034).
    pub(crate) async fn elicit(&self, request: ElicitationRequest) -> Option<ElicitationReply> {
        let elicitor = self.elicitor.as_ref()?;
        let schema = match &request.kind {
            ElicitationKind::Form { schema } => Some(schema.clone()),
            ElicitationKind::Url { .. } => None,
        };
        let reply = elicitor.elicit(request).await;
        Some(match (reply, schema) {
            (ElicitationReply::Accept(mut content), Some(schema)) => {
                apply_defaults(&schema, &mut content);
                ElicitationReply::Accept(content)
            }
            (reply, _) => reply,
        })
    }

    pub(crate) fn publish(&self, event: ResourceEvent) {
        self.events.send(event);
    }

    /// Whether anyone reads the servers' logs (else a log message is not copied for them).
    pub(crate) fn wants_logs(&self) -> bool {
        self.logs.receiver_count() > 0
    }

    pub(crate) fn publish_log(&self, log: ServerLog) {
        self.logs.send(log);
    }
}

/// One server→client request as the server sent it, for a [`Relay`] to pass on.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Relayed {
    /// The server that asks.
    pub server: String,
    /// `roots/list`, `sampling/createMessage` or `elicitation/create`.
    pub method: String,
    /// The request's `params` as sent (an empty object for `roots/list`).
    pub params: Value,
}

/// Passes the server→client requests one call causes on to someone else (the MCP client the
/// call was made for), as MCP's JSON both ways, rather than answering them: what
/// [`CallOptions::with_relay`](crate::CallOptions::with_relay) carries. The hub knows which
/// call a request belongs to when the transport says so (a streamable-HTTP server sends it
/// on that call's response stream; a 2026-07-28 server answers the call `input_required`),
/// or when every call in flight on that server is one party's.
pub trait Relay: Send + Sync {
    /// Who the call is made for. Calls whose relays name the same party are one client's: a
    /// request that can only be narrowed down to calls of one party goes to that party.
    fn party(&self) -> u64;

    /// Passes `request` on: the answer's `result` object, or the error the server is sent
    /// (refuse what the client cannot answer with code -32601, "method not found").
    fn relay(&self, request: Relayed) -> BoxFuture<'_, Result<Value, HostError>>;

    /// What the party can answer, as MCP client capabilities in JSON (`{"elicitation": {},
    /// …}`): a 2026-07-28 server is told these for this call (its request's `_meta`), in
    /// place of the hub's own, so it asks only for what the party can answer and refuses
    /// what needs more. `None` (the default): the hub's own. A handshake-era server heard the
    /// hub's own in the handshake; nothing can change them per call.
    fn capabilities(&self) -> Option<Value> {
        None
    }

    /// Passes on a whole round of a 2026-07-28 server (the requests of one `input_required`
    /// answer), keyed as the server keyed them: the answers under the same keys, or the
    /// error that ends the call (2026-07-28 has no way to refuse one request of a round).
    /// The default passes each request on through [`Relay::relay`], all at once.
    fn relay_round(
        &self,
        round: RelayedRound,
    ) -> BoxFuture<'_, Result<Map<String, Value>, HostError>> {
        Box::pin(async move {
            let asked = round.requests.into_iter().map(|(key, request)| async move {
                self.relay(request).await.map(|answer| (key, answer))
            });
            Ok(futures::future::try_join_all(asked)
                .await?
                .into_iter()
                .collect())
        })
    }
}

/// One round of a 2026-07-28 server's requests (an `input_required` answer), for a [`Relay`]
/// to pass on whole.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RelayedRound {
    /// The server that asks.
    pub server: String,
    /// Each request under the server's key, in the order the server sent them.
    pub requests: Vec<(String, Relayed)>,
}

/// How much a log message matters (RFC 5424's levels, as MCP's `logging/setLevel` names
/// them), least first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum LogLevel {
    /// Detailed debugging.
    Debug,
    /// Informational.
    Info,
    /// Normal but significant.
    Notice,
    /// Warning conditions.
    Warning,
    /// Error conditions.
    Error,
    /// Critical conditions.
    Critical,
    /// Action must be taken immediately.
    Alert,
    /// The system is unusable.
    Emergency,
}

/// One log message a server sent (`notifications/message`).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ServerLog {
    /// The server that sent it.
    pub server: String,
    /// How much it matters.
    pub level: LogLevel,
    /// The server's logger name, if it gave one.
    pub logger: Option<String>,
    /// What it said (any JSON).
    pub data: Value,
    /// The party (a [`Relay::party`]) whose call the server was serving when it sent this: the
    /// one party with calls in flight on that server's session as the message was read (a log
    /// carries no request id, so nothing finer can be known). `None` when no relayed call was
    /// in flight, or calls of several parties were.
    pub party: Option<u64>,
}

/// A filesystem root a server may work in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Root {
    /// A `file://` URI.
    pub uri: String,
    /// A short name to show.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

impl Root {
    /// A root with this URI.
    pub fn new(uri: impl Into<String>, name: Option<String>) -> Self {
        Self {
            uri: uri.into(),
            name,
        }
    }

    /// The directory `dir` as a `file://` root named after its last component.
    pub fn directory(dir: impl AsRef<Path>) -> Self {
        let dir = dir.as_ref();
        let absolute = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
        let name = absolute
            .file_name()
            .map(|n| n.to_string_lossy().into_owned());
        Self {
            uri: file_uri(&absolute),
            name,
        }
    }
}

/// `file://` + the path, percent-encoding what a URI path cannot hold.
fn file_uri(path: &Path) -> String {
    let mut uri = String::from("file://");
    for byte in path.to_string_lossy().bytes() {
        match byte {
            b'A'..=b'Z'
            | b'a'..=b'z'
            | b'0'..=b'9'
            | b'/'
            | b'-'
            | b'_'
            | b'.'
            | b'~'
            | b'!'
            | b'$'
            | b'&'
            | b'\''
            | b'('
            | b')'
            | b'*'
            | b'+'
            | b','
            | b';'
            | b'='
            | b':'
            | b'@' => uri.push(byte as char),
            other => uri.push_str(&format!("%{other:02X}")),
        }
    }
    uri
}

/// Where the roots come from. `Vec<Root>` is a fixed list; any
/// `Fn(&str) -> impl Future<Output = Vec<Root>>` (given the server's name) is one too.
pub trait RootsProvider: Send + Sync {
    /// The roots offered to `server`.
    fn roots(&self, server: &str) -> BoxFuture<'_, Vec<Root>>;
}

impl RootsProvider for Vec<Root> {
    fn roots(&self, _server: &str) -> BoxFuture<'_, Vec<Root>> {
        let roots = self.clone();
        Box::pin(async move { roots })
    }
}

impl<F, Fut> RootsProvider for F
where
    F: Fn(&str) -> Fut + Send + Sync,
    Fut: Future<Output = Vec<Root>> + Send + 'static,
{
    fn roots(&self, server: &str) -> BoxFuture<'_, Vec<Root>> {
        Box::pin(self(server))
    }
}

/// A server's request for a model completion (`sampling/createMessage`).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SamplingRequest {
    /// The server that asks.
    pub server: String,
    /// The conversation, oldest first.
    pub messages: Vec<SamplingMessage>,
    /// The system prompt the server suggests.
    pub system_prompt: Option<String>,
    /// The most tokens to generate.
    pub max_tokens: u32,
    /// The request's `params` as sent (model preferences, temperature, stop sequences, tools…).
    pub params: Value,
}

impl SamplingRequest {
    /// The text of the last user message, if it has any: what a simple sampler answers.
    pub fn last_user_text(&self) -> Option<String> {
        let message = self.messages.iter().rev().find(|m| m.role == "user")?;
        let texts: Vec<&str> = message
            .content
            .iter()
            .filter_map(|block| block.get("text").and_then(Value::as_str))
            .collect();
        (!texts.is_empty()).then(|| texts.join("\n"))
    }
}

/// One message of a sampling conversation.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SamplingMessage {
    /// `user` or `assistant`.
    pub role: String,
    /// MCP content blocks (`{"type": "text", "text": …}`, images, audio, tool use/results).
    pub content: Vec<Value>,
}

impl SamplingMessage {
    /// A message from `role` with these content blocks.
    pub fn new(role: impl Into<String>, content: Vec<Value>) -> Self {
        Self {
            role: role.into(),
            content,
        }
    }
}

/// The harness's completion for a sampling request.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SamplingReply {
    /// The model that answered.
    pub model: String,
    /// One MCP content block (`{"type": "text", "text": …}`).
    pub content: Value,
    /// Why generation stopped (`endTurn`, `maxTokens`, `stopSequence`, `toolUse`).
    pub stop_reason: Option<String>,
}

impl SamplingReply {
    /// A text answer that ended its turn.
    pub fn text(model: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            model: model.into(),
            content: serde_json::json!({"type": "text", "text": text.into()}),
            stop_reason: Some("endTurn".into()),
        }
    }
}

/// Answers sampling requests. Any `Fn(SamplingRequest) -> impl Future<Output =
/// Result<SamplingReply, HostError>>` is one.
pub trait Sampler: Send + Sync {
    /// Completes one request (or refuses it: [`HostError::rejected`]).
    fn create_message(
        &self,
        request: SamplingRequest,
    ) -> BoxFuture<'_, Result<SamplingReply, HostError>>;
}

impl<F, Fut> Sampler for F
where
    F: Fn(SamplingRequest) -> Fut + Send + Sync,
    Fut: Future<Output = Result<SamplingReply, HostError>> + Send + 'static,
{
    fn create_message(
        &self,
        request: SamplingRequest,
    ) -> BoxFuture<'_, Result<SamplingReply, HostError>> {
        Box::pin(self(request))
    }
}

/// A server's request for input from the user (`elicitation/create`).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ElicitationRequest {
    /// The server that asks.
    pub server: String,
    /// What to show the user.
    pub message: String,
    /// A form to fill in, or a URL to open.
    pub kind: ElicitationKind,
}

/// What kind of input a server asks for.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum ElicitationKind {
    /// A form: an object schema of primitive properties (with optional `default`s).
    Form {
        /// The requested JSON schema.
        schema: Value,
    },
    /// A URL the user should open (offered only when the elicitor supports it).
    Url {
        /// Where to send the user.
        url: String,
        /// The server's id for this elicitation.
        elicitation_id: String,
    },
}

/// The user's answer to an elicitation.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ElicitationReply {
    /// Submitted; for a form, the values given (omitted fields get the schema's defaults).
    Accept(Map<String, Value>),
    /// Said no.
    Decline,
    /// Dismissed without choosing.
    Cancel,
}

/// Answers elicitation requests. Any `Fn(ElicitationRequest) -> impl Future<Output =
/// ElicitationReply>` is one (form mode only).
pub trait Elicitor: Send + Sync {
    /// Asks the user.
    fn elicit(&self, request: ElicitationRequest) -> BoxFuture<'_, ElicitationReply>;

    /// Whether URL-mode requests are handled too (advertised as `elicitation.url`).
    fn supports_url(&self) -> bool {
        false
    }
}

impl<F, Fut> Elicitor for F
where
    F: Fn(ElicitationRequest) -> Fut + Send + Sync,
    Fut: Future<Output = ElicitationReply> + Send + 'static,
{
    fn elicit(&self, request: ElicitationRequest) -> BoxFuture<'_, ElicitationReply> {
        Box::pin(self(request))
    }
}

/// A refusal or failure of a host callback, sent to the server as a JSON-RPC error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message} ({code})")]
#[non_exhaustive]
pub struct HostError {
    /// The JSON-RPC error code.
    pub code: i32,
    /// What to tell the server.
    pub message: String,
}

impl HostError {
    /// An error with this JSON-RPC code and message (a relayed client's own answer).
    pub fn new(code: i32, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }

    /// The user (or the harness's policy) said no: code -1, as the spec's sampling example.
    pub fn rejected(message: impl Into<String>) -> Self {
        Self {
            code: -1,
            message: message.into(),
        }
    }

    /// Something went wrong on our side: JSON-RPC internal error.
    pub fn failed(message: impl Into<String>) -> Self {
        Self {
            code: -32603,
            message: message.into(),
        }
    }
}

/// A notice about a server's resources or prompts.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ResourceEvent {
    /// A subscribed resource changed: read it again.
    Updated {
        /// The server.
        server: String,
        /// The resource.
        uri: String,
    },
    /// A subscription ended without being unsubscribed (the server refused it after a
    /// reconnect, or ended its listen): no updates come for `uri` until it is subscribed again.
    SubscriptionLost {
        /// The server.
        server: String,
        /// The resource.
        uri: String,
        /// Why, in words.
        reason: String,
    },
    /// The server's resource list changed.
    ResourcesChanged {
        /// The server.
        server: String,
    },
    /// The server's prompt list changed.
    PromptsChanged {
        /// The server.
        server: String,
    },
}

/// SEP-1034: a form field the user left out takes the schema's `default`, if it has one.
pub(crate) fn apply_defaults(schema: &Value, content: &mut Map<String, Value>) {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return;
    };
    for (name, property) in properties {
        if let Some(default) = property.get("default")
            && !content.contains_key(name)
        {
            content.insert(name.clone(), default.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use serde_json::json;

    #[test]
    fn defaults_fill_only_omitted_fields() {
        let schema = json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "default": "John Doe"},
                "age": {"type": "integer", "default": 30},
                "score": {"type": "number", "default": 95.5},
                "status": {"type": "string", "enum": ["active", "inactive"], "default": "active"},
                "verified": {"type": "boolean", "default": true},
                "nick": {"type": "string"}
            }
        });
        let mut content = Map::new();
        content.insert("age".into(), json!(41));
        apply_defaults(&schema, &mut content);
        assert_eq!(
            Value::Object(content),
            json!({"name": "John Doe", "age": 41, "score": 95.5, "status": "active", "verified": true})
        );
    }

    #[test]
    fn directory_roots_are_file_uris() {
        let root = Root::directory("/tmp/my project");
        assert_eq!(root.uri, "file:///tmp/my%20project");
        assert_eq!(root.name.as_deref(), Some("my project"));
    }

    #[tokio::test]
    async fn elicitation_applies_defaults_to_accepted_forms() {
        let host = Host::new().with_elicitor(|_request: ElicitationRequest| async {
            ElicitationReply::Accept(Map::new())
        });
        let reply = host
            .elicit(ElicitationRequest {
                server: "s".into(),
                message: "m".into(),
                kind: ElicitationKind::Form {
                    schema: json!({"type": "object", "properties": {"n": {"type": "integer", "default": 3}}}),
                },
            })
            .await
            .unwrap();
        let mut expected = Map::new();
        expected.insert("n".into(), json!(3));
        assert_eq!(reply, ElicitationReply::Accept(expected));
    }

    #[tokio::test]
    async fn nothing_is_offered_without_callbacks() {
        let host = Host::new();
        assert!(!host.offers_roots() && !host.offers_sampling() && !host.offers_elicitation());
        assert!(host.roots("s").await.is_none());
        assert!(Host::default().roots("s").await.is_none());
        assert_eq!(Host::project().roots("s").await.unwrap().len(), 1);
    }
}
