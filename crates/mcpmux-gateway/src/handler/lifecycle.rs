//! A gateway's end: new calls refused, the calls in flight waited for, then cancelled.

use std::sync::atomic::Ordering;
use std::time::Duration;

use super::Gateway;

/// How long cancelled calls may take to end (their upstream servers told) at shutdown.
const CANCEL_WAIT: Duration = Duration::from_secs(2);

impl Gateway {
    /// Refuses new calls from now on (shutdown has begun).
    pub fn close(&self) {
        self.inner.closing.cancel();
    }

    /// Refuses new calls, waits until no call is in flight or `grace` has passed, then
    /// cancels the calls still running (their upstream servers are told) and waits for them
    /// to end. Returns how many were cancelled.
    pub async fn drain(&self, grace: Duration) -> usize {
        self.close();
        if tokio::time::timeout(grace, self.idle()).await.is_ok() {
            return 0;
        }
        let left = self.inner.in_flight.load(Ordering::SeqCst);
        tracing::warn!(
            calls = left,
            "grace period over; cancelling calls in flight"
        );
        self.inner.abort.cancel();
        let _ = tokio::time::timeout(CANCEL_WAIT, self.idle()).await;
        left
    }

    /// Returns once no call is in flight.
    async fn idle(&self) {
        loop {
            let idle = self.inner.idle.notified();
            if self.inner.in_flight.load(Ordering::SeqCst) == 0 {
                return;
            }
            idle.await;
        }
    }
}
