//! OAuth 2.1 against a real authorization server: the test server's `--oauth` mode is both the
//! protected MCP endpoint and a strict authorization server (PKCE S256, resource indicators,
//! rotating refresh tokens) on 127.0.0.1.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use mcpmux::auth::{
    AuthorizationPrompt, AuthorizeFuture, Authorizer, HeadlessAuthorizer, TokenStore,
};
use mcpmux::config::{AuthSpec, OAuthSpec};
use mcpmux::{Era, Hub, HubOptions, ServerSpec, ServerState};
use serde_json::{Value, json};
use support::{
    oauth_admin, oauth_options, oauth_server, oauth_spec, oauth_stats, only_state, origin,
};

/// A private folder for one test's token files, removed when the test ends.
fn temp_dir(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("mcpmux-oauth-{name}-"))
        .tempdir()
        .unwrap()
}

fn headless() -> Arc<HeadlessAuthorizer> {
    Arc::new(HeadlessAuthorizer::new().unwrap())
}

async fn echo(hub: &Hub, text: &str) -> String {
    hub.call("mcp__remote__echo", json!({"text": text}))
        .await
        .unwrap()
        .to_text()
}

/// A later run, with no authorizer, on the tokens in `store` after they expired: it connects
/// by refreshing (the server's second refresh), with no new authorization, and calls work.
async fn restart_refreshes(server: &support::ServerProcess, store: &Path) {
    oauth_admin(server, "expire").await;
    let hub = started(oauth_spec(&server.url), oauth_options(store)).await;
    assert!(
        matches!(only_state(&hub), ServerState::Connected { .. }),
        "{:?}",
        only_state(&hub)
    );
    assert_eq!(echo(&hub, "restarted").await, "restarted");
    let after_restart = oauth_stats(server).await;
    assert_eq!(after_restart["refreshes"], 2, "{after_restart}");
    assert_eq!(after_restart["authorizations"], 1, "{after_restart}");
    hub.shutdown().await;
}

/// A hub on `server` that logs in with the headless authorizer: connected, and a call works.
async fn logged_in(server: &support::ServerProcess, store: &Path) -> Hub {
    let hub = started(
        oauth_spec(&server.url),
        oauth_options(store).with_authorizer(headless()),
    )
    .await;
    assert!(
        matches!(only_state(&hub), ServerState::Connected { .. }),
        "{:?}",
        only_state(&hub)
    );
    assert_eq!(echo(&hub, "hi").await, "hi");
    hub
}

async fn started(spec: ServerSpec, options: HubOptions) -> Hub {
    support::started_with(vec![spec], options).await
}

#[tokio::test]
async fn authorizes_stores_privately_and_refreshes_after_expiry() {
    let server = oauth_server(&[]);
    let dir = temp_dir("round-trip");
    let store = dir.path().join("tokens.json");

    // First run: the 401 drives discovery, registration, the authorization and the exchange.
    let hub = logged_in(&server, &store).await;
    let after_login = oauth_stats(&server).await;
    assert_eq!(after_login["registrations"], 1, "{after_login}");
    assert_eq!(after_login["authorizations"], 1, "{after_login}");
    assert_eq!(
        after_login["last_resource"],
        server.url.as_str(),
        "{after_login}"
    );

    // Stored for this user only.
    let mode = std::fs::metadata(&store).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let stored: Value = serde_json::from_str(&std::fs::read_to_string(&store).unwrap()).unwrap();
    let entry = &stored["servers"]["remote"];
    assert_eq!(entry["resource"], server.url.as_str());
    assert!(entry["credentials"]["token_response"]["refresh_token"].is_string());
    let first_refresh = entry["credentials"]["token_response"]["refresh_token"].clone();

    // The server expires the access token: the next call is refused once, refreshed, retried.
    oauth_admin(&server, "expire").await;
    assert_eq!(echo(&hub, "after expiry").await, "after expiry");
    let after_refresh = oauth_stats(&server).await;
    assert_eq!(after_refresh["refreshes"], 1, "{after_refresh}");
    assert_eq!(
        after_refresh["authorizations"], 1,
        "no new authorization: {after_refresh}"
    );
    hub.shutdown().await;

    // The refresh token rotated, and the new one was stored.
    let stored: Value = serde_json::from_str(&std::fs::read_to_string(&store).unwrap()).unwrap();
    let rotated = &stored["servers"]["remote"]["credentials"]["token_response"]["refresh_token"];
    assert!(rotated.is_string());
    assert_ne!(rotated, &first_refresh);

    // A later run, with no authorizer at all, uses the stored tokens: an expired access token
    // is refreshed with the stored registration, no person involved.
    restart_refreshes(&server, &store).await;
}

