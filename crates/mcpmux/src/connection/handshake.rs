//! Connecting one server: opening its transport, the era probe and handshake (remembering
//! the era in the cache), and listing its tools. Knows nothing of supervision or calls.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use rmcp::model::{PaginatedRequestParams, ProtocolVersion};
use rmcp::service::{
    ClientInitializeError, ClientLifecycleMode, ClientServiceExt, Peer, RoleClient, RunningService,
};
use rmcp::transport::Transport;
use tokio::sync::{Notify, watch};
use tokio::time::Instant;

use super::callers::Callers;
use super::client::HubClient;
use super::era::EraEntry;
use super::progress_routes::ProgressRoutes;
use super::{Shared, probe};
use crate::catalog::ServerTool;
use crate::config::ServerSpec;
use crate::defaults;
use crate::error::{Error, fmt_duration};
use crate::state::Era;
use crate::telemetry::wire::Direction;
use crate::transport::wire_tap::Tap;
use crate::transport::{self, ExitInfo, Opened, ProcessHandle};

/// How long an error report waits for a dead server's last stderr lines to be read.
pub(super) const STDERR_DRAIN: Duration = Duration::from_millis(200);

pub(super) async fn wait_exit(
    mut exit: watch::Receiver<Option<ExitInfo>>,
    within: Duration,
) -> Option<ExitInfo> {
    let _ = tokio::time::timeout(within, exit.wait_for(Option::is_some)).await;
    exit.borrow().clone()
}

/// A connected session and what keeps it alive.
pub(super) struct Session {
    pub(super) running: RunningService<RoleClient, HubClient>,
    pub(super) era: Era,
    pub(super) version: String,
    pub(super) side: Side,
    pub(super) progress: ProgressRoutes,
    pub(super) tools_changed: Arc<Notify>,
    /// Where tool calls may be sent beside rmcp's session task (a lines transport's).
    pub(super) direct: Option<Arc<transport::lines::Direct>>,
    /// Where requests may be POSTed beside rmcp's worker (a streamable-HTTP transport's).
    pub(super) http: Option<Arc<transport::http_direct::HttpDirect>>,
}

/// What a transport leaves besides the session: a process to reap, a server task to stop.
#[derive(Default)]
pub(super) struct Side {
    pub(super) process: Option<ProcessHandle>,
    pub(super) server_task: Option<transport::inproc::ServerTask>,
    /// What a streamable-HTTP server's answers say about its session.
    pub(super) http_session: Option<Arc<transport::http_session::SessionWatch>>,
}

impl Side {
    /// The stderr tail once the pipe is drained (bounded: a grandchild may hold it open).
    pub(super) async fn drained_tail(&self) -> Vec<String> {
        if let Some(process) = &self.process {
            process.stderr().drained(STDERR_DRAIN).await;
        }
        self.stderr_tail()
    }

    pub(super) fn stderr_tail(&self) -> Vec<String> {
        self.process
            .as_ref()
            .map(|p| p.stderr().last(defaults::ERROR_TAIL_LINES))
            .unwrap_or_default()
    }

    pub(super) async fn stop(self, grace: Duration) {
        drop(self.server_task);
        if let Some(process) = self.process {
            let pid = process.pid();
            let info = process.stop(grace).await;
            tracing::debug!(pid, ?info, "server process stopped");
        }
    }
}

pub(super) async fn close_session(
    running: RunningService<RoleClient, HubClient>,
    side: Side,
    grace: Duration,
) {
    let _ = tokio::time::timeout(Duration::from_secs(1), running.cancel()).await;
    side.stop(grace).await;
}

pub(super) fn split_tail(error: Error) -> (String, Vec<String>) {
    match error {
        Error::Connect {
            server: _,
            message,
            stderr_tail,
            ..
        } => (message, stderr_tail),
        other => (other.to_string(), Vec::new()),
    }
}

