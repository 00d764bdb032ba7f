//! A 2026-07-28 client cannot be sent requests: what an upstream server asks during its call
//! (and a policy `ask`) is put to it as rounds of `input_required` (SEP-2322), the way a
//! 2026-07-28 server asks. Its call (a `tools/call`, `prompts/get` or `resources/read`) runs on
//! in a task of its own; each time the call needs the client, the client's request is answered
//! `input_required` with those requests and a `requestState` naming the waiting call; the
//! client's next request carrying that state brings the answers, and waits for what comes
//! next: another round, or the result. A 2026-07-28 upstream server's round is passed on
//! whole, under the server's own keys; a handshake-era server's requests and the gateway's own
//! approval are put under keys of the gateway's (`ask-N`). A call whose client does not come
//! back within [`ROUND_WAIT`] is cancelled (its server is told).
//!
//! The state is the random name of a call waiting in this process: it means nothing to
//! another replica, and only the client (identity) the call waits for may resume it. Calls
//! waiting are capped in all and per client ([`WaitingLimits`]). Knows nothing of what the
//! call does.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tracing::Instrument as _;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use mcpmux::host::HostError;
use rmcp::{
    RoleServer,
    model::{
        ErrorData, InputRequest, InputRequests, InputRequiredResult, InputResponses, ProgressToken,
    },
    service::RequestContext,
};
use serde_json::{Map, Value, json};
use tokio::sync::{mpsc, oneshot};

/// How long a call waits for its client to come back with the answers of a round: what a
/// person takes to answer a form, with room to spare (the same as an approval).
pub const ROUND_WAIT: Duration = Duration::from_secs(300);

/// What a running call wants of its client.
enum Ask {
    /// One request (a handshake-era server's, or the gateway's own approval), put under a
    /// key of the gateway's.
    One {
        method: String,
        params: Value,
        answer: oneshot::Sender<Result<Value, HostError>>,
    },
    /// A 2026-07-28 server's whole round, put under the server's own keys.
    Round {
        requests: Vec<Asked>,
        answer: oneshot::Sender<Result<Map<String, Value>, HostError>>,
    },
}

/// One request of a server's round: its key, method and params.
pub struct Asked {
    /// The server's key.
    pub key: String,
    /// `elicitation/create`, `sampling/createMessage` or `roots/list`.
    pub method: String,
    /// As the server sent them.
    pub params: Value,
}

/// How a running call asks its client (a clone for each relay or approver of the call).
#[derive(Clone)]
pub struct Asks(mpsc::UnboundedSender<Ask>);

impl Asks {
    /// Puts `method` with `params` to the client in the next round, and waits for its answer.
    pub async fn ask(&self, method: &str, params: Value) -> Result<Value, HostError> {
        let (answer, answered) = oneshot::channel();
        let ask = Ask::One {
            method: method.to_string(),
            params,
            answer,
        };
        self.send(ask, answered).await
    }

    /// Puts a server's whole round to the client under the server's keys, and waits for the
    /// answers (under the same keys; one the client left out is missing).
    pub async fn round(&self, requests: Vec<Asked>) -> Result<Map<String, Value>, HostError> {
        let (answer, answered) = oneshot::channel();
        self.send(Ask::Round { requests, answer }, answered).await
    }

    async fn send<T>(
        &self,
        ask: Ask,
        answered: oneshot::Receiver<Result<T, HostError>>,
    ) -> Result<T, HostError> {
        self.0
            .send(ask)
            .map_err(|_| HostError::failed("the client's call has ended"))?;
        answered
            .await
            .unwrap_or_else(|_| Err(HostError::failed("the client's call has ended")))
    }
}

/// Where the client's answers to one ask of the last round go.
enum Waiting {
    /// The answer under the gateway's key.
    One(String, oneshot::Sender<Result<Value, HostError>>),
    /// The answers of a server's round: each under the key the client answers, and the
    /// server's key it goes back under.
    Round(
        Vec<(String, String)>,
        oneshot::Sender<Result<Map<String, Value>, HostError>>,
    ),
}

/// One call run in rounds (a `tools/call`, `prompts/get` or `resources/read` answered `R`):
/// what it asks, its progress, its end.
pub struct Call<R> {
    asks: mpsc::UnboundedReceiver<Ask>,
    progress: mpsc::UnboundedReceiver<mcpmux::Progress>,
    done: oneshot::Receiver<Result<R, ErrorData>>,
    /// The asks of the last round.
    waiting: Vec<Waiting>,
    /// The call's task: aborted (its server told) when the call is dropped.
    task: tokio::task::AbortHandle,
}

