//! The two Rust clients the benches compare: raw rmcp, and the mcpmux hub over one server.

use anyhow::Context;
use mcpmux::{Hub, HubOptions, ServerSpec};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use serde_json::json;

/// One way of talking to the server: how to call echo and how to close.
pub trait Client: Clone + Send + Sync + 'static {
    /// Calls the server's `echo` tool with `text`; the text it answered.
    fn call_echo(&self, text: String) -> impl Future<Output = anyhow::Result<String>> + Send;
    /// Closes the connection and stops the server.
    fn close(self) -> impl Future<Output = ()> + Send;
}

/// The mcpmux hub over one stdio server named `bench`.
#[derive(Clone)]
pub struct HubClient(Hub);

impl Client for HubClient {
    async fn call_echo(&self, text: String) -> anyhow::Result<String> {
        let result = self
            .0
            .call("mcp__bench__echo", json!({"text": text}))
            .await?;
        Ok(result.to_text())
    }
    async fn close(self) {
        self.0.shutdown().await
    }
}

/// Starts a hub over `program args` and waits until its tools are listed; the hub and how
/// many tools it lists.
pub async fn hub_connect(program: &str, args: &[String]) -> anyhow::Result<(HubClient, usize)> {
    let hub = Hub::start(
        vec![ServerSpec::stdio("bench", program, args.iter().cloned())],
        // The era cache is what a real CLI start has on the second run; measure that.
        HubOptions::ephemeral(),
    )?;
    hub.wait_ready().await?;
    let tools = hub.tools().len();
    Ok((HubClient(hub), tools))
}

/// A raw rmcp client session: no naming, validation, policy or result shaping.
#[derive(Clone)]
pub struct RawClient(std::sync::Arc<rmcp::service::RunningService<rmcp::RoleClient, ()>>);

impl Client for RawClient {
    async fn call_echo(&self, text: String) -> anyhow::Result<String> {
        let mut params = CallToolRequestParams::new("echo");
        params.arguments = json!({"text": text}).as_object().cloned();
        let result = self.0.call_tool(params).await?;
        let value = serde_json::to_value(&result)?;
        Ok(value["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_string())
    }
    async fn close(self) {
        if let Ok(service) = std::sync::Arc::try_unwrap(self.0) {
            let _ = service.cancel().await;
        }
    }
}

/// Spawns `program args`, does rmcp's handshake and lists the tools; the session and how many
/// tools it lists.
pub async fn raw_connect(program: &str, args: &[String]) -> anyhow::Result<(RawClient, usize)> {
    let mut command = tokio::process::Command::new(program);
    command.args(args).process_group(0);
    let (transport, _stderr) = TokioChildProcess::builder(command)
        .stderr(std::process::Stdio::null())
        .spawn()
        .with_context(|| format!("starting {program}"))?;
    let service = ().serve(transport).await?;
    let tools = service.list_all_tools().await?.len();
    Ok((RawClient(std::sync::Arc::new(service)), tools))
}
