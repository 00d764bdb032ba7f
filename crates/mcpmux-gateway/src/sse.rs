//! The legacy HTTP+SSE transport (MCP 2024-11-05) for clients that predate streamable HTTP:
//! `GET /sse` opens a session's event stream, whose first event (`endpoint`) names
//! `/message?sessionId=…`; `POST /message?sessionId=…` takes one JSON-RPC message (202) whose
//! answers and notifications go out on that stream. rmcp 3.9 has no server for it: each session
//! is the same `Gateway` served by rmcp over a transport of two queues. Owns the session table
//! and the bounds a hostile client cannot break: a cap on open sessions (in all and per
//! identity), ids nobody can guess,
//! a bounded queue per stream (a reader that falls behind is cut off), a deadline for the
//! handshake, the session ended when its stream drops, a session bound to the identity that
//! opened it (another's POST finds none); and which requests still await their
//! answer (what a graceful shutdown waits for). Knows nothing of the door's rules (`http`
//! puts these routes behind them) nor of what the messages mean (the handler's).

use std::collections::{HashMap, HashSet, VecDeque};
use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::{
    Router,
    body::Bytes,
    extract::{DefaultBodyLimit, Query, State},
    http::{HeaderMap, StatusCode, header},
    response::{
        IntoResponse, Response,
        sse::{Event, KeepAlive, Sse},
    },
    routing::{get, post},
};
use rmcp::{
    RoleServer, ServiceExt,
    model::{ClientJsonRpcMessage, ClientNotification, JsonRpcMessage, RequestId},
    service::TxJsonRpcMessage,
    transport::Transport,
};
use tokio::sync::{Notify, mpsc};
use tokio_util::sync::{CancellationToken, DropGuard};

use crate::handler::Gateway;
use crate::identity::{Identity, ServedRequest};

/// Legacy SSE sessions open at once, at most; past it `GET /sse` answers 503.
pub const DEFAULT_MAX_SSE_SESSIONS: usize = 1024;
/// Messages waiting to be written to one stream, at most, before its reader is cut off.
pub const DEFAULT_SSE_QUEUE_MESSAGES: usize = 1024;
/// Bytes waiting to be written to one stream, at most, before its reader is cut off (one
/// message alone may exceed it: it is already in memory).
pub const DEFAULT_SSE_QUEUE_BYTES: usize = 16 * 1024 * 1024;
/// Messages posted to one session that rmcp has not read yet; past it a POST answers 503.
/// rmcp reads as fast as messages come (each request is handled in a task of its own).
const INBOUND_QUEUE: usize = 256;
/// How long a new session may take to finish its handshake. `initialize` itself waits for the
/// servers' startup (the handler's list wait, 10 s by default).
const HANDSHAKE_WITHIN: Duration = Duration::from_secs(60);
/// A comment line this often keeps proxies from closing a quiet stream.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// The bounds of legacy SSE serving.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SseOptions {
    /// Sessions open at once, at most.
    pub max_sessions: usize,
    /// Sessions one identity may hold at once.
    pub max_per_client: usize,
    /// Messages queued for one stream, at most, before its reader is cut off.
    pub queue_messages: usize,
    /// Bytes queued for one stream, at most, before its reader is cut off.
    pub queue_bytes: usize,
}

impl Default for SseOptions {
    fn default() -> Self {
        Self {
            max_sessions: DEFAULT_MAX_SSE_SESSIONS,
            max_per_client: crate::sessions::DEFAULT_MAX_SESSIONS_PER_CLIENT,
            queue_messages: DEFAULT_SSE_QUEUE_MESSAGES,
            queue_bytes: DEFAULT_SSE_QUEUE_BYTES,
        }
    }
}

/// Legacy SSE serving: the session table and what every session shares. Cheap to clone.
#[derive(Clone)]
pub(crate) struct Legacy {
    shared: Arc<Shared>,
}

struct Shared {
    gateway: Gateway,
    options: SseOptions,
    max_body_bytes: usize,
    table: Mutex<HashMap<String, Session>>,
    /// Cancelled when serving ends: every session closes.
    closing: CancellationToken,
    /// Requests of every session whose answer is not queued yet.
    awaiting: Arc<Awaiting>,
}

/// One session, as the POST handler finds it.
#[derive(Clone)]
struct Session {
    inbound: mpsc::Sender<ClientJsonRpcMessage>,
    ledger: Arc<Ledger>,
    /// Who opened it: another identity's POST finds no such session.
    owner: Option<crate::guard::Client>,
}