impl<R> Drop for Call<R> {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl<R: Send + 'static> Call<R> {
    /// Runs `run` in a task of its own, giving it how to ask its client and where its progress
    /// goes.
    pub fn spawn<F>(run: impl FnOnce(Asks, mpsc::UnboundedSender<mcpmux::Progress>) -> F) -> Self
    where
        F: Future<Output = Result<R, ErrorData>> + Send + 'static,
    {
        let (ask_tx, asks) = mpsc::unbounded_channel();
        let (progress_tx, progress) = mpsc::unbounded_channel();
        let (done_tx, done) = oneshot::channel();
        let running = run(Asks(ask_tx), progress_tx);
        // In the span of the request that began it: the hub's call continues its trace.
        let task = tokio::spawn(
            async move {
                let _ = done_tx.send(running.await);
            }
            .in_current_span(),
        );
        Call {
            asks,
            progress,
            done,
            waiting: Vec::new(),
            task: task.abort_handle(),
        }
    }
}

impl<R> Call<R> {
    /// Hands the client's answers to the asks of the last round. An answer to a request of the
    /// gateway's own is required; one a server's round misses is left out (the server asks
    /// again, as a 2026-07-28 server does); keys nobody asked are ignored.
    fn answer(&mut self, mut responses: InputResponses) {
        for waiting in self.waiting.drain(..) {
            match waiting {
                Waiting::One(key, answer) => {
                    let given = responses.remove(&key).ok_or_else(|| {
                        HostError::failed(format!("the client sent no answer for `{key}`"))
                    });
                    let _ = answer.send(given);
                }
                Waiting::Round(keys, answer) => {
                    let given = keys
                        .into_iter()
                        .filter_map(|(mine, theirs)| {
                            responses.remove(&mine).map(|value| (theirs, value))
                        })
                        .collect();
                    let _ = answer.send(Ok(given));
                }
            }
        }
    }
}

/// Calls waiting for their clients' answers at once, at most (each holds its upstream call
/// open): past it a new round is refused, and its call cancelled.
pub const DEFAULT_MAX_WAITING: usize = 1000;
/// Calls one client (identity) may leave waiting at once.
pub const DEFAULT_MAX_WAITING_PER_CLIENT: usize = 100;

/// How many calls may wait for their clients' answers.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct WaitingLimits {
    /// In all.
    pub max: usize,
    /// Per client.
    pub per_client: usize,
}

impl Default for WaitingLimits {
    fn default() -> Self {
        WaitingLimits {
            max: DEFAULT_MAX_WAITING,
            per_client: DEFAULT_MAX_WAITING_PER_CLIENT,
        }
    }
}

/// The calls answered `R` waiting for their clients to come back, by the name of their state.
pub struct Rounds<R> {
    waiting: Mutex<HashMap<String, Parked<R>>>,
    /// Numbers the gateway's own asks, so each key is unique.
    asked: std::sync::atomic::AtomicU64,
    limits: WaitingLimits,
}

/// A waiting call, the timer that cancels it, and the client it waits for (only that client
/// may resume it).
struct Parked<R> {
    call: Call<R>,
    expiry: tokio::task::AbortHandle,
    owner: String,
}

impl<R> Default for Rounds<R> {
    fn default() -> Self {
        Self::new(WaitingLimits::default())
    }
}

impl<R> Rounds<R> {
    /// No calls waiting yet; at most `limits` at once.
    pub fn new(limits: WaitingLimits) -> Self {
        Rounds {
            waiting: Mutex::new(HashMap::new()),
            asked: std::sync::atomic::AtomicU64::new(0),
            limits,
        }
    }
}

