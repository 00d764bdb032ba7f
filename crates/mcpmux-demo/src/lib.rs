//! The embedded demo server: three real tools (echo, add, current time) served in-process, so
//! `mcpmux tools` and `mcpmux call` (and the library's example) work on a fresh machine with
//! nothing configured. It is labelled as the demo everywhere it shows. A crate of its own so
//! the library a harness embeds does not carry it.

use std::sync::Arc;

use rmcp::ServerHandler;
use rmcp::ServiceExt;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorData,
    Implementation, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
    Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{Value, json};

use mcpmux::config::{InProcessServer, Origin, ServerSpec, TransportSpec};

/// The demo server's name in `mcpmux servers` and in its tools' names (`mcp__demo__echo`).
pub const DEMO_SERVER: &str = "demo";

/// A spec for the in-process demo server.
pub fn demo_spec() -> ServerSpec {
    let server = InProcessServer {
        label: "mcpmux demo".into(),
        serve: Arc::new(|stream| {
            Box::pin(async move {
                match Demo.serve(stream).await {
                    Ok(running) => {
                        let _ = running.waiting().await;
                    }
                    Err(e) => tracing::debug!("demo server session ended early: {e}"),
                }
            })
        }),
    };
    let mut spec = ServerSpec::new(DEMO_SERVER, TransportSpec::InProcess(server));
    spec.origin = Origin::Demo;
    spec
}

struct Demo;

fn tool(name: &str, description: &str, schema: Value) -> Option<Tool> {
    serde_json::from_value(json!({
        "name": name,
        "description": description,
        "inputSchema": schema,
        "annotations": {"readOnlyHint": true, "openWorldHint": false}
    }))
    .ok()
}

fn demo_tools() -> Vec<Tool> {
    [
        tool(
            "echo",
            "[mcpmux demo] Returns the text it is given.",
            json!({"type": "object", "properties": {"text": {"type": "string", "description": "Text to echo back"}}, "required": ["text"]}),
        ),
        tool(
            "add",
            "[mcpmux demo] Adds two numbers.",
            json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}),
        ),
        tool(
            "time",
            "[mcpmux demo] The current date and time in UTC (RFC 3339).",
            json!({"type": "object", "properties": {}}),
        ),
    ]
    .into_iter()
    .flatten()
    .collect()
}

fn invalid(message: impl Into<String>) -> ErrorData {
    ErrorData::invalid_params(message.into(), None)
}

fn run(name: &str, args: &serde_json::Map<String, Value>) -> Result<CallToolResult, ErrorData> {
    match name {
        "echo" => {
            let text = args
                .get("text")
                .and_then(Value::as_str)
                .ok_or_else(|| invalid("`text` (a string) is required"))?;
            Ok(CallToolResult::success(vec![ContentBlock::text(text)]))
        }
        "add" => {
            let number = |k: &str| {
                args.get(k)
                    .and_then(Value::as_f64)
                    .ok_or_else(|| invalid(format!("`{k}` (a number) is required")))
            };
            let sum = number("a")? + number("b")?;
            let mut result = CallToolResult::success(vec![ContentBlock::text(format_number(sum))]);
            result.structured_content = Some(json!({"sum": sum}));
            Ok(result)
        }
        "time" => Ok(CallToolResult::success(vec![ContentBlock::text(
            chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        )])),
        other => Err(ErrorData::invalid_params(
            format!("the demo server has no tool `{other}`"),
            None,
        )),
    }
}

/// `5` rather than `5.0` for whole numbers.
fn format_number(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e15 {
        format!("{}", n as i64)
    } else {
        n.to_string()
    }
}

impl ServerHandler for Demo {
    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::default();
        info.capabilities = ServerCapabilities::builder().enable_tools().build();
        info.server_info = Implementation::new("mcpmux-demo", env!("CARGO_PKG_VERSION"));
        info.instructions =
            Some("The mcpmux demo server: configure your own servers to replace it.".into());
        info
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(demo_tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.unwrap_or_default();
        run(&request.name, &args).map(CallToolResponse::Complete)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::time::Duration;

    use mcpmux::{Era, Hub, HubOptions};

    use super::*;

    #[test]
    fn tools_compute_real_answers() {
        let args = |v: Value| v.as_object().cloned().unwrap_or_default();
        let sum = run("add", &args(json!({"a": 2, "b": 3}))).map(|r| r.structured_content);
        assert_eq!(sum, Ok(Some(json!({"sum": 5.0}))));
        assert!(run("echo", &args(json!({}))).is_err());
        assert_eq!(demo_tools().len(), 3);
        assert_eq!(format_number(5.0), "5");
        assert_eq!(format_number(2.5), "2.5");
    }

    #[tokio::test]
    async fn in_process_demo_server_works_without_any_process() {
        let options = HubOptions::ephemeral().with_shutdown_grace(Duration::from_millis(200));
        let hub = Hub::start(vec![demo_spec()], options).unwrap();
        hub.wait_ready().await.unwrap();
        let demo = hub
            .servers()
            .into_iter()
            .find(|s| s.name == "demo")
            .unwrap();
        assert_eq!(demo.era, Some(Era::Stateless), "{:?}", demo.state);
        let names: Vec<String> = hub.tools().into_iter().map(|t| t.name).collect();
        assert_eq!(
            names,
            ["mcp__demo__add", "mcp__demo__echo", "mcp__demo__time"]
        );
        let time = hub
            .call("mcp__demo__time", json!({}))
            .await
            .unwrap()
            .to_text();
        assert!(time.ends_with('Z') && time.contains('T'), "{time}");
        hub.shutdown().await;
    }
}
