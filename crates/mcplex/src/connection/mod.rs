//! ONE server: opening its transport, the era probe and handshake, listing its tools, the
//! supervisor task that owns the session and publishes its state, and the call path.
//!
//! The hub observes connections; it never pokes their state. Calls go straight to the shared
//! rmcp `Peer` (it multiplexes concurrent requests), not through the supervisor, so the hot
//! path has no extra hop.

mod client;
pub mod era;
mod probe;

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientRequest, JsonObject, PaginatedRequestParams,
    ProtocolVersion, RequestId, ServerResult,
};
use rmcp::service::{
    ClientInitializeError, ClientLifecycleMode, ClientServiceExt, Peer, PeerRequestOptions,
    RoleClient, RunningService, ServiceError,
};
use rmcp::transport::Transport;
use serde::Serialize;
use tokio::sync::{Notify, broadcast, watch};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::catalog::ServerTool;
use crate::config::ServerSpec;
use crate::content::ToolResult;
use crate::defaults;
use crate::error::{Error, fmt_duration};
use crate::hub::{CallOptions, HubEvent};
use crate::transport::{self, ExitInfo, Opened, ProcessHandle, TransportContext};
use client::{HubClient, ProgressRoutes};
pub use era::Era;
use era::{EraCache, EraEntry};

/// The state of one server, as published by its supervisor.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ServerState {
    /// Connecting.
    Pending {
        /// 1 for the first attempt.
        attempt: u32,
    },
    /// Connected; its tools are in the hub's tool set.
    Connected {
        /// The protocol era found.
        era: Era,
        /// The protocol version in use.
        version: String,
        /// How many tools it offers.
        tools: usize,
    },
    /// Could not connect, or the connection was lost.
    Failed {
        /// What went wrong and what to do.
        error: String,
        /// The last lines the server wrote to stderr.
        stderr_tail: Vec<String>,
    },
    /// Not started (by config), or given up on.
    Disabled {
        /// Why.
        reason: String,
    },
    /// Shut down by us.
    Stopped,
}

impl ServerState {
    /// The one-word name of the state: `pending`, `connected`, `failed`, `disabled`, `stopped`.
    pub fn label(&self) -> &'static str {
        match self {
            ServerState::Pending { .. } => "pending",
            ServerState::Connected { .. } => "connected",
            ServerState::Failed { .. } => "failed",
            ServerState::Disabled { .. } => "disabled",
            ServerState::Stopped => "stopped",
        }
    }
}

/// A live session: what calls need, shared with every caller.
struct Live {
    peer: Peer<RoleClient>,
    tools: Arc<Vec<ServerTool>>,
    progress: ProgressRoutes,
    /// Cancelled when the session ends, so calls in flight fail at once.
    closed: CancellationToken,
    exit: Option<watch::Receiver<Option<ExitInfo>>>,
    stderr: Option<transport::stdio::StderrTail>,
}

/// One server's connection: a handle on its supervisor task.
pub(crate) struct Connection {
    pub(crate) spec: Arc<ServerSpec>,
    state: watch::Receiver<ServerState>,
    live: Arc<RwLock<Option<Arc<Live>>>>,
    generation: Arc<AtomicU64>,
    shutdown: CancellationToken,
    task: std::sync::Mutex<Option<tokio::task::JoinHandle<()>>>,
}

/// What the supervisor needs from the hub.
#[derive(Clone)]
pub(crate) struct Shared {
    pub ctx: TransportContext,
    pub eras: EraCache,
    pub events: broadcast::Sender<HubEvent>,
    pub shutdown_grace: Duration,
}

impl Connection {
    /// Starts the supervisor of `spec` (or records it as disabled).
    pub(crate) fn start(spec: ServerSpec, shared: Shared) -> Self {
        let spec = Arc::new(spec);
        let initial = if spec.enabled {
            ServerState::Pending { attempt: 1 }
        } else {
            ServerState::Disabled {
                reason: "disabled in config".into(),
            }
        };
        let (state_tx, state_rx) = watch::channel(initial);
        let live = Arc::new(RwLock::new(None));
        let generation = Arc::new(AtomicU64::new(0));
        let shutdown = CancellationToken::new();
        let task = spec.enabled.then(|| {
            let supervisor = Supervisor {
                spec: spec.clone(),
                shared,
                state: state_tx,
                live: live.clone(),
                generation: generation.clone(),
                shutdown: shutdown.clone(),
            };
            tokio::spawn(supervisor.run())
        });
        Connection {
            spec,
            state: state_rx,
            live,
            generation,
            shutdown,
            task: std::sync::Mutex::new(task),
        }
    }

