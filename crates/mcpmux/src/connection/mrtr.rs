//! Multi round-trip requests (MRTR, SEP-2322): a 2026-07-28 server that needs input in the
//! middle of a call (an elicitation, a sampling, the roots) answers `tools/call` with an
//! `input_required` result instead of sending requests of its own. This module answers the
//! requests such a result carries, through the same [`HubClient`] handler — and so the same
//! host callbacks, the same relay of the call's caller and the same refusals — as the
//! handshake era's server→client requests.
//!
//! The rounds themselves (re-sending the call with the answers and the echoed `requestState`,
//! under the call's one deadline) belong to the call path (`call.rs`). `requestState` is never
//! read here: it is the server's, passed back byte for byte.

use std::sync::Arc;
use std::time::Duration;

use rmcp::Service;
use rmcp::model::{
    ErrorCode, ErrorData, InputRequest, InputRequests, InputResponses, NumberOrString,
    ServerRequest,
};
use rmcp::service::{Peer, RequestContext, RoleClient};
use tokio::sync::Notify;

use super::Live;
use super::callers::{Caller, Callers};
use super::client::HubClient;
use crate::call::CallOptions;
use crate::error::Error;

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

/// Answers every request of one `input_required` result, concurrently, through the host
/// callbacks. The first refusal ends the call: 2026-07-28 has no way to send an error back in
/// place of an answer.
pub(super) async fn answer(
    live: &Live,
    server: &str,
    tool: &str,
    options: &CallOptions,
    requests: InputRequests,
) -> Result<InputResponses, Error> {
    let handler = HubClient {
        server: server.to_string(),
        progress: live.progress.clone(),
        // The handler's notification side is not used here.
        tools_changed: Arc::new(Notify::new()),
        host: live.host.clone(),
        // These requests came inside this call's result: they are its caller's.
        callers: Callers::only(Caller::of(options.relay.as_ref())),
    };
    let relayed = options.relay.is_some();
    let answers = requests.into_iter().map(|(key, request)| {
        let handler = &handler;
        async move {
            let method = method_of(&request);
            tracing::debug!(server, tool, key = %key, method, "answering a request of an input_required result");
            answer_one(handler, &live.peer, &key, request)
                .await
                .map(|value| (key, value))
                .map_err(|e| refusal(server, tool, method, relayed, e))
        }
    });
    Ok(futures::future::try_join_all(answers)
        .await?
        .into_iter()
        .collect())
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
fn refusal(server: &str, tool: &str, method: &str, relayed: bool, error: ErrorData) -> Error {
    if error.code == ErrorCode::METHOD_NOT_FOUND && !relayed {
        Error::Protocol {
            server: server.to_string(),
            message: format!(
                "tools/call `{tool}` asked for input this client does not offer: {}",
                error.message
            ),
        }
    } else {
        Error::Cancelled(format!(
            "tools/call `{tool}` on server `{server}` needed an answer to {method}, and the host \
             gave none: {} ({})",
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
        let error = refusal("s", "t", "elicitation/create", false, not_offered.clone());
        assert!(matches!(error, Error::Protocol { .. }), "{error}");
        assert!(
            error.to_string().contains("no host callback is set"),
            "{error}"
        );

        // Relayed, the same refusal is the caller's client's, not a broken server.
        let relayed = refusal("s", "t", "elicitation/create", true, not_offered);
        assert!(matches!(relayed, Error::Cancelled(_)), "{relayed}");

        let rejected = ErrorData::new(ErrorCode(-1), "the user said no", None);
        let error = refusal("s", "t", "sampling/createMessage", false, rejected);
        assert!(matches!(error, Error::Cancelled(_)), "{error}");
        assert!(error.to_string().contains("the user said no"), "{error}");
        assert!(!error.counts_against_server());
    }
}
