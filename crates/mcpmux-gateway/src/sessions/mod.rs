//! The `/mcp` sessions (`Mcp-Session-Id`): rmcp's `LocalSessionManager` wrapped with the
//! bounds a hostile client cannot break, and a session's worker let go while it is idle. A
//! session is bound to the identity that created it (the door's, read with
//! [`ServedRequest::current`]): the same id presented by another identity is unknown to it
//! (404), and cannot be closed by it. Sessions are capped overall and per identity (past either
//! the door answers 503 with `Retry-After`); a session that has not sent
//! `notifications/initialized` within [`SessionLimits::handshake`] is closed, and one idle for
//! [`SessionLimits::idle`] is closed. When a flood has gone, its tables shrink back and the
//! memory its sessions freed is handed back to the system. Knows nothing of MCP beyond
//! `initialize` and `notifications/initialized`.
//!
//! **Parked sessions.** rmcp's worker, serve loop and handler cost some 80 KiB a session (one
//! whose handshake `handshake` answered is born parked, `born`, and has none until a request
//! needs it). A session that has sat unused for [`SessionLimits::park_after`] and holds
//! nothing beyond its handshake — no request's answer streaming, none resumable (one cut
//! before its end, within rmcp's resume window), no request running through rmcp or answered
//! inline, no handler lent to `inline`, no log level set, no subscription, no `search_tools`
//! found set (its handler says, [`AtRest`]) — is *parked*: its worker is let go and what is left is this
//! module's record (owner, `initialize` parameters, counters, clock, outbox). A parked session
//! still counts toward the caps, still belongs to its identity, and expires here (rmcp's idle
//! clock died with the worker). A `GET` naming it is served from its outbox as it is (below);
//! any other request gets it back transparently:
//! [`SessionManager::has_session`] says no, rmcp asks the [`Store`] for its `initialize`
//! parameters (refused to another identity), asks [`SessionManager::restore_session`] for a
//! new worker under the same id and replays the handshake into a fresh handler before serving
//! the request. A session whose handshake `handshake` answered is *born* parked (`born`): no
//! worker is made for it until a request needs one.
//!
//! **One owner per session.** At any moment a session's ids and answers belong to exactly one
//! of: its live worker (and `inline`, which answers on that worker's handler only while the
//! session is live and counts its requests here), or its parked record. A park is decided under
//! the table's lock, only when no request is running on either path and no one holds a copy of
//! the handler (an inline request holds one from before its lookup to its answer); it marks the
//! record parked before the worker is taken out of rmcp's map, so from then on `inline` is
//! refused the handler and rmcp finds no session and restores one. Parks and restores take one
//! lock in turn, so a restore never meets the worker being let go. A request that rmcp has just
//! found live is not parked under it: every request marks the session used, and only a session
//! unused for `park_after` is parked. Each let-go worker calls
//! [`SessionManager::close_session`] once as it ends, outside any request: the record counts
//! those goodbyes due and ignores them, while a `DELETE` (a request's) ends a session, parked
//! or not.
//!
//! **The `GET` stream is the gateway's.** A session's standalone stream is served from its
//! [`Outbox`], which its record keeps across parks, not from rmcp's worker: an open `GET` does
//! not keep a session from being parked. While a worker lives, what it sends on its
//! standalone stream is pumped into the outbox (the pump starts when it hears
//! `notifications/initialized`, and ends with the worker); list changes and logs are put there
//! directly by the watchers, whose place for the session is its outbox (handed to the handler
//! before the handshake ends, `Hooks::attach`), so a parked session hears them on its open
//! stream, or on the one it opens later. A second plain `GET` while one is open is refused
//! (409); one with `Last-Event-ID` resumes after that event; `DELETE` and expiry close the
//! outbox and end its stream.

