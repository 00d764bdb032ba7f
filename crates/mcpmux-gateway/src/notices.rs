//! What the upstream servers announce, passed on downstream as it comes: a resource update to
//! the clients subscribed to that resource (`subscriptions`), a resource or prompt list change
//! to every watcher (`watchers`), a log message to the one session whose call the server was
//! serving when it sent it (the library says which: `ServerLog::party`), if that session's
//! level admits it (`levels`). A log no call explains goes to no client (the library keeps it
//! in the gateway's own log) — unless the gateway serves one client alone (stdio): it could
//! be nobody else's. Reads the library's host (the one the hub was started with); knows
//! nothing of transports.

use std::sync::Arc;

use mcpmux::host::{Host, ResourceEvent};
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;

use crate::levels::Levels;
use crate::subscriptions::Subscriptions;
use crate::view::View;
use crate::watchers::{List, Watchers};

/// Where the notices go: who holds which resource, who watches the lists, what level each
/// session wants, and what the sessions may see.
pub struct To {
    pub subscriptions: Arc<Subscriptions>,
    pub watchers: Arc<Watchers>,
    pub levels: Arc<Levels>,
    pub view: View,
}

/// Passes `host`'s notices on until `stop`.
pub async fn forward(host: Host, to: To, stop: CancellationToken) {
    let To {
        subscriptions,
        watchers,
        levels,
        view,
    } = to;
    let mut events = host.resource_events();
    let mut logs = host.logs();
    let shown = |server: &str| view.server_shown(server);
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            event = events.recv() => match event {
                Ok(ResourceEvent::Updated { server, uri }) => {
                    subscriptions.updated(&server, &uri).await;
                }
                Ok(ResourceEvent::SubscriptionLost { server, uri, reason }) => {
                    tracing::warn!(%server, %uri, "a subscription of downstream clients was lost upstream: {reason}");
                    subscriptions.lost(&server, &uri);
                }
                Ok(ResourceEvent::ResourcesChanged { server }) if shown(&server) => {
                    watchers.changed(List::Resources).await;
                }
                Ok(ResourceEvent::PromptsChanged { server }) if shown(&server) => {
                    watchers.changed(List::Prompts).await;
                }
                Ok(_) => {}
                Err(RecvError::Lagged(missed)) => {
                    // Missed updates are missed changes: say the lists changed, to be safe.
                    tracing::warn!(missed, "resource notices came faster than they were passed on");
                    watchers.changed(List::Resources).await;
                }
                Err(RecvError::Closed) => return,
            },
            log = logs.recv() => match log {
                Ok(log) if shown(&log.server) => {
                    match log.party.or_else(|| watchers.sole_session()) {
                        Some(session) if levels.admits(session, log.level) => {
                            watchers.log_to(session, &log).await;
                        }
                        Some(_) => {}
                        None => {
                            tracing::trace!(server = %log.server, "a server log no call explains is passed to no client");
                        }
                    }
                }
                Ok(_) => {}
                Err(RecvError::Lagged(missed)) => {
                    tracing::debug!(missed, "server logs came faster than they were passed on; dropped");
                }
                Err(RecvError::Closed) => return,
            },
        }
    }
}
