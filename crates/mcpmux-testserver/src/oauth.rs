//! OAuth 2.1 on the HTTP face (`--oauth`): one listener is both the protected resource (`/mcp`)
//! and a minimal but strict authorization server at the same origin, so mcpmux's tests can do a
//! real OAuth round trip on loopback.
//!
//! Owns the metadata documents (RFC 9728, RFC 8414), dynamic client registration (RFC 7591),
//! the authorization endpoint (code flow with PKCE S256 only, RFC 8707 `resource` required,
//! consent given at once: there is no login page), the token endpoint (authorization_code,
//! refresh_token with rotation and reuse detection (a spent refresh token presented again
//! revokes every token of its login, RFC 9700 §4.14.2), client_credentials, and the RFC 7523 JWT-bearer grant with a
//! workload's JWT, whose signature is not checked: any JWT with a `sub` stands for a workload),
//! the bearer check in front of `/mcp` and the
//! `/admin/oauth/*` knobs. It knows nothing of MCP: `http` decides where the check goes and what
//! runs behind it.

use std::{
    collections::{HashMap, HashSet},
    sync::{Arc, Mutex, MutexGuard, PoisonError},
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

use axum::{
    Json, Router,
    body::Bytes,
    extract::{RawQuery, Request, State},
    http::{HeaderMap, HeaderValue, StatusCode, header},
    middleware::Next,
    response::{IntoResponse, Response},
    routing::{get, post},
};
use base64::{
    Engine,
    engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD},
};
use serde::Serialize;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use url::{Host, Url};

use crate::dpop;

/// The JWT-bearer grant type (RFC 7523 §2.1).
const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
/// Access-token lifetime when `--token-ttl` is not given: one hour, the usual default of hosted
/// authorization servers.
pub const DEFAULT_TOKEN_TTL_SECS: u64 = 3600;

/// How long an authorization code waits for its exchange. RFC 6749 §4.1.2 asks for at most ten
/// minutes; a client on the same machine needs far less.
const CODE_LIFETIME: Duration = Duration::from_secs(60);

/// Scopes this server knows, in the order the metadata lists them.
const SCOPES_SUPPORTED: [&str; 2] = ["mcp:tools", "offline_access"];

/// Granted when a request names no scope, and named in the `WWW-Authenticate` challenge.
const DEFAULT_SCOPE: &str = "mcp:tools";

/// Random bytes in every client id, secret, code and token: 256 bits (RFC 6749 §10.10 asks for
/// at least 128).
const TOKEN_BYTES: usize = 32;

/// A confidential client known before the server starts (`--oauth-client ID:SECRET`), allowed
/// the client_credentials grant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PresetClient {
    pub id: String,
    pub secret: String,
}

/// What `--oauth` and its companion flags ask for.
#[derive(Debug, Clone)]
pub struct OAuthOptions {
    pub token_ttl: Duration,
    pub clients: Vec<PresetClient>,
    /// `--dpop`: tokens only for a DPoP proof, bound to its key, and presented with one.
    pub dpop: bool,
    /// `--dpop-nonce`: proofs must carry the server's nonce (RFC 9449 §8, §9).
    pub dpop_nonce: bool,
}

/// How a client proves who it is at the token endpoint (RFC 7591 `token_endpoint_auth_method`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AuthMethod {
    None,
    ClientSecretBasic,
    ClientSecretPost,
}

impl AuthMethod {
    fn parse(value: &str) -> Option<Self> {
        match value {
            "none" => Some(Self::None),
            "client_secret_basic" => Some(Self::ClientSecretBasic),
            "client_secret_post" => Some(Self::ClientSecretPost),
            _ => None,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::ClientSecretBasic => "client_secret_basic",
            Self::ClientSecretPost => "client_secret_post",
        }
    }
}

/// A grant type a client may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Grant {
    AuthorizationCode,
    RefreshToken,
    ClientCredentials,
}

impl Grant {
    fn as_str(self) -> &'static str {
        match self {
            Self::AuthorizationCode => "authorization_code",
            Self::RefreshToken => "refresh_token",
            Self::ClientCredentials => "client_credentials",
        }
    }
}

#[derive(Debug)]
struct Client {
    /// `None` for public clients (`token_endpoint_auth_method: none`).
    secret: Option<String>,
    /// The registered method; `None` for preset clients, which may use basic or post.
    method: Option<AuthMethod>,
    redirect_uris: Vec<String>,
    grants: Vec<Grant>,
}

impl Client {
    fn accepts(&self, used: AuthMethod) -> bool {
        match self.method {
            Some(registered) => registered == used,
            None => used != AuthMethod::None,
        }
    }
}

/// An authorization code waiting for its one exchange.
#[derive(Debug)]
struct PendingCode {
    client_id: String,
    redirect_uri: String,
    challenge: String,
    scope: String,
    issued: Instant,
}

#[derive(Debug)]
struct AccessToken {
    /// `None` when the TTL reaches beyond what `Instant` can hold: never expires.
    expires_at: Option<Instant>,
    /// The login it belongs to: a reused refresh token revokes the whole family.
    family: u64,
    /// The thumbprint of the DPoP key the token is bound to.
    jkt: Option<String>,
}

impl AccessToken {
    fn is_live(&self, now: Instant) -> bool {
        self.expires_at.is_none_or(|expires_at| now < expires_at)
    }
}

#[derive(Debug)]
struct RefreshToken {
    client_id: String,
    /// The login it belongs to (every rotation keeps it).
    family: u64,
    scope: String,
    /// Bound to the same DPoP key as its access token: only a proof with it refreshes.
    jkt: Option<String>,
}

/// Counters for `GET /admin/oauth/stats`.
#[derive(Debug, Default, Clone, Serialize)]
struct Stats {
    registrations: u64,
    /// Authorization codes issued.
    authorizations: u64,
    code_exchanges: u64,
    refreshes: u64,
    /// Spent refresh tokens presented again: each revoked every token of its login.
    refresh_reuse: u64,
    client_credentials: u64,
    /// Tokens issued for a workload JWT (RFC 7523 JWT-bearer grant).
    jwt_bearer: u64,
    /// Requests to `/mcp` answered 401.
    rejected: u64,
    /// Tokens issued bound to a DPoP key.
    dpop_bound_tokens: u64,
    /// Requests to `/mcp` that passed with a valid DPoP proof.
    dpop_proofs: u64,
    /// `use_dpop_nonce` answers, from the token endpoint and from `/mcp`.
    dpop_nonce_challenges: u64,
    /// The scope of the last code or token issued.
    last_scope: String,
    /// The `resource` parameter of the request that issued the last code or token (empty when
    /// the request had none).
    last_resource: String,
}

