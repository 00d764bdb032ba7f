//! What an upstream server asks in the middle of a call, passed on to the downstream client
//! that made the call, and nobody else: its `roots/list`, `sampling/createMessage` and
//! `elicitation/create` ([`ClientRelay`], the library's per-call [`Relay`]), and the approval
//! a policy `ask` rule wants, as an `elicitation/create` of the gateway's own
//! ([`ClientApproval`]).
//!
//! A request goes to the client only if that client declared the capability (else it is
//! refused with -32601, naming what is missing), and a 2026-07-28 upstream server is told, with
//! each request of the call, what the client declared of those three, so it asks for nothing
//! else (and refuses, -32021, what needs more). A handshake-era client is sent it as a
//! request; over streamable HTTP on the response stream of the client's own `tools/call`. A
//! 2026-07-28 client cannot be sent requests: it is put the request in a round of
//! `input_required` (`rounds`). Knows nothing of which upstream call a request belongs to:
//! the library decides that and hands the request to this call's relay.

use std::time::Duration;

use futures::future::BoxFuture;
use mcpmux::host::{HostError, Relay, Relayed, RelayedRound};
use mcpmux::policy::{Approval, ApprovalRequest};
use rmcp::{
    RoleServer,
    model::{ClientResult, ErrorCode, GetExtensions, ProtocolVersion, RequestId},
    service::{OriginatingRequestId, Peer, PeerRequestOptions, RequestContext, ServiceError},
};
use serde_json::{Map, Value, json};

use crate::client_rounds::{Asked, Asks};

/// How long a client's user has to answer the approval of a call (what a person takes to read
/// a call and decide, with room to spare); past it the call is refused.
pub const APPROVAL_WAIT: Duration = crate::client_rounds::ROUND_WAIT;

/// Longest rendering of a call's arguments shown in an approval (the rest is cut, and said).
const MAX_SHOWN_ARGUMENTS: usize = 2000;

/// The client capabilities that answer what a server asks mid-call: what the gateway relays.
const RELAYED_CAPABILITIES: [&str; 3] = ["roots", "sampling", "elicitation"];

/// The downstream client a call is made for: its session, how it is asked, and what it
/// declared it can answer.
#[derive(Clone)]
pub struct DownstreamClient {
    /// The gateway's number for the session.
    pub session: u64,
    way: Way,
    /// The client's capabilities as JSON (`{}` when it declared none).
    capabilities: Value,
}

/// How a client is asked.
#[derive(Clone)]
enum Way {
    /// A request on its session, on the stream of its call `call` (handshake era).
    Request {
        peer: Peer<RoleServer>,
        call: RequestId,
    },
    /// A 2026-07-28 client, which cannot be sent requests ([`DownstreamClient::in_rounds`] asks it).
    Stateless,
    /// Rounds of `input_required` answers to its call.
    Rounds(Asks),
}

