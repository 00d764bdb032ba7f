//! The authentication fields of a remote server entry: `headersHelper` and the `oauth` block.
//!
//! Both dialects share them. Claude Code writes `headersHelper` and `oauth.clientId` /
//! `oauth.callbackPort`; `mcpmux.toml` writes `headers_helper` and `oauth.client_id`; each
//! spelling is accepted in both files so a block copied from one to the other still works.

use std::path::Path;

use serde_json::{Map, Value};

use super::fields::Fields;
use super::{
    AuthSpec, ConfigError, IdentityProvider, OAuthGrant, OAuthSpec, PrivateKey, TokenSource,
};

/// The JWS algorithms a `private_key_jwt` client may sign with.
const ALGORITHMS: &[&str] = &["RS256", "RS384", "RS512", "ES256", "ES384"];

/// The keys of an `oauth` block, as (camelCase, snake_case).
const OAUTH_KEYS: &[(&str, &str)] = &[
    ("clientId", "client_id"),
    ("clientSecret", "client_secret"),
    ("scopes", "scopes"),
    ("scope", "scope"),
    ("callbackPort", "callback_port"),
    ("clientMetadataUrl", "client_metadata_url"),
    ("grant", "grant"),
    ("privateKey", "private_key"),
    ("privateKeyFile", "private_key_file"),
    ("signingAlgorithm", "signing_algorithm"),
    ("assertion", "assertion"),
    ("assertionFile", "assertion_file"),
    ("idToken", "id_token"),
    ("idTokenFile", "id_token_file"),
    ("idp", "idp"),
    ("issuer", "issuer"),
];

/// The grants `oauth.grant` names.
#[derive(Clone, Copy, PartialEq, Eq)]
enum GrantKind {
    AuthorizationCode,
    ClientCredentials,
    JwtBearer,
    Enterprise,
}

/// The authentication fields as written.
#[derive(Debug, Default)]
pub(crate) struct RawAuth {
    /// `headersHelper` / `headers_helper`.
    pub headers_helper: Option<Value>,
    /// `oauth`.
    pub oauth: Option<Value>,
}

impl RawAuth {
    /// Moves the authentication fields out of `map`, in either spelling.
    pub fn take(map: &mut Map<String, Value>) -> Self {
        let mut take = |key: &str| map.remove(key).filter(|value| !value.is_null());
        let headers_helper = take("headersHelper").or_else(|| take("headers_helper"));
        let oauth = take("oauth");
        RawAuth {
            headers_helper,
            oauth,
        }
    }

    /// The fields present, for "does not apply to a stdio server".
    pub fn present(&self) -> Vec<&'static str> {
        let mut present = Vec::new();
        if self.headers_helper.is_some() {
            present.push("headersHelper");
        }
        if self.oauth.is_some() {
            present.push("oauth");
        }
        present
    }
}

