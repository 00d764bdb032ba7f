//! OAuth 2.1 for remote servers, on rmcp's `auth`: the token store, the pluggable
//! authorization step, each server's OAuth state and its refusal decisions, and the redirect
//! policy that keeps tokens inside their origin. Knows nothing of transports: the streamable
//! HTTP client (`transport/http_client.rs`) calls in here, never the other way round.
//!
//! A hub never opens a browser by itself: a server that needs a person's authorization and has
//! no token ends `NeedsAuth { login: true }` (a [`login`] elsewhere brings it back; the CLI's is
//! `mcpmux auth login NAME`), unless the
//! harness gave the hub an [`Authorizer`] (`HubOptions::with_authorizer`), in which case the
//! flow runs where the 401 happened. Client-credentials servers need no person and always
//! obtain their tokens themselves.

mod authorizer;
mod credentials;
pub(crate) mod dpop;
mod grants;
pub(crate) mod redirect;
pub(crate) mod session;
mod store;

use std::sync::Arc;

pub use authorizer::{
    AuthorizationPrompt, AuthorizeFuture, Authorizer, HeadlessAuthorizer, LoopbackAuthorizer,
};
pub use store::{StoreError, TokenStore};

use crate::config::{ServerSpec, TransportSpec};
use crate::error::Error;
use crate::redact::{redact_reqwest, redact_text};
use crate::sync::lock;
use session::ServerAuth;

/// What a hub knows for OAuth: where tokens live and who authorizes.
#[derive(Clone)]
pub(crate) struct AuthContext {
    /// The token store.
    pub store: TokenStore,
    /// Runs the person-facing step inside the hub; `None`: servers end `NeedsAuth`.
    pub authorizer: Option<Arc<dyn Authorizer>>,
    /// Each server's OAuth state, kept across reconnects.
    servers: Arc<std::sync::Mutex<std::collections::HashMap<String, Arc<ServerAuth>>>>,
}

impl AuthContext {
    /// A context on `store`, with `authorizer` if any.
    pub fn new(store: TokenStore, authorizer: Option<Arc<dyn Authorizer>>) -> Self {
        Self {
            store,
            authorizer,
            servers: Arc::default(),
        }
    }

    /// Refusals of a streamable HTTP server's credentials that nothing could answer (see
    /// [`ServerAuth::refusals`]), by OAuth or of a header it does not manage; `None` for
    /// other transports.
    pub fn refusals(&self, spec: &ServerSpec) -> Option<tokio::sync::watch::Receiver<u64>> {
        match &spec.transport {
            TransportSpec::Http { url, .. } => Some(self.server(spec, url).refusals()),
            _ => None,
        }
    }

    /// The credentials stored for `spec`'s server now (see [`ServerAuth::stored_credentials`]);
    /// `None` for other transports.
    pub fn stored_credentials(&self, spec: &ServerSpec) -> Option<String> {
        match &spec.transport {
            TransportSpec::Http { url, .. } => self.server(spec, url).stored_credentials(),
            _ => None,
        }
    }

    /// The last OAuth failure of `spec`'s server, cleared.
    pub fn take_failure(&self, spec: &ServerSpec) -> Option<String> {
        match &spec.transport {
            TransportSpec::Http { url, .. } => self.server(spec, url).take_failure(),
            _ => None,
        }
    }

    /// The OAuth state of `spec`'s server at `url`, created on first use.
    pub fn server(&self, spec: &ServerSpec, url: &str) -> Arc<ServerAuth> {
        let mut servers = lock(&self.servers);
        servers
            .entry(format!("{}\n{url}", spec.name))
            .or_insert_with(|| {
                Arc::new(ServerAuth::new(
                    &spec.name,
                    url,
                    spec.auth.oauth.clone(),
                    self.store.clone(),
                    self.authorizer.clone(),
                ))
            })
            .clone()
    }
}