impl DownstreamClient {
    /// The client of `context`'s `tools/call`, in session `session`.
    pub fn of(session: u64, context: &RequestContext<RoleServer>) -> Self {
        let capabilities = context
            .client_capabilities()
            .and_then(|c| serde_json::to_value(c).ok())
            .unwrap_or_else(|| json!({}));
        let stateless = context
            .protocol_version()
            .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28);
        let way = if stateless {
            Way::Stateless
        } else {
            Way::Request {
                peer: context.peer.clone(),
                call: context.id.clone(),
            }
        };
        DownstreamClient {
            session,
            way,
            capabilities,
        }
    }

    /// Whether the client speaks 2026-07-28 (and so is asked in rounds of `input_required`).
    pub fn is_stateless(&self) -> bool {
        !matches!(self.way, Way::Request { .. })
    }

    /// This caller, asked through `asks` in rounds of `input_required`.
    pub fn in_rounds(self, asks: Asks) -> Self {
        DownstreamClient {
            way: Way::Rounds(asks),
            ..self
        }
    }

    /// What the client declared of what a server may ask mid-call (roots, sampling,
    /// elicitation): what a 2026-07-28 upstream server is told this call's client can answer.
    /// The rest of its capabilities are left out: the gateway passes nothing else on.
    pub fn declared_upstream(&self) -> Value {
        let mut declared = serde_json::Map::new();
        for capability in RELAYED_CAPABILITIES {
            if let Some(value) = self.capabilities.get(capability) {
                declared.insert(capability.to_string(), value.clone());
            }
        }
        Value::Object(declared)
    }

    /// Whether the client can be asked to fill in a form.
    pub fn takes_forms(&self) -> bool {
        !matches!(self.way, Way::Stateless) && elicitation_mode_declared(&self.capabilities, "form")
    }

    /// Why the client may not be sent `method` with `params`, if it may not.
    fn refusal(&self, method: &str, params: &Value) -> Option<HostError> {
        if matches!(self.way, Way::Stateless) {
            return Some(not_declared(format!(
                "{method}: the MCP client whose call asks for it speaks 2026-07-28, where a \
                 server cannot send it requests mid-call"
            )));
        }
        let caps = &self.capabilities;
        let missing = match method {
            "roots/list" => caps.get("roots").is_none().then_some("roots"),
            "sampling/createMessage" => {
                let wants_tools =
                    params.get("tools").is_some() || params.get("toolChoice").is_some();
                match caps.get("sampling") {
                    None => Some("sampling"),
                    Some(sampling) if wants_tools && sampling.get("tools").is_none() => {
                        Some("sampling.tools")
                    }
                    Some(_) => None,
                }
            }
            "elicitation/create" => {
                let mode = params.get("mode").and_then(Value::as_str).unwrap_or("form");
                if elicitation_mode_declared(caps, mode) {
                    None
                } else if mode == "url" {
                    Some("elicitation.url")
                } else {
                    Some("elicitation")
                }
            }
            _ => {
                return Some(not_declared(format!(
                    "{method} is not a request mcpmux passes on to a client"
                )));
            }
        };
        missing.map(|capability| {
            not_declared(format!(
                "{method} needs the `{capability}` capability, and the MCP client whose call asks \
                 for it (gateway session {}) did not declare it (in its initialize, or in the \
                 request's _meta); mcpmux asks no other client instead",
                self.session
            ))
        })
    }

    /// Puts `method` with `params` to the client (on the stream of its call, or in its next
    /// round), and waits for the answer.
    async fn ask(&self, method: &str, params: Value) -> Result<Value, HostError> {
        let (peer, call) = match &self.way {
            Way::Request { peer, call } => (peer, call),
            Way::Rounds(asks) => return asks.ask(method, params).await,
            Way::Stateless => {
                return Err(HostError::failed(format!(
                    "{method}: a 2026-07-28 client is asked only in rounds of input_required"
                )));
            }
        };
        let request =
            serde_json::from_value(json!({"method": method, "params": params})).map_err(|e| {
                HostError::failed(format!("{method} could not be passed on as sent: {e}"))
            })?;
        let answer: ClientResult = ask(peer, call, request).await.map_err(|e| match e {
            ServiceError::McpError(error) => HostError::new(error.code.0, error.message),
            other => HostError::failed(format!(
                "the MCP client whose call asked for {method} did not answer: {other}"
            )),
        })?;
        serde_json::to_value(answer)
            .map_err(|e| HostError::failed(format!("the client's answer could not be read: {e}")))
    }
}

/// Whether `capabilities` declare elicitation in `mode` (`form`, or `url`). An `elicitation`
/// object naming neither mode means form (how clients before 2025-11-25 declare it).
fn elicitation_mode_declared(capabilities: &Value, mode: &str) -> bool {
    let Some(elicitation) = capabilities.get("elicitation") else {
        return false;
    };
    let named = |m: &str| elicitation.get(m).is_some();
    match mode {
        "form" => named("form") || !named("url"),
        "url" => named("url"),
        _ => false,
    }
}

fn not_declared(message: String) -> HostError {
    HostError::new(ErrorCode::METHOD_NOT_FOUND.0, message)
}

