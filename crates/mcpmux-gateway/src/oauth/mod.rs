//! The gateway as an OAuth 2.1 resource server (MCP authorization, 2025-06-18 and 2025-11-25):
//! the protected resource metadata it publishes (RFC 9728), the `WWW-Authenticate` challenges
//! of its 401 and 403 answers (RFC 6750), and the check of a JWT access token (RFC 9068):
//! signed by the issuer's key with an asymmetric algorithm (never `none`, never HMAC), `iss`
//! the issuer, `aud` this gateway's resource identifier (RFC 8707), `exp` and `nbf` with a
//! small leeway, and the required scopes. `fetch` reads the issuer's documents, `keys` keeps
//! its keys. Knows nothing of MCP or of the HTTP framework.

mod fetch;
mod keys;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use http::HeaderValue;
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, Validation};
use url::Url;

use self::fetch::{Fetcher, checked_url};
use self::keys::{Freshness, KeyError, KeySource};

/// Longest bearer token read as a JWT (real access tokens are 1–4 KiB).
const MAX_TOKEN_BYTES: usize = 16 * 1024;
/// Clock skew allowed on `exp` and `nbf` (RFC 9068 leaves it to the resource; a minute or less
/// is usual).
pub const DEFAULT_LEEWAY: Duration = Duration::from_secs(30);
/// How long keys are kept before they are read again (jose's `createRemoteJWKSet` keeps them
/// 10 minutes).
pub const DEFAULT_KEYS_MAX_AGE: Duration = Duration::from_secs(600);
/// Fewest seconds between two reads of the key set, however many unknown key ids arrive
/// (jose's cooldown is 30 s).
pub const DEFAULT_REFETCH_INTERVAL: Duration = Duration::from_secs(30);
/// How long one read of the issuer's metadata or key set may take.
pub const DEFAULT_FETCH_TIMEOUT: Duration = Duration::from_secs(5);

/// The signature algorithms accepted: asymmetric ones only. `none` is not an algorithm
/// `jsonwebtoken` reads, and HMAC is left out so that a token "signed" with the issuer's
/// public key as a shared secret is refused.
const ALGORITHMS: [Algorithm; 9] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// How the gateway checks OAuth access tokens.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct OAuthOptions {
    /// The authorization server's issuer identifier (`https://auth.example.com/realms/x`): the
    /// `iss` tokens must carry; its metadata names the key set. https, or http to loopback.
    pub issuer: String,
    /// This gateway's resource identifier, the `aud` tokens must carry
    /// (`https://mcp.example.com/mcp`). Defaults to `http://ADDR/mcp` on a loopback address;
    /// required on any other.
    pub resource: Option<String>,
    /// The key set's URL, when the issuer publishes no metadata.
    pub jwks_url: Option<String>,
    /// Scopes every token must hold (403 `insufficient_scope` otherwise).
    pub required_scopes: Vec<String>,
    /// Clock skew allowed on `exp` and `nbf`.
    pub leeway: Duration,
    /// Keys older than this are read again.
    pub keys_max_age: Duration,
    /// Fewest time between two reads of the key set (an unknown key id, a failed read).
    pub refetch_interval: Duration,
    /// How long one read of the issuer's documents may take.
    pub fetch_timeout: Duration,
}

impl OAuthOptions {
    /// Tokens of `issuer`, every other setting at its default.
    pub fn new(issuer: impl Into<String>) -> Self {
        Self {
            issuer: issuer.into(),
            resource: None,
            jwks_url: None,
            required_scopes: Vec::new(),
            leeway: DEFAULT_LEEWAY,
            keys_max_age: DEFAULT_KEYS_MAX_AGE,
            refetch_interval: DEFAULT_REFETCH_INTERVAL,
            fetch_timeout: DEFAULT_FETCH_TIMEOUT,
        }
    }
}

