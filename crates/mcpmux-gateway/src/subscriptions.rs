//! Resource subscriptions of the downstream clients, over the hub's one subscription per
//! resource: who holds which `(server, URI)` (a handshake-era session that sent
//! `resources/subscribe`, or a 2026-07-28 `subscriptions/listen` stream that named it), the
//! upstream subscription made for the first holder and released with the last, and
//! `notifications/resources/updated` delivered only to the holders of that resource. A
//! session that ends releases what it held. Knows nothing of transports.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};

use rmcp::{
    RoleServer,
    model::{ErrorData, ResourceUpdatedNotificationParam},
    service::{Peer, SubscriptionSink},
};

use crate::failures::failure;
use crate::view::View;

/// Where a holder's updates go.
#[derive(Clone)]
pub enum Target {
    /// A handshake-era session.
    Session(Peer<RoleServer>),
    /// A 2026-07-28 listen stream.
    Listen(SubscriptionSink),
}

/// One resource as the hub knows it: its server and URI.
type Key = (String, String);

#[derive(Default)]
struct Table {
    holders: HashMap<Key, BTreeSet<u64>>,
    targets: HashMap<u64, Target>,
}

/// Who holds which resource.
pub struct Subscriptions {
    hub: mcpmux::Hub,
    table: Mutex<Table>,
    /// Subscribing and unsubscribing upstream, one at a time: the first holder's subscribe and
    /// the last holder's unsubscribe of one resource reach its server in the order decided.
    /// (A lock held across the upstream request, on this path only: never a call's.)
    upstream: tokio::sync::Mutex<()>,
}

impl Subscriptions {
    /// Subscriptions made on `hub`.
    pub fn new(hub: mcpmux::Hub) -> Arc<Self> {
        Arc::new(Subscriptions {
            hub,
            table: Mutex::default(),
            upstream: tokio::sync::Mutex::new(()),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Table> {
        mcpmux::cli_support::sync::lock(&self.table)
    }

    /// `holder` (whose updates go to `target`) subscribes to `uri`, on the server a read of
    /// it goes to, if `view` shows it; the server is asked only if nobody held it yet.
    pub async fn subscribe(
        &self,
        (holder, view): (u64, &View),
        target: Target,
        uri: &str,
    ) -> Result<(), ErrorData> {
        let server = view.resource_server(&self.hub, uri).await?;
        let key = (server, uri.to_string());
        let _order = self.upstream.lock().await;
        let first = self.lock().holders.get(&key).is_none_or(BTreeSet::is_empty);
        if first {
            self.hub
                .subscribe_resource(&key.0, uri)
                .await
                .map_err(|e| failure(&e))?;
            tracing::debug!(server = %key.0, uri, "subscribed upstream for the first downstream holder");
        }
        let mut table = self.lock();
        table.targets.insert(holder, target);
        table.holders.entry(key).or_default().insert(holder);
        Ok(())
    }

    /// `holder` no longer wants updates of `uri`; the server is told when nobody holds it.
    /// Not holding it is no error.
    pub async fn unsubscribe(&self, holder: u64, uri: &str) -> Result<(), ErrorData> {
        let _order = self.upstream.lock().await;
        let emptied = {
            let mut table = self.lock();
            let mut emptied = Vec::new();
            for (key, holders) in table.holders.iter_mut() {
                if key.1 == uri && holders.remove(&holder) && holders.is_empty() {
                    emptied.push(key.clone());
                }
            }
            for key in &emptied {
                table.holders.remove(key);
            }
            emptied
        };
        for (server, uri) in emptied {
            self.hub
                .unsubscribe_resource(&server, &uri)
                .await
                .map_err(|e| failure(&e))?;
            tracing::debug!(%server, %uri, "unsubscribed upstream: no downstream holder left");
        }
        Ok(())
    }

    /// `holder` is gone (its session ended, its listen closed): what it alone held is
    /// unsubscribed upstream.
    pub async fn release(&self, holder: u64) {
        let _order = self.upstream.lock().await;
        let emptied = {
            let mut table = self.lock();
            table.targets.remove(&holder);
            let mut emptied = Vec::new();
            for (key, holders) in table.holders.iter_mut() {
                if holders.remove(&holder) && holders.is_empty() {
                    emptied.push(key.clone());
                }
            }
            for key in &emptied {
                table.holders.remove(key);
            }
            emptied
        };
        for (server, uri) in emptied {
            match self.hub.unsubscribe_resource(&server, &uri).await {
                Ok(()) => {
                    tracing::debug!(%server, %uri, "released: the last holder is gone");
                }
                Err(error) => {
                    tracing::debug!(%server, %uri, %error, "releasing an upstream subscription failed");
                }
            }
        }
    }

    /// [`Subscriptions::release`], from code that cannot wait (a session's drop).
    pub fn release_later(self: &Arc<Self>, holder: u64) {
        if !self.lock().targets.contains_key(&holder) {
            return;
        }
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let subscriptions = self.clone();
            runtime.spawn(async move { subscriptions.release(holder).await });
        }
    }

    /// The upstream subscription of `uri` on `server` is gone (the server refused it after a
    /// reconnect): the next holder subscribes afresh.
    pub fn lost(&self, server: &str, uri: &str) {
        self.lock()
            .holders
            .remove(&(server.to_string(), uri.to_string()));
    }

    /// Tells the holders of `uri` on `server` that it changed; a holder that cannot be
    /// reached is released.
    pub async fn updated(self: &Arc<Self>, server: &str, uri: &str) {
        let targets: Vec<(u64, Target)> = {
            let table = self.lock();
            let Some(holders) = table.holders.get(&(server.to_string(), uri.to_string())) else {
                return;
            };
            holders
                .iter()
                .filter_map(|h| table.targets.get(h).map(|t| (*h, t.clone())))
                .collect()
        };
        for (holder, target) in targets {
            let sent = match &target {
                Target::Session(peer) if peer.is_transport_closed() => {
                    Err("session closed".to_string())
                }
                Target::Session(peer) => peer
                    .notify_resource_updated(ResourceUpdatedNotificationParam::new(uri))
                    .await
                    .map_err(|e| e.to_string()),
                Target::Listen(sink) => sink
                    .notify_resource_updated(uri)
                    .await
                    .map_err(|e| e.to_string()),
            };
            if let Err(error) = sent {
                tracing::debug!(%error, holder, "resources/updated not delivered; releasing the holder");
                let subscriptions = self.clone();
                tokio::spawn(async move { subscriptions.release(holder).await });
            }
        }
    }

    /// How many upstream subscriptions are held for downstream clients.
    pub fn count(&self) -> usize {
        self.lock().holders.len()
    }
}