    /// The current state.
    pub(crate) fn state(&self) -> ServerState {
        self.state.borrow().clone()
    }

    /// A receiver of state changes.
    pub(crate) fn state_watch(&self) -> watch::Receiver<ServerState> {
        self.state.clone()
    }

    /// Bumped whenever the tool list or the state changes.
    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    fn live(&self) -> Option<Arc<Live>> {
        match self.live.read() {
            Ok(live) => live.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// The tools of the live session (empty when not connected).
    pub(crate) fn tools(&self) -> Option<Arc<Vec<ServerTool>>> {
        self.live().map(|live| live.tools.clone())
    }

    /// Stops the supervisor: closes the session and reaps the process.
    pub(crate) async fn shutdown(&self) {
        self.shutdown.cancel();
        let task = match self.task.lock() {
            Ok(mut task) => task.take(),
            Err(poisoned) => poisoned.into_inner().take(),
        };
        if let Some(task) = task {
            let _ = task.await;
        }
    }

    /// Calls `tool` (its raw name) with `arguments`.
    pub(crate) async fn call(
        &self,
        tool: &str,
        arguments: Option<JsonObject>,
        options: &CallOptions,
    ) -> Result<ToolResult, Error> {
        let server = &self.spec.name;
        let Some(live) = self.live() else {
            let state = self.state();
            return Err(Error::Unavailable {
                server: server.clone(),
                state: state.label().into(),
                reason: match state {
                    ServerState::Failed { error, .. } => error,
                    ServerState::Disabled { reason } => reason,
                    ServerState::Pending { .. } => "still connecting".into(),
                    _ => "not connected".into(),
                },
            });
        };
        let timeout = options.timeout.unwrap_or(self.spec.call_timeout);
        let mut params = CallToolRequestParams::new(tool.to_string());
        params.arguments = arguments;
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        // Our own deadline rather than rmcp's progress-timeout machinery (an async lock, a
        // channel and two timers per call): one timer, reset by the progress routes we keep
        // anyway, capped absolutely.
        let handle = live
            .peer
            .send_cancellable_request(request, PeerRequestOptions::no_options())
            .await;
        let handle = match handle {
            Ok(handle) => handle,
            Err(e) => return Err(self.service_error(&live, tool, e).await),
        };
        let mut cancel_guard = CancelOnDrop {
            peer: Some(handle.peer.clone()),
            id: handle.id.clone(),
        };
        let token = handle.progress_token.clone();
        let mut response = handle.rx;
        let bump = Arc::new(Notify::new());
        live.progress.add(
            token.clone(),
            client::Route {
                tx: options.progress.clone(),
                bump: bump.clone(),
            },
        );
        let _route = RouteGuard {
            routes: &live.progress,
            token,
        };
        let cap = Instant::now() + defaults::CALL_TIMEOUT_CAP.max(timeout);
        let sleep = tokio::time::sleep(timeout);
        tokio::pin!(sleep);
        let caller_cancel = async {
            match &options.cancel {
                Some(token) => token.cancelled().await,
                None => std::future::pending().await,
            }
        };
        tokio::pin!(caller_cancel);
        let outcome = loop {
            tokio::select! {
                biased;
                answer = &mut response => {
                    cancel_guard.peer = None;
                    break match answer {
                        Ok(Ok(result)) => Ok(result),
                        Ok(Err(e)) => Err(self.service_error(&live, tool, e).await),
                        Err(_) => Err(self.lost_error(&live, tool).await),
                    };
                }
                () = bump.notified() => {
                    sleep.as_mut().reset((Instant::now() + timeout).min(cap));
                }
                () = &mut sleep => {
                    // The guard stays armed: dropping it tells the server to stop.
                    break Err(Error::Timeout {
                        server: server.clone(),
                        what: format!("tools/call `{tool}`"),
                        after: if Instant::now() >= cap { defaults::CALL_TIMEOUT_CAP.max(timeout) } else { timeout },
                    });
                }
                () = live.closed.cancelled() => {
                    cancel_guard.peer = None;
                    break Err(self.lost_error(&live, tool).await);
                }
                () = &mut caller_cancel => break Err(Error::Cancelled(format!(
                    "tools/call `{tool}` on server `{server}` was cancelled by the caller"
                ))),
            }
        };
        drop(cancel_guard);
        match outcome? {
            ServerResult::CallToolResult(result) => {
                let json = serde_json::to_value(&result).map_err(|e| Error::Protocol {
                    server: server.clone(),
                    message: format!("unreadable tools/call result: {e}"),
                })?;
                Ok(ToolResult::from_json(json))
            }
            other => Err(Error::Protocol {
                server: server.clone(),
                message: format!(
                    "answered tools/call `{tool}` with something that is not a tool result ({})",
                    result_kind(&other)
                ),
            }),
        }
    }

    /// Maps an rmcp error; a transport error means the connection is gone, see `lost_error`.
    async fn service_error(&self, live: &Live, tool: &str, e: ServiceError) -> Error {
        if matches!(
            e,
            ServiceError::TransportClosed | ServiceError::TransportSend(_)
        ) {
            return self.lost_error(live, tool).await;
        }
        let server = self.spec.name.clone();
        let what = format!("tools/call `{tool}`");
        match e {
            ServiceError::Timeout { timeout } => Error::Timeout {
                server,
                what,
                after: timeout,
            },
            ServiceError::McpError(data) => Error::Server {
                server,
                code: data.code.0,
                message: data.message.to_string(),
            },
            other => Error::Protocol {
                server,
                message: format!("{what}: {other}"),
            },
        }
    }

    async fn lost_error(&self, live: &Live, tool: &str) -> Error {
        let what = format!("tools/call `{tool}`");
        let reason = match &live.exit {
            Some(exit) => wait_exit(exit.clone(), Duration::from_millis(100))
                .await
                .map(|info| info.to_string())
                .unwrap_or_else(|| "the connection closed".into()),
            None => "the connection closed".into(),
        };
        if let Some(stderr) = &live.stderr {
            stderr.drained(STDERR_DRAIN).await;
        }
        Error::ConnectionLost {
            server: self.spec.name.clone(),
            what,
            reason,
            stderr_tail: tail_of(live),
        }
    }
}

/// How long an error report waits for a dead server's last stderr lines to be read.
const STDERR_DRAIN: Duration = Duration::from_millis(200);

/// Removes a call's progress route however the call ends.
struct RouteGuard<'a> {
    routes: &'a ProgressRoutes,
    token: rmcp::model::ProgressToken,
}

impl Drop for RouteGuard<'_> {
    fn drop(&mut self) {
        self.routes.remove(&self.token);
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        // A hub dropped without `shutdown` still closes its servers (the supervisor reaps).
        self.shutdown.cancel();
    }
}

