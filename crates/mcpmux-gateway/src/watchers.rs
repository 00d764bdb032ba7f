//! Who is told that a list changed (tools, resources, prompts), and where a server's log
//! message goes: handshake-era sessions (stdio, or an HTTP session with `Mcp-Session-Id`)
//! once they sent `notifications/initialized`, and 2026-07-28 `subscriptions/listen` streams
//! that asked for that list — a session whose access rule narrows its view only when its own view
//! changed. A log goes to the one session it is for, never to the others. Owns that list and the task that watches the hub: on every hub
//! event it compares the tool set with the one last announced (a server's tools come and go
//! with its state and breaker, not only with its own `list_changed`), and the servers that
//! offer resources and prompts with those last announced, and tells every watcher when they
//! differ. A watcher that cannot be reached is forgotten. Knows nothing of HTTP.

// Logging is SEP-2577-deprecated in rmcp, yet the handshake era's, and passed on.
#![allow(deprecated)]

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{
    Arc, Mutex, MutexGuard,
    atomic::{AtomicBool, AtomicU64, Ordering},
};

use mcpmux::host::ServerLog;
use rmcp::{
    RoleServer,
    model::{
        LoggingMessageNotification, LoggingMessageNotificationParam, PromptListChangedNotification,
        ResourceListChangedNotification, ServerJsonRpcMessage, ServerNotification,
        ToolListChangedNotification,
    },
    service::Peer,
    service::SubscriptionSink,
};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use crate::access::Rule;
use crate::outbox::Outbox;
use crate::view::View;

/// Numbers watchers, so one can be found again to be removed.
static NEXT_WATCHER: AtomicU64 = AtomicU64::new(1);

/// Which list changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum List {
    Tools,
    Resources,
    Prompts,
}

impl List {
    fn method(self) -> &'static str {
        match self {
            List::Tools => "tools/list_changed",
            List::Resources => "resources/list_changed",
            List::Prompts => "prompts/list_changed",
        }
    }

    fn notification(self) -> ServerNotification {
        match self {
            List::Tools => ServerNotification::ToolListChangedNotification(
                ToolListChangedNotification::default(),
            ),
            List::Resources => ServerNotification::ResourceListChangedNotification(
                ResourceListChangedNotification::default(),
            ),
            List::Prompts => ServerNotification::PromptListChangedNotification(
                PromptListChangedNotification::default(),
            ),
        }
    }
}

/// One downstream party to tell.
#[derive(Clone)]
enum Watcher {
    /// A handshake-era session, and its number (`Session::id`).
    Session(Peer<RoleServer>, u64),
    /// A `/mcp` session, told through the outbox of its `GET` stream (which outlives its
    /// handler while the session is parked), and its number.
    Outbox(Arc<Outbox>, u64),
    /// A 2026-07-28 listen stream.
    Listen(SubscriptionSink),
}

/// The downstream parties to tell about list changes and logs.
#[derive(Default)]
pub struct Watchers {
    watchers: Mutex<Vec<(u64, Watcher)>>,
    /// The gateway serves one client for its whole life (stdio): a log no call explains is
    /// still that client's, as nobody else's it could be.
    alone: AtomicBool,
    /// Sessions whose identity sees part of the gateway (access rule): the rule, and the
    /// digest of the tools it was last told of. Told of a tool change only when its own
    /// view changed.
    views: Mutex<HashMap<u64, (Arc<Rule>, u64)>>,
}

/// The tools `rule` lets its identity see (its scope aside: a change there is told anyway).
pub fn visible(rule: &Rule, tools: &[mcpmux::Tool]) -> Vec<mcpmux::Tool> {
    tools
        .iter()
        .filter(|t| rule.allows_tool(&t.server, &t.raw_name, &t.name))
        .cloned()
        .collect()
}

