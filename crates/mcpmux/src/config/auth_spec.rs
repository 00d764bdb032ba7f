//! How mcpmux authenticates to a remote server, as configured and validated: a headers helper,
//! OAuth (its grant, token source, identity provider, private key), each redacting its secrets
//! in `Debug`. Part of a `ServerSpec` (spec.rs); knows nothing of how a login is run.

use std::fmt;
use std::path::PathBuf;

/// How mcpmux authenticates to a remote server, beyond static `headers`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct AuthSpec {
    /// A shell command whose stdout, a JSON object of strings, supplies headers; run before
    /// every connection attempt so short-lived tokens stay fresh (`headersHelper`).
    pub headers_helper: Option<String>,
    /// OAuth 2.1 client settings (`oauth`); every field is optional, and a server that answers
    /// 401 gets the discovery-driven defaults.
    pub oauth: OAuthSpec,
}

/// OAuth 2.1 client settings of one server.
#[derive(Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct OAuthSpec {
    /// A client id registered out of band (`clientId`); else a Client ID Metadata Document,
    /// else dynamic registration.
    pub client_id: Option<String>,
    /// The secret of that client (`clientSecret`), for confidential clients.
    pub client_secret: Option<String>,
    /// Scopes to request (`scopes`); empty: the challenge's, else the resource's
    /// `scopes_supported`, else none.
    pub scopes: Vec<String>,
    /// A fixed port for the loopback redirect listener (`callbackPort`), for authorization
    /// servers that register exact redirect URIs; else any free port.
    pub callback_port: Option<u16>,
    /// HTTPS URL of this client's metadata document (`clientMetadataUrl`, SEP-991).
    pub client_metadata_url: Option<String>,
    /// Which grant obtains tokens (`grant`).
    pub grant: OAuthGrant,
    /// The authorization server's issuer this server must use (`issuer`): discovery that
    /// finds another one fails instead of sending credentials there.
    pub issuer: Option<String>,
}

/// The OAuth grant a server's tokens come from.
#[derive(Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum OAuthGrant {
    /// A person authorizes in a browser (`mcpmux auth login`); tokens are refreshed after.
    #[default]
    AuthorizationCode,
    /// Machine-to-machine: `client_credentials` with the client secret (basic or post, as the
    /// authorization server supports), or a signed JWT (`private_key_jwt`).
    ClientCredentials {
        /// A PEM private key signing the client assertion; `None`: the client secret is used.
        private_key: Option<PrivateKey>,
    },
    /// Workload identity federation (RFC 7523 JWT bearer): a JWT the platform issues to this
    /// workload (`assertion` / `assertionFile`) is exchanged for an access token.
    JwtBearer {
        /// Where the workload JWT comes from; a file is read again for every exchange, as
        /// platforms rotate it in place.
        assertion: TokenSource,
    },
    /// Enterprise-managed authorization (cross-app access, SEP-990): the user's ID token from
    /// the enterprise identity provider becomes an ID-JAG there (RFC 8693 token exchange),
    /// then an access token at the server's authorization server (RFC 7523 JWT bearer).
    Enterprise {
        /// The enterprise identity provider (`idp`).
        idp: IdentityProvider,
        /// The user's ID token for that provider (`idToken` / `idTokenFile`).
        id_token: TokenSource,
    },
}

/// A secret token given in the config (usually as `${VAR}`) or in a file.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TokenSource {
    /// The token itself.
    Inline(String),
    /// A file holding it (surrounding whitespace ignored).
    File(PathBuf),
}

impl TokenSource {
    /// The token now: the inline text, or the file's current content.
    pub fn read(&self) -> std::io::Result<String> {
        match self {
            TokenSource::Inline(token) => Ok(token.clone()),
            TokenSource::File(path) => Ok(std::fs::read_to_string(path)?.trim().to_owned()),
        }
    }
}

impl fmt::Debug for TokenSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TokenSource::Inline(_) => f.write_str("Inline(<redacted>)"),
            TokenSource::File(path) => f.debug_tuple("File").field(path).finish(),
        }
    }
}

/// An enterprise identity provider where this client is registered.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct IdentityProvider {
    /// Its issuer (`issuer`).
    pub issuer: String,
    /// Its token endpoint (`tokenEndpoint`).
    pub token_endpoint: String,
    /// This client's id there (`clientId`).
    pub client_id: String,
    /// This client's secret there (`clientSecret`); `None` for a public client.
    pub client_secret: Option<String>,
}

impl fmt::Debug for IdentityProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IdentityProvider")
            .field("issuer", &self.issuer)
            .field("token_endpoint", &self.token_endpoint)
            .field("client_id", &self.client_id)
            .field(
                "client_secret",
                &self.client_secret.as_ref().map(|_| "<redacted>"),
            )
            .finish()
    }
}

/// The key of a `private_key_jwt` client.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PrivateKey {
    /// The PEM text (`privateKey`, or read from `privateKeyFile`).
    pub pem: String,
    /// The JWS algorithm (`signingAlgorithm`): RS256, RS384, RS512, ES256 or ES384.
    pub algorithm: String,
}