#[derive(Debug, Default)]
struct Ledger {
    clients: HashMap<String, Client>,
    codes: HashMap<String, PendingCode>,
    access: HashMap<String, AccessToken>,
    refresh: HashMap<String, RefreshToken>,
    /// Refresh tokens already rotated away, with their login: presenting one again is reuse.
    spent: HashMap<String, u64>,
    /// The next login's family number.
    next_family: u64,
    /// Every DPoP proof `jti` seen: a replayed proof is refused.
    jtis: HashSet<String>,
    stats: Stats,
}

/// The authorization server and the resource's bearer check, sharing one ledger.
#[derive(Debug)]
pub struct AuthorizationServer {
    /// `http://ADDR`, also the origin of every endpoint.
    issuer: String,
    /// `http://ADDR/mcp`, the only resource (RFC 8707 indicator).
    resource: String,
    /// Where the resource's RFC 9728 metadata lives, advertised in `WWW-Authenticate`.
    resource_metadata: String,
    token_ttl: Duration,
    dpop: bool,
    /// The nonce DPoP proofs must carry, with `--dpop-nonce`.
    dpop_nonce: Option<String>,
    ledger: Mutex<Ledger>,
}

impl AuthorizationServer {
    /// An authorization server at `origin` (`http://ADDR`, no trailing slash) guarding
    /// `origin/mcp`.
    pub fn new(origin: &str, options: OAuthOptions) -> Self {
        let mut ledger = Ledger::default();
        for preset in options.clients {
            ledger.clients.insert(
                preset.id,
                Client {
                    secret: Some(preset.secret),
                    method: None,
                    redirect_uris: Vec::new(),
                    grants: vec![Grant::ClientCredentials],
                },
            );
        }
        Self {
            issuer: origin.to_owned(),
            resource: format!("{origin}/mcp"),
            resource_metadata: format!("{origin}/.well-known/oauth-protected-resource/mcp"),
            token_ttl: options.token_ttl,
            dpop: options.dpop,
            dpop_nonce: options.dpop_nonce.then(|| random_token("n_")),
            ledger: Mutex::new(ledger),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Ledger> {
        self.ledger.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether `value` names this server's resource (compared as parsed URLs, so only
    /// spellings that mean the same URL match).
    fn is_resource(&self, value: &str) -> bool {
        match (Url::parse(value), Url::parse(&self.resource)) {
            (Ok(given), Ok(ours)) => given.fragment().is_none() && given == ours,
            _ => false,
        }
    }

    /// `resource` must be present and name this resource.
    fn require_resource(&self, resource: Option<&String>) -> Result<(), OAuthError> {
        match resource {
            Some(value) if self.is_resource(value) => Ok(()),
            Some(value) => Err(OAuthError::bad(
                "invalid_target",
                format!("resource `{value}` is not {}", self.resource),
            )),
            None => Err(OAuthError::bad(
                "invalid_target",
                format!(
                    "the resource parameter is required (RFC 8707): {}",
                    self.resource
                ),
            )),
        }
    }

    /// `resource` may be absent; when given it must name this resource.
    fn optional_resource(&self, resource: Option<&String>) -> Result<(), OAuthError> {
        match resource {
            None => Ok(()),
            some => self.require_resource(some),
        }
    }

    fn resource_metadata_document(&self) -> Value {
        json!({
            "resource": self.resource,
            "authorization_servers": [self.issuer],
            "scopes_supported": SCOPES_SUPPORTED,
            "bearer_methods_supported": ["header"],
        })
    }

    fn server_metadata_document(&self) -> Value {
        let issuer = &self.issuer;
        let mut document = json!({
            "issuer": issuer,
            "authorization_endpoint": format!("{issuer}/authorize"),
            "token_endpoint": format!("{issuer}/token"),
            "registration_endpoint": format!("{issuer}/register"),
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials", JWT_BEARER],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported":
                ["none", "client_secret_basic", "client_secret_post"],
            "scopes_supported": SCOPES_SUPPORTED,
            // RFC 9207: every authorization response carries `iss`.
            "authorization_response_iss_parameter_supported": true,
        });
        if self.dpop {
            document["dpop_signing_alg_values_supported"] = json!(["ES256"]);
        }
        document
    }

    // ----- the resource -----

    /// Check the token of a `method` request to the resource: a live bearer token, or with
    /// `--dpop` a live DPoP-bound token with a valid proof from its key.
    fn check_token(&self, method: &str, headers: &HeaderMap) -> Result<(), Rejection> {
        if !self.dpop {
            let Some(token) = bearer_token(headers) else {
                return Err(Rejection::Missing);
            };
            let ledger = self.lock();
            return match ledger.access.get(token) {
                Some(access) if access.is_live(Instant::now()) => Ok(()),
                _ => Err(Rejection::InvalidToken),
            };
        }
        let authorization = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok());
        let Some(authorization) = authorization else {
            return Err(Rejection::Missing);
        };
        let Some(token) = dpop::dpop_token(authorization) else {
            return Err(Rejection::Proof(
                "a DPoP-bound token goes with the DPoP scheme, not Bearer".into(),
            ));
        };
        let Some(proof) = headers.get("dpop").and_then(|v| v.to_str().ok()) else {
            return Err(Rejection::Proof("no DPoP proof header".into()));
        };
        let mut ledger = self.lock();
        let expected = dpop::Expected {
            method,
            url: &self.resource,
            access_token: Some(token),
            nonce: self.dpop_nonce.as_deref(),
        };
        let jkt = match dpop::verify(proof, &expected, &mut ledger.jtis) {
            Ok(jkt) => jkt,
            Err(dpop::Refusal::NeedsNonce) => return Err(Rejection::NeedsNonce),
            Err(dpop::Refusal::Invalid(why)) => return Err(Rejection::Proof(why)),
        };
        match ledger.access.get(token) {
            Some(access) if access.is_live(Instant::now()) => {
                if access.jkt.as_deref() != Some(jkt.as_str()) {
                    return Err(Rejection::Proof(
                        "the proof's key is not the one the token is bound to".into(),
                    ));
                }
                ledger.stats.dpop_proofs += 1;
                Ok(())
            }
            _ => Err(Rejection::InvalidToken),
        }
    }

    /// The 401 for a request to the resource without a live token.
    fn challenge(&self, rejection: Rejection) -> Response {
        {
            let mut ledger = self.lock();
            ledger.stats.rejected += 1;
            if rejection == Rejection::NeedsNonce {
                ledger.stats.dpop_nonce_challenges += 1;
            }
        }
        let scheme = if self.dpop { "DPoP" } else { "Bearer" };
        let mut challenge = format!(
            "{scheme} resource_metadata=\"{}\", scope=\"{DEFAULT_SCOPE}\"",
            self.resource_metadata
        );
        let body = match rejection {
            Rejection::Missing => json!({
                "error": "unauthorized",
                "error_description": "this resource needs an OAuth bearer token",
            }),
            Rejection::InvalidToken => {
                challenge.push_str(", error=\"invalid_token\"");
                json!({
                    "error": "invalid_token",
                    "error_description": "the access token is unknown, expired or revoked",
                })
            }
            Rejection::Proof(ref why) => {
                challenge.push_str(", error=\"invalid_dpop_proof\"");
                json!({ "error": "invalid_dpop_proof", "error_description": why })
            }
            Rejection::NeedsNonce => {
                challenge.push_str(", error=\"use_dpop_nonce\"");
                json!({
                    "error": "use_dpop_nonce",
                    "error_description": "DPoP proofs must carry the nonce in DPoP-Nonce",
                })
            }
        };
        let mut response = (StatusCode::UNAUTHORIZED, Json(body)).into_response();
        if let Ok(value) = HeaderValue::from_str(&challenge) {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, value);
        }
        if let Some(nonce) = self.dpop_nonce.as_deref()
            && let Ok(value) = HeaderValue::from_str(nonce)
        {
            response.headers_mut().insert("dpop-nonce", value);
        }
        response
    }

    // ----- registration -----

    /// RFC 7591 dynamic client registration: the answer echoes the metadata with the issued
    /// credentials and the defaults filled in.
    fn register(&self, body: &[u8]) -> Result<Value, OAuthError> {
        let Ok(Value::Object(mut metadata)) = serde_json::from_slice::<Value>(body) else {
            return Err(OAuthError::bad(
                "invalid_client_metadata",
                "the body must be a JSON object",
            ));
        };
        let redirect_uris = registered_redirect_uris(&metadata)?;
        let method = match metadata.get("token_endpoint_auth_method") {
            // RFC 7591 §2: the default is client_secret_basic.
            None => AuthMethod::ClientSecretBasic,
            Some(value) => value.as_str().and_then(AuthMethod::parse).ok_or_else(|| {
                OAuthError::bad(
                    "invalid_client_metadata",
                    "token_endpoint_auth_method must be none, client_secret_basic or client_secret_post",
                )
            })?,
        };
        let grants = registered_grants(&metadata)?;
        if let Some(response_types) = metadata.get("response_types") {
            let only_code = response_types
                .as_array()
                .is_some_and(|types| !types.is_empty() && types.iter().all(|t| t == "code"));
            if !only_code {
                return Err(OAuthError::bad(
                    "invalid_client_metadata",
                    "response_types may only be [\"code\"]",
                ));
            }
        }
        if let Some(scope) = metadata.get("scope") {
            let known = scope
                .as_str()
                .is_some_and(|scope| grant_scope(Some(scope)).is_ok());
            if !known {
                return Err(OAuthError::bad(
                    "invalid_client_metadata",
                    format!("scope must be a space-separated subset of {SCOPES_SUPPORTED:?}"),
                ));
            }
        }

        let client_id = random_token("client_");
        let secret = (method != AuthMethod::None).then(|| random_token("secret_"));
        let issued_at = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.as_secs());
        metadata.insert("client_id".into(), json!(client_id));
        metadata.insert("client_id_issued_at".into(), json!(issued_at));
        metadata.insert("token_endpoint_auth_method".into(), json!(method.as_str()));
        metadata.insert(
            "grant_types".into(),
            json!(
                grants
                    .iter()
                    .map(|grant| grant.as_str())
                    .collect::<Vec<_>>()
            ),
        );
        metadata.insert("response_types".into(), json!(["code"]));
        if let Some(secret) = &secret {
            metadata.insert("client_secret".into(), json!(secret));
            metadata.insert("client_secret_expires_at".into(), json!(0));
        }

        let mut ledger = self.lock();
        ledger.clients.insert(
            client_id,
            Client {
                secret,
                method: Some(method),
                redirect_uris,
                grants,
            },
        );
        ledger.stats.registrations += 1;
        Ok(Value::Object(metadata))
    }

