//! DPoP (RFC 9449; MCP's SEP-1932): tokens bound to a key only this client holds. When the
//! authorization server lists ES256 in `dpop_signing_alg_values_supported`, mcpmux makes a
//! P-256 key for the server (kept in the token store beside the tokens it binds), signs a fresh
//! proof for every token request and every MCP request, presents the token as `DPoP`, and
//! answers a `use_dpop_nonce` challenge from either server with the nonce it hands out.
//!
//! rmcp has no DPoP. Its OAuth state machine takes a pluggable HTTP client, so the proofs for
//! the token endpoint are added there ([`DpopOAuthClient`]); the MCP requests get theirs
//! from the transport's HTTP client, which asks [`Dpop::resource_proof`].

use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aws_lc_rs::rand::{SecureRandom, SystemRandom};
use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rmcp::transport::auth::{
    AuthError, AuthorizationMetadata, OAuthHttpClient, OAuthHttpClientFuture,
    OAuthHttpRedirectPolicy, OAuthHttpRequest,
};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use url::Host;

use crate::http_body::{BodyError, read_body};
use crate::sync::lock;

/// The one signing algorithm mcpmux offers (the one every DPoP server must accept).
const ALG: &str = "ES256";
/// Largest token-endpoint or metadata answer read.
const MAX_BODY: usize = 1024 * 1024;
/// Deadline of one OAuth request when rmcp names none.
const OAUTH_TIMEOUT: Duration = Duration::from_secs(30);

/// Whether the authorization server takes DPoP proofs mcpmux can make.
pub(crate) fn supported(metadata: &AuthorizationMetadata) -> bool {
    metadata
        .additional_fields
        .get("dpop_signing_alg_values_supported")
        .and_then(Value::as_array)
        .is_some_and(|algs| algs.iter().any(|alg| alg.as_str() == Some(ALG)))
}

/// Whether a resource server's `WWW-Authenticate` challenge asks for a DPoP nonce.
pub(crate) fn wants_nonce(challenge: &str) -> bool {
    challenge.contains("use_dpop_nonce")
}

/// A P-256 key pair and its public JWK.
pub(crate) struct DpopKey {
    pair: EcdsaKeyPair,
    pkcs8: Vec<u8>,
    jwk: Value,
    rng: SystemRandom,
}

impl DpopKey {
    /// A new random key.
    pub fn generate() -> Result<Self, AuthError> {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .map_err(|_| internal("cannot generate a DPoP key"))?;
        Self::from_pkcs8(pkcs8.as_ref().to_vec(), rng)
    }

    /// The key as [`Self::stored`] wrote it.
    pub fn from_stored(text: &str) -> Result<Self, AuthError> {
        let pkcs8 = URL_SAFE_NO_PAD
            .decode(text)
            .map_err(|e| internal(&format!("the stored DPoP key is not base64url: {e}")))?;
        Self::from_pkcs8(pkcs8, SystemRandom::new())
    }

    fn from_pkcs8(pkcs8: Vec<u8>, rng: SystemRandom) -> Result<Self, AuthError> {
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &pkcs8)
            .map_err(|e| internal(&format!("the DPoP key is not a P-256 key: {e}")))?;
        // An uncompressed point: 0x04, then x and y, 32 bytes each.
        let point = pair.public_key().as_ref();
        let (x, y) = match point {
            [0x04, rest @ ..] if rest.len() == 64 => rest.split_at(32),
            _ => return Err(internal("unexpected P-256 public key encoding")),
        };
        let jwk = json!({
            "kty": "EC",
            "crv": "P-256",
            "x": URL_SAFE_NO_PAD.encode(x),
            "y": URL_SAFE_NO_PAD.encode(y),
        });
        Ok(Self {
            pair,
            pkcs8,
            jwk,
            rng,
        })
    }

    /// The private key for the token store (PKCS#8, base64url).
    pub fn stored(&self) -> String {
        URL_SAFE_NO_PAD.encode(&self.pkcs8)
    }

    /// A proof for one request: `method` on `url` (query and fragment dropped, as RFC 9449
    /// §4.2 wants), with the server's `nonce` and, for a resource request, the hash of the
    /// `access_token` it carries.
    pub fn proof(
        &self,
        method: &str,
        url: &str,
        nonce: Option<&str>,
        access_token: Option<&str>,
    ) -> Result<String, AuthError> {
        let mut jti = [0u8; 16];
        self.rng
            .fill(&mut jti)
            .map_err(|_| internal("no randomness for a DPoP proof"))?;
        let iat = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let htu = url.split(['?', '#']).next().unwrap_or(url);
        let mut claims = json!({
            "jti": URL_SAFE_NO_PAD.encode(jti),
            "htm": method,
            "htu": htu,
            "iat": iat,
        });
        if let Some(nonce) = nonce {
            claims["nonce"] = json!(nonce);
        }
        if let Some(token) = access_token {
            claims["ath"] = json!(URL_SAFE_NO_PAD.encode(Sha256::digest(token.as_bytes())));
        }
        let header = json!({"typ": "dpop+jwt", "alg": ALG, "jwk": self.jwk});
        let signing_input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let signature = self
            .pair
            .sign(&self.rng, signing_input.as_bytes())
            .map_err(|_| internal("cannot sign a DPoP proof"))?;
        Ok(format!(
            "{signing_input}.{}",
            URL_SAFE_NO_PAD.encode(signature.as_ref())
        ))
    }
}

