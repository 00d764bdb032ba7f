//! Keeps a streamable-HTTP session whole when the server forgets it (a restart, a deploy, a
//! replica gone). rmcp's transport replaces the session when a request meets the dead one
//! (see `transport::http_session`); this task sends such a request when only the standalone
//! event stream noticed, so server notifications resume without waiting for the next call, and
//! after each replacement has the tools listed again and the subscriptions made again, as
//! after any reconnect. Knows the session's peer; nothing of the hub.

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{ClientRequest, PingRequest};
use rmcp::service::{Peer, RoleClient};
use tokio::sync::{Notify, watch};

use crate::transport::http_session::SessionWatch;

/// How long the request that renews a session may take: the wait for a restarting server
/// (see `http_session::while_unreachable`), an `initialize` and a `ping`.
const RENEW_TIMEOUT: Duration = Duration::from_secs(45);

/// Runs until aborted with the session it watches.
pub(super) async fn run(
    server: String,
    peer: Peer<RoleClient>,
    watch: Arc<SessionWatch>,
    tools_changed: Arc<Notify>,
    renewed: watch::Sender<u64>,
) {
    let mut renewals = watch.renewals();
    loop {
        tokio::select! {
            () = watch.session_lost() => {
                // The ping meets the dead session; the transport starts a new one and sends
                // the ping again on it.
                let ping = peer.send_request(ClientRequest::PingRequest(PingRequest::default()));
                match tokio::time::timeout(RENEW_TIMEOUT, ping).await {
                    Ok(Ok(_)) => tracing::debug!(server = %server, "the session answers again"),
                    Ok(Err(e)) => tracing::debug!(server = %server, "renewing the session failed: {e}"),
                    Err(_) => tracing::debug!(server = %server, "renewing the session timed out"),
                }
            }
            changed = renewals.changed() => {
                if changed.is_err() {
                    return;
                }
                tracing::info!(server = %server, "the server lost the session; a new one took its place");
                // A restarted server may offer other tools; what it was subscribed to is gone.
                tools_changed.notify_one();
                renewed.send_modify(|n| *n += 1);
            }
        }
    }
}