impl Watchers {
    fn lock(&self) -> MutexGuard<'_, Vec<(u64, Watcher)>> {
        mcpmux::cli_support::sync::lock(&self.watchers)
    }

    /// Remembers handshake-era session `session`; returns its id for [`Watchers::remove`]
    /// (when the session ends: what its peer holds is freed then). A session whose rule
    /// narrows what it sees is given `view`: the rule and the digest of the tools it sees now.
    ///
    /// A session with an `outbox` (`/mcp`) is told through it, not its peer, and stays a
    /// watcher while the outbox is open, past its handler (a parked session): a restored
    /// session's new handler takes the place of its predecessor's.
    pub fn add_session(
        &self,
        peer: Peer<RoleServer>,
        session: u64,
        outbox: Option<Arc<Outbox>>,
        view: Option<(Arc<Rule>, u64)>,
    ) -> u64 {
        match outbox {
            Some(outbox) => self.add_outbox(session, outbox, view),
            None => self.add(Watcher::Session(peer, session), view),
        }
    }

    /// Remembers `/mcp` session `session`, told through `outbox` alone (a session born
    /// parked has no peer: `handshake`); as [`Watchers::add_session`] with an outbox.
    pub fn add_outbox(
        &self,
        session: u64,
        outbox: Arc<Outbox>,
        view: Option<(Arc<Rule>, u64)>,
    ) -> u64 {
        self.add(Watcher::Outbox(outbox, session), view)
    }

    fn add(&self, watcher: Watcher, view: Option<(Arc<Rule>, u64)>) -> u64 {
        let id = NEXT_WATCHER.fetch_add(1, Ordering::Relaxed);
        if let Some(view) = view {
            self.views().insert(id, view);
        }
        let outbox = match &watcher {
            Watcher::Outbox(outbox, _) => Some(outbox.clone()),
            _ => None,
        };
        let mut watchers = self.lock();
        let mut gone = Vec::new();
        watchers.retain(|(other, w)| {
            let closed = match w {
                Watcher::Session(p, _) => p.is_transport_closed(),
                Watcher::Outbox(o, _) => {
                    o.is_closed() || outbox.as_ref().is_some_and(|new| Arc::ptr_eq(o, new))
                }
                Watcher::Listen(_) => false,
            };
            if closed {
                gone.push(*other);
            }
            !closed
        });
        watchers.push((id, watcher));
        drop(watchers);
        if !gone.is_empty() {
            self.views().retain(|other, _| !gone.contains(other));
        }
        id
    }

    fn views(&self) -> MutexGuard<'_, HashMap<u64, (Arc<Rule>, u64)>> {
        mcpmux::cli_support::sync::lock(&self.views)
    }

    /// From now on the gateway serves one client only, for good (stdio).
    pub fn serve_alone(&self) {
        self.alone.store(true, Ordering::Relaxed);
    }

    /// The session a log that no call explains goes to: the one client of a gateway that
    /// serves one alone; else none (it could be any client's).
    pub fn sole_session(&self) -> Option<u64> {
        if !self.alone.load(Ordering::Relaxed) {
            return None;
        }
        let watchers = self.lock();
        let mut sessions = watchers.iter().filter_map(|(_, w)| match w {
            Watcher::Session(_, session) | Watcher::Outbox(_, session) => Some(*session),
            Watcher::Listen(_) => None,
        });
        match (sessions.next(), sessions.next()) {
            (Some(only), None) => Some(only),
            _ => None,
        }
    }

    /// Remembers a listen stream; returns its id for [`Watchers::remove`].
    pub fn add_listen(&self, sink: SubscriptionSink) -> u64 {
        let id = NEXT_WATCHER.fetch_add(1, Ordering::Relaxed);
        self.lock().push((id, Watcher::Listen(sink)));
        id
    }

    /// Forgets a listen stream or a session that ended.
    pub fn remove(&self, id: u64) {
        self.lock().retain(|(other, _)| *other != id);
        self.views().remove(&id);
    }

    /// How many parties are watching.
    pub fn count(&self) -> usize {
        self.lock().len()
    }

    /// Sends `notifications/tools/list_changed` to every watcher whose view of `tools` (the
    /// tools served now) changed, forgetting those gone.
    pub async fn tools_changed(&self, tools: &[mcpmux::Tool]) {
        let unchanged: Vec<u64> = self
            .views()
            .iter_mut()
            .filter_map(|(id, (rule, seen))| {
                let now = fingerprint(&visible(rule, tools));
                let same = now == *seen;
                *seen = now;
                same.then_some(*id)
            })
            .collect();
        self.changed_except(List::Tools, &unchanged).await;
    }

    /// Sends the `list_changed` of `list` to every session and to every listen stream that
    /// asked for it, forgetting those gone.
    pub async fn changed(&self, list: List) {
        self.changed_except(list, &[]).await;
    }

    /// [`Watchers::changed`], the watchers of `unchanged` left out.
    async fn changed_except(&self, list: List, unchanged: &[u64]) {
        let mut watchers: Vec<(u64, Watcher)> = self.lock().clone();
        watchers.retain(|(id, _)| !unchanged.contains(id));
        let mut gone = Vec::new();
        for (id, watcher) in &watchers {
            let sent = match watcher {
                Watcher::Session(peer, _) if peer.is_transport_closed() => {
                    Err("session closed".to_string())
                }
                Watcher::Session(peer, _) => match list {
                    List::Tools => peer.notify_tool_list_changed().await,
                    List::Resources => peer.notify_resource_list_changed().await,
                    List::Prompts => peer.notify_prompt_list_changed().await,
                }
                .map_err(|e| e.to_string()),
                Watcher::Outbox(outbox, _) if outbox.is_closed() => {
                    Err("session closed".to_string())
                }
                Watcher::Outbox(outbox, _) => {
                    outbox.put(ServerJsonRpcMessage::notification(list.notification()));
                    Ok(())
                }
                Watcher::Listen(sink) => {
                    let accepted = sink.accepted();
                    let wanted = match list {
                        List::Tools => accepted.tools_list_changed,
                        List::Resources => accepted.resources_list_changed,
                        List::Prompts => accepted.prompts_list_changed,
                    };
                    if wanted != Some(true) {
                        continue;
                    }
                    match list {
                        List::Tools => sink.notify_tool_list_changed().await,
                        List::Resources => sink.notify_resource_list_changed().await,
                        List::Prompts => sink.notify_prompt_list_changed().await,
                    }
                    .map_err(|e| e.to_string())
                }
            };
            if let Err(error) = sent {
                tracing::debug!(%error, "{} not delivered; forgetting the watcher", list.method());
                gone.push(*id);
            }
        }
        if !gone.is_empty() {
            self.lock().retain(|(id, _)| !gone.contains(id));
        }
    }

    /// Passes a server's log message to session `session` alone (whose level admits it:
    /// `levels`), the server named in `logger` (`SERVER`, or `SERVER/LOGGER` when the server
    /// named one). Listen streams get none: 2026-07-28 carries logs on the request that asked
    /// for them.
    pub async fn log_to(&self, session: u64, log: &ServerLog) {
        let found = self.lock().iter().find_map(|(id, w)| match w {
            Watcher::Session(_, of) | Watcher::Outbox(_, of) if *of == session => {
                Some((*id, w.clone()))
            }
            _ => None,
        });
        let Some((id, watcher)) = found else {
            return;
        };
        let logger = match &log.logger {
            Some(logger) => format!("{}/{logger}", log.server),
            None => log.server.clone(),
        };
        let mut param = LoggingMessageNotificationParam::new(
            mcpmux::rmcp_model::logging_level(log.level),
            log.data.clone(),
        );
        param.logger = Some(logger);
        let sent = match watcher {
            Watcher::Outbox(outbox, _) if !outbox.is_closed() => {
                outbox.put(ServerJsonRpcMessage::notification(
                    ServerNotification::LoggingMessageNotification(
                        LoggingMessageNotification::new(param),
                    ),
                ));
                Ok(())
            }
            Watcher::Session(peer, _) if !peer.is_transport_closed() => peer
                .notify_logging_message(param)
                .await
                .map_err(|e| e.to_string()),
            _ => Err("session closed".to_string()),
        };
        if let Err(error) = sent {
            tracing::debug!(%error, "a server log not delivered; forgetting the session");
            self.lock().retain(|(other, _)| *other != id);
        }
    }
}

