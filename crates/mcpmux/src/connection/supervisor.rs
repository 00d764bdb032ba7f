//! The supervisor task of one server: the only owner of its session and state. It connects,
//! publishes every state change, refreshes the tools when the server says they changed,
//! reconnects with backoff after a crash or a lost session (giving up after a while), holds the
//! server off while its circuit breaker is open and probes it after the cool-down.
//!
//! A session lost while a call was in flight on it is a crash caused by that call: it counts
//! against the breaker, and the backoff grows while such crashes follow one another, so a
//! server that dies on every call is cut off after `breaker.threshold` of them and restarted
//! only to be probed after the cool-down. A session lost while idle counts against nothing.
//!
//! A server that fails its very first connection is not retried: that is a configuration
//! problem (a wrong command, a missing key) for a person to fix, shown in `mcpmux servers`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, SystemTime};

use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, Span};

use super::breaker::CircuitBreaker;
use super::flights::Flights;
use super::handshake::{self, AttemptFailure, Session, close_session, split_tail};
use super::{Live, ServerState, Shared};
use crate::catalog::ServerTool;
use crate::config::{Backoff, ServerSpec, TransportSpec};
use crate::error::{Error, fmt_duration};
use crate::redact::redact_text;
use crate::state::HubEvent;
use crate::telemetry::lifecycle::{self, Moment};

/// Tool-list notifications arriving within this window cause one refresh, not many.
const LIST_CHANGED_DEBOUNCE: Duration = Duration::from_millis(50);

/// Longest wait for the breaker's probe (`tools/list`) to answer.
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);
/// How often a server that needs auth looks for a login's new tokens in the token store (a
/// read of one small file).
const LOGIN_POLL: Duration = Duration::from_millis(500);

pub(super) struct Supervisor {
    pub spec: Arc<ServerSpec>,
    pub shared: Shared,
    pub state: watch::Sender<ServerState>,
    pub settled: watch::Sender<bool>,
    pub live: Arc<RwLock<Option<Arc<Live>>>>,
    pub known: Arc<RwLock<Option<Arc<Vec<ServerTool>>>>>,
    pub generation: Arc<AtomicU64>,
    pub breaker: Arc<CircuitBreaker>,
    pub shutdown: CancellationToken,
    /// Told when a new session replaces one the server forgot (see `session_repair`).
    pub renewed: watch::Sender<u64>,
    /// True while `known` holds the tool cache's list; a session's list clears it.
    pub cached: Arc<std::sync::atomic::AtomicBool>,
}

/// How one session ended.
enum Outcome {
    /// We are shutting down.
    Shutdown,
    /// It was connected and the connection was lost; `during_call` when calls were in flight
    /// on it (a crash caused by a call).
    Lost { reason: String, during_call: bool },
    /// It never got connected.
    Failed { failure: AttemptFailure },
}

impl Supervisor {
    fn publish(&self, state: ServerState) {
        // What a harness reads, prints and serves: no URL's query or userinfo in it.
        let state = state.redacted();
        self.generation.fetch_add(1, Ordering::AcqRel);
        let settles = !matches!(state, ServerState::Pending { .. });
        // The state first: whoever wakes on `settled` must read the settled state.
        self.state.send_replace(state.clone());
        if settles {
            self.settled.send_replace(true);
        }
        self.shared.events.send(HubEvent::StateChanged {
            server: self.spec.name.clone(),
            state,
        });
    }

    /// A lazy server's first use: from idle to connecting, before the task runs.
    pub(super) fn wake(&self) {
        self.settled.send_replace(false);
        self.publish(ServerState::connecting());
    }

    /// A lazy server shut down before anything used it.
    pub(super) fn never_started(self) {
        self.finish(ServerState::Stopped);
    }

    fn set_live(&self, live: Option<Arc<Live>>) {
        if let Some(live) = &live {
            self.set_known(Some(live.tools.clone()));
            self.cached.store(false, Ordering::Release);
        }
        *crate::sync::write(&self.live) = live;
        self.generation.fetch_add(1, Ordering::AcqRel);
    }

    fn set_known(&self, tools: Option<Arc<Vec<ServerTool>>>) {
        if tools.is_none() {
            self.cached.store(false, Ordering::Release);
        }
        *crate::sync::write(&self.known) = tools;
    }

