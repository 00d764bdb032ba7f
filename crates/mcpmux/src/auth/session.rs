//! One server's OAuth state for the life of a hub: the token to send, and what to do when the
//! server refuses it (refresh, client credentials, a new authorization, a scope step-up).
//!
//! rmcp's `AuthorizationManager` does the protocol work (discovery, registration, PKCE, the
//! token requests); this owns the decisions, the persistence of client registrations and
//! metadata (so a restarted hub refreshes without rediscovering), and the serialisation of
//! concurrent refusals into one authorization.
//!
//! This file holds the decisions: the token to send, and the answer to a 401 or a 403
//! `insufficient_scope`. How a manager is obtained (restored from the store, discovered,
//! authorized, a grant without a person) is `session/flows.rs`.

mod flows;

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use rmcp::transport::auth::{AuthError, AuthorizationCallback, AuthorizationManager};
use tokio::sync::Mutex;

use super::authorizer::{AuthorizationPrompt, Authorizer};
use super::credentials::store_error;
use super::dpop::Dpop;
use super::store::TokenStore;
use crate::config::{OAuthGrant, OAuthSpec};
use crate::sync::lock;

/// Step-ups after the first authorization before a 403 is passed on: the conformance suite
/// allows three authorization requests in all, and a person should not be asked more often.
const MAX_STEP_UPS: u32 = 2;

/// A server's OAuth state, shared by every connection attempt to it.
pub(crate) struct ServerAuth {
    server: String,
    resource: String,
    spec: OAuthSpec,
    store: TokenStore,
    authorizer: Option<Arc<dyn Authorizer>>,
    manager: Mutex<Option<AuthorizationManager>>,
    /// Step-ups since a stepped-up token last worked (rmcp's own counter restarts with every
    /// token it obtains, so a server that is never satisfied would be asked forever).
    step_ups: AtomicU32,
    /// Counts refusals nothing here could answer, so a live session learns its credentials
    /// are gone (a stateless server has no session to lose).
    refused: tokio::sync::watch::Sender<u64>,
    /// The last OAuth failure, in words, for the connection error that follows it.
    last_failure: std::sync::Mutex<Option<String>>,
    /// DPoP, when the authorization server takes it: the key every proof is signed with.
    dpop: std::sync::Mutex<Option<Arc<Dpop>>>,
    /// Whether the current token is bound to that key (`token_type: DPoP`), so it is presented
    /// as `DPoP` with a proof; an unbound token stays a Bearer token.
    dpop_bound: std::sync::atomic::AtomicBool,
}

/// What to do with a refused request.
pub(crate) enum Retry {
    /// Send it again with this token.
    With(String),
    /// Pass the refusal on: nothing more can be done here (no authorizer, limit reached).
    GiveUp,
}

/// Runs an OAuth flow on a blocking-pool thread of the current runtime: some of rmcp's flow
/// futures hold a non-`Send` URL serializer across an await, and a transport's futures must be
/// `Send`. Flows are rare (a 401, a login), so the thread costs nothing that matters.
pub(crate) async fn detached<T, F, Fut>(flow: F) -> Result<T, AuthError>
where
    F: FnOnce() -> Fut + Send + 'static,
    Fut: Future<Output = Result<T, AuthError>>,
    T: Send + 'static,
{
    let handle = tokio::runtime::Handle::current();
    tokio::task::spawn_blocking(move || handle.block_on(flow()))
        .await
        .map_err(|e| AuthError::InternalError(format!("the OAuth flow did not finish: {e}")))?
}