impl Legacy {
    /// Legacy SSE over `gateway`; every session ends when `closing` is cancelled.
    pub(crate) fn new(
        gateway: Gateway,
        options: SseOptions,
        max_body_bytes: usize,
        closing: CancellationToken,
    ) -> Self {
        Legacy {
            shared: Arc::new(Shared {
                gateway,
                options,
                max_body_bytes,
                table: Mutex::new(HashMap::new()),
                closing,
                awaiting: Arc::new(Awaiting::default()),
            }),
        }
    }

    /// `GET /sse` and `POST /message`, for the caller to put behind its door.
    pub(crate) fn routes(&self) -> Router {
        Router::new()
            .route("/sse", get(open))
            .route(
                "/message",
                post(message).layer(DefaultBodyLimit::max(self.shared.max_body_bytes)),
            )
            .with_state(self.clone())
    }

    /// Returns once every request sent on a legacy session has its answer queued (or its
    /// session ended).
    pub(crate) async fn idle(&self) {
        self.shared.awaiting.idle().await;
    }

    /// Sessions open now.
    pub(crate) fn sessions(&self) -> usize {
        self.table().len()
    }

    fn table(&self) -> MutexGuard<'_, HashMap<String, Session>> {
        mcpmux::cli_support::sync::lock(&self.shared.table)
    }

    fn find(&self, id: &str) -> Option<Session> {
        self.table().get(id).cloned()
    }

    /// Forgets a session that ended: its id answers 404 from now on.
    fn forget(&self, id: &str) {
        let session = self.table().remove(id);
        if let Some(session) = session {
            session.ledger.forget_all();
        }
    }
}

/// `GET /sse`: a new session and its event stream, the `endpoint` event first.
async fn open(State(legacy): State<Legacy>) -> Response {
    let shared = &legacy.shared;
    if shared.closing.is_cancelled() {
        return plain(
            StatusCode::SERVICE_UNAVAILABLE,
            "Service Unavailable: the gateway is shutting down",
        );
    }
    let id = session_id();
    let identity = ServedRequest::current();
    let (inbound, received) = mpsc::channel(INBOUND_QUEUE);
    let ledger = Arc::new(Ledger::new(shared.awaiting.clone()));
    let queue = Arc::new(Queue::new(&shared.options));
    // Ended when the client goes (its stream dropped), falls behind, or serving ends.
    let ended = shared.closing.child_token();
    {
        let mut table = legacy.table();
        if table.len() >= shared.options.max_sessions {
            return plain(
                StatusCode::SERVICE_UNAVAILABLE,
                "Service Unavailable: the most legacy SSE sessions the gateway keeps are open; \
                 close one, or use streamable HTTP at /mcp",
            );
        }
        let owner = identity.as_ref().map(|identity| &identity.client);
        let held = table
            .values()
            .filter(|session| owner.is_some() && session.owner.as_ref() == owner)
            .count();
        if held >= shared.options.max_per_client {
            return plain(
                StatusCode::SERVICE_UNAVAILABLE,
                "Service Unavailable: this client holds the most legacy SSE sessions one client \
                 may; close one",
            );
        }
        table.insert(
            id.clone(),
            Session {
                inbound,
                ledger: ledger.clone(),
                owner: identity.as_ref().map(|identity| identity.client.clone()),
            },
        );
    }
    let channel = Channel {
        received,
        queue: queue.clone(),
        ledger,
        ended: ended.clone(),
    };
    let identity = identity.unwrap_or_else(Identity::local);
    tokio::spawn(run(
        legacy.clone(),
        id.clone(),
        identity,
        channel,
        ended.clone(),
    ));
    let stream = Stream {
        endpoint: Some(format!("/message?sessionId={id}")),
        queue,
        _ended: ended.drop_guard(),
    };
    let events = futures::stream::unfold(stream, |mut stream| async move {
        let event = stream.next().await?;
        Some((Ok::<_, Infallible>(event), stream))
    });
    let mut response = Sse::new(events)
        .keep_alive(KeepAlive::new().interval(KEEP_ALIVE))
        .into_response();
    // A buffering proxy (nginx) would hold answers back.
    response
        .headers_mut()
        .insert("x-accel-buffering", header::HeaderValue::from_static("no"));
    response
}

