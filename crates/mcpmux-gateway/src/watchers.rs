//! Who is told that the tool list changed: handshake-era sessions (stdio, or an HTTP session
//! with `Mcp-Session-Id`) once they sent `notifications/initialized`, and 2026-07-28
//! `subscriptions/listen` streams that asked for `toolsListChanged`. Owns that list and the
//! task that watches the hub: on every hub event it compares the tool set with the one last
//! announced (a server's tools come and go with its state and breaker, not only with its own
//! `list_changed`), and tells every watcher when it differs. A watcher that cannot be reached
//! is forgotten. Knows nothing of HTTP.

use std::hash::{Hash, Hasher};
use std::sync::{
    Arc, Mutex, MutexGuard,
    atomic::{AtomicU64, Ordering},
};

use rmcp::{RoleServer, service::Peer, service::SubscriptionSink};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

/// Numbers watchers, so one can be found again to be removed.
static NEXT_WATCHER: AtomicU64 = AtomicU64::new(1);

/// One downstream party to tell.
#[derive(Clone)]
enum Watcher {
    /// A handshake-era session.
    Session(Peer<RoleServer>),
    /// A 2026-07-28 listen stream.
    Listen(SubscriptionSink),
}

/// The downstream parties to tell about tool-list changes.
#[derive(Default)]
pub struct Watchers {
    watchers: Mutex<Vec<(u64, Watcher)>>,
}

impl Watchers {
    fn lock(&self) -> MutexGuard<'_, Vec<(u64, Watcher)>> {
        match self.watchers.lock() {
            Ok(watchers) => watchers,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// Remembers a handshake-era session.
    pub fn add_session(&self, peer: Peer<RoleServer>) {
        let id = NEXT_WATCHER.fetch_add(1, Ordering::Relaxed);
        let mut watchers = self.lock();
        watchers.retain(|(_, w)| !matches!(w, Watcher::Session(p) if p.is_transport_closed()));
        watchers.push((id, Watcher::Session(peer)));
    }

    /// Remembers a listen stream; returns its id for [`Watchers::remove`].
    pub fn add_listen(&self, sink: SubscriptionSink) -> u64 {
        let id = NEXT_WATCHER.fetch_add(1, Ordering::Relaxed);
        self.lock().push((id, Watcher::Listen(sink)));
        id
    }

    /// Forgets a listen stream that ended.
    pub fn remove(&self, id: u64) {
        self.lock().retain(|(other, _)| *other != id);
    }

    /// How many parties are watching.
    pub fn count(&self) -> usize {
        self.lock().len()
    }

    /// Sends `notifications/tools/list_changed` to every watcher, forgetting those gone.
    pub async fn tools_changed(&self) {
        let watchers: Vec<(u64, Watcher)> = self.lock().clone();
        let mut gone = Vec::new();
        for (id, watcher) in &watchers {
            let sent = match watcher {
                Watcher::Session(peer) => {
                    if peer.is_transport_closed() {
                        Err("session closed".to_string())
                    } else {
                        peer.notify_tool_list_changed()
                            .await
                            .map_err(|e| e.to_string())
                    }
                }
                Watcher::Listen(sink) => sink
                    .notify_tool_list_changed()
                    .await
                    .map_err(|e| e.to_string()),
            };
            if let Err(error) = sent {
                tracing::debug!(%error, "tools/list_changed not delivered; forgetting the watcher");
                gone.push(*id);
            }
        }
        if !gone.is_empty() {
            self.lock().retain(|(id, _)| !gone.contains(id));
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

/// Watches the hub until `stop`: after each event (or a burst of them), lists the tools and
/// tells the watchers when the set differs from the last one announced.
///
/// The first announcement waits for `settled` (startup over, or the first `tools/list`'s
/// wait for it given up): a client's first list already waits for startup, so the servers
/// connecting meanwhile are not a change to announce.
pub async fn forward_changes(
    mut events: broadcast::Receiver<mcpmux::HubEvent>,
    settled: impl Future<Output = ()>,
    tools: impl Fn() -> Vec<mcpmux::Tool>,
    watchers: Arc<Watchers>,
    stop: CancellationToken,
) {
    tokio::select! {
        () = stop.cancelled() => return,
        () = settled => {}
    }
    while let Ok(_) | Err(broadcast::error::TryRecvError::Lagged(_)) = events.try_recv() {}
    let mut announced = fingerprint(&tools());
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
        let now = fingerprint(&tools());
        if now != announced {
            announced = now;
            tracing::debug!(
                watchers = watchers.count(),
                "tool set changed; telling clients"
            );
            watchers.tools_changed().await;
        }
    }
}
