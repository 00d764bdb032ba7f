//! Access rules at the gateway, in this process, over real sockets: two named tokens of the
//! tokens file see different tool sets through one gateway, and a call outside a token's rule
//! is refused as an unknown tool; a session made with one token is unknown to another; an
//! OAuth token's scope (or group) picks its rule, and a token no rule matches is refused;
//! resources and prompts follow the rule; a rule's rate is per identity; a tool change
//! outside a session's view is not announced to it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::sync::Arc;

use mcpmux_gateway::{Access, GatewayOptions, HttpOptions, OAuthOptions};
use serde_json::{Value, json};
use support::*;

const ECHO: &str = "mcp__t__echo";

async fn served(access: &str, http: impl FnOnce(&mut HttpOptions)) -> Served {
    let access = Arc::new(Access::parse(access).unwrap());
    Served::start(
        vec![fast_testserver("t", &[])],
        GatewayOptions::default(),
        move |options| {
            options.access = Some(access);
            http(options);
        },
    )
    .await
}

/// The JSON-RPC message answering request `id` in an answer (JSON, or SSE events).
async fn answer_to(answer: reqwest::Response, id: u64) -> Value {
    let text = answer.text().await.unwrap();
    serde_json::from_str::<Value>(&text)
        .ok()
        .unwrap_or_else(|| {
            text.lines()
                .filter_map(|line| line.strip_prefix("data:"))
                .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
                .find(|message| message["id"] == id)
                .unwrap_or_else(|| panic!("no answer to {id} in {text}"))
        })
}

/// A session opened with `bearer`, its handshake done: its id.
async fn session(url: &str, bearer: &str) -> String {
    let auth = format!("Bearer {bearer}");
    open_session(&reqwest::Client::new(), url, &[("authorization", &auth)]).await
}

fn in_session<'a>(auth: &'a str, id: &'a str) -> [(&'static str, &'a str); 3] {
    [
        ("authorization", auth),
        ("mcp-session-id", id),
        ("mcp-protocol-version", "2025-06-18"),
    ]
}

/// `method` with `params` in session `id`, with `bearer`: the HTTP status and the answer.
async fn rpc(url: &str, bearer: &str, id: &str, method: &str, params: Value) -> (u16, Value) {
    let auth = format!("Bearer {bearer}");
    let body = json!({"jsonrpc": "2.0", "id": 5, "method": method, "params": params});
    let answer = post(url, &body, &in_session(&auth, id)).await;
    let status = answer.status().as_u16();
    if status != 200 {
        return (status, Value::Null);
    }
    (status, answer_to(answer, 5).await)
}