fn tail_of(live: &Live) -> Vec<String> {
    live.stderr
        .as_ref()
        .map(|tail| tail.last(defaults::ERROR_TAIL_LINES))
        .unwrap_or_default()
}

fn result_kind(result: &ServerResult) -> String {
    serde_json::to_value(result)
        .ok()
        .and_then(|v| {
            v.as_object()
                .map(|o| o.keys().cloned().collect::<Vec<_>>().join(","))
        })
        .unwrap_or_else(|| "unknown".into())
}

/// Sends `notifications/cancelled` when a call is abandoned by its caller (its future dropped
/// or cancelled): rmcp's raw requests do not.
struct CancelOnDrop {
    peer: Option<Peer<RoleClient>>,
    id: RequestId,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(peer) = self.peer.take() {
            let id = self.id.clone();
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                runtime.spawn(async move {
                    let notification = rmcp::model::CancelledNotification::new(
                        rmcp::model::CancelledNotificationParam::new(
                            Some(id),
                            Some("cancelled by the caller".into()),
                        ),
                    );
                    let _ = peer.send_notification(notification.into()).await;
                });
            }
        }
    }
}

async fn wait_exit(
    mut exit: watch::Receiver<Option<ExitInfo>>,
    within: Duration,
) -> Option<ExitInfo> {
    let _ = tokio::time::timeout(within, exit.wait_for(Option::is_some)).await;
    exit.borrow().clone()
}

