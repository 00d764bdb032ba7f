//! Bounded reads from the authorization server: which URLs may be read (https, plain http only
//! to a loopback address), one GET with no redirects, a deadline and a size cap, and the two
//! documents read: the server's metadata (RFC 8414, else OpenID Connect discovery) for its
//! `jwks_uri`, and the key set itself as raw JSON keys. Knows nothing of tokens.

use std::net::IpAddr;
use std::time::Duration;

use mcpmux::cli_support::http_body::{BodyError, read_body};
use serde::de::DeserializeOwned;
use url::Url;

/// Largest metadata document read (real ones are a few KiB).
pub(crate) const MAX_METADATA_BYTES: usize = 64 * 1024;
/// Largest key set read (a key set of 64 RSA-4096 keys is about 50 KiB).
pub(crate) const MAX_JWKS_BYTES: usize = 256 * 1024;
/// Most keys a key set may list; more is not a key set this gateway trusts.
pub(crate) const MAX_KEYS: usize = 64;

/// Why a document could not be read. Messages name the URL and what was wrong.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FetchError {
    /// Not reached, or no answer in time.
    #[error("{url}: {message}")]
    Network { url: String, message: String },
    /// An answer other than 200.
    #[error("{url}: answered HTTP {status}")]
    Status { url: String, status: u16 },
    /// Past the size cap.
    #[error("{url}: the document is larger than {max} bytes")]
    TooLarge { url: String, max: usize },
    /// Not the JSON document expected.
    #[error("{url}: {message}")]
    Document { url: String, message: String },
}

/// Whether `text` is a URL the gateway may fetch keys from: https, or http to a loopback
/// address (`localhost`, 127.0.0.0/8, `::1`), without credentials or a fragment.
pub(crate) fn checked_url(text: &str) -> Result<Url, String> {
    let url = Url::parse(text.trim()).map_err(|e| format!("not a URL ({e})"))?;
    if !url.username().is_empty() || url.password().is_some() {
        return Err("must not carry credentials".into());
    }
    if url.fragment().is_some() {
        return Err("must not have a fragment".into());
    }
    match url.scheme() {
        "https" => Ok(url),
        "http" if is_loopback(&url) => Ok(url),
        "http" => Err("must be https (plain http only for a loopback address)".into()),
        other => Err(format!("{other}: must be https")),
    }
}

/// Whether the URL's host is a loopback name or address.
pub(crate) fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => IpAddr::V4(ip).is_loopback(),
        Some(url::Host::Ipv6(ip)) => IpAddr::V6(ip).is_loopback(),
        None => false,
    }
}

/// An issuer's metadata, as far as the gateway reads it.
#[derive(serde::Deserialize)]
struct ServerMetadata {
    issuer: String,
    jwks_uri: Option<String>,
}

/// A key set, each key left as JSON to be read one by one (one unreadable key does not spoil
/// the others).
#[derive(serde::Deserialize)]
pub(crate) struct KeySetDocument {
    pub keys: Vec<serde_json::Value>,
}

/// Reads documents with one pooled client.
pub(crate) struct Fetcher {
    client: reqwest::Client,
    timeout: Duration,
}

