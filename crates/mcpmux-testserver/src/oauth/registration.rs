//! Dynamic client registration (RFC 7591): the metadata a client may register, its redirect
//! URIs (loopback `http` matched whatever the port, RFC 8252 §7.3) and grants.

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value, json};
use url::{Host, Url};

use super::params::OAuthError;
use super::token::{grant_scope, random_token};
use super::{AuthMethod, AuthorizationServer, Client, Grant, SCOPES_SUPPORTED};

impl AuthorizationServer {
    /// RFC 7591 dynamic client registration: the answer echoes the metadata with the issued
    /// credentials and the defaults filled in.
    pub(super) fn register(&self, body: &[u8]) -> Result<Value, OAuthError> {
        let Ok(Value::Object(mut metadata)) = serde_json::from_slice::<Value>(body) else {
            return Err(OAuthError::bad(
                "invalid_client_metadata",
                "the body must be a JSON object",
            ));
        };
        let redirect_uris = registered_redirect_uris(&metadata)?;
        let method = match metadata.get("token_endpoint_auth_method") {
            // RFC 7591 §2: the default is client_secret_basic.
            None => AuthMethod::ClientSecretBasic,
            Some(value) => value.as_str().and_then(AuthMethod::parse).ok_or_else(|| {
                OAuthError::bad(
                    "invalid_client_metadata",
                    "token_endpoint_auth_method must be none, client_secret_basic or client_secret_post",
                )
            })?,
        };
        let grants = registered_grants(&metadata)?;
        if let Some(response_types) = metadata.get("response_types") {
            let only_code = response_types
                .as_array()
                .is_some_and(|types| !types.is_empty() && types.iter().all(|t| t == "code"));
            if !only_code {
                return Err(OAuthError::bad(
                    "invalid_client_metadata",
                    "response_types may only be [\"code\"]",
                ));
            }
        }
        if let Some(scope) = metadata.get("scope") {
            let known = scope
                .as_str()
                .is_some_and(|scope| grant_scope(Some(scope)).is_ok());
            if !known {
                return Err(OAuthError::bad(
                    "invalid_client_metadata",
                    format!("scope must be a space-separated subset of {SCOPES_SUPPORTED:?}"),
                ));
            }
        }

        let client_id = random_token("client_");
        let secret = (method != AuthMethod::None).then(|| random_token("secret_"));
        let issued_at = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.as_secs());
        metadata.insert("client_id".into(), json!(client_id));
        metadata.insert("client_id_issued_at".into(), json!(issued_at));
        metadata.insert("token_endpoint_auth_method".into(), json!(method.as_str()));
        metadata.insert(
            "grant_types".into(),
            json!(
                grants
                    .iter()
                    .map(|grant| grant.as_str())
                    .collect::<Vec<_>>()
            ),
        );
        metadata.insert("response_types".into(), json!(["code"]));
        if let Some(secret) = &secret {
            metadata.insert("client_secret".into(), json!(secret));
            metadata.insert("client_secret_expires_at".into(), json!(0));
        }

        let mut ledger = self.lock();
        ledger.clients.insert(
            client_id,
            Client {
                secret,
                method: Some(method),
                redirect_uris,
                grants,
            },
        );
        ledger.stats.registrations += 1;
        Ok(Value::Object(metadata))
    }
}

/// The redirect URIs of a registration request: a non-empty array of absolute URLs without
/// fragments; plain `http` only on loopback (RFC 8252 §7.3, OAuth 2.1 §2.3.1).
pub(super) fn registered_redirect_uris(
    metadata: &Map<String, Value>,
) -> Result<Vec<String>, OAuthError> {
    let invalid = |message: String| OAuthError::bad("invalid_redirect_uri", message);
    let uris = metadata
        .get("redirect_uris")
        .and_then(Value::as_array)
        .filter(|uris| !uris.is_empty())
        .and_then(|uris| {
            uris.iter()
                .map(|uri| uri.as_str().map(str::to_owned))
                .collect::<Option<Vec<_>>>()
        })
        .ok_or_else(|| invalid("redirect_uris must be a non-empty array of strings".to_owned()))?;
    for uri in &uris {
        let url = Url::parse(uri).map_err(|error| invalid(format!("`{uri}`: {error}")))?;
        if url.fragment().is_some() {
            return Err(invalid(format!("`{uri}` has a fragment")));
        }
        if url.scheme() == "http" && !is_loopback_http(&url) {
            return Err(invalid(format!(
                "`{uri}` is plain http on a non-loopback host; use https or a loopback address"
            )));
        }
    }
    Ok(uris)
}