/// Sends `request` to the client of `peer` on the stream of its request `call`, and waits for
/// the answer. Dropping the future tells the client to stop (`notifications/cancelled`).
async fn ask(
    peer: &Peer<RoleServer>,
    call: &RequestId,
    request: rmcp::model::ServerRequest,
) -> Result<ClientResult, ServiceError> {
    let mut request = request;
    request
        .extensions_mut()
        .insert(OriginatingRequestId(call.clone()));
    let peer = peer.clone();
    // Sent from a task of its own: rmcp marks a request sent from inside a request handler as
    // that request's, and a relay runs inside the upstream server's handler, whose id means
    // nothing here.
    let task = tokio::spawn(async move {
        let handle = peer
            .send_cancellable_request(request, PeerRequestOptions::no_options())
            .await?;
        let mut stop = CancelOnDrop(Some((handle.peer.clone(), handle.id.clone())));
        let answer = handle.await_response().await;
        stop.0 = None;
        answer
    });
    let _abort = AbortOnDrop(task.abort_handle());
    match task.await {
        Ok(answer) => answer,
        // Aborted only when this future is dropped: nobody reads this.
        Err(_) => Err(ServiceError::TransportClosed),
    }
}

impl Relay for ClientRelay {
    fn party(&self) -> u64 {
        self.0.session
    }

    fn relay(&self, request: Relayed) -> BoxFuture<'_, Result<Value, HostError>> {
        Box::pin(async move {
            if let Some(refusal) = self.0.refusal(&request.method, &request.params) {
                tracing::debug!(server = %request.server, method = %request.method, session = self.0.session, "refused: {}", refusal.message);
                return Err(refusal);
            }
            tracing::debug!(server = %request.server, method = %request.method, session = self.0.session, "passing a server request on to the caller's client");
            self.0.ask(&request.method, request.params).await
        })
    }

    fn capabilities(&self) -> Option<Value> {
        Some(self.0.declared_upstream())
    }

    // A 2026-07-28 client is put the round whole, under the server's keys; a handshake-era
    // client is sent each request, all at once. A request the client cannot answer refuses the
    // whole round before anything is asked.
    fn relay_round(
        &self,
        round: RelayedRound,
    ) -> BoxFuture<'_, Result<Map<String, Value>, HostError>> {
        Box::pin(async move {
            for (_, request) in &round.requests {
                if let Some(refusal) = self.0.refusal(&request.method, &request.params) {
                    tracing::debug!(server = %round.server, method = %request.method, session = self.0.session, "round refused: {}", refusal.message);
                    return Err(refusal);
                }
            }
            tracing::debug!(server = %round.server, requests = round.requests.len(), session = self.0.session, "passing a server's round on to the caller's client");
            if let Way::Rounds(asks) = &self.0.way {
                let requests = round
                    .requests
                    .into_iter()
                    .map(|(key, request)| Asked {
                        key,
                        method: request.method,
                        params: request.params,
                    })
                    .collect();
                return asks.round(requests).await;
            }
            let asked = round.requests.into_iter().map(|(key, request)| async move {
                self.0
                    .ask(&request.method, request.params)
                    .await
                    .map(|answer| (key, answer))
            });
            Ok(futures::future::try_join_all(asked)
                .await?
                .into_iter()
                .collect())
        })
    }
}

/// The library's relay for one call: its caller's client answers.
pub struct ClientRelay(pub DownstreamClient);

/// Approves a call a policy `ask` rule matches by asking the user of the client that made it
/// (`elicitation/create`: a yes/no form naming the tool and its arguments). Declined,
/// dismissed, unanswered within [`APPROVAL_WAIT`], or failed: refused.
pub struct ClientApproval(pub DownstreamClient);

