//! Multi round-trip requests (MRTR, SEP-2322): a 2026-07-28 server that needs input in the
//! middle of a call (an elicitation, a sampling, the roots) answers `tools/call` (or
//! `prompts/get`, `resources/read`) with an `input_required` result instead of sending
//! requests of its own. This module answers the requests such a result carries: a call made
//! for someone else passes the round on whole, under the server's own keys, through its
//! relay ([`Relay::relay_round`]); otherwise each request goes through the same [`HubClient`]
//! handler — and so the same host callbacks and refusals — as the handshake era's
//! server→client requests.
//!
//! The rounds themselves (re-sending the request with the answers and the echoed
//! `requestState`, under the call's one deadline) belong to `exchange.rs`. `requestState` is
//! never read here: it is the server's, passed back byte for byte.

use std::sync::Arc;
use std::time::Duration;

use rmcp::Service;
// Sampling and roots are SEP-2577-deprecated, yet what a 2026-07-28 server may still ask.
#[allow(deprecated)]
use rmcp::model::{
    CreateMessageResult, ElicitResult, ErrorCode, ErrorData, InputRequest, InputRequests,
    InputResponses, ListRootsResult, NumberOrString, ServerRequest,
};
use rmcp::service::{Peer, RequestContext, RoleClient};
use tokio::sync::Notify;

use super::Live;
use super::callers::{CallParty, Callers};
use super::client::HubClient;
use crate::call_options::CallOptions;
use crate::error::Error;
use crate::host::{HostError, Relay, Relayed, RelayedRound};

/// The most `input_required` results one call answers: a server that keeps asking after this
/// many rounds is stopped. rmcp and the official SDKs stop after 10; a few more leave room for
/// a long form wizard without letting a looping server hold a call for its whole deadline.
pub(super) const MAX_INPUT_ROUNDS: usize = 16;

/// The first pause before re-sending a call whose server asked for nothing but time (an
/// `input_required` result with a `requestState` and no requests), doubled each such round up
/// to [`STATE_ONLY_PAUSE_CAP`]: the Python SDK's schedule.
const STATE_ONLY_PAUSE: Duration = Duration::from_millis(50);
const STATE_ONLY_PAUSE_CAP: Duration = Duration::from_millis(250);

/// Whether this session speaks 2026-07-28: the only era whose servers may answer a call with
/// `input_required`, so the only one where a call keeps its arguments to send them again.
pub(super) fn possible(peer: &Peer<RoleClient>) -> bool {
    super::era::era_of(peer) == crate::state::Era::Stateless
}

/// How long to wait before the `n`th (from 0) consecutive round without requests.
pub(super) fn state_only_pause(n: u32) -> Duration {
    STATE_ONLY_PAUSE
        .saturating_mul(1 << n.min(3))
        .min(STATE_ONLY_PAUSE_CAP)
}

/// Answers every request of one `input_required` result: passed on whole, under the server's
/// keys, by the call's relay; else each through the host callbacks, concurrently. The first
/// refusal ends the call: 2026-07-28 has no way to send an error back in place of an answer.
pub(super) async fn answer(
    live: &Live,
    server: &str,
    what: &str,
    options: &CallOptions,
    requests: InputRequests,
) -> Result<InputResponses, Error> {
    if let Some(relay) = &options.relay {
        return relay_round(relay.as_ref(), server, what, requests).await;
    }
    let handler = HubClient {
        server: server.to_string(),
        progress: live.progress.clone(),
        // The handler's notification side is not used here.
        tools_changed: Arc::new(Notify::new()),
        host: live.host.clone(),
        // These requests came inside this call's result: they are its caller's.
        callers: Callers::only(CallParty::of(options.relay.as_ref())),
    };
    let answers = requests.into_iter().map(|(key, request)| {
        let handler = &handler;
        async move {
            let method = method_of(&request);
            tracing::debug!(server, what, key = %key, method, "answering a request of an input_required result");
            answer_one(handler, &live.peer, &key, request)
                .await
                .map(|value| (key, value))
                .map_err(|e| refusal(server, what, method, false, e))
        }
    });
    Ok(futures::future::try_join_all(answers)
        .await?
        .into_iter()
        .collect())
}

/// A round passed on whole through `relay`, and its answers, each checked to be the result
/// its request wants (the server is sent nothing a relay made up).
async fn relay_round(
    relay: &dyn Relay,
    server: &str,
    what: &str,
    requests: InputRequests,
) -> Result<InputResponses, Error> {
    let mut methods = Vec::with_capacity(requests.len());
    let mut round = Vec::with_capacity(requests.len());
    for (key, request) in requests {
        let method = method_of(&request);
        let mut sent = serde_json::to_value(&request).map_err(|e| Error::Protocol {
            server: server.to_string(),
            message: format!("{what}: an input request could not be read: {e}"),
            source: crate::error::cause(e),
        })?;
        let params = sent
            .get_mut("params")
            .map(serde_json::Value::take)
            .unwrap_or_else(|| serde_json::Value::Object(serde_json::Map::new()));
        methods.push((key.clone(), method));
        round.push((
            key,
            Relayed {
                server: server.to_string(),
                method: method.to_string(),
                params,
            },
        ));
    }
    tracing::debug!(
        server,
        what,
        requests = round.len(),
        party = relay.party(),
        "relaying a round of input requests to the caller's client"
    );
    let round = RelayedRound {
        server: server.to_string(),
        requests: round,
    };
    let mut answers = relay
        .relay_round(round)
        .await
        .map_err(|e| refusal(server, what, "its input requests", true, host_error(e)))?;
    let mut responses = InputResponses::new();
    for (key, method) in methods {
        // A key the relay left unanswered is left out: the server asks again.
        let Some(answer) = answers.remove(&key) else {
            continue;
        };
        checked(method, &answer).map_err(|e| refusal(server, what, method, true, e))?;
        responses.insert(key, answer);
    }
    Ok(responses)
}

