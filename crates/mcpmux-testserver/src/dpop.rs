//! DPoP proofs (RFC 9449) as `--oauth --dpop` checks them, at the token endpoint and in front
//! of `/mcp`: a compact JWS with `typ: dpop+jwt`, ES256 over the public P-256 key in its `jwk`
//! header, a fresh `jti`, the request's method and URL, a recent `iat`, the server's nonce when
//! it wants one, and at the resource the hash of the access token it goes with. The key's
//! thumbprint (RFC 7638) is what a token is bound to.

use std::collections::HashSet;
use std::time::{SystemTime, UNIX_EPOCH};

use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED, UnparsedPublicKey};
use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// How far `iat` may be from now (RFC 9449 leaves it to the server; the conformance suite
/// allows five minutes).
const IAT_WINDOW_SECS: u64 = 300;

/// What one request's proof must match.
pub struct Expected<'a> {
    /// `POST`, `GET`, ...
    pub method: &'a str,
    /// The request's URL without query or fragment.
    pub url: &'a str,
    /// The access token the request carries (resource requests only).
    pub access_token: Option<&'a str>,
    /// The nonce the server currently wants, if it wants one.
    pub nonce: Option<&'a str>,
}

/// Why a proof is refused.
#[derive(Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Malformed, unsigned, replayed or for another request.
    Invalid(String),
    /// Well formed but without the nonce the server wants (`use_dpop_nonce`).
    NeedsNonce,
}

fn invalid(message: impl Into<String>) -> Refusal {
    Refusal::Invalid(message.into())
}

fn segment(text: &str) -> Result<Value, Refusal> {
    let bytes = URL_SAFE_NO_PAD
        .decode(text)
        .map_err(|_| invalid("a proof segment is not base64url"))?;
    serde_json::from_slice(&bytes).map_err(|_| invalid("a proof segment is not JSON"))
}

/// Checks `proof` against `expected`, remembering its `jti` in `seen`; the key's thumbprint
/// when it passes.
pub fn verify(
    proof: &str,
    expected: &Expected<'_>,
    seen: &mut HashSet<String>,
) -> Result<String, Refusal> {
    let mut parts = proof.split('.');
    let (Some(header), Some(claims), Some(signature), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(invalid("a DPoP proof is a compact JWS of three parts"));
    };
    let head = segment(header)?;
    if head["typ"] != "dpop+jwt" {
        return Err(invalid("typ must be dpop+jwt"));
    }
    if head["alg"] != "ES256" {
        return Err(invalid("this server takes ES256 proofs only"));
    }
    let jwk = &head["jwk"];
    if jwk.get("d").is_some() {
        return Err(invalid("the jwk must not hold a private key"));
    }
    let (Some(x), Some(y)) = (jwk["x"].as_str(), jwk["y"].as_str()) else {
        return Err(invalid("the jwk needs x and y"));
    };
    if jwk["kty"] != "EC" || jwk["crv"] != "P-256" {
        return Err(invalid("the jwk must be an EC P-256 key"));
    }
    let coordinate = |c: &str| {
        URL_SAFE_NO_PAD
            .decode(c)
            .ok()
            .filter(|bytes| bytes.len() == 32)
            .ok_or_else(|| invalid("a jwk coordinate is not 32 base64url bytes"))
    };
    let point = [&[0x04u8][..], &coordinate(x)?, &coordinate(y)?].concat();
    let signature = URL_SAFE_NO_PAD
        .decode(signature)
        .map_err(|_| invalid("the signature is not base64url"))?;
    UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, point)
        .verify(format!("{header}.{claims}").as_bytes(), &signature)
        .map_err(|_| invalid("the signature does not verify with the jwk"))?;

    let body = segment(claims)?;
    let Some(jti) = body["jti"].as_str() else {
        return Err(invalid("jti is missing"));
    };
    if body["htm"].as_str() != Some(expected.method) {
        return Err(invalid(format!("htm is not {}", expected.method)));
    }
    let htu = body["htu"].as_str().unwrap_or_default();
    if htu.contains(['?', '#']) || htu.trim_end_matches('/') != expected.url.trim_end_matches('/') {
        return Err(invalid(format!("htu is not {}", expected.url)));
    }
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    match body["iat"].as_u64() {
        Some(iat) if iat.abs_diff(now) <= IAT_WINDOW_SECS => {}
        _ => return Err(invalid("iat is missing or not recent")),
    }
    if let Some(token) = expected.access_token {
        let hash = URL_SAFE_NO_PAD.encode(Sha256::digest(token.as_bytes()));
        if body["ath"].as_str() != Some(hash.as_str()) {
            return Err(invalid("ath is not the hash of the access token"));
        }
    }
    if let Some(nonce) = expected.nonce
        && body["nonce"].as_str() != Some(nonce)
    {
        return Err(Refusal::NeedsNonce);
    }
    if !seen.insert(jti.to_owned()) {
        return Err(invalid("this proof was used before (jti replay)"));
    }
    let canonical = format!(r#"{{"crv":"P-256","kty":"EC","x":"{x}","y":"{y}"}}"#);
    Ok(URL_SAFE_NO_PAD.encode(Sha256::digest(canonical.as_bytes())))
}

/// The `DPoP TOKEN` token of an `Authorization` header.
pub fn dpop_token(authorization: &str) -> Option<&str> {
    let (scheme, token) = authorization.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("dpop") && !token.is_empty()).then_some(token)
}
