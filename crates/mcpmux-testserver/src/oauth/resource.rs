//! The check in front of `/mcp`: a live bearer token, or with `--dpop` a DPoP-bound token with a
//! valid proof from its key; and the 401 challenge that names the metadata and the scope.

use std::time::Instant;

use axum::{
    Json,
    http::{HeaderMap, HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
};
use serde_json::json;

use crate::dpop;

use super::params::bearer_token;
use super::{AuthorizationServer, DEFAULT_SCOPE};

impl AuthorizationServer {
    /// Check the token of a `method` request to the resource: a live bearer token, or with
    /// `--dpop` a live DPoP-bound token with a valid proof from its key.
    pub(super) fn check_token(&self, method: &str, headers: &HeaderMap) -> Result<(), Rejection> {
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
    pub(super) fn challenge(&self, rejection: Rejection) -> Response {
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
}

/// Why a request to the resource is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Rejection {
    /// No bearer token at all.
    Missing,
    /// A token that is unknown, expired or revoked.
    InvalidToken,
    /// With `--dpop`: no proof, a bad one, or a Bearer presentation.
    Proof(String),
    /// With `--dpop-nonce`: a proof without the server's nonce.
    NeedsNonce,
}
