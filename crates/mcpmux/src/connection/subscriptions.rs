//! Resource subscriptions that outlive sessions. A handshake-era server is sent
//! `resources/subscribe` and notifies on its session; a 2026-07-28 server has no session, so
//! each subscribed resource gets a `subscriptions/listen` request that stays open, and a task
//! forwards what arrives on it. Either way the server forgets a subscription when the session
//! ends, so each server's subscribed URIs are kept here and subscribed again on every new
//! session (after a crash, a dropped connection, a re-login), followed by an
//! [`ResourceEvent::Updated`] because updates during the gap were missed. A subscription the
//! new session refuses, or a listen the server ends, is reported as
//! [`ResourceEvent::SubscriptionLost`].

use std::collections::{BTreeSet, HashMap};
use std::sync::{Mutex, PoisonError};

use rmcp::model::{
    ServerNotification, SubscribeRequestParams, SubscriptionFilter, UnsubscribeRequestParams,
};
use rmcp::service::{Peer, RoleClient, Subscription, SubscriptionEnd};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use std::sync::{Arc, Weak};

use super::Connection;
use super::era::era_of;
use crate::error::{Error, Result};
use crate::host::{Host, ResourceEvent};
use crate::state::{Era, ServerState};
use crate::sync::lock;

/// What a request on one live session needs: its peer, the harness's host, and the token
/// cancelled when the session ends.
type Session = (Peer<RoleClient>, Host, CancellationToken);

impl Connection {
    /// Asks `server` for `notifications/resources/updated` about `uri`; they arrive as
    /// [`ResourceEvent::Updated`] on the hub's [`Host`].
    ///
    /// A handshake-era server is sent `resources/subscribe`. A 2026-07-28 server is sent a
    /// `subscriptions/listen` naming `uri`, which stays open and carries the updates until
    /// [`Connection::unsubscribe`]; subscribing to the same URI again replaces it. It is an
    /// error if the server does not accept the subscription.
    ///
    /// The subscription lasts until it is unsubscribed: after a reconnect it is made again on
    /// the new session, and an `Updated` for `uri` follows (what changed meanwhile was not
    /// notified). If the new session refuses it, [`ResourceEvent::SubscriptionLost`] says so.
    pub(crate) async fn subscribe(self: &Arc<Self>, uri: &str) -> Result<()> {
        let session = self
            .live_part("resources/subscribe", Connection::session)
            .await?;
        let closed = session.2.clone();
        subscribe_on(self, uri, session).await?;
        self.subscriptions().keep(uri, || {
            tokio::spawn(keep_subscribed(
                Arc::downgrade(self),
                self.spec.name.clone(),
                self.state_watch(),
                closed,
                self.session_renewals(),
            ))
        });
        Ok(())
    }

    /// Stops the updates of `uri` from `server`: `resources/unsubscribe` to a handshake-era
    /// server; on a 2026-07-28 server, the listen of `uri` is cancelled (unsubscribing from a
    /// URI that has none does nothing). Either way it is no longer made again on reconnect.
    pub(crate) async fn unsubscribe(&self, uri: &str) -> Result<()> {
        let server = self.spec.name.as_str();
        let subscriptions = self.subscriptions();
        subscriptions.forget(uri);
        // A listen ends by being cancelled, whatever state the server is in now.
        if let Some(task) = subscriptions.remove_listen(uri) {
            stop(task).await;
            tracing::debug!(server, uri, "stopped listening for resource updates");
            return Ok(());
        }
        let peer = self
            .live_part("resources/unsubscribe", Connection::peer)
            .await?;
        if era_of(&peer) == Era::Stateless {
            return Ok(());
        }
        let params = UnsubscribeRequestParams::new(uri);
        #[allow(deprecated)] // resources/unsubscribe is the handshake era's way.
        self.send("resources/unsubscribe", peer.unsubscribe(params))
            .await
    }
}