#[tokio::test]
async fn revoked_tokens_leave_the_server_needing_auth() {
    let server = oauth_server(&[]);
    let dir = temp_dir("revoked");
    let store = dir.path().join("tokens.json");
    let hub = started(
        oauth_spec(&server.url),
        oauth_options(&store).with_authorizer(headless()),
    )
    .await;
    hub.shutdown().await;

    // A running hub whose tokens are revoked under it: the refused call fails, the refresh
    // is refused too, and the server ends needing auth instead of reconnecting forever.
    let hub = started(oauth_spec(&server.url), oauth_options(&store)).await;
    assert_eq!(echo(&hub, "before").await, "before");
    oauth_admin(&server, "revoke").await;
    assert!(
        hub.call("mcp__remote__echo", json!({"text": "after"}))
            .await
            .is_err()
    );
    let reached = support::eventually(Duration::from_secs(10), Duration::from_millis(20), || {
        matches!(only_state(&hub), ServerState::NeedsAuth { .. }).then_some(())
    })
    .await;
    assert!(reached.is_some(), "still {:?}", only_state(&hub));
    hub.shutdown().await;

    let started_at = std::time::Instant::now();
    let hub = started(oauth_spec(&server.url), oauth_options(&store)).await;
    let ServerState::NeedsAuth { message, login } = only_state(&hub) else {
        panic!("expected needs_auth, got {:?}", only_state(&hub));
    };
    assert!(
        login && message.contains("needs a login"),
        "the state says a login would authorize it: {message}"
    );
    assert!(
        started_at.elapsed() < Duration::from_secs(10),
        "needs_auth must not wait for a timeout: {:?}",
        started_at.elapsed()
    );
    let error = hub
        .call("mcp__remote__echo", json!({"text": "x"}))
        .await
        .unwrap_err()
        .to_string();
    assert!(error.contains("needs a login"), "{error}");
    hub.shutdown().await;
}

#[tokio::test]
async fn without_tokens_or_authorizer_the_server_needs_auth() {
    let server = oauth_server(&[]);
    let dir = temp_dir("no-token");
    let hub = started(
        oauth_spec(&server.url),
        oauth_options(&dir.path().join("tokens.json")),
    )
    .await;
    assert!(
        matches!(only_state(&hub), ServerState::NeedsAuth { .. }),
        "{:?}",
        only_state(&hub)
    );
    let counts = oauth_stats(&server).await;
    assert_eq!(
        counts["registrations"], 0,
        "nothing was attempted: {counts}"
    );
    hub.shutdown().await;
}

#[tokio::test]
async fn a_login_elsewhere_brings_a_server_needing_auth_back_without_a_restart() {
    let server = oauth_server(&[]);
    let dir = temp_dir("login-elsewhere");
    let store = dir.path().join("tokens.json");
    let hub = started(oauth_spec(&server.url), oauth_options(&store)).await;
    assert!(
        matches!(only_state(&hub), ServerState::NeedsAuth { .. }),
        "{:?}",
        only_state(&hub)
    );
    // `mcpmux auth login remote`, run beside the hub, does this.
    mcpmux::auth::login(
        &oauth_spec(&server.url),
        &TokenStore::file(&store),
        headless(),
    )
    .await
    .unwrap();
    let reached = support::eventually(Duration::from_secs(10), Duration::from_millis(20), || {
        matches!(only_state(&hub), ServerState::Connected { .. }).then_some(())
    })
    .await;
    assert!(
        reached.is_some(),
        "the login was not picked up: {:?}",
        only_state(&hub)
    );
    assert_eq!(echo(&hub, "after login").await, "after login");
    assert_eq!(oauth_stats(&server).await["authorizations"], 1);
    hub.shutdown().await;
}

#[tokio::test]
async fn client_credentials_need_no_person() {
    let server = oauth_server(&["--oauth-client", "robot:s3cret"]);
    let dir = temp_dir("client-credentials");
    let spec = oauth_spec(&server.url).with_auth(AuthSpec::oauth(OAuthSpec::client_credentials(
        "robot", "s3cret",
    )));
    let hub = started(spec, oauth_options(&dir.path().join("tokens.json"))).await;
    assert_eq!(echo(&hub, "machine").await, "machine");
    let counts = oauth_stats(&server).await;
    assert_eq!(counts["client_credentials"], 1, "{counts}");
    assert_eq!(counts["authorizations"], 0, "{counts}");
    hub.shutdown().await;

    // A wrong secret is an authorization failure with the server's reason, not a hang.
    let bad = ServerSpec::http("remote", server.url.as_str())
        .with_startup_timeout(Duration::from_secs(20))
        .with_auth(AuthSpec::oauth(OAuthSpec::client_credentials(
            "robot", "wrong",
        )));
    let hub = started(bad, oauth_options(&dir.path().join("other.json"))).await;
    let status = hub.servers().into_iter().next().unwrap();
    assert!(
        !matches!(status.state, ServerState::Connected { .. }),
        "{:?}",
        status.state
    );
    let reason = status.error().unwrap_or_default().to_string();
    assert!(reason.contains("invalid_client"), "{reason}");
    hub.shutdown().await;
}