/// One session served by rmcp, until it ends; then forgotten.
async fn run(
    legacy: Legacy,
    id: String,
    identity: Identity,
    channel: Channel,
    ended: CancellationToken,
) {
    // One handler per session: what a session asks and holds is its own, and its identity's.
    let gateway = legacy.shared.gateway.session_for(identity);
    let handshake = tokio::time::timeout(
        HANDSHAKE_WITHIN,
        gateway.serve_with_ct(channel, ended.clone()),
    );
    let started = tokio::select! {
        started = handshake => Some(started),
        () = ended.cancelled() => None,
    };
    match started {
        Some(Ok(Ok(running))) => {
            let ended = running.waiting().await;
            tracing::debug!(?ended, "legacy SSE session ended");
        }
        Some(Ok(Err(error))) => tracing::debug!(%error, "legacy SSE session did not start"),
        Some(Err(_)) => tracing::debug!(
            within = ?HANDSHAKE_WITHIN,
            "legacy SSE session closed: no handshake in time"
        ),
        None => tracing::debug!("legacy SSE session closed before its handshake"),
    }
    ended.cancel();
    legacy.forget(&id);
}

/// Where `POST /message` is sent.
#[derive(serde::Deserialize)]
struct Target {
    #[serde(rename = "sessionId")]
    session_id: Option<String>,
}

/// `POST /message?sessionId=…`: one JSON-RPC message for that session; its answer goes out
/// on the session's stream.
async fn message(
    State(legacy): State<Legacy>,
    Query(target): Query<Target>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let Some(id) = target.session_id else {
        return plain(
            StatusCode::BAD_REQUEST,
            "Bad Request: sessionId is missing; post to the URL of the `endpoint` event GET /sse sent",
        );
    };
    let json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split(';').next())
        .is_some_and(|mime| mime.trim().eq_ignore_ascii_case("application/json"));
    if !json {
        return plain(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "Unsupported Media Type: send the message as Content-Type: application/json",
        );
    }
    let message: ClientJsonRpcMessage = match serde_json::from_slice(&body) {
        Ok(message) => message,
        Err(error) => {
            return plain(
                StatusCode::BAD_REQUEST,
                &format!("Bad Request: not one JSON-RPC message ({error})"),
            );
        }
    };
    let caller = ServedRequest::current().map(|identity| identity.client);
    let theirs = |session: &Session| matches!((&session.owner, &caller), (Some(owner), Some(caller)) if owner != caller);
    let Some(session) = legacy.find(&id).filter(|session| !theirs(session)) else {
        return plain(
            StatusCode::NOT_FOUND,
            "Not Found: no such session (it ended, or never was); open a new one with GET /sse",
        );
    };
    let asked = match &message {
        JsonRpcMessage::Request(request) => session
            .ledger
            .asked(&request.id)
            .then(|| request.id.clone()),
        JsonRpcMessage::Notification(notification) => {
            // A cancelled request gets no answer: it no longer holds a shutdown up.
            if let ClientNotification::CancelledNotification(cancelled) = &notification.notification
                && let Some(request) = &cancelled.params.request_id
            {
                session.ledger.answered(request);
            }
            None
        }
        _ => None,
    };
    match session.inbound.try_send(message) {
        Ok(()) => StatusCode::ACCEPTED.into_response(),
        Err(refused) => {
            if let Some(request) = asked {
                session.ledger.answered(&request);
            }
            match refused {
                mpsc::error::TrySendError::Full(_) => plain(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "Service Unavailable: this session has too many messages waiting; send again shortly",
                ),
                mpsc::error::TrySendError::Closed(_) => plain(
                    StatusCode::NOT_FOUND,
                    "Not Found: the session ended; open a new one with GET /sse",
                ),
            }
        }
    }
}

fn plain(status: StatusCode, text: &str) -> Response {
    (status, text.to_owned()).into_response()
}