/// Runs the configured OAuth flow for `spec` now and stores the tokens (`mcpmux auth login`):
/// the server is asked first so its 401 challenge seeds discovery and scope selection.
pub async fn login(
    spec: &ServerSpec,
    store: &TokenStore,
    authorizer: Arc<dyn Authorizer>,
) -> Result<(), Error> {
    let failed = |message: String| Error::Auth {
        server: spec.name.clone(),
        message,
        source: None,
    };
    let TransportSpec::Http { url, headers } = &spec.transport else {
        return Err(failed(format!(
            "OAuth applies to streamable HTTP servers; this one is `{}`",
            spec.transport.kind()
        )));
    };
    let challenge = challenge(url, headers).await.map_err(|e| Error::Auth {
        server: spec.name.clone(),
        // Kept redacted too: the error's `Debug` prints the field as it is.
        message: redact_text(&format!("cannot reach {url}: {e}")).into_owned(),
        source: Some(Box::new(redact_reqwest(e))),
    })?;
    let auth = Arc::new(ServerAuth::new(
        &spec.name,
        url,
        spec.auth.oauth.clone(),
        store.clone(),
        Some(authorizer),
    ));
    session::detached(move || async move { auth.login(challenge.as_deref()).await })
        .await
        .map_err(|e| failed(describe(&e)))
}

/// The server's `WWW-Authenticate` challenge to an unauthenticated `initialize`, if it sends
/// one.
async fn challenge(
    url: &str,
    headers: &std::collections::BTreeMap<String, String>,
) -> Result<Option<String>, reqwest::Error> {
    let client = reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(30))
        .redirect(redirect::same_origin())
        .build()?;
    let mut request = client
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(
            serde_json::json!({
                "jsonrpc": "2.0", "id": 0, "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "mcpmux", "version": env!("CARGO_PKG_VERSION")}
                }
            })
            .to_string(),
        );
    for (name, value) in headers {
        if !name.eq_ignore_ascii_case("authorization") {
            request = request.header(name, value);
        }
    }
    let response = request.send().await?;
    if response.status() != reqwest::StatusCode::UNAUTHORIZED {
        return Ok(None);
    }
    Ok(response
        .headers()
        .get(reqwest::header::WWW_AUTHENTICATE)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned))
}

/// An rmcp auth error in words a person can act on.
pub(crate) fn describe(error: &rmcp::transport::auth::AuthError) -> String {
    use rmcp::transport::auth::AuthError;
    match error {
        AuthError::NoAuthorizationSupport => {
            "the server publishes no OAuth metadata: give a token in its `headers` instead".into()
        }
        AuthError::PkceUnsupported => {
            "the authorization server does not support PKCE with S256, which OAuth 2.1 requires; mcpmux will not authorize without it".into()
        }
        AuthError::RegistrationFailed(message) => format!(
            "client registration failed ({message}): register a client with the authorization server and set `oauth.clientId`"
        ),
        other => other.to_string(),
    }
}

/// Whether the static headers already authenticate (an `Authorization` header), in which
/// case OAuth stays out of the way.
pub(crate) fn has_authorization_header(
    headers: &std::collections::BTreeMap<String, String>,
) -> bool {
    headers
        .keys()
        .any(|name| name.eq_ignore_ascii_case("authorization"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_unreachable_server_keeps_the_http_error_under_auth_without_its_secrets() {
        // A port nobody listens on: bound, then released.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .map(|addr| addr.port())
            .unwrap_or_else(|e| panic!("{e}"));
        let spec = ServerSpec::http("r", format!("http://u:S2@127.0.0.1:{port}/mcp?api_key=S1"));
        let error = login(
            &spec,
            &TokenStore::memory(),
            Arc::new(LoopbackAuthorizer::new().without_browser()),
        )
        .await
        .err()
        .unwrap_or_else(|| panic!("logged in to a closed port"));
        let source = std::error::Error::source(&error).unwrap_or_else(|| panic!("{error}"));
        assert!(
            source.downcast_ref::<reqwest::Error>().is_some(),
            "{source}"
        );
        let mut story = error.to_string();
        let mut debug = format!("{error:?}");
        let mut cause = Some(source);
        while let Some(next) = cause {
            story.push_str(&format!(": {next}"));
            debug.push_str(&format!("{next:?}"));
            cause = next.source();
        }
        assert!(story.contains("cannot reach"), "{story}");
        for secret in ["S1", "S2", "api_key"] {
            assert!(!story.contains(secret), "{story}");
            assert!(!debug.contains(secret), "{debug}");
        }
    }
}
