//! The gateway over streamable HTTP: rmcp's `StreamableHttpService` at `/mcp` (handshake-era
//! sessions with `Mcp-Session-Id`, and stateless 2026-07-28 requests), legacy SSE at `/sse`
//! and `/message` (`sse`) and `/metrics`, behind
//! the door's rules (`guard`: `Origin`, bearer token), with `/healthz` and `/readyz` beside it. Owns
//! binding (loopback unless a token is configured), the `Host` allowlist handed to rmcp, and
//! the graceful shutdown: stop accepting, let calls in flight finish within the grace period,
//! cancel the rest, then close every session. Closing the hub is the caller's.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::{
    Router,
    body::Body,
    extract::{Request, State},
    http::{HeaderValue, StatusCode, header},
    middleware::{self, Next},
    response::{IntoResponse, Response},
    routing::get,
    serve::ListenerExt,
};
use futures::StreamExt;
use rmcp::transport::{
    StreamableHttpServerConfig, StreamableHttpService,
    streamable_http_server::session::local::LocalSessionManager,
};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::{
    Gateway,
    guard::{self, GuardError, Token},
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
    /// The bearer token `/mcp` requires; required to bind anything but loopback.
    pub token: Option<Token>,
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
}

impl HttpOptions {
    /// Serve on `addr`, with every other setting at its default.
    pub fn new(addr: SocketAddr) -> Self {
        Self {
            addr,
            token: None,
            allowed_origins: Vec::new(),
            allowed_hosts: Vec::new(),
            grace: DEFAULT_GRACE,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            sse: SseOptions::default(),
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
    listener: tokio::net::TcpListener,
    local: SocketAddr,
}

/// What the `/mcp` guard checks, and the requests it let in that are still answering.
struct Door {
    token: Option<Token>,
    allowed_origins: Vec<String>,
    /// The `Host` values `/metrics` answers (rmcp checks `/mcp`'s itself); empty: any.
    allowed_hosts: Vec<String>,
    requests: Arc<Requests>,
}

/// POSTs to `/mcp` whose answer is still being sent: what a graceful shutdown waits for
/// (a `tools/call`'s answer travels on its POST's stream after the call itself returned).
#[derive(Default)]
struct Requests {
    open: AtomicUsize,
    idle: Notify,
}

/// One open request; counted until dropped.
struct Open(Arc<Requests>);

impl Requests {
    fn enter(self: &Arc<Self>) -> Open {
        self.open.fetch_add(1, Ordering::SeqCst);
        Open(self.clone())
    }

    /// Returns once no request is open.
    async fn idle(&self) {
        loop {
            let idle = self.idle.notified();
            if self.open.load(Ordering::SeqCst) == 0 {
                return;
            }
            idle.await;
        }
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        if self.0.open.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}

impl HttpServer {
    /// Checks the door's rules (a non-loopback address needs a token) and binds.
    pub async fn bind(gateway: Gateway, options: HttpOptions) -> Result<Self, HttpError> {
        guard::check_bind(options.addr, options.token.as_ref())?;
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
        Ok(Self {
            gateway,
            options,
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
        let factory = gateway.clone();
        let session_manager = Arc::new(LocalSessionManager::default());
        let service = StreamableHttpService::new(
            move || Ok(factory.clone()),
            session_manager.clone(),
            config,
        );
        let requests = Arc::new(Requests::default());
        let door = Arc::new(Door {
            token: options.token.clone(),
            allowed_origins: options.allowed_origins.clone(),
            allowed_hosts,
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
            session_manager,
            legacy.clone(),
        ));
        let mcp = Router::new()
            .route_service("/mcp", service)
            .merge(legacy.routes())
            .merge(scraped)
            .layer(middleware::from_fn_with_state(door, check_door));
        let app = Router::new()
            .route("/healthz", get(healthz))
            .route("/readyz", get(readyz))
            .with_state(gateway.clone())
            .merge(mcp);

        let accepting = CancellationToken::new();
        // Without TCP_NODELAY an answer written in pieces (headers, then SSE chunks) waits for
        // the client's delayed ACK: ~40 ms a call on loopback.
        let listener = listener.tap_io(|tcp| {
            if let Err(error) = tcp.set_nodelay(true) {
                tracing::debug!(%error, "TCP_NODELAY not set");
            }
        });
        let server = axum::serve(listener, app)
            .with_graceful_shutdown(accepting.clone().cancelled_owned())
            .into_future();
        let mut server = tokio::spawn(server);
        tokio::select! {
            () = shutdown => {}
            ended = &mut server => {
                // The listener ended by itself: an I/O error.
                return match ended {
                    Ok(Ok(())) => Ok(()),
                    Ok(Err(error)) => Err(HttpError::Serve(error)),
                    Err(join) => Err(HttpError::Serve(std::io::Error::other(join.to_string()))),
                };
            }
        }
        tracing::info!(addr = %local, "shutting down: no new connections");
        accepting.cancel();
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
        if tokio::time::timeout(CLOSE_WAIT, &mut server).await.is_err() {
            server.abort();
        }
        Ok(())
    }
}

/// In front of `/mcp`: a browser's `Origin` must be loopback or allowed (403 otherwise), and
/// with a token configured the request must carry it (401 with `WWW-Authenticate: Bearer`).
async fn check_door(State(door): State<Arc<Door>>, request: Request, next: Next) -> Response {
    let origin = request
        .headers()
        .get(header::ORIGIN)
        .map(HeaderValue::as_bytes);
    if !guard::origin_allowed(origin, &door.allowed_origins) {
        return (
            StatusCode::FORBIDDEN,
            "Forbidden: this Origin may not use the gateway (mcpmux serve --allow-origin ORIGIN lets one in)",
        )
            .into_response();
    }
    let host = request
        .headers()
        .get(header::HOST)
        .map(HeaderValue::as_bytes);
    if request.uri().path() != "/mcp" && !guard::host_allowed(host, &door.allowed_hosts) {
        return (
            StatusCode::FORBIDDEN,
            "Forbidden: this Host is not served (mcpmux serve --allow-host HOST adds one)",
        )
            .into_response();
    }
    if let Some(token) = &door.token {
        let authorization = request
            .headers()
            .get(header::AUTHORIZATION)
            .map(HeaderValue::as_bytes);
        if !token.admits(authorization) {
            let mut response = (
                StatusCode::UNAUTHORIZED,
                "Unauthorized: send the gateway's token as `Authorization: Bearer TOKEN`",
            )
                .into_response();
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"mcpmux\""),
            );
            return response;
        }
    }
    let deleting = request.method() == axum::http::Method::DELETE;
    if request.method() == axum::http::Method::POST {
        let open = door.requests.enter();
        let (parts, body) = next.run(request).await.into_parts();
        // Counted until its answer has been sent (or the client went away).
        let body = body.into_data_stream().map(move |chunk| {
            let _counted = &open;
            chunk
        });
        return Response::from_parts(parts, Body::from_stream(body));
    }
    let mut response = next.run(request).await;
    if deleting && response.status() == StatusCode::ACCEPTED {
        // rmcp ends a session with 202; the Python SDK reports anything but 200/204 as a
        // failed termination. The session is gone either way: say so plainly.
        *response.status_mut() = StatusCode::NO_CONTENT;
    }
    response
}

/// `/metrics`: calls, errors and latency per server and tool, server states, open sessions
/// (`/mcp` and `/sse`).
async fn metrics(
    State((gateway, sessions, legacy)): State<(Gateway, Arc<LocalSessionManager>, Legacy)>,
) -> Response {
    let open = sessions.sessions.read().await.len() + legacy.sessions();
    match gateway.metrics().render(gateway.hub(), open) {
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
/// with the reason.
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
