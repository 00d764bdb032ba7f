//! The authorization endpoint: the code flow with PKCE S256 only (RFC 7636), the RFC 8707
//! `resource` required, consent given at once; answers go back to the redirect URI with `state`
//! and `iss` (RFC 9207).

use std::time::Instant;

use axum::{
    http::{HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
};
use url::Url;

use super::params::{OAuthError, parse_params, required};
use super::pkce::is_s256_challenge;
use super::registration::redirect_uri_matches;
use super::token::{grant_scope, random_token};
use super::{AuthorizationServer, Grant, PendingCode};

impl AuthorizationServer {
    /// The authorization endpoint. Errors about the client, its redirect URI, PKCE and the
    /// resource are answered here with 400; response_type, grant and scope errors go back to the
    /// client's redirect URI (RFC 6749 §4.1.2.1).
    pub(super) fn authorize(&self, query: &str) -> Result<Response, OAuthError> {
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
}

/// Where an authorization response goes: the client's redirect URI, with `state` and `iss`.
pub(super) struct AuthorizationReply<'a> {
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
