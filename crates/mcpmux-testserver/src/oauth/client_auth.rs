//! Client authentication at the token endpoint by the method the client registered: none,
//! `client_secret_basic` (RFC 6749 §2.3.1, form-decoded) or `client_secret_post`.

use axum::http::{HeaderMap, header};
use base64::{Engine, engine::general_purpose::STANDARD};

use super::params::{OAuthError, Params};
use super::{AuthMethod, Ledger};

/// Authenticate the client of a token request by the method it registered; returns its id.
pub(super) fn authenticate(
    ledger: &Ledger,
    headers: &HeaderMap,
    form: &Params,
) -> Result<String, OAuthError> {
    let basic = basic_credentials(headers)?;
    let body_secret = form.get("client_secret");
    let (client_id, secret, used) = match (basic, body_secret) {
        (Some(_), Some(_)) => {
            return Err(OAuthError::bad(
                "invalid_request",
                "use one client authentication method, not both Basic and client_secret",
            ));
        }
        (Some((id, secret)), None) => {
            if form.get("client_id").is_some_and(|body_id| *body_id != id) {
                return Err(OAuthError::invalid_client(
                    "client_id in the body differs from the Basic credentials",
                ));
            }
            (id, Some(secret), AuthMethod::ClientSecretBasic)
        }
        (None, secret) => {
            let Some(id) = form.get("client_id") else {
                return Err(OAuthError::invalid_client("no client authentication given"));
            };
            let used = if secret.is_some() {
                AuthMethod::ClientSecretPost
            } else {
                AuthMethod::None
            };
            (id.clone(), secret.cloned(), used)
        }
    };
    let Some(client) = ledger.clients.get(&client_id) else {
        return Err(OAuthError::invalid_client(format!(
            "unknown client `{client_id}`"
        )));
    };
    if !client.accepts(used) {
        let registered = client.method.map_or(
            "client_secret_basic or client_secret_post",
            AuthMethod::as_str,
        );
        return Err(OAuthError::invalid_client(format!(
            "client `{client_id}` authenticates with {registered}, not {}",
            used.as_str()
        )));
    }
    match (&client.secret, secret) {
        (None, None) => Ok(client_id),
        (Some(expected), Some(given)) if *expected == given => Ok(client_id),
        _ => Err(OAuthError::invalid_client(format!(
            "wrong client secret for `{client_id}`"
        ))),
    }
}

/// HTTP Basic client credentials (RFC 6749 §2.3.1: id and secret form-urlencoded, then Basic).
/// `Ok(None)` when the request carries no Basic authorization.
pub(super) fn basic_credentials(
    headers: &HeaderMap,
) -> Result<Option<(String, String)>, OAuthError> {
    let Some(value) = headers.get(header::AUTHORIZATION) else {
        return Ok(None);
    };
    let Some((scheme, encoded)) = value.to_str().ok().and_then(|value| value.split_once(' '))
    else {
        return Ok(None);
    };
    if !scheme.eq_ignore_ascii_case("basic") {
        return Ok(None);
    }
    let malformed = || OAuthError::invalid_client("malformed Basic credentials");
    let decoded = STANDARD.decode(encoded.trim()).map_err(|_| malformed())?;
    let decoded = String::from_utf8(decoded).map_err(|_| malformed())?;
    let (id, secret) = decoded.split_once(':').ok_or_else(malformed)?;
    let id = form_decode(id).ok_or_else(malformed)?;
    let secret = form_decode(secret).ok_or_else(malformed)?;
    Ok(Some((id, secret)))
}

/// Decode one `application/x-www-form-urlencoded` component: `+` is a space, `%XX` a byte.
pub(super) fn form_decode(component: &str) -> Option<String> {
    let bytes = component.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while let Some(&byte) = bytes.get(index) {
        match byte {
            b'+' => decoded.push(b' '),
            b'%' => {
                let hex = bytes.get(index + 1..index + 3)?;
                let hex = std::str::from_utf8(hex).ok()?;
                decoded.push(u8::from_str_radix(hex, 16).ok()?);
                index += 2;
            }
            other => decoded.push(other),
        }
        index += 1;
    }
    String::from_utf8(decoded).ok()
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    #[test]
    fn basic_credentials_are_form_decoded() {
        let mut headers = HeaderMap::new();
        let encoded = STANDARD.encode("my%20id:s%3Acr+t");
        let value = HeaderValue::from_str(&format!("Basic {encoded}"));
        assert!(value.is_ok());
        if let Ok(value) = value {
            headers.insert(header::AUTHORIZATION, value);
        }
        let credentials = basic_credentials(&headers).ok().flatten();
        assert_eq!(credentials, Some(("my id".to_owned(), "s:cr t".to_owned())));
        assert_eq!(form_decode("%zz"), None);
        assert_eq!(form_decode("50%"), None);
    }
}
