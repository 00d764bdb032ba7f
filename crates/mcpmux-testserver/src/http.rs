//! The streamable HTTP face: rmcp's `StreamableHttpService` under `/mcp`, served by axum.
//!
//! Owns binding (loopback only unless `--allow-remote`), the `listening on …` line, the
//! middleware in front of `/mcp` (with `--oauth` the bearer check of `oauth` first, then the
//! HTTP failure switch, then the gate) and the admin endpoints that flip the switch at run time.
//! MCP semantics stay in rmcp and `server`; OAuth stays in `oauth`.

use std::{
    convert::Infallible,
    io::Write,
    net::SocketAddr,
    sync::{Arc, Mutex},
};

use anyhow::Context;
use axum::{
    Json, Router,
    body::Body,
    extract::{Query, Request, State},
    http::{HeaderValue, Method, StatusCode, header},
    middleware::{self, Next},
    response::{IntoResponse, Response},
    routing::post,
    serve::ListenerExt,
};
use rmcp::{
    model::{ErrorData, ServerJsonRpcMessage},
    transport::{
        StreamableHttpServerConfig, StreamableHttpService,
        streamable_http_server::{SessionManager, session::local::LocalSessionManager},
    },
};
use serde::Deserialize;

use crate::{
    conformance::ConformanceServer,
    faults::HttpFailure,
    gate::{Gate, Probe, Verdict},
    oauth::{self, AuthorizationServer, OAuthOptions},
    server::{Shared, TestServer},
};

/// Largest body the gate buffers, like rmcp's own limit for a POST.
const MAX_GATED_BODY_BYTES: usize = 4 * 1024 * 1024;

/// How to serve HTTP.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    pub addr: SocketAddr,
    pub allow_remote: bool,
    pub stateless: bool,
    /// `--conformance`: serve the conformance suite's scenarios instead of the test tools.
    pub conformance: bool,
    pub json_response: bool,
    pub gate: Gate,
    pub failure: HttpFailure,
    /// `--unknown-session`: 404 (rmcp's own answer) or 400 the reference server's way.
    pub unknown_session: u16,
    /// `--http-fail-json`: injected failures carry a JSON-RPC error without an id.
    pub fail_json: bool,
    /// `--oauth`: guard `/mcp` with bearer tokens from an authorization server on the same
    /// listener.
    pub oauth: Option<OAuthOptions>,
}

/// State of the middleware and the admin endpoints.
struct HttpState {
    failure: Mutex<HttpFailure>,
    gate: Gate,
    sessions: Arc<LocalSessionManager>,
    /// Advertised in `WWW-Authenticate` on an injected 401 (RFC 9728 location for `/mcp`).
    resource_metadata: String,
    unknown_session: u16,
    fail_json: bool,
}

impl HttpState {
    fn next_failure(&self) -> Option<u16> {
        match self.failure.lock() {
            Ok(mut failure) => failure.next_request(),
            Err(poisoned) => poisoned.into_inner().next_request(),
        }
    }

    fn set_failure(&self, value: HttpFailure) {
        match self.failure.lock() {
            Ok(mut failure) => *failure = value,
            Err(poisoned) => *poisoned.into_inner() = value,
        }
    }
}

/// Bind, print the `listening on` line, and serve until the process is stopped.
pub async fn serve(shared: Arc<Shared>, options: HttpOptions) -> anyhow::Result<()> {
    anyhow::ensure!(
        options.allow_remote || options.addr.ip().is_loopback(),
        "refusing to listen on non-loopback address {} without --allow-remote",
        options.addr
    );
    let listener = tokio::net::TcpListener::bind(options.addr)
        .await
        .with_context(|| format!("binding {}", options.addr))?;
    let local = listener.local_addr().context("reading the bound address")?;

    let mut config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(!options.stateless)
        .with_json_response(options.json_response);
    if options.allow_remote {
        config = config.disable_allowed_hosts();
    }
    let sessions = Arc::new(LocalSessionManager::default());
    let mcp = if options.conformance {
        Router::new().route_service(
            "/mcp",
            StreamableHttpService::new(
                || Ok(ConformanceServer::new_session()),
                sessions.clone(),
                config,
            ),
        )
    } else {
        Router::new().route_service(
            "/mcp",
            StreamableHttpService::new(
                move || Ok(TestServer::new_session(shared.clone())),
                sessions.clone(),
                config,
            ),
        )
    };
    let state = Arc::new(HttpState {
        failure: Mutex::new(options.failure),
        gate: options.gate,
        sessions,
        resource_metadata: format!("http://{local}/.well-known/oauth-protected-resource/mcp"),
        unknown_session: options.unknown_session,
        fail_json: options.fail_json,
    });
    let mut mcp = mcp.layer(middleware::from_fn_with_state(state.clone(), guard));
    let mut app = Router::new()
        .route("/admin/fail", post(admin_fail))
        .route("/admin/heal", post(admin_heal))
        .route("/admin/drop_sessions", post(admin_drop_sessions))
        .with_state(state);
    if let Some(oauth) = options.oauth {
        let authority = Arc::new(AuthorizationServer::new(&format!("http://{local}"), oauth));
        // The outermost layer runs first: the bearer check comes before the failure switch.
        mcp = mcp.layer(middleware::from_fn_with_state(
            authority.clone(),
            oauth::protect,
        ));
        app = app.merge(oauth::routes(authority));
    }
    let app = mcp.merge(app);

    {
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "listening on http://{local}/mcp").context("writing to stdout")?;
        stdout.flush().context("flushing stdout")?;
    }
    // Like any server worth measuring against: without TCP_NODELAY an answer written in
    // pieces waits for the client's delayed ACK (~40 ms a call on loopback).
    let listener = listener.tap_io(|tcp| {
        if let Err(error) = tcp.set_nodelay(true) {
            tracing::debug!(%error, "TCP_NODELAY not set");
        }
    });
    axum::serve(listener, app).await.context("serving HTTP")
}