/// 128 random bits from the thread's CSPRNG, as hex: nobody can guess another's session.
fn session_id() -> String {
    let mut bytes = [0u8; 16];
    rand::fill(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The rmcp transport of one session: messages posted come in on `received`; what rmcp sends
/// goes to the stream's queue.
struct Channel {
    received: mpsc::Receiver<ClientJsonRpcMessage>,
    queue: Arc<Queue>,
    ledger: Arc<Ledger>,
    ended: CancellationToken,
}

/// Why a message could not go out.
#[derive(Debug, thiserror::Error)]
enum Undelivered {
    /// The stream is gone: the client left or was cut off.
    #[error("the legacy SSE stream is closed")]
    Closed,
    /// The reader fell behind: its stream is cut off.
    #[error("the legacy SSE client fell behind ({0}); its stream is cut off")]
    Behind(String),
    /// The message cannot be written as JSON.
    #[error("a message could not be written as JSON: {0}")]
    Json(#[from] serde_json::Error),
}

impl Transport<RoleServer> for Channel {
    type Error = Undelivered;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let answered = match &item {
            JsonRpcMessage::Response(response) => Some(response.id.clone()),
            JsonRpcMessage::Error(error) => error.id.clone(),
            _ => None,
        };
        let sent = serde_json::to_string(&item)
            .map_err(Undelivered::from)
            .and_then(|json| self.queue.push(json));
        if let Err(Undelivered::Behind(why)) = &sent {
            tracing::warn!(why, "legacy SSE client fell behind; session ended");
            self.ended.cancel();
        }
        if let Some(id) = answered {
            self.ledger.answered(&id);
        }
        std::future::ready(sent)
    }

    fn receive(&mut self) -> impl Future<Output = Option<ClientJsonRpcMessage>> + Send {
        self.received.recv()
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.received.close();
        Ok(())
    }
}

impl Drop for Channel {
    fn drop(&mut self) {
        // rmcp is done with the session: the stream ends once what is queued is written.
        self.queue.close();
    }
}

/// What waits to be written to one stream, bounded.
struct Queue {
    state: Mutex<QueueState>,
    ready: Notify,
    max_messages: usize,
    max_bytes: usize,
}

#[derive(Default)]
struct QueueState {
    messages: VecDeque<String>,
    bytes: usize,
    /// The reader fell behind: nothing more is written, what waited is dropped.
    cut: bool,
    /// No more messages will come: the stream ends once the queue is empty.
    closed: bool,
}

impl Queue {
    fn new(options: &SseOptions) -> Self {
        Queue {
            state: Mutex::new(QueueState::default()),
            ready: Notify::new(),
            max_messages: options.queue_messages.max(1),
            max_bytes: options.queue_bytes,
        }
    }

    fn lock(&self) -> MutexGuard<'_, QueueState> {
        mcpmux::cli_support::sync::lock(&self.state)
    }

    /// Queues one message, or cuts the stream off when the reader is too far behind.
    fn push(&self, json: String) -> Result<(), Undelivered> {
        let outcome = {
            let mut state = self.lock();
            if state.cut || state.closed {
                return Err(Undelivered::Closed);
            }
            let waiting = state.messages.len();
            let over = if waiting >= self.max_messages {
                Some(format!("{waiting} messages waiting"))
            } else if waiting > 0 && state.bytes + json.len() > self.max_bytes {
                Some(format!("{} bytes waiting", state.bytes + json.len()))
            } else {
                None
            };
            match over {
                Some(why) => {
                    // Free what waited now: the connection may linger until the peer reads.
                    state.cut = true;
                    state.messages = VecDeque::new();
                    state.bytes = 0;
                    Err(Undelivered::Behind(why))
                }
                None => {
                    state.bytes += json.len();
                    state.messages.push_back(json);
                    Ok(())
                }
            }
        };
        self.ready.notify_one();
        outcome
    }

    /// The next message to write; `None` once the stream is cut off, or closed and empty.
    async fn pop(&self) -> Option<String> {
        loop {
            let ready = self.ready.notified();
            {
                let mut state = self.lock();
                if state.cut {
                    return None;
                }
                if let Some(json) = state.messages.pop_front() {
                    state.bytes -= json.len();
                    return Some(json);
                }
                if state.closed {
                    return None;
                }
            }
            ready.await;
        }
    }

    fn close(&self) {
        self.lock().closed = true;
        self.ready.notify_one();
    }
}

/// The event stream of one session; dropping it (the client went away) ends the session.
struct Stream {
    endpoint: Option<String>,
    queue: Arc<Queue>,
    _ended: DropGuard,
}

impl Stream {
    async fn next(&mut self) -> Option<Event> {
        if let Some(endpoint) = self.endpoint.take() {
            return Some(Event::default().event("endpoint").data(endpoint));
        }
        let json = self.queue.pop().await?;
        Some(Event::default().event("message").data(json))
    }
}

/// The requests of one session whose answer is not queued yet.
struct Ledger {
    ids: Mutex<HashSet<RequestId>>,
    awaiting: Arc<Awaiting>,
}

impl Ledger {
    fn new(awaiting: Arc<Awaiting>) -> Self {
        Ledger {
            ids: Mutex::new(HashSet::new()),
            awaiting,
        }
    }

    fn ids(&self) -> MutexGuard<'_, HashSet<RequestId>> {
        mcpmux::cli_support::sync::lock(&self.ids)
    }

    /// Notes a request; false when one with this id already awaits its answer.
    fn asked(&self, id: &RequestId) -> bool {
        let new = self.ids().insert(id.clone());
        if new {
            self.awaiting.add(1);
        }
        new
    }

    fn answered(&self, id: &RequestId) {
        if self.ids().remove(id) {
            self.awaiting.remove(1);
        }
    }

    fn forget_all(&self) {
        let forgotten = std::mem::take(&mut *self.ids()).len();
        self.awaiting.remove(forgotten);
    }
}

