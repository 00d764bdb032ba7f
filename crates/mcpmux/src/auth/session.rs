//! One server's OAuth state for the life of a hub: the token to send, and what to do when the
//! server refuses it (refresh, client credentials, a new authorization, a scope step-up).
//!
//! rmcp's `AuthorizationManager` does the protocol work (discovery, registration, PKCE, the
//! token requests); this owns the decisions, the persistence of client registrations and
//! metadata (so a restarted hub refreshes without rediscovering), and the serialisation of
//! concurrent refusals into one authorization.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use rmcp::transport::auth::{
    AuthError, AuthorizationCallback, AuthorizationManager, AuthorizationMetadata,
    ClientCredentialsConfig, CredentialStore, JwtSigningAlgorithm, OAuthClientConfig,
    ScopeUpgradeConfig, StoredCredentials,
};
use tokio::sync::Mutex;

use super::authorizer::{AuthorizationPrompt, Authorizer};
use super::credentials::{Credentials, store_error};
use super::dpop::{self, Dpop, DpopKey, DpopOAuthClient};
use super::store::{Client, TokenStore};
use crate::config::{OAuthGrant, OAuthSpec};

/// The redirect URI of clients that never redirect (rmcp's client wants one).
const MACHINE_REDIRECT: &str = "http://127.0.0.1/unused";
/// The client name sent in dynamic registration.
const CLIENT_NAME: &str = "mcpmux";
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
        match self.dpop.lock() {
            Ok(dpop) => dpop.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    fn set_dpop(&self, dpop: Option<Arc<Dpop>>) {
        match self.dpop.lock() {
            Ok(mut slot) => *slot = dpop,
            Err(poisoned) => *poisoned.into_inner() = dpop,
        }
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
        match self.last_failure.lock() {
            Ok(mut slot) => *slot = Some(text),
            Err(poisoned) => *poisoned.into_inner() = Some(text),
        }
    }

    /// The last recorded failure, cleared.
    pub fn take_failure(&self) -> Option<String> {
        match self.last_failure.lock() {
            Ok(mut slot) => slot.take(),
            Err(poisoned) => poisoned.into_inner().take(),
        }
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

    /// A manager with this server's credential store.
    async fn fresh_manager(&self) -> Result<AuthorizationManager, AuthError> {
        let mut manager = AuthorizationManager::new(self.resource.as_str()).await?;
        self.configure(&mut manager);
        Ok(manager)
    }

    /// This server's credential store and step-up limit on `manager`.
    fn configure(&self, manager: &mut AuthorizationManager) {
        manager.set_credential_store(Credentials::new(
            self.store.clone(),
            &self.server,
            &self.resource,
        ));
        manager.set_scope_upgrade_config({
            let mut config = ScopeUpgradeConfig::default();
            config.max_upgrade_attempts = MAX_STEP_UPS;
            config
        });
    }

    /// A manager for an authorization server with `metadata`: one whose token requests carry
    /// DPoP proofs when the server takes them (with this server's stored key, or a new one
    /// that is stored), else `plain` as it is.
    async fn manager_for(
        &self,
        metadata: &AuthorizationMetadata,
        plain: AuthorizationManager,
        stored_key: Option<&str>,
    ) -> Result<AuthorizationManager, AuthError> {
        if !dpop::supported(metadata) {
            self.set_dpop(None);
            return Ok(plain);
        }
        let key = match stored_key.map(DpopKey::from_stored) {
            Some(Ok(key)) => key,
            Some(Err(e)) => {
                tracing::warn!(server = %self.server, "the stored DPoP key is unusable ({e}); making a new one");
                DpopKey::generate()?
            }
            None => DpopKey::generate()?,
        };
        let stored = key.stored();
        if stored_key != Some(stored.as_str()) {
            self.store
                .update(&self.server, &self.resource, |entry| {
                    entry.dpop_key = Some(stored);
                })
                .map_err(store_error)?;
        }
        let dpop = Arc::new(Dpop::new(key));
        let client = DpopOAuthClient::new(dpop.clone(), &self.resource)?;
        let mut manager = AuthorizationManager::new_with_oauth_http_client(
            self.resource.as_str(),
            Arc::new(client),
        )
        .await?;
        self.configure(&mut manager);
        self.set_dpop(Some(dpop));
        tracing::debug!(server = %self.server, "the authorization server takes DPoP; tokens will be bound to our key");
        Ok(manager)
    }

    /// The authorization server's metadata, found from the challenge or the well-known paths.
    ///
    /// A 2025-03-26 server has no protected-resource metadata and publishes the authorization
    /// server's metadata at its own origin, sometimes naming an issuer with a path (`/oauth`)
    /// that RFC 8414's strict check refuses. With no resource metadata to point elsewhere, the
    /// metadata at the server's own origin is the server's word, so it is accepted when the
    /// issuer is on that same origin; any other mismatch stays an error (mix-up protection).
    async fn discover(
        &self,
        manager: &AuthorizationManager,
        challenge: Option<&str>,
    ) -> Result<AuthorizationMetadata, AuthError> {
        match manager.resolve_metadata_from_challenge(challenge).await {
            Ok(resolution) => Ok(resolution.metadata),
            Err(AuthError::AuthorizationServerMismatch {
                expected_issuer,
                received_issuer,
            }) if same_origin(&self.resource, &expected_issuer)
                && same_origin(&self.resource, &received_issuer) =>
            {
                tracing::warn!(
                    server = %self.server,
                    expected = %expected_issuer,
                    received = %received_issuer,
                    "legacy authorization-server metadata names an issuer with a path on the server's own origin; accepting it"
                );
                let url = reqwest::Url::parse(&self.resource)?
                    .join("/.well-known/oauth-authorization-server")?;
                let client = reqwest::Client::builder()
                    .redirect(reqwest::redirect::Policy::none())
                    .timeout(std::time::Duration::from_secs(30))
                    .build()?;
                let metadata = client
                    .get(url)
                    .send()
                    .await?
                    .error_for_status()?
                    .json::<AuthorizationMetadata>()
                    .await?;
                Ok(metadata)
            }
            Err(e) => Err(e),
        }
    }

    /// Discovery (seeded by `challenge`) and a manager set up for the authorization server it
    /// found: one whose token requests carry DPoP proofs when `signs` and the server takes
    /// them, else a plain one.
    async fn discovered(
        &self,
        challenge: Option<&str>,
        signs: bool,
    ) -> Result<(AuthorizationManager, AuthorizationMetadata), AuthError> {
        let plain = self.fresh_manager().await?;
        let metadata = self.discover(&plain, challenge).await?;
        super::grants::check_issuer(&metadata, self.spec.issuer.as_deref())?;
        let mut manager = if signs && dpop::supported(&metadata) {
            // The DPoP manager learns what discovery taught the plain one (the challenge's
            // scope, the resource) by discovering again through its own client.
            let stored_key = self.stored_dpop_key()?;
            let manager = self
                .manager_for(&metadata, plain, stored_key.as_deref())
                .await?;
            self.discover(&manager, challenge).await?;
            manager
        } else {
            self.set_dpop(None);
            plain
        };
        manager.set_metadata(metadata.clone());
        Ok((manager, metadata))
    }

    /// The DPoP key stored for this server, if any.
    fn stored_dpop_key(&self) -> Result<Option<String>, AuthError> {
        Ok(self
            .store
            .get(&self.server, &self.resource)
            .map_err(store_error)?
            .and_then(|entry| entry.dpop_key))
    }

    /// A manager ready to refresh, from what an earlier run stored; `None` when nothing
    /// usable is stored.
    async fn restore(&self) -> Result<Option<AuthorizationManager>, AuthError> {
        let Some(entry) = self
            .store
            .get(&self.server, &self.resource)
            .map_err(store_error)?
        else {
            return Ok(None);
        };
        let (Some(metadata), Some(client), Some(credentials)) =
            (entry.metadata, entry.client, entry.credentials)
        else {
            return Ok(None);
        };
        // Stored before a pin was set, or for another issuer: discover afresh (and check).
        if super::grants::check_issuer(&metadata, self.spec.issuer.as_deref()).is_err() {
            return Ok(None);
        }
        if !matches!(self.spec.grant, OAuthGrant::AuthorizationCode) {
            super::grants::check_token_endpoint(
                &metadata.token_endpoint,
                "the authorization server's token endpoint",
            )?;
        }
        let plain = self.fresh_manager().await?;
        let mut manager = self
            .manager_for(&metadata, plain, entry.dpop_key.as_deref())
            .await?;
        self.note_token_type(token_type(credentials.token_response.as_ref()).as_deref());
        manager.set_metadata(metadata);
        match &self.spec.grant {
            OAuthGrant::ClientCredentials { .. } => {
                manager.configure_client_credentials(&self.credentials_config()?)?;
            }
            // Their tokens come without refresh tokens: a configured client makes an expired
            // one read as "authorization required", which re-runs the exchange.
            OAuthGrant::JwtBearer { .. } | OAuthGrant::Enterprise { .. } => {
                manager
                    .configure_client(OAuthClientConfig::new(client.client_id, MACHINE_REDIRECT))?;
            }
            OAuthGrant::AuthorizationCode => {
                let mut config = OAuthClientConfig::new(client.client_id, client.redirect_uri);
                if let Some(secret) = client.client_secret {
                    config = config.with_client_secret(secret);
                }
                manager.configure_client(config)?;
            }
        }
        tracing::debug!(server = %self.server, "OAuth credentials restored from the token store");
        Ok(Some(manager))
    }

    /// The authorization-code flow: discovery (seeded by `challenge`), the client
    /// (pre-registered, metadata document, stored registration or dynamic registration), the
    /// person's approval through `authorizer`, and the token exchange.
    async fn authorize(
        &self,
        challenge: Option<&str>,
        authorizer: &dyn Authorizer,
    ) -> Result<(AuthorizationManager, String), AuthError> {
        let (mut manager, metadata) = self.discovered(challenge, true).await?;
        let scopes = if self.spec.scopes.is_empty() {
            manager.select_initial_scopes(&[]).await
        } else {
            self.spec.scopes.clone()
        };
        let scope_refs: Vec<&str> = scopes.iter().map(String::as_str).collect();
        let redirect_uri = authorizer
            .redirect_uri(self.spec.callback_port)
            .await
            .map_err(AuthError::AuthorizationFailed)?;

        let supports_cimd = metadata
            .additional_fields
            .get("client_id_metadata_document_supported")
            .and_then(|value| value.as_bool())
            .unwrap_or(false);
        let stored = self
            .store
            .get(&self.server, &self.resource)
            .map_err(store_error)?
            .filter(|entry| entry.issuer == metadata.issuer)
            .and_then(|entry| entry.client)
            .filter(|client| client.redirect_uri == redirect_uri);
        let client = if let Some(client_id) = &self.spec.client_id {
            Client {
                client_id: client_id.clone(),
                client_secret: self.spec.client_secret.clone(),
                redirect_uri: redirect_uri.clone(),
            }
        } else if let Some(url) = self
            .spec
            .client_metadata_url
            .as_ref()
            .filter(|_| supports_cimd)
        {
            Client {
                client_id: url.clone(),
                client_secret: None,
                redirect_uri: redirect_uri.clone(),
            }
        } else if let Some(client) = stored {
            client
        } else {
            let registered = manager
                .register_client(CLIENT_NAME, &redirect_uri, &scope_refs)
                .await?;
            tracing::info!(server = %self.server, client_id = %registered.client_id, "registered as an OAuth client");
            Client {
                client_id: registered.client_id,
                client_secret: registered.client_secret,
                redirect_uri: redirect_uri.clone(),
            }
        };
        let mut config = OAuthClientConfig::new(client.client_id.clone(), redirect_uri.clone())
            .with_scopes(scopes.clone());
        if let Some(secret) = &client.client_secret {
            config = config.with_client_secret(secret.clone());
        }
        manager.configure_client(config)?;
        // Saved before the person is asked: a registration is reusable even if they give up.
        self.store
            .update(&self.server, &self.resource, |entry| {
                entry.issuer = metadata.issuer.clone();
                entry.metadata = Some(metadata.clone());
                entry.client = Some(client.clone());
            })
            .map_err(store_error)?;

        let url = manager.get_authorization_url(&scope_refs).await?;
        let redirect = authorizer
            .authorize(AuthorizationPrompt {
                server: self.server.clone(),
                url,
                redirect_uri,
                scopes: scopes.join(" "),
            })
            .await
            .map_err(AuthError::AuthorizationFailed)?;
        let callback = AuthorizationCallback::from_redirect_url(&redirect)?;
        let response = manager
            .exchange_code_for_token_with_issuer(
                &callback.code,
                &callback.csrf_token,
                callback.issuer.as_deref(),
            )
            .await?;
        tracing::info!(server = %self.server, "authorized");
        self.note_token_type(token_type(Some(&response)).as_deref());
        use oauth2::TokenResponse;
        Ok((manager, response.access_token().secret().to_owned()))
    }

    /// The grants without a person: client credentials, a workload JWT, an enterprise ID
    /// token. Discovery first (seeded by `challenge`), then the grant's exchange.
    async fn machine(
        &self,
        challenge: Option<&str>,
    ) -> Result<(AuthorizationManager, String), AuthError> {
        // Client credentials go through rmcp's manager, whose token requests our client signs,
        // and the JWT-bearer exchange signs its own; the enterprise exchange asks for a bearer
        // token (rmcp's refuses any other kind).
        let signs = matches!(
            self.spec.grant,
            OAuthGrant::ClientCredentials { .. } | OAuthGrant::JwtBearer { .. }
        );
        let (mut manager, metadata) = self.discovered(challenge, signs).await?;
        super::grants::check_token_endpoint(
            &metadata.token_endpoint,
            "the authorization server's token endpoint",
        )?;
        if let OAuthGrant::Enterprise { idp, .. } = &self.spec.grant {
            super::grants::check_token_endpoint(
                &idp.token_endpoint,
                "the identity provider's token endpoint (`oauth.idp.tokenEndpoint`)",
            )?;
        }
        let client_id = self
            .spec
            .client_id
            .clone()
            .unwrap_or_else(|| CLIENT_NAME.to_owned());
        self.store
            .update(&self.server, &self.resource, |entry| {
                entry.issuer = metadata.issuer.clone();
                entry.metadata = Some(metadata.clone());
                entry.client = Some(Client {
                    client_id: client_id.clone(),
                    client_secret: None,
                    redirect_uri: String::new(),
                });
            })
            .map_err(store_error)?;
        let token = match &self.spec.grant {
            OAuthGrant::JwtBearer { assertion } => {
                let assertion = assertion.read().map_err(|e| {
                    AuthError::TokenExchangeFailed(format!("cannot read the workload JWT: {e}"))
                })?;
                manager.configure_client(OAuthClientConfig::new(&client_id, MACHINE_REDIRECT))?;
                let response = super::grants::jwt_bearer(
                    &metadata,
                    &self.resource,
                    self.spec.client_id.as_deref(),
                    self.spec.client_secret.as_deref(),
                    &self.spec.scopes,
                    &assertion,
                    self.signing_key().as_deref(),
                )
                .await?;
                self.note_token_type(token_type(Some(&response)).as_deref());
                self.save_token(&client_id, response).await?
            }
            OAuthGrant::Enterprise { idp, id_token } => {
                let id_token = id_token.read().map_err(|e| {
                    AuthError::TokenExchangeFailed(format!("cannot read the ID token: {e}"))
                })?;
                manager.configure_client(OAuthClientConfig::new(&client_id, MACHINE_REDIRECT))?;
                let response = super::grants::enterprise(
                    &metadata,
                    &self.resource,
                    &client_id,
                    self.spec.client_secret.as_deref(),
                    &self.spec.scopes,
                    idp,
                    &id_token,
                )
                .await?;
                self.note_token_type(token_type(Some(&response)).as_deref());
                self.save_token(&client_id, response).await?
            }
            _ => {
                let config = self.credentials_config()?;
                manager.validate_client_credentials_metadata(&config)?;
                manager.configure_client_credentials(&config)?;
                let response = manager.exchange_client_credentials(&config).await?;
                self.note_token_type(token_type(Some(&response)).as_deref());
                manager.get_access_token().await?
            }
        };
        tracing::info!(server = %self.server, "token obtained without a person");
        Ok((manager, token))
    }

    /// Stores a token obtained outside rmcp's flows, as rmcp stores its own.
    async fn save_token(
        &self,
        client_id: &str,
        response: rmcp::transport::auth::OAuthTokenResponse,
    ) -> Result<String, AuthError> {
        use oauth2::TokenResponse;
        let token = response.access_token().secret().to_owned();
        let scopes = response
            .scopes()
            .map(|scopes| scopes.iter().map(|s| s.to_string()).collect())
            .unwrap_or_else(|| self.spec.scopes.clone());
        let received = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or_default();
        let credentials =
            StoredCredentials::new(client_id.to_owned(), Some(response), scopes, Some(received));
        Credentials::new(self.store.clone(), &self.server, &self.resource)
            .save(credentials)
            .await?;
        Ok(token)
    }

    fn credentials_config(&self) -> Result<ClientCredentialsConfig, AuthError> {
        let OAuthGrant::ClientCredentials { private_key } = &self.spec.grant else {
            return Err(AuthError::InternalError(
                "not a client-credentials server".into(),
            ));
        };
        let client_id = self.spec.client_id.clone().ok_or_else(|| {
            AuthError::ClientCredentialsError("`oauth.clientId` is not set".into())
        })?;
        let resource = Some(self.resource.clone());
        let scopes = self.spec.scopes.clone();
        Ok(match private_key {
            Some(key) => ClientCredentialsConfig::PrivateKeyJwt {
                client_id,
                signing_key: key.pem.clone().into_bytes(),
                signing_algorithm: algorithm(&key.algorithm)?,
                token_endpoint_audience: None,
                scopes,
                resource,
            },
            None => ClientCredentialsConfig::ClientSecret {
                client_id,
                client_secret: self.spec.client_secret.clone().ok_or_else(|| {
                    AuthError::ClientCredentialsError("`oauth.clientSecret` is not set".into())
                })?,
                scopes,
                resource,
            },
        })
    }
}

/// Whether two URLs share scheme, host and port.
fn same_origin(a: &str, b: &str) -> bool {
    match (reqwest::Url::parse(a), reqwest::Url::parse(b)) {
        (Ok(a), Ok(b)) => a.origin() == b.origin(),
        _ => false,
    }
}

fn algorithm(name: &str) -> Result<JwtSigningAlgorithm, AuthError> {
    Ok(match name {
        "RS256" => JwtSigningAlgorithm::RS256,
        "RS384" => JwtSigningAlgorithm::RS384,
        "RS512" => JwtSigningAlgorithm::RS512,
        "ES256" => JwtSigningAlgorithm::ES256,
        "ES384" => JwtSigningAlgorithm::ES384,
        other => {
            return Err(AuthError::ClientCredentialsError(format!(
                "unsupported signing algorithm {other}"
            )));
        }
    })
}

/// The `token_type` of a token response, as the server wrote it.
fn token_type(response: Option<&rmcp::transport::auth::OAuthTokenResponse>) -> Option<String> {
    let value = serde_json::to_value(response?).ok()?;
    value.get("token_type")?.as_str().map(str::to_owned)
}