    /// Keeps the list a session gave for the next run's listing.
    fn remember(&self, peer: &rmcp::service::Peer<rmcp::RoleClient>, tools: &[ServerTool]) {
        let version = peer
            .peer_info()
            .and_then(|info| info.server_info.as_ref().map(|s| s.version.clone()));
        self.shared
            .tool_cache
            .store(&self.spec, version.as_deref(), tools);
    }

    /// Publishes a state the supervisor will not leave: calls stop routing to the server.
    fn finish(&self, state: ServerState) {
        self.set_known(None);
        self.set_live(None);
        self.publish(state);
    }

    fn grace(&self) -> Duration {
        self.shared
            .shutdown_grace
            .unwrap_or(self.spec.options.shutdown_grace)
    }

    /// Waits, while the server needs auth, for credentials in the token store other than
    /// `before`: a login in another process (`mcpmux auth login`) is picked up without a
    /// restart. False when the hub shuts down first.
    async fn await_login(&self, before: Option<String>) -> bool {
        loop {
            tokio::select! {
                () = self.shutdown.cancelled() => return false,
                () = tokio::time::sleep(LOGIN_POLL) => {}
            }
            let now = self.shared.ctx.stored_credentials(&self.spec);
            if now.is_some() && now != before {
                return true;
            }
        }
    }

    pub(super) async fn run(self) {
        let name = self.spec.name.clone();
        let backoff = self.spec.options.backoff;
        let mut attempt: u32 = 1;
        let mut ever_connected = false;
        let mut lost_at: Option<Instant> = None;
        let mut last_error: Option<String> = None;
        loop {
            if attempt > 1 || ever_connected {
                self.publish(ServerState::Pending {
                    attempt,
                    next_retry_at: None,
                    last_error: last_error.clone(),
                });
            }
            let restart = (attempt > 1 || ever_connected)
                .then(|| last_error.as_deref().unwrap_or("reconnecting"));
            // Never entered: what the handshake spawns would keep it open all session long.
            let start = lifecycle::start(&name, restart, attempt);
            let shaking = lifecycle::handshake(&start);
            let connected = tokio::select! {
                result = handshake::connect(&self.spec, &self.shared) => result,
                () = self.shutdown.cancelled() => {
                    self.finish(ServerState::Stopped);
                    return;
                }
            };
            match &connected {
                Ok(session) => {
                    lifecycle::handshook(&shaking, session.era, &session.version);
                    lifecycle::handshook(&start, session.era, &session.version);
                }
                Err(failure) => {
                    let error = failure.error.to_string();
                    lifecycle::failed(&shaking, &error);
                    lifecycle::failed(&start, &error);
                }
            }
            drop(shaking);
            let outcome = match connected {
                Ok(session) => self.serve(session, &mut ever_connected, start).await,
                Err(failure) => Outcome::Failed { failure },
            };
            match outcome {
                Outcome::Shutdown => {
                    self.finish(ServerState::Stopped);
                    return;
                }
                Outcome::Lost {
                    reason,
                    during_call,
                } => {
                    let reason = redact_text(&reason).into_owned();
                    tracing::warn!(server = %name, during_call, "connection lost: {reason}; reconnecting");
                    lost_at = Some(Instant::now());
                    if during_call {
                        if self.breaker.record_crash(&reason) {
                            let described = self.breaker.describe();
                            tracing::warn!(server = %name, "circuit breaker opened: {described}");
                            lifecycle::mark(&name, Moment::BreakerOpen, Some(&described));
                        }
                        // Consecutive crashes keep growing the backoff instead of resetting it.
                        attempt = self.breaker.streak().max(1);
                    } else {
                        // A fresh session after a loss no call caused starts with a clean slate.
                        self.breaker.close();
                        attempt = 1;
                    }
                    last_error = Some(reason);
                }
                Outcome::Failed { failure } => {
                    let auth = failure.auth;
                    let oauth = failure.oauth;
                    let (error, stderr_tail) = split_tail(failure.error);
                    let error = redact_text(&error).into_owned();
                    if auth && !oauth {
                        tracing::warn!(server = %name, "{error}");
                        self.finish(ServerState::NeedsAuth {
                            message: error,
                            login: false,
                        });
                        return;
                    }
                    if auth {
                        tracing::warn!(server = %name, "{error}");
                        let before = self.shared.ctx.stored_credentials(&self.spec);
                        let (message, login) = needs_auth_advice(&self.spec, error);
                        self.finish(ServerState::NeedsAuth { message, login });
                        if !self.await_login(before).await {
                            return;
                        }
                        tracing::info!(server = %name, "new credentials in the token store (a login); connecting again");
                        attempt = 1;
                        lost_at = None;
                        last_error = None;
                        self.publish(ServerState::Pending {
                            attempt,
                            next_retry_at: None,
                            last_error: None,
                        });
                        continue;
                    }
                    if !ever_connected {
                        tracing::warn!(server = %name, "{error}");
                        self.finish(ServerState::Failed { error, stderr_tail });
                        return;
                    }
                    tracing::debug!(server = %name, attempt, "reconnect failed: {error}");
                    if self.breaker.is_open() {
                        // The reconnect was the breaker's probe: another cool-down.
                        self.breaker.reopen(&error);
                        lifecycle::mark(&name, Moment::BreakerOpen, Some(&error));
                    }
                    last_error = Some(error);
                }
            }
            let since = lost_at.unwrap_or_else(Instant::now);
            if since.elapsed() >= backoff.give_up {
                let reason = format!(
                    "gave up reconnecting after {}; last error: {}",
                    fmt_duration(backoff.give_up),
                    last_error.as_deref().unwrap_or("unknown")
                );
                tracing::warn!(server = %name, "{reason}");
                self.finish(ServerState::Disabled { reason });
                return;
            }
            let mut delay = backoff_delay(&backoff, attempt);
            attempt += 1;
            if let Some(due) = self.breaker.probe_due() {
                // Held off until the breaker's cool-down is over: the reconnect is its probe.
                delay = delay.max(due.saturating_duration_since(Instant::now()));
                self.publish(ServerState::Disabled {
                    reason: self.breaker.describe(),
                });
            } else {
                self.publish(ServerState::Pending {
                    attempt,
                    next_retry_at: Some(SystemTime::now() + delay),
                    last_error: last_error.clone(),
                });
            }
            tokio::select! {
                () = tokio::time::sleep(delay) => {}
                () = self.shutdown.cancelled() => {
                    self.finish(ServerState::Stopped);
                    return;
                }
            }
        }
    }

