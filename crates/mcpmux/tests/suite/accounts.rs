//! Two accounts of one server: entries with the same command and args but different `env` are
//! two servers, each with its own tools, when the person configured them by hand.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use mcpmux::{ServerSpec, ServerState};
use serde_json::json;

fn account(name: &str, token: &str) -> ServerSpec {
    support::stdio_testserver(name, &[]).with_env("GITHUB_TOKEN", token)
}

#[tokio::test]
async fn two_entries_with_one_command_and_different_env_both_get_their_tools() {
    let hub = support::started(vec![
        account("github-work", "w"),
        account("github-personal", "p"),
    ])
    .await;

    for status in hub.servers() {
        assert!(
            matches!(status.state, ServerState::Connected { tools, .. } if tools > 0),
            "{} is {:?}",
            status.name,
            status.state
        );
    }
    for name in ["github-work", "github-personal"] {
        let result = hub
            .call(&format!("mcp__{name}__echo"), json!({"text": name}))
            .await
            .unwrap();
        assert!(result.to_text().contains(name), "{}", result.to_text());
    }
    hub.shutdown().await;
}
