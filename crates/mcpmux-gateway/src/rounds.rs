//! A 2026-07-28 client cannot be sent requests: what an upstream server asks during its call
//! (and a policy `ask`) is put to it as rounds of `input_required` (SEP-2322), the way a
//! 2026-07-28 server asks. Its call runs on in a task of its own; each time the call needs the
//! client, the client's `tools/call` is answered `input_required` with those requests and a
//! `requestState` naming the waiting call; the client's next `tools/call` carrying that state
//! brings the answers, and waits for what comes next: another round, or the result. A call
//! whose client does not come back within [`ROUND_WAIT`] is cancelled (its server is told).
//!
//! The state is the random name of a call waiting in this process: it means nothing to
//! another replica. Knows nothing of what the call does.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use mcpmux::host::HostError;
use rmcp::{
    RoleServer,
    model::{
        CallToolResponse, ErrorData, InputRequest, InputRequests, InputRequiredResult,
        InputResponses, ProgressToken,
    },
    service::RequestContext,
};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

/// How long a call waits for its client to come back with the answers of a round: what a
/// person takes to answer a form, with room to spare (the same as an approval).
pub const ROUND_WAIT: Duration = crate::relay::APPROVAL_WAIT;

/// What a running call wants of its client.
struct Ask {
    method: String,
    params: Value,
    answer: oneshot::Sender<Result<Value, HostError>>,
}

/// How a running call asks its client (a clone for each relay or approver of the call).
#[derive(Clone)]
pub struct Asks(mpsc::UnboundedSender<Ask>);

impl Asks {
    /// Puts `method` with `params` to the client in the next round, and waits for its answer.
    pub async fn ask(&self, method: &str, params: Value) -> Result<Value, HostError> {
        let (answer, answered) = oneshot::channel();
        let ask = Ask {
            method: method.to_string(),
            params,
            answer,
        };
        self.0
            .send(ask)
            .map_err(|_| HostError::failed("the client's call has ended"))?;
        answered
            .await
            .unwrap_or_else(|_| Err(HostError::failed("the client's call has ended")))
    }
}

/// One call run in rounds: what it asks, its progress, its end.
pub struct Call {
    asks: mpsc::UnboundedReceiver<Ask>,
    progress: mpsc::UnboundedReceiver<mcpmux::Progress>,
    done: oneshot::Receiver<Result<CallToolResponse, ErrorData>>,
    /// The asks of the last round, by the key the client answers under.
    waiting: Vec<(String, oneshot::Sender<Result<Value, HostError>>)>,
    /// The call's task: aborted (its server told) when the call is dropped.
    task: tokio::task::AbortHandle,
}

impl Drop for Call {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Call {
    /// Runs `run` in a task of its own, giving it how to ask its client and where its progress
    /// goes.
    pub fn spawn<F>(run: impl FnOnce(Asks, mpsc::UnboundedSender<mcpmux::Progress>) -> F) -> Call
    where
        F: Future<Output = Result<CallToolResponse, ErrorData>> + Send + 'static,
    {
        let (ask_tx, asks) = mpsc::unbounded_channel();
        let (progress_tx, progress) = mpsc::unbounded_channel();
        let (done_tx, done) = oneshot::channel();
        let running = run(Asks(ask_tx), progress_tx);
        let task = tokio::spawn(async move {
            let _ = done_tx.send(running.await);
        });
        Call {
            asks,
            progress,
            done,
            waiting: Vec::new(),
            task: task.abort_handle(),
        }
    }