/// A connected session and what keeps it alive.
struct Session {
    running: RunningService<RoleClient, HubClient>,
    era: Era,
    version: String,
    side: Side,
    progress: ProgressRoutes,
    tools_changed: Arc<Notify>,
}

/// What a transport leaves besides the session: a process to reap, a server task to stop.
#[derive(Default)]
struct Side {
    process: Option<ProcessHandle>,
    server_task: Option<transport::inproc::ServerTask>,
}

impl Side {
    /// The stderr tail once the pipe is drained (bounded: a grandchild may hold it open).
    async fn drained_tail(&self) -> Vec<String> {
        if let Some(process) = &self.process {
            process.stderr().drained(STDERR_DRAIN).await;
        }
        self.stderr_tail()
    }

    fn stderr_tail(&self) -> Vec<String> {
        self.process
            .as_ref()
            .map(|p| p.stderr().last(defaults::ERROR_TAIL_LINES))
            .unwrap_or_default()
    }

    async fn stop(self, grace: Duration) {
        drop(self.server_task);
        if let Some(process) = self.process {
            let pid = process.pid();
            let info = process.stop(grace).await;
            tracing::debug!(pid, ?info, "server process stopped");
        }
    }
}

struct Supervisor {
    spec: Arc<ServerSpec>,
    shared: Shared,
    state: watch::Sender<ServerState>,
    live: Arc<RwLock<Option<Arc<Live>>>>,
    generation: Arc<AtomicU64>,
    shutdown: CancellationToken,
}

impl Supervisor {
    fn publish(&self, state: ServerState) {
        self.generation.fetch_add(1, Ordering::AcqRel);
        let _ = self.state.send(state.clone());
        let _ = self.shared.events.send(HubEvent::StateChanged {
            server: self.spec.name.clone(),
            state,
        });
    }

    fn set_live(&self, live: Option<Arc<Live>>) {
        match self.live.write() {
            Ok(mut slot) => *slot = live,
            Err(poisoned) => *poisoned.into_inner() = live,
        }
    }

    async fn run(self) {
        let name = self.spec.name.clone();
        let connect = connect(&self.spec, &self.shared);
        let session = tokio::select! {
            session = connect => session,
            () = self.shutdown.cancelled() => {
                self.publish(ServerState::Stopped);
                return;
            }
        };
        let session = match session {
            Ok(session) => session,
            Err(error) => {
                let (error, stderr_tail) = split_tail(error);
                tracing::warn!(server = %name, "{error}");
                self.publish(ServerState::Failed { error, stderr_tail });
                return;
            }
        };
        self.serve(session).await;
    }