impl ServerAuth {
    /// The OAuth state of `server` at `resource`.
    pub fn new(
        server: &str,
        resource: &str,
        spec: OAuthSpec,
        store: TokenStore,
        authorizer: Option<Arc<dyn Authorizer>>,
    ) -> Self {
        Self {
            server: server.to_owned(),
            resource: resource.to_owned(),
            spec,
            store,
            authorizer,
            manager: Mutex::new(None),
            step_ups: AtomicU32::new(0),
            refused: tokio::sync::watch::Sender::new(0),
            last_failure: std::sync::Mutex::new(None),
            dpop: std::sync::Mutex::new(None),
            dpop_bound: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// The DPoP state to present the current token with; `None` for a Bearer token.
    pub fn dpop(&self) -> Option<Arc<Dpop>> {
        if !self.dpop_bound.load(Ordering::Acquire) {
            return None;
        }
        self.signing_key()
    }

    /// The DPoP state token requests are signed with, bound token or not.
    fn signing_key(&self) -> Option<Arc<Dpop>> {
        lock(&self.dpop).clone()
    }

    fn set_dpop(&self, dpop: Option<Arc<Dpop>>) {
        *lock(&self.dpop) = dpop;
    }

    /// Records whether a token response of `token_type` is bound to our DPoP key.
    fn note_token_type(&self, token_type: Option<&str>) {
        let bound = token_type.is_some_and(|t| t.eq_ignore_ascii_case("dpop"));
        self.dpop_bound.store(bound, Ordering::Release);
    }

    /// The access token to send, refreshed first when it is about to expire; `None` when there
    /// is none (the request goes out without, and the server's challenge drives what follows).
    pub async fn token(&self) -> Result<Option<String>, AuthError> {
        let mut manager = self.manager.lock().await;
        if manager.is_none() {
            *manager = self.restore().await?;
        }
        let Some(current) = manager.as_ref() else {
            return Ok(None);
        };
        match current.get_access_token().await {
            Ok(token) => Ok(Some(token)),
            Err(AuthError::AuthorizationRequired) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Remembers `error` as the reason the current request failed.
    pub fn record_failure(&self, error: &AuthError) {
        let text = super::describe(error);
        *lock(&self.last_failure) = Some(text);
    }

    /// The last recorded failure, cleared.
    pub fn take_failure(&self) -> Option<String> {
        lock(&self.last_failure).take()
    }

    /// The credentials the token store holds for this server now, serialized: what changes
    /// when a login elsewhere (`mcpmux auth login` in another process) stores new ones. `None`
    /// when there are none or the store cannot be read.
    pub fn stored_credentials(&self) -> Option<String> {
        let entry = self.store.get(&self.server, &self.resource).ok()??;
        serde_json::to_string(&entry.credentials?).ok()
    }

    /// Watches the refusals nothing could answer.
    pub fn refusals(&self) -> tokio::sync::watch::Receiver<u64> {
        self.refused.subscribe()
    }

    /// The server refused credentials OAuth does not manage (a static or `headersHelper`
    /// `Authorization` header) and nothing could renew them: the session is ended, and the
    /// reconnect leaves the server needing auth if they are refused again.
    pub fn refused_outside_oauth(&self) {
        self.refused.send_modify(|count| *count += 1);
    }

    /// The server answered 401 to a request sent with `sent`: refresh, or obtain new
    /// credentials the configured way, or give up.
    pub async fn unauthorized(
        &self,
        sent: Option<&str>,
        challenge: &str,
    ) -> Result<Retry, AuthError> {
        let retry = self.renew(sent, challenge).await;
        if !matches!(retry, Ok(Retry::With(_))) {
            self.refused.send_modify(|count| *count += 1);
        }
        retry
    }

    async fn renew(&self, sent: Option<&str>, challenge: &str) -> Result<Retry, AuthError> {
        let mut manager = self.manager.lock().await;
        if manager.is_none() {
            *manager = self.restore().await?;
        }
        if let Some(current) = manager.as_ref() {
            // Another request may have renewed the token while this one waited for the lock.
            if let Ok(token) = current.get_access_token().await
                && Some(token.as_str()) != sent
            {
                return Ok(Retry::With(token));
            }
            if sent.is_some() {
                match current.refresh_token().await {
                    Ok(response) => {
                        use oauth2::TokenResponse;
                        let token = response.access_token().secret().to_owned();
                        if Some(token.as_str()) != sent {
                            tracing::info!(server = %self.server, "access token refreshed after a 401");
                            return Ok(Retry::With(token));
                        }
                    }
                    Err(e) => {
                        tracing::info!(server = %self.server, "refresh after a 401 failed: {e}")
                    }
                }
            }
        }
        match &self.spec.grant {
            OAuthGrant::ClientCredentials { .. }
            | OAuthGrant::JwtBearer { .. }
            | OAuthGrant::Enterprise { .. } => {
                let (fresh, token) = self.machine(Some(challenge)).await?;
                *manager = Some(fresh);
                Ok(Retry::With(token))
            }
            OAuthGrant::AuthorizationCode => match &self.authorizer {
                Some(authorizer) => {
                    let (fresh, token) =
                        self.authorize(Some(challenge), authorizer.as_ref()).await?;
                    *manager = Some(fresh);
                    Ok(Retry::With(token))
                }
                None => Ok(Retry::GiveUp),
            },
        }
    }

    /// The server answered 403 `insufficient_scope` to a request sent with `sent`: authorize
    /// again with the union of the granted and the required scopes, a bounded number of times.
    pub async fn insufficient_scope(
        &self,
        sent: Option<&str>,
        required: Option<&str>,
        challenge: &str,
    ) -> Result<Retry, AuthError> {
        let manager = self.manager.lock().await;
        let Some(current) = manager.as_ref() else {
            return Ok(Retry::GiveUp);
        };
        if let Ok(token) = current.get_access_token().await
            && Some(token.as_str()) != sent
        {
            return Ok(Retry::With(token));
        }
        let Some(authorizer) = &self.authorizer else {
            return Ok(Retry::GiveUp);
        };
        if !matches!(self.spec.grant, OAuthGrant::AuthorizationCode)
            || self.step_ups.load(Ordering::Relaxed) >= MAX_STEP_UPS
        {
            tracing::warn!(server = %self.server, "the server still wants more scope after {MAX_STEP_UPS} step-ups; not asking again");
            return Ok(Retry::GiveUp);
        }
        self.step_ups.fetch_add(1, Ordering::Relaxed);
        let scope = required
            .map(str::to_owned)
            .or_else(|| {
                rmcp::transport::auth::WWWAuthenticateParams::parse(
                    challenge,
                    &reqwest::Url::parse(&self.resource).ok()?,
                )
                .scope
            })
            .unwrap_or_default();
        let url = current.request_scope_upgrade(&scope).await?;
        let redirect_uri = self
            .store
            .get(&self.server, &self.resource)
            .map_err(store_error)?
            .and_then(|entry| entry.client)
            .map(|client| client.redirect_uri)
            .unwrap_or_default();
        tracing::info!(server = %self.server, scope = %scope, "asking for more scope");
        let redirect = authorizer
            .authorize(AuthorizationPrompt {
                server: self.server.clone(),
                url,
                redirect_uri,
                scopes: scope,
            })
            .await
            .map_err(AuthError::AuthorizationFailed)?;
        let callback = AuthorizationCallback::from_redirect_url(&redirect)?;
        let response = current
            .exchange_code_for_token_with_issuer(
                &callback.code,
                &callback.csrf_token,
                callback.issuer.as_deref(),
            )
            .await?;
        use oauth2::TokenResponse;
        Ok(Retry::With(response.access_token().secret().to_owned()))
    }

    /// A request went through after a step-up: the scope it needed was granted, so a later
    /// operation that needs more may step up again.
    pub fn step_up_worked(&self) {
        self.step_ups.store(0, Ordering::Relaxed);
    }

    /// Runs the configured flow now, whatever is stored (`mcpmux auth login`).
    pub async fn login(&self, challenge: Option<&str>) -> Result<(), AuthError> {
        let mut manager = self.manager.lock().await;
        let fresh = match &self.spec.grant {
            OAuthGrant::ClientCredentials { .. }
            | OAuthGrant::JwtBearer { .. }
            | OAuthGrant::Enterprise { .. } => self.machine(challenge).await?.0,
            OAuthGrant::AuthorizationCode => {
                let authorizer = self.authorizer.as_ref().ok_or_else(|| {
                    AuthError::AuthorizationFailed(
                        "no authorizer: the browser flow needs one to receive the redirect".into(),
                    )
                })?;
                self.authorize(challenge, authorizer.as_ref()).await?.0
            }
        };
        *manager = Some(fresh);
        Ok(())
    }
}
