//! The calls in flight on one session, so that the session's end can tell a crash caused by a
//! call (a failed call: it counts against the circuit breaker) from a loss while idle (it does
//! not). One book per session, shared by its callers and its supervisor; the end is decided
//! under its lock, so each lost call is counted once: by the supervisor when the session ended
//! under it, by the caller otherwise. Knows nothing of the breaker or the transport.

use std::sync::{Arc, Mutex, MutexGuard};

#[derive(Debug, Default)]
struct Book {
    open: usize,
    ended: bool,
}

/// The book of one session's calls in flight.
#[derive(Debug, Default)]
pub(crate) struct Flights(Mutex<Book>);

impl Flights {
    fn lock(&self) -> MutexGuard<'_, Book> {
        crate::sync::lock(&self.0)
    }

    /// A call goes out on this session.
    pub(crate) fn start(self: &Arc<Self>) -> Flight {
        self.lock().open += 1;
        Flight {
            flights: self.clone(),
            landed: false,
        }
    }

    /// The session has ended: how many calls were still in flight on it. Those calls are the
    /// supervisor's to count from now on.
    pub(crate) fn end(&self) -> usize {
        let mut book = self.lock();
        book.ended = true;
        book.open
    }
}

/// One call in flight; dropping it (the caller gave up) takes it off the book.
#[derive(Debug)]
pub(crate) struct Flight {
    flights: Arc<Flights>,
    landed: bool,
}

impl Flight {
    /// The call is over. `lost` says its session is gone (it ended under the call): such a call
    /// stays on the book for the supervisor. True when the supervisor counts this call — the
    /// session ended under it — so the caller must not count it again.
    pub(crate) fn land(mut self, lost: bool) -> bool {
        self.landed = true;
        let mut book = self.flights.lock();
        if book.ended || lost {
            return true;
        }
        book.open = book.open.saturating_sub(1);
        false
    }
}

impl Drop for Flight {
    fn drop(&mut self) {
        if !self.landed {
            let mut book = self.flights.lock();
            if !book.ended {
                book.open = book.open.saturating_sub(1);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_ending_under_a_call_is_the_supervisors_to_count() {
        let flights = Arc::new(Flights::default());
        let answered = flights.start();
        let hanging = flights.start();
        assert!(!answered.land(false));
        assert_eq!(flights.end(), 1);
        assert!(hanging.land(false), "ended under the call");
    }

    #[test]
    fn a_lost_call_seen_before_the_end_stays_on_the_book() {
        let flights = Arc::new(Flights::default());
        let call = flights.start();
        assert!(call.land(true));
        assert_eq!(flights.end(), 1);
    }

    #[test]
    fn calls_given_up_or_answered_are_off_the_book() {
        let flights = Arc::new(Flights::default());
        drop(flights.start());
        assert!(!flights.start().land(false));
        assert_eq!(flights.end(), 0);
    }
}