/// The names `tools/list` gives `bearer`'s session (one page: the test server's few tools).
async fn tool_names(url: &str, bearer: &str) -> Vec<String> {
    let id = session(url, bearer).await;
    let (_, listed) = rpc(url, bearer, &id, "tools/list", json!({})).await;
    let mut names: Vec<String> = listed["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{listed}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    names.sort();
    names
}

/// A tool of `names` that is not the echo.
fn another(names: &[String]) -> String {
    names.iter().find(|n| *n != ECHO).unwrap().clone()
}

const TOKENS: &str = r#"
[rules.echo-only]
tools = ["mcp__t__echo"]

[[tokens]]
name = "alice"
token = "alice-token-0123456789"

[[tokens]]
name = "bob"
token = "bob-token-0123456789"
rule = "echo-only"
"#;

#[tokio::test]
async fn two_named_tokens_see_different_tools_through_one_gateway() {
    let served = served(TOKENS, |_| {}).await;
    let (alice, bob) = ("alice-token-0123456789", "bob-token-0123456789");
    let all = tool_names(&served.url, alice).await;
    assert!(all.len() > 1 && all.contains(&ECHO.to_string()), "{all:?}");
    assert_eq!(tool_names(&served.url, bob).await, vec![ECHO.to_string()]);

    // A call outside bob's rule is an unknown tool to him, and runs for alice.
    let other = another(&all);
    let bobs = session(&served.url, bob).await;
    let call = json!({"name": other, "arguments": {}});
    let (_, refused) = rpc(&served.url, bob, &bobs, "tools/call", call.clone()).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    let echo = json!({"name": ECHO, "arguments": {"text": "hi"}});
    let (_, echoed) = rpc(&served.url, bob, &bobs, "tools/call", echo).await;
    assert_eq!(echoed["result"]["content"][0]["text"], "hi", "{echoed}");
    let alices = session(&served.url, alice).await;
    let (_, ran) = rpc(&served.url, alice, &alices, "tools/call", call).await;
    assert!(ran.get("result").is_some(), "{ran}");

    // alice's session is unknown to bob's token.
    let (status, _) = rpc(&served.url, bob, &alices, "tools/list", json!({})).await;
    assert_eq!(status, 404);
    // Neither the unnamed nor a wrong token gets in.
    let wrong = post(
        &served.url,
        &initialize(),
        &[("authorization", "Bearer alice-token-012345678")],
    )
    .await;
    assert_eq!(wrong.status(), 401);
    served.stop().await;
}

#[tokio::test]
async fn an_oauth_token_s_scope_narrows_what_it_may_list_and_call() {
    let issuer = Issuer::start();
    let rules = r#"
[rules.echo-only]
tools = ["mcp__t__echo"]

[[oauth]]
scope = "mcp:all"

[[oauth]]
scope = "mcp:echo"
rule = "echo-only"

[[oauth]]
group = "readers"
rule = "echo-only"
"#;
    let served = served(rules, |http| {
        http.oauth = Some(OAuthOptions::new(issuer.url.clone()));
    })
    .await;
    let token =
        |sub: &str, scope: &str| issuer.token(&served.url, json!({"sub": sub, "scope": scope}));
    let (carol, dave) = (token("carol", "mcp:all"), token("dave", "mcp:echo other"));
    let all = tool_names(&served.url, &carol).await;
    assert!(all.len() > 1, "{all:?}");
    assert_eq!(tool_names(&served.url, &dave).await, vec![ECHO.to_string()]);
    let daves = session(&served.url, &dave).await;
    let call = json!({"name": another(&all), "arguments": {}});
    let (_, refused) = rpc(&served.url, &dave, &daves, "tools/call", call).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    // The groups claim picks a rule too.
    let frank = issuer.token(
        &served.url,
        json!({"sub": "frank", "scope": "mcp:tools", "groups": ["staff", "readers"]}),
    );
    assert_eq!(
        tool_names(&served.url, &frank).await,
        vec![ECHO.to_string()]
    );
    // A valid token that no entry matches is refused.
    let eve = token("eve", "mcp:tools");
    let refused = post(
        &served.url,
        &initialize(),
        &[("authorization", &format!("Bearer {eve}"))],
    )
    .await;
    assert_eq!(refused.status(), 403);
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error"], "access_denied", "{body}");
    served.stop().await;
}

#[tokio::test]
async fn resources_and_prompts_of_a_server_outside_a_rule_are_neither_listed_nor_read() {
    let rules = r#"
[rules.elsewhere]
servers = ["other-*"]

[[tokens]]
name = "admin"
token = "admin-token-0123456789"

[[tokens]]
name = "guest"
token = "guest-token-0123456789"
rule = "elsewhere"
"#;
    let access = Arc::new(Access::parse(rules).unwrap());
    let served = Served::start(
        vec![fast_testserver("t", &["--prompts"])],
        GatewayOptions::default(),
        move |options| options.access = Some(access),
    )
    .await;
    let (admin, guest) = ("admin-token-0123456789", "guest-token-0123456789");
    let count = |answer: &Value, list: &str| answer["result"][list].as_array().map(Vec::len);
    let admins = session(&served.url, admin).await;
    let guests = session(&served.url, guest).await;
    for (method, list) in [
        ("resources/list", "resources"),
        ("resources/templates/list", "resourceTemplates"),
        ("prompts/list", "prompts"),
    ] {
        let (_, seen) = rpc(&served.url, admin, &admins, method, json!({})).await;
        assert!(count(&seen, list).unwrap() > 0, "{method}: {seen}");
        let (_, hidden) = rpc(&served.url, guest, &guests, method, json!({})).await;
        assert_eq!(count(&hidden, list), Some(0), "{method}: {hidden}");
    }
    let read = json!({"uri": "test://counter"});
    let (_, content) = rpc(&served.url, admin, &admins, "resources/read", read.clone()).await;
    assert!(content.get("result").is_some(), "{content}");
    let (_, refused) = rpc(&served.url, guest, &guests, "resources/read", read.clone()).await;
    assert_eq!(refused["error"]["code"], -32002, "{refused}");
    let (_, refused) = rpc(&served.url, guest, &guests, "resources/subscribe", read).await;
    assert_eq!(refused["error"]["code"], -32002, "{refused}");
    let (_, listed) = rpc(&served.url, admin, &admins, "prompts/list", json!({})).await;
    let prompt = listed["result"]["prompts"][0]["name"].as_str().unwrap();
    let get = json!({"name": prompt, "arguments": {"name": "x"}});
    let (_, refused) = rpc(&served.url, guest, &guests, "prompts/get", get).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    served.stop().await;
}

#[tokio::test]
async fn a_rule_s_rate_limit_is_counted_per_identity() {
    let rules = r#"
[rules.slow]
rate_limit = "1/h"
rate_burst = 2

[[tokens]]
name = "a"
token = "a-token-0123456789ab"
rule = "slow"

[[tokens]]
name = "b"
token = "b-token-0123456789ab"
rule = "slow"
"#;
    let served = served(rules, |_| {}).await;
    let initialize_with = |token: &'static str| {
        let url = served.url.clone();
        async move {
            let auth = format!("Bearer {token}");
            let answer = post(&url, &initialize(), &[("authorization", &auth)]).await;
            let status = answer.status().as_u16();
            let _ = answer.text().await;
            status
        }
    };
    assert_eq!(initialize_with("a-token-0123456789ab").await, 200);
    assert_eq!(initialize_with("a-token-0123456789ab").await, 200);
    assert_eq!(initialize_with("a-token-0123456789ab").await, 429);
    // Another identity under the same rule has a bucket of its own.
    assert_eq!(initialize_with("b-token-0123456789ab").await, 200);
    served.stop().await;
}

