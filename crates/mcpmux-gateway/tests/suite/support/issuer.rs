//! A real authorization server's public side on 127.0.0.1, for the tests of the gateway as an
//! OAuth resource server: its metadata (RFC 8414) and key set over HTTP, ES256 keys made in
//! the test (aws-lc-rs), and tokens it signs. It counts the reads of its key set, and can publish
//! a hostile key set instead (huge, deep, never answering). It runs on a thread of its own, so
//! async and blocking tests alike can use it; dropping it stops it.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
use axum::{Router, extract::State, response::IntoResponse, routing::get};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};

/// One ES256 signing key.
#[derive(Clone)]
pub struct SigningKey {
    pub kid: String,
    pkcs8: Vec<u8>,
    jwk: Value,
}

impl SigningKey {
    /// A new P-256 key named `kid`.
    pub fn new(kid: &str) -> Self {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .unwrap()
            .as_ref()
            .to_vec();
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &pkcs8).unwrap();
        let point = pair.public_key().as_ref();
        let (x, y) = point[1..].split_at(32);
        let jwk = json!({
            "kty": "EC", "crv": "P-256", "use": "sig", "alg": "ES256", "kid": kid,
            "x": URL_SAFE_NO_PAD.encode(x), "y": URL_SAFE_NO_PAD.encode(y),
        });
        SigningKey {
            kid: kid.to_string(),
            pkcs8,
            jwk,
        }
    }

    /// The public key as a JWK.
    pub fn jwk(&self) -> &Value {
        &self.jwk
    }

    /// `claims` signed with this key (ES256, `kid` in the header).
    pub fn sign(&self, claims: &Value) -> String {
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some(self.kid.clone());
        jsonwebtoken::encode(&header, claims, &EncodingKey::from_ec_der(&self.pkcs8)).unwrap()
    }
}

/// What the key set URL answers.
#[derive(Clone)]
pub enum KeySetAnswer {
    /// The published keys.
    Keys,
    /// These bytes, as `application/json`.
    Raw(Arc<Vec<u8>>),
    /// Nothing, ever (the connection stays open).
    Silence,
}

struct Published {
    keys: Mutex<Vec<SigningKey>>,
    answer: Mutex<KeySetAnswer>,
    /// Its own URL.
    own: Mutex<String>,
    /// The issuer its metadata names, when not its own.
    claimed: Mutex<Option<String>>,
    key_set_reads: AtomicUsize,
}

/// The authorization server, serving until dropped.
pub struct Issuer {
    /// `http://127.0.0.1:PORT`: its issuer identifier.
    pub url: String,
    published: Arc<Published>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Issuer {
    /// Serves metadata and one key, `k1`.
    pub fn start() -> Self {
        let published = Arc::new(Published {
            keys: Mutex::new(vec![SigningKey::new("k1")]),
            answer: Mutex::new(KeySetAnswer::Keys),
            own: Mutex::new(String::new()),
            claimed: Mutex::new(None),
            key_set_reads: AtomicUsize::new(0),
        });
        let (bound, url) = std::sync::mpsc::channel();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let state = published.clone();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                let addr = listener.local_addr().unwrap();
                *state.own.lock().unwrap() = format!("http://{addr}");
                let app = Router::new()
                    .route("/.well-known/oauth-authorization-server", get(metadata))
                    .route("/jwks", get(key_set))
                    .with_state(state);
                bound.send(format!("http://{addr}")).unwrap();
                // Stopping drops the runtime, and with it every connection, silent ones too.
                tokio::select! {
                    served = axum::serve(listener, app).into_future() => served.unwrap(),
                    _ = stopped => {}
                }
            });
        });
        let url = url.recv().unwrap();
        Issuer {
            url,
            published,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// The key tokens are signed with unless a test picks another.
    pub fn key(&self) -> SigningKey {
        self.published.keys.lock().unwrap()[0].clone()
    }

    /// Publishes one more key (a rotation).
    pub fn publish(&self, key: &SigningKey) {
        self.published.keys.lock().unwrap().push(key.clone());
    }

    /// Answers the key set URL this way from now on.
    pub fn answer(&self, answer: KeySetAnswer) {
        *self.published.answer.lock().unwrap() = answer;
    }

    /// Says its issuer is another (a metadata document that names someone else).
    pub fn claim_to_be(&self, issuer: &str) {
        *self.published.claimed.lock().unwrap() = Some(issuer.to_string());
    }

    /// How many times the key set was read.
    pub fn key_set_reads(&self) -> usize {
        self.published.key_set_reads.load(Ordering::SeqCst)
    }

    /// The claims of a good token for `resource`: this issuer, for it, valid five minutes,
    /// `sub` alice, scope `mcp:tools`.
    pub fn claims(&self, resource: &str) -> Value {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs();
        json!({
            "iss": self.url, "aud": resource, "sub": "alice", "client_id": "test-client",
            "iat": now, "nbf": now, "exp": now + 300, "scope": "mcp:tools",
        })
    }

    /// A good token for `resource`, with `changes` merged into its claims.
    pub fn token(&self, resource: &str, changes: Value) -> String {
        let mut claims = self.claims(resource);
        for (name, value) in changes.as_object().unwrap() {
            if value.is_null() {
                claims.as_object_mut().unwrap().remove(name);
            } else {
                claims[name] = value.clone();
            }
        }
        self.key().sign(&claims)
    }
}

impl Drop for Issuer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

async fn metadata(State(published): State<Arc<Published>>) -> impl IntoResponse {
    let own = published.own.lock().unwrap().clone();
    let issuer = published
        .claimed
        .lock()
        .unwrap()
        .clone()
        .unwrap_or(own.clone());
    axum::Json(json!({
        "issuer": issuer,
        "jwks_uri": format!("{own}/jwks"),
        "token_endpoint": format!("{own}/token"),
        "response_types_supported": ["code"],
    }))
}

async fn key_set(State(published): State<Arc<Published>>) -> axum::response::Response {
    published.key_set_reads.fetch_add(1, Ordering::SeqCst);
    let answer = published.answer.lock().unwrap().clone();
    match answer {
        KeySetAnswer::Keys => {
            let keys: Vec<Value> = published
                .keys
                .lock()
                .unwrap()
                .iter()
                .map(|k| k.jwk().clone())
                .collect();
            axum::Json(json!({ "keys": keys })).into_response()
        }
        KeySetAnswer::Raw(bytes) => (
            [(axum::http::header::CONTENT_TYPE, "application/json")],
            bytes.as_ref().clone(),
        )
            .into_response(),
        KeySetAnswer::Silence => {
            std::future::pending::<()>().await;
            unreachable!()
        }
    }
}