/// A server's DPoP state: the key and the latest nonce each server handed out.
pub(crate) struct Dpop {
    key: DpopKey,
    as_nonce: Mutex<Option<String>>,
    rs_nonce: Mutex<Option<String>>,
}

impl Dpop {
    /// State around `key`, with no nonces yet.
    pub fn new(key: DpopKey) -> Self {
        Self {
            key,
            as_nonce: Mutex::new(None),
            rs_nonce: Mutex::new(None),
        }
    }

    /// A proof for a request to the MCP server that carries `access_token`.
    pub fn resource_proof(
        &self,
        method: &str,
        url: &str,
        access_token: &str,
    ) -> Result<String, AuthError> {
        let nonce = read(&self.rs_nonce);
        self.key
            .proof(method, url, nonce.as_deref(), Some(access_token))
    }

    /// Remembers the MCP server's nonce.
    pub fn set_resource_nonce(&self, nonce: String) {
        write(&self.rs_nonce, nonce);
    }

    /// A proof for a token request to `url`.
    pub fn token_proof(&self, url: &str) -> Result<String, AuthError> {
        let nonce = read(&self.as_nonce);
        self.key.proof("POST", url, nonce.as_deref(), None)
    }

    /// Remembers the authorization server's nonce.
    pub fn set_token_nonce(&self, nonce: String) {
        write(&self.as_nonce, nonce);
    }
}

fn read(slot: &Mutex<Option<String>>) -> Option<String> {
    lock(slot).clone()
}

fn write(slot: &Mutex<Option<String>>, value: String) {
    *lock(slot) = Some(value);
}

fn internal(message: &str) -> AuthError {
    AuthError::InternalError(message.to_string())
}

/// Which addresses OAuth requests may reach: what rmcp's own client allows. Loopback only for
/// a loopback MCP server, private networks only for one on a private network, link-local
/// (cloud metadata endpoints) never.
#[derive(Clone, Copy)]
struct AddressPolicy {
    loopback: bool,
    private: bool,
}

impl AddressPolicy {
    fn for_resource(resource: &reqwest::Url) -> Self {
        let ip = match resource.host() {
            Some(Host::Domain(name)) if name.eq_ignore_ascii_case("localhost") => {
                return Self {
                    loopback: true,
                    private: true,
                };
            }
            Some(Host::Ipv4(ip)) => Some(IpAddr::V4(ip)),
            Some(Host::Ipv6(ip)) => Some(IpAddr::V6(ip)),
            _ => None,
        };
        match ip {
            Some(ip) if ip.is_loopback() => Self {
                loopback: true,
                private: true,
            },
            Some(ip) if is_private(ip) => Self {
                loopback: false,
                private: true,
            },
            _ => Self {
                loopback: false,
                private: false,
            },
        }
    }

    fn allows(self, ip: IpAddr) -> bool {
        if ip.is_unspecified() || ip.is_multicast() || is_link_local(ip) {
            return false;
        }
        if ip.is_loopback() {
            return self.loopback;
        }
        if is_private(ip) {
            return self.private;
        }
        true
    }