    // ----- authorization -----

    /// The authorization endpoint. Errors about the client, its redirect URI, PKCE and the
    /// resource are answered here with 400; response_type, grant and scope errors go back to the
    /// client's redirect URI (RFC 6749 §4.1.2.1).
    fn authorize(&self, query: &str) -> Result<Response, OAuthError> {
        let params = parse_params(query.as_bytes())?;
        let client_id = required(&params, "client_id")?;
        let redirect_uri = required(&params, "redirect_uri")?;
        let mut ledger = self.lock();
        let Some(client) = ledger.clients.get(client_id) else {
            return Err(OAuthError::bad(
                "invalid_request",
                format!("unknown client_id `{client_id}`"),
            ));
        };
        if !client
            .redirect_uris
            .iter()
            .any(|registered| redirect_uri_matches(registered, redirect_uri))
        {
            return Err(OAuthError::bad(
                "invalid_request",
                format!("redirect_uri `{redirect_uri}` is not registered for this client"),
            ));
        }
        let may_use_code = client.grants.contains(&Grant::AuthorizationCode);
        let reply = AuthorizationReply {
            redirect_uri,
            state: params.get("state").map(String::as_str),
            issuer: &self.issuer,
        };

        match params.get("response_type").map(String::as_str) {
            Some("code") => {}
            Some(other) => {
                return Ok(reply.error(
                    "unsupported_response_type",
                    &format!("response_type `{other}` is not supported; use code"),
                ));
            }
            None => return Ok(reply.error("invalid_request", "response_type is required")),
        }
        let challenge = required(&params, "code_challenge")?;
        if params.get("code_challenge_method").map(String::as_str) != Some("S256") {
            return Err(OAuthError::bad(
                "invalid_request",
                "code_challenge_method must be S256 (plain, or no method, is refused)",
            ));
        }
        if !is_s256_challenge(challenge) {
            return Err(OAuthError::bad(
                "invalid_request",
                "code_challenge must be 43 base64url characters (an S256 digest)",
            ));
        }
        self.require_resource(params.get("resource"))?;
        if !may_use_code {
            return Ok(reply.error(
                "unauthorized_client",
                "this client is not registered for the authorization_code grant",
            ));
        }
        let scope = match grant_scope(params.get("scope").map(String::as_str)) {
            Ok(scope) => scope,
            Err(message) => return Ok(reply.error("invalid_scope", &message)),
        };

        let code = random_token("code_");
        ledger.codes.insert(
            code.clone(),
            PendingCode {
                client_id: client_id.clone(),
                redirect_uri: redirect_uri.clone(),
                challenge: challenge.clone(),
                scope: scope.clone(),
                issued: Instant::now(),
            },
        );
        ledger.stats.authorizations += 1;
        ledger.stats.last_scope = scope;
        ledger.stats.last_resource = params.get("resource").cloned().unwrap_or_default();
        Ok(reply.code(&code))
    }

