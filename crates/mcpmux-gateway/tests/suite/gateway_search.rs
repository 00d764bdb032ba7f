//! Tool search at the gateway, in this process, over real sockets: what an identity's access
//! rule keeps from it is never returned by `search_tools` nor callable through `call_tool`, and
//! the index follows an upstream server's tool list as it changes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use mcpmux_gateway::{Access, GatewayOptions, SearchOptions};
use serde_json::{Value, json};
use support::*;

const TOKENS: &str = r#"
[rules.delete-only]
tools = ["mcp__t__echo", "mcp__t__calendar_delete_event"]

[[tokens]]
name = "alice"
token = "alice-token-0123456789"

[[tokens]]
name = "bob"
token = "bob-token-0123456789"
rule = "delete-only"
"#;

const ALICE: &str = "alice-token-0123456789";
const BOB: &str = "bob-token-0123456789";

async fn served(args: &[&str], access: Option<&str>) -> Served {
    let access = access.map(|text| Arc::new(Access::parse(text).unwrap()));
    let options = GatewayOptions::default().with_search(Some(SearchOptions::default()));
    Served::start(vec![fast_testserver("t", args)], options, move |http| {
        http.access = access;
    })
    .await
}

/// One request in a session: its JSON-RPC answer.
struct Session {
    url: String,
    auth: String,
    id: String,
}

impl Session {
    async fn open(url: &str, bearer: &str) -> Session {
        let auth = format!("Bearer {bearer}");
        let headers = [("authorization", auth.as_str())];
        let headers = if bearer.is_empty() {
            &[][..]
        } else {
            &headers[..]
        };
        let id = open_session(&reqwest::Client::new(), url, headers).await;
        Session {
            url: url.to_string(),
            auth,
            id,
        }
    }

    async fn rpc(&self, method: &str, params: Value) -> Value {
        let body = json!({"jsonrpc": "2.0", "id": 5, "method": method, "params": params});
        let headers = [
            ("mcp-session-id", self.id.as_str()),
            ("mcp-protocol-version", "2025-06-18"),
            ("authorization", self.auth.as_str()),
        ];
        let headers = if self.auth == "Bearer " {
            &headers[..2]
        } else {
            &headers[..]
        };
        let text = post(&self.url, &body, headers).await.text().await.unwrap();
        serde_json::from_str::<Value>(&text)
            .ok()
            .unwrap_or_else(|| {
                text.lines()
                    .filter_map(|line| line.strip_prefix("data:"))
                    .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
                    .find(|message| message["id"] == 5)
                    .unwrap_or_else(|| panic!("no answer in {text}"))
            })
    }

    /// The names `search_tools` returns for `query`.
    async fn search(&self, query: &str) -> Vec<String> {
        let params = json!({"name": "search_tools", "arguments": {"query": query, "limit": 20}});
        let answer = self.rpc("tools/call", params).await;
        let text = answer["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("{answer}"));
        let found: Value = serde_json::from_str(text).unwrap();
        found["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_string())
            .collect()
    }
}

#[tokio::test]
async fn a_search_never_returns_nor_calls_a_tool_outside_the_caller_s_rule() {
    let served = served(&["--many-tools", "172"], Some(TOKENS)).await;
    let alice = Session::open(&served.url, ALICE).await;
    let bob = Session::open(&served.url, BOB).await;
    let found = alice.search("calendar event").await;
    assert!(
        found.len() > 1 && found.contains(&"mcp__t__calendar_get_event".to_string()),
        "{found:?}"
    );
    assert_eq!(
        bob.search("calendar event").await,
        ["mcp__t__calendar_delete_event"]
    );

    // call_tool is the direct call: a tool outside the rule is unknown to bob.
    let call = json!({"name": "call_tool",
                      "arguments": {"name": "mcp__t__calendar_get_event", "arguments": {"id": "e1"}}});
    let refused = bob.rpc("tools/call", call.clone()).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    let ran = alice.rpc("tools/call", call).await;
    assert_eq!(ran["result"]["isError"], false, "{ran}");

    // What bob lists after his search: the meta-tools and his one find.
    let listed = bob.rpc("tools/list", json!({})).await;
    let names: Vec<&str> = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["search_tools", "call_tool", "mcp__t__calendar_delete_event"]
    );
    served.stop().await;
}

#[tokio::test]
async fn the_index_follows_an_upstream_server_s_changed_tool_list() {
    let served = served(&[], None).await;
    let session = Session::open(&served.url, "").await;
    let before = session.search("extra").await;
    assert!(!before.contains(&"mcp__t__extra".to_string()), "{before:?}");
    let change = json!({"name": "mcp__t__change_tools", "arguments": {}});
    let changed = session.rpc("tools/call", change).await;
    assert_eq!(changed["result"]["isError"], false, "{changed}");
    let found = eventually_async(
        Duration::from_secs(10),
        Duration::from_millis(20),
        || async {
            let found = session.search("extra").await;
            found
                .contains(&"mcp__t__extra".to_string())
                .then_some(found)
        },
    )
    .await;
    assert!(found.is_some(), "the added tool was never found");
    served.stop().await;
}
