//! The gateway as an OAuth 2.1 resource server, in this process, against a real authorization
//! server on 127.0.0.1 (`support/issuer.rs`: metadata, key set, ES256 keys made here): the
//! protected resource metadata, the challenges, each way a token can be wrong, key rotation,
//! hostile tokens and key sets, and the official Python SDK client calling with a token.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use mcpmux_gateway::{
    GatewayOptions, HttpError, HttpOptions, HttpServer, OAuthError, OAuthOptions,
};
use serde_json::{Value, json};
use support::*;

/// The gateway on 127.0.0.1 taking tokens of `issuer`, with the options as `tweak` leaves
/// them.
async fn served(
    issuer: &Issuer,
    tweak: impl FnOnce(&mut OAuthOptions),
    http: impl FnOnce(&mut HttpOptions),
) -> Served {
    let mut oauth = OAuthOptions::new(issuer.url.clone());
    tweak(&mut oauth);
    Served::start(
        vec![fast_testserver("t", &[])],
        GatewayOptions::default(),
        |options| {
            options.oauth = Some(oauth);
            http(options);
        },
    )
    .await
}

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

/// An `initialize` with `token`: the status, the challenge and the JSON body (if any).
async fn try_token(url: &str, token: &str) -> (u16, String, Value) {
    let answer = post(url, &initialize(), &[("authorization", &bearer(token))]).await;
    let status = answer.status().as_u16();
    let challenge = answer
        .headers()
        .get("www-authenticate")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    let body = answer.json().await.unwrap_or(Value::Null);
    (status, challenge, body)
}

#[tokio::test]
async fn the_protected_resource_metadata_names_the_issuer_and_this_resource() {
    let issuer = Issuer::start();
    let served = served(&issuer, |_| {}, |_| {}).await;
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ] {
        let answer = reqwest::get(format!("{}{path}", served.base))
            .await
            .unwrap();
        assert_eq!(answer.status(), 200, "{path}");
        assert_eq!(answer.headers()["access-control-allow-origin"], "*");
        let document: Value = answer.json().await.unwrap();
        assert_eq!(document["resource"], served.url, "{document}");
        assert_eq!(document["authorization_servers"], json!([issuer.url]));
        assert_eq!(document["bearer_methods_supported"], json!(["header"]));
    }
    let missing = post(&served.url, &initialize(), &[]).await;
    assert_eq!(missing.status(), 401);
    assert_eq!(
        missing.headers()["www-authenticate"].to_str().unwrap(),
        format!(
            "Bearer resource_metadata=\"{}/.well-known/oauth-protected-resource/mcp\"",
            served.base
        )
    );
    // Health checks stay open.
    let health = reqwest::get(format!("{}/healthz", served.base))
        .await
        .unwrap();
    assert_eq!(health.status(), 200);
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_lists_and_calls_with_a_valid_token() {
    let issuer = Issuer::start();
    let served = served(&issuer, |_| {}, |_| {}).await;
    let token = issuer.token(&served.url, json!({}));
    let (status, _, _) = try_token(&served.url, &token).await;
    assert_eq!(status, 200);
    let scenario = json!({
        "url": served.url,
        "headers": {"Authorization": bearer(&token)},
        "mode": "legacy",
        "actions": [
            {"do": "list"},
            {"do": "call", "name": "mcp__t__echo", "arguments": {"text": "with a token"}},
        ],
    });
    let lines = tokio::task::spawn_blocking(move || py_client(scenario))
        .await
        .unwrap();
    let tools = lines.iter().find_map(|l| l["tools"].as_array()).unwrap();
    assert!(tools.iter().any(|t| t == "mcp__t__echo"), "{lines:?}");
    let result = lines.iter().find_map(|l| l.get("result")).unwrap();
    assert_eq!(result["content"][0]["text"], "with a token", "{lines:?}");
    served.stop().await;
}

#[tokio::test]
async fn a_token_for_another_audience_or_issuer_or_out_of_date_gets_401_invalid_token() {
    let issuer = Issuer::start();
    let served = served(&issuer, |_| {}, |_| {}).await;
    let now = issuer.claims("")["iat"].as_u64().unwrap();
    let cases = [
        (json!({"aud": "http://127.0.0.1:1/mcp"}), "aud"),
        (json!({"aud": ["https://other.example/mcp"]}), "aud"),
        (json!({"aud": null}), "lacks exp, iss or aud"),
        (json!({"iss": "https://evil.example"}), "iss"),
        (json!({"exp": now - 3600}), "expired"),
        (json!({"exp": null}), "lacks exp, iss or aud"),
        (json!({"nbf": now + 3600}), "not valid yet"),
        (json!({"sub": 12}), "claims"),
    ];
    for (changes, said) in cases {
        let token = issuer.token(&served.url, changes.clone());
        let (status, challenge, body) = try_token(&served.url, &token).await;
        assert_eq!(status, 401, "{changes}: {body}");
        assert!(
            challenge.starts_with("Bearer error=\"invalid_token\", error_description=\""),
            "{changes}: {challenge}"
        );
        assert!(challenge.contains("resource_metadata="), "{challenge}");
        assert_eq!(body["error"], "invalid_token", "{changes}");
        let description = body["error_description"].as_str().unwrap();
        assert!(description.contains(said), "{changes}: {description}");
    }
    // Both forms of the resource are this resource.
    let slashed = issuer.token(&served.url, json!({"aud": format!("{}/", served.url)}));
    assert_eq!(try_token(&served.url, &slashed).await.0, 200);
    served.stop().await;
}

