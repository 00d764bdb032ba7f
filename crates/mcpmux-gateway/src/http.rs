//! The gateway over streamable HTTP: rmcp's `StreamableHttpService` at `/mcp` (handshake-era
//! sessions with `Mcp-Session-Id`, and stateless 2026-07-28 requests; a plain request on an
//! established session answered inline, without it, by `inline`; an SSE answer to a POST
//! sent in one write, `one_write`; a handshake answered without a worker, `handshake`), legacy SSE at `/sse` and `/message` (`sse`) and
//! `/metrics`, behind the door (`door`: `Origin`, authentication, rate limits), with
//! `/healthz`, `/readyz` (behind the same `Host` allowlist) and, under OAuth, the protected resource metadata beside it, and the access log around it all.
//! Owns binding (loopback unless authentication is configured), the `Host` allowlist handed to
//! rmcp, and the graceful shutdown: stop accepting, let calls in flight finish within the
//! grace period, cancel the rest, then close every session and connection. The connections
//! themselves — accepted, capped and timed — are `connections`'. Closing the hub is the
//! caller's.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::{
    Router,
    extract::State,
    http::{HeaderValue, StatusCode, header},
    middleware,
    response::{IntoResponse, Response},
    routing::get,
};
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::{
    access::Access,
    access_log, client_wire,
    connections::{self, Admission, ConnectionLimits, Serving},
    door::{self, Door, Requests},
    guard::{self, GuardError, Token},
    handler::Gateway,
    handshake::{self, Handshake},
    identity::{Identity, ServedRequest},
    inline::{self, Inline},
    oauth::{OAuthError, OAuthOptions, ResourceServer},
    one_write,
    rate_limit::{Limiter, RateLimit},
    sessions::{Hooks, SessionLimits, Sessions},
    sse::{Legacy, SseOptions},
};

/// How long calls in flight may run on after shutdown begins.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(10);
/// Largest request body read from a downstream peer (rmcp answers 413 past it).
pub const DEFAULT_MAX_BODY_BYTES: usize = 4 * 1024 * 1024;
/// How long the listener may take to close its connections once the sessions are closed.
const CLOSE_WAIT: Duration = Duration::from_secs(2);

/// How to serve HTTP.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct HttpOptions {
    /// Where to listen (127.0.0.1 unless told otherwise; a port of 0 picks a free one).
    pub addr: SocketAddr,
    /// The bearer token `/mcp` requires. It, or `oauth`, is required to bind anything but
    /// loopback; with both, either is let in.
    pub token: Option<Token>,
    /// OAuth 2.1 access tokens `/mcp` accepts (the gateway as a protected resource).
    pub oauth: Option<OAuthOptions>,
    /// The tokens file: named tokens, and the access rules of identities.
    pub access: Option<Arc<Access>>,
    /// Requests each client may send to `/mcp`; none: no limit.
    pub rate_limit: Option<RateLimit>,
    /// Log every request on the `mcpmux::access` target.
    pub access_log: bool,
    /// Browser origins let in besides loopback ones (`https://app.example.com`).
    pub allowed_origins: Vec<String>,
    /// `Host` values let in besides loopback ones (`mcp.example.com`, `host:port`). Off
    /// loopback without any, every `Host` is let in: the token guards the door.
    pub allowed_hosts: Vec<String>,
    /// How long calls in flight may finish after shutdown begins.
    pub grace: Duration,
    /// Largest request body accepted.
    pub max_body_bytes: usize,
    /// The bounds of legacy SSE sessions (`/sse`).
    pub sse: SseOptions,
    /// The bounds of connections: timeouts, caps overall and per peer, head size.
    pub connections: ConnectionLimits,
    /// The bounds of `/mcp` sessions.
    pub sessions: SessionLimits,
    /// How long an SSE answer to a `POST /mcp` may be held back to go out whole, in one
    /// write (zero: every answer streams as rmcp makes it).
    pub one_write_window: Duration,
}

impl HttpOptions {
    /// Serve on `addr`, with every other setting at its default.
    pub fn new(addr: SocketAddr) -> Self {
        Self {
            addr,
            token: None,
            oauth: None,
            access: None,
            rate_limit: None,
            access_log: false,
            allowed_origins: Vec::new(),
            allowed_hosts: Vec::new(),
            grace: DEFAULT_GRACE,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            sse: SseOptions::default(),
            connections: ConnectionLimits::default(),
            sessions: SessionLimits::default(),
            one_write_window: one_write::DEFAULT_WINDOW,
        }
    }
}

