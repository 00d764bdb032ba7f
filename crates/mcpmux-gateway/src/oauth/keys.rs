//! The issuer's signing keys: read from its key set (found through its metadata, or at a
//! configured URL), kept for a while, read again when they are old or when a token names a
//! key not yet seen (a rotation) — at most once per refetch interval, one read at a time, so a
//! stream of tokens with made-up key ids cannot make the gateway hammer the issuer. Only
//! public signing keys are kept: a symmetric (`oct`) key in a public document is ignored.
//! Knows nothing of claims.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, PublicKeyUse};
use jsonwebtoken::{Algorithm, AlgorithmFamily, DecodingKey};
use url::Url;

use super::fetch::{FetchError, Fetcher, KeySetDocument, MAX_JWKS_BYTES, MAX_KEYS};

/// One public key a token may be signed with.
pub(crate) struct VerifyKey {
    kid: Option<String>,
    /// The algorithm the key set binds the key to, if it says.
    alg: Option<Algorithm>,
    family: AlgorithmFamily,
    pub(crate) key: DecodingKey,
}

/// The usable keys of one read of the key set.
#[derive(Default)]
pub(crate) struct KeySet {
    keys: Vec<VerifyKey>,
}

impl KeySet {
    /// Reads a key set document, keeping the keys that can verify signatures.
    pub(crate) fn from_document(document: KeySetDocument) -> Result<Self, String> {
        if document.keys.len() > MAX_KEYS {
            return Err(format!(
                "lists {} keys, more than the {MAX_KEYS} accepted",
                document.keys.len()
            ));
        }
        let keys: Vec<VerifyKey> = document
            .keys
            .into_iter()
            .filter_map(|value| {
                let jwk: Jwk = serde_json::from_value(value)
                    .map_err(|e| tracing::debug!(error = %e, "key set entry skipped"))
                    .ok()?;
                VerifyKey::from_jwk(&jwk)
            })
            .collect();
        if keys.is_empty() {
            return Err(
                "has no public signing key this gateway can use (RSA, EC P-256/P-384 or Ed25519)"
                    .into(),
            );
        }
        Ok(Self { keys })
    }

    /// The keys a token signed with `alg` under `kid` may be checked against: of the
    /// algorithm's family, bound to that algorithm or to none, with that key id — or, when no
    /// key has it, keys without an id.
    pub(crate) fn candidates(&self, kid: Option<&str>, alg: Algorithm) -> Vec<&VerifyKey> {
        let fits = |key: &&VerifyKey| {
            key.family == alg.family() && key.alg.is_none_or(|bound| bound == alg)
        };
        let Some(kid) = kid else {
            return self.keys.iter().filter(fits).collect();
        };
        let named: Vec<&VerifyKey> = self
            .keys
            .iter()
            .filter(fits)
            .filter(|key| key.kid.as_deref() == Some(kid))
            .collect();
        if !named.is_empty() {
            return named;
        }
        self.keys
            .iter()
            .filter(fits)
            .filter(|key| key.kid.is_none())
            .collect()
    }

    /// How many keys were kept.
    pub(crate) fn len(&self) -> usize {
        self.keys.len()
    }
}

impl VerifyKey {
    fn from_jwk(jwk: &Jwk) -> Option<Self> {
        if jwk
            .common
            .public_key_use
            .as_ref()
            .is_some_and(|usage| *usage != PublicKeyUse::Signature)
        {
            return None;
        }
        let family = match &jwk.algorithm {
            AlgorithmParameters::RSA(_) => AlgorithmFamily::Rsa,
            AlgorithmParameters::EllipticCurve(ec)
                if matches!(ec.curve, EllipticCurve::P256 | EllipticCurve::P384) =>
            {
                AlgorithmFamily::Ec
            }
            AlgorithmParameters::OctetKeyPair(okp) if okp.curve == EllipticCurve::Ed25519 => {
                AlgorithmFamily::Ed
            }
            // A shared secret published in a key set is no secret: never verify with it.
            _ => return None,
        };
        let alg = match jwk.common.key_algorithm {
            None => None,
            Some(bound) => Some(bound.to_string().parse::<Algorithm>().ok()?),
        };
        if alg.is_some_and(|alg| alg.family() != family) {
            return None;
        }
        let key = DecodingKey::from_jwk(jwk).ok()?;
        Some(Self {
            kid: jwk.common.key_id.clone(),
            alg,
            family,
            key,
        })
    }
}

