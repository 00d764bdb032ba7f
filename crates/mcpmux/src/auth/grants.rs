//! The token exchanges rmcp's authorization manager does not run itself: the RFC 7523
//! JWT-bearer grant with a workload's own JWT (workload identity federation, SEP-1933), and
//! enterprise-managed authorization (SEP-990) through rmcp's `enterprise` module.

use oauth2::ClientSecret;
use rmcp::transport::auth::enterprise::{
    EmaAuthorizationServer, EmaClientAuthentication, EmaExchangeRequest,
};
use rmcp::transport::auth::{
    AuthError, AuthorizationMetadata, OAuthTokenResponse, default_oauth_http_client,
};

use super::dpop::Dpop;
use crate::config::{IdentityProvider, secure_endpoint};

use crate::http_body::{BodyError, read_body};

/// Largest token endpoint answer read: a token answer is a few KiB.
const MAX_TOKEN_ANSWER_BYTES: usize = 1024 * 1024;

/// The JWT-bearer grant type (RFC 7523 §2.1).
const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";

/// The authorization server discovery found, checked against `oauth.issuer` when the config
/// pins one: credentials go only to the issuer the person named.
pub(super) fn check_issuer(
    metadata: &AuthorizationMetadata,
    pinned: Option<&str>,
) -> Result<(), AuthError> {
    let Some(pinned) = pinned else {
        return Ok(());
    };
    let found = metadata.issuer.as_deref();
    if found.map(|issuer| issuer.trim_end_matches('/')) == Some(pinned.trim_end_matches('/')) {
        return Ok(());
    }
    Err(AuthError::MetadataError(format!(
        "the authorization server discovery found is {}, but `oauth.issuer` pins {pinned}: no \
         credentials were sent; check the server's URL, or update the pin if the server moved",
        found.unwrap_or("one whose metadata names no issuer")
    )))
}

/// A grant without a person sends a long-lived secret (client secret, signed assertion,
/// workload or ID token) to `endpoint`: only over https, or plain http on loopback.
pub(super) fn check_token_endpoint(endpoint: &str, what: &str) -> Result<(), AuthError> {
    let url = reqwest::Url::parse(endpoint).map_err(|e| {
        AuthError::MetadataError(format!("{what} `{endpoint}` is not a valid URL: {e}"))
    })?;
    if secure_endpoint(&url) {
        return Ok(());
    }
    Err(AuthError::MetadataError(format!(
        "{what} `{endpoint}` is not https: mcpmux sends machine credentials only over https \
         (plain http only to a loopback address); the authorization server must publish an \
         https token endpoint"
    )))
}

/// Exchanges a workload JWT for an access token at the authorization server.
///
/// A refusal (`invalid_grant`, `invalid_scope`, `unauthorized_client`) is returned as is, not
/// retried and not answered with another grant: the workload's identity is what was refused.
/// With `dpop`, the request carries a proof (the token comes back bound to its key), and a
/// `use_dpop_nonce` refusal is answered once with the nonce it hands out.
pub(super) async fn jwt_bearer(
    metadata: &AuthorizationMetadata,
    resource: &str,
    client_id: Option<&str>,
    client_secret: Option<&str>,
    scopes: &[String],
    assertion: &str,
    dpop: Option<&Dpop>,
) -> Result<OAuthTokenResponse, AuthError> {
    let mut form = oauth2::url::form_urlencoded::Serializer::new(String::new());
    form.append_pair("grant_type", JWT_BEARER);
    form.append_pair("assertion", assertion);
    form.append_pair("resource", resource);
    if !scopes.is_empty() {
        form.append_pair("scope", &scopes.join(" "));
    }
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(std::time::Duration::from_secs(30))
        .build()?;
    let basic = match (client_id, client_secret) {
        (Some(id), Some(secret)) => Some((id, secret)),
        (Some(id), None) => {
            form.append_pair("client_id", id);
            None
        }
        (None, _) => None,
    };
    let form = form.finish();
    let mut nonce_sent = false;
    loop {
        let mut request = client
            .post(&metadata.token_endpoint)
            .header("accept", "application/json")
            .header("content-type", "application/x-www-form-urlencoded");
        if let Some((id, secret)) = basic {
            request = request.basic_auth(id, Some(secret));
        }
        if let Some(dpop) = dpop {
            request = request.header("dpop", dpop.token_proof(&metadata.token_endpoint)?);
        }
        let response = request.body(form.clone()).send().await?;
        let status = response.status();
        let nonce = response
            .headers()
            .get("dpop-nonce")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let body = read_body(response, MAX_TOKEN_ANSWER_BYTES, None)
            .await
            .map_err(|e| match e {
                BodyError::Broken(e) => AuthError::from(e),
                other => AuthError::InternalError(format!("the token endpoint: {other}")),
            })?;
        let body = String::from_utf8_lossy(&body);
        if let (Some(dpop), Some(nonce)) = (dpop, nonce) {
            dpop.set_token_nonce(nonce);
            if status == reqwest::StatusCode::BAD_REQUEST
                && body.contains("use_dpop_nonce")
                && !nonce_sent
            {
                nonce_sent = true;
                continue;
            }
        }
        return token_response(status, &body);
    }
}

