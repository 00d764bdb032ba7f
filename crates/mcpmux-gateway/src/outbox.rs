//! A `/mcp` session's standalone stream (`GET /mcp`), owned by the gateway rather than by
//! rmcp's session worker, so that it outlives a worker let go while the session is idle
//! (`sessions` parks it): what rmcp's worker would send on that stream (what it routes to its
//! "common" channel) is pumped in here while the worker lives, and the gateway's own notices
//! (list changes, logs: `watchers`) are put here directly, worker or not. Each message gets
//! the next number of the session (its SSE event id, from 1: rmcp's priming event is `0`), and
//! the last [`KEPT`] are kept: a `GET` opened later is handed those no stream had yet, and one
//! that comes back with `Last-Event-ID` those after its last. One stream holds it at a time: a
//! second plain `GET` is refused while the first is open, a resuming one takes it over (its
//! predecessor's connection is most likely dead). A reader that falls more than [`KEPT`]
//! behind skips what was dropped. Knows nothing of HTTP.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

use futures::Stream;
use rmcp::model::ServerJsonRpcMessage;
use rmcp::transport::streamable_http_server::session::ServerSseMessage;
use tokio::sync::Notify;

/// Messages kept for a stream opened or resumed later (rmcp's worker keeps as many).
pub(crate) const KEPT: usize = 16;

/// One session's standalone stream: its messages and which stream holds it.
#[derive(Default)]
pub struct Outbox {
    state: Mutex<State>,
    /// Woken when a message is put or the holder changes.
    ready: Notify,
}

#[derive(Default)]
struct State {
    /// The last [`KEPT`] messages, numbered.
    kept: VecDeque<(u64, Arc<ServerJsonRpcMessage>)>,
    /// The number of the last message put (0: none yet).
    last: u64,
    /// The number of the last message a stream was handed.
    handed: u64,
    /// The stream that holds it, by its number.
    holder: Option<u64>,
    /// Streams opened so far (their numbers).
    streams: u64,
    /// The session ended: every stream ends, nothing more is put.
    closed: bool,
}

/// A plain `GET` while another stream holds the outbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Held;

impl Outbox {
    /// An empty outbox.
    pub(crate) fn new() -> Arc<Self> {
        Arc::default()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        mcpmux::cli_support::sync::lock(&self.state)
    }

    /// Puts `message` on the stream (kept for one opened later); nothing once closed.
    pub fn put(&self, message: ServerJsonRpcMessage) {
        self.put_shared(Arc::new(message));
    }

    /// [`Outbox::put`], the message already shared.
    pub(crate) fn put_shared(&self, message: Arc<ServerJsonRpcMessage>) {
        {
            let mut state = self.lock();
            if state.closed {
                return;
            }
            state.last += 1;
            let number = state.last;
            if state.kept.len() >= KEPT {
                state.kept.pop_front();
            }
            state.kept.push_back((number, message));
        }
        self.ready.notify_waiters();
    }

    /// Ends the stream for good (the session ended).
    pub(crate) fn close(&self) {
        {
            let mut state = self.lock();
            state.closed = true;
            state.kept = VecDeque::new();
        }
        self.ready.notify_waiters();
    }

    /// Whether the session ended.
    pub fn is_closed(&self) -> bool {
        self.lock().closed
    }

    /// Whether a stream holds it now.
    #[cfg(test)]
    pub(crate) fn held(&self) -> bool {
        self.lock().holder.is_some()
    }