/// Subscribes to `uri` on one session, in that session's era.
async fn subscribe_on(connection: &Connection, uri: &str, session: Session) -> Result<()> {
    if era_of(&session.0) == Era::Stateless {
        return listen(connection, uri, session).await;
    }
    let params = SubscribeRequestParams::new(uri);
    #[allow(deprecated)] // resources/subscribe is the handshake era's way.
    connection
        .send("resources/subscribe", session.0.subscribe(params))
        .await
}

/// One server's subscriptions: the URIs to subscribe again on each new session, the task that
/// does it, and the `subscriptions/listen` tasks of a 2026-07-28 session (one per URI, each
/// forwarding its updates to the host; dropping one's [`Subscription`] cancels the request).
/// Every task is aborted when the connection is dropped.
#[derive(Default)]
pub(crate) struct Subscriptions {
    uris: Mutex<BTreeSet<String>>,
    keeper: Mutex<Option<JoinHandle<()>>>,
    listens: Mutex<HashMap<String, JoinHandle<()>>>,
}

impl Subscriptions {
    /// Keeps `uri` subscribed, starting the task that renews subscriptions if none runs.
    fn keep(&self, uri: &str, start_keeper: impl FnOnce() -> JoinHandle<()>) {
        lock(&self.uris).insert(uri.to_string());
        let mut keeper = lock(&self.keeper);
        if keeper.as_ref().is_none_or(JoinHandle::is_finished) {
            *keeper = Some(start_keeper());
        }
    }

    fn forget(&self, uri: &str) {
        lock(&self.uris).remove(uri);
    }

    fn uris(&self) -> Vec<String> {
        lock(&self.uris).iter().cloned().collect()
    }

    fn kept(&self, uri: &str) -> bool {
        lock(&self.uris).contains(uri)
    }

    /// Keeps `task` as the listen of `uri` and gives back the one it replaces; tasks whose
    /// session has ended are let go on the way.
    fn insert_listen(&self, uri: &str, task: JoinHandle<()>) -> Option<JoinHandle<()>> {
        let mut listens = lock(&self.listens);
        listens.retain(|_, task| !task.is_finished());
        listens.insert(uri.to_string(), task)
    }

    fn remove_listen(&self, uri: &str) -> Option<JoinHandle<()>> {
        lock(&self.listens).remove(uri)
    }
}

impl Drop for Subscriptions {
    fn drop(&mut self) {
        let keeper = self
            .keeper
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(task) = keeper {
            task.abort();
        }
        let listens = self
            .listens
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner);
        for task in listens.values() {
            task.abort();
        }
    }
}

/// Subscribes the connection's kept URIs again each time a new session replaces the one
/// `closed` belongs to, or the server forgot the session and the transport started a new one
/// beneath the same connection (`renewed`). Holds the connection only while it subscribes, so
/// a dropped hub is not kept alive; ends when the server's supervisor does (the state channel
/// closes) or the connection is gone.
async fn keep_subscribed(
    connection: Weak<Connection>,
    server: String,
    mut state: watch::Receiver<ServerState>,
    mut closed: CancellationToken,
    mut renewed: watch::Receiver<u64>,
) {
    loop {
        tokio::select! {
            () = closed.cancelled() => {}
            changed = renewed.changed() => {
                if changed.is_err() {
                    return;
                }
            }
        }
        // The next session: checked before each wait, so one set up meanwhile is not missed.
        let (connection, session) = loop {
            let Some(connection) = connection.upgrade() else {
                return;
            };
            let session = connection
                .session()
                .filter(|(_, _, closed)| !closed.is_cancelled());
            if let Some(session) = session {
                break (connection, session);
            }
            drop(connection);
            if state.changed().await.is_err() {
                return;
            }
        };
        closed = session.2.clone();
        let subscriptions = connection.subscriptions();
        for uri in subscriptions.uris() {
            let host = session.1.clone();
            match subscribe_on(&connection, &uri, session.clone()).await {
                Ok(()) if subscriptions.kept(&uri) => {
                    tracing::info!(server = %server, uri = %uri, "subscribed again on the new session");
                    host.publish(ResourceEvent::Updated {
                        server: server.clone(),
                        uri,
                    });
                }
                // Unsubscribed while this was sent: the new subscription goes too.
                Ok(()) => {
                    if let Some(task) = subscriptions.remove_listen(&uri) {
                        stop(task).await;
                    }
                }
                Err(error) => {
                    subscriptions.forget(&uri);
                    tracing::warn!(server = %server, uri = %uri, "the new session refused the subscription: {error}");
                    host.publish(ResourceEvent::SubscriptionLost {
                        server: server.clone(),
                        uri,
                        reason: format!("after a reconnect the server refused it: {error}"),
                    });
                }
            }
        }
    }
}