#[tokio::test]
async fn forged_signatures_alg_none_and_hmac_with_the_public_key_get_401() {
    let issuer = Issuer::start();
    let served = served(&issuer, |_| {}, |_| {}).await;
    let claims = issuer.claims(&served.url);
    let b64 = |value: &Value| {
        use base64::Engine;
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(value.to_string())
    };
    // Signed by a key the issuer never published, under the published key's id.
    let mut impostor = SigningKey::new("k1");
    let forged = impostor.sign(&claims);
    // The right signature on other claims.
    let good = issuer.token(&served.url, json!({}));
    let mut parts: Vec<&str> = good.split('.').collect();
    let other_claims = b64(
        &json!({"sub": "mallory", "aud": served.url, "iss": issuer.url,
                                   "exp": claims["exp"]}),
    );
    parts[1] = &other_claims;
    let spliced = parts.join(".");
    let unsigned = format!(
        "{}.{}.",
        b64(&json!({"alg": "none", "typ": "JWT", "kid": "k1"})),
        b64(&claims)
    );
    let mut hmac = Header::new(Algorithm::HS256);
    hmac.kid = Some("k1".into());
    let public_key = issuer.key().jwk().to_string();
    let confused = jsonwebtoken::encode(
        &hmac,
        &claims,
        &EncodingKey::from_secret(public_key.as_bytes()),
    )
    .unwrap();
    for (name, token) in [
        ("forged", forged.as_str()),
        ("spliced", spliced.as_str()),
        ("alg none", unsigned.as_str()),
        ("hs256 with the public key", confused.as_str()),
        ("not a jwt", "abc"),
        ("two parts", "abc.def"),
    ] {
        let (status, challenge, body) = try_token(&served.url, token).await;
        assert_eq!(status, 401, "{name}: {body}");
        assert!(
            challenge.contains("error=\"invalid_token\""),
            "{name}: {challenge}"
        );
    }
    impostor.kid = "unpublished".into();
    let (status, _, body) = try_token(&served.url, &impostor.sign(&claims)).await;
    assert_eq!(status, 401, "{body}");
    assert!(
        body["error_description"]
            .as_str()
            .unwrap()
            .contains("key the issuer does not list"),
        "{body}"
    );
    served.stop().await;
}

#[tokio::test]
async fn a_token_without_a_required_scope_gets_403_insufficient_scope() {
    let issuer = Issuer::start();
    let served = served(
        &issuer,
        |oauth| oauth.required_scopes = vec!["mcp:tools".into(), "mcp:read".into()],
        |_| {},
    )
    .await;
    let narrow = issuer.token(&served.url, json!({}));
    let (status, challenge, body) = try_token(&served.url, &narrow).await;
    assert_eq!(status, 403, "{body}");
    assert!(
        challenge.starts_with("Bearer error=\"insufficient_scope\", scope=\"mcp:tools mcp:read\""),
        "{challenge}"
    );
    assert_eq!(body["error"], "insufficient_scope");
    let wide = issuer.token(&served.url, json!({"scope": "mcp:read openid mcp:tools"}));
    assert_eq!(try_token(&served.url, &wide).await.0, 200);
    let listed = issuer.token(
        &served.url,
        json!({"scope": null, "scp": ["mcp:tools", "mcp:read"]}),
    );
    assert_eq!(try_token(&served.url, &listed).await.0, 200);
    let document: Value = reqwest::get(format!(
        "{}/.well-known/oauth-protected-resource/mcp",
        served.base
    ))
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    assert_eq!(
        document["scopes_supported"],
        json!(["mcp:tools", "mcp:read"])
    );
    served.stop().await;
}