impl Fields<'_> {
    /// The checked authentication settings. `strict` refuses unknown `oauth` keys.
    pub fn auth(&self, raw: RawAuth, strict: bool) -> Result<AuthSpec, ConfigError> {
        let RawAuth {
            headers_helper,
            oauth,
        } = raw;
        let headers_helper = match headers_helper {
            Some(value) => {
                let command = self.string("headersHelper", value)?;
                if command.trim().is_empty() {
                    return Err(self.invalid(
                        Some("headersHelper"),
                        "is empty: give a command that prints a JSON object of headers",
                    ));
                }
                Some(command)
            }
            None => None,
        };
        let oauth = match oauth {
            Some(value) => self.oauth(value, strict)?,
            None => OAuthSpec::default(),
        };
        Ok(AuthSpec {
            headers_helper,
            oauth,
        })
    }

    fn oauth(&self, value: Value, strict: bool) -> Result<OAuthSpec, ConfigError> {
        let Value::Object(mut map) = value else {
            return Err(self.invalid(
                Some("oauth"),
                "expected an object like {\"clientId\": \"...\", \"callbackPort\": 8080}",
            ));
        };
        let mut take = |camel: &str, snake: &str| {
            map.remove(camel)
                .or_else(|| map.remove(snake))
                .filter(|value| !value.is_null())
        };
        let client_id = take("clientId", "client_id");
        let client_secret = take("clientSecret", "client_secret");
        let scopes = take("scopes", "scopes");
        let scope = take("scope", "scope");
        let callback_port = take("callbackPort", "callback_port");
        let client_metadata_url = take("clientMetadataUrl", "client_metadata_url");
        let grant = take("grant", "grant");
        let private_key = take("privateKey", "private_key");
        let private_key_file = take("privateKeyFile", "private_key_file");
        let signing_algorithm = take("signingAlgorithm", "signing_algorithm");
        let assertion = take("assertion", "assertion");
        let assertion_file = take("assertionFile", "assertion_file");
        let id_token = take("idToken", "id_token");
        let id_token_file = take("idTokenFile", "id_token_file");
        let idp = take("idp", "idp");
        let issuer = take("issuer", "issuer");
        for key in map.keys() {
            if strict {
                let known: Vec<&str> = OAUTH_KEYS.iter().map(|(_, snake)| *snake).collect();
                return Err(self.invalid(
                    Some(&format!("oauth.{key}")),
                    format!("unknown key: the oauth keys are {}", known.join(", ")),
                ));
            }
            tracing::debug!(server = %self.server(), key = %key, "unknown oauth key ignored");
        }

        let text = |field: &str, value: Option<Value>| -> Result<Option<String>, ConfigError> {
            value
                .map(|value| self.expanded(&format!("oauth.{field}"), value))
                .transpose()
        };
        let client_id = text("clientId", client_id)?;
        let client_secret = text("clientSecret", client_secret)?;
        let scopes = match (scopes, scope) {
            (Some(_), Some(_)) => {
                return Err(self.invalid(
                    Some("oauth.scope"),
                    "give either `scopes` (a list) or `scope` (space-separated), not both",
                ));
            }
            (Some(Value::Array(items)), None) => items
                .into_iter()
                .enumerate()
                .map(|(index, item)| self.string(&format!("oauth.scopes[{index}]"), item))
                .collect::<Result<Vec<_>, _>>()?,
            (Some(other), None) => {
                return Err(self.invalid(
                    Some("oauth.scopes"),
                    format!(
                        "expected a list of scopes, found {}",
                        super::value::kind_name(&other, super::Dialect::Claude)
                    ),
                ));
            }
            (None, Some(value)) => self
                .string("oauth.scope", value)?
                .split_whitespace()
                .map(str::to_owned)
                .collect(),
            (None, None) => Vec::new(),
        };
        let callback_port = match callback_port {
            Some(value) => Some(
                value
                    .as_u64()
                    .and_then(|port| u16::try_from(port).ok())
                    .filter(|port| *port > 0)
                    .ok_or_else(|| {
                        self.invalid(
                            Some("oauth.callbackPort"),
                            format!("{value} is not a port: give a number from 1 to 65535"),
                        )
                    })?,
            ),
            None => None,
        };
        let client_metadata_url = text("clientMetadataUrl", client_metadata_url)?;
        if let Some(url) = &client_metadata_url {
            let https = reqwest::Url::parse(url)
                .ok()
                .is_some_and(|url| url.scheme() == "https" && url.path() != "/");
            if !https {
                return Err(self.invalid(
                    Some("oauth.clientMetadataUrl"),
                    format!("\"{url}\" must be an https:// URL with a path, like \"https://example.com/client.json\""),
                ));
            }
        }

        let issuer = text("issuer", issuer)?;
        if let Some(issuer) = &issuer
            && !reqwest::Url::parse(issuer).is_ok_and(|url| secure_endpoint(&url))
        {
            return Err(self.invalid(
                Some("oauth.issuer"),
                format!("\"{issuer}\" must be an https:// URL (http:// only on loopback), the authorization server's issuer exactly as its metadata gives it"),
            ));
        }

        let kind = match grant
            .map(|value| self.string("oauth.grant", value))
            .transpose()?
        {
            None => None,
            Some(text) => Some(match text.replace('-', "_").as_str() {
                "authorization_code" => GrantKind::AuthorizationCode,
                "client_credentials" => GrantKind::ClientCredentials,
                "jwt_bearer" | "workload_identity" => GrantKind::JwtBearer,
                "enterprise" | "cross_app_access" | "id_jag" => GrantKind::Enterprise,
                _ => {
                    return Err(self.invalid(
                        Some("oauth.grant"),
                        format!("\"{text}\" is not a grant mcpmux uses: write \"authorization_code\" (the browser flow, the default), \"client_credentials\", \"jwt_bearer\" (workload identity) or \"enterprise\" (cross-app access)"),
                    ));
                }
            }),
        };
        let assertion = self.token_source("assertion", assertion, assertion_file)?;
        let id_token = self.token_source("idToken", id_token, id_token_file)?;
        let idp = idp.map(|value| self.identity_provider(value)).transpose()?;
        let kind = kind.or(if assertion.is_some() {
            Some(GrantKind::JwtBearer)
        } else if idp.is_some() {
            Some(GrantKind::Enterprise)
        } else {
            None
        });
        if kind != Some(GrantKind::JwtBearer) && assertion.is_some() {
            return Err(self.invalid(
                Some("oauth.assertion"),
                "a workload assertion is for grant = \"jwt_bearer\"",
            ));
        }
        if kind != Some(GrantKind::Enterprise) && (idp.is_some() || id_token.is_some()) {
            return Err(self.invalid(
                Some("oauth.idp"),
                "`idp` and `idToken` are for grant = \"enterprise\"",
            ));
        }
        let pem = match (private_key, private_key_file) {
            (Some(_), Some(_)) => {
                return Err(self.invalid(
                    Some("oauth.privateKeyFile"),
                    "give either `privateKey` or `privateKeyFile`, not both",
                ));
            }
            (Some(value), None) => Some(self.expanded("oauth.privateKey", value)?),
            (None, Some(value)) => {
                let path = self.expanded("oauth.privateKeyFile", value)?;
                Some(self.read_key(&path)?)
            }
            (None, None) => None,
        };
        let algorithm = text("signingAlgorithm", signing_algorithm)?;
        let private_key = match pem {
            Some(pem) => {
                let algorithm = match algorithm {
                    Some(algorithm) => algorithm.to_ascii_uppercase(),
                    None if pem.contains("EC PRIVATE KEY") => "ES256".to_owned(),
                    None => "RS256".to_owned(),
                };
                if !ALGORITHMS.contains(&algorithm.as_str()) {
                    return Err(self.invalid(
                        Some("oauth.signingAlgorithm"),
                        format!(
                            "\"{algorithm}\" is not supported: use one of {}",
                            ALGORITHMS.join(", ")
                        ),
                    ));
                }
                Some(PrivateKey { pem, algorithm })
            }
            None if algorithm.is_some() => {
                return Err(self.invalid(
                    Some("oauth.signingAlgorithm"),
                    "applies to a private key: add `privateKeyFile` (or remove this field)",
                ));
            }
            None => None,
        };
        let machine = match kind {
            Some(GrantKind::JwtBearer) => {
                let assertion = assertion.ok_or_else(|| {
                    self.invalid(
                        Some("oauth.assertionFile"),
                        "the jwt_bearer grant needs the workload JWT: `assertionFile` (a path the platform keeps fresh) or `assertion`",
                    )
                })?;
                Some(OAuthGrant::JwtBearer { assertion })
            }
            Some(GrantKind::Enterprise) => {
                let idp = idp.ok_or_else(|| {
                    self.invalid(
                        Some("oauth.idp"),
                        "the enterprise grant needs the identity provider: idp = { issuer, tokenEndpoint, clientId }",
                    )
                })?;
                let id_token = id_token.ok_or_else(|| {
                    self.invalid(
                        Some("oauth.idTokenFile"),
                        "the enterprise grant needs the user's ID token: `idTokenFile` or `idToken`",
                    )
                })?;
                if client_id.is_none() {
                    return Err(self.invalid(
                        Some("oauth.clientId"),
                        "the enterprise grant needs this client's id at the server's authorization server",
                    ));
                }
                Some(OAuthGrant::Enterprise { idp, id_token })
            }
            _ => None,
        };
        let grant = if let Some(grant) = machine {
            if private_key.is_some() {
                return Err(self.invalid(
                    Some("oauth.privateKeyFile"),
                    "a private key is for the client_credentials grant",
                ));
            }
            grant
        } else if kind == Some(GrantKind::ClientCredentials)
            || (kind.is_none() && private_key.is_some())
        {
            if client_id.is_none() {
                return Err(self.invalid(
                    Some("oauth.clientId"),
                    "the client_credentials grant needs the client id the authorization server issued",
                ));
            }
            if client_secret.is_none() && private_key.is_none() {
                return Err(self.invalid(
                    Some("oauth.clientSecret"),
                    "the client_credentials grant needs `clientSecret` or `privateKeyFile`",
                ));
            }
            OAuthGrant::ClientCredentials { private_key }
        } else {
            if private_key.is_some() {
                return Err(self.invalid(
                    Some("oauth.privateKeyFile"),
                    "a private key is for the client_credentials grant: set grant = \"client_credentials\"",
                ));
            }
            OAuthGrant::AuthorizationCode
        };
        if client_secret.is_some() && client_id.is_none() {
            return Err(self.invalid(
                Some("oauth.clientSecret"),
                "a client secret needs the `clientId` it belongs to",
            ));
        }
        Ok(OAuthSpec {
            client_id,
            client_secret,
            scopes,
            callback_port,
            client_metadata_url,
            grant,
            issuer,
        })
    }

    /// A token given inline (`field`) or as a file (`fieldFile`), not both.
    fn token_source(
        &self,
        field: &str,
        inline: Option<Value>,
        file: Option<Value>,
    ) -> Result<Option<TokenSource>, ConfigError> {
        match (inline, file) {
            (Some(_), Some(_)) => Err(self.invalid(
                Some(&format!("oauth.{field}File")),
                format!("give either `{field}` or `{field}File`, not both"),
            )),
            (Some(value), None) => Ok(Some(TokenSource::Inline(
                self.expanded(&format!("oauth.{field}"), value)?,
            ))),
            (None, Some(value)) => {
                let path = self.expanded(&format!("oauth.{field}File"), value)?;
                Ok(Some(TokenSource::File(
                    self.relative_to_file(Path::new(&path)),
                )))
            }
            (None, None) => Ok(None),
        }
    }

    /// `oauth.idp`: the enterprise identity provider.
    fn identity_provider(&self, value: Value) -> Result<IdentityProvider, ConfigError> {
        let Value::Object(mut map) = value else {
            return Err(self.invalid(
                Some("oauth.idp"),
                "expected an object like {\"issuer\": \"https://idp.example\", \"tokenEndpoint\": \"https://idp.example/token\", \"clientId\": \"...\"}",
            ));
        };
        let mut field = |camel: &str, snake: &str| -> Result<Option<String>, ConfigError> {
            map.remove(camel)
                .or_else(|| map.remove(snake))
                .filter(|value| !value.is_null())
                .map(|value| self.expanded(&format!("oauth.idp.{camel}"), value))
                .transpose()
        };
        let issuer = field("issuer", "issuer")?;
        let token_endpoint = field("tokenEndpoint", "token_endpoint")?;
        let client_id = field("clientId", "client_id")?;
        let client_secret = field("clientSecret", "client_secret")?;
        if let Some(key) = map.keys().next() {
            return Err(self.invalid(
                Some(&format!("oauth.idp.{key}")),
                "unknown key: the idp keys are issuer, tokenEndpoint, clientId, clientSecret",
            ));
        }
        let required = |value: Option<String>, name: &str| {
            value.ok_or_else(|| {
                self.invalid(
                    Some(&format!("oauth.idp.{name}")),
                    "is required for the enterprise grant",
                )
            })
        };
        Ok(IdentityProvider {
            issuer: required(issuer, "issuer")?,
            token_endpoint: required(token_endpoint, "tokenEndpoint")?,
            client_id: required(client_id, "clientId")?,
            client_secret,
        })
    }

    /// Reads a PEM key file; relative paths are relative to the config file's folder.
    fn read_key(&self, path: &str) -> Result<String, ConfigError> {
        let path = self.relative_to_file(Path::new(path));
        std::fs::read_to_string(&path).map_err(|error| {
            self.invalid(
                Some("oauth.privateKeyFile"),
                format!("cannot read {}: {error}", path.display()),
            )
        })
    }
}

/// Whether credentials may be sent to `url`: https, or plain http to a loopback address (a
/// local authorization server or a test) that never crosses a network.
pub(crate) fn secure_endpoint(url: &reqwest::Url) -> bool {
    match url.scheme() {
        "https" => true,
        "http" => match url.host() {
            Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
            Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
            Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
            None => false,
        },
        _ => false,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn both_spellings_are_taken() {
        let mut map = Map::new();
        map.insert("headers_helper".into(), Value::from("x"));
        map.insert("oauth".into(), serde_json::json!({}));
        let raw = RawAuth::take(&mut map);
        assert_eq!(raw.present(), ["headersHelper", "oauth"]);
        assert!(map.is_empty());
    }
}
