//! One call's progress passed down: a step the hub reports for an upstream call, sent to the
//! downstream client under the progress token its request carried. Used by the calls a
//! handshake-era client makes and by the rounds of a 2026-07-28 one; knows nothing of either.
//! A call answered inline (`inline`) has its steps sent on its own POST's answer, which
//! rmcp's session worker does not hold: its context carries an [`InlineProgress`].

use rmcp::RoleServer;
use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::service::RequestContext;
use tokio::sync::mpsc;

/// Where the steps of a call answered inline go: the stream of its own POST's answer. A
/// bounded queue, so an upstream flooding progress waits on the client reading it.
#[derive(Clone)]
pub(crate) struct InlineProgress(pub mpsc::Sender<ProgressNotificationParam>);

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
    if let Some(InlineProgress(steps)) = context.extensions.get::<InlineProgress>() {
        if steps.send(param).await.is_err() {
            tracing::debug!("progress not passed downstream: the call's answer has ended");
        }
        return;
    }
    if let Err(error) = context.peer.notify_progress(param).await {
        tracing::debug!(%error, "progress not passed downstream");
    }
}