mod born;
mod params;
mod parked;
mod streams;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use futures::{Stream, StreamExt};
use rmcp::{
    model::{
        ClientJsonRpcMessage, ClientNotification, GetExtensions, RequestId, ServerJsonRpcMessage,
    },
    transport::{
        WorkerTransport,
        streamable_http_server::session::{
            RestoreOutcome, ServerSseMessage, SessionId, SessionManager, SessionRestoreMarker,
            SessionStore,
            local::{LocalSessionManager, LocalSessionManagerError, LocalSessionWorker},
        },
    },
};

use tokio_util::sync::CancellationToken;

use crate::guard::Client;
use crate::identity::{Made, Refused, ServedRequest};
use crate::outbox::{Held, Outbox};
use params::Params;
use parked::{Store, Sweeper, TRIM_AT_LEAST, TRIM_EVERY, give_back_memory};
use streams::{Counted, pump, resumed_of, standalone_of, stream_of};

/// Sessions open at once, at most: at about 80 KiB a session with a live worker and 20 KiB an
/// idle, parked one holding its `GET` stream (BENCHMARKS.md), some 80 MB at worst.
pub const DEFAULT_MAX_SESSIONS: usize = 1000;
/// Sessions one identity may hold at once: a tenth of the whole, so one client (or one
/// leaked token) cannot take every slot.
pub const DEFAULT_MAX_SESSIONS_PER_CLIENT: usize = 100;
/// How long a session may sit without a request before it is closed: rmcp's default.
pub const DEFAULT_IDLE: Duration = Duration::from_secs(300);
/// How long a new session has to send `notifications/initialized` (clients send it at once,
/// right after the `initialize` answer): past it the session is closed.
pub const DEFAULT_HANDSHAKE: Duration = Duration::from_secs(10);
/// How long a session that holds nothing beyond its handshake may sit unused before its
/// worker is let go (parked): long enough that a client calling in a loop keeps its worker,
/// short enough that a crowd of idle sessions weighs little.
pub const DEFAULT_PARK_AFTER: Duration = Duration::from_secs(5);

/// The bounds of `/mcp` sessions.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SessionLimits {
    /// Sessions open at once, at most.
    pub max_sessions: usize,
    /// Sessions one identity may hold at once.
    pub max_per_client: usize,
    /// How long a session may be idle.
    pub idle: Duration,
    /// How long a new session has to finish its handshake.
    pub handshake: Duration,
    /// How long an idle session holding nothing beyond its handshake keeps its worker before
    /// it is parked (see the module's doc); none: never parked.
    pub park_after: Option<Duration>,
}

impl Default for SessionLimits {
    fn default() -> Self {
        Self {
            max_sessions: DEFAULT_MAX_SESSIONS,
            max_per_client: DEFAULT_MAX_SESSIONS_PER_CLIENT,
            idle: DEFAULT_IDLE,
            handshake: DEFAULT_HANDSHAKE,
            park_after: Some(DEFAULT_PARK_AFTER),
        }
    }
}

/// Why a session operation failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SessionsError {
    /// rmcp's own.
    #[error(transparent)]
    Local(#[from] LocalSessionManagerError),
    /// Past a cap.
    #[error("the gateway holds as many sessions as it keeps; try again later")]
    Full,
    /// Unknown to this identity.
    #[error("no such session")]
    NotFound,
    /// Its `GET` stream is open already.
    #[error("the session's GET stream is already open")]
    StreamHeld,
}

