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
//!
//! This module holds the options, the ledger of clients, codes and tokens, and the server that
//! owns it; each endpoint lives in its own file: `metadata`, `registration`, `authorize`,
//! `token` (with `client_auth`), `resource` (the check in front of `/mcp`), `admin`, and
//! `http` (the routes). `params` is the wire format they share.

use std::{
    collections::{HashMap, HashSet},
    sync::{Mutex, MutexGuard, PoisonError},
    time::{Duration, Instant},
};

use serde::Serialize;
use url::Url;

mod admin;
mod authorize;
mod client_auth;
mod http;
mod metadata;
mod params;
mod pkce;
mod registration;
mod resource;
mod token;

pub use http::{protect, routes};
use params::OAuthError;
use token::random_token;

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
}
