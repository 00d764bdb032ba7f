//! The test server over HTTP as a remote server: its `/admin/*` knobs and, in `--oauth` mode,
//! the spec and options a hub logs in with and the authorization server's counters.

use std::path::Path;
use std::time::Duration;

use mcpmux::auth::TokenStore;
use mcpmux::{HubOptions, ServerSpec};
use serde_json::Value;

use super::{ServerProcess, testserver_http};

/// The origin of an `http://ADDR/mcp` URL: where the admin and OAuth endpoints live.
pub fn origin(mcp_url: &str) -> String {
    mcp_url.strip_suffix("/mcp").unwrap_or(mcp_url).to_string()
}

/// `POST` to the test server's `path_and_query` (an admin knob); panics unless it succeeded.
pub async fn admin(mcp_url: &str, path_and_query: &str) {
    let url = format!("{}{path_and_query}", origin(mcp_url));
    let response = reqwest::Client::new().post(&url).send().await.unwrap();
    assert!(
        response.status().is_success(),
        "{url}: {}",
        response.status()
    );
}

/// The test server in `--oauth` mode (and `args`) over streamable HTTP.
pub fn oauth_server(args: &[&str]) -> ServerProcess {
    let mut all = vec!["--oauth"];
    all.extend_from_slice(args);
    testserver_http(&all)
}

/// `GET /admin/oauth/stats`: the authorization server's counters.
pub async fn oauth_stats(server: &ServerProcess) -> Value {
    reqwest::get(format!("{}/admin/oauth/stats", origin(&server.url)))
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// The OAuth-protected test server as `remote`, with room for a login.
pub fn oauth_spec(url: &str) -> ServerSpec {
    ServerSpec::http("remote", url)
        .with_startup_timeout(Duration::from_secs(20))
        .with_call_timeout(Duration::from_secs(20))
}

/// Hub options keeping tokens in the file `store`.
pub fn oauth_options(store: &Path) -> HubOptions {
    HubOptions::ephemeral()
        .with_shutdown_grace(Duration::from_millis(200))
        .with_token_store(TokenStore::file(store))
}

/// `POST /admin/oauth/{what}` (`revoke`, `expire`) on the OAuth test server.
pub async fn oauth_admin(server: &ServerProcess, what: &str) {
    admin(&server.url, &format!("/admin/oauth/{what}")).await;
}