/// One session: who made it, whether it finished its handshake, its handler (what a request
/// answered inline is answered by: `inline`), when rmcp's worker last heard of it, and the
/// requests answered inline still running; what it takes to park it and bring it back.
struct Entry {
    owner: Option<Client>,
    initialized: bool,
    /// None while parked (and while a restored worker's handler is being made).
    handler: Option<Made>,
    /// A request answered inline does not reach rmcp's worker, whose idle clock would run out
    /// under a session busy with them: one goes through it whenever this is old.
    heard: Instant,
    running: Vec<(RequestId, CancellationToken)>,
    /// Its client's `initialize` parameters: what a restore replays.
    params: Option<Params>,
    /// When a request last named it, by either path: the park and expiry clock.
    used: Instant,
    /// Streams of its worker's handed out and not yet dropped (answers, resumed answers).
    streams: u32,
    /// Until when rmcp could still resume a stream of it cut before its end.
    resumable_until: Option<Instant>,
    /// Its worker let go: the record is all there is.
    parked: bool,
    /// Let-go workers whose own `close_session` has not come yet.
    goodbyes: u32,
    /// Its standalone stream's (`GET`): the gateway's, kept across parks.
    outbox: Arc<Outbox>,
    /// When its handshake's deadline passes, from its `initialize` answer (the sweeper
    /// closes it then if its `notifications/initialized` has not come).
    handshake_until: Option<Instant>,
    /// What its live worker sends on the standalone stream is moved into the outbox.
    pumped: bool,
}

impl Entry {
    fn new(owner: Option<Client>, handler: Option<Made>) -> Self {
        let now = Instant::now();
        Entry {
            owner,
            initialized: false,
            handler,
            heard: now,
            running: Vec::new(),
            params: None,
            used: now,
            streams: 0,
            resumable_until: None,
            parked: false,
            goodbyes: 0,
            outbox: Outbox::new(),
            pumped: false,
            handshake_until: None,
        }
    }

    /// Whether its worker may be let go now (the module's doc says when).
    fn parkable(&self, now: Instant, park_after: Duration, at_rest: AtRest) -> bool {
        let Some(handler) = &self.handler else {
            return false;
        };
        self.initialized
            && !self.parked
            && self.params.is_some()
            && self.running.is_empty()
            && self.streams == 0
            && self.resumable_until.is_none_or(|until| now >= until)
            && now.saturating_duration_since(self.used) >= park_after
            // The table's copy of the handler lent to nobody, and the handler's own say.
            && Arc::strong_count(handler) == 1
            && at_rest(handler)
    }
}

/// Whether a session's handler is at rest (the handler's to say: `Gateway::at_rest`).
pub(crate) type AtRest = fn(&Made) -> bool;

/// Hands a session's handler the outbox of its `GET` stream, before it hears
/// `notifications/initialized` (the handler's to keep: `Session::attach`).
pub(crate) type Attach = fn(&Made, &Arc<Outbox>);

/// What the sessions ask of a session's handler.
#[derive(Clone, Copy)]
pub(crate) struct Hooks {
    /// Whether it is at rest.
    pub at_rest: AtRest,
    /// Hands it its outbox.
    pub attach: Attach,
}

#[derive(Default)]
struct Table {
    entries: HashMap<SessionId, Entry>,
    /// Sessions per identity, reserved before a session is made.
    per_client: HashMap<Client, usize>,
    /// Sessions open or being made.
    total: usize,
    /// Sessions closed since memory was last handed back.
    closed: usize,
}

impl Table {
    /// One session fewer; whether it is time to hand memory back.
    fn release(&mut self, owner: Option<&Client>) -> bool {
        self.total = self.total.saturating_sub(1);
        if let Some(owner) = owner
            && let Some(count) = self.per_client.get_mut(owner)
        {
            *count = count.saturating_sub(1);
            if *count == 0 {
                self.per_client.remove(owner);
            }
        }
        // A flood gone: its slots returned.
        for capacity in [self.entries.capacity(), self.per_client.capacity()] {
            if capacity > 64 && self.total * 4 < capacity {
                self.entries.shrink_to_fit();
                self.per_client.shrink_to_fit();
                break;
            }
        }
        self.closed += 1;
        // Every so often, and when the last of a crowd has gone (not after each session of
        // a client that opens and closes one at a time: a hand-back is not free).
        if self.closed >= TRIM_EVERY || (self.total == 0 && self.closed >= TRIM_AT_LEAST) {
            self.closed = 0;
            return true;
        }
        false
    }
}

/// Whose a session is, to the caller.
enum Whose {
    Mine,
    Theirs,
    Missing,
}

