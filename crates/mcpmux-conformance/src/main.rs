//! `mcpmux-conformance`: the client under test of the official MCP conformance suite
//! (`@modelcontextprotocol/conformance`, client mode), driven through the mcpmux library itself
//! — the same `Hub`, transports, handshake and host callbacks a harness uses, no protocol code
//! of its own.
//!
//! The suite's contract: the scenario server's URL is the last argument,
//! `MCP_CONFORMANCE_SCENARIO` names the scenario and `MCP_CONFORMANCE_CONTEXT` carries
//! scenario data as JSON (credentials for the auth scenarios). The suite grades what the server
//! saw; the exit code says whether the client thinks it got through (0) or not (1).
//!
//! Every scenario runs the same way: connect, list the tools, call each one with arguments
//! made from its input schema (a few scenarios' tools get known arguments), answering the
//! server's elicitation, sampling and roots requests through the host callbacks on the way.
//! Logs go to stderr (`MCPMUX_LOG`, default `info,mcpmux=debug`); the suite keeps them.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, bail};
use std::sync::Arc;

use mcpmux::auth::HeadlessAuthorizer;
use mcpmux::config::{AuthSpec, IdentityProvider, OAuthSpec, TokenSource};
use mcpmux::host::{ElicitationKind, ElicitationReply, ElicitationRequest, SamplingReply};
use mcpmux::{Host, Hub, HubOptions, ServerSpec, ServerState, Tool};
use serde_json::{Map, Value, json};

/// The server's name in the hub (tools are `mcp__conformance__<tool>`).
const SERVER: &str = "conformance";
/// The suite gives a scenario 30 s in all; connecting must leave room for the calls.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(15);
/// One call's deadline; the slowest scenario tool (`sse-retry`) answers within a second.
const CALL_TIMEOUT: Duration = Duration::from_secs(15);
/// How long shutdown waits for a stdio server; unused over HTTP, kept short anyway.
const SHUTDOWN_GRACE: Duration = Duration::from_millis(200);