/// Why no key could be had.
#[derive(Debug)]
pub(crate) enum KeyError {
    /// The key set does not hold the key the token names (after a read, or too soon for one).
    Unknown,
    /// The key set has never been read: the last attempt's error.
    Unavailable(String),
}

/// When keys are read again.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Freshness {
    /// Keys older than this are read again on next use.
    pub max_age: Duration,
    /// Reads never follow each other closer than this (an unknown key id, a failed read).
    pub refetch_interval: Duration,
}

/// The last read of the key set, and when reads happened.
#[derive(Clone, Default)]
struct Snapshot {
    keys: Option<Arc<KeySet>>,
    fetched: Option<Instant>,
    attempted: Option<Instant>,
    /// Bumped by every read, ok or not: a waiter sees whether someone read while it waited.
    generation: u64,
    last_error: Option<String>,
    jwks_uri: Option<Url>,
}

/// The issuer's keys, read on demand and kept.
pub(crate) struct KeySource {
    fetcher: Fetcher,
    issuer: Url,
    configured: Option<Url>,
    freshness: Freshness,
    snapshot: Mutex<Snapshot>,
    /// One read at a time; the others wait for it and use what it read.
    reading: tokio::sync::Mutex<()>,
}

impl KeySource {
    pub(crate) fn new(
        fetcher: Fetcher,
        issuer: Url,
        configured: Option<Url>,
        freshness: Freshness,
    ) -> Self {
        Self {
            fetcher,
            issuer,
            configured,
            freshness,
            snapshot: Mutex::new(Snapshot::default()),
            reading: tokio::sync::Mutex::new(()),
        }
    }

    fn snapshot(&self) -> Snapshot {
        mcpmux::cli_support::sync::lock(&self.snapshot).clone()
    }

    fn may_read(&self, snapshot: &Snapshot, now: Instant) -> bool {
        snapshot
            .attempted
            .is_none_or(|at| now.duration_since(at) >= self.freshness.refetch_interval)
    }

    /// Reads the keys unless a read was already made (used at start, so the first request
    /// does not wait, and a misconfiguration is logged early).
    pub(crate) async fn warm(&self) {
        let snapshot = self.snapshot();
        if snapshot.attempted.is_none() {
            self.read(snapshot.generation).await;
        }
    }

    /// A key set holding a key for a token signed with `alg` under `kid`, read (again) when
    /// none is known, or the known ones are old, and the refetch interval allows it.
    pub(crate) async fn keys_for(
        &self,
        kid: Option<&str>,
        alg: Algorithm,
    ) -> Result<Arc<KeySet>, KeyError> {
        let snapshot = self.snapshot();
        let now = Instant::now();
        let known = snapshot
            .keys
            .clone()
            .filter(|keys| !keys.candidates(kid, alg).is_empty());
        let fresh = snapshot
            .fetched
            .is_some_and(|at| now.duration_since(at) < self.freshness.max_age);
        match known {
            Some(keys) if fresh || !self.may_read(&snapshot, now) => return Ok(keys),
            Some(keys) => {
                // Old keys: read again, and keep using them if the read fails.
                self.read(snapshot.generation).await;
                let after = self.snapshot().keys.unwrap_or(keys.clone());
                return Ok(if after.candidates(kid, alg).is_empty() {
                    keys
                } else {
                    after
                });
            }
            None if !self.may_read(&snapshot, now) => {
                return Err(match (&snapshot.keys, snapshot.last_error) {
                    (None, Some(error)) => KeyError::Unavailable(error),
                    _ => KeyError::Unknown,
                });
            }
            None => self.read(snapshot.generation).await,
        }
        let after = self.snapshot();
        match after.keys {
            Some(keys) if !keys.candidates(kid, alg).is_empty() => Ok(keys),
            Some(_) => Err(KeyError::Unknown),
            None => {
                Err(KeyError::Unavailable(after.last_error.unwrap_or_else(
                    || "the key set has not been read yet".into(),
                )))
            }
        }
    }

