//! One downstream session's own state: its number (the party its calls are made for: what
//! an upstream server asks during them goes to this session and no other), the log level it
//! asked for, and, when the session ends (rmcp drops its handler), the release of the
//! resources only it held. Knows nothing of transports: each transport makes one per session
//! (`Gateway::session`).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::subscriptions::Subscriptions;
use crate::watchers::Level;

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
    subscriptions: Arc<Subscriptions>,
}

impl Session {
    /// A new session whose subscriptions are kept in `subscriptions`.
    pub fn new(subscriptions: Arc<Subscriptions>) -> Arc<Self> {
        Arc::new(Session {
            id: next_id(),
            level: Level::default(),
            subscriptions,
        })
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.subscriptions.release_later(self.id);
    }
}