    // ----- tokens -----

    /// The token endpoint: authenticate the client, then run its grant.
    fn token(&self, headers: &HeaderMap, body: &[u8]) -> Result<Value, OAuthError> {
        let form_encoded = headers
            .get(header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.split(';').next())
            .is_some_and(|mime| {
                mime.trim()
                    .eq_ignore_ascii_case("application/x-www-form-urlencoded")
            });
        if !form_encoded {
            return Err(OAuthError::bad(
                "invalid_request",
                "the token request must be application/x-www-form-urlencoded",
            ));
        }
        let form = parse_params(body)?;
        let mut ledger = self.lock();
        let client_id = authenticate(&ledger, headers, &form)?;
        let jkt = self.token_proof(&mut ledger, headers)?;
        let jkt = jkt.as_deref();
        match form.get("grant_type").map(String::as_str) {
            Some("authorization_code") => self.exchange_code(&mut ledger, &client_id, &form, jkt),
            Some("refresh_token") => self.refresh(&mut ledger, &client_id, &form, jkt),
            Some("client_credentials") => {
                self.client_credentials(&mut ledger, &client_id, &form, jkt)
            }
            Some(JWT_BEARER) => self.jwt_bearer(&mut ledger, &client_id, &form, jkt),
            Some(other) => Err(OAuthError::bad(
                "unsupported_grant_type",
                format!("grant_type `{other}` is not supported"),
            )),
            None => Err(OAuthError::bad("invalid_request", "grant_type is required")),
        }
    }

    /// With `--dpop`, the token request's proof: the thumbprint of its key.
    fn token_proof(
        &self,
        ledger: &mut Ledger,
        headers: &HeaderMap,
    ) -> Result<Option<String>, OAuthError> {
        if !self.dpop {
            return Ok(None);
        }
        let Some(proof) = headers.get("dpop").and_then(|v| v.to_str().ok()) else {
            return Err(OAuthError::bad(
                "invalid_dpop_proof",
                "this server issues DPoP-bound tokens only: send a DPoP proof",
            ));
        };
        let url = format!("{}/token", self.issuer);
        let expected = dpop::Expected {
            method: "POST",
            url: &url,
            access_token: None,
            nonce: self.dpop_nonce.as_deref(),
        };
        match dpop::verify(proof, &expected, &mut ledger.jtis) {
            Ok(jkt) => Ok(Some(jkt)),
            Err(dpop::Refusal::NeedsNonce) => {
                ledger.stats.dpop_nonce_challenges += 1;
                let mut error = OAuthError::bad(
                    "use_dpop_nonce",
                    "DPoP proofs must carry the nonce in DPoP-Nonce",
                );
                error.dpop_nonce = self.dpop_nonce.clone();
                Err(error)
            }
            Err(dpop::Refusal::Invalid(why)) => Err(OAuthError::bad("invalid_dpop_proof", why)),
        }
    }

    fn exchange_code(
        &self,
        ledger: &mut Ledger,
        client_id: &str,
        form: &Params,
        jkt: Option<&str>,
    ) -> Result<Value, OAuthError> {
        let code = required(form, "code")?;
        let redirect_uri = required(form, "redirect_uri")?;
        let verifier = required(form, "code_verifier")?;
        self.require_resource(form.get("resource"))?;
        // Any presentation uses the code up, even one that fails below.
        let Some(pending) = ledger.codes.remove(code) else {
            return Err(OAuthError::invalid_grant(
                "the authorization code is unknown or was already used",
            ));
        };
        if pending.client_id != client_id {
            return Err(OAuthError::invalid_grant(
                "the authorization code was issued to another client",
            ));
        }
        if pending.issued.elapsed() > CODE_LIFETIME {
            return Err(OAuthError::invalid_grant("the authorization code expired"));
        }
        if pending.redirect_uri != *redirect_uri {
            return Err(OAuthError::invalid_grant(
                "redirect_uri differs from the one of the authorization request",
            ));
        }
        if !verifier_matches(verifier, &pending.challenge) {
            return Err(OAuthError::invalid_grant(
                "code_verifier does not match the code_challenge (S256)",
            ));
        }
        let with_refresh = ledger
            .clients
            .get(client_id)
            .is_some_and(|client| client.grants.contains(&Grant::RefreshToken));
        let answer = self.issue(ledger, client_id, &pending.scope, with_refresh, jkt, None);
        ledger.stats.code_exchanges += 1;
        note_issue(ledger, &pending.scope, form);
        Ok(answer)
    }