/// rmcp's session manager, bounded and bound to identities, its idle workers let go.
pub(crate) struct Sessions {
    inner: Arc<LocalSessionManager>,
    table: Arc<Mutex<Table>>,
    limits: SessionLimits,
    hooks: Hooks,
    /// Parks and restores, one at a time: a restore never meets a worker being let go.
    turns: Arc<tokio::sync::Mutex<()>>,
    /// Whether the task that parks and expires sessions runs.
    sweeping: AtomicBool,
}

impl Sessions {
    /// Sessions under `limits`, their handlers asked through `hooks`.
    pub(crate) fn new(limits: SessionLimits, hooks: Hooks) -> Self {
        let mut inner = LocalSessionManager::default();
        inner.session_config.keep_alive = Some(limits.idle);
        Sessions {
            inner: Arc::new(inner),
            table: Arc::default(),
            limits,
            hooks,
            turns: Arc::default(),
            sweeping: AtomicBool::new(false),
        }
    }

    /// Sessions open now, and how many of them are parked.
    pub(crate) fn open(&self) -> (usize, usize) {
        let table = lock(&self.table);
        let parked = table.entries.values().filter(|entry| entry.parked).count();
        (table.entries.len(), parked)
    }

    /// What rmcp keeps and reads a session's `initialize` parameters through (a restore).
    pub(crate) fn store(&self) -> Arc<dyn SessionStore> {
        Arc::new(Store {
            table: Arc::downgrade(&self.table),
        })
    }

    /// Starts the task that parks idle sessions and expires parked ones (once, with the
    /// first session: it needs the runtime).
    fn sweep(&self) {
        if self.sweeping.swap(true, Ordering::Relaxed) {
            return;
        }
        let sweeper = Sweeper {
            table: Arc::downgrade(&self.table),
            inner: Arc::downgrade(&self.inner),
            turns: self.turns.clone(),
            limits: self.limits.clone(),
            at_rest: self.hooks.at_rest,
        };
        tokio::spawn(sweeper.run());
    }

    /// Whether the caller may use session `id` (a session made outside any request, or a
    /// request outside any, is anyone's); another identity's is refused as not found.
    fn mine(&self, id: &SessionId) -> Result<(), SessionsError> {
        match self.whose(id) {
            Whose::Mine => Ok(()),
            Whose::Missing => Err(SessionsError::NotFound),
            Whose::Theirs => {
                ServedRequest::refuse(Refused::NotFound);
                Err(SessionsError::NotFound)
            }
        }
    }

    fn whose(&self, id: &SessionId) -> Whose {
        let table = lock(&self.table);
        let Some(entry) = table.entries.get(id) else {
            return Whose::Missing;
        };
        let caller = ServedRequest::current().map(|identity| identity.client);
        match (&entry.owner, caller) {
            (Some(owner), Some(caller)) if *owner != caller => {
                tracing::debug!(%caller, "a session id of another identity was presented");
                Whose::Theirs
            }
            _ => Whose::Mine,
        }
    }

    /// Gives session `id` the handshake deadline from now: the sweeper closes it then if it
    /// has not finished its handshake. A deadline on the record, not a task of its own: a
    /// sleeping task a session was about 1.2 KiB of an idle session's memory.
    fn expire_unfinished(&self, expiring: SessionId) {
        let until = Instant::now() + self.limits.handshake;
        if let Some(entry) = lock(&self.table).entries.get_mut(&expiring) {
            entry.handshake_until = Some(until);
        }
    }

    /// Notes that rmcp's worker of session `id` heard from its client now.
    fn heard(&self, id: &SessionId) {
        if let Some(entry) = lock(&self.table).entries.get_mut(id) {
            let now = Instant::now();
            entry.heard = now;
            entry.used = now;
        }
    }

