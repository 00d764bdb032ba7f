//! The authentication fields of a remote server entry: `headersHelper` and the `oauth` block.
//!
//! Both dialects share them. Claude Code writes `headersHelper` and `oauth.clientId` /
//! `oauth.callbackPort`; `mcplex.toml` writes `headers_helper` and `oauth.client_id`; each
//! spelling is accepted in both files so a block copied from one to the other still works.

use std::path::Path;

use serde_json::{Map, Value};

use super::entry::Fields;
use super::{AuthSpec, ConfigError, OAuthGrant, OAuthSpec, PrivateKey};

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
];

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
                        super::entry::kind_name(&other, super::Dialect::Claude)
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

        let grant = match grant
            .map(|value| self.string("oauth.grant", value))
            .transpose()?
        {
            None => None,
            Some(text) => Some(match text.as_str() {
                "authorization_code" | "authorization-code" => false,
                "client_credentials" | "client-credentials" => true,
                _ => {
                    return Err(self.invalid(
                        Some("oauth.grant"),
                        format!("\"{text}\" is not a grant mcplex uses: write \"authorization_code\" (the browser flow, the default) or \"client_credentials\""),
                    ));
                }
            }),
        };
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
        let client_credentials = grant.unwrap_or(private_key.is_some());
        let grant = if client_credentials {
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