    fn refresh(
        &self,
        ledger: &mut Ledger,
        client_id: &str,
        form: &Params,
        jkt: Option<&str>,
    ) -> Result<Value, OAuthError> {
        let presented = required(form, "refresh_token")?;
        self.optional_resource(form.get("resource"))?;
        let may_refresh = ledger
            .clients
            .get(client_id)
            .is_some_and(|client| client.grants.contains(&Grant::RefreshToken));
        if !may_refresh {
            return Err(OAuthError::bad(
                "unauthorized_client",
                "this client is not registered for the refresh_token grant",
            ));
        }
        if let Some(family) = ledger.spent.get(presented).copied() {
            // RFC 9700 §4.14.2: a rotated refresh token used again means two parties hold
            // the login; neither may keep it.
            ledger.refresh.retain(|_, token| token.family != family);
            ledger.access.retain(|_, token| token.family != family);
            ledger.stats.refresh_reuse += 1;
            return Err(OAuthError::invalid_grant(
                "the refresh token was already used: every token of this login is revoked",
            ));
        }
        let Some(stored) = ledger.refresh.get(presented) else {
            return Err(OAuthError::invalid_grant(
                "the refresh token is unknown, rotated or revoked",
            ));
        };
        if stored.client_id != client_id {
            return Err(OAuthError::invalid_grant(
                "the refresh token was issued to another client",
            ));
        }
        if stored.jkt.is_some() && stored.jkt.as_deref() != jkt {
            return Err(OAuthError::invalid_grant(
                "the refresh token is bound to another DPoP key",
            ));
        }
        let scope = match form.get("scope") {
            None => stored.scope.clone(),
            Some(requested) => narrow_scope(requested, &stored.scope)
                .map_err(|message| OAuthError::bad("invalid_scope", message))?,
        };
        // Rotation: the presented token is spent.
        let family = stored.family;
        ledger.refresh.remove(presented);
        ledger.spent.insert(presented.to_owned(), family);
        let answer = self.issue(ledger, client_id, &scope, true, jkt, Some(family));
        ledger.stats.refreshes += 1;
        note_issue(ledger, &scope, form);
        Ok(answer)
    }

    fn client_credentials(
        &self,
        ledger: &mut Ledger,
        client_id: &str,
        form: &Params,
        jkt: Option<&str>,
    ) -> Result<Value, OAuthError> {
        let answer = self.machine_token(ledger, client_id, form, jkt, "use client_credentials")?;
        ledger.stats.client_credentials += 1;
        Ok(answer)
    }

    /// RFC 7523 §2.1: a workload's JWT for a token, no refresh token (the workload presents a
    /// fresh JWT instead). Only `--oauth-client` clients; the JWT must name its subject.
    fn jwt_bearer(
        &self,
        ledger: &mut Ledger,
        client_id: &str,
        form: &Params,
        jkt: Option<&str>,
    ) -> Result<Value, OAuthError> {
        let claims = form
            .get("assertion")
            .and_then(|jwt| jwt.split('.').nth(1))
            .and_then(|payload| URL_SAFE_NO_PAD.decode(payload).ok())
            .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok());
        if !claims.is_some_and(|claims| claims["sub"].is_string()) {
            return Err(OAuthError::bad(
                "invalid_grant",
                "the assertion must be a JWT naming its subject (`sub`)",
            ));
        }
        let answer = self.machine_token(ledger, client_id, form, jkt, "present workload JWTs")?;
        ledger.stats.jwt_bearer += 1;
        Ok(answer)
    }

    /// A token without a person or a refresh token, for an `--oauth-client` client only (`what`
    /// it tried, for the refusal of any other).
    fn machine_token(
        &self,
        ledger: &mut Ledger,
        client_id: &str,
        form: &Params,
        jkt: Option<&str>,
        what: &str,
    ) -> Result<Value, OAuthError> {
        let allowed = ledger
            .clients
            .get(client_id)
            .is_some_and(|client| client.grants.contains(&Grant::ClientCredentials));
        if !allowed {
            return Err(OAuthError::bad(
                "unauthorized_client",
                format!("only --oauth-client clients may {what}"),
            ));
        }
        self.optional_resource(form.get("resource"))?;
        let scope = grant_scope(form.get("scope").map(String::as_str))
            .map_err(|message| OAuthError::bad("invalid_scope", message))?;
        let answer = self.issue(ledger, client_id, &scope, false, jkt, None);
        note_issue(ledger, &scope, form);
        Ok(answer)
    }

    /// Issue an access token (and a refresh token when asked) and describe them for the client;
    /// they belong to `family` (a refresh), else to a new login.
    fn issue(
        &self,
        ledger: &mut Ledger,
        client_id: &str,
        scope: &str,
        with_refresh: bool,
        jkt: Option<&str>,
        family: Option<u64>,
    ) -> Value {
        let family = family.unwrap_or_else(|| {
            ledger.next_family += 1;
            ledger.next_family
        });
        let access_token = random_token("at_");
        ledger.access.insert(
            access_token.clone(),
            AccessToken {
                expires_at: Instant::now().checked_add(self.token_ttl),
                family,
                jkt: jkt.map(str::to_owned),
            },
        );
        if jkt.is_some() {
            ledger.stats.dpop_bound_tokens += 1;
        }
        let mut answer = json!({
            "access_token": access_token,
            "token_type": if jkt.is_some() { "DPoP" } else { "Bearer" },
            "expires_in": self.token_ttl.as_secs(),
            "scope": scope,
        });
        if with_refresh {
            let refresh_token = random_token("rt_");
            ledger.refresh.insert(
                refresh_token.clone(),
                RefreshToken {
                    client_id: client_id.to_owned(),
                    family,
                    scope: scope.to_owned(),
                    jkt: jkt.map(str::to_owned),
                },
            );
            answer["refresh_token"] = json!(refresh_token);
        }
        answer
    }

    // ----- admin -----

    fn revoke_all(&self) -> Value {
        let mut ledger = self.lock();
        let access = ledger.access.len();
        let refresh = ledger.refresh.len();
        ledger.access.clear();
        ledger.refresh.clear();
        json!({ "revoked_access_tokens": access, "revoked_refresh_tokens": refresh })
    }

    fn expire_all(&self) -> Value {
        let now = Instant::now();
        let mut ledger = self.lock();
        for access in ledger.access.values_mut() {
            access.expires_at = Some(now);
        }
        json!({ "expired_access_tokens": ledger.access.len() })
    }

    fn stats(&self) -> Stats {
        self.lock().stats.clone()
    }
}

