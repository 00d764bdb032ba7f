//! One call's progress passed down: a step the hub reports for an upstream call, sent to the
//! downstream client under the progress token its request carried. Used by the calls a
//! handshake-era client makes and by the rounds of a 2026-07-28 one; knows nothing of either.

use rmcp::RoleServer;
use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::service::RequestContext;

/// Sends one progress step to the downstream client under its progress token.
pub(crate) async fn forward_progress(
    context: &RequestContext<RoleServer>,
    token: Option<&ProgressToken>,
    step: mcpmux::Progress,
) {
    let Some(token) = token else {
        return;
    };
    let mut param = ProgressNotificationParam::new(token.clone(), step.progress);
    param.total = step.total;
    param.message = step.message;
    if let Err(error) = context.peer.notify_progress(param).await {
        tracing::debug!(%error, "progress not passed downstream");
    }
}
