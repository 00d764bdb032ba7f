//! Our side of each MCP session: the client identity we announce, and the notifications we
//! route (progress to the call that asked for it, list changes to the supervisor, logs to
//! tracing).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rmcp::ClientHandler;
#[allow(deprecated)]
use rmcp::model::{
    ClientCapabilities, ClientConfig, Implementation, LoggingLevel,
    LoggingMessageNotificationParam, ProgressNotificationParam, ProgressToken, ProtocolVersion,
};
use rmcp::service::{NotificationContext, RoleClient};
use tokio::sync::{Notify, mpsc};

use crate::hub::Progress;

/// Where the progress of one call goes: the caller's channel, if it asked for progress, and
/// the call's deadline, which every notification extends.
pub(crate) struct Route {
    pub tx: Option<mpsc::UnboundedSender<Progress>>,
    pub bump: Arc<Notify>,
}

/// Routes progress notifications to the call that owns the token.
#[derive(Clone, Default)]
pub(crate) struct ProgressRoutes(Arc<Mutex<HashMap<ProgressToken, Route>>>);

impl ProgressRoutes {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<ProgressToken, Route>> {
        match self.0.lock() {
            Ok(map) => map,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    pub(crate) fn add(&self, token: ProgressToken, route: Route) {
        self.lock().insert(token, route);
    }

    pub(crate) fn remove(&self, token: &ProgressToken) {
        self.lock().remove(token);
    }

    fn deliver(&self, params: &ProgressNotificationParam) -> bool {
        let map = self.lock();
        match map.get(&params.progress_token) {
            Some(route) => {
                route.bump.notify_one();
                if let Some(tx) = &route.tx {
                    let _ = tx.send(Progress {
                        progress: params.progress,
                        total: params.total,
                        message: params.message.clone(),
                    });
                }
                true
            }
            None => false,
        }
    }
}

/// The rmcp client handler of one session.
pub(crate) struct HubClient {
    pub(crate) server: String,
    pub(crate) progress: ProgressRoutes,
    /// Signalled when the server says its tool list changed.
    pub(crate) tools_changed: Arc<Notify>,
}

/// The client identity announced in every session (rmcp's default says "rmcp").
pub(crate) fn client_info() -> ClientConfig {
    let mut info = ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("mcplex", env!("CARGO_PKG_VERSION")),
    );
    // The handshake offers the newest handshake-era version; 2026-07-28 has no `initialize`.
    info.protocol_version = ProtocolVersion::LATEST_WITH_INITIALIZE;
    info
}

impl ClientHandler for HubClient {
    fn get_info(&self) -> ClientConfig {
        client_info()
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        if !self.progress.deliver(&params) {
            tracing::trace!(server = %self.server, token = ?params.progress_token, "progress for a call that has ended");
        }
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        tracing::debug!(server = %self.server, "server says its tool list changed");
        self.tools_changed.notify_one();
    }

    // Logging is deprecated by SEP-2577, but the Node reference servers still send it and a
    // server's own log is worth keeping in ours.
    #[allow(deprecated)]
    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let logger = params.logger.as_deref().unwrap_or("");
        match params.level {
            LoggingLevel::Emergency
            | LoggingLevel::Alert
            | LoggingLevel::Critical
            | LoggingLevel::Error => {
                tracing::warn!(server = %self.server, logger, data = %params.data, "server log")
            }
            _ => tracing::debug!(server = %self.server, logger, data = %params.data, "server log"),
        }
    }
}
