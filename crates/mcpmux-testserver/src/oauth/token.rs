//! The token endpoint: authorization_code, refresh_token with rotation and reuse detection (a
//! spent refresh token presented again revokes every token of its login, RFC 9700 §4.14.2),
//! client_credentials and the RFC 7523 JWT-bearer grant; with `--dpop`, the proof that binds
//! the tokens to a key; scopes granted and narrowed.

use std::time::Instant;

use axum::http::{HeaderMap, header};
use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use serde_json::{Value, json};

use crate::dpop;

use super::client_auth::authenticate;
use super::params::{OAuthError, Params, parse_params, required};
use super::pkce::verifier_matches;
use super::{
    AccessToken, AuthorizationServer, CODE_LIFETIME, DEFAULT_SCOPE, Grant, JWT_BEARER, Ledger,
    RefreshToken, SCOPES_SUPPORTED, TOKEN_BYTES,
};

impl AuthorizationServer {
    /// The token endpoint: authenticate the client, then run its grant.
    pub(super) fn token(&self, headers: &HeaderMap, body: &[u8]) -> Result<Value, OAuthError> {
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
    pub(super) fn token_proof(
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

    pub(super) fn exchange_code(
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

    pub(super) fn refresh(
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

    pub(super) fn client_credentials(
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
    pub(super) fn jwt_bearer(
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
    pub(super) fn machine_token(
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
    pub(super) fn issue(
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
}

pub(super) fn note_issue(ledger: &mut Ledger, scope: &str, form: &Params) {
    ledger.stats.last_scope = scope.to_owned();
    ledger.stats.last_resource = form.get("resource").cloned().unwrap_or_default();
}

/// The scope to grant for a request: the requested scopes (each known, duplicates dropped) or
/// the default when none are named.
pub(super) fn grant_scope(requested: Option<&str>) -> Result<String, String> {
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
pub(super) fn narrow_scope(requested: &str, original: &str) -> Result<String, String> {
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
pub(super) fn random_token(prefix: &str) -> String {
    let mut bytes = [0_u8; TOKEN_BYTES];
    rand::fill(&mut bytes);
    format!("{prefix}{}", URL_SAFE_NO_PAD.encode(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