/// In front of `/mcp`: the failure switch first, then the gate.
async fn guard(State(state): State<Arc<HttpState>>, request: Request, next: Next) -> Response {
    if let Some(status) = state.next_failure() {
        if state.fail_json {
            // The reference TypeScript server's words for its own failures.
            return id_less_error(
                status,
                ErrorData::internal_error("Internal server error", None),
            );
        }
        return failure_response(status, &state.resource_metadata);
    }
    if state.unknown_session == 400
        && let Some(id) = request
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
        && !state.sessions.sessions.read().await.contains_key(id)
    {
        // The reference TypeScript server's answer to a session it does not know.
        return id_less_error(
            400,
            ErrorData::new(
                rmcp::model::ErrorCode(-32000),
                "Bad Request: No valid session ID provided",
                None,
            ),
        );
    }
    if state.gate.is_transparent() || request.method() != Method::POST {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let bytes = match axum::body::to_bytes(body, MAX_GATED_BODY_BYTES).await {
        Ok(bytes) => bytes,
        Err(error) => {
            return (
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("Payload Too Large: {error}"),
            )
                .into_response();
        }
    };
    if let Ok(probe) = serde_json::from_slice::<Probe<'_>>(&bytes) {
        match state.gate.judge(&probe) {
            Verdict::Pass => {}
            // Hang until the client gives up; hyper drops this future when it disconnects.
            Verdict::Drop => return std::future::pending::<Response>().await,
            Verdict::Reply(error) => return json_rpc_error(error, probe.id),
        }
    }
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

fn json_rpc_error(error: ErrorData, id: Option<rmcp::model::RequestId>) -> Response {
    let message = ServerJsonRpcMessage::error(error, id);
    match serde_json::to_vec(&message) {
        Ok(body) => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/json")],
            body,
        )
            .into_response(),
        Err(error) => (StatusCode::INTERNAL_SERVER_ERROR, error.to_string()).into_response(),
    }
}

/// A JSON-RPC error with `"id": null` under HTTP `status`, the way the reference servers
/// refuse a request before reading it.
fn id_less_error(status: u16, error: ErrorData) -> Response {
    let code = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    match serde_json::to_vec(&ServerJsonRpcMessage::error(error, None)) {
        Ok(body) => (code, [(header::CONTENT_TYPE, "application/json")], body).into_response(),
        Err(error) => (StatusCode::INTERNAL_SERVER_ERROR, error.to_string()).into_response(),
    }
}

fn failure_response(status: u16, resource_metadata: &str) -> Response {
    let code = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let body = if code == StatusCode::NOT_FOUND {
        // rmcp's own words for an unknown or expired session.
        "Not Found: Session not found".to_owned()
    } else {
        format!("testserver: injected HTTP {status}")
    };
    let mut response = (code, body).into_response();
    if code == StatusCode::UNAUTHORIZED
        && let Ok(value) =
            HeaderValue::from_str(&format!("Bearer resource_metadata=\"{resource_metadata}\""))
    {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, value);
    }
    response
}

#[derive(Debug, Deserialize)]
struct FailQuery {
    status: u16,
    /// Fail this many requests, then heal; absent: until `POST /admin/heal`.
    count: Option<u64>,
    /// Let this many requests through first.
    after: Option<u64>,
}

/// `POST /admin/fail?status=500&count=3&after=0`
async fn admin_fail(
    State(state): State<Arc<HttpState>>,
    Query(query): Query<FailQuery>,
) -> Response {
    if !(100..=599).contains(&query.status) {
        return (StatusCode::BAD_REQUEST, "status must be 100..=599").into_response();
    }
    let failure = HttpFailure {
        status: Some(query.status),
        pass_before_failing: query.after.unwrap_or(0),
        remaining: query.count,
    };
    state.set_failure(failure);
    Json(serde_json::json!({
        "status": query.status,
        "count": query.count,
        "after": failure.pass_before_failing,
    }))
    .into_response()
}

/// `POST /admin/heal`: stop failing (also cancels `--http-fail`).
async fn admin_heal(State(state): State<Arc<HttpState>>) -> Json<serde_json::Value> {
    state.set_failure(HttpFailure::default());
    Json(serde_json::json!({ "healed": true }))
}

/// `POST /admin/drop_sessions`: forget every session, so their ids become stale (404).
async fn admin_drop_sessions(
    State(state): State<Arc<HttpState>>,
) -> Result<Json<serde_json::Value>, Infallible> {
    let ids: Vec<_> = state
        .sessions
        .sessions
        .read()
        .await
        .keys()
        .cloned()
        .collect();
    let mut dropped = 0_usize;
    for id in &ids {
        match state.sessions.close_session(id).await {
            Ok(()) => dropped += 1,
            Err(error) => tracing::warn!(%error, "cannot close session"),
        }
    }
    Ok(Json(serde_json::json!({ "dropped": dropped })))
}