    /// Reads the key set unless another read finished since the snapshot of `generation`.
    async fn read(&self, generation: u64) {
        let _one_at_a_time = self.reading.lock().await;
        let snapshot = self.snapshot();
        if snapshot.generation != generation {
            return;
        }
        let outcome = self.fetch(snapshot.jwks_uri.clone()).await;
        let mut state = mcpmux::cli_support::sync::lock(&self.snapshot);
        state.generation += 1;
        state.attempted = Some(Instant::now());
        match outcome {
            Ok((keys, jwks_uri)) => {
                tracing::debug!(keys = keys.len(), %jwks_uri, "authorization server keys read");
                state.keys = Some(Arc::new(keys));
                state.fetched = state.attempted;
                state.jwks_uri = Some(jwks_uri);
                state.last_error = None;
            }
            Err(error) => {
                tracing::warn!(%error, "the authorization server's keys cannot be read");
                state.last_error = Some(error);
                // The key set may have moved: ask the metadata again next time.
                state.jwks_uri = None;
            }
        }
    }

    /// The key set and where it was read (the issuer's metadata is read once, for its
    /// `jwks_uri`, unless the URL is configured).
    async fn fetch(&self, known: Option<Url>) -> Result<(KeySet, Url), String> {
        let jwks_uri = match known.or_else(|| self.configured.clone()) {
            Some(url) => url,
            None => self
                .fetcher
                .jwks_uri(&self.issuer)
                .await
                .map_err(|e| format!("the issuer's metadata: {e}"))?,
        };
        let document: KeySetDocument = self
            .fetcher
            .json(&jwks_uri, MAX_JWKS_BYTES)
            .await
            .map_err(|e: FetchError| format!("the key set: {e}"))?;
        let keys = KeySet::from_document(document).map_err(|e| format!("the key set {e}"))?;
        Ok((keys, jwks_uri))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use serde_json::json;

    fn set(keys: serde_json::Value) -> Result<KeySet, String> {
        KeySet::from_document(serde_json::from_value(json!({ "keys": keys })).unwrap())
    }

    const X: &str = "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU";
    const Y: &str = "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0";

    #[test]
    fn only_public_signing_keys_are_kept() {
        let keys = set(json!([
            {"kty": "oct", "k": "c2VjcmV0", "kid": "shared"},
            {"kty": "EC", "crv": "P-256", "x": X, "y": Y, "kid": "enc", "use": "enc"},
            {"kty": "EC", "crv": "P-256", "x": X, "y": Y, "kid": "sig", "alg": "ES256"},
            {"kty": "XYZ", "kid": "strange"},
            "not even an object",
        ]))
        .unwrap();
        assert_eq!(keys.len(), 1);
        assert_eq!(keys.candidates(Some("sig"), Algorithm::ES256).len(), 1);
        assert!(keys.candidates(Some("sig"), Algorithm::ES384).is_empty());
        assert!(keys.candidates(Some("sig"), Algorithm::HS256).is_empty());
        assert!(keys.candidates(Some("shared"), Algorithm::HS256).is_empty());
        assert!(keys.candidates(Some("other"), Algorithm::ES256).is_empty());
    }

    #[test]
    fn a_set_with_no_usable_key_or_too_many_is_refused() {
        let error = set(json!([{"kty": "oct", "k": "c2VjcmV0"}])).err().unwrap();
        assert!(error.contains("no public signing key"), "{error}");
        let many: Vec<_> = (0..=MAX_KEYS)
            .map(|i| json!({"kty": "EC", "crv": "P-256", "x": X, "y": Y, "kid": i.to_string()}))
            .collect();
        let error = set(json!(many)).err().unwrap();
        assert!(error.contains("more than the 64"), "{error}");
    }
}