/// Whether `answer` reads as the result `method` wants.
#[allow(deprecated)]
fn checked(method: &str, answer: &serde_json::Value) -> Result<(), ErrorData> {
    let read = match method {
        "sampling/createMessage" => {
            serde_json::from_value::<CreateMessageResult>(answer.clone()).map(drop)
        }
        "elicitation/create" => serde_json::from_value::<ElicitResult>(answer.clone()).map(drop),
        "roots/list" => serde_json::from_value::<ListRootsResult>(answer.clone()).map(drop),
        _ => Ok(()),
    };
    read.map_err(|e| {
        ErrorData::new(
            ErrorCode::INTERNAL_ERROR,
            format!("the answer relayed to {method} is not a valid MCP result: {e}"),
            None,
        )
    })
}

fn host_error(error: HostError) -> ErrorData {
    ErrorData::new(ErrorCode(error.code), error.message, None)
}

async fn answer_one(
    handler: &HubClient,
    peer: &Peer<RoleClient>,
    key: &str,
    request: InputRequest,
) -> Result<serde_json::Value, ErrorData> {
    let request = match request {
        InputRequest::CreateMessage(r) => ServerRequest::CreateMessageRequest(r),
        InputRequest::Elicitation(r) => ServerRequest::ElicitRequest(r),
        InputRequest::ListRoots(r) => ServerRequest::ListRootsRequest(r),
        #[allow(unreachable_patterns)]
        _ => {
            return Err(ErrorData::new(
                ErrorCode::METHOD_NOT_FOUND,
                "this kind of input request is not supported by this client",
                None,
            ));
        }
    };
    // The key stands in for the request id a handshake-era request would have had.
    let context = RequestContext::new(NumberOrString::String(Arc::from(key)), peer.clone());
    let result = handler.handle_request(request, context).await?;
    serde_json::to_value(result).map_err(|e| {
        ErrorData::new(
            ErrorCode::INTERNAL_ERROR,
            format!("the answer could not be encoded: {e}"),
            None,
        )
    })
}

fn method_of(request: &InputRequest) -> &'static str {
    match request {
        InputRequest::CreateMessage(_) => "sampling/createMessage",
        InputRequest::Elicitation(_) => "elicitation/create",
        InputRequest::ListRoots(_) => "roots/list",
        #[allow(unreachable_patterns)]
        _ => "an unknown input request",
    }
}

/// A request the handler refused. "Method not found" is the refusal of something this client
/// does not offer (no host callback is set), which a 2026-07-28 server must not ask for: the
/// server broke the protocol. Any other error is the host's own refusal or failure: the
/// harness stopped the call, the server did nothing wrong. A `relayed` request was offered
/// (the hub relays it): whatever its relay answered, the server did nothing wrong either.
fn refusal(server: &str, what: &str, method: &str, relayed: bool, error: ErrorData) -> Error {
    if error.code == ErrorCode::METHOD_NOT_FOUND && !relayed {
        Error::Protocol {
            server: server.to_string(),
            message: format!(
                "{what} asked for input this client does not offer: {}",
                error.message
            ),
            source: None,
        }
    } else {
        Error::Cancelled(format!(
            "{what} on server `{server}` needed an answer to {method}, and the host gave none: \
             {} ({})",
            error.message, error.code.0
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_only_pauses_double_up_to_the_cap() {
        let pauses: Vec<u128> = (0..6).map(|n| state_only_pause(n).as_millis()).collect();
        assert_eq!(pauses, [50, 100, 200, 250, 250, 250]);
    }

    #[test]
    fn refusals_say_whose_fault_it_is() {
        let not_offered = ErrorData::new(
            ErrorCode::METHOD_NOT_FOUND,
            "elicitation/create is not supported by this client (no host callback is set)",
            None,
        );
        let error = refusal(
            "s",
            "tools/call `t`",
            "elicitation/create",
            false,
            not_offered.clone(),
        );
        assert!(matches!(error, Error::Protocol { .. }), "{error}");
        assert!(
            error.to_string().contains("no host callback is set"),
            "{error}"
        );

        // Relayed, the same refusal is the caller's client's, not a broken server.
        let relayed = refusal(
            "s",
            "tools/call `t`",
            "elicitation/create",
            true,
            not_offered,
        );
        assert!(matches!(relayed, Error::Cancelled(_)), "{relayed}");

        let rejected = ErrorData::new(ErrorCode(-1), "the user said no", None);
        let error = refusal(
            "s",
            "tools/call `t`",
            "sampling/createMessage",
            false,
            rejected,
        );
        assert!(matches!(error, Error::Cancelled(_)), "{error}");
        assert!(error.to_string().contains("the user said no"), "{error}");
        assert!(!error.counts_against_server());
    }
}
