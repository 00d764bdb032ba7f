//! One downstream session's own state: its number (the party its calls are made for: what
//! an upstream server asks during them goes to this session and no other), the identity it
//! belongs to (what it may use), the log level it
//! asked for, and, when the session ends (rmcp drops its handler), the release of the
//! resources only it held. Knows nothing of transports: each transport makes one per session
//! (`Gateway::session`).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::identity::Identity;
use crate::subscriptions::Subscriptions;
use crate::watchers::{Level, Watchers};

/// Numbers sessions and listen streams: every holder of a subscription has its own.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// A fresh number for a session or a listen stream.
pub fn next_id() -> u64 {
    NEXT_ID.fetch_add(1, Ordering::Relaxed)
}

/// One downstream session.
pub struct Session {
    /// The gateway's number for it.
    pub id: u64,
    /// What `logging/setLevel` set in it.
    pub level: Level,
    /// Who made it, and what it may use.
    pub identity: Identity,
    subscriptions: Arc<Subscriptions>,
    /// Where it is told of list changes, and its place there once it finished its handshake.
    watchers: Arc<Watchers>,
    watching: std::sync::Mutex<Option<u64>>,
}

impl Session {
    /// A new session of `identity`, whose subscriptions are kept in `subscriptions`, told of
    /// list changes through `watchers`.
    pub fn new(
        subscriptions: Arc<Subscriptions>,
        watchers: Arc<Watchers>,
        identity: Identity,
    ) -> Arc<Self> {
        Arc::new(Session {
            id: next_id(),
            level: Level::default(),
            identity,
            subscriptions,
            watchers,
            watching: std::sync::Mutex::new(None),
        })
    }
}

impl Session {
    /// Tells the session of list changes and server logs from now on (its handshake done);
    /// `tools` are those served now, what a session that sees part of them was told of.
    pub fn watch(&self, peer: rmcp::service::Peer<rmcp::RoleServer>, tools: &[mcpmux::Tool]) {
        let rule = &self.identity.rule;
        let view = (!rule.is_everything()).then(|| {
            let seen = crate::watchers::fingerprint(&crate::watchers::visible(rule, tools));
            (rule.clone(), seen)
        });
        let id = self.watchers.add_session(peer, self.level.clone(), view);
        let mut watching = self
            .watching
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(before) = watching.replace(id) {
            self.watchers.remove(before);
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.subscriptions.release_later(self.id);
        // Its peer (and the queues it holds) freed now, not when the next session comes.
        let watching = self
            .watching
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(id) = watching {
            self.watchers.remove(id);
        }
    }
}
