//! One downstream session's own state: its number (the party its calls are made for: what
//! an upstream server asks during them, and the logs it sends meanwhile, go to this session
//! and no other), and, when the session ends (rmcp drops its handler), the release of the
//! resources only it held and of the log level it wanted (`levels`). Knows nothing of
//! transports: each transport makes one per session (`Gateway::session`).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::levels::Levels;
use crate::subscriptions::Subscriptions;

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
    subscriptions: Arc<Subscriptions>,
    levels: Arc<Levels>,
}

impl Session {
    /// A new session whose subscriptions are kept in `subscriptions`, its log level in
    /// `levels`.
    pub fn new(subscriptions: Arc<Subscriptions>, levels: Arc<Levels>) -> Arc<Self> {
        Arc::new(Session {
            id: next_id(),
            subscriptions,
            levels,
        })
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.subscriptions.release_later(self.id);
        self.levels.leave_later(self.id);
    }
}