    /// Holds the session until it ends or we shut down; refreshes tools on list_changed.
    async fn serve(self, session: Session) {
        let Session {
            running,
            era,
            version,
            side,
            progress,
            tools_changed,
        } = session;
        let peer = running.peer().clone();
        let closed = CancellationToken::new();
        let exit = side.process.as_ref().map(|p| p.exit_watch());
        let stderr = side.process.as_ref().map(|p| p.stderr().clone());
        let tools = match list_tools(&peer, &self.spec.name, self.spec.startup_timeout).await {
            Ok(tools) => tools,
            Err(error) => {
                let (error, mut stderr_tail) = split_tail(error);
                if stderr_tail.is_empty() {
                    stderr_tail = side.drained_tail().await;
                }
                self.publish(ServerState::Failed { error, stderr_tail });
                close_session(running, side, self.shared.shutdown_grace).await;
                return;
            }
        };
        let make_live = |tools: Arc<Vec<ServerTool>>| {
            Arc::new(Live {
                peer: peer.clone(),
                tools,
                progress: progress.clone(),
                closed: closed.clone(),
                exit: exit.clone(),
                stderr: stderr.clone(),
            })
        };
        let mut tools = Arc::new(tools);
        self.set_live(Some(make_live(tools.clone())));
        tracing::info!(server = %self.spec.name, %era, %version, tools = tools.len(), "connected");
        self.publish(ServerState::Connected {
            era,
            version: version.clone(),
            tools: tools.len(),
        });

        let service_token = running.cancellation_token();
        let mut waiting = tokio::spawn(running.waiting());
        let mut exit_watch = exit.clone();
        let lost = loop {
            tokio::select! {
                () = self.shutdown.cancelled() => break None,
                quit = &mut waiting => break Some(format!("session ended ({quit:?})")),
                Some(info) = async {
                    match exit_watch.as_mut() {
                        Some(w) => w.wait_for(Option::is_some).await.ok().and_then(|v| v.clone()),
                        None => std::future::pending().await,
                    }
                } => break Some(info.to_string()),
                () = tools_changed.notified() => {
                    match list_tools(&peer, &self.spec.name, self.spec.startup_timeout).await {
                        Ok(new_tools) => {
                            tools = Arc::new(new_tools);
                            self.set_live(Some(make_live(tools.clone())));
                            self.publish(ServerState::Connected {
                                era,
                                version: version.clone(),
                                tools: tools.len(),
                            });
                            let _ = self.shared.events.send(HubEvent::ToolsChanged {
                                server: self.spec.name.clone(),
                            });
                        }
                        Err(e) => tracing::warn!(server = %self.spec.name, "tool list refresh failed: {e}"),
                    }
                }
            }
        };
        closed.cancel();
        self.set_live(None);
        service_token.cancel();
        if !waiting.is_finished() {
            let _ = tokio::time::timeout(Duration::from_secs(1), &mut waiting).await;
        }
        waiting.abort();
        let tail = match lost {
            Some(_) => side.drained_tail().await,
            None => Vec::new(),
        };
        side.stop(self.shared.shutdown_grace).await;
        match lost {
            None => self.publish(ServerState::Stopped),
            Some(reason) => {
                let reason = match &exit {
                    Some(exit) => exit
                        .borrow()
                        .clone()
                        .map(|info| info.to_string())
                        .unwrap_or(reason),
                    None => reason,
                };
                tracing::warn!(server = %self.spec.name, "connection lost: {reason}");
                self.publish(ServerState::Failed {
                    error: format!("connection lost: {reason}"),
                    stderr_tail: tail,
                });
            }
        }
    }
}

async fn close_session(
    running: RunningService<RoleClient, HubClient>,
    side: Side,
    grace: Duration,
) {
    let _ = tokio::time::timeout(Duration::from_secs(1), running.cancel()).await;
    side.stop(grace).await;
}

fn split_tail(error: Error) -> (String, Vec<String>) {
    match error {
        Error::Connect {
            server: _,
            message,
            stderr_tail,
        } => (message, stderr_tail),
        other => (other.to_string(), Vec::new()),
    }
}

/// Connects within the startup timeout, using the cached era when there is one and probing
/// afresh when the cached era no longer works.
async fn connect(spec: &ServerSpec, shared: &Shared) -> Result<Session, Error> {
    let deadline = Instant::now() + spec.startup_timeout;
    let signature = spec.signature();
    let cached = shared.eras.get(&signature);
    let lifecycle = match &cached {
        Some(EraEntry {
            era: Era::Handshake,
            ..
        }) => ClientLifecycleMode::Initialize,
        Some(EraEntry {
            era: Era::Stateless,
            version,
        }) => ClientLifecycleMode::Discover {
            preferred_versions: vec![
                serde_json::from_value(serde_json::Value::String(version.clone()))
                    .unwrap_or(ProtocolVersion::V_2026_07_28),
            ],
        },
        None => auto_lifecycle(),
    };
    // The probe deadline also guards a cached stateless era: a server that changed to one
    // ignoring `server/discover` must not cost the whole startup timeout.
    let probe = Some(spec.probe_timeout);
    let result = attempt(spec, shared, lifecycle, probe, deadline).await;
    let session = match result {
        Err(failure) if failure.modern && Instant::now() < deadline => {
            tracing::debug!(server = %spec.name, "the server turned out to be stateless-era; reconnecting with server/discover");
            let discover = ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            };
            // Known to answer `server/discover`, only slowly: no probe deadline this time.
            attempt(spec, shared, discover, None, deadline)
                .await
                .map_err(|f| f.error)?
        }
        Err(failure) if cached.is_some() && Instant::now() < deadline => {
            tracing::debug!(server = %spec.name, "cached era failed ({}); probing afresh", failure.error);
            shared.eras.forget(&signature);
            match attempt(spec, shared, auto_lifecycle(), probe, deadline).await {
                Err(failure) if failure.modern && Instant::now() < deadline => {
                    let discover = ClientLifecycleMode::Discover {
                        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                    };
                    attempt(spec, shared, discover, None, deadline)
                        .await
                        .map_err(|f| f.error)?
                }
                other => other.map_err(|f| f.error)?,
            }
        }
        other => other.map_err(|f| f.error)?,
    };
    shared.eras.put(
        &signature,
        EraEntry {
            era: session.era,
            version: session.version.clone(),
        },
    );
    Ok(session)
}

