//! Progress delivered in the order the server sent it. rmcp hands each notification to a task
//! of its own but a response straight to its waiter, so a progress step sent just before a
//! call's answer could reach the caller after it — or never, once the call had removed its
//! route (seen under load: the gateway passed on two of three steps). This wrapper around
//! the session's transport reads each progress notification as it arrives, before rmcp sees
//! the messages after it, and hands it to its call's route there and then; a token no call
//! holds is left to rmcp. Knows nothing of which transport it wraps.

use rmcp::RoleClient;
use rmcp::model::{ServerJsonRpcMessage, ServerNotification};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;

use super::client::ProgressRoutes;

/// A transport whose progress notifications reach their calls' routes in order.
pub(crate) struct ProgressTap<T> {
    inner: T,
    routes: ProgressRoutes,
}

impl<T> ProgressTap<T> {
    /// Delivers `inner`'s progress to `routes`.
    pub(crate) fn new(inner: T, routes: ProgressRoutes) -> Self {
        Self { inner, routes }
    }
}

impl<T> Transport<RoleClient> for ProgressTap<T>
where
    T: Transport<RoleClient>,
{
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            let message = self.inner.receive().await?;
            if let ServerJsonRpcMessage::Notification(notification) = &message
                && let ServerNotification::ProgressNotification(progress) =
                    &notification.notification
                && self.routes.deliver(&progress.params)
            {
                continue;
            }
            return Some(message);
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}