/// The session's standalone stream (`GET /mcp`), open.
async fn listen(url: &str, bearer: &str, id: &str) -> reqwest::Response {
    let auth = format!("Bearer {bearer}");
    let mut request = reqwest::Client::new()
        .get(url)
        .header("accept", "text/event-stream");
    for (name, value) in in_session(&auth, id) {
        request = request.header(name, value);
    }
    let stream = request.send().await.unwrap();
    assert_eq!(stream.status(), 200);
    stream
}

/// Whether `needle` comes on `stream` within `within`.
async fn hears(stream: &mut reqwest::Response, needle: &str, within: std::time::Duration) -> bool {
    let mut seen = String::new();
    tokio::time::timeout(within, async {
        while let Ok(Some(chunk)) = stream.chunk().await {
            seen.push_str(&String::from_utf8_lossy(&chunk));
            if seen.contains(needle) {
                return true;
            }
        }
        false
    })
    .await
    .unwrap_or(false)
}

#[tokio::test]
async fn a_tool_change_outside_a_session_s_view_is_not_announced_to_it() {
    let served = served(TOKENS, |_| {}).await;
    let (alice, bob) = ("alice-token-0123456789", "bob-token-0123456789");
    // bob's session is told first, were it told at all: alice hearing hers means his went out.
    let bobs = session(&served.url, bob).await;
    let alices = session(&served.url, alice).await;
    let mut bob_hears = listen(&served.url, bob, &bobs).await;
    let mut alice_hears = listen(&served.url, alice, &alices).await;
    let toggle = json!({"name": "mcp__t__change_tools", "arguments": {}});
    let (_, toggled) = rpc(&served.url, alice, &alices, "tools/call", toggle).await;
    assert!(toggled.get("result").is_some(), "{toggled}");
    let changed = "notifications/tools/list_changed";
    assert!(
        hears(
            &mut alice_hears,
            changed,
            std::time::Duration::from_secs(10)
        )
        .await,
        "alice's view changed: she is told"
    );
    assert!(
        !hears(&mut bob_hears, changed, std::time::Duration::from_secs(1)).await,
        "bob's view (echo only) did not change: he is not told"
    );
    drop((alice_hears, bob_hears));
    served.stop().await;
}