fn auto_lifecycle() -> ClientLifecycleMode {
    ClientLifecycleMode::Auto {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        legacy_version: Some(ProtocolVersion::LATEST_WITH_INITIALIZE),
    }
}

/// Why an attempt failed, and whether the failure shows a stateless-era server.
struct AttemptFailure {
    error: Error,
    /// The server answered `server/discover` after our probe gave up, or refused
    /// `initialize` as a 2026-07-28 server: retrying in Discover mode will work.
    modern: bool,
}

impl From<Error> for AttemptFailure {
    fn from(error: Error) -> Self {
        AttemptFailure {
            error,
            modern: false,
        }
    }
}

/// One connection attempt: open the transport, then handshake before `deadline`.
async fn attempt(
    spec: &ServerSpec,
    shared: &Shared,
    lifecycle: ClientLifecycleMode,
    probe_deadline: Option<Duration>,
    deadline: Instant,
) -> Result<Session, AttemptFailure> {
    let late_discover = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let progress = ProgressRoutes::default();
    let tools_changed = Arc::new(Notify::new());
    let handler = HubClient {
        server: spec.name.clone(),
        progress: progress.clone(),
        tools_changed: tools_changed.clone(),
    };
    let opened = transport::open(spec, &shared.ctx).await?;
    let probe_deadline =
        probe_deadline.filter(|_| !matches!(lifecycle, ClientLifecycleMode::Initialize));
    let probe = (probe_deadline, late_discover.clone());
    let name = spec.name.as_str();
    let (handshake, side) = match opened {
        Opened::Stdio { transport, process } => (
            handshake(handler, transport, lifecycle, probe, name, deadline).await,
            Side {
                process: Some(process),
                server_task: None,
            },
        ),
        Opened::Http(transport) => (
            handshake(handler, transport, lifecycle, probe, name, deadline).await,
            Side::default(),
        ),
        Opened::InProcess { stream, server } => {
            let (read, write) = tokio::io::split(stream);
            let transport = rmcp::transport::async_rw::AsyncRwTransport::new_client(read, write);
            (
                handshake(handler, transport, lifecycle, probe, name, deadline).await,
                Side {
                    process: None,
                    server_task: Some(server),
                },
            )
        }
    };
    match handshake {
        Ok(running) => {
            let info = running.peer().peer_info();
            let version = info
                .as_ref()
                .map(|i| i.protocol_version.to_string())
                .unwrap_or_default();
            let era = match &info {
                Some(i) if !i.protocol_version.has_initialize() => Era::Stateless,
                _ => Era::Handshake,
            };
            Ok(Session {
                running,
                era,
                version,
                side,
                progress,
                tools_changed,
            })
        }
        Err(failure) => {
            // A process that died explains the failure better than the protocol error.
            let exit = match &side.process {
                Some(p) => wait_exit(p.exit_watch(), Duration::from_millis(200)).await,
                None => None,
            };
            let stderr_tail = side.drained_tail().await;
            side.stop(shared.shutdown_grace).await;
            let modern = late_discover.load(Ordering::Acquire)
                || matches!(&failure, HandshakeFailure::Init(e) if refused_as_stateless(e));
            let error = match (failure, exit) {
                (HandshakeFailure::Timeout, _) => Error::Connect {
                    server: spec.name.clone(),
                    message: format!(
                        "no answer to the MCP handshake within the startup timeout of {} \
                         (is it an MCP server? raise `startup_timeout` if it is slow to start)",
                        fmt_duration(spec.startup_timeout)
                    ),
                    stderr_tail,
                },
                (_, Some(exit)) => Error::Connect {
                    server: spec.name.clone(),
                    message: format!("{exit} before completing the MCP handshake"),
                    stderr_tail,
                },
                (HandshakeFailure::Init(e), None) => Error::Connect {
                    server: spec.name.clone(),
                    message: describe_init_error(&e),
                    stderr_tail,
                },
            };
            Err(AttemptFailure { error, modern })
        }
    }
}