impl mcpmux::Approver for ClientApproval {
    fn approve(&self, request: ApprovalRequest) -> BoxFuture<'_, Approval> {
        Box::pin(async move {
            let params = approval_form(&request.tool.name, &request.rule, &request.arguments);
            let asked =
                tokio::time::timeout(APPROVAL_WAIT, self.0.ask("elicitation/create", params)).await;
            let deny = |reason: String| Approval::Deny {
                reason: Some(reason),
            };
            match asked {
                Err(_) => deny(format!(
                    "the client's user did not answer within {} s",
                    APPROVAL_WAIT.as_secs()
                )),
                Ok(Err(error)) => deny(format!(
                    "the client could not ask its user: {}",
                    error.message
                )),
                Ok(Ok(answer)) => match answer["action"].as_str() {
                    Some("accept") if answer["content"]["approve"] == json!(true) => {
                        Approval::Approve
                    }
                    Some("accept") => deny("the client's user answered no".into()),
                    Some("decline") => deny("the client's user declined".into()),
                    _ => deny("the client's user dismissed the question".into()),
                },
            }
        })
    }
}

/// The `elicitation/create` params that ask whether the call of `tool` with `arguments` may
/// go ahead (policy rule `rule` asks). The arguments are shown as JSON with every control
/// character escaped (a terminal or a form must not act on them), cut to
/// [`MAX_SHOWN_ARGUMENTS`].
fn approval_form(tool: &str, rule: &str, arguments: &Value) -> Value {
    let arguments = serde_json::to_string(arguments).unwrap_or_default();
    let mut shown = mcpmux::cli_support::terminal::escape_json_controls(&arguments).into_owned();
    if shown.len() > MAX_SHOWN_ARGUMENTS {
        let mut cut = MAX_SHOWN_ARGUMENTS;
        while !shown.is_char_boundary(cut) {
            cut -= 1;
        }
        shown.truncate(cut);
        shown.push_str(" … (cut)");
    }
    let tool = mcpmux::cli_support::terminal::escape_controls(tool);
    let rule = mcpmux::cli_support::terminal::escape_controls(rule);
    json!({
        "message": format!(
            "mcpmux: allow the call to `{tool}` (policy rule `{rule}` asks)?\nArguments: {shown}"
        ),
        "requestedSchema": {
            "type": "object",
            "properties": {
                "approve": {
                    "type": "boolean",
                    "title": "Approve",
                    "description": format!("Run `{tool}` with these arguments"),
                    "default": false
                }
            },
            "required": ["approve"]
        }
    })
}

/// Aborts a task when dropped (its own drop guards then run).
struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Tells the client to stop working on a request abandoned before its answer.
struct CancelOnDrop(Option<(Peer<RoleServer>, RequestId)>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let Some((peer, id)) = self.0.take() else {
            return;
        };
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let param = rmcp::model::CancelledNotificationParam::new(
                    Some(id),
                    Some("the upstream server no longer needs the answer".into()),
                );
                let _ = peer.notify_cancelled(param).await;
            });
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn elicitation_modes_as_clients_declare_them() {
        assert!(elicitation_mode_declared(
            &json!({"elicitation": {}}),
            "form"
        ));
        assert!(!elicitation_mode_declared(
            &json!({"elicitation": {}}),
            "url"
        ));
        assert!(elicitation_mode_declared(
            &json!({"elicitation": {"url": {}}}),
            "url"
        ));
        assert!(!elicitation_mode_declared(
            &json!({"elicitation": {"url": {}}}),
            "form"
        ));
        assert!(!elicitation_mode_declared(&json!({}), "form"));
    }

    #[test]
    fn the_approval_form_names_the_tool_and_escapes_the_arguments() {
        let form = approval_form(
            "mcp__t__echo",
            "effect:mutate",
            &json!({"text": "a\u{1b}[2J\u{202e}b"}),
        );
        let message = form["message"].as_str().unwrap();
        assert!(message.contains("`mcp__t__echo`"), "{message}");
        assert!(message.contains("`effect:mutate`"), "{message}");
        assert!(
            !message.contains('\u{1b}') && !message.contains('\u{202e}'),
            "{message}"
        );
        assert!(
            message.contains("\\u001b") && message.contains("\\u202e"),
            "{message}"
        );
        assert_eq!(form["requestedSchema"]["required"][0], "approve");
        let long = approval_form("t", "r", &json!({"text": "é".repeat(5000)}));
        assert!(long["message"].as_str().unwrap().ends_with("(cut)"));
    }
}