    /// The handler of session `id` when a request of the caller's on it may be answered
    /// inline: the caller's, its handshake done, not parked, and its worker heard from within
    /// half the idle limit. None sends the request through rmcp, which answers the rest (404
    /// among it, and a parked session restored).
    pub(crate) fn inline_handler(&self, id: &str) -> Option<Made> {
        let mut table = lock(&self.table);
        let entry = table.entries.get_mut(id)?;
        let mine = owned_by_caller(entry);
        let fresh = entry.heard.elapsed() < self.limits.idle / 2;
        if !(mine && entry.initialized && fresh) {
            return None;
        }
        let handler = entry.handler.clone()?;
        entry.used = Instant::now();
        Some(handler)
    }

    /// Notes a request of session `id` answered inline, cancelled by `cancel`.
    pub(crate) fn started(&self, id: &str, request: RequestId, cancel: CancellationToken) {
        if let Some(entry) = lock(&self.table).entries.get_mut(id) {
            entry.used = Instant::now();
            entry.running.push((request, cancel));
        }
    }

    /// Forgets a request of session `id` answered inline.
    pub(crate) fn ended(&self, id: &str, request: &RequestId) {
        if let Some(entry) = lock(&self.table).entries.get_mut(id) {
            entry.used = Instant::now();
            entry.running.retain(|(running, _)| running != request);
        }
    }

    /// `stream`, counted as session `id`'s while it is held.
    fn counted<S>(&self, id: &SessionId, stream: S) -> Counted<S> {
        if let Some(entry) = lock(&self.table).entries.get_mut(id) {
            entry.streams += 1;
        }
        Counted {
            stream: Box::pin(stream),
            ended: false,
            table: Arc::downgrade(&self.table),
            id: id.clone(),
            resumable: self.inner.session_config.completed_cache_ttl,
        }
    }

    /// Cancels a request of the caller's session `id` answered inline and still running (the
    /// client's `notifications/cancelled`); whether one was.
    pub(crate) fn cancel_inline(&self, id: &str, request: &RequestId) -> bool {
        if !self.is_mine(id) {
            return false;
        }
        let table = lock(&self.table);
        let Some(entry) = table.entries.get(id) else {
            return false;
        };
        let found = entry.running.iter().find(|(running, _)| running == request);
        if let Some((_, cancel)) = found {
            cancel.cancel();
            return true;
        }
        false
    }

    fn is_mine(&self, id: &str) -> bool {
        let table = lock(&self.table);
        table.entries.get(id).is_some_and(owned_by_caller)
    }

    fn retry_after(&self) -> Duration {
        self.limits.handshake.max(Duration::from_secs(1))
    }
}

/// Whether the request being served may use `entry` (as `Sessions::whose` says it).
fn owned_by_caller(entry: &Entry) -> bool {
    let caller = ServedRequest::current().map(|identity| identity.client);
    match (&entry.owner, &caller) {
        (Some(owner), Some(caller)) => owner == caller,
        _ => true,
    }
}

fn lock(table: &Mutex<Table>) -> MutexGuard<'_, Table> {
    mcpmux::cli_support::sync::lock(table)
}

/// Forgets session `id` and closes it in rmcp.
async fn close(inner: &LocalSessionManager, table: &Mutex<Table>, id: &SessionId) {
    let trim = {
        let mut table = lock(table);
        match table.entries.remove(id) {
            Some(entry) => {
                entry.outbox.close();
                table.release(entry.owner.as_ref())
            }
            None => false,
        }
    };
    if let Err(error) = inner.close_session(id).await {
        tracing::debug!(%error, "a session did not close cleanly");
    }
    {
        let mut sessions = inner.sessions.write().await;
        if sessions.capacity() > 64 && sessions.len() * 4 < sessions.capacity() {
            sessions.shrink_to_fit();
        }
    }
    if trim {
        give_back_memory();
    }
}