    /// Holds one session until it ends: refreshes tools on list_changed, and runs the breaker.
    /// `start` is the span of the connection attempt: it ends once the tool list is in.
    async fn serve(&self, session: Session, ever_connected: &mut bool, start: Span) -> Outcome {
        let Session {
            running,
            era,
            version,
            side,
            progress,
            tools_changed,
            direct,
            http,
        } = session;
        let peer = running.peer().clone();
        // Sent beside rmcp's session task, a call carries what rmcp would have added to it.
        let session_meta = super::client::session_meta(&peer, &self.shared.host);
        let callers = running.service().callers.clone();
        let closed = CancellationToken::new();
        let exit = side.process.as_ref().map(|p| p.exit_watch());
        let flights = Arc::new(Flights::default());
        let stderr = side.process.as_ref().map(|p| p.stderr().clone());
        // Entered for the listing only: its requests carry the start's trace context.
        let listing = handshake::list_tools(&peer, &self.spec.name, self.spec.startup_timeout)
            .instrument(start.clone())
            .await;
        let tools = match listing {
            Ok(tools) => tools,
            Err(error) => {
                lifecycle::failed(&start, &error.to_string());
                let error = match error {
                    Error::Connect {
                        server,
                        message,
                        stderr_tail,
                        source,
                    } if stderr_tail.is_empty() => Error::Connect {
                        server,
                        message,
                        stderr_tail: side.drained_tail().await,
                        source,
                    },
                    other => other,
                };
                close_session(running, side, self.grace()).await;
                return Outcome::Failed {
                    failure: error.into(),
                };
            }
        };
        let make_live = |tools: Arc<Vec<ServerTool>>| {
            Arc::new(Live {
                peer: peer.clone(),
                tools,
                progress: progress.clone(),
                closed: closed.clone(),
                exit: exit.clone(),
                stderr: stderr.clone(),
                host: self.shared.host.clone(),
                flights: flights.clone(),
                callers: callers.clone(),
                direct: direct.clone(),
                http: http.clone(),
                session_meta: session_meta.clone(),
                era,
            })
        };
        let mut tools_version: u64 = 1;
        let mut tools = Arc::new(tools);
        // An open breaker (the last session crashed under calls) was held through its
        // cool-down before this reconnect: the handshake was its probe, so calls go out again,
        // on trial. A signal left from the last session's failures is stale.
        if self.breaker.half_open() {
            lifecycle::mark(&self.spec.name, Moment::BreakerClose, None);
        }
        {
            use futures::FutureExt;
            let _ = self.breaker.opened.notified().now_or_never();
        }
        // The listing showed the cached list until now: a different one is a tool-list change.
        let from_cache = self
            .cached
            .load(Ordering::Acquire)
            .then(|| crate::sync::read(&self.known).clone())
            .flatten();
        self.set_live(Some(make_live(tools.clone())));
        *ever_connected = true;
        lifecycle::started(&start, tools.len());
        drop(start);
        tracing::info!(server = %self.spec.name, %era, %version, tools = tools.len(), "connected");
        let connected = |tools: usize, tools_version: u64| ServerState::Connected {
            era,
            version: version.clone(),
            tools,
            tools_version,
        };
        self.publish(connected(tools.len(), tools_version));
        // After the server is announced: the write is for the next run, not on this startup.
        self.remember(&peer, &tools);
        if let Some(cached) = from_cache
            && *cached != *tools
        {
            tracing::info!(server = %self.spec.name, tools = tools.len(), "tool list differs from the cached one");
            lifecycle::mark(&self.spec.name, Moment::ToolsChanged, None);
            self.shared.events.send(HubEvent::ToolsChanged {
                server: self.spec.name.clone(),
            });
        }

        let listener = (era == super::Era::Stateless).then(|| {
            tokio::spawn(listen_for_list_changes(
                peer.clone(),
                self.spec.name.clone(),
                tools_changed.clone(),
                self.shared.host.clone(),
            ))
        });
        let repair = side.http_session.clone().map(|watch| {
            tokio::spawn(super::session_repair::run(
                self.spec.name.clone(),
                peer.clone(),
                watch,
                tools_changed.clone(),
                self.renewed.clone(),
            ))
        });
        let service_token = running.cancellation_token();
        let mut waiting = tokio::spawn(running.waiting());
        let mut exit_watch = exit.clone();
        let mut refusals = self.shared.ctx.auth_refusals(&self.spec);
        let mut probe_at: Option<Instant> = None;
        let lost = loop {
            tokio::select! {
                () = self.shutdown.cancelled() => break None,
                // The credentials are gone (revoked, refresh refused): reconnecting asks the
                // server afresh and ends `NeedsAuth` if it still refuses.
                Some(()) = async {
                    match refusals.as_mut() {
                        Some(r) => r.changed().await.ok(),
                        None => std::future::pending().await,
                    }
                } => break Some("the server refused the access token and it could not be renewed".into()),
                quit = &mut waiting => break Some(format!("the session ended ({quit:?})")),
                Some(info) = async {
                    match exit_watch.as_mut() {
                        Some(w) => w.wait_for(Option::is_some).await.ok().and_then(|v| v.clone()),
                        None => std::future::pending().await,
                    }
                } => break Some(info.to_string()),
                () = tools_changed.notified() => {
                    // Coalesce a burst of notifications into one refresh.
                    tokio::time::sleep(LIST_CHANGED_DEBOUNCE).await;
                    use futures::FutureExt;
                    let _ = tools_changed.notified().now_or_never();
                    let changed = lifecycle::mark(&self.spec.name, Moment::ToolsChanged, None);
                    let listing = handshake::list_tools(&peer, &self.spec.name, self.spec.startup_timeout);
                    match listing.instrument(changed).await {
                        Ok(new_tools) => {
                            self.remember(&peer, &new_tools);
                            tools = Arc::new(new_tools);
                            tools_version += 1;
                            self.set_live(Some(make_live(tools.clone())));
                            if !self.breaker.is_open() {
                                self.publish(connected(tools.len(), tools_version));
                            }
                            tracing::info!(server = %self.spec.name, tools = tools.len(), tools_version, "tool list changed");
                            self.shared.events.send(HubEvent::ToolsChanged {
                                server: self.spec.name.clone(),
                            });
                        }
                        Err(e) => tracing::warn!(server = %self.spec.name, "tool list refresh failed: {e}"),
                    }
                }
                () = self.breaker.opened.notified() => {
                    // Its span was marked where it opened (a call's failure).
                    if self.breaker.is_open() {
                        self.publish(ServerState::Disabled { reason: self.breaker.describe() });
                        probe_at = self.breaker.probe_due();
                    }
                }
                () = async {
                    match probe_at {
                        Some(at) => tokio::time::sleep_until(at).await,
                        None => std::future::pending().await,
                    }
                } => {
                    let probing = lifecycle::mark(&self.spec.name, Moment::BreakerProbe, None);
                    let probe = tokio::time::timeout(
                        PROBE_TIMEOUT.min(self.spec.call_timeout),
                        handshake::list_tools(&peer, &self.spec.name, PROBE_TIMEOUT),
                    )
                    .instrument(probing)
                    .await;
                    match probe {
                        Ok(Ok(new_tools)) => {
                            self.breaker.half_open();
                            lifecycle::mark(&self.spec.name, Moment::BreakerClose, None);
                            probe_at = None;
                            if *tools != new_tools {
                                tools = Arc::new(new_tools);
                                tools_version += 1;
                            }
                            self.set_live(Some(make_live(tools.clone())));
                            tracing::warn!(server = %self.spec.name, "circuit breaker closed: the server answers again");
                            self.publish(connected(tools.len(), tools_version));
                        }
                        Ok(Err(e)) => {
                            let error = e.to_string();
                            self.breaker.reopen(&error);
                            lifecycle::mark(&self.spec.name, Moment::BreakerOpen, Some(&error));
                            probe_at = self.breaker.probe_due();
                            self.publish(ServerState::Disabled { reason: self.breaker.describe() });
                        }
                        Err(_) => {
                            self.breaker.reopen("the probe timed out");
                            lifecycle::mark(&self.spec.name, Moment::BreakerOpen, Some("the probe timed out"));
                            probe_at = self.breaker.probe_due();
                            self.publish(ServerState::Disabled { reason: self.breaker.describe() });
                        }
                    }
                }
            }
        };
        // Calls still in flight when the session ended: it crashed under them.
        let in_flight = if lost.is_some() { flights.end() } else { 0 };
        if let Some(reason) = &lost {
            // Said at once, before the slow part of closing: the listing follows the state,
            // and a connected state would offer tools of a session that is gone.
            self.publish(ServerState::Pending {
                attempt: 1,
                next_retry_at: None,
                last_error: Some(reason.clone()),
            });
        }
        closed.cancel();
        if let Some(listener) = listener {
            listener.abort();
        }
        if let Some(repair) = repair {
            repair.abort();
        }
        self.set_live(None);
        service_token.cancel();
        if !waiting.is_finished() {
            let _ = tokio::time::timeout(Duration::from_secs(1), &mut waiting).await;
        }
        waiting.abort();
        let outcome = match lost {
            None => Outcome::Shutdown,
            Some(reason) => {
                let mut reason = match &exit {
                    Some(exit) => handshake::wait_exit(exit.clone(), Duration::from_millis(100))
                        .await
                        .map(|info| info.to_string())
                        .unwrap_or(reason),
                    None => reason,
                };
                let tail = side.drained_tail().await;
                if let Some(last) = tail.last() {
                    reason.push_str(&format!(" (stderr: {last})"));
                }
                Outcome::Lost {
                    reason,
                    during_call: in_flight > 0,
                }
            }
        };
        side.stop(self.grace()).await;
        outcome
    }
}

