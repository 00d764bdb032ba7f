//! A broadcast channel that allocates its buffer on the first subscription. tokio's channel
//! allocates all of its slots when it is made: a hub carries three of them (state changes,
//! resource notices, server logs), about 300 KiB of empty slots that most harnesses never
//! subscribe to. A value sent while nobody subscribes is dropped, exactly as tokio drops it
//! when its channel has no receiver. Knows nothing of what it carries.

use std::sync::{Arc, OnceLock};

use tokio::sync::broadcast;

/// A lazily allocated broadcast channel. Cheap to clone; clones share the channel.
pub(crate) struct Broadcast<T> {
    inner: Arc<Lazy<T>>,
}

struct Lazy<T> {
    capacity: usize,
    sender: OnceLock<broadcast::Sender<T>>,
}

impl<T> Clone for Broadcast<T> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
        }
    }
}

impl<T: Clone> Broadcast<T> {
    /// A channel that will keep `capacity` values for a slow subscriber once one subscribes.
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            inner: Arc::new(Lazy {
                capacity,
                sender: OnceLock::new(),
            }),
        }
    }

    /// A receiver of every value sent from now on.
    pub(crate) fn subscribe(&self) -> broadcast::Receiver<T> {
        self.inner
            .sender
            .get_or_init(|| broadcast::channel(self.inner.capacity).0)
            .subscribe()
    }

    /// Sends `value` to every receiver; dropped when there is none.
    pub(crate) fn send(&self, value: T) {
        if let Some(sender) = self.inner.sender.get() {
            // No receiver left is fine: nobody is listening any more.
            let _ = sender.send(value);
        }
    }

    /// How many receivers are alive.
    pub(crate) fn receiver_count(&self) -> usize {
        self.inner
            .sender
            .get()
            .map_or(0, broadcast::Sender::receiver_count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_subscriber_gets_what_is_sent_after_it_subscribed_through_any_clone() {
        let channel = Broadcast::new(4);
        channel.send(1); // nobody listens yet: dropped
        assert_eq!(channel.receiver_count(), 0);
        let mut first = channel.subscribe();
        let clone = channel.clone();
        let mut second = clone.subscribe();
        assert_eq!(channel.receiver_count(), 2);
        clone.send(2);
        channel.send(3);
        assert_eq!(first.try_recv().ok(), Some(2));
        assert_eq!(first.try_recv().ok(), Some(3));
        assert_eq!(second.try_recv().ok(), Some(2));
        assert!(matches!(
            first.try_recv(),
            Err(broadcast::error::TryRecvError::Empty)
        ));
    }

    #[test]
    fn a_slow_subscriber_loses_the_oldest_values_beyond_the_capacity() {
        let channel = Broadcast::new(2);
        let mut slow = channel.subscribe();
        for i in 0..5 {
            channel.send(i);
        }
        assert!(matches!(
            slow.try_recv(),
            Err(broadcast::error::TryRecvError::Lagged(3))
        ));
        assert_eq!(slow.try_recv().ok(), Some(3));
    }
}