/// `initialize` refused with "unsupported protocol version": the server only speaks the
/// stateless era.
fn refused_as_stateless(e: &ClientInitializeError) -> bool {
    match e {
        ClientInitializeError::JsonRpcError(data) => {
            data.code == rmcp::model::ErrorCode::UNSUPPORTED_PROTOCOL_VERSION
        }
        ClientInitializeError::LegacyFallbackFailed { fallback, .. } => {
            refused_as_stateless(fallback)
        }
        _ => false,
    }
}

enum HandshakeFailure {
    Timeout,
    Init(Box<ClientInitializeError>),
}

async fn handshake<T>(
    handler: HubClient,
    transport: T,
    lifecycle: ClientLifecycleMode,
    probe: (Option<Duration>, Arc<std::sync::atomic::AtomicBool>),
    name: &str,
    deadline: Instant,
) -> Result<RunningService<RoleClient, HubClient>, HandshakeFailure>
where
    T: Transport<RoleClient> + 'static,
{
    let transport = probe::ProbeTransport::new(transport, probe.0, name, probe.1);
    match tokio::time::timeout_at(deadline, handler.serve_with_lifecycle(transport, lifecycle))
        .await
    {
        Ok(Ok(running)) => Ok(running),
        Ok(Err(e)) => Err(HandshakeFailure::Init(Box::new(e))),
        Err(_) => Err(HandshakeFailure::Timeout),
    }
}

fn describe_init_error(e: &ClientInitializeError) -> String {
    match e {
        ClientInitializeError::ConnectionClosed(_) => {
            "the server closed the connection during the MCP handshake".into()
        }
        ClientInitializeError::LegacyFallbackFailed { fallback, .. } => {
            describe_init_error(fallback)
        }
        ClientInitializeError::JsonRpcError(data) => {
            format!(
                "the server refused the MCP handshake: {} ({})",
                data.message, data.code.0
            )
        }
        ClientInitializeError::NoCompatibleProtocolVersion {
            server_supported, ..
        } => format!(
            "no protocol version in common (the server supports {})",
            server_supported
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
        other if other.is_authorization_required() => {
            "the server requires authorization (HTTP 401)".into()
        }
        other => format!("MCP handshake failed: {other}"),
    }
}

/// Lists every page of tools, stopping on a repeated cursor (a broken server would loop).
async fn list_tools(
    peer: &Peer<RoleClient>,
    server: &str,
    timeout: Duration,
) -> Result<Vec<ServerTool>, Error> {
    let listing = async {
        let mut tools = Vec::new();
        let mut names = HashSet::new();
        let mut seen_cursors = HashSet::new();
        let mut cursor: Option<String> = None;
        for _ in 0..defaults::MAX_LIST_PAGES {
            let mut params = PaginatedRequestParams::default();
            params.cursor = cursor.clone();
            let page = peer
                .list_tools(Some(params))
                .await
                .map_err(|e| Error::Connect {
                    server: server.to_string(),
                    message: format!("tools/list failed: {e}"),
                    stderr_tail: Vec::new(),
                })?;
            for tool in &page.tools {
                let parsed = serde_json::to_value(tool)
                    .ok()
                    .and_then(|v| ServerTool::from_json(&v));
                match parsed {
                    Some(t) if names.insert(t.raw_name.clone()) => tools.push(t),
                    Some(t) => {
                        tracing::warn!(server, tool = %t.raw_name, "server lists a tool twice; keeping the first")
                    }
                    None => tracing::warn!(server, "skipping a tool without a name"),
                }
            }
            match page.next_cursor {
                Some(next) if !next.is_empty() => {
                    if !seen_cursors.insert(next.clone()) {
                        tracing::warn!(server, cursor = %next, "tools/list repeated a cursor; stopping pagination");
                        break;
                    }
                    cursor = Some(next);
                }
                _ => break,
            }
        }
        Ok(tools)
    };
    tokio::time::timeout(timeout, listing)
        .await
        .unwrap_or_else(|_| {
            Err(Error::Connect {
                server: server.to_string(),
                message: format!("tools/list did not answer within {}", fmt_duration(timeout)),
                stderr_tail: Vec::new(),
            })
        })
}