/// Why HTTP serving failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HttpError {
    /// The door's rules refuse the configuration.
    #[error(transparent)]
    Guard(#[from] GuardError),
    /// The OAuth settings cannot be used.
    #[error(transparent)]
    OAuth(#[from] OAuthError),
    /// The address cannot be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The listener failed while serving.
    #[error("serving HTTP failed: {0}")]
    Serve(#[source] std::io::Error),
}

/// A bound listener, not serving yet.
pub struct HttpServer {
    gateway: Gateway,
    options: HttpOptions,
    oauth: Option<Arc<ResourceServer>>,
    listener: tokio::net::TcpListener,
    local: SocketAddr,
}

impl HttpServer {
    /// Checks the door's rules (a non-loopback address needs a token or OAuth) and binds.
    pub async fn bind(gateway: Gateway, options: HttpOptions) -> Result<Self, HttpError> {
        let named = options.access.as_ref().is_some_and(|a| a.has_tokens());
        guard::check_bind(
            options.addr,
            options.token.is_some() || options.oauth.is_some() || named,
        )?;
        if let Some(oauth) = &options.oauth {
            // Checked before binding; built again once the port chosen is known.
            ResourceServer::new(oauth, options.addr)?;
        }
        let listener = tokio::net::TcpListener::bind(options.addr)
            .await
            .map_err(|source| HttpError::Bind {
                addr: options.addr,
                source,
            })?;
        let local = listener.local_addr().map_err(|source| HttpError::Bind {
            addr: options.addr,
            source,
        })?;
        let oauth = options
            .oauth
            .as_ref()
            .map(|oauth| ResourceServer::new(oauth, local).map(Arc::new))
            .transpose()?;
        Ok(Self {
            gateway,
            options,
            oauth,
            listener,
            local,
        })
    }

    /// The address bound (with the port chosen for a port of 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// Serves until `shutdown` completes, then shuts down gracefully: stops accepting,
    /// waits for calls in flight (up to the grace period), cancels the rest upstream, closes
    /// the sessions.
    pub async fn serve(self, shutdown: impl Future<Output = ()> + Send) -> Result<(), HttpError> {
        let HttpServer {
            gateway,
            options,
            oauth,
            listener,
            local,
        } = self;
        let sessions = CancellationToken::new();
        let mut config = StreamableHttpServerConfig::default()
            .with_cancellation_token(sessions.clone())
            .with_max_request_body_bytes(options.max_body_bytes);
        config = if local.ip().is_loopback() {
            let mut hosts = config.allowed_hosts.clone();
            hosts.extend(options.allowed_hosts.iter().cloned());
            config.with_allowed_hosts(hosts)
        } else if options.allowed_hosts.is_empty() {
            config.disable_allowed_hosts()
        } else {
            config.with_allowed_hosts(options.allowed_hosts.clone())
        };
        let allowed_hosts = config.allowed_hosts.clone();
        let sse_retry = config.sse_retry;
        let factory = gateway.clone();
        let session_manager = Arc::new(Sessions::new(
            options.sessions.clone(),
            Hooks {
                at_rest: |made| {
                    // The session manager's copy and its worker's: a handler held by no one else.
                    made.downcast_ref::<Gateway>()
                        .is_some_and(|handler| handler.at_rest(2))
                },
                attach: |made, outbox| {
                    if let Some(handler) = made.downcast_ref::<Gateway>() {
                        handler.own_session().attach(outbox);
                    }
                },
            },
        ));
        // A session's `initialize` kept with its record: what brings a parked one back.
        config.session_store = Some(session_manager.store());

        let service = StreamableHttpService::new(
            // One handler per session: what a session asks and holds is its own, and it is
            // the identity's that made it (the door's, as rmcp makes it inside the request).
            move || {
                let handler =
                    factory.session_for(ServedRequest::current().unwrap_or_else(Identity::local));
                // Kept with the session it opens: what a request answered inline runs on.
                ServedRequest::made(Arc::new(handler.clone()));
                Ok(handler)
            },
            session_manager.clone(),
            config,
        );
        // Axum clones a route's service for every request, and rmcp's clone copies its config
        // (the allowed hosts, a cancellation token): behind an `Arc`, a request costs a count.
        let service = Arc::new(service);
        let service = tower::service_fn(move |request: axum::extract::Request| {
            let service = service.clone();
            async move { Ok::<_, std::convert::Infallible>(service.handle(request).await) }
        });
        let requests = Arc::new(Requests::default());
        let door = Arc::new(Door {
            token: options.token.clone(),
            access: options.access.clone().unwrap_or_default(),
            oauth: oauth.clone(),
            limiter: options.rate_limit.as_ref().map(Limiter::new),
            allowed_origins: options.allowed_origins.clone(),
            allowed_hosts: allowed_hosts.clone(),
            peek: options.access_log,
            requests: requests.clone(),
        });
        let legacy = Legacy::new(
            gateway.clone(),
            options.sse.clone(),
            options.max_body_bytes,
            sessions.clone(),
        );
        let scraped = Router::new().route("/metrics", get(metrics)).with_state((
            gateway.clone(),
            session_manager.clone(),
            legacy.clone(),
        ));
        let handshake = Arc::new(Handshake {
            gateway: gateway.clone(),
            sessions: session_manager.clone(),
            allowed_hosts: allowed_hosts.clone(),
            sse_retry,
            max_body_bytes: options.max_body_bytes,
        });
        let inline = Arc::new(Inline {
            sessions: session_manager,
            max_body_bytes: options.max_body_bytes,
        });
        // `/mcp`'s own middleware, outermost first, stacked on rmcp's service as one concrete
        // service rather than as the router's layers: axum clones a route for every request,
        // and a route layered k times is k boxes that each clone the ones inside (18 of a
        // call's 111 allocations, callgrind); stacked here, a request clones counts and each
        // layer boxes only its own future and its `Next`.
        let mcp_stack = tower::ServiceBuilder::new()
            // `/mcp` only: a legacy SSE answer goes out on its session's stream.
            .layer(middleware::from_fn_with_state(
                options.one_write_window,
                one_write::answer_in_one_write,
            ))
            // A session's handshake: born parked, no worker made (`handshake`).
            .layer(middleware::from_fn_with_state(
                handshake,
                handshake::answer_handshake,
            ))
            .layer(middleware::from_fn_with_state(
                inline,
                inline::answer_inline,
            ))
            .service(service);
        let mcp = Router::new()
            .route_service("/mcp", mcp_stack)
            .merge(legacy.routes())
            .merge(scraped);
        // Inside the door: only what it let in is a client's message.
        let mcp = client_wire::mount(mcp, gateway.hub().wire_log(), options.max_body_bytes).layer(
            middleware::from_fn_with_state(door.clone(), door::check_door),
        );
        let probes = Router::new()
            .route("/healthz", get(healthz))
            .route("/readyz", get(readyz))
            .with_state(gateway.clone())
            .layer(middleware::from_fn_with_state(door, door::check_probe));
        let mut app = probes.merge(mcp);
        if let Some(oauth) = &oauth {
            let published = Router::new();
            let published = oauth
                .metadata_paths()
                .iter()
                .fold(published, |router, path| {
                    router.route(path, get(resource_metadata))
                })
                .with_state(oauth.clone());
            app = app.merge(published);
            // Read the issuer's keys now: the first request does not wait, and a wrong issuer
            // is logged at start.
            tokio::spawn(oauth.clone().warm());
        }
        if options.access_log {
            app = app.layer(middleware::from_fn(access_log::log_requests));
        }

        let limits = options.connections.clone();
        let admission = Arc::new(Admission::new(
            connections::effective_cap(limits.max_connections),
            limits.max_connections_per_peer,
        ));
        let serving = Arc::new(Serving {
            // Made into routes once: a router whose handlers still wait for their state (axum
            // keeps them so until `with_state`, as `into_make_service` would call) builds each
            // one again, its layers and boxes, on every request (18 of a call's 129 allocations).
            app: app.with_state(()),
            gateway: gateway.clone(),
            limits,
            admission,
            stopping: CancellationToken::new(),
            killed: CancellationToken::new(),
            tracker: TaskTracker::new(),
        });
        let accepting = tokio::spawn(connections::accept(listener, serving.clone()));
        shutdown.await;
        tracing::info!(addr = %local, "shutting down: no new connections");
        serving.stopping.cancel();
        let _ = accepting.await;
        serving.tracker.close();
        gateway.close();
        // A legacy SSE answer goes out on its session's stream, not on its POST: both waited for.
        let answered = || async { tokio::join!(requests.idle(), legacy.idle()) };
        if tokio::time::timeout(options.grace, answered())
            .await
            .is_err()
        {
            let cancelled = gateway.drain(Duration::ZERO).await;
            tracing::warn!(cancelled, "calls cancelled at the end of the grace period");
            let _ = tokio::time::timeout(CLOSE_WAIT, answered()).await;
        }
        sessions.cancel();
        if tokio::time::timeout(CLOSE_WAIT, serving.tracker.wait())
            .await
            .is_err()
        {
            serving.killed.cancel();
        }
        Ok(())
    }
}

/// The protected resource metadata (RFC 9728), readable from any origin: a browser client
/// reads it before it has a token.
async fn resource_metadata(State(oauth): State<Arc<ResourceServer>>) -> Response {
    let mut response = axum::Json(oauth.metadata()).into_response();
    response.headers_mut().insert(
        header::ACCESS_CONTROL_ALLOW_ORIGIN,
        HeaderValue::from_static("*"),
    );
    response
}

/// `/metrics`: calls, errors and latency per server and tool, server states, open sessions
/// (`/mcp` and `/sse`).
async fn metrics(
    State((gateway, sessions, legacy)): State<(Gateway, Arc<Sessions>, Legacy)>,
) -> Response {
    let (open, parked) = sessions.open();
    let open = open + legacy.sessions();
    match gateway.metrics().render(gateway.hub(), open, parked) {
        Ok(text) => ([(header::CONTENT_TYPE, crate::metrics::CONTENT_TYPE)], text).into_response(),
        Err(error) => {
            tracing::warn!(%error, "metrics not rendered");
            StatusCode::INTERNAL_SERVER_ERROR.into_response()
        }
    }
}

/// `/healthz`: the process answers.
async fn healthz() -> &'static str {
    "ok\n"
}

/// `/readyz`: 200 once startup settled and every required server is connected, else 503
/// naming the servers not connected (never their errors: no token is asked of a probe).
async fn readyz(State(gateway): State<Gateway>) -> Response {
    match gateway.readiness() {
        Ok(()) => (StatusCode::OK, "ready\n").into_response(),
        Err(reason) => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("not ready: {reason}\n"),
        )
            .into_response(),
    }
}