/// Reads a token endpoint's answer: the token, or its OAuth error in words.
fn token_response(
    status: reqwest::StatusCode,
    body: &str,
) -> Result<OAuthTokenResponse, AuthError> {
    if !status.is_success() {
        let error: serde_json::Value = serde_json::from_str(body).unwrap_or_default();
        let code = error["error"].as_str().unwrap_or("error");
        let description = error["error_description"].as_str().unwrap_or(body);
        return Err(AuthError::TokenExchangeFailed(format!(
            "the token endpoint answered {status}: {code}: {description}"
        )));
    }
    serde_json::from_str(body).map_err(|e| {
        AuthError::TokenExchangeFailed(format!("the token endpoint's answer is not a token: {e}"))
    })
}

/// Enterprise-managed authorization: the ID token becomes an ID-JAG at the identity provider,
/// then an access token at the resource's authorization server.
pub(super) async fn enterprise(
    metadata: &AuthorizationMetadata,
    resource: &str,
    client_id: &str,
    client_secret: Option<&str>,
    scopes: &[String],
    idp: &IdentityProvider,
    id_token: &str,
) -> Result<OAuthTokenResponse, AuthError> {
    let issuer = metadata.issuer.clone().ok_or_else(|| {
        AuthError::MetadataError(
            "the authorization server's metadata names no issuer, which the ID-JAG is bound to"
                .into(),
        )
    })?;
    let mut identity_provider =
        EmaAuthorizationServer::new(&idp.issuer, &idp.token_endpoint, &idp.client_id);
    if let Some(secret) = &idp.client_secret {
        identity_provider = identity_provider.with_client_authentication(
            EmaClientAuthentication::ClientSecretBasic(ClientSecret::new(secret.clone())),
        );
    }
    let mut resource_server =
        EmaAuthorizationServer::new(issuer, &metadata.token_endpoint, client_id);
    if let Some(secret) = client_secret {
        let secret = ClientSecret::new(secret.to_owned());
        let post_only = metadata
            .additional_fields
            .get("token_endpoint_auth_methods_supported")
            .and_then(|methods| methods.as_array())
            .is_some_and(|methods| {
                methods.iter().any(|m| m == "client_secret_post")
                    && !methods.iter().any(|m| m == "client_secret_basic")
            });
        resource_server = resource_server.with_client_authentication(if post_only {
            EmaClientAuthentication::ClientSecretPost(secret)
        } else {
            EmaClientAuthentication::ClientSecretBasic(secret)
        });
    }
    let http = default_oauth_http_client()?;
    let token = EmaExchangeRequest::new_with_id_token(
        identity_provider,
        resource_server,
        resource,
        id_token,
    )
    .with_scopes(scopes.iter().cloned())
    .exchange(&http, &http)
    .await
    .map_err(|e| {
        AuthError::TokenExchangeFailed(format!("enterprise-managed authorization: {e}"))
    })?;
    // rmcp's token response type is built the way a token endpoint's answer is read.
    let mut answer = serde_json::json!({
        "access_token": token.access_token.secret(),
        "token_type": "Bearer",
    });
    if let Some(expires_in) = token.expires_in {
        answer["expires_in"] = expires_in.as_secs().into();
    }
    if !token.scopes.is_empty() {
        let mut scopes: Vec<_> = token.scopes.into_iter().collect();
        scopes.sort();
        answer["scope"] = scopes.join(" ").into();
    }
    serde_json::from_value(answer)
        .map_err(|e| AuthError::InternalError(format!("cannot record the token: {e}")))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn machine_credentials_go_only_to_https_or_loopback() {
        for allowed in [
            "https://auth.example/token",
            "http://127.0.0.1:8080/token",
            "http://127.3.2.1/token",
            "http://[::1]:9/token",
            "http://localhost:9/token",
        ] {
            check_token_endpoint(allowed, "the token endpoint").unwrap();
        }
        for refused in [
            "http://auth.example/token",
            "http://10.0.0.1/token",
            "http://localhost.evil.example/token",
            "ftp://auth.example/token",
        ] {
            let error = check_token_endpoint(refused, "the token endpoint")
                .unwrap_err()
                .to_string();
            assert!(
                error.contains(refused) && error.contains("https"),
                "{error}"
            );
        }
    }

    #[test]
    fn a_pinned_issuer_refuses_any_other() {
        let metadata: AuthorizationMetadata = serde_json::from_value(serde_json::json!({
            "issuer": "https://auth.example/",
            "authorization_endpoint": "https://auth.example/authorize",
            "token_endpoint": "https://auth.example/token",
        }))
        .unwrap();
        check_issuer(&metadata, None).unwrap();
        check_issuer(&metadata, Some("https://auth.example")).unwrap();
        let error = check_issuer(&metadata, Some("https://other.example"))
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("https://other.example") && error.contains("https://auth.example/"),
            "{error}"
        );
        assert!(error.contains("oauth.issuer"), "{error}");
    }
}