/// The stateless era sends no notification without a subscription: when the server can
/// announce changes of its tool, prompt or resource list, subscribe to those it announces;
/// a tool-list change goes to the supervisor, the others to the host (as a handshake-era
/// server's notifications do).
async fn listen_for_list_changes(
    peer: rmcp::service::Peer<rmcp::RoleClient>,
    server: String,
    tools_changed: Arc<tokio::sync::Notify>,
    host: crate::host::Host,
) {
    let Some(info) = peer.peer_info() else {
        return;
    };
    let capabilities = &info.capabilities;
    let tools = capabilities
        .tools
        .as_ref()
        .and_then(|t| t.list_changed)
        .unwrap_or(false);
    let prompts = capabilities
        .prompts
        .as_ref()
        .and_then(|p| p.list_changed)
        .unwrap_or(false);
    let resources = capabilities
        .resources
        .as_ref()
        .and_then(|r| r.list_changed)
        .unwrap_or(false);
    if !(tools || prompts || resources) {
        return;
    }
    let mut filter = rmcp::model::SubscriptionFilter::new();
    let announced = |yes: bool| yes.then_some(true);
    filter.tools_list_changed = announced(tools);
    filter.prompts_list_changed = announced(prompts);
    filter.resources_list_changed = announced(resources);
    let mut subscription = match peer.listen(filter).await {
        Ok(subscription) => subscription,
        Err(e) => {
            tracing::debug!(server = %server, "cannot subscribe to list changes: {e}");
            return;
        }
    };
    loop {
        match subscription.next().await {
            Ok(Some(rmcp::model::ServerNotification::ToolListChangedNotification(_))) => {
                tools_changed.notify_one();
            }
            Ok(Some(rmcp::model::ServerNotification::PromptListChangedNotification(_))) => {
                lifecycle::mark(&server, Moment::PromptsChanged, None);
                host.publish(crate::host::ResourceEvent::PromptsChanged {
                    server: server.clone(),
                });
            }
            Ok(Some(rmcp::model::ServerNotification::ResourceListChangedNotification(_))) => {
                lifecycle::mark(&server, Moment::ResourcesChanged, None);
                host.publish(crate::host::ResourceEvent::ResourcesChanged {
                    server: server.clone(),
                });
            }
            Ok(Some(_)) => {}
            Ok(None) | Err(_) => return,
        }
    }
}