#[tokio::test]
async fn a_rotated_key_is_read_once_when_a_token_names_it() {
    let issuer = Issuer::start();
    let served = served(
        &issuer,
        |oauth| oauth.refetch_interval = Duration::ZERO,
        |_| {},
    )
    .await;
    let first = issuer.token(&served.url, json!({}));
    assert_eq!(try_token(&served.url, &first).await.0, 200);
    let reads = issuer.key_set_reads();
    assert_eq!(
        reads, 1,
        "the key set was read at start or for the first token, once"
    );
    assert_eq!(try_token(&served.url, &first).await.0, 200);
    assert_eq!(issuer.key_set_reads(), 1, "known keys are kept");

    let rotated = SigningKey::new("k2");
    issuer.publish(&rotated);
    let mut claims = issuer.claims(&served.url);
    claims["sub"] = json!("bob");
    assert_eq!(try_token(&served.url, &rotated.sign(&claims)).await.0, 200);
    assert_eq!(issuer.key_set_reads(), 2, "one read for the new key id");
    assert_eq!(try_token(&served.url, &rotated.sign(&claims)).await.0, 200);
    assert_eq!(issuer.key_set_reads(), 2);
    served.stop().await;
}

#[tokio::test]
async fn unknown_key_ids_do_not_make_the_gateway_hammer_the_issuer() {
    let issuer = Issuer::start();
    let served = served(
        &issuer,
        |oauth| oauth.refetch_interval = Duration::from_secs(3600),
        |_| {},
    )
    .await;
    let good = issuer.token(&served.url, json!({}));
    assert_eq!(try_token(&served.url, &good).await.0, 200);
    assert_eq!(issuer.key_set_reads(), 1);
    let claims = issuer.claims(&served.url);
    for n in 0..20 {
        let stranger = SigningKey::new(&format!("made-up-{n}"));
        let (status, _, _) = try_token(&served.url, &stranger.sign(&claims)).await;
        assert_eq!(status, 401);
    }
    assert_eq!(
        issuer.key_set_reads(),
        1,
        "no read within the refetch interval"
    );
    served.stop().await;
}

#[tokio::test]
async fn huge_and_deeply_nested_tokens_are_refused_with_401() {
    let issuer = Issuer::start();
    let served = served(&issuer, |_| {}, |_| {}).await;
    let claims = issuer.claims(&served.url);
    let huge = issuer.token(&served.url, json!({"pad": "x".repeat(20_000)}));
    let (status, _, body) = try_token(&served.url, &huge).await;
    assert_eq!(status, 401, "{body}");
    assert!(
        body["error_description"]
            .as_str()
            .unwrap()
            .contains("longer than")
    );
    use base64::Engine;
    let b64 = |text: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(text);
    let deep_header = format!(
        "{{\"alg\":\"ES256\",\"kid\":\"k1\",\"x\":{}{}}}",
        "[".repeat(3000),
        "]".repeat(3000)
    );
    let deep = format!("{}.{}.AAAA", b64(&deep_header), b64(&claims.to_string()));
    assert_eq!(try_token(&served.url, &deep).await.0, 401);
    let deep_claims = format!("{{\"x\":{}{}}}", "[".repeat(3000), "]".repeat(3000));
    let mut header = Header::new(Algorithm::ES256);
    header.kid = Some("k1".into());
    let deep_signed = format!(
        "{}.{}.AAAA",
        b64(&serde_json::to_string(&header).unwrap()),
        b64(&deep_claims)
    );
    assert_eq!(try_token(&served.url, &deep_signed).await.0, 401);
    // Still serving.
    let good = issuer.token(&served.url, json!({}));
    assert_eq!(try_token(&served.url, &good).await.0, 200);
    served.stop().await;
}