/// Connects within the startup timeout, using the cached era when there is one and probing
/// afresh when the cached era no longer works.
pub(super) async fn connect(spec: &ServerSpec, shared: &Shared) -> Result<Session, AttemptFailure> {
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
            attempt(spec, shared, discover, None, deadline).await?
        }
        Err(failure) if cached.is_some() && !failure.auth && Instant::now() < deadline => {
            tracing::debug!(server = %spec.name, "cached era failed ({}); probing afresh", failure.error);
            shared.eras.forget(&signature);
            match attempt(spec, shared, auto_lifecycle(), probe, deadline).await {
                Err(failure) if failure.modern && Instant::now() < deadline => {
                    let discover = ClientLifecycleMode::Discover {
                        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                    };
                    attempt(spec, shared, discover, None, deadline).await?
                }
                other => other?,
            }
        }
        other => other?,
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
pub(super) struct AttemptFailure {
    pub(super) error: Error,
    /// The server answered HTTP 401: it needs authorization, retrying will not help.
    pub(super) auth: bool,
    /// That 401 came through the OAuth-capable streamable HTTP client, so `mcpmux auth login`
    /// can help; otherwise the error itself says which credentials to give.
    pub(super) oauth: bool,
    /// The server answered `server/discover` after our probe gave up, or refused
    /// `initialize` as a 2026-07-28 server: retrying in Discover mode will work.
    pub(super) modern: bool,
}

impl From<Error> for AttemptFailure {
    fn from(error: Error) -> Self {
        AttemptFailure {
            error,
            auth: false,
            oauth: false,
            modern: false,
        }
    }
}

