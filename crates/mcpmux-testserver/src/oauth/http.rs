//! The axum routes of the authorization server and the middleware in front of the resource.

use std::sync::Arc;

use axum::{
    Json, Router,
    body::Bytes,
    extract::{RawQuery, Request, State},
    http::{HeaderMap, StatusCode},
    middleware::Next,
    response::{IntoResponse, Response},
    routing::{get, post},
};
use serde_json::Value;

use super::AuthorizationServer;
use super::admin::{admin_expire, admin_revoke, admin_stats};
use super::params::no_store;

/// The metadata, registration, authorization, token and admin routes.
pub fn routes(server: Arc<AuthorizationServer>) -> Router {
    Router::new()
        .route(
            "/.well-known/oauth-protected-resource",
            get(resource_metadata),
        )
        .route(
            "/.well-known/oauth-protected-resource/mcp",
            get(resource_metadata),
        )
        .route(
            "/.well-known/oauth-authorization-server",
            get(server_metadata),
        )
        .route("/.well-known/openid-configuration", get(server_metadata))
        .route("/register", post(register))
        .route("/authorize", get(authorize))
        .route("/token", post(token))
        .route("/admin/oauth/revoke", post(admin_revoke))
        .route("/admin/oauth/expire", post(admin_expire))
        .route("/admin/oauth/stats", get(admin_stats))
        .with_state(server)
}

/// Middleware in front of the resource: only requests with a live bearer token pass.
pub async fn protect(
    State(server): State<Arc<AuthorizationServer>>,
    request: Request,
    next: Next,
) -> Response {
    let method = request.method().as_str().to_owned();
    match server.check_token(&method, request.headers()) {
        Ok(()) => next.run(request).await,
        Err(rejection) => server.challenge(rejection),
    }
}

async fn resource_metadata(State(server): State<Arc<AuthorizationServer>>) -> Json<Value> {
    Json(server.resource_metadata_document())
}

async fn server_metadata(State(server): State<Arc<AuthorizationServer>>) -> Json<Value> {
    Json(server.server_metadata_document())
}

async fn register(State(server): State<Arc<AuthorizationServer>>, body: Bytes) -> Response {
    match server.register(&body) {
        Ok(metadata) => no_store(StatusCode::CREATED, metadata),
        Err(error) => error.into_response(),
    }
}

async fn authorize(
    State(server): State<Arc<AuthorizationServer>>,
    RawQuery(query): RawQuery,
) -> Response {
    server
        .authorize(query.as_deref().unwrap_or(""))
        .unwrap_or_else(IntoResponse::into_response)
}

async fn token(
    State(server): State<Arc<AuthorizationServer>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    match server.token(&headers, &body) {
        Ok(answer) => no_store(StatusCode::OK, answer),
        Err(error) => error.into_response(),
    }
}