#[tokio::test]
async fn a_huge_deep_or_silent_key_set_is_a_bounded_503() {
    let huge = Arc::new(format!("{{\"keys\":[\"{}\"]}}", "x".repeat(2 * 1024 * 1024)).into_bytes());
    let deep =
        Arc::new(format!("{{\"keys\":{}{}}}", "[".repeat(10_000), "]".repeat(10_000)).into_bytes());
    let many: Vec<Value> = (0..100)
        .map(|n| SigningKey::new(&format!("k{n}")).jwk().clone())
        .collect();
    let many = Arc::new(json!({ "keys": many }).to_string().into_bytes());
    let none_usable = Arc::new(br#"{"keys":[{"kty":"oct","k":"c2VjcmV0","kid":"k1"}]}"#.to_vec());
    for (name, answer, said) in [
        ("huge", KeySetAnswer::Raw(huge), "larger than"),
        (
            "deep",
            KeySetAnswer::Raw(deep),
            "not the JSON document expected",
        ),
        ("too many keys", KeySetAnswer::Raw(many), "more than the 64"),
        (
            "only a shared secret",
            KeySetAnswer::Raw(none_usable),
            "no public signing key",
        ),
        ("silent", KeySetAnswer::Silence, "within"),
    ] {
        let issuer = Issuer::start();
        issuer.answer(answer);
        let served = served(
            &issuer,
            |oauth| oauth.fetch_timeout = Duration::from_millis(300),
            |_| {},
        )
        .await;
        let token = issuer.token(&served.url, json!({}));
        let (status, _, body) = try_token(&served.url, &token).await;
        assert_eq!(status, 503, "{name}: {body}");
        assert_eq!(body["error"], "temporarily_unavailable", "{name}");
        let description = body["error_description"].as_str().unwrap();
        assert!(description.contains(said), "{name}: {description}");
        // The server is fine, and the issuer is not asked again at once.
        let health = reqwest::get(format!("{}/healthz", served.base))
            .await
            .unwrap();
        assert_eq!(health.status(), 200);
        served.stop().await;
    }
}

#[tokio::test]
async fn metadata_that_names_another_issuer_is_not_trusted() {
    let issuer = Issuer::start();
    issuer.claim_to_be("https://evil.example");
    let served = served(&issuer, |_| {}, |_| {}).await;
    let token = issuer.token(&served.url, json!({}));
    let (status, _, body) = try_token(&served.url, &token).await;
    assert_eq!(status, 503, "{body}");
    assert!(
        body["error_description"]
            .as_str()
            .unwrap()
            .contains("names the issuer"),
        "{body}"
    );
    assert_eq!(issuer.key_set_reads(), 0);
    // Told when to come back: the issuer is asked again at most once per refetch interval.
    let again = post(
        &served.url,
        &initialize(),
        &[("authorization", &bearer(&token))],
    )
    .await;
    assert_eq!(again.status(), 503);
    assert_eq!(again.headers()["retry-after"], "30");
    served.stop().await;
}

#[tokio::test]
async fn a_configured_key_set_url_needs_no_metadata() {
    let issuer = Issuer::start();
    issuer.claim_to_be("https://someone-else.example");
    let served = served(
        &issuer,
        |oauth| oauth.jwks_url = Some(format!("{}/jwks", issuer.url)),
        |_| {},
    )
    .await;
    let token = issuer.token(&served.url, json!({}));
    assert_eq!(try_token(&served.url, &token).await.0, 200);
    served.stop().await;
}

#[tokio::test]
async fn the_static_token_and_oauth_tokens_are_both_let_in() {
    let issuer = Issuer::start();
    let served = served(
        &issuer,
        |_| {},
        |http| http.token = Some(mcpmux_gateway::Token::new("static-secret").unwrap()),
    )
    .await;
    assert_eq!(try_token(&served.url, "static-secret").await.0, 200);
    let token = issuer.token(&served.url, json!({}));
    assert_eq!(try_token(&served.url, &token).await.0, 200);
    let (status, challenge, _) = try_token(&served.url, "static-secreT").await;
    assert_eq!(status, 401);
    assert!(
        challenge.starts_with("Bearer realm=\"mcpmux\", error=\"invalid_token\""),
        "{challenge}"
    );
    served.stop().await;
}

#[tokio::test]
async fn oauth_settings_are_checked_before_anything_is_bound() {
    let hub = mcpmux::Hub::start(vec![], hub_options()).unwrap();
    let gateway = mcpmux_gateway::Gateway::new(hub.clone(), GatewayOptions::default());
    let refuse = |addr: &str, issuer: &str| {
        let mut options = HttpOptions::new(addr.parse().unwrap());
        options.oauth = Some(OAuthOptions::new(issuer));
        HttpServer::bind(gateway.clone(), options)
    };
    // OAuth alone lets a public address be served, once the resource is named; the check
    // comes before the bind, so nothing listens on 0.0.0.0 here.
    let Err(HttpError::OAuth(OAuthError::NeedsResource { .. })) =
        refuse("0.0.0.0:0", "https://as.example.com").await
    else {
        panic!("bound a public address without a resource identifier");
    };
    let Err(HttpError::OAuth(error)) = refuse("127.0.0.1:0", "http://as.example.com").await else {
        panic!("took a plain http issuer");
    };
    assert!(error.to_string().contains("https"), "{error}");
    hub.shutdown().await;
}

/// The Python SDK client (`tests/clients/py-client.py`) run to its end: its JSON lines.
fn py_client(scenario: Value) -> Vec<Value> {
    let script = workspace().join("crates/mcpmux-gateway/tests/clients/py-client.py");
    let mut child = Command::new(venv_bin("python"))
        .arg(script)
        .arg(scenario.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let status = eventually_blocking(Duration::from_secs(60), Duration::from_millis(10), || {
        child.try_wait().unwrap()
    });
    if status.is_none() {
        let _ = child.kill();
    }
    let output = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        status.is_some_and(|s| s.success()),
        "the Python SDK client failed ({status:?}):\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
}