/// The grant types of a registration request; by default authorization_code and refresh_token.
pub(super) fn registered_grants(metadata: &Map<String, Value>) -> Result<Vec<Grant>, OAuthError> {
    let Some(value) = metadata.get("grant_types") else {
        return Ok(vec![Grant::AuthorizationCode, Grant::RefreshToken]);
    };
    let invalid = || {
        OAuthError::bad(
            "invalid_client_metadata",
            "grant_types must be a non-empty array of authorization_code and refresh_token \
             (client_credentials is for --oauth-client clients)",
        )
    };
    let names = value
        .as_array()
        .filter(|names| !names.is_empty())
        .ok_or_else(invalid)?;
    let mut grants = Vec::new();
    for name in names {
        let grant = match name.as_str() {
            Some("authorization_code") => Grant::AuthorizationCode,
            Some("refresh_token") => Grant::RefreshToken,
            _ => return Err(invalid()),
        };
        if !grants.contains(&grant) {
            grants.push(grant);
        }
    }
    Ok(grants)
}

/// Whether a requested redirect URI matches a registered one: exactly, or, for loopback `http`
/// URIs, in everything but the port (RFC 8252 §7.3: native apps pick a free port at run time).
pub(super) fn redirect_uri_matches(registered: &str, requested: &str) -> bool {
    if registered == requested {
        return true;
    }
    let (Ok(registered), Ok(requested)) = (Url::parse(registered), Url::parse(requested)) else {
        return false;
    };
    is_loopback_http(&registered)
        && requested.scheme() == registered.scheme()
        && requested.host() == registered.host()
        && requested.username() == registered.username()
        && requested.password() == registered.password()
        && requested.path() == registered.path()
        && requested.query() == registered.query()
        && requested.fragment().is_none()
        && registered.fragment().is_none()
}

pub(super) fn is_loopback_http(url: &Url) -> bool {
    url.scheme() == "http"
        && match url.host() {
            Some(Host::Ipv4(ip)) => ip.is_loopback(),
            Some(Host::Ipv6(ip)) => ip.is_loopback(),
            Some(Host::Domain(domain)) => domain.eq_ignore_ascii_case("localhost"),
            None => false,
        }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_redirect_uris_match_whatever_the_port() {
        let registered = "http://127.0.0.1:4000/callback";
        assert!(redirect_uri_matches(
            registered,
            "http://127.0.0.1:4000/callback"
        ));
        assert!(redirect_uri_matches(
            registered,
            "http://127.0.0.1:51234/callback"
        ));
        assert!(redirect_uri_matches(
            registered,
            "http://127.0.0.1/callback"
        ));
        assert!(redirect_uri_matches(
            "http://localhost/cb?x=1",
            "http://localhost:9/cb?x=1"
        ));
        assert!(redirect_uri_matches(
            "http://[::1]:1/cb",
            "http://[::1]:2/cb"
        ));
    }

    #[test]
    fn redirect_uris_differing_elsewhere_do_not_match() {
        let registered = "http://127.0.0.1:4000/callback";
        assert!(!redirect_uri_matches(
            registered,
            "http://127.0.0.1:4000/other"
        ));
        assert!(!redirect_uri_matches(
            registered,
            "http://localhost:4000/callback"
        ));
        assert!(!redirect_uri_matches(
            registered,
            "https://127.0.0.1:4000/callback"
        ));
        assert!(!redirect_uri_matches(
            registered,
            "http://127.0.0.1:4000/callback?x=1"
        ));
        assert!(!redirect_uri_matches(
            registered,
            "http://127.0.0.1:5/callback#frag"
        ));
        assert!(!redirect_uri_matches(registered, "not a url"));
        // Not loopback: the port counts.
        assert!(!redirect_uri_matches(
            "https://example.com:443/cb",
            "https://example.com:8443/cb"
        ));
        assert!(redirect_uri_matches(
            "https://example.com/cb",
            "https://example.com/cb"
        ));
    }
}