/// Why the OAuth settings cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OAuthError {
    /// A URL setting is unusable.
    #[error("{setting} {url}: {reason}")]
    Url {
        /// The setting (`--oauth-issuer`, `--oauth-resource`, `--oauth-jwks-url`).
        setting: &'static str,
        /// Its value.
        url: String,
        /// What is wrong.
        reason: String,
    },
    /// No resource identifier for an address other than loopback.
    #[error(
        "serving {addr} with OAuth needs the gateway's public URL as its resource identifier \
         (--oauth-resource https://HOST/mcp): tokens are issued for it"
    )]
    NeedsResource {
        /// The address served.
        addr: SocketAddr,
    },
    /// A required scope that cannot be one.
    #[error(
        "the scope {0:?} is not a scope token (visible ASCII, no spaces, quotes or backslashes)"
    )]
    BadScope(String),
    /// The HTTP client could not be built.
    #[error("the HTTP client for the authorization server: {0}")]
    Client(String),
}

/// Why a request's token was not accepted; each is one HTTP answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Rejection {
    /// No bearer token: 401 with the challenge alone.
    Missing,
    /// 401 `invalid_token`, with what was wrong.
    Invalid(&'static str),
    /// 403 `insufficient_scope`.
    InsufficientScope,
    /// 503: the issuer's keys have never been read.
    Unavailable(String),
}

impl Rejection {
    /// The HTTP status of the answer.
    pub(crate) fn status(&self) -> http::StatusCode {
        match self {
            Rejection::Missing | Rejection::Invalid(_) => http::StatusCode::UNAUTHORIZED,
            Rejection::InsufficientScope => http::StatusCode::FORBIDDEN,
            Rejection::Unavailable(_) => http::StatusCode::SERVICE_UNAVAILABLE,
        }
    }

    /// The RFC 6750 error code and its description, for the JSON body.
    pub(crate) fn error(&self) -> (&'static str, String) {
        match self {
            // As the TypeScript SDK's `requireBearerAuth` says it (the challenge itself carries
            // no error code here, as RFC 6750 §3.1 asks).
            Rejection::Missing => (
                "invalid_token",
                "send an OAuth access token as `Authorization: Bearer TOKEN`; the resource \
                 metadata names the authorization server"
                    .into(),
            ),
            Rejection::Invalid(why) => ("invalid_token", (*why).into()),
            Rejection::InsufficientScope => (
                "insufficient_scope",
                "the token lacks a scope this gateway requires".into(),
            ),
            Rejection::Unavailable(why) => (
                "temporarily_unavailable",
                format!("the authorization server's keys cannot be read: {why}"),
            ),
        }
    }
}

/// Who a verified token was issued to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Principal {
    /// `sub`: the user or client the token stands for.
    pub subject: Option<String>,
    /// `client_id` (RFC 9068), else `azp`: the client that holds it.
    pub client_id: Option<String>,
    /// The scopes it holds (`scope`, `scp`), at most [`MAX_CLAIM_VALUES`].
    pub scopes: Vec<String>,
    /// The groups it is in (`groups`), at most [`MAX_CLAIM_VALUES`].
    pub groups: Vec<String>,
}

/// Most scopes or groups of a token kept (what access rules match on): a token is bounded
/// in size already; this bounds the work of matching.
const MAX_CLAIM_VALUES: usize = 256;

/// The claims read besides those `jsonwebtoken` checks.
#[derive(serde::Deserialize)]
struct Claims {
    sub: Option<String>,
    client_id: Option<String>,
    azp: Option<String>,
    /// RFC 9068: space-separated.
    scope: Option<String>,
    /// A list, as some issuers write it.
    scp: Option<Scopes>,
    /// The groups claim (Keycloak, Okta, Entra ID): a list, or one space-separated string.
    groups: Option<Scopes>,
}

#[derive(serde::Deserialize)]
#[serde(untagged)]
enum Scopes {
    Spaced(String),
    Listed(Vec<String>),
}

impl Scopes {
    fn values(&self) -> Vec<&str> {
        match self {
            Scopes::Spaced(text) => text.split_ascii_whitespace().collect(),
            Scopes::Listed(list) => list.iter().map(String::as_str).collect(),
        }
    }
}

/// The gateway's resource server: its metadata, its challenges, its token check.
pub(crate) struct ResourceServer {
    /// The issuer and the resource as configured (as tokens and clients spell them).
    issuer: String,
    resource: String,
    resource_path: String,
    metadata_url: String,
    scopes: Vec<String>,
    validation: Validation,
    refetch_interval: Duration,
    keys: KeySource,
}

