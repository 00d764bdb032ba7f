//! The discovery documents: the protected resource's metadata (RFC 9728) and the
//! authorization server's (RFC 8414).

use serde_json::{Value, json};

use super::{AuthorizationServer, JWT_BEARER, SCOPES_SUPPORTED};

impl AuthorizationServer {
    pub(super) fn resource_metadata_document(&self) -> Value {
        json!({
            "resource": self.resource,
            "authorization_servers": [self.issuer],
            "scopes_supported": SCOPES_SUPPORTED,
            "bearer_methods_supported": ["header"],
        })
    }

    pub(super) fn server_metadata_document(&self) -> Value {
        let issuer = &self.issuer;
        let mut document = json!({
            "issuer": issuer,
            "authorization_endpoint": format!("{issuer}/authorize"),
            "token_endpoint": format!("{issuer}/token"),
            "registration_endpoint": format!("{issuer}/register"),
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials", JWT_BEARER],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported":
                ["none", "client_secret_basic", "client_secret_post"],
            "scopes_supported": SCOPES_SUPPORTED,
            // RFC 9207: every authorization response carries `iss`.
            "authorization_response_iss_parameter_supported": true,
        });
        if self.dpop {
            document["dpop_signing_alg_values_supported"] = json!(["ES256"]);
        }
        document
    }
}