    /// Hands the client's answers to the asks of the last round.
    fn answer(&mut self, mut responses: InputResponses) {
        for (key, answer) in self.waiting.drain(..) {
            let given = responses
                .remove(&key)
                .ok_or_else(|| HostError::failed(format!("the client sent no answer for `{key}`")));
            let _ = answer.send(given);
        }
    }
}

/// The calls waiting for their clients to come back, by the name of their state.
#[derive(Default)]
pub struct Rounds {
    waiting: Mutex<HashMap<String, (Call, tokio::task::AbortHandle)>>,
    /// Numbers the asks, so each key is unique.
    asked: std::sync::atomic::AtomicU64,
}

impl Rounds {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, (Call, tokio::task::AbortHandle)>> {
        match self.waiting.lock() {
            Ok(waiting) => waiting,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// The call named by `state`, given the client's `responses` to its last round.
    pub fn resume(&self, state: &str, responses: InputResponses) -> Result<Call, ErrorData> {
        let (mut call, expiry) = self.lock().remove(state).ok_or_else(|| {
            ErrorData::invalid_params(
                "requestState names no call waiting here (it ended, waited too long, or was \
                 begun on another gateway): call the tool again without it",
                None,
            )
        })?;
        expiry.abort();
        call.answer(responses);
        Ok(call)
    }

    /// Waits for what `call` does next, passing its progress on under `token`: its result, or
    /// the requests of its next round (answered `input_required`, the call kept until the
    /// client comes back). The client cancelling this request cancels the call.
    pub async fn next(
        self: &Arc<Self>,
        mut call: Call,
        context: &RequestContext<RoleServer>,
        token: Option<&ProgressToken>,
    ) -> Result<CallToolResponse, ErrorData> {
        loop {
            tokio::select! {
                // Progress first: a step sent before the answer is passed on before it.
                biased;
                Some(step) = call.progress.recv() => {
                    crate::handler::forward_progress(context, token, step).await;
                }
                Some(ask) = call.asks.recv() => {
                    let mut asks = vec![ask];
                    // The requests a call makes at once (a 2026-07-28 server's round) are
                    // queued together: one round for all of them.
                    while let Ok(more) = call.asks.try_recv() {
                        asks.push(more);
                    }
                    return Ok(self.round(call, asks).into());
                }
                done = &mut call.done => {
                    while let Ok(step) = call.progress.try_recv() {
                        crate::handler::forward_progress(context, token, step).await;
                    }
                    return done.unwrap_or_else(|_| {
                        Err(ErrorData::internal_error("the call ended without an answer", None))
                    });
                }
                () = context.ct.cancelled() => {
                    return Err(ErrorData::internal_error("cancelled by the client", None));
                }
            }
        }
    }

    /// Keeps `call` waiting for the answers to `asks`, and the `input_required` result that
    /// puts them to the client.
    fn round(self: &Arc<Self>, mut call: Call, asks: Vec<Ask>) -> InputRequiredResult {
        let mut requests = InputRequests::new();
        for ask in asks {
            let n = self
                .asked
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let key = format!("ask-{n}");
            let request = json!({"method": ask.method, "params": ask.params});
            match serde_json::from_value::<InputRequest>(request) {
                Ok(request) => {
                    requests.insert(key.clone(), request);
                    call.waiting.push((key, ask.answer));
                }
                Err(error) => {
                    let _ = ask.answer.send(Err(HostError::failed(format!(
                        "{} cannot be put to a 2026-07-28 client: {error}",
                        ask.method
                    ))));
                }
            }
        }
        let state = new_state();
        let expiry = {
            let rounds = Arc::downgrade(self);
            let state = state.clone();
            tokio::spawn(async move {
                tokio::time::sleep(ROUND_WAIT).await;
                if let Some(rounds) = rounds.upgrade() {
                    tracing::debug!(
                        "a client did not come back with its answers; cancelling its call"
                    );
                    rounds.lock().remove(&state);
                }
            })
        };
        self.lock()
            .insert(state.clone(), (call, expiry.abort_handle()));
        InputRequiredResult::new(Some(requests), Some(state))
    }
}

/// 128 random bits, base64url: the name of a waiting call, which no client can guess.
fn new_state() -> String {
    use ring::rand::SecureRandom;
    let mut bytes = [0u8; 16];
    if ring::rand::SystemRandom::new().fill(&mut bytes).is_err() {
        // No system randomness: this process's random hasher state, still unknown outside.
        use std::hash::{BuildHasher, Hasher};
        for (i, byte) in bytes.iter_mut().enumerate() {
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_usize(i);
            *byte = h.finish() as u8;
        }
    }
    URL_SAFE_NO_PAD.encode(bytes)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn a_state_naming_no_waiting_call_is_refused_as_invalid_params() {
        let rounds = Rounds::default();
        let refused = rounds
            .resume("not-a-call", InputResponses::new())
            .err()
            .unwrap();
        assert_eq!(refused.code, rmcp::model::ErrorCode::INVALID_PARAMS);
        assert!(
            refused.message.contains("without it"),
            "{}",
            refused.message
        );
    }

    #[test]
    fn states_are_unguessable_and_distinct() {
        let (a, b) = (new_state(), new_state());
        assert_ne!(a, b);
        assert_eq!(URL_SAFE_NO_PAD.decode(&a).unwrap().len(), 16);
    }
}