/// What to do about a server that wants authorization, and whether a login would do it: an
/// OAuth login where mcpmux runs OAuth for it, else better credentials in its headers (the
/// transports' own messages say how). Words for whoever reads the state, a model included:
/// the CLI adds its own command.
fn needs_auth_advice(spec: &ServerSpec, error: String) -> (String, bool) {
    match &spec.transport {
        TransportSpec::Http { headers, .. }
            if !crate::auth::has_authorization_header(headers)
                && spec.auth.headers_helper.is_none() =>
        {
            (
                format!("{error}; it needs a login (OAuth), or a token in its `headers`"),
                true,
            )
        }
        TransportSpec::Http { .. } => (
            format!(
                "{error}; the server refused the `Authorization` header it was given: give a valid token in its `headers` or `headersHelper`"
            ),
            false,
        ),
        _ => (error, false),
    }
}

/// `initial` doubling per attempt up to `max`, with ±20% jitter so that many servers (or many
/// mcpmux processes) lost at once do not reconnect in lockstep.
fn backoff_delay(backoff: &Backoff, attempt: u32) -> Duration {
    let exponent = attempt.saturating_sub(1).min(20);
    let base = backoff
        .initial
        .saturating_mul(1u32 << exponent)
        .min(backoff.max);
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    // A cheap spread in [0.8, 1.2): jitter needs no cryptographic randomness.
    let factor = 0.8 + f64::from(nanos % 1000) / 2500.0;
    base.mul_f64(factor).min(backoff.max.mul_f64(1.2))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_with_jitter_up_to_the_cap() {
        let backoff = Backoff {
            initial: Duration::from_secs(1),
            max: Duration::from_secs(30),
            give_up: Duration::from_secs(600),
        };
        for (attempt, expected) in [
            (1, 1.0),
            (2, 2.0),
            (3, 4.0),
            (5, 16.0),
            (6, 30.0),
            (30, 30.0),
        ] {
            let delay = backoff_delay(&backoff, attempt).as_secs_f64();
            assert!(
                delay >= expected * 0.8 - 1e-9 && delay < expected * 1.2 + 1e-9,
                "attempt {attempt}: {delay}"
            );
        }
    }
}
