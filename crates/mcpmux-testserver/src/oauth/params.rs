//! The wire format shared by the endpoints: query and form parameters (RFC 6749 §3.1), the
//! bearer token of a request, and the RFC 6749 §5.2 error answer that no cache may keep.

use std::collections::HashMap;

use axum::{
    Json,
    http::{HeaderMap, HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
};
use serde_json::{Value, json};

/// An RFC 6749 §5.2 error answer.
#[derive(Debug)]
pub(super) struct OAuthError {
    pub(super) status: StatusCode,
    pub(super) code: &'static str,
    pub(super) description: String,
    /// Sent as `DPoP-Nonce` with a `use_dpop_nonce` answer.
    pub(super) dpop_nonce: Option<String>,
}

impl OAuthError {
    pub(super) fn bad(code: &'static str, description: impl Into<String>) -> Self {
        Self {
            status: StatusCode::BAD_REQUEST,
            code,
            description: description.into(),
            dpop_nonce: None,
        }
    }

    pub(super) fn invalid_grant(description: &str) -> Self {
        Self::bad("invalid_grant", description)
    }

    pub(super) fn invalid_client(description: impl Into<String>) -> Self {
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
pub(super) fn no_store(status: StatusCode, body: Value) -> Response {
    let mut response = (status, Json(body)).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
    response
}

pub(super) type Params = HashMap<String, String>;

/// Parse a query string or form body. Empty values count as absent (RFC 6749 §3.1) and a
/// parameter given twice is an error (RFC 6749 §3.1, §3.2).
pub(super) fn parse_params(input: &[u8]) -> Result<Params, OAuthError> {
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

pub(super) fn required<'a>(params: &'a Params, name: &str) -> Result<&'a String, OAuthError> {
    params
        .get(name)
        .ok_or_else(|| OAuthError::bad("invalid_request", format!("{name} is required")))
}

/// The token of an `Authorization: Bearer TOKEN` header.
pub(super) fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

#[cfg(test)]
mod tests {
    use super::*;

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
