//! ONE server: its connection handle, the supervisor task that owns the session and publishes
//! its state, the era probe and handshake, the circuit breaker, the call path and the tasks
//! (SEP-2663) a server runs for calls.
//!
//! The hub observes connections; it never pokes their state. Calls go straight to the session
//! (`outgoing.rs`: on a lines transport beside rmcp's session task, else the shared rmcp
//! `Peer`, which multiplexes concurrent requests), not through the supervisor, so the hot
//! path has no extra hop.

mod breaker;
mod call_path;
mod callers;
mod client;
pub mod era;
mod exchange;
mod flights;
mod handshake;
mod outgoing;
mod probe;
mod progress_routes;
mod progress_tap;
mod requests;
mod round_answers;
mod session_repair;
mod subscriptions;
mod supervisor;
mod task_requests;
mod task_wire;
pub(crate) mod tool_cache;
mod trace_meta;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, RwLock};
use std::time::Duration;

use rmcp::service::{Peer, RoleClient};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::broadcast::Broadcast;
use crate::catalog::ServerTool;
use crate::config::ServerSpec;
use crate::error::Error;
use crate::state::{Era, HubEvent, ServerState};
use crate::sync;
use crate::transport::{ExitInfo, TransportContext};
use breaker::CircuitBreaker;
pub(crate) use call_path::Trip;
use era::EraCache;
pub(crate) use exchange::CallKind;
use progress_routes::ProgressRoutes;
pub(crate) use requests::ListKind;

/// A live session: what calls need, shared with every caller.
struct Live {
    peer: Peer<RoleClient>,
    tools: Arc<Vec<ServerTool>>,
    progress: ProgressRoutes,
    /// Cancelled when the session ends, so calls in flight fail at once.
    closed: CancellationToken,
    exit: Option<watch::Receiver<Option<ExitInfo>>>,
    stderr: Option<crate::transport::stdio::StderrTail>,
    /// The harness's callbacks, for the input a 2026-07-28 server asks for inside a call.
    host: crate::host::Host,
    /// The calls in flight on this session (shared by every `Live` of the session).
    flights: Arc<flights::Flights>,
    /// The calls in flight on this session, by whom they are made for: whose a server→client
    /// request is (shared with the session's client handler).
    callers: callers::Callers,
    /// Where its requests are sent beside rmcp's session task: a lines transport's
    /// (`outgoing.rs`).
    direct: Option<Arc<crate::transport::lines::Direct>>,
    /// Where its requests are POSTed beside rmcp's worker: a streamable-HTTP transport's
    /// (`outgoing.rs`).
    http: Option<Arc<crate::transport::http_direct::HttpDirect>>,
    /// What rmcp adds to each request's `_meta` in this session (a 2026-07-28 session's).
    session_meta: Option<rmcp::model::RequestMetaObject>,
    /// The session's protocol era.
    era: crate::state::Era,
}

impl Live {
    /// Whether this session is over: closed by the supervisor, or its process has exited.
    fn ended(&self) -> bool {
        self.closed.is_cancelled()
            || self
                .exit
                .as_ref()
                .is_some_and(|exit| exit.borrow().is_some())
    }
}