impl SessionManager for Sessions {
    type Error = SessionsError;
    type Transport = WorkerTransport<LocalSessionWorker>;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let owner = self.reserve()?;
        let (id, transport) = match self.inner.create_session().await {
            Ok(made) => made,
            Err(error) => {
                // Made nothing: not counted as a session closed.
                let mut table = lock(&self.table);
                table.release(owner.as_ref());
                table.closed = table.closed.saturating_sub(1);
                return Err(error.into());
            }
        };
        lock(&self.table)
            .entries
            .insert(id.clone(), Entry::new(owner, ServedRequest::take_made()));
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.mine(id)?;
        let answered = self.inner.initialize_session(id, message).await;
        let restored = {
            let mut table = lock(&self.table);
            let entry = table.entries.get_mut(id);
            match entry {
                // Its parameters known before this answer: a parked session's, or one born
                // parked (`handshake`) restored before its `notifications/initialized`.
                Some(entry) if entry.initialized || entry.params.is_some() => {
                    // A restore's replay: the handler rmcp made for it, in this request.
                    if entry.handler.is_none() {
                        entry.handler = ServedRequest::take_made();
                    }
                    true
                }
                _ => false,
            }
        };
        if !restored {
            // The deadline runs from the answer: `initialize` itself may wait for startup.
            self.expire_unfinished(id.clone());
        }
        Ok(answered?)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        if self.mine(id).is_err() {
            return Ok(false);
        }
        {
            let mut table = lock(&self.table);
            let Some(entry) = table.entries.get_mut(id) else {
                return Ok(false);
            };
            // Used from now: not parked under the request rmcp goes on to serve.
            entry.used = Instant::now();
            if entry.parked {
                // A `GET` is served from its outbox, worker or not; anything else is brought
                // back by rmcp (`Store::load`, `restore_session`).
                return Ok(ServedRequest::is_listening());
            }
        }
        Ok(self.inner.has_session(id).await?)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        if ServedRequest::current().is_none() {
            // Outside any request: a worker ending. One let go when its session was parked
            // says goodbye; any other ended on its own (idle, cancelled, failed), and so
            // does its session.
            let mut table = lock(&self.table);
            if let Some(entry) = table.entries.get_mut(id)
                && entry.goodbyes > 0
            {
                entry.goodbyes -= 1;
                return Ok(());
            }
        }
        match self.whose(id) {
            Whose::Mine => {}
            // Already gone (its worker ended, or a DELETE came first): nothing to do.
            Whose::Missing => return Ok(()),
            Whose::Theirs => {
                ServedRequest::refuse(Refused::NotFound);
                return Err(SessionsError::NotFound);
            }
        }
        close(&self.inner, &self.table, id).await;
        Ok(())
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.mine(id)?;
        self.heard(id);
        let stream = stream_of(&*self.inner, id, message).await?;
        Ok(self.counted(id, stream))
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        self.mine(id)?;
        self.heard(id);
        let (initialized, replayed) = match &message {
            ClientJsonRpcMessage::Notification(notification) => (
                matches!(
                    notification.notification,
                    ClientNotification::InitializedNotification(_)
                ),
                notification
                    .notification
                    .extensions()
                    .get::<SessionRestoreMarker>()
                    .is_some(),
            ),
            _ => (false, false),
        };
        if !initialized {
            return Ok(self.inner.accept_message(id, message).await?);
        }
        let outbox = {
            let mut table = lock(&self.table);
            let Some(entry) = table.entries.get_mut(id) else {
                return Err(SessionsError::NotFound);
            };
            // A restore's replay finishes the worker's handshake, not the client's (one
            // born parked may be restored before its own `notifications/initialized`).
            entry.initialized |= !replayed;
            if let Some(handler) = &entry.handler {
                (self.hooks.attach)(handler, &entry.outbox);
            }
            // Once a worker (a client repeating itself gets no second pump).
            (!std::mem::replace(&mut entry.pumped, true)).then(|| entry.outbox.clone())
        };
        self.inner.accept_message(id, message).await?;
        if let Some(outbox) = outbox {
            // What its worker sends on the standalone stream, from now on into the outbox.
            match standalone_of(&*self.inner, id).await {
                Ok(common) => drop(tokio::spawn(pump(common, outbox))),
                // Its worker already gone (the session closing): nothing to pump.
                Err(error) => tracing::debug!(%error, "a session's standalone stream not pumped"),
            }
        }
        Ok(())
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.mine(id)?;
        self.heard(id);
        let outbox = lock(&self.table)
            .entries
            .get(id)
            .map(|entry| entry.outbox.clone())
            .ok_or(SessionsError::NotFound)?;
        match outbox.listen(None) {
            Ok(stream) => Ok(stream),
            Err(Held) => {
                ServedRequest::refuse(Refused::StreamHeld);
                Err(SessionsError::StreamHeld)
            }
        }
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.mine(id)?;
        self.heard(id);
        // The standalone stream's ids are plain numbers; a request's are rmcp's `N/M`.
        if let Ok(after) = last_event_id.parse::<u64>() {
            let outbox = lock(&self.table)
                .entries
                .get(id)
                .map(|entry| entry.outbox.clone())
                .ok_or(SessionsError::NotFound)?;
            return match outbox.listen(Some(after)) {
                Ok(stream) => Ok(stream.left_stream()),
                Err(Held) => Err(SessionsError::StreamHeld),
            };
        }
        let stream = resumed_of(&*self.inner, id, last_event_id).await?;
        Ok(self.counted(id, stream).right_stream())
    }

    async fn restore_session(
        &self,
        id: SessionId,
    ) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        let _turn = self.turns.lock().await;
        let parked = {
            let table = lock(&self.table);
            table
                .entries
                .get(&id)
                .is_some_and(|entry| entry.parked && owned_by_caller(entry))
        };
        if !parked {
            return Ok(RestoreOutcome::NotSupported);
        }
        let outcome = self.inner.restore_session(id.clone()).await?;
        if let RestoreOutcome::Restored(_) = &outcome
            && let Some(entry) = lock(&self.table).entries.get_mut(&id)
        {
            let now = Instant::now();
            entry.parked = false;
            entry.heard = now;
            entry.used = now;
            tracing::debug!("a parked session restored");
        }
        Ok(outcome)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    fn resting(_: &Made) -> bool {
        true
    }

    fn busy(_: &Made) -> bool {
        false
    }

    /// A session past its handshake, unused for a minute, holding nothing.
    fn idle_entry() -> Entry {
        let handler: Made = Arc::new(());
        let mut entry = Entry::new(None, Some(handler));
        entry.initialized = true;
        entry.params = Params::of(&rmcp::model::InitializeRequestParams::default());
        entry.used = Instant::now() - Duration::from_secs(60);
        entry
    }

    #[test]
    fn only_a_session_holding_nothing_beyond_its_handshake_is_parked() {
        let (now, after) = (Instant::now(), Duration::from_secs(5));
        assert!(idle_entry().parkable(now, after, resting));
        // The handler's own say (a log level, a subscription, a call running).
        assert!(!idle_entry().parkable(now, after, busy));
        let mut open = idle_entry();
        open.streams = 1;
        assert!(!open.parkable(now, after, resting));
        let mut resumable = idle_entry();
        resumable.resumable_until = Some(now + Duration::from_secs(1));
        assert!(!resumable.parkable(now, after, resting));
        let mut running = idle_entry();
        running
            .running
            .push((RequestId::Number(1), CancellationToken::new()));
        assert!(!running.parkable(now, after, resting));
        let mut recent = idle_entry();
        recent.used = now;
        assert!(!recent.parkable(now, after, resting));
        let mut unfinished = idle_entry();
        unfinished.initialized = false;
        assert!(!unfinished.parkable(now, after, resting));
        // A handler lent to `inline` (a copy held beside the table's).
        let lent = idle_entry();
        let _copy = lent.handler.clone();
        assert!(!lent.parkable(now, after, resting));
        let mut parked = idle_entry();
        parked.parked = true;
        assert!(!parked.parkable(now, after, resting));
    }
}
