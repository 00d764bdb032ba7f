//! End to end: `--oauth` against the real binary, the way an OAuth client sees it: discovery,
//! registration, the code flow with PKCE, refresh rotation, client_credentials, expiry and
//! revocation, and the refusals a strict authorization server owes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::{
    io::{BufRead, BufReader},
    process::{Child, Command, Stdio},
    time::Duration,
};

use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use reqwest::{StatusCode, header};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use url::Url;

/// RFC 7636 Appendix B.
const VERIFIER: &str = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
const REDIRECT: &str = "http://127.0.0.1:1/callback";

/// A running test server, killed on drop.
struct Server {
    child: Child,
    /// `http://127.0.0.1:PORT`
    origin: String,
    http: reqwest::Client,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    fn start(extra: &[&str]) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_mcpmux-testserver"))
            .args(["--http", "127.0.0.1:0", "--oauth"])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the test server starts");
        let stdout = child.stdout.take().expect("stdout is piped");
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("the listening line");
        let url = line
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"));
        let origin = url.strip_suffix("/mcp").expect("ends with /mcp").to_owned();
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("a client");
        Self {
            child,
            origin,
            http,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.origin)
    }

    fn resource(&self) -> String {
        self.url("/mcp")
    }

    async fn get_json(&self, path: &str) -> Value {
        let response = self.http.get(self.url(path)).send().await.expect("GET");
        assert_eq!(response.status(), StatusCode::OK, "GET {path}");
        response.json().await.expect("JSON")
    }

    async fn post_admin(&self, path: &str) -> Value {
        let response = self.http.post(self.url(path)).send().await.expect("POST");
        assert_eq!(response.status(), StatusCode::OK, "POST {path}");
        response.json().await.expect("JSON")
    }

    /// `POST /mcp` initialize with an optional bearer token.
    async fn initialize(&self, token: Option<&str>) -> reqwest::Response {
        let mut request = self
            .http
            .post(self.resource())
            .header(header::ACCEPT, "application/json, text/event-stream")
            .json(&json!({
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "oauth-e2e", "version": "0"},
                },
            }));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        request.send().await.expect("POST /mcp")
    }

    async fn register(&self, metadata: Value) -> (StatusCode, Value) {
        let response = self
            .http
            .post(self.url("/register"))
            .json(&metadata)
            .send()
            .await
            .expect("POST /register");
        (response.status(), response.json().await.expect("JSON"))
    }

    async fn register_public(&self) -> String {
        let (status, body) = self
            .register(json!({
                "client_name": "oauth-e2e",
                "redirect_uris": [REDIRECT],
                "token_endpoint_auth_method": "none",
            }))
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        assert!(body.get("client_secret").is_none(), "{body}");
        body["client_id"].as_str().expect("client_id").to_owned()
    }

    /// `GET /authorize` with `params` (no redirect following).
    async fn authorize(&self, params: &[(&str, &str)]) -> reqwest::Response {
        let mut url = Url::parse(&self.url("/authorize")).expect("URL");
        url.query_pairs_mut().extend_pairs(params);
        self.http.get(url).send().await.expect("GET /authorize")
    }

    /// A successful authorization for a public client: the redirect's query pairs.
    async fn code_for(&self, client_id: &str, redirect_uri: &str) -> String {
        let resource = self.resource();
        let challenge = challenge(VERIFIER);
        let response = self
            .authorize(&[
                ("response_type", "code"),
                ("client_id", client_id),
                ("redirect_uri", redirect_uri),
                ("code_challenge", &challenge),
                ("code_challenge_method", "S256"),
                ("scope", "mcp:tools offline_access"),
                ("state", "xyz"),
                ("resource", &resource),
            ])
            .await;
        assert_eq!(response.status(), StatusCode::FOUND);
        let location = Url::parse(
            response.headers()[header::LOCATION]
                .to_str()
                .expect("ASCII"),
        )
        .expect("Location is a URL");
        assert!(location.as_str().starts_with(redirect_uri), "{location}");
        let pair = |name: &str| {
            location
                .query_pairs()
                .find(|(key, _)| key == name)
                .map(|(_, value)| value.into_owned())
        };
        assert_eq!(pair("state").as_deref(), Some("xyz"));
        assert_eq!(pair("iss").as_deref(), Some(self.origin.as_str()));
        pair("code").expect("a code")
    }

    /// `POST /token` with a form body and optional Basic credentials.
    async fn token(
        &self,
        form: &[(&str, &str)],
        basic: Option<(&str, &str)>,
    ) -> (StatusCode, Value) {
        let body = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(form)
            .finish();
        let mut request = self
            .http
            .post(self.url("/token"))
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(body);
        if let Some((id, secret)) = basic {
            request = request.basic_auth(id, Some(secret));
        }
        let response = request.send().await.expect("POST /token");
        let status = response.status();
        (status, response.json().await.expect("JSON"))
    }

    async fn exchange(&self, client_id: &str, code: &str, verifier: &str) -> (StatusCode, Value) {
        let resource = self.resource();
        self.token(
            &[
                ("grant_type", "authorization_code"),
                ("client_id", client_id),
                ("code", code),
                ("redirect_uri", REDIRECT),
                ("code_verifier", verifier),
                ("resource", &resource),
            ],
            None,
        )
        .await
    }

    async fn refresh(&self, client_id: &str, refresh_token: &str) -> (StatusCode, Value) {
        let resource = self.resource();
        self.token(
            &[
                ("grant_type", "refresh_token"),
                ("client_id", client_id),
                ("refresh_token", refresh_token),
                ("resource", &resource),
            ],
            None,
        )
        .await
    }
}