/// One server's connection: a handle on its supervisor task.
pub(crate) struct Connection {
    pub(crate) spec: Arc<ServerSpec>,
    state: watch::Receiver<ServerState>,
    /// Turns true once the first connection attempt has settled (success or failure).
    settled: watch::Receiver<bool>,
    live: Arc<RwLock<Option<Arc<Live>>>>,
    /// The tools of the last session while the server reconnects: calls still route to it
    /// (and wait), though the listing hides them.
    known: Arc<RwLock<Option<Arc<Vec<ServerTool>>>>>,
    generation: Arc<AtomicU64>,
    breaker: Arc<CircuitBreaker>,
    shutdown: CancellationToken,
    task: std::sync::Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// The subscribed resources, kept across sessions.
    subscriptions: subscriptions::Subscriptions,
    /// Bumped when a server forgot the session and a new one replaced it beneath the same
    /// connection (see `session_repair`): what a session held must be made again.
    renewed: watch::Sender<u64>,
    /// A lazy server's supervisor, until its first use starts it.
    dormant: std::sync::Mutex<Option<supervisor::Supervisor>>,
    /// Where a lazy server's supervisor runs once started (the hub's runtime, whichever
    /// thread asks).
    runtime: tokio::runtime::Handle,
    /// True while `known` holds the tool cache's list rather than a session's.
    cached: Arc<AtomicBool>,
    /// When the cached list in use was made, and by which version of the server: `None`
    /// inside when there was none to use. Read once, on first need (`load_cached`): a lazy
    /// server's at the first listing, never for a call, which reads only the server it goes
    /// to, and that one live.
    cached_at: OnceLock<Option<(std::time::SystemTime, Option<String>)>>,
    /// Where this server's cached list is read from.
    tool_cache: tool_cache::ToolCache,
    /// The tasks the server made for this hub, and the session each lives in.
    tasks: task_requests::Book,
}

/// What the supervisor needs from the hub.
#[derive(Clone)]
pub(crate) struct Shared {
    pub ctx: TransportContext,
    pub eras: EraCache,
    pub events: Broadcast<HubEvent>,
    /// Overrides every server's own `shutdown_grace` when set.
    pub shutdown_grace: Option<Duration>,
    /// The harness's callbacks for server→client requests.
    pub host: crate::host::Host,
    /// Where tool lists are kept between runs.
    pub tool_cache: tool_cache::ToolCache,
}

impl Connection {
    /// Starts the supervisor of `spec` (or records it as disabled); a `lazy` one is only
    /// prepared, and starts on first use ([`Connection::ensure_started`]). A list the tool
    /// cache holds for the server is routable at once: an eager server's read now, a lazy
    /// one's when a listing first asks ([`Connection::load_cached`]).
    pub(crate) fn start(spec: ServerSpec, shared: Shared, lazy: bool) -> Self {
        let spec = Arc::new(spec);
        let initial = if !spec.enabled {
            ServerState::Disabled {
                reason: "disabled in config".into(),
            }
        } else if lazy {
            ServerState::Idle
        } else {
            ServerState::connecting()
        };
        // An eager server's list is read now, to stand in while it starts; a lazy one's
        // when a listing first needs it (`load_cached`).
        let cached_at = OnceLock::new();
        let cache = if spec.enabled && !lazy {
            shared.tool_cache.load(&spec)
        } else {
            None
        };
        if !spec.enabled || !lazy {
            let _ = cached_at.set(
                cache
                    .as_ref()
                    .map(|c| (c.listed_at, c.server_version.clone())),
            );
        }
        let tool_cache = shared.tool_cache.clone();
        let cached = Arc::new(AtomicBool::new(cache.is_some()));
        let (state_tx, state_rx) = watch::channel(initial);
        // An idle server has nothing to wait for until it is started.
        let (settled_tx, settled_rx) = watch::channel(!spec.enabled || lazy);
        let live = Arc::new(RwLock::new(None));
        let known = Arc::new(RwLock::new(cache.map(|c| c.tools)));
        let generation = Arc::new(AtomicU64::new(0));
        let breaker = Arc::new(CircuitBreaker::new(spec.options.breaker));
        let shutdown = CancellationToken::new();
        let renewed = watch::channel(0).0;
        let supervisor = spec.enabled.then(|| supervisor::Supervisor {
            spec: spec.clone(),
            shared,
            state: state_tx,
            settled: settled_tx,
            live: live.clone(),
            known: known.clone(),
            generation: generation.clone(),
            breaker: breaker.clone(),
            shutdown: shutdown.clone(),
            renewed: renewed.clone(),
            cached: cached.clone(),
        });
        let runtime = tokio::runtime::Handle::current();
        let (task, dormant) = match supervisor {
            Some(supervisor) if lazy => (None, Some(supervisor)),
            Some(supervisor) => (Some(runtime.spawn(supervisor.run())), None),
            None => (None, None),
        };
        Connection {
            spec,
            state: state_rx,
            settled: settled_rx,
            live,
            known,
            generation,
            breaker,
            shutdown,
            task: std::sync::Mutex::new(task),
            subscriptions: subscriptions::Subscriptions::default(),
            renewed,
            dormant: std::sync::Mutex::new(dormant),
            runtime,
            cached,
            cached_at,
            tool_cache,
            tasks: task_requests::Book::default(),
        }
    }

