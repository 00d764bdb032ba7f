//! What the upstream servers announce, passed on downstream as it comes: a resource update to
//! the clients subscribed to that resource (`subscriptions`), a resource or prompt list change
//! to every watcher (`watchers`), a log message to the sessions whose level admits it.
//! Reads the library's host (the one the hub was started with); knows nothing of transports.

use std::sync::Arc;

use mcpmux::host::{Host, ResourceEvent};
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;

use crate::resources::Hidden;
use crate::subscriptions::Subscriptions;
use crate::watchers::{List, Watchers};

/// Passes `host`'s notices on until `stop`.
pub async fn forward(
    host: Host,
    subscriptions: Arc<Subscriptions>,
    watchers: Arc<Watchers>,
    hidden: Hidden,
    stop: CancellationToken,
) {
    let mut events = host.resource_events();
    let mut logs = host.logs();
    let shown = |server: &str| hidden.shown(server);
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
                Ok(log) if shown(&log.server) => watchers.log(&log).await,
                Ok(_) => {}
                Err(RecvError::Lagged(missed)) => {
                    tracing::debug!(missed, "server logs came faster than they were passed on; dropped");
                }
                Err(RecvError::Closed) => return,
            },
        }
    }
}