fn challenge(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

fn text(value: &Value, key: &str) -> String {
    value[key]
        .as_str()
        .unwrap_or_else(|| panic!("{key} in {value}"))
        .to_owned()
}

fn www_authenticate(response: &reqwest::Response) -> String {
    response.headers()[header::WWW_AUTHENTICATE]
        .to_str()
        .expect("ASCII")
        .to_owned()
}

#[tokio::test]
async fn a_public_client_goes_through_the_whole_flow() {
    let server = Server::start(&["--token-ttl", "1"]);
    let resource = server.resource();

    // No token: 401 pointing at the resource metadata.
    let response = server.initialize(None).await;
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(
        www_authenticate(&response),
        format!(
            "Bearer resource_metadata=\"{}/.well-known/oauth-protected-resource/mcp\", scope=\"mcp:tools\"",
            server.origin
        )
    );

    // Discovery.
    let metadata = server
        .get_json("/.well-known/oauth-protected-resource/mcp")
        .await;
    assert_eq!(metadata["resource"], json!(resource));
    assert_eq!(metadata["authorization_servers"], json!([server.origin]));
    assert_eq!(
        server
            .get_json("/.well-known/oauth-protected-resource")
            .await,
        metadata
    );
    let authorization = server
        .get_json("/.well-known/oauth-authorization-server")
        .await;
    assert_eq!(authorization["issuer"], json!(server.origin));
    assert_eq!(authorization["token_endpoint"], json!(server.url("/token")));
    assert_eq!(
        authorization["code_challenge_methods_supported"],
        json!(["S256"])
    );
    assert_eq!(
        server.get_json("/.well-known/openid-configuration").await,
        authorization
    );

    // Registration, then a wrong verifier spends the code.
    let client_id = server.register_public().await;
    let code = server.code_for(&client_id, REDIRECT).await;
    let wrong = "x".repeat(43);
    let (status, error) = server.exchange(&client_id, &code, &wrong).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(error["error"], "invalid_grant");
    let (status, error) = server.exchange(&client_id, &code, VERIFIER).await;
    assert_eq!(
        (status, &error["error"]),
        (StatusCode::BAD_REQUEST, &json!("invalid_grant"))
    );

    // A loopback redirect URI on another port matches the registered one.
    let code = server
        .code_for(&client_id, "http://127.0.0.1:45678/callback")
        .await;
    let (status, error) = server.exchange(&client_id, &code, VERIFIER).await;
    assert_eq!(
        status,
        StatusCode::BAD_REQUEST,
        "redirect_uri must equal the one used"
    );
    assert_eq!(error["error"], "invalid_grant");

    // The real exchange.
    let code = server.code_for(&client_id, REDIRECT).await;
    let (status, tokens) = server.exchange(&client_id, &code, VERIFIER).await;
    assert_eq!(status, StatusCode::OK, "{tokens}");
    assert_eq!(tokens["token_type"], "Bearer");
    assert_eq!(tokens["expires_in"], 1);
    assert_eq!(tokens["scope"], "mcp:tools offline_access");
    let access = text(&tokens, "access_token");
    let refresh = text(&tokens, "refresh_token");
    let response = server.initialize(Some(&access)).await;
    assert_eq!(response.status(), StatusCode::OK);

    // An unknown token says invalid_token.
    let response = server.initialize(Some("at_nonsense")).await;
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    assert!(www_authenticate(&response).contains("error=\"invalid_token\""));

    // Rotation: the new refresh token works (reuse of the old one: the test below).
    let (status, rotated) = server.refresh(&client_id, &refresh).await;
    assert_eq!(status, StatusCode::OK, "{rotated}");
    let refresh2 = text(&rotated, "refresh_token");
    assert_ne!(refresh2, refresh);
    assert_ne!(text(&rotated, "access_token"), access);

    // The TTL is enforced by the server.
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let response = server.initialize(Some(&access)).await;
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    assert!(www_authenticate(&response).contains("error=\"invalid_token\""));

    // Revocation ends access and refresh alike.
    let (status, fresh) = server.refresh(&client_id, &refresh2).await;
    assert_eq!(status, StatusCode::OK, "{fresh}");
    let refresh3 = text(&fresh, "refresh_token");
    let revoked = server.post_admin("/admin/oauth/revoke").await;
    assert_eq!(revoked["revoked_refresh_tokens"], 1);
    let response = server.initialize(Some(&text(&fresh, "access_token"))).await;
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    let (status, error) = server.refresh(&client_id, &refresh3).await;
    assert_eq!(
        (status, &error["error"]),
        (StatusCode::BAD_REQUEST, &json!("invalid_grant"))
    );

    let stats = server.get_json("/admin/oauth/stats").await;
    assert_eq!(stats["registrations"], 1);
    assert_eq!(stats["authorizations"], 3);
    assert_eq!(stats["code_exchanges"], 1);
    assert_eq!(stats["refreshes"], 2);
    assert_eq!(stats["client_credentials"], 0);
    assert_eq!(stats["rejected"], 4);
    assert_eq!(stats["last_scope"], "mcp:tools offline_access");
    assert_eq!(stats["last_resource"], json!(resource));
}

#[tokio::test]
async fn a_spent_refresh_token_used_again_revokes_the_whole_login() {
    let server = Server::start(&[]);
    let client_id = server.register_public().await;
    let code = server.code_for(&client_id, REDIRECT).await;
    let (_, tokens) = server.exchange(&client_id, &code, VERIFIER).await;
    let spent = text(&tokens, "refresh_token");
    let (status, rotated) = server.refresh(&client_id, &spent).await;
    assert_eq!(status, StatusCode::OK, "{rotated}");

    // A second holder presents the spent token: two parties hold the login.
    let (status, error) = server.refresh(&client_id, &spent).await;
    assert_eq!(
        (status, &error["error"]),
        (StatusCode::BAD_REQUEST, &json!("invalid_grant"))
    );
    assert!(
        text(&error, "error_description").contains("already used"),
        "{error}"
    );
    // The rightful holder's tokens are revoked with it.
    let (status, error) = server
        .refresh(&client_id, &text(&rotated, "refresh_token"))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{error}");
    let response = server
        .initialize(Some(&text(&rotated, "access_token")))
        .await;
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    let stats = server.get_json("/admin/oauth/stats").await;
    assert_eq!(stats["refresh_reuse"], 1, "{stats}");
    assert_eq!(stats["refreshes"], 1, "{stats}");
}

#[tokio::test]
async fn expire_keeps_refresh_tokens() {
    let server = Server::start(&[]);
    let client_id = server.register_public().await;
    let code = server.code_for(&client_id, REDIRECT).await;
    let (_, tokens) = server.exchange(&client_id, &code, VERIFIER).await;
    assert_eq!(tokens["expires_in"], 3600);
    let access = text(&tokens, "access_token");
    assert_eq!(
        server.initialize(Some(&access)).await.status(),
        StatusCode::OK
    );

    server.post_admin("/admin/oauth/expire").await;
    let response = server.initialize(Some(&access)).await;
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    assert!(www_authenticate(&response).contains("error=\"invalid_token\""));
    let (status, fresh) = server
        .refresh(&client_id, &text(&tokens, "refresh_token"))
        .await;
    assert_eq!(status, StatusCode::OK, "{fresh}");
    let response = server.initialize(Some(&text(&fresh, "access_token"))).await;
    assert_eq!(response.status(), StatusCode::OK);
}

#[tokio::test]
async fn the_authorization_endpoint_is_strict() {
    let server = Server::start(&[]);
    let client_id = server.register_public().await;
    let resource = server.resource();
    let s256 = challenge(VERIFIER);
    let base = |overrides: &[(&'static str, Option<&str>)]| {
        let mut params: Vec<(&str, String)> = vec![
            ("response_type", "code".into()),
            ("client_id", client_id.clone()),
            ("redirect_uri", REDIRECT.into()),
            ("code_challenge", s256.clone()),
            ("code_challenge_method", "S256".into()),
            ("resource", resource.clone()),
        ];
        for (name, value) in overrides {
            params.retain(|(key, _)| key != name);
            if let Some(value) = value {
                params.push((name, (*value).to_owned()));
            }
        }
        params
    };
    async fn send(server: &Server, params: Vec<(&str, String)>) -> (StatusCode, String) {
        let pairs: Vec<(&str, &str)> = params.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let response = server.authorize(&pairs).await;
        let status = response.status();
        let location = response
            .headers()
            .get(header::LOCATION)
            .map(|value| value.to_str().expect("ASCII").to_owned());
        let body = response.text().await.expect("body");
        (status, location.unwrap_or(body))
    }

    for (overrides, expected) in [
        (vec![("resource", None)], "invalid_target"),
        (
            vec![("resource", Some("http://127.0.0.1:1/mcp"))],
            "invalid_target",
        ),
        (
            vec![("code_challenge_method", Some("plain"))],
            "invalid_request",
        ),
        (vec![("code_challenge_method", None)], "invalid_request"),
        (vec![("code_challenge", None)], "invalid_request"),
        (vec![("client_id", Some("nobody"))], "invalid_request"),
        (
            vec![("redirect_uri", Some("http://127.0.0.1:1/elsewhere"))],
            "invalid_request",
        ),
    ] {
        let (status, body) = send(&server, base(&overrides)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{overrides:?}: {body}");
        let body: Value = serde_json::from_str(&body).expect("JSON");
        assert_eq!(body["error"], expected, "{overrides:?}");
    }

    // Errors about the request itself go back to the client, with state and iss.
    let (status, location) = send(
        &server,
        base(&[("scope", Some("admin")), ("state", Some("s1"))]),
    )
    .await;
    assert_eq!(status, StatusCode::FOUND);
    assert!(location.starts_with(REDIRECT), "{location}");
    assert!(location.contains("error=invalid_scope"), "{location}");
    assert!(location.contains("state=s1"), "{location}");

    // The token endpoint wants the resource too.
    let code = server.code_for(&client_id, REDIRECT).await;
    let (status, error) = server
        .token(
            &[
                ("grant_type", "authorization_code"),
                ("client_id", &client_id),
                ("code", &code),
                ("redirect_uri", REDIRECT),
                ("code_verifier", VERIFIER),
            ],
            None,
        )
        .await;
    assert_eq!(
        (status, &error["error"]),
        (StatusCode::BAD_REQUEST, &json!("invalid_target"))
    );
}

#[tokio::test]
async fn confidential_clients_authenticate_as_registered() {
    let server = Server::start(&["--oauth-client", "ci:top secret"]);
    let resource = server.resource();

    // client_credentials for the preset client, Basic or post, never with a refresh token.
    let form = [
        ("grant_type", "client_credentials"),
        ("resource", resource.as_str()),
    ];
    let (status, tokens) = server.token(&form, Some(("ci", "top secret"))).await;
    assert_eq!(status, StatusCode::OK, "{tokens}");
    assert!(tokens.get("refresh_token").is_none());
    assert_eq!(tokens["scope"], "mcp:tools");
    let access = text(&tokens, "access_token");
    assert_eq!(
        server.initialize(Some(&access)).await.status(),
        StatusCode::OK
    );
    let (status, _) = server
        .token(
            &[
                ("grant_type", "client_credentials"),
                ("client_id", "ci"),
                ("client_secret", "top secret"),
            ],
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let (status, error) = server.token(&form, Some(("ci", "wrong"))).await;
    assert_eq!(
        (status, &error["error"]),
        (StatusCode::UNAUTHORIZED, &json!("invalid_client"))
    );
    let (status, error) = server
        .token(&[("grant_type", "password")], Some(("ci", "top secret")))
        .await;
    assert_eq!(
        (status, &error["error"]),
        (StatusCode::BAD_REQUEST, &json!("unsupported_grant_type"))
    );

    // A registered confidential client (client_secret_basic by default).
    let (status, registered) = server
        .register(json!({"redirect_uris": [REDIRECT], "client_name": "confidential"}))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{registered}");
    assert_eq!(
        registered["token_endpoint_auth_method"],
        "client_secret_basic"
    );
    assert_eq!(registered["client_name"], "confidential");
    let client_id = text(&registered, "client_id");
    let secret = text(&registered, "client_secret");
    let code = server.code_for(&client_id, REDIRECT).await;
    let exchange = [
        ("grant_type", "authorization_code"),
        ("code", code.as_str()),
        ("redirect_uri", REDIRECT),
        ("code_verifier", VERIFIER),
        ("resource", resource.as_str()),
    ];
    // Without its secret the client is refused (and the code survives: it was never presented
    // by an authenticated client).
    let mut as_public = exchange.to_vec();
    as_public.push(("client_id", &client_id));
    let (status, error) = server.token(&as_public, None).await;
    assert_eq!(
        (status, &error["error"]),
        (StatusCode::UNAUTHORIZED, &json!("invalid_client"))
    );
    let (status, tokens) = server.token(&exchange, Some((&client_id, &secret))).await;
    assert_eq!(status, StatusCode::OK, "{tokens}");

    // Registration needs redirect URIs.
    let (status, error) = server.register(json!({"client_name": "x"})).await;
    assert_eq!(
        (status, &error["error"]),
        (StatusCode::BAD_REQUEST, &json!("invalid_redirect_uri"))
    );

    let stats = server.get_json("/admin/oauth/stats").await;
    assert_eq!(stats["client_credentials"], 2);
    assert_eq!(stats["code_exchanges"], 1);
}

// ----- rmcp's own OAuth client, the one mcpmux builds on -----

#[tokio::test]
async fn rmcp_logs_in_refreshes_and_lists_tools() {
    use rmcp::{
        ServiceExt,
        transport::{
            AuthClient, AuthorizationRequest, StreamableHttpClientTransport, auth::OAuthState,
            streamable_http_client::StreamableHttpClientTransportConfig,
        },
    };

    let server = Server::start(&[]);
    let resource = server.resource();
    let challenge = www_authenticate(&server.initialize(None).await);
    let mut state = OAuthState::new(resource.as_str(), None).await.unwrap();
    let mut request =
        AuthorizationRequest::new("http://127.0.0.1:9/callback").with_client_name("rmcp-e2e");
    request.challenge = Some(challenge);
    state.start_authorization(request).await.unwrap();
    let authorize = state.get_authorization_url().await.unwrap();
    let response = server.http.get(&authorize).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::FOUND);
    let location = response.headers()[header::LOCATION].to_str().unwrap();
    state.handle_callback_url(location).await.unwrap();
    let manager = state.into_authorization_manager().unwrap();
    manager.refresh_token().await.unwrap();

    let client = AuthClient::new(reqwest::Client::default(), manager);
    let transport = StreamableHttpClientTransport::with_client(
        client,
        StreamableHttpClientTransportConfig::with_uri(resource.as_str()),
    );
    let running = ().serve(transport).await.unwrap();
    let tools = running.list_all_tools().await.unwrap();
    assert!(tools.iter().any(|tool| tool.name == "echo"));
    running.cancel().await.unwrap();

    let stats = server.get_json("/admin/oauth/stats").await;
    assert_eq!(stats["registrations"], 1);
    assert_eq!(stats["code_exchanges"], 1);
    assert_eq!(stats["refreshes"], 1);
    assert_eq!(stats["rejected"], 1);
    assert_eq!(stats["last_resource"], json!(resource));
}

#[tokio::test]
async fn rmcp_client_credentials() {
    use rmcp::transport::{ClientCredentialsConfig, auth::OAuthState};

    let server = Server::start(&["--oauth-client", "ci:s3cret"]);
    let resource = server.resource();
    let mut state = OAuthState::new(resource.as_str(), None).await.unwrap();
    state
        .authenticate_client_credentials(ClientCredentialsConfig::ClientSecret {
            client_id: "ci".into(),
            client_secret: "s3cret".into(),
            scopes: vec!["mcp:tools".into()],
            resource: Some(resource.clone()),
        })
        .await
        .unwrap();
    let manager = state.into_authorization_manager().unwrap();
    let token = manager.get_access_token().await.unwrap();
    assert_eq!(
        server.initialize(Some(&token)).await.status(),
        StatusCode::OK
    );
    let stats = server.get_json("/admin/oauth/stats").await;
    assert_eq!(stats["client_credentials"], 1);
}