impl Fetcher {
    /// A client that follows no redirect and gives up after `timeout`.
    pub(crate) fn new(timeout: Duration) -> Result<Self, String> {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            // The whole read's deadline is `json`'s own, body included.
            .connect_timeout(timeout)
            .user_agent(concat!("mcpmux-gateway/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| e.to_string())?;
        Ok(Self { client, timeout })
    }

    /// One GET of a JSON document at most `max` bytes long, read within the deadline.
    pub(crate) async fn json<T: DeserializeOwned>(
        &self,
        url: &Url,
        max: usize,
    ) -> Result<T, FetchError> {
        let read = async {
            let network = |e: reqwest::Error| FetchError::Network {
                url: url.to_string(),
                message: without_url(&e),
            };
            let response = self
                .client
                .get(url.clone())
                .header(reqwest::header::ACCEPT, "application/json")
                .send()
                .await
                .map_err(network)?;
            let status = response.status().as_u16();
            if status != 200 {
                return Err(FetchError::Status {
                    url: url.to_string(),
                    status,
                });
            }
            let body = read_body(response, max, None)
                .await
                .map_err(|error| match error {
                    BodyError::Broken(e) => network(e),
                    BodyError::TooLarge { .. } => FetchError::TooLarge {
                        url: url.to_string(),
                        max,
                    },
                    other => FetchError::Network {
                        url: url.to_string(),
                        message: other.to_string(),
                    },
                })?;
            // serde_json stops at 128 levels of nesting: a deep document is an error, not a
            // stack overflow.
            serde_json::from_slice(&body).map_err(|e| FetchError::Document {
                url: url.to_string(),
                message: format!("not the JSON document expected ({e})"),
            })
        };
        tokio::time::timeout(self.timeout, read)
            .await
            .unwrap_or_else(|_| {
                Err(FetchError::Network {
                    url: url.to_string(),
                    message: format!("no complete answer within {:?}", self.timeout),
                })
            })
    }

    /// The issuer's `jwks_uri`, from the first metadata document that names this issuer:
    /// RFC 8414's, then OpenID Connect's (both well-known forms for an issuer with a path).
    pub(crate) async fn jwks_uri(&self, issuer: &Url) -> Result<Url, FetchError> {
        let mut last = None;
        for url in metadata_urls(issuer) {
            let metadata = match self.json::<ServerMetadata>(&url, MAX_METADATA_BYTES).await {
                Ok(metadata) => metadata,
                Err(error) => {
                    tracing::debug!(%error, "no authorization server metadata here");
                    last = Some(error);
                    continue;
                }
            };
            let document = |message: String| FetchError::Document {
                url: url.to_string(),
                message,
            };
            // RFC 8414 §3.3: the metadata must name the issuer it was asked for.
            if trimmed(&metadata.issuer) != trimmed(issuer.as_str()) {
                return Err(document(format!(
                    "names the issuer {:?}, not {issuer}",
                    crate::access_log::clean(&metadata.issuer)
                )));
            }
            let jwks_uri = metadata
                .jwks_uri
                .ok_or_else(|| document("has no jwks_uri: give the key set's URL".into()))?;
            return checked_url(&jwks_uri).map_err(|reason| document(format!("jwks_uri {reason}")));
        }
        Err(last.unwrap_or_else(|| FetchError::Document {
            url: issuer.to_string(),
            message: "no metadata URL".into(),
        }))
    }
}

/// `reqwest`'s message without the URL it repeats (the caller names it once).
fn without_url(error: &reqwest::Error) -> String {
    let kind = if error.is_timeout() {
        "timed out"
    } else if error.is_connect() {
        "cannot connect"
    } else if error.is_redirect() {
        "redirects, and redirects are not followed"
    } else if error.is_body() || error.is_decode() {
        "the answer broke off"
    } else {
        "request failed"
    };
    let mut source = std::error::Error::source(error);
    let mut detail = String::new();
    while let Some(cause) = source {
        detail = cause.to_string();
        source = cause.source();
    }
    if detail.is_empty() {
        kind.to_string()
    } else {
        format!("{kind}: {detail}")
    }
}

fn trimmed(url: &str) -> &str {
    url.trim_end_matches('/')
}

/// Where an issuer's metadata may be: for `https://as.example/tenant`,
/// `/.well-known/oauth-authorization-server/tenant`, `/.well-known/openid-configuration/tenant`
/// and `/tenant/.well-known/openid-configuration` (the order of the MCP authorization spec).
pub(crate) fn metadata_urls(issuer: &Url) -> Vec<Url> {
    let path = issuer.path().trim_end_matches('/');
    let at = |path: String| {
        let mut url = issuer.clone();
        url.set_path(&path);
        url.set_query(None);
        url
    };
    if path.is_empty() {
        vec![
            at("/.well-known/oauth-authorization-server".into()),
            at("/.well-known/openid-configuration".into()),
        ]
    } else {
        vec![
            at(format!("/.well-known/oauth-authorization-server{path}")),
            at(format!("/.well-known/openid-configuration{path}")),
            at(format!("{path}/.well-known/openid-configuration")),
        ]
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn only_https_or_loopback_http_may_be_fetched() {
        for ok in [
            "https://auth.example.com",
            "http://127.0.0.1:8080/realms/x",
            "http://localhost:9/",
            "http://[::1]:9",
            "http://127.9.9.9",
        ] {
            assert!(checked_url(ok).is_ok(), "{ok}");
        }
        for bad in [
            "http://auth.example.com",
            "http://10.0.0.1",
            "http://localhost.evil.example",
            "ftp://auth.example.com",
            "https://user:pass@auth.example.com",
            "https://auth.example.com/#x",
            "not a url",
        ] {
            assert!(checked_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn metadata_is_looked_for_where_rfc_8414_and_oidc_put_it() {
        let root = Url::parse("https://as.example.com/").unwrap();
        let urls: Vec<String> = metadata_urls(&root).iter().map(Url::to_string).collect();
        assert_eq!(
            urls,
            [
                "https://as.example.com/.well-known/oauth-authorization-server",
                "https://as.example.com/.well-known/openid-configuration",
            ]
        );
        let tenant = Url::parse("https://as.example.com/realms/t/").unwrap();
        let urls: Vec<String> = metadata_urls(&tenant).iter().map(Url::to_string).collect();
        assert_eq!(
            urls,
            [
                "https://as.example.com/.well-known/oauth-authorization-server/realms/t",
                "https://as.example.com/.well-known/openid-configuration/realms/t",
                "https://as.example.com/realms/t/.well-known/openid-configuration",
            ]
        );
    }
}