impl<R: From<InputRequiredResult> + Send + 'static> Rounds<R> {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Parked<R>>> {
        mcpmux::cli_support::sync::lock(&self.waiting)
    }

    /// The call named by `state`, given the client's `responses` to its last round. Only the
    /// client (`owner`) it waits for finds it.
    pub fn resume(
        &self,
        state: &str,
        responses: InputResponses,
        owner: &str,
    ) -> Result<Call<R>, ErrorData> {
        let parked = {
            let mut waiting = self.lock();
            match waiting.get(state) {
                Some(parked) if parked.owner == owner => waiting.remove(state),
                _ => None,
            }
        };
        let Parked {
            mut call, expiry, ..
        } = parked.ok_or_else(|| {
            ErrorData::invalid_params(
                "requestState names no call waiting here (it ended, waited too long, or was \
                 begun on another gateway): send the request again without it",
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
        mut call: Call<R>,
        context: &RequestContext<RoleServer>,
        token: Option<&ProgressToken>,
        owner: &str,
    ) -> Result<R, ErrorData> {
        loop {
            tokio::select! {
                // Progress first: a step sent before the answer is passed on before it.
                biased;
                Some(step) = call.progress.recv() => {
                    crate::progress::forward_progress(context, token, step).await;
                }
                Some(ask) = call.asks.recv() => {
                    let mut asks = vec![ask];
                    // The requests a handshake-era server makes at once are queued together:
                    // one round for all that are queued (a 2026-07-28 server's round is one
                    // ask already).
                    while let Ok(more) = call.asks.try_recv() {
                        asks.push(more);
                    }
                    return Ok(self.round(call, asks, owner)?.into());
                }
                done = &mut call.done => {
                    while let Ok(step) = call.progress.try_recv() {
                        crate::progress::forward_progress(context, token, step).await;
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

    /// A key of the gateway's own, unused in `requests`.
    fn own_key(&self, requests: &InputRequests) -> String {
        loop {
            let n = self
                .asked
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let key = format!("ask-{n}");
            if !requests.contains_key(&key) {
                return key;
            }
        }
    }

    /// Keeps `call` waiting for the answers to `asks`, and the `input_required` result that
    /// puts them to the client: a server's round under its own keys, the gateway's own asks
    /// under keys of the gateway's (and a server's key another ask of this round took).
    /// Past a cap the call is cancelled and its client told.
    fn round(
        self: &Arc<Self>,
        mut call: Call<R>,
        asks: Vec<Ask>,
        owner: &str,
    ) -> Result<InputRequiredResult, ErrorData> {
        {
            let waiting = self.lock();
            let held = waiting.values().filter(|p| p.owner == owner).count();
            if waiting.len() >= self.limits.max || held >= self.limits.per_client {
                drop(waiting);
                tracing::debug!("a round refused: too many calls wait for their clients");
                return Err(ErrorData::new(
                    rmcp::model::ErrorCode(-32000),
                    "too many calls are waiting for their clients' answers (for this client, or \
                     in all): answer or abandon one, then call again",
                    None,
                ));
            }
        }
        let mut requests = InputRequests::new();
        for ask in asks {
            match ask {
                Ask::One {
                    method,
                    params,
                    answer,
                } => match input_request(&method, params) {
                    Ok(request) => {
                        let key = self.own_key(&requests);
                        requests.insert(key.clone(), request);
                        call.waiting.push(Waiting::One(key, answer));
                    }
                    Err(refused) => {
                        let _ = answer.send(Err(refused));
                    }
                },
                Ask::Round {
                    requests: asked,
                    answer,
                } => {
                    let read: Result<Vec<_>, HostError> = asked
                        .into_iter()
                        .map(|a| input_request(&a.method, a.params).map(|r| (a.key, r)))
                        .collect();
                    match read {
                        Ok(read) => {
                            let mut keys = Vec::with_capacity(read.len());
                            for (theirs, request) in read {
                                let mine = if requests.contains_key(&theirs) {
                                    self.own_key(&requests)
                                } else {
                                    theirs.clone()
                                };
                                requests.insert(mine.clone(), request);
                                keys.push((mine, theirs));
                            }
                            call.waiting.push(Waiting::Round(keys, answer));
                        }
                        Err(refused) => {
                            let _ = answer.send(Err(refused));
                        }
                    }
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
        let parked = Parked {
            call,
            expiry: expiry.abort_handle(),
            owner: owner.to_string(),
        };
        self.lock().insert(state.clone(), parked);
        Ok(InputRequiredResult::new(Some(requests), Some(state)))
    }
}

/// `method` with `params` as an input request of a 2026-07-28 round.
fn input_request(method: &str, params: Value) -> Result<InputRequest, HostError> {
    serde_json::from_value(json!({"method": method, "params": params})).map_err(|error| {
        HostError::failed(format!(
            "{method} cannot be put to a 2026-07-28 client: {error}"
        ))
    })
}

/// 128 random bits, base64url: the name of a waiting call, which no client can guess.
fn new_state() -> String {
    use aws_lc_rs::rand::SecureRandom;
    let mut bytes = [0u8; 16];
    if aws_lc_rs::rand::SystemRandom::new()
        .fill(&mut bytes)
        .is_err()
    {
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
        let rounds = Rounds::<rmcp::model::CallToolResponse>::default();
        let refused = rounds
            .resume("not-a-call", InputResponses::new(), "ip:127.0.0.1")
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