/// A digest of the tool set as listed downstream: names, descriptions and schemas.
pub fn fingerprint(tools: &[mcpmux::Tool]) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    for tool in tools {
        tool.name.hash(&mut hasher);
        tool.title.hash(&mut hasher);
        tool.description.hash(&mut hasher);
        tool.input_schema.to_string().hash(&mut hasher);
        tool.output_schema
            .as_ref()
            .map(ToString::to_string)
            .hash(&mut hasher);
    }
    hasher.finish()
}

/// A digest of the servers (in scope, connected) that offer resources, and of those that
/// offer prompts: when one changes, so does that list.
pub fn offers(hub: &mcpmux::Hub, view: &View) -> (u64, u64) {
    let mut resources = std::collections::hash_map::DefaultHasher::new();
    let mut prompts = std::collections::hash_map::DefaultHasher::new();
    for server in hub.servers() {
        if !view.server_shown(&server.name) {
            continue;
        }
        if server.resources {
            server.name.hash(&mut resources);
        }
        if server.prompts {
            server.name.hash(&mut prompts);
        }
    }
    (resources.finish(), prompts.finish())
}

/// What the watcher of the hub compares after each event.
pub struct Looks<T, O> {
    /// The tools served now.
    pub tools: T,
    /// A digest of which servers offer resources and prompts now: (resources, prompts).
    pub offers: O,
}