    fn allows_url(self, url: &reqwest::Url) -> bool {
        match url.host() {
            Some(Host::Ipv4(ip)) => self.allows(IpAddr::V4(ip)),
            Some(Host::Ipv6(ip)) => self.allows(IpAddr::V6(ip)),
            Some(Host::Domain(name)) if name.eq_ignore_ascii_case("localhost") => self.loopback,
            Some(Host::Domain(_)) => true,
            None => false,
        }
    }
}

fn is_private(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(ip) => ip.is_private(),
        IpAddr::V6(ip) => (ip.segments()[0] & 0xfe00) == 0xfc00,
    }
}

fn is_link_local(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(ip) => ip.is_link_local(),
        IpAddr::V6(ip) => (ip.segments()[0] & 0xffc0) == 0xfe80,
    }
}

impl reqwest::dns::Resolve for AddressPolicy {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let policy = *self;
        Box::pin(async move {
            let host = name.as_str().to_string();
            let found: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let allowed: Vec<SocketAddr> = found
                .iter()
                .copied()
                .filter(|addr| policy.allows(addr.ip()))
                .collect();
            if allowed.is_empty() {
                return Err(format!(
                    "{host} resolves only to addresses OAuth may not reach from this MCP server"
                )
                .into());
            }
            Ok(Box::new(allowed.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

/// rmcp's OAuth requests, sent by us: token requests (every `grant_type` POST) get a DPoP
/// proof, and a `use_dpop_nonce` answer is retried once with the nonce it carries.
pub(crate) struct DpopOAuthClient {
    dpop: Arc<Dpop>,
    follow: reqwest::Client,
    stop: reqwest::Client,
    policy: AddressPolicy,
}

impl DpopOAuthClient {
    /// A client for the MCP server at `resource`.
    pub fn new(dpop: Arc<Dpop>, resource: &str) -> Result<Self, AuthError> {
        let policy = AddressPolicy::for_resource(&reqwest::Url::parse(resource)?);
        let build = |redirect: reqwest::redirect::Policy| {
            reqwest::Client::builder()
                .redirect(redirect)
                .dns_resolver(Arc::new(policy))
                .build()
                .map_err(|e| internal(&format!("cannot build the OAuth HTTP client: {e}")))
        };
        Ok(Self {
            dpop,
            follow: build(super::redirect::same_origin())?,
            stop: build(reqwest::redirect::Policy::none())?,
            policy,
        })
    }

    async fn send(
        &self,
        request: &OAuthHttpRequest,
        proof: Option<String>,
    ) -> Result<http::Response<Vec<u8>>, Box<dyn std::error::Error + Send + Sync>> {
        let url = reqwest::Url::parse(&request.request.uri().to_string())?;
        if !self.policy.allows_url(&url) {
            return Err(
                format!("{url}: OAuth may not reach this address from this MCP server").into(),
            );
        }
        let client = match request.redirect_policy {
            OAuthHttpRedirectPolicy::Stop => &self.stop,
            _ => &self.follow,
        };
        let mut builder = client
            .request(request.request.method().clone(), url)
            .headers(request.request.headers().clone())
            .timeout(request.timeout.unwrap_or(OAUTH_TIMEOUT))
            .body(request.request.body().clone());
        if let Some(proof) = proof {
            builder = builder.header("dpop", proof);
        }
        let response = builder.send().await?;
        let mut answer = http::Response::builder().status(response.status());
        for (name, value) in response.headers() {
            answer = answer.header(name, value);
        }
        let body = match read_body(response, MAX_BODY, None).await {
            Ok(body) => body,
            Err(BodyError::TooLarge { .. }) => {
                return Err(format!("OAuth response larger than {MAX_BODY} bytes").into());
            }
            Err(error) => return Err(error.into()),
        };
        Ok(answer.body(body)?)
    }
}

impl OAuthHttpClient for DpopOAuthClient {
    fn execute(&self, request: OAuthHttpRequest) -> OAuthHttpClientFuture<'_> {
        Box::pin(async move {
            let is_token_request = request.request.method() == http::Method::POST
                && String::from_utf8_lossy(request.request.body()).contains("grant_type=");
            if !is_token_request {
                return self.send(&request, None).await;
            }
            let url = request.request.uri().to_string();
            let mut retried = false;
            loop {
                let proof = self.dpop.token_proof(&url)?;
                let response = self.send(&request, Some(proof)).await?;
                let nonce = response
                    .headers()
                    .get("dpop-nonce")
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned);
                if let Some(nonce) = &nonce {
                    self.dpop.set_token_nonce(nonce.clone());
                }
                let asks_nonce = response.status() == http::StatusCode::BAD_REQUEST
                    && String::from_utf8_lossy(response.body()).contains("use_dpop_nonce");
                if asks_nonce && nonce.is_some() && !retried {
                    tracing::debug!("the authorization server wants a DPoP nonce; sending again");
                    retried = true;
                    continue;
                }
                return Ok(response);
            }
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED, UnparsedPublicKey};

    fn part(jwt: &str, index: usize) -> Value {
        let segment = jwt.split('.').nth(index).unwrap();
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(segment).unwrap()).unwrap()
    }

    #[test]
    fn a_proof_is_a_signed_dpop_jwt_for_the_request() {
        let key = DpopKey::generate().unwrap();
        let proof = key
            .proof(
                "POST",
                "https://mcp.example/mcp?x=1#f",
                Some("n1"),
                Some("tok"),
            )
            .unwrap();
        let header = part(&proof, 0);
        assert_eq!(header["typ"], "dpop+jwt");
        assert_eq!(header["alg"], "ES256");
        assert!(
            header["jwk"].get("d").is_none(),
            "no private part in the JWK"
        );
        let claims = part(&proof, 1);
        assert_eq!(claims["htm"], "POST");
        assert_eq!(claims["htu"], "https://mcp.example/mcp");
        assert_eq!(claims["nonce"], "n1");
        assert_eq!(
            claims["ath"],
            URL_SAFE_NO_PAD.encode(Sha256::digest(b"tok")).as_str()
        );
        // The signature verifies with the public key in the header.
        let x = URL_SAFE_NO_PAD
            .decode(header["jwk"]["x"].as_str().unwrap())
            .unwrap();
        let y = URL_SAFE_NO_PAD
            .decode(header["jwk"]["y"].as_str().unwrap())
            .unwrap();
        let point = [&[0x04u8][..], &x, &y].concat();
        let (input, signature) = proof.rsplit_once('.').unwrap();
        UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, point)
            .verify(
                input.as_bytes(),
                &URL_SAFE_NO_PAD.decode(signature).unwrap(),
            )
            .expect("the proof's signature verifies");
        // Every proof is fresh.
        let again = key
            .proof("POST", "https://mcp.example/mcp", None, None)
            .unwrap();
        assert_ne!(part(&again, 1)["jti"], claims["jti"]);
        assert!(part(&again, 1).get("ath").is_none());
    }

    #[test]
    fn a_stored_key_signs_with_the_same_public_key() {
        let key = DpopKey::generate().unwrap();
        let back = DpopKey::from_stored(&key.stored()).unwrap();
        assert_eq!(key.jwk, back.jwk);
        assert!(DpopKey::from_stored("not base64 !").is_err());
        assert!(DpopKey::from_stored("AAAA").is_err());
    }

    #[test]
    fn oauth_requests_reach_private_addresses_only_from_private_servers() {
        let public = AddressPolicy::for_resource(&"https://mcp.example/mcp".parse().unwrap());
        let local = AddressPolicy::for_resource(&"http://localhost:3000/mcp".parse().unwrap());
        let loopback: IpAddr = "127.0.0.1".parse().unwrap();
        let private: IpAddr = "10.1.2.3".parse().unwrap();
        let metadata: IpAddr = "169.254.169.254".parse().unwrap();
        let internet: IpAddr = "93.184.216.34".parse().unwrap();
        assert!(!public.allows(loopback) && !public.allows(private) && public.allows(internet));
        assert!(local.allows(loopback) && local.allows(private));
        assert!(!local.allows(metadata) && !public.allows(metadata));
        assert!(!public.allows_url(&"http://localhost:9/token".parse().unwrap()));
    }

    #[test]
    fn support_is_read_from_the_metadata() {
        let mut metadata: AuthorizationMetadata = serde_json::from_value(json!({
            "authorization_endpoint": "https://as.example/authorize",
            "token_endpoint": "https://as.example/token",
        }))
        .unwrap();
        assert!(!supported(&metadata));
        metadata.additional_fields.insert(
            "dpop_signing_alg_values_supported".into(),
            json!(["RS256", "ES256"]),
        );
        assert!(supported(&metadata));
        assert!(wants_nonce(
            r#"DPoP error="use_dpop_nonce", resource_metadata="x""#
        ));
    }
}