/// Aborts a listen task and waits until it is gone: its subscription is dropped by then, so
/// the cancellation of the listen is queued before anything sent after this returns.
async fn stop(task: JoinHandle<()>) {
    task.abort();
    let _ = task.await;
}

/// Opens a `subscriptions/listen` for `uri` on a 2026-07-28 session (the acknowledgment awaited
/// within the call deadline) and keeps a task forwarding its updates, replacing any listen of
/// `uri` there was.
async fn listen(connection: &Connection, uri: &str, (peer, host, closed): Session) -> Result<()> {
    let server = connection.spec.name.as_str();
    let filter = SubscriptionFilter::builder()
        .resource_subscription(uri)
        .build();
    let subscription = connection
        .send("subscriptions/listen", peer.listen(filter))
        .await?;
    let accepted = subscription
        .acknowledged()
        .resource_subscriptions
        .as_ref()
        .is_some_and(|uris| uris.iter().any(|u| u == uri));
    if !accepted {
        // Dropping the subscription cancels the listen.
        return Err(Error::Unavailable {
            server: server.to_string(),
            state: connection.state(),
            reason: format!(
                "it did not accept a subscription to `{uri}` (it offers none, or none for that resource)"
            ),
        });
    }
    tracing::debug!(server, uri, "listening for resource updates");
    let task = tokio::spawn(forward_updates(
        subscription,
        server.to_string(),
        uri.to_string(),
        host,
        closed,
    ));
    if let Some(replaced) = connection.subscriptions().insert_listen(uri, task) {
        stop(replaced).await;
    }
    Ok(())
}

/// Publishes each update the listen of `uri` carries, until it ends or its session does. A
/// listen that ends while its session lives (the server ended it, or updates came faster than
/// they were read) is reported: no more updates come for `uri` until it is subscribed again
/// or the server reconnects.
async fn forward_updates(
    mut subscription: Subscription,
    server: String,
    uri: String,
    host: Host,
    session_closed: CancellationToken,
) {
    let reason = loop {
        let next = tokio::select! {
            () = session_closed.cancelled() => return,
            next = subscription.next() => next,
        };
        match next {
            Ok(Some(ServerNotification::ResourceUpdatedNotification(update))) => {
                tracing::debug!(server = %server, uri = %update.params.uri, "resource updated");
                host.publish(ResourceEvent::Updated {
                    server: server.clone(),
                    uri: update.params.uri,
                });
            }
            // The filter names one resource: rmcp lets nothing else through.
            Ok(Some(_)) => {}
            Ok(None) => match subscription.end() {
                Some(SubscriptionEnd::Lagged { capacity }) => {
                    break format!(
                        "updates came faster than they were read (more than {capacity} waiting)"
                    );
                }
                end => break format!("the server ended the listen ({end:?})"),
            },
            Err(e) => break format!("the listen failed: {e}"),
        }
    };
    // The session ending takes its listens with it; that is the reconnect's to mend.
    if session_closed.is_cancelled() {
        return;
    }
    tracing::warn!(server = %server, uri = %uri, "no more resource updates: {reason}");
    host.publish(ResourceEvent::SubscriptionLost {
        server,
        uri,
        reason,
    });
}