    /// A stream of its messages: after message `after` (a `Last-Event-ID`: taken over from
    /// whichever stream held it), or those no stream had yet (refused while one holds it).
    pub(crate) fn listen(
        self: &Arc<Self>,
        after: Option<u64>,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + use<>, Held> {
        let holding = {
            let mut state = self.lock();
            if after.is_none() && state.holder.is_some() {
                return Err(Held);
            }
            state.streams += 1;
            let number = state.streams;
            state.holder = Some(number);
            Holding {
                outbox: self.clone(),
                number,
                // An id from beyond what was sent is a client's mistake: read as the last.
                cursor: after.map_or(state.handed, |after| after.min(state.last)),
            }
        };
        // A predecessor taken over ends.
        self.ready.notify_waiters();
        Ok(futures::stream::unfold(holding, |mut holding| async move {
            let message = holding.next().await?;
            Some((message, holding))
        }))
    }
}

/// A stream's hold on the outbox, let go when the stream is dropped.
struct Holding {
    outbox: Arc<Outbox>,
    number: u64,
    /// The number of the last message it was handed.
    cursor: u64,
}

impl Holding {
    /// The next message; none once the session ended or another stream took over.
    async fn next(&mut self) -> Option<ServerSseMessage> {
        let outbox = self.outbox.clone();
        loop {
            let ready = outbox.ready.notified();
            tokio::pin!(ready);
            ready.as_mut().enable();
            {
                let mut state = outbox.lock();
                if state.closed || state.holder != Some(self.number) {
                    return None;
                }
                let found = state
                    .kept
                    .iter()
                    .find(|(number, _)| *number > self.cursor)
                    .map(|(number, message)| (*number, message.clone()));
                if let Some((number, message)) = found {
                    if number > self.cursor + 1 {
                        tracing::debug!(
                            skipped = number - self.cursor - 1,
                            "a standalone stream fell behind; messages it missed are gone"
                        );
                    }
                    self.cursor = number;
                    state.handed = state.handed.max(number);
                    let mut event = ServerSseMessage::default();
                    event.event_id = Some(number.to_string());
                    event.message = Some(message);
                    return Some(event);
                }
            }
            ready.await;
        }
    }
}

impl Drop for Holding {
    fn drop(&mut self) {
        let mut state = self.outbox.lock();
        if state.holder == Some(self.number) {
            state.holder = None;
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use futures::StreamExt;
    use rmcp::model::{ServerNotification, ToolListChangedNotification};

    fn changed() -> ServerJsonRpcMessage {
        ServerJsonRpcMessage::notification(ServerNotification::ToolListChangedNotification(
            ToolListChangedNotification::default(),
        ))
    }

    fn id(event: &ServerSseMessage) -> &str {
        event.event_id.as_deref().unwrap()
    }

    #[tokio::test]
    async fn a_stream_gets_what_was_put_before_and_after_it_opened_in_order() {
        let outbox = Outbox::new();
        outbox.put(changed());
        let mut stream = Box::pin(outbox.listen(None).unwrap());
        assert_eq!(id(&stream.next().await.unwrap()), "1");
        outbox.put(changed());
        outbox.put(changed());
        assert_eq!(id(&stream.next().await.unwrap()), "2");
        assert_eq!(id(&stream.next().await.unwrap()), "3");
    }

    #[tokio::test]
    async fn one_plain_stream_at_a_time_and_a_resuming_one_takes_over() {
        let outbox = Outbox::new();
        let mut first = Box::pin(outbox.listen(None).unwrap());
        assert!(outbox.listen(None).is_err());
        outbox.put(changed());
        outbox.put(changed());
        assert_eq!(id(&first.next().await.unwrap()), "1");
        let mut resumed = Box::pin(outbox.listen(Some(1)).unwrap());
        assert!(first.next().await.is_none(), "the one taken over ends");
        assert_eq!(id(&resumed.next().await.unwrap()), "2");
        drop(resumed);
        drop(first);
        assert!(!outbox.held());
        // A fresh stream is handed only what none had.
        outbox.put(changed());
        let mut fresh = Box::pin(outbox.listen(None).unwrap());
        assert_eq!(id(&fresh.next().await.unwrap()), "3");
    }

    #[tokio::test]
    async fn closing_ends_the_stream_and_a_slow_reader_skips_what_was_dropped() {
        let outbox = Outbox::new();
        let mut stream = Box::pin(outbox.listen(None).unwrap());
        for _ in 0..KEPT + 3 {
            outbox.put(changed());
        }
        assert_eq!(id(&stream.next().await.unwrap()), "4");
        outbox.close();
        assert!(stream.next().await.is_none());
        outbox.put(changed());
        assert!(outbox.listen(Some(0)).is_ok());
    }
}