/// A token obtained out of band (client credentials of `robot`), as a vault or a company CLI
/// would hand it out.
async fn out_of_band_token(server: &support::ServerProcess) -> String {
    let token: Value = reqwest::Client::new()
        .post(format!("{}/token", origin(&server.url)))
        .basic_auth("robot", Some("s3cret"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!(
            "grant_type=client_credentials&resource={}",
            server.url.replace(':', "%3A").replace('/', "%2F")
        ))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    token["access_token"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn headers_helper_supplies_the_authorization_header() {
    let server = oauth_server(&["--oauth-client", "robot:s3cret"]);
    let dir = temp_dir("helper");
    let file = dir.path().join("token");
    std::fs::write(&file, out_of_band_token(&server).await).unwrap();
    let helper = format!(
        r#"printf '{{"Authorization": "Bearer %s"}}' "$(cat {})""#,
        file.display()
    );
    let with_helper =
        oauth_spec(&server.url).with_auth(AuthSpec::default().with_headers_helper(helper));
    let hub = started(with_helper, oauth_options(&dir.path().join("tokens.json"))).await;
    assert_eq!(echo(&hub, "via helper").await, "via helper");
    hub.shutdown().await;

    // The helper's header is the user's choice of credentials: OAuth stays out of it, and a
    // token the server refuses leaves the server needing auth.
    std::fs::write(&file, "not-a-token").unwrap();
    let helper = format!(
        r#"printf '{{"Authorization": "Bearer %s"}}' "$(cat {})""#,
        file.display()
    );
    let refused =
        oauth_spec(&server.url).with_auth(AuthSpec::default().with_headers_helper(helper));
    let hub = started(
        refused,
        oauth_options(&dir.path().join("tokens.json")).with_authorizer(headless()),
    )
    .await;
    assert!(
        matches!(only_state(&hub), ServerState::NeedsAuth { .. }),
        "{:?}",
        only_state(&hub)
    );
    assert_eq!(oauth_stats(&server).await["authorizations"], 0);
    hub.shutdown().await;
}

#[tokio::test]
async fn an_exposed_token_file_is_refused_in_plain_words() {
    let server = oauth_server(&[]);
    let dir = temp_dir("exposed");
    let store = dir.path().join("tokens.json");
    std::fs::write(&store, r#"{"version":1,"servers":{}}"#).unwrap();
    std::fs::set_permissions(&store, std::fs::Permissions::from_mode(0o644)).unwrap();
    let hub = started(
        oauth_spec(&server.url),
        oauth_options(&store).with_authorizer(headless()),
    )
    .await;
    let status = hub.servers().into_iter().next().unwrap();
    let error = status.error().unwrap_or_default().to_string();
    assert!(error.contains("chmod 600"), "{error}");
    assert!(
        !error.contains("ProbeTransport"),
        "no transport types: {error}"
    );
    assert_eq!(oauth_stats(&server).await["authorizations"], 0);
    hub.shutdown().await;
}

/// A person who takes a while in the browser: the headless redirect, after `delay`.
struct SlowPerson {
    inner: HeadlessAuthorizer,
    delay: Duration,
}

impl Authorizer for SlowPerson {
    fn redirect_uri(&self, port: Option<u16>) -> AuthorizeFuture<'_, String> {
        self.inner.redirect_uri(port)
    }

    fn authorize(&self, prompt: AuthorizationPrompt) -> AuthorizeFuture<'_, String> {
        Box::pin(async move {
            tokio::time::sleep(self.delay).await;
            self.inner.authorize(prompt).await
        })
    }
}

#[tokio::test]
async fn a_slow_login_does_not_count_against_the_era_probe() {
    let server = oauth_server(&[]);
    let dir = temp_dir("slow-login");
    let person = SlowPerson {
        inner: HeadlessAuthorizer::new().unwrap(),
        delay: Duration::from_millis(800),
    };
    // The probe's `server/discover` is refused with 401 and the login takes longer than the
    // probe deadline: the server still gets the question after it, and answers in its era.
    let hub = started(
        oauth_spec(&server.url).with_probe_timeout(Duration::from_millis(200)),
        oauth_options(&dir.path().join("tokens.json")).with_authorizer(Arc::new(person)),
    )
    .await;
    assert!(
        matches!(
            only_state(&hub),
            ServerState::Connected {
                era: Era::Stateless,
                ..
            }
        ),
        "{:?}",
        only_state(&hub)
    );
    assert_eq!(echo(&hub, "hi").await, "hi");
    hub.shutdown().await;
}

#[tokio::test]
async fn dpop_binds_tokens_to_a_key_kept_with_them_across_restarts() {
    // Both servers want their nonce in every proof: the first proof of each is refused.
    let server = oauth_server(&["--dpop-nonce"]);
    let dir = temp_dir("dpop");
    let store = dir.path().join("tokens.json");

    let hub = logged_in(&server, &store).await;
    let after_login = oauth_stats(&server).await;
    assert_eq!(after_login["dpop_bound_tokens"], 1, "{after_login}");
    assert!(
        after_login["dpop_proofs"].as_u64().unwrap() >= 2,
        "{after_login}"
    );
    assert!(
        after_login["dpop_nonce_challenges"].as_u64().unwrap() >= 2,
        "the token endpoint and /mcp each asked for their nonce once: {after_login}"
    );
    let stored: Value = serde_json::from_str(&std::fs::read_to_string(&store).unwrap()).unwrap();
    let entry = &stored["servers"]["remote"];
    assert!(entry["dpop_key"].is_string(), "{entry}");
    assert_eq!(
        entry["credentials"]["token_response"]["token_type"]
            .as_str()
            .map(str::to_lowercase),
        Some("dpop".to_string())
    );

    // The bound refresh token needs a proof from the same key.
    oauth_admin(&server, "expire").await;
    assert_eq!(echo(&hub, "after expiry").await, "after expiry");
    assert_eq!(oauth_stats(&server).await["refreshes"], 1);
    hub.shutdown().await;

    // A later run signs with the stored key: its refresh and its calls are accepted.
    restart_refreshes(&server, &store).await;
}

#[tokio::test]
async fn client_credentials_tokens_are_dpop_bound_too() {
    let server = oauth_server(&["--dpop", "--oauth-client", "robot:s3cret"]);
    let dir = temp_dir("dpop-client-credentials");
    let store = dir.path().join("tokens.json");
    let spec = oauth_spec(&server.url).with_auth(AuthSpec::oauth(OAuthSpec::client_credentials(
        "robot", "s3cret",
    )));
    let hub = started(spec.clone(), oauth_options(&store)).await;
    assert_eq!(echo(&hub, "machine").await, "machine");
    let counts = oauth_stats(&server).await;
    assert_eq!(counts["client_credentials"], 1, "{counts}");
    assert_eq!(counts["dpop_bound_tokens"], 1, "{counts}");
    hub.shutdown().await;

    // The next run presents the stored token with proofs from the stored key.
    let hub = started(spec, oauth_options(&store)).await;
    assert_eq!(echo(&hub, "again").await, "again");
    let counts = oauth_stats(&server).await;
    assert_eq!(
        counts["client_credentials"], 1,
        "no new token was needed: {counts}"
    );
    hub.shutdown().await;
}

#[tokio::test]
async fn a_helper_token_refused_mid_session_is_replaced_by_running_the_helper_again() {
    let server = oauth_server(&["--oauth-client", "robot:s3cret"]);
    let dir = temp_dir("helper-renewal");
    let file = dir.path().join("token");
    let runs = dir.path().join("runs");
    std::fs::write(&file, out_of_band_token(&server).await).unwrap();
    let helper = format!(
        r#"echo run >> {}; printf '{{"Authorization": "Bearer %s"}}' "$(cat {})""#,
        runs.display(),
        file.display()
    );
    let runs_so_far = || std::fs::read_to_string(&runs).unwrap().lines().count();
    let hub = started(
        oauth_spec(&server.url).with_auth(AuthSpec::default().with_headers_helper(helper)),
        oauth_options(&dir.path().join("tokens.json")),
    )
    .await;
    let mut events = hub.subscribe();
    assert_eq!(echo(&hub, "first").await, "first");
    assert_eq!(runs_so_far(), 1);

    // The vault hands out a new token; the server stops taking the old one. The next call is
    // refused, the helper runs again, and the call goes through on the same session.
    oauth_admin(&server, "revoke").await;
    std::fs::write(&file, out_of_band_token(&server).await).unwrap();
    assert_eq!(echo(&hub, "second").await, "second");
    assert_eq!(runs_so_far(), 2);
    let changes: Vec<_> = std::iter::from_fn(|| events.try_recv().ok())
        .filter(|e| matches!(e, mcpmux::HubEvent::StateChanged { .. }))
        .collect();
    assert!(changes.is_empty(), "the session was not kept: {changes:?}");

    // A helper that prints the refused token again: the call fails, the session ends, and the
    // reconnect (the helper run once more) leaves the server needing auth, saying how to fix it.
    oauth_admin(&server, "revoke").await;
    let error = hub
        .call("mcp__remote__echo", json!({"text": "third"}))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("401") || error.contains("authoriz"),
        "{error}"
    );
    let message = needs_auth_soon(&hub).await;
    assert!(message.contains("headersHelper"), "{message}");
    // Run again for the refusal, then by the reconnect; not for the reconnect's refusal (what
    // it printed never worked).
    assert_eq!(runs_so_far(), 4);
    assert_eq!(
        oauth_stats(&server).await["authorizations"],
        0,
        "OAuth stayed out"
    );
    hub.shutdown().await;
}

/// The server's state once it needs auth (within 10 s), its message.
async fn needs_auth_soon(hub: &Hub) -> String {
    let message =
        support::eventually(
            Duration::from_secs(10),
            Duration::from_millis(20),
            || match only_state(hub) {
                ServerState::NeedsAuth { message, .. } => Some(message),
                _ => None,
            },
        )
        .await;
    message.unwrap_or_else(|| panic!("not needing auth: {:?}", only_state(hub)))
}

#[tokio::test]
async fn a_static_token_refused_mid_session_leaves_the_server_needing_auth() {
    let server = oauth_server(&["--oauth-client", "robot:s3cret"]);
    let dir = temp_dir("static-refused");
    let token = out_of_band_token(&server).await;
    let spec = ServerSpec::new(
        "remote",
        mcpmux::TransportSpec::Http {
            url: server.url.clone(),
            headers: [("Authorization".to_string(), format!("Bearer {token}"))].into(),
        },
    )
    .with_startup_timeout(Duration::from_secs(20))
    .with_call_timeout(Duration::from_secs(20));
    let hub = started(spec, oauth_options(&dir.path().join("tokens.json"))).await;
    assert_eq!(echo(&hub, "before").await, "before");
    oauth_admin(&server, "revoke").await;
    assert!(
        hub.call("mcp__remote__echo", json!({"text": "after"}))
            .await
            .is_err()
    );
    let message = needs_auth_soon(&hub).await;
    assert!(message.contains("`headers`"), "{message}");
    assert_eq!(
        oauth_stats(&server).await["authorizations"],
        0,
        "OAuth stayed out"
    );
    hub.shutdown().await;
}

#[tokio::test]
async fn a_workload_jwt_gets_a_dpop_bound_token() {
    let server = oauth_server(&["--dpop-nonce", "--oauth-client", "robot:s3cret"]);
    let dir = temp_dir("jwt-bearer-dpop");
    let store = dir.path().join("tokens.json");
    // A workload JWT as a platform mounts it (the test server reads its subject only).
    let claims = base64::Engine::encode(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD,
        br#"{"sub":"system:serviceaccount:ci:agent","aud":"mcp"}"#,
    );
    let jwt = dir.path().join("workload.jwt");
    std::fs::write(&jwt, format!("eyJhbGciOiJub25lIn0.{claims}.sig\n")).unwrap();
    let mut oauth = OAuthSpec::jwt_bearer(
        Some("robot".into()),
        mcpmux::config::TokenSource::File(jwt.clone()),
    );
    oauth.client_secret = Some("s3cret".into());
    let hub = started(
        oauth_spec(&server.url).with_auth(AuthSpec::oauth(oauth)),
        oauth_options(&store),
    )
    .await;
    assert_eq!(echo(&hub, "workload").await, "workload");
    let counts = oauth_stats(&server).await;
    assert_eq!(counts["jwt_bearer"], 1, "{counts}");
    assert_eq!(counts["dpop_bound_tokens"], 1, "{counts}");
    assert!(
        counts["dpop_nonce_challenges"].as_u64().unwrap() >= 2,
        "the token endpoint and /mcp each asked for their nonce: {counts}"
    );
    // An expired token is replaced by exchanging the (re-read) JWT again, with a proof.
    oauth_admin(&server, "expire").await;
    assert_eq!(echo(&hub, "again").await, "again");
    let counts = oauth_stats(&server).await;
    assert_eq!(counts["jwt_bearer"], 2, "{counts}");
    assert_eq!(counts["dpop_bound_tokens"], 2, "{counts}");
    hub.shutdown().await;
}
