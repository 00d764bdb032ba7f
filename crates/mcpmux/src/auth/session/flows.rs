//! How one server's rmcp `AuthorizationManager` is obtained: restored from the token store,
//! discovered (with DPoP when the authorization server takes it), authorized by a person, or
//! granted without one (client credentials, a workload JWT, an enterprise ID token).
//!
//! The plumbing under `session.rs`, which decides when each of these runs; this knows nothing
//! of refusals or of the requests that met them.

use std::sync::Arc;

use rmcp::transport::auth::{
    AuthError, AuthorizationCallback, AuthorizationManager, AuthorizationMetadata,
    ClientCredentialsConfig, CredentialStore, JwtSigningAlgorithm, OAuthClientConfig,
    ScopeUpgradeConfig, StoredCredentials,
};

use super::{MAX_STEP_UPS, ServerAuth};
use crate::auth::authorizer::{AuthorizationPrompt, Authorizer};
use crate::auth::credentials::{Credentials, store_error};
use crate::auth::dpop::{self, Dpop, DpopKey, DpopOAuthClient};
use crate::auth::grants;
use crate::auth::store::Client;
use crate::config::OAuthGrant;

/// The redirect URI of clients that never redirect (rmcp's client wants one).
const MACHINE_REDIRECT: &str = "http://127.0.0.1/unused";
/// The client name sent in dynamic registration.
const CLIENT_NAME: &str = "mcpmux";

impl ServerAuth {
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
        grants::check_issuer(&metadata, self.spec.issuer.as_deref())?;
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
    pub(super) async fn restore(&self) -> Result<Option<AuthorizationManager>, AuthError> {
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
        if grants::check_issuer(&metadata, self.spec.issuer.as_deref()).is_err() {
            return Ok(None);
        }
        if !matches!(self.spec.grant, OAuthGrant::AuthorizationCode) {
            grants::check_token_endpoint(
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
    pub(super) async fn authorize(
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
    pub(super) async fn machine(
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
        grants::check_token_endpoint(
            &metadata.token_endpoint,
            "the authorization server's token endpoint",
        )?;
        if let OAuthGrant::Enterprise { idp, .. } = &self.spec.grant {
            grants::check_token_endpoint(
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
                let response = grants::jwt_bearer(
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
                let response = grants::enterprise(
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
