//! The streams a session hands out (`sessions`' doc says whose they are): its worker's,
//! counted as the session's while they are held (a session with one is not parked); what its
//! worker sends on the standalone stream pumped into its outbox; rmcp's streams as the
//! session manager's trait declares them.

use std::pin::Pin;
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures::{Stream, StreamExt};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::streamable_http_server::session::{
    ServerSseMessage, SessionId, SessionManager,
};

use super::{Table, lock};
use crate::outbox::Outbox;

/// A stream of a session's worker, counted as the session's while it is held (a session with
/// a stream is not parked); one dropped before its end could still be resumed by rmcp for a
/// while (`resumable`).
pub(super) struct Counted<S> {
    pub(super) stream: Pin<Box<S>>,
    pub(super) ended: bool,
    pub(super) table: Weak<Mutex<Table>>,
    pub(super) id: SessionId,
    pub(super) resumable: Duration,
}

impl<S: Stream> Stream for Counted<S> {
    type Item = S::Item;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<S::Item>> {
        let polled = self.stream.as_mut().poll_next(cx);
        if let Poll::Ready(None) = polled {
            self.ended = true;
        }
        polled
    }
}

impl<S> Drop for Counted<S> {
    fn drop(&mut self) {
        let Some(table) = self.table.upgrade() else {
            return;
        };
        if let Some(entry) = lock(&table).entries.get_mut(&self.id) {
            let now = Instant::now();
            entry.streams = entry.streams.saturating_sub(1);
            entry.used = now;
            if !self.ended {
                entry.resumable_until = Some(now + self.resumable);
            }
        }
    }
}

/// Moves what a session's worker sends on its standalone stream into the session's outbox,
/// until the worker ends (let go, or the session closed).
pub(super) async fn pump(common: impl Stream<Item = ServerSseMessage>, outbox: Arc<Outbox>) {
    let mut common = std::pin::pin!(common);
    while let Some(event) = common.next().await {
        // rmcp's priming events (no message) carry nothing the outbox's stream lacks.
        if let Some(message) = event.message {
            outbox.put_shared(message);
        }
    }
}

/// rmcp's streams as the trait declares them (`Send + Sync`).
pub(super) async fn stream_of<M: SessionManager>(
    manager: &M,
    id: &SessionId,
    message: ClientJsonRpcMessage,
) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, M::Error> {
    manager.create_stream(id, message).await
}

pub(super) async fn standalone_of<M: SessionManager>(
    manager: &M,
    id: &SessionId,
) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, M::Error> {
    manager.create_standalone_stream(id).await
}

pub(super) async fn resumed_of<M: SessionManager>(
    manager: &M,
    id: &SessionId,
    last_event_id: String,
) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, M::Error> {
    manager.resume(id, last_event_id).await
}
