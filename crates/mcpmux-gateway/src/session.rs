//! One downstream session's own state: its number (the party its calls are made for: what
//! an upstream server asks during them, and the logs it sends meanwhile, go to this session
//! and no other), the identity it belongs to (what it may use), and, when the session ends
//! (rmcp drops its handler), the release of the resources only it held, of the log level it
//! wanted (`levels`) and of its place among the watchers. Knows nothing of transports: each
//! transport makes one per session (`Gateway::session`).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::identity::Identity;
use crate::levels::Levels;
use crate::outbox::Outbox;
use crate::subscriptions::Subscriptions;
use crate::watchers::Watchers;

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
    /// Who made it, and what it may use.
    pub identity: Identity,
    subscriptions: Arc<Subscriptions>,
    levels: Arc<Levels>,
    /// Where it is told of list changes, and its place there once it finished its handshake.
    watchers: Arc<Watchers>,
    watching: std::sync::Mutex<Option<u64>>,
    /// Its peer once it asked `initialize`: what a request answered inline (`inline`) is
    /// made with.
    peer: std::sync::OnceLock<rmcp::service::Peer<rmcp::RoleServer>>,
    /// The outbox of its `GET` stream (a `/mcp` session's): where it is told of list changes
    /// and logs, past its handler's life when its worker is let go.
    outbox: std::sync::OnceLock<Arc<Outbox>>,
    /// Whether it asked for something beyond its handshake that lives as long as it does (a
    /// log level, a subscription, tools found by `search_tools`): then its worker is never
    /// let go (`sessions` parks only a session that holds nothing a new handler would lack).
    keeps: std::sync::atomic::AtomicBool,
}

impl Session {
    /// A new session of `identity`, whose subscriptions are kept in `subscriptions`, its log
    /// level in `levels`, told of list changes through `watchers`.
    pub fn new(
        subscriptions: Arc<Subscriptions>,
        levels: Arc<Levels>,
        watchers: Arc<Watchers>,
        identity: Identity,
    ) -> Arc<Self> {
        Arc::new(Session {
            id: next_id(),
            identity,
            subscriptions,
            levels,
            watchers,
            watching: std::sync::Mutex::new(None),
            peer: std::sync::OnceLock::new(),
            outbox: std::sync::OnceLock::new(),
            keeps: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// Tells the session of list changes and server logs from now on (its handshake done);
    /// `tools` are those served now, what a session that sees part of them was told of.
    pub fn watch(&self, peer: rmcp::service::Peer<rmcp::RoleServer>, tools: &[mcpmux::Tool]) {
        let id = self.watchers.add_session(
            peer,
            self.id,
            self.outbox.get().cloned(),
            self.view_of(tools),
        );
        let mut watching = mcpmux::cli_support::sync::lock(&self.watching);
        if let Some(before) = watching.replace(id) {
            self.watchers.remove(before);
        }
    }

    /// Tells a `/mcp` session born parked (its handshake answered without a worker:
    /// `handshake`) of list changes through `outbox`, past this handler, which only made its
    /// `initialize` answer: the watchers forget it when the outbox is closed, and a restored
    /// handler's own [`Session::watch`] takes its place.
    pub(crate) fn watch_born(&self, outbox: Arc<Outbox>, tools: &[mcpmux::Tool]) {
        self.watchers
            .add_outbox(self.id, outbox, self.view_of(tools));
    }

    /// What a session that sees part of `tools` was told of: its rule and their digest.
    fn view_of(&self, tools: &[mcpmux::Tool]) -> Option<(Arc<crate::access::Rule>, u64)> {
        let rule = &self.identity.rule;
        (!rule.is_everything()).then(|| {
            let seen = crate::watchers::fingerprint(&crate::watchers::visible(rule, tools));
            (rule.clone(), seen)
        })
    }
}

impl Session {
    /// Notes that it now holds something beyond its handshake (a log level, a subscription,
    /// a found tool): its worker stays.
    pub fn keep(&self) {
        self.keeps.store(true, Ordering::Relaxed);
    }

    /// Whether it holds something beyond its handshake.
    pub fn keeps(&self) -> bool {
        self.keeps.load(Ordering::Relaxed)
    }

    /// Keeps the outbox of its `GET` stream (`sessions` hands it over before the session
    /// hears `notifications/initialized`).
    pub(crate) fn attach(&self, outbox: &Arc<Outbox>) {
        let _ = self.outbox.set(outbox.clone());
    }

    /// Keeps its peer, known once it asked `initialize`.
    pub fn keep_peer(&self, peer: rmcp::service::Peer<rmcp::RoleServer>) {
        let _ = self.peer.set(peer);
    }

    /// Its peer, when a plain request of it may be answered without rmcp's serve loop: its
    /// handshake begun (the session manager knows when it is done), in the handshake era, and the client declared nothing the gateway
    /// could ask of it mid-call (roots, sampling, elicitation), so no answer of such a
    /// request needs a stream beside its own.
    pub fn inline_peer(&self) -> Option<rmcp::service::Peer<rmcp::RoleServer>> {
        let peer = self.peer.get()?;
        let info = peer.peer_info()?;
        let handshake_era =
            info.protocol_version.as_str() < rmcp::model::ProtocolVersion::V_2026_07_28.as_str();
        let caps = &info.capabilities;
        let asks_nothing =
            caps.roots.is_none() && caps.sampling.is_none() && caps.elicitation.is_none();
        (handshake_era && asks_nothing).then(|| peer.clone())
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.subscriptions.release_later(self.id);
        self.levels.leave_later(self.id);
        // Its peer (and the queues it holds) freed now, not when the next session comes.
        let watching = self
            .watching
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        // A session told through its outbox stays a watcher while the outbox is open (it may
        // be parked): the watchers forget it when it is closed.
        if let Some(id) = watching
            && self.outbox.get().is_none()
        {
            self.watchers.remove(id);
        }
    }
}