/// How many requests, over every session, await their answer.
#[derive(Default)]
struct Awaiting {
    count: AtomicUsize,
    idle: Notify,
}

impl Awaiting {
    fn add(&self, n: usize) {
        self.count.fetch_add(n, Ordering::SeqCst);
    }

    fn remove(&self, n: usize) {
        if n > 0 && self.count.fetch_sub(n, Ordering::SeqCst) == n {
            self.idle.notify_waiters();
        }
    }

    async fn idle(&self) {
        loop {
            let idle = self.idle.notified();
            if self.count.load(Ordering::SeqCst) == 0 {
                return;
            }
            idle.await;
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    fn options(messages: usize, bytes: usize) -> SseOptions {
        SseOptions {
            max_sessions: 1,
            max_per_client: 1,
            queue_messages: messages,
            queue_bytes: bytes,
        }
    }

    #[tokio::test]
    async fn a_queue_past_its_message_bound_cuts_the_stream_and_frees_what_waited() {
        let queue = Queue::new(&options(2, 1 << 20));
        queue.push("a".into()).unwrap();
        queue.push("b".into()).unwrap();
        assert!(matches!(
            queue.push("c".into()),
            Err(Undelivered::Behind(_))
        ));
        assert_eq!(queue.lock().messages.len(), 0);
        assert_eq!(queue.pop().await, None);
        assert!(matches!(queue.push("d".into()), Err(Undelivered::Closed)));
    }

    #[tokio::test]
    async fn one_large_message_passes_alone_but_not_behind_another() {
        let queue = Queue::new(&options(10, 4));
        queue.push("larger than four".into()).unwrap();
        assert_eq!(queue.pop().await.as_deref(), Some("larger than four"));
        queue.push("abc".into()).unwrap();
        assert!(matches!(
            queue.push("de".into()),
            Err(Undelivered::Behind(_))
        ));
    }

    #[tokio::test]
    async fn a_closed_queue_ends_after_what_waited_is_written() {
        let queue = Queue::new(&options(10, 1 << 20));
        queue.push("last".into()).unwrap();
        queue.close();
        assert_eq!(queue.pop().await.as_deref(), Some("last"));
        assert_eq!(queue.pop().await, None);
    }

    #[tokio::test]
    async fn the_ledger_counts_each_request_until_answered_or_forgotten() {
        let awaiting = Arc::new(Awaiting::default());
        let ledger = Ledger::new(awaiting.clone());
        assert!(ledger.asked(&RequestId::Number(1)));
        assert!(!ledger.asked(&RequestId::Number(1)));
        assert!(ledger.asked(&RequestId::String("x".into())));
        assert_eq!(awaiting.count.load(Ordering::SeqCst), 2);
        ledger.answered(&RequestId::Number(1));
        ledger.answered(&RequestId::Number(1));
        assert_eq!(awaiting.count.load(Ordering::SeqCst), 1);
        ledger.forget_all();
        assert_eq!(awaiting.count.load(Ordering::SeqCst), 0);
        tokio::time::timeout(Duration::from_secs(5), awaiting.idle())
            .await
            .unwrap();
    }

    #[test]
    fn session_ids_are_128_random_bits() {
        let a = session_id();
        let b = session_id();
        assert_eq!(a.len(), 32);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }
}