fn main() -> ExitCode {
    let filter = std::env::var("MCPMUX_LOG").unwrap_or_else(|_| "info,mcpmux=debug".into());
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
        .init();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("mcpmux-conformance: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mcpmux-conformance: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// What the suite handed us.
struct Invocation {
    url: String,
    scenario: String,
    context: Option<Value>,
}

impl Invocation {
    fn from_env() -> anyhow::Result<Self> {
        let url = std::env::args()
            .skip(1)
            .last()
            .context("usage: mcpmux-conformance <server-url> (the conformance suite appends it)")?;
        let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
        let context = match std::env::var("MCP_CONFORMANCE_CONTEXT") {
            Ok(raw) => Some(
                serde_json::from_str(&raw).context("MCP_CONFORMANCE_CONTEXT is not valid JSON")?,
            ),
            Err(_) => None,
        };
        Ok(Self {
            url,
            scenario,
            context,
        })
    }
}

async fn run() -> anyhow::Result<()> {
    let invocation = Invocation::from_env()?;
    tracing::info!(
        scenario = %invocation.scenario,
        url = %invocation.url,
        context = invocation.context.is_some(),
        "conformance scenario"
    );
    let spec = ServerSpec::http(SERVER, invocation.url.clone())
        .with_startup_timeout(STARTUP_TIMEOUT)
        .with_call_timeout(CALL_TIMEOUT)
        .with_required(true)
        .with_auth(AuthSpec::oauth(oauth(
            &invocation.scenario,
            invocation.context.as_ref(),
        )));
    let authorizer = HeadlessAuthorizer::new()
        .map_err(|e| anyhow::anyhow!("cannot set up the authorizer: {e}"))?;
    let options = HubOptions::ephemeral()
        .with_shutdown_grace(SHUTDOWN_GRACE)
        .with_host(host())
        .with_authorizer(Arc::new(authorizer));
    let hub = Hub::start(vec![spec], options)?;
    let outcome = exercise(&hub, &invocation.scenario, invocation.context.as_ref()).await;
    hub.shutdown().await;
    outcome
}

/// This client's metadata document, as the suite's CIMD scenario expects it (a harness
/// would host its own).
const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";

/// The OAuth settings a user would configure for the scenario: the credentials the suite hands
/// over (`client_id` with `client_secret` or `private_key_pem`), the client-credentials grant
/// for its `client-credentials-*` scenarios, and a metadata-document URL for the rest.
fn oauth(scenario: &str, context: Option<&Value>) -> OAuthSpec {
    let text = |key: &str| {
        context
            .and_then(|c| c.get(key))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    let client_id = text("client_id");
    let secret = text("client_secret");
    let key = text("private_key_pem");
    // Workload identity: the platform's JWT for this workload.
    if let Some(jwt) = text("valid_jwt") {
        return OAuthSpec::jwt_bearer(client_id, TokenSource::Inline(jwt));
    }
    // Enterprise-managed authorization: the user's ID token from the enterprise IdP.
    if let (Some(id_token), Some(issuer), Some(endpoint), Some(idp_client), Some(id)) = (
        text("idp_id_token"),
        text("idp_issuer"),
        text("idp_token_endpoint"),
        text("idp_client_id"),
        client_id.clone(),
    ) {
        let idp = IdentityProvider::new(issuer, endpoint, idp_client, text("idp_client_secret"));
        return OAuthSpec::enterprise(id, secret, idp, TokenSource::Inline(id_token));
    }
    match (client_id, scenario.starts_with("auth/client-credentials")) {
        (Some(id), true) => match key {
            Some(pem) => OAuthSpec::client_credentials_jwt(
                id,
                pem,
                text("signing_algorithm").unwrap_or_else(|| "ES256".into()),
            ),
            None => OAuthSpec::client_credentials(id, secret.unwrap_or_default()),
        },
        (Some(id), false) => OAuthSpec::preregistered(id, secret),
        (None, _) => OAuthSpec::default().with_client_metadata_url(CLIENT_METADATA_URL),
    }
}

/// The host a test harness would be: it accepts every form with the schema's defaults (the
/// library fills them in), answers sampling with a fixed text and offers the current
/// directory as its root.
fn host() -> Host {
    Host::project()
        .with_elicitor(|request: ElicitationRequest| async move {
            match request.kind {
                ElicitationKind::Form { .. } => ElicitationReply::Accept(Map::new()),
                _ => ElicitationReply::Decline,
            }
        })
        .with_sampler(|request: mcpmux::host::SamplingRequest| async move {
            let prompt = request.last_user_text().unwrap_or_default();
            Ok(SamplingReply::text(
                "mcpmux-conformance",
                format!("This is a test response to: {prompt}"),
            ))
        })
}

/// Connects, lists the tools and calls each one.
async fn exercise(hub: &Hub, scenario: &str, context: Option<&Value>) -> anyhow::Result<()> {
    hub.wait_ready().await?;
    let status = hub
        .servers()
        .into_iter()
        .find(|s| s.name == SERVER)
        .context("the scenario server is missing from the hub")?;
    match &status.state {
        ServerState::Connected { version, .. } => {
            tracing::info!(%version, tools = status.tools, "connected");
        }
        other => bail!(
            "could not connect to the scenario server: {}",
            status.error().unwrap_or(other.label())
        ),
    }
    let tools = hub.tools();
    let mut failures = Vec::new();
    for (tool, arguments) in planned_calls(scenario, context, &tools) {
        tracing::info!(tool = %tool.raw_name, %arguments, "calling");
        match hub.call(&tool.name, arguments).await {
            Ok(result) => {
                tracing::info!(tool = %tool.raw_name, is_error = result.is_error, "result: {}", result.to_text());
            }
            // Arguments made from a schema we could not satisfy: the hub refused to send
            // them, which is its job; the scenario did not ask for this call.
            Err(e @ mcpmux::Error::InvalidArguments { .. }) => {
                tracing::info!(tool = %tool.raw_name, "not called: {e}");
            }
            Err(e) => {
                tracing::warn!(tool = %tool.raw_name, "call failed: {e}");
                failures.push(format!("{}: {e}", tool.raw_name));
            }
        }
    }
    if !failures.is_empty() {
        bail!("{} call(s) failed: {}", failures.len(), failures.join("; "));
    }
    Ok(())
}

/// The calls to make: the ones the scenario's context lists (`toolCalls`: name and
/// arguments), else every tool once, with known arguments or arguments made from its schema.
fn planned_calls<'a>(
    scenario: &str,
    context: Option<&Value>,
    tools: &'a [Tool],
) -> Vec<(&'a Tool, Value)> {
    let listed = context
        .and_then(|c| c.get("toolCalls"))
        .and_then(Value::as_array);
    if let Some(calls) = listed {
        return calls
            .iter()
            .filter_map(|call| {
                let name = call.get("name")?.as_str()?;
                let Some(tool) = tools.iter().find(|t| t.raw_name == name) else {
                    tracing::warn!(
                        tool = name,
                        "the context names a tool the server does not list"
                    );
                    return None;
                };
                let arguments = call.get("arguments").cloned().unwrap_or_else(|| json!({}));
                Some((tool, arguments))
            })
            .collect();
    }
    tools
        .iter()
        .map(|tool| (tool, arguments_for(scenario, tool, tools)))
        .collect()
}

/// Known arguments for a scenario's tool, else arguments made from its input schema.
fn arguments_for(scenario: &str, tool: &Tool, tools: &[Tool]) -> Value {
    match (scenario, tool.raw_name.as_str()) {
        (_, "add_numbers") => json!({"a": 5, "b": 3}),
        // Round-trips the schema the client received, so the scenario sees what it kept.
        ("json-schema-2020-12-preservation", "json_schema_echo") => {
            let focal = tools
                .iter()
                .find(|t| t.raw_name == "json_schema_2020_12_tool")
                .map(|t| t.input_schema.clone())
                .unwrap_or_else(|| json!({}));
            json!({"schema": focal})
        }
        _ => from_schema(&tool.input_schema),
    }
}

/// An object with a plausible value for each required property.
fn from_schema(schema: &Value) -> Value {
    let mut arguments = Map::new();
    let properties = schema.get("properties").and_then(Value::as_object);
    let required = schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str);
    for name in required {
        let property = properties.and_then(|p| p.get(name));
        arguments.insert(name.to_string(), sample_value(property));
    }
    Value::Object(arguments)
}

fn sample_value(property: Option<&Value>) -> Value {
    let Some(property) = property else {
        return json!("test");
    };
    if let Some(default) = property.get("default") {
        return default.clone();
    }
    if let Some(first) = property
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|e| e.first())
    {
        return first.clone();
    }
    match property.get("type").and_then(Value::as_str) {
        Some("integer") | Some("number") => json!(1),
        Some("boolean") => json!(true),
        Some("array") => json!([]),
        Some("object") => from_schema(property),
        Some("null") => Value::Null,
        _ => json!("test"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_cover_required_properties() {
        let schema = json!({
            "type": "object",
            "properties": {
                "a": {"type": "number"},
                "s": {"type": "string", "enum": ["x", "y"]},
                "o": {"type": "object", "properties": {"b": {"type": "boolean"}}, "required": ["b"]},
                "optional": {"type": "string"}
            },
            "required": ["a", "s", "o"]
        });
        assert_eq!(
            from_schema(&schema),
            json!({"a": 1, "s": "x", "o": {"b": true}})
        );
    }
}
