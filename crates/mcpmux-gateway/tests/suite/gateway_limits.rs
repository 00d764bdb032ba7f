//! Per-client rate limits at the gateway's door, in this process, over real sockets: a client
//! past its burst gets 429 with `Retry-After` and a JSON-RPC error while another client goes
//! on; clients told apart by their token's subject, else by their address; failed
//! authentication counted against the address.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::net::IpAddr;
use std::num::NonZeroU32;

use mcpmux_gateway::{GatewayOptions, HttpOptions, OAuthOptions, RateLimit, Token};
use serde_json::{Value, json};
use support::*;

/// One request per hour, after a burst of `burst`: a test never sees a bucket refill.
fn hourly(burst: u32) -> RateLimit {
    let mut limit = RateLimit::new("1/h".parse().unwrap());
    limit.burst = NonZeroU32::new(burst);
    limit
}

async fn served(http: impl FnOnce(&mut HttpOptions)) -> Served {
    Served::start(
        vec![fast_testserver("t", &[])],
        GatewayOptions::default(),
        http,
    )
    .await
}

/// An `initialize` sent from the address `from` with `headers`.
async fn initialize_from(url: &str, from: &str, headers: &[(&str, &str)]) -> reqwest::Response {
    let client = reqwest::Client::builder()
        .local_address(from.parse::<IpAddr>().unwrap())
        .build()
        .unwrap();
    let mut request = client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(initialize().to_string());
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request.send().await.unwrap()
}

#[track_caller]
fn assert_limited(answer: &reqwest::Response) {
    assert_eq!(answer.status(), 429);
    let retry: u64 = answer.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(retry > 0 && retry <= 3600, "Retry-After: {retry}");
}

#[tokio::test]
async fn a_subject_past_its_burst_gets_429_and_another_subject_goes_on() {
    let issuer = Issuer::start();
    let served = served(|http| {
        http.oauth = Some(OAuthOptions::new(issuer.url.clone()));
        http.rate_limit = Some(hourly(2));
    })
    .await;
    let alice = format!(
        "Bearer {}",
        issuer.token(&served.url, json!({"sub": "alice"}))
    );
    let bob = format!(
        "Bearer {}",
        issuer.token(&served.url, json!({"sub": "bob"}))
    );
    for _ in 0..2 {
        let answer = initialize_from(&served.url, "127.0.0.1", &[("authorization", &alice)]).await;
        let status = answer.status();
        assert_eq!(status, 200, "{}", answer.text().await.unwrap());
    }
    let limited = initialize_from(&served.url, "127.0.0.1", &[("authorization", &alice)]).await;
    assert_limited(&limited);
    let body: Value = limited.json().await.unwrap();
    assert_eq!(body["jsonrpc"], "2.0");
    assert_eq!(body["error"]["code"], -32000);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("rate limit"),
        "{body}"
    );
    // Same address, another subject: its own bucket.
    let other = initialize_from(&served.url, "127.0.0.1", &[("authorization", &bob)]).await;
    assert_eq!(other.status(), 200);
    // Health checks and metadata are never limited.
    for path in ["/healthz", "/.well-known/oauth-protected-resource"] {
        let answer = reqwest::get(format!("{}{path}", served.base))
            .await
            .unwrap();
        assert_eq!(answer.status(), 200, "{path}");
    }
    served.stop().await;
}

#[tokio::test]
async fn without_authentication_clients_are_told_apart_by_address() {
    let served = served(|http| http.rate_limit = Some(hourly(1))).await;
    assert_eq!(
        initialize_from(&served.url, "127.0.0.1", &[])
            .await
            .status(),
        200
    );
    assert_limited(&initialize_from(&served.url, "127.0.0.1", &[]).await);
    // 127.0.0.2 is loopback too (the whole 127/8 is), and another client.
    assert_eq!(
        initialize_from(&served.url, "127.0.0.2", &[])
            .await
            .status(),
        200
    );
    served.stop().await;
}

#[tokio::test]
async fn the_static_token_is_one_client_and_failed_attempts_count_against_the_address() {
    let served = served(|http| {
        http.token = Some(Token::new("static-secret").unwrap());
        http.rate_limit = Some(hourly(2));
    })
    .await;
    let wrong = [("authorization", "Bearer guess")];
    assert_eq!(
        initialize_from(&served.url, "127.0.0.3", &wrong)
            .await
            .status(),
        401
    );
    assert_eq!(
        initialize_from(&served.url, "127.0.0.3", &wrong)
            .await
            .status(),
        401
    );
    assert_limited(&initialize_from(&served.url, "127.0.0.3", &wrong).await);
    // The token's holder is its own client, from any address.
    let right = [("authorization", "Bearer static-secret")];
    assert_eq!(
        initialize_from(&served.url, "127.0.0.3", &right)
            .await
            .status(),
        200
    );
    assert_eq!(
        initialize_from(&served.url, "127.0.0.4", &right)
            .await
            .status(),
        200
    );
    assert_limited(&initialize_from(&served.url, "127.0.0.5", &right).await);
    served.stop().await;
}