fn note_issue(ledger: &mut Ledger, scope: &str, form: &Params) {
    ledger.stats.last_scope = scope.to_owned();
    ledger.stats.last_resource = form.get("resource").cloned().unwrap_or_default();
}

/// Why a request to the resource is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Rejection {
    /// No bearer token at all.
    Missing,
    /// A token that is unknown, expired or revoked.
    InvalidToken,
    /// With `--dpop`: no proof, a bad one, or a Bearer presentation.
    Proof(String),
    /// With `--dpop-nonce`: a proof without the server's nonce.
    NeedsNonce,
}

/// Where an authorization response goes: the client's redirect URI, with `state` and `iss`.
struct AuthorizationReply<'a> {
    redirect_uri: &'a str,
    state: Option<&'a str>,
    issuer: &'a str,
}

impl AuthorizationReply<'_> {
    fn code(&self, code: &str) -> Response {
        self.redirect(&[("code", code)])
    }

    fn error(&self, error: &str, description: &str) -> Response {
        self.redirect(&[("error", error), ("error_description", description)])
    }

    /// 302 to the redirect URI with `pairs`, `state` and `iss` appended to any query it has.
    fn redirect(&self, pairs: &[(&str, &str)]) -> Response {
        let Ok(mut location) = Url::parse(self.redirect_uri) else {
            return OAuthError::bad("invalid_request", "redirect_uri is not a URL").into_response();
        };
        {
            let mut query = location.query_pairs_mut();
            for (name, value) in pairs {
                query.append_pair(name, value);
            }
            if let Some(state) = self.state {
                query.append_pair("state", state);
            }
            query.append_pair("iss", self.issuer);
        }
        match HeaderValue::from_str(location.as_str()) {
            Ok(value) => (StatusCode::FOUND, [(header::LOCATION, value)]).into_response(),
            Err(_) => OAuthError::bad("invalid_request", "redirect_uri is not a valid header")
                .into_response(),
        }
    }
}

/// An RFC 6749 §5.2 error answer.
#[derive(Debug)]
struct OAuthError {
    status: StatusCode,
    code: &'static str,
    description: String,
    /// Sent as `DPoP-Nonce` with a `use_dpop_nonce` answer.
    dpop_nonce: Option<String>,
}

impl OAuthError {
    fn bad(code: &'static str, description: impl Into<String>) -> Self {
        Self {
            status: StatusCode::BAD_REQUEST,
            code,
            description: description.into(),
            dpop_nonce: None,
        }
    }

    fn invalid_grant(description: &str) -> Self {
        Self::bad("invalid_grant", description)
    }

    fn invalid_client(description: impl Into<String>) -> Self {
        Self {
            status: StatusCode::UNAUTHORIZED,
            code: "invalid_client",
            description: description.into(),
            dpop_nonce: None,
        }
    }
}

impl IntoResponse for OAuthError {
    fn into_response(self) -> Response {
        let mut response = no_store(
            self.status,
            json!({ "error": self.code, "error_description": self.description }),
        );
        if self.status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Basic realm=\"mcpmux-testserver\""),
            );
        }
        if let Some(nonce) = self.dpop_nonce.as_deref()
            && let Ok(value) = HeaderValue::from_str(nonce)
        {
            response.headers_mut().insert("dpop-nonce", value);
        }
        response
    }
}

/// A JSON answer that no cache may keep (RFC 6749 §5.1).
fn no_store(status: StatusCode, body: Value) -> Response {
    let mut response = (status, Json(body)).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
    response
}

type Params = HashMap<String, String>;

/// Parse a query string or form body. Empty values count as absent (RFC 6749 §3.1) and a
/// parameter given twice is an error (RFC 6749 §3.1, §3.2).
fn parse_params(input: &[u8]) -> Result<Params, OAuthError> {
    let mut params = Params::new();
    for (name, value) in url::form_urlencoded::parse(input) {
        if value.is_empty() {
            continue;
        }
        if params
            .insert(name.clone().into_owned(), value.into_owned())
            .is_some()
        {
            return Err(OAuthError::bad(
                "invalid_request",
                format!("parameter `{name}` is given more than once"),
            ));
        }
    }
    Ok(params)
}

fn required<'a>(params: &'a Params, name: &str) -> Result<&'a String, OAuthError> {
    params
        .get(name)
        .ok_or_else(|| OAuthError::bad("invalid_request", format!("{name} is required")))
}

/// Authenticate the client of a token request by the method it registered; returns its id.
fn authenticate(ledger: &Ledger, headers: &HeaderMap, form: &Params) -> Result<String, OAuthError> {
    let basic = basic_credentials(headers)?;
    let body_secret = form.get("client_secret");
    let (client_id, secret, used) = match (basic, body_secret) {
        (Some(_), Some(_)) => {
            return Err(OAuthError::bad(
                "invalid_request",
                "use one client authentication method, not both Basic and client_secret",
            ));
        }
        (Some((id, secret)), None) => {
            if form.get("client_id").is_some_and(|body_id| *body_id != id) {
                return Err(OAuthError::invalid_client(
                    "client_id in the body differs from the Basic credentials",
                ));
            }
            (id, Some(secret), AuthMethod::ClientSecretBasic)
        }
        (None, secret) => {
            let Some(id) = form.get("client_id") else {
                return Err(OAuthError::invalid_client("no client authentication given"));
            };
            let used = if secret.is_some() {
                AuthMethod::ClientSecretPost
            } else {
                AuthMethod::None
            };
            (id.clone(), secret.cloned(), used)
        }
    };
    let Some(client) = ledger.clients.get(&client_id) else {
        return Err(OAuthError::invalid_client(format!(
            "unknown client `{client_id}`"
        )));
    };
    if !client.accepts(used) {
        let registered = client.method.map_or(
            "client_secret_basic or client_secret_post",
            AuthMethod::as_str,
        );
        return Err(OAuthError::invalid_client(format!(
            "client `{client_id}` authenticates with {registered}, not {}",
            used.as_str()
        )));
    }
    match (&client.secret, secret) {
        (None, None) => Ok(client_id),
        (Some(expected), Some(given)) if *expected == given => Ok(client_id),
        _ => Err(OAuthError::invalid_client(format!(
            "wrong client secret for `{client_id}`"
        ))),
    }
}