impl From<transport::OpenFailure> for AttemptFailure {
    fn from(failure: transport::OpenFailure) -> Self {
        AttemptFailure {
            error: failure.error,
            auth: failure.unauthorized,
            oauth: false,
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
        host: shared.host.clone(),
        callers: Callers::default(),
    };
    let opened = transport::open(spec, &shared.ctx).await?;
    let probe_deadline =
        probe_deadline.filter(|_| !matches!(lifecycle, ClientLifecycleMode::Initialize));
    let probe = (probe_deadline, late_discover.clone());
    let name = spec.name.as_str();
    let mut direct = None;
    let mut http = None;
    let (handshake, side) = match opened {
        Opened::Stdio { transport, process } => {
            direct = Some(transport.direct());
            (
                handshake(handler, transport, lifecycle, probe, name, deadline).await,
                Side {
                    process: Some(process),
                    ..Side::default()
                },
            )
        }
        Opened::Http {
            transport,
            session,
            direct: beside,
        } => {
            let fallback_handler = HubClient {
                server: handler.server.clone(),
                progress: handler.progress.clone(),
                tools_changed: handler.tools_changed.clone(),
                host: handler.host.clone(),
                callers: handler.callers.clone(),
            };
            let first =
                handshake(handler, transport, lifecycle, probe.clone(), name, deadline).await;
            // The spec's backwards compatibility: a POST answered 400/404/405 means an old
            // HTTP+SSE server; retry as one on the same URL. If that fails too, the streamable
            // HTTP error is the one reported.
            let legacy = match &first {
                Err(HandshakeFailure::Init(e)) => match transport::HandshakeRefusal::of(e) {
                    transport::HandshakeRefusal::LegacySse { status } => Some(status),
                    _ => None,
                },
                _ => None,
            };
            let now = Instant::now();
            match legacy {
                Some(status) if now < deadline => {
                    drop(session);
                    tracing::debug!(server = %name, status, "streamable HTTP refused; trying legacy HTTP+SSE on the same URL");
                    match transport::open_legacy_sse(spec, &shared.ctx, deadline - now).await {
                        Ok(sse) => (
                            handshake(
                                fallback_handler,
                                sse,
                                ClientLifecycleMode::Initialize,
                                probe,
                                name,
                                deadline,
                            )
                            .await,
                            Side::default(),
                        ),
                        // An old server that wants credentials: that, not the streamable
                        // refusal, is what the user has to fix.
                        Err(e) if e.unauthorized => return Err(e.into()),
                        Err(e) => {
                            tracing::debug!(server = %name, "legacy HTTP+SSE fallback failed: {}", e.error);
                            (first, Side::default())
                        }
                    }
                }
                _ => {
                    http = beside;
                    (
                        first,
                        Side {
                            http_session: Some(session),
                            ..Side::default()
                        },
                    )
                }
            }
        }
        Opened::Sse(transport) => (
            handshake(handler, transport, lifecycle, probe, name, deadline).await,
            Side::default(),
        ),
        Opened::Ws(transport) => (
            handshake(handler, transport, lifecycle, probe, name, deadline).await,
            Side::default(),
        ),
        Opened::InProcess {
            stream,
            wire,
            server,
        } => {
            let (read, write) = tokio::io::split(stream);
            let transport = crate::transport::lines::LineTransport::new(
                Tap::new(read, wire.clone(), Direction::Receive),
                Tap::new(write, wire, Direction::Send),
                name,
                shared.ctx.max_message(),
            );
            direct = Some(transport.direct());
            (
                handshake(handler, transport, lifecycle, probe, name, deadline).await,
                Side {
                    server_task: Some(server),
                    ..Side::default()
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
            let era = super::era::era_of(running.peer());
            Ok(Session {
                running,
                era,
                version,
                side,
                progress,
                tools_changed,
                direct,
                http,
            })
        }
        Err(failure) => {
            // A process that died explains the failure better than the protocol error.
            let exit = match &side.process {
                Some(p) => wait_exit(p.exit_watch(), Duration::from_millis(200)).await,
                None => None,
            };
            let stderr_tail = side.drained_tail().await;
            side.stop(shared.shutdown_grace.unwrap_or(spec.options.shutdown_grace))
                .await;
            let modern = late_discover.load(Ordering::Acquire)
                || matches!(&failure, HandshakeFailure::Init(e) if refused_as_stateless(e));
            // rmcp's streamable HTTP 401, or our legacy SSE transport's 401 on a `POST`.
            let oauth =
                matches!(&failure, HandshakeFailure::Init(e) if e.is_authorization_required());
            let auth = oauth
                || matches!(&failure, HandshakeFailure::Init(e)
                    if matches!(transport::HandshakeRefusal::of(e), transport::HandshakeRefusal::Unauthorized { .. }));
            let error = match (failure, exit) {
                (HandshakeFailure::Timeout, _) => Error::Connect {
                    server: spec.name.clone(),
                    message: format!(
                        "no answer to the MCP handshake within the startup timeout of {} \
                         (is it an MCP server? raise `startup_timeout` if it is slow to start)",
                        fmt_duration(spec.startup_timeout)
                    ),
                    stderr_tail,
                    source: None,
                },
                (_, Some(exit)) => Error::Connect {
                    server: spec.name.clone(),
                    message: match transport::sandbox_denial(
                        spec.options.sandbox.as_ref(),
                        &stderr_tail,
                    ) {
                        Some(denial) => {
                            format!("{exit} before completing the MCP handshake: {denial}")
                        }
                        None => format!("{exit} before completing the MCP handshake"),
                    },
                    stderr_tail,
                    source: None,
                },
                (HandshakeFailure::Init(e), None) => Error::Connect {
                    server: spec.name.clone(),
                    // The OAuth layer's own words beat rmcp's transport-typed wrapping of them.
                    message: match shared.ctx.take_auth_failure(spec) {
                        Some(failure) => format!("OAuth failed: {failure}"),
                        None => describe_init_error(&e),
                    },
                    stderr_tail,
                    source: crate::error::cause(e),
                },
            };
            Err(AttemptFailure {
                error,
                auth,
                oauth,
                modern,
            })
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
    let transport = super::progress_tap::ProgressTap::new(
        transport,
        handler.progress.clone(),
        handler.callers.clone(),
    );
    match tokio::time::timeout_at(deadline, handler.serve_with_lifecycle(transport, lifecycle))
        .await
    {
        Ok(Ok(running)) => Ok(running),
        Ok(Err(e)) => Err(HandshakeFailure::Init(Box::new(e))),
        Err(_) => Err(HandshakeFailure::Timeout),
    }
}

fn describe_init_error(e: &ClientInitializeError) -> String {
    match transport::HandshakeRefusal::of(e) {
        // Names the request and the fix, which rmcp's wrapping would hide.
        transport::HandshakeRefusal::Unauthorized { message }
        | transport::HandshakeRefusal::Redirect { message } => return message,
        transport::HandshakeRefusal::LegacySse { .. } | transport::HandshakeRefusal::Other => {}
    }
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
pub(super) async fn list_tools(
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
            // The trace context of the span it is listed in (a server's start, a refresh).
            params.meta = super::trace_meta::traced(None);
            let page = peer
                .list_tools(Some(params))
                .await
                .map_err(|e| Error::Connect {
                    server: server.to_string(),
                    message: format!("tools/list failed: {e}"),
                    stderr_tail: Vec::new(),
                    source: crate::error::cause(e),
                })?;
            for tool in &page.tools {
                let parsed = serde_json::to_value(tool)
                    .ok()
                    .and_then(ServerTool::from_json);
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
                source: None,
            })
        })
}