    /// Reads the tool cache's list of a lazy server not started yet, once, so that it is
    /// listed and routable ([`Connection::is_cached`]); does nothing after the first time, or
    /// once the server was started (its session's list is the one that counts).
    pub(crate) fn load_cached(&self) {
        self.cached_at.get_or_init(|| {
            let cached = self.tool_cache.load(&self.spec)?;
            {
                let mut known = sync::write(&self.known);
                // `ensure_started` settles this slot before it wakes the supervisor, so an
                // idle server here has no session to be overwritten by.
                if known.is_some() || !self.is_idle() {
                    return None;
                }
                *known = Some(cached.tools);
                self.cached.store(true, Ordering::Release);
            }
            // The catalog is rebuilt with it.
            self.generation.fetch_add(1, Ordering::AcqRel);
            Some((cached.listed_at, cached.server_version))
        });
    }

    /// Starts a lazy server's supervisor, once; does nothing for one already started.
    pub(crate) fn ensure_started(&self) {
        let mut dormant = sync::lock(&self.dormant);
        if self.shutdown.is_cancelled() {
            return;
        }
        let Some(supervisor) = dormant.take() else {
            return;
        };
        // Its session lists its tools now: a cached list not read yet is not read at all
        // (one being read by a listing is waited for).
        self.cached_at.get_or_init(|| None);
        tracing::debug!(server = %self.spec.name, "lazy server: first use starts it");
        supervisor.wake();
        let task = self.runtime.spawn(supervisor.run());
        *sync::lock(&self.task) = Some(task);
    }

    /// Starts the server if it is idle, and waits until its first connection attempt has
    /// settled: what a request that needs the server does first.
    pub(crate) async fn started(&self) {
        self.ensure_started();
        self.settled().await;
    }

    /// Whether the server is lazy and not started yet.
    pub(crate) fn is_idle(&self) -> bool {
        matches!(*self.state.borrow(), ServerState::Idle)
    }

    /// Whether the tools routed by are the tool cache's, not yet a session's.
    pub(crate) fn is_cached(&self) -> bool {
        self.cached.load(Ordering::Acquire)
    }

    /// When the cached list was made and by which server version, while it is in use.
    pub(crate) fn cached_at(&self) -> Option<(std::time::SystemTime, Option<String>)> {
        self.is_cached()
            .then(|| self.cached_at.get().cloned().flatten())
            .flatten()
    }

    /// The current state. A connected server whose breaker a call has just opened is shown
    /// disabled at once, before its supervisor says so: the state and the listing
    /// ([`Connection::listed`]) never disagree.
    pub(crate) fn state(&self) -> ServerState {
        let state = self.state.borrow().clone();
        if matches!(state, ServerState::Connected { .. }) && self.breaker.is_open() {
            return ServerState::Disabled {
                reason: self.breaker.describe(),
            };
        }
        state
    }