/// HTTP Basic client credentials (RFC 6749 §2.3.1: id and secret form-urlencoded, then Basic).
/// `Ok(None)` when the request carries no Basic authorization.
fn basic_credentials(headers: &HeaderMap) -> Result<Option<(String, String)>, OAuthError> {
    let Some(value) = headers.get(header::AUTHORIZATION) else {
        return Ok(None);
    };
    let Some((scheme, encoded)) = value.to_str().ok().and_then(|value| value.split_once(' '))
    else {
        return Ok(None);
    };
    if !scheme.eq_ignore_ascii_case("basic") {
        return Ok(None);
    }
    let malformed = || OAuthError::invalid_client("malformed Basic credentials");
    let decoded = STANDARD.decode(encoded.trim()).map_err(|_| malformed())?;
    let decoded = String::from_utf8(decoded).map_err(|_| malformed())?;
    let (id, secret) = decoded.split_once(':').ok_or_else(malformed)?;
    let id = form_decode(id).ok_or_else(malformed)?;
    let secret = form_decode(secret).ok_or_else(malformed)?;
    Ok(Some((id, secret)))
}

/// Decode one `application/x-www-form-urlencoded` component: `+` is a space, `%XX` a byte.
fn form_decode(component: &str) -> Option<String> {
    let bytes = component.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while let Some(&byte) = bytes.get(index) {
        match byte {
            b'+' => decoded.push(b' '),
            b'%' => {
                let hex = bytes.get(index + 1..index + 3)?;
                let hex = std::str::from_utf8(hex).ok()?;
                decoded.push(u8::from_str_radix(hex, 16).ok()?);
                index += 2;
            }
            other => decoded.push(other),
        }
        index += 1;
    }
    String::from_utf8(decoded).ok()
}

/// The token of an `Authorization: Bearer TOKEN` header.
fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// The redirect URIs of a registration request: a non-empty array of absolute URLs without
/// fragments; plain `http` only on loopback (RFC 8252 §7.3, OAuth 2.1 §2.3.1).
fn registered_redirect_uris(metadata: &Map<String, Value>) -> Result<Vec<String>, OAuthError> {
    let invalid = |message: String| OAuthError::bad("invalid_redirect_uri", message);
    let uris = metadata
        .get("redirect_uris")
        .and_then(Value::as_array)
        .filter(|uris| !uris.is_empty())
        .and_then(|uris| {
            uris.iter()
                .map(|uri| uri.as_str().map(str::to_owned))
                .collect::<Option<Vec<_>>>()
        })
        .ok_or_else(|| invalid("redirect_uris must be a non-empty array of strings".to_owned()))?;
    for uri in &uris {
        let url = Url::parse(uri).map_err(|error| invalid(format!("`{uri}`: {error}")))?;
        if url.fragment().is_some() {
            return Err(invalid(format!("`{uri}` has a fragment")));
        }
        if url.scheme() == "http" && !is_loopback_http(&url) {
            return Err(invalid(format!(
                "`{uri}` is plain http on a non-loopback host; use https or a loopback address"
            )));
        }
    }
    Ok(uris)
}

/// The grant types of a registration request; by default authorization_code and refresh_token.
fn registered_grants(metadata: &Map<String, Value>) -> Result<Vec<Grant>, OAuthError> {
    let Some(value) = metadata.get("grant_types") else {
        return Ok(vec![Grant::AuthorizationCode, Grant::RefreshToken]);
    };
    let invalid = || {
        OAuthError::bad(
            "invalid_client_metadata",
            "grant_types must be a non-empty array of authorization_code and refresh_token \
             (client_credentials is for --oauth-client clients)",
        )
    };
    let names = value
        .as_array()
        .filter(|names| !names.is_empty())
        .ok_or_else(invalid)?;
    let mut grants = Vec::new();
    for name in names {
        let grant = match name.as_str() {
            Some("authorization_code") => Grant::AuthorizationCode,
            Some("refresh_token") => Grant::RefreshToken,
            _ => return Err(invalid()),
        };
        if !grants.contains(&grant) {
            grants.push(grant);
        }
    }
    Ok(grants)
}

/// Whether a requested redirect URI matches a registered one: exactly, or, for loopback `http`
/// URIs, in everything but the port (RFC 8252 §7.3: native apps pick a free port at run time).
fn redirect_uri_matches(registered: &str, requested: &str) -> bool {
    if registered == requested {
        return true;
    }
    let (Ok(registered), Ok(requested)) = (Url::parse(registered), Url::parse(requested)) else {
        return false;
    };
    is_loopback_http(&registered)
        && requested.scheme() == registered.scheme()
        && requested.host() == registered.host()
        && requested.username() == registered.username()
        && requested.password() == registered.password()
        && requested.path() == registered.path()
        && requested.query() == registered.query()
        && requested.fragment().is_none()
        && registered.fragment().is_none()
}

fn is_loopback_http(url: &Url) -> bool {
    url.scheme() == "http"
        && match url.host() {
            Some(Host::Ipv4(ip)) => ip.is_loopback(),
            Some(Host::Ipv6(ip)) => ip.is_loopback(),
            Some(Host::Domain(domain)) => domain.eq_ignore_ascii_case("localhost"),
            None => false,
        }
}

/// An S256 code challenge is base64url(SHA-256), 43 characters without padding.
fn is_s256_challenge(challenge: &str) -> bool {
    challenge.len() == 43
        && challenge
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_')
}

/// RFC 7636 §4.1 and §4.6: a well-formed verifier whose S256 digest is the challenge.
fn verifier_matches(verifier: &str, challenge: &str) -> bool {
    let well_formed = (43..=128).contains(&verifier.len())
        && verifier
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~'));
    well_formed && URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes())) == challenge
}

/// The scope to grant for a request: the requested scopes (each known, duplicates dropped) or
/// the default when none are named.
fn grant_scope(requested: Option<&str>) -> Result<String, String> {
    let mut granted: Vec<&str> = Vec::new();
    for scope in requested.unwrap_or("").split(' ').filter(|s| !s.is_empty()) {
        if !SCOPES_SUPPORTED.contains(&scope) {
            return Err(format!(
                "unknown scope `{scope}`; this server knows {SCOPES_SUPPORTED:?}"
            ));
        }
        if !granted.contains(&scope) {
            granted.push(scope);
        }
    }
    if granted.is_empty() {
        granted.push(DEFAULT_SCOPE);
    }
    Ok(granted.join(" "))
}