impl ResourceServer {
    /// Checks the options for serving on `local` (the resource defaults to
    /// `http://LOCAL/mcp` on loopback).
    pub(crate) fn new(options: &OAuthOptions, local: SocketAddr) -> Result<Self, OAuthError> {
        let url = |setting: &'static str, text: &str, check: fn(&str) -> Result<Url, String>| {
            check(text).map_err(|reason| OAuthError::Url {
                setting,
                url: text.to_string(),
                reason,
            })
        };
        let issuer = url("--oauth-issuer", &options.issuer, checked_url)?;
        let jwks_url = options
            .jwks_url
            .as_deref()
            .map(|text| url("--oauth-jwks-url", text, checked_url))
            .transpose()?;
        let resource = match &options.resource {
            Some(text) => url("--oauth-resource", text, resource_url)?,
            None if local.ip().is_loopback() => url(
                "--oauth-resource",
                &format!("http://{local}/mcp"),
                resource_url,
            )?,
            None => return Err(OAuthError::NeedsResource { addr: local }),
        };
        for scope in &options.required_scopes {
            if scope.is_empty()
                || !scope
                    .bytes()
                    .all(|b| b.is_ascii_graphic() && b != b'"' && b != b'\\')
            {
                return Err(OAuthError::BadScope(scope.clone()));
            }
        }
        let mut validation = Validation::new(Algorithm::ES256);
        validation.algorithms = ALGORITHMS.to_vec();
        validation.set_issuer(&both_forms(issuer.as_str()));
        validation.set_audience(&both_forms(resource.as_str()));
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        validation.validate_nbf = true;
        validation.leeway = options.leeway.as_secs();
        let fetcher = Fetcher::new(options.fetch_timeout).map_err(OAuthError::Client)?;
        let freshness = Freshness {
            max_age: options.keys_max_age,
            refetch_interval: options.refetch_interval,
        };
        Ok(Self {
            metadata_url: metadata_url(&resource),
            keys: KeySource::new(fetcher, issuer, jwks_url, freshness),
            issuer: options.issuer.trim().to_string(),
            resource_path: resource.path().trim_end_matches('/').to_string(),
            resource: match &options.resource {
                Some(text) => text.trim().to_string(),
                None => resource.to_string(),
            },
            scopes: options.required_scopes.clone(),
            validation,
            refetch_interval: options.refetch_interval,
        })
    }

    /// Fewest time between two reads of the issuer's keys.
    pub(crate) fn refetch_interval(&self) -> Duration {
        self.refetch_interval
    }

    /// Reads the issuer's keys ahead of the first request.
    pub(crate) async fn warm(self: Arc<Self>) {
        self.keys.warm().await;
    }

    /// The paths the protected resource metadata is served at: the resource's own
    /// (`/.well-known/oauth-protected-resource/mcp`), the gateway's `/mcp` one and the root one.
    pub(crate) fn metadata_paths(&self) -> Vec<String> {
        let mut paths = vec![
            "/.well-known/oauth-protected-resource".to_string(),
            "/.well-known/oauth-protected-resource/mcp".to_string(),
        ];
        let own = format!(
            "/.well-known/oauth-protected-resource{}",
            self.resource_path
        );
        if !paths.contains(&own) {
            paths.push(own);
        }
        paths
    }

    /// The protected resource metadata document (RFC 9728).
    pub(crate) fn metadata(&self) -> serde_json::Value {
        let mut document = serde_json::json!({
            "resource": self.resource,
            "authorization_servers": [self.issuer],
            "bearer_methods_supported": ["header"],
            "resource_name": "mcpmux gateway",
        });
        if !self.scopes.is_empty() {
            document["scopes_supported"] = self.scopes.clone().into();
        }
        document
    }

    /// The `WWW-Authenticate` value answering `rejection` (`realm` when a static token may
    /// also be sent).
    pub(crate) fn challenge(&self, rejection: &Rejection, realm: bool) -> HeaderValue {
        let mut parts = Vec::new();
        if realm {
            parts.push("realm=\"mcpmux\"".to_string());
        }
        match rejection {
            Rejection::Missing | Rejection::Unavailable(_) => {}
            Rejection::Invalid(why) => {
                parts.push("error=\"invalid_token\"".into());
                parts.push(format!("error_description=\"{why}\""));
            }
            Rejection::InsufficientScope => parts.push("error=\"insufficient_scope\"".into()),
        }
        if !self.scopes.is_empty() {
            parts.push(format!("scope=\"{}\"", self.scopes.join(" ")));
        }
        parts.push(format!("resource_metadata=\"{}\"", self.metadata_url));
        HeaderValue::from_str(&format!("Bearer {}", parts.join(", ")))
            .unwrap_or_else(|_| HeaderValue::from_static("Bearer"))
    }

    /// Checks a bearer token: a JWT of the issuer, for this resource, current, with the
    /// required scopes.
    pub(crate) async fn verify(&self, token: &[u8]) -> Result<Principal, Rejection> {
        if token.len() > MAX_TOKEN_BYTES {
            return Err(Rejection::Invalid("the token is longer than 16384 bytes"));
        }
        let token =
            std::str::from_utf8(token).map_err(|_| Rejection::Invalid("the token is not a JWT"))?;
        let header = jsonwebtoken::decode_header(token)
            .map_err(|_| Rejection::Invalid("the token is not a JWT this gateway reads"))?;
        if !ALGORITHMS.contains(&header.alg) {
            return Err(Rejection::Invalid(
                "the token's signature algorithm is not accepted (RS*, PS*, ES256, ES384, EdDSA)",
            ));
        }
        if header.crit.is_some() || header.enc.is_some() || header.zip.is_some() {
            return Err(Rejection::Invalid(
                "the token's header asks for what this gateway does not do (crit, enc, zip)",
            ));
        }
        let keys = self
            .keys
            .keys_for(header.kid.as_deref(), header.alg)
            .await
            .map_err(|error| match error {
                KeyError::Unknown => {
                    Rejection::Invalid("the token is signed with a key the issuer does not list")
                }
                KeyError::Unavailable(why) => Rejection::Unavailable(why),
            })?;
        // `jsonwebtoken` wants every allowed algorithm of the key's family: allow the one the
        // header names, already checked against the list.
        let mut validation = self.validation.clone();
        validation.algorithms = vec![header.alg];
        for key in keys.candidates(header.kid.as_deref(), header.alg) {
            match jsonwebtoken::decode::<Claims>(token, &key.key, &validation) {
                Ok(data) => return self.admit(data.claims),
                Err(error) if matches!(error.kind(), ErrorKind::InvalidSignature) => continue,
                Err(error) => return Err(Rejection::Invalid(describe(error.kind()))),
            }
        }
        Err(Rejection::Invalid(
            "the token's signature does not verify with the issuer's keys",
        ))
    }

    /// A token whose signature and registered claims passed: its scopes and who holds it.
    fn admit(&self, claims: Claims) -> Result<Principal, Rejection> {
        let mut held: Vec<&str> = Vec::new();
        if let Some(scope) = &claims.scope {
            held.extend(scope.split_ascii_whitespace());
        }
        if let Some(scp) = &claims.scp {
            held.extend(scp.values());
        }
        if !self.scopes.iter().all(|want| held.contains(&want.as_str())) {
            return Err(Rejection::InsufficientScope);
        }
        let kept = |values: Vec<&str>| -> Vec<String> {
            values
                .into_iter()
                .take(MAX_CLAIM_VALUES)
                .map(str::to_string)
                .collect()
        };
        let groups = claims
            .groups
            .as_ref()
            .map(Scopes::values)
            .unwrap_or_default();
        Ok(Principal {
            scopes: kept(held),
            groups: kept(groups),
            subject: claims.sub,
            client_id: claims.client_id.or(claims.azp),
        })
    }
}