/// Watches the hub until `stop`: after each event (or a burst of them), lists the tools and
/// tells the watchers when the set differs from the last one announced; likewise when the
/// servers offering resources or prompts are not those last announced (a server that
/// connected or went away changes those lists; a server's own `list_changed` is passed on
/// elsewhere, as it comes).
///
/// The first announcement waits for `settled` (startup over, or the first `tools/list`'s
/// wait for it given up): a client's first list already waits for startup, so the servers
/// connecting meanwhile are not a change to announce.
pub async fn forward_changes(
    mut events: broadcast::Receiver<mcpmux::HubEvent>,
    settled: impl Future<Output = ()>,
    looks: Looks<impl Fn() -> Vec<mcpmux::Tool>, impl Fn() -> (u64, u64)>,
    watchers: Arc<Watchers>,
    stop: CancellationToken,
) {
    tokio::select! {
        () = stop.cancelled() => return,
        () = settled => {}
    }
    while let Ok(_) | Err(broadcast::error::TryRecvError::Lagged(_)) = events.try_recv() {}
    let mut announced = fingerprint(&(looks.tools)());
    let mut offered = (looks.offers)();
    loop {
        let event = tokio::select! {
            () = stop.cancelled() => return,
            event = events.recv() => event,
        };
        match event {
            Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
            Err(broadcast::error::RecvError::Closed) => return,
        }
        // A burst (many servers connecting) becomes one look at the tool set.
        while let Ok(_) | Err(broadcast::error::TryRecvError::Lagged(_)) = events.try_recv() {}
        let tools = (looks.tools)();
        let now = fingerprint(&tools);
        if now != announced {
            announced = now;
            tracing::debug!(
                watchers = watchers.count(),
                "tool set changed; telling clients"
            );
            watchers.tools_changed(&tools).await;
        }
        let offers = (looks.offers)();
        if offers.0 != offered.0 {
            watchers.changed(List::Resources).await;
        }
        if offers.1 != offered.1 {
            watchers.changed(List::Prompts).await;
        }
        offered = offers;
    }
}