/// A refresh may narrow the original scope, never widen it (RFC 6749 §6).
fn narrow_scope(requested: &str, original: &str) -> Result<String, String> {
    let original: Vec<&str> = original.split(' ').collect();
    let mut granted: Vec<&str> = Vec::new();
    for scope in requested.split(' ').filter(|s| !s.is_empty()) {
        if !original.contains(&scope) {
            return Err(format!(
                "scope `{scope}` was not granted originally ({})",
                original.join(" ")
            ));
        }
        if !granted.contains(&scope) {
            granted.push(scope);
        }
    }
    if granted.is_empty() {
        return Ok(original.join(" "));
    }
    Ok(granted.join(" "))
}

/// `prefix` then 256 random bits, base64url.
fn random_token(prefix: &str) -> String {
    let mut bytes = [0_u8; TOKEN_BYTES];
    rand::fill(&mut bytes);
    format!("{prefix}{}", URL_SAFE_NO_PAD.encode(bytes))
}

// ----- HTTP -----

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

/// `POST /admin/oauth/revoke`: every access and refresh token stops working.
async fn admin_revoke(State(server): State<Arc<AuthorizationServer>>) -> Json<Value> {
    Json(server.revoke_all())
}

/// `POST /admin/oauth/expire`: every access token expires now; refresh tokens stay valid.
async fn admin_expire(State(server): State<Arc<AuthorizationServer>>) -> Json<Value> {
    Json(server.expire_all())
}

/// `GET /admin/oauth/stats`
async fn admin_stats(State(server): State<Arc<AuthorizationServer>>) -> Json<Stats> {
    Json(server.stats())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 7636 Appendix B.
    const VERIFIER: &str = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
    const CHALLENGE: &str = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";

    #[test]
    fn pkce_s256_matches_the_rfc_example() {
        assert!(is_s256_challenge(CHALLENGE));
        assert!(verifier_matches(VERIFIER, CHALLENGE));
    }

    #[test]
    fn pkce_refuses_wrong_or_malformed_verifiers() {
        let mut wrong = VERIFIER.to_owned();
        wrong.replace_range(0..1, "e");
        assert!(!verifier_matches(&wrong, CHALLENGE));
        // plain: the verifier equal to the challenge is not accepted.
        assert!(!verifier_matches(CHALLENGE, CHALLENGE));
        // too short, and characters outside the unreserved set.
        assert!(!verifier_matches("abc", CHALLENGE));
        let with_space = format!("{} ", &VERIFIER[..43]);
        assert!(!verifier_matches(&with_space, CHALLENGE));
        assert!(!is_s256_challenge("short"));
        assert!(!is_s256_challenge(&format!("{}=", &CHALLENGE[..42])));
    }

    #[test]
    fn loopback_redirect_uris_match_whatever_the_port() {
        let registered = "http://127.0.0.1:4000/callback";
        assert!(redirect_uri_matches(
            registered,
            "http://127.0.0.1:4000/callback"
        ));
        assert!(redirect_uri_matches(
            registered,
            "http://127.0.0.1:51234/callback"
        ));
        assert!(redirect_uri_matches(
            registered,
            "http://127.0.0.1/callback"
        ));
        assert!(redirect_uri_matches(
            "http://localhost/cb?x=1",
            "http://localhost:9/cb?x=1"
        ));
        assert!(redirect_uri_matches(
            "http://[::1]:1/cb",
            "http://[::1]:2/cb"
        ));
    }

    #[test]
    fn redirect_uris_differing_elsewhere_do_not_match() {
        let registered = "http://127.0.0.1:4000/callback";
        assert!(!redirect_uri_matches(
            registered,
            "http://127.0.0.1:4000/other"
        ));
        assert!(!redirect_uri_matches(
            registered,
            "http://localhost:4000/callback"
        ));
        assert!(!redirect_uri_matches(
            registered,
            "https://127.0.0.1:4000/callback"
        ));
        assert!(!redirect_uri_matches(
            registered,
            "http://127.0.0.1:4000/callback?x=1"
        ));
        assert!(!redirect_uri_matches(
            registered,
            "http://127.0.0.1:5/callback#frag"
        ));
        assert!(!redirect_uri_matches(registered, "not a url"));
        // Not loopback: the port counts.
        assert!(!redirect_uri_matches(
            "https://example.com:443/cb",
            "https://example.com:8443/cb"
        ));
        assert!(redirect_uri_matches(
            "https://example.com/cb",
            "https://example.com/cb"
        ));
    }

    #[test]
    fn scopes_are_known_deduplicated_and_never_widened() {
        assert_eq!(grant_scope(None).as_deref(), Ok("mcp:tools"));
        assert_eq!(
            grant_scope(Some("offline_access mcp:tools mcp:tools")).as_deref(),
            Ok("offline_access mcp:tools")
        );
        assert!(grant_scope(Some("admin")).is_err());
        assert_eq!(
            narrow_scope("mcp:tools", "mcp:tools offline_access").as_deref(),
            Ok("mcp:tools")
        );
        assert!(narrow_scope("offline_access", "mcp:tools").is_err());
    }

    #[test]
    fn basic_credentials_are_form_decoded() {
        let mut headers = HeaderMap::new();
        let encoded = STANDARD.encode("my%20id:s%3Acr+t");
        let value = HeaderValue::from_str(&format!("Basic {encoded}"));
        assert!(value.is_ok());
        if let Ok(value) = value {
            headers.insert(header::AUTHORIZATION, value);
        }
        let credentials = basic_credentials(&headers).ok().flatten();
        assert_eq!(credentials, Some(("my id".to_owned(), "s:cr t".to_owned())));
        assert_eq!(form_decode("%zz"), None);
        assert_eq!(form_decode("50%"), None);
    }

    #[test]
    fn duplicate_parameters_are_refused() {
        assert!(parse_params(b"a=1&b=2").is_ok());
        assert!(parse_params(b"a=1&a=2").is_err());
        // An empty value counts as absent.
        assert_eq!(
            parse_params(b"a=&b=2").ok().map(|params| params.len()),
            Some(1)
        );
    }
}