    /// Why this server cannot take a request in `state`: the one wording of the library.
    pub(crate) fn unavailable(&self, state: ServerState) -> Error {
        Error::Unavailable {
            server: self.spec.name.clone(),
            state: state.clone(),
            reason: match state {
                ServerState::Failed { error, .. } => error,
                ServerState::Disabled { reason } => reason,
                ServerState::NeedsAuth { message, .. } => message,
                ServerState::Pending {
                    last_error: Some(e),
                    ..
                } => format!("reconnecting after: {e}"),
                ServerState::Pending { .. } => "still connecting".into(),
                _ => "not connected".into(),
            },
        }
    }

    /// A receiver of state changes.
    pub(crate) fn state_watch(&self) -> watch::Receiver<ServerState> {
        self.state.clone()
    }

    /// Waits until the first connection attempt has settled (connected, failed or needs auth).
    pub(crate) async fn settled(&self) {
        let mut settled = self.settled.clone();
        let _ = settled.wait_for(|done| *done).await;
    }

    /// Bumped whenever the tool list, the state or the breaker changes.
    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    fn live(&self) -> Option<Arc<Live>> {
        sync::read(&self.live).clone()
    }

    /// The tools calls are routed by: the live session's, or the last session's while the
    /// server reconnects or its breaker is open (the call then waits or says why).
    pub(crate) fn routable_tools(&self) -> Option<Arc<Vec<ServerTool>>> {
        match self.live() {
            Some(live) => Some(live.tools.clone()),
            None => sync::read(&self.known).clone(),
        }
    }

    /// Whether this server's tools are listed now: when its state says connected (which
    /// takes the breaker in), or, from the tool cache, while it is idle or making its first
    /// attempt.
    pub(crate) fn listed(&self) -> bool {
        // `state()` without its clone: this runs once per tool of every listing.
        match *self.state.borrow() {
            ServerState::Connected { .. } => !self.breaker.is_open(),
            _ => self.before_first_answer() && self.is_cached(),
        }
    }

    /// Whether the server has not answered yet in this run: idle, or making its first
    /// attempt with no error so far. A cached list stands for its tools only then.
    pub(crate) fn before_first_answer(&self) -> bool {
        matches!(
            *self.state.borrow(),
            ServerState::Idle
                | ServerState::Pending {
                    attempt: 1,
                    last_error: None,
                    ..
                }
        )
    }

    /// The tool cache's list of this server, read now and kept by no one: a streamed
    /// listing's ([`crate::Hub::stream_tools`]), which reads each list when it prints it.
    pub(crate) fn read_cache(&self) -> Option<tool_cache::Cached> {
        self.tool_cache.load(&self.spec)
    }

    /// The live session's peer, while connected: resources and prompts go straight to it.
    pub(crate) fn peer(&self) -> Option<Peer<RoleClient>> {
        self.live().map(|live| live.peer.clone())
    }

    /// The live session's peer, the harness's host and the token cancelled when that session
    /// ends, taken together: what a task that outlives one request needs.
    pub(crate) fn session(
        &self,
    ) -> Option<(Peer<RoleClient>, crate::host::Host, CancellationToken)> {
        self.live()
            .map(|live| (live.peer.clone(), live.host.clone(), live.closed.clone()))
    }

    /// Changes each time a new session replaced one the server forgot, on the same
    /// connection (no reconnect).
    pub(crate) fn session_renewals(&self) -> watch::Receiver<u64> {
        self.renewed.subscribe()
    }

    /// This server's subscribed resources.
    pub(crate) fn subscriptions(&self) -> &subscriptions::Subscriptions {
        &self.subscriptions
    }

    /// Stops the supervisor: closes the session and reaps the process.
    pub(crate) async fn shutdown(&self) {
        let dormant = {
            let mut dormant = sync::lock(&self.dormant);
            self.shutdown.cancel();
            dormant.take()
        };
        if let Some(supervisor) = dormant {
            supervisor.never_started();
        }
        let task = sync::lock(&self.task).take();
        if let Some(task) = task {
            let _ = task.await;
        }
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        // A hub dropped without `shutdown` still closes its servers (the supervisor reaps).
        self.shutdown.cancel();
    }
}