/// A resource identifier: an https (or loopback http) URL without a fragment (RFC 8707).
fn resource_url(text: &str) -> Result<Url, String> {
    checked_url(text)
}

/// `url` with and without its trailing slash: issuers and clients differ on it.
fn both_forms(url: &str) -> [String; 2] {
    let bare = url.trim_end_matches('/');
    [bare.to_string(), format!("{bare}/")]
}

/// Where the metadata of `resource` is (RFC 9728 §3.1: the well-known name inserted between
/// the host and the path).
fn metadata_url(resource: &Url) -> String {
    let mut url = resource.clone();
    let path = resource.path().trim_end_matches('/').to_string();
    url.set_path(&format!("/.well-known/oauth-protected-resource{path}"));
    url.set_query(None);
    url.to_string()
}

/// What a token that failed `jsonwebtoken`'s checks is told (fixed words: nothing of the token
/// is echoed).
fn describe(kind: &ErrorKind) -> &'static str {
    match kind {
        ErrorKind::ExpiredSignature => "the token has expired",
        ErrorKind::ImmatureSignature => "the token is not valid yet (nbf)",
        ErrorKind::InvalidAudience => "the token was not issued for this resource (aud)",
        ErrorKind::InvalidIssuer => "the token was not issued by the configured issuer (iss)",
        ErrorKind::MissingRequiredClaim(_) => "the token lacks exp, iss or aud",
        ErrorKind::InvalidAlgorithm => "the token's algorithm does not fit the issuer's key",
        ErrorKind::InvalidClaimFormat(_) | ErrorKind::Json(_) => {
            "the token's claims are not what an access token holds"
        }
        _ => "the token is not a JWT this gateway reads",
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    fn local() -> SocketAddr {
        "127.0.0.1:8080".parse().unwrap()
    }

    #[test]
    fn the_resource_defaults_to_the_loopback_url_and_is_required_elsewhere() {
        let server =
            ResourceServer::new(&OAuthOptions::new("https://as.example.com"), local()).unwrap();
        assert_eq!(server.metadata()["resource"], "http://127.0.0.1:8080/mcp");
        assert_eq!(
            server.metadata()["authorization_servers"][0],
            "https://as.example.com"
        );
        let public: SocketAddr = "0.0.0.0:8080".parse().unwrap();
        let refused = ResourceServer::new(&OAuthOptions::new("https://as.example.com"), public);
        assert!(matches!(refused, Err(OAuthError::NeedsResource { .. })));
    }

    #[test]
    fn a_plain_http_issuer_off_loopback_is_refused() {
        let error = ResourceServer::new(&OAuthOptions::new("http://as.example.com"), local())
            .err()
            .unwrap()
            .to_string();
        assert!(
            error.contains("--oauth-issuer http://as.example.com"),
            "{error}"
        );
        assert!(error.contains("https"), "{error}");
        let mut options = OAuthOptions::new("https://as.example.com");
        options.required_scopes = vec!["two words".into()];
        assert!(matches!(
            ResourceServer::new(&options, local()),
            Err(OAuthError::BadScope(_))
        ));
    }

    #[test]
    fn challenges_point_at_the_metadata_and_say_what_was_wrong() {
        let mut options = OAuthOptions::new("https://as.example.com");
        options.resource = Some("https://mcp.example.com/tools/mcp".into());
        options.required_scopes = vec!["mcp:tools".into()];
        let server = ResourceServer::new(&options, local()).unwrap();
        let metadata = "https://mcp.example.com/.well-known/oauth-protected-resource/tools/mcp";
        assert_eq!(
            server.challenge(&Rejection::Missing, false),
            format!("Bearer scope=\"mcp:tools\", resource_metadata=\"{metadata}\"").as_str()
        );
        assert_eq!(
            server.challenge(&Rejection::Invalid("the token has expired"), true),
            format!(
                "Bearer realm=\"mcpmux\", error=\"invalid_token\", error_description=\"the \
                 token has expired\", scope=\"mcp:tools\", resource_metadata=\"{metadata}\""
            )
            .as_str()
        );
        assert!(
            server
                .challenge(&Rejection::InsufficientScope, false)
                .to_str()
                .unwrap()
                .starts_with("Bearer error=\"insufficient_scope\", scope=\"mcp:tools\"")
        );
        assert!(
            server
                .metadata_paths()
                .contains(&"/.well-known/oauth-protected-resource/tools/mcp".to_string())
        );
        assert_eq!(server.metadata()["scopes_supported"][0], "mcp:tools");
    }
}