impl AuthSpec {
    /// Authentication by OAuth with `oauth`'s settings.
    pub fn oauth(oauth: OAuthSpec) -> Self {
        Self {
            headers_helper: None,
            oauth,
        }
    }

    /// Builder-style: headers from a helper command's output.
    pub fn with_headers_helper(mut self, command: impl Into<String>) -> Self {
        self.headers_helper = Some(command.into());
        self
    }
}

impl OAuthSpec {
    /// A client registered out of band (`secret` for a confidential one).
    pub fn preregistered(client_id: impl Into<String>, secret: Option<String>) -> Self {
        Self {
            client_id: Some(client_id.into()),
            client_secret: secret,
            ..Self::default()
        }
    }

    /// The client-credentials grant with a client secret.
    pub fn client_credentials(client_id: impl Into<String>, secret: impl Into<String>) -> Self {
        Self {
            client_id: Some(client_id.into()),
            client_secret: Some(secret.into()),
            grant: OAuthGrant::ClientCredentials { private_key: None },
            ..Self::default()
        }
    }

    /// The client-credentials grant with a `private_key_jwt` assertion signed by `pem`.
    pub fn client_credentials_jwt(
        client_id: impl Into<String>,
        pem: impl Into<String>,
        algorithm: impl Into<String>,
    ) -> Self {
        Self {
            client_id: Some(client_id.into()),
            grant: OAuthGrant::ClientCredentials {
                private_key: Some(PrivateKey {
                    pem: pem.into(),
                    algorithm: algorithm.into(),
                }),
            },
            ..Self::default()
        }
    }

    /// Workload identity federation: `assertion` is exchanged with the JWT-bearer grant.
    pub fn jwt_bearer(client_id: Option<String>, assertion: TokenSource) -> Self {
        Self {
            client_id,
            grant: OAuthGrant::JwtBearer { assertion },
            ..Self::default()
        }
    }

    /// Enterprise-managed authorization through `idp`, with the resource server's client
    /// `client_id` (and `secret`).
    pub fn enterprise(
        client_id: impl Into<String>,
        secret: Option<String>,
        idp: IdentityProvider,
        id_token: TokenSource,
    ) -> Self {
        Self {
            client_id: Some(client_id.into()),
            client_secret: secret,
            grant: OAuthGrant::Enterprise { idp, id_token },
            ..Self::default()
        }
    }

    /// Builder-style: the scopes to request.
    pub fn with_scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// Builder-style: this client's metadata document URL (SEP-991).
    pub fn with_client_metadata_url(mut self, url: impl Into<String>) -> Self {
        self.client_metadata_url = Some(url.into());
        self
    }

    /// Builder-style: a fixed loopback port for the redirect.
    pub fn with_callback_port(mut self, port: u16) -> Self {
        self.callback_port = Some(port);
        self
    }

    /// Builder-style: pin the authorization server's issuer.
    pub fn with_issuer(mut self, issuer: impl Into<String>) -> Self {
        self.issuer = Some(issuer.into());
        self
    }
}

impl fmt::Debug for OAuthSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthSpec")
            .field("client_id", &self.client_id)
            .field(
                "client_secret",
                &self.client_secret.as_ref().map(|_| "<redacted>"),
            )
            .field("scopes", &self.scopes)
            .field("callback_port", &self.callback_port)
            .field("client_metadata_url", &self.client_metadata_url)
            .field("grant", &self.grant)
            .field("issuer", &self.issuer)
            .finish()
    }
}

impl IdentityProvider {
    /// A provider at `issuer` with its `token_endpoint`, where this client is `client_id`.
    pub fn new(
        issuer: impl Into<String>,
        token_endpoint: impl Into<String>,
        client_id: impl Into<String>,
        client_secret: Option<String>,
    ) -> Self {
        Self {
            issuer: issuer.into(),
            token_endpoint: token_endpoint.into(),
            client_id: client_id.into(),
            client_secret,
        }
    }
}

impl fmt::Debug for OAuthGrant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OAuthGrant::JwtBearer { assertion } => f
                .debug_struct("JwtBearer")
                .field("assertion", assertion)
                .finish(),
            OAuthGrant::Enterprise { idp, id_token } => f
                .debug_struct("Enterprise")
                .field("idp", idp)
                .field("id_token", id_token)
                .finish(),
            OAuthGrant::AuthorizationCode => f.write_str("AuthorizationCode"),
            OAuthGrant::ClientCredentials { private_key } => f
                .debug_struct("ClientCredentials")
                .field(
                    "private_key",
                    &private_key
                        .as_ref()
                        .map(|key| format!("<redacted {}>", key.algorithm)),
                )
                .finish(),
        }
    }
}

impl fmt::Debug for PrivateKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PrivateKey")
            .field("pem", &"<redacted>")
            .field("algorithm", &self.algorithm)
            .finish()
    }
}
