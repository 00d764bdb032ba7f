//! Who a server→client request (roots, sampling, elicitation) is for: the calls in flight on
//! one session, each with the party it is made for and the [`Relay`] that passes such
//! requests on, and the rule that ties a request to one of them.
//!
//! A request is tied to a call when the transport says which (a streamable-HTTP server sends
//! it on the response stream of that call's POST: rmcp marks it with the call's request id),
//! or when every call in flight on the session is one party's (one caller cannot be confused
//! with itself): on a transport that cannot tell calls apart (stdio, WebSocket), and for a
//! request a streamable-HTTP server sent on its stream of no call (the standalone GET
//! stream, where a server that does not say which call asks puts it). With nothing in flight
//! it is outside any call; with calls of several parties in flight it is ambiguous. Knows
//! nothing of what the answer is.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use rmcp::model::RequestId;
use rmcp::service::InboundStreamOrigin;
use tokio::sync::Notify;

use crate::host::Relay;

/// How long a request tied by the transport to a call waits for that call's request id to
/// be recorded: the id is known only once rmcp has sent the call, and the server's request
/// may be handled a moment before the caller records it.
const ID_WAIT: Duration = Duration::from_secs(2);

/// The party a server's log message is for, stamped on the message as it is read (while the
/// call that caused it is still in flight): see [`Callers::sole_party`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LogParty(pub(crate) Option<u64>);

/// Whose one call in flight is: the party it is made for, and who passes its server→client
/// requests on (none: the hub's host).
#[derive(Clone)]
pub(crate) struct CallParty {
    pub(crate) party: Option<u64>,
    pub(crate) relay: Option<Arc<dyn Relay>>,
}

impl CallParty {
    /// The party of a call made with `relay` (none: the harness itself).
    pub(crate) fn of(relay: Option<&Arc<dyn Relay>>) -> Self {
        CallParty {
            party: relay.map(|r| r.party()),
            relay: relay.cloned(),
        }
    }
}

struct Entry {
    key: u64,
    /// The call's request id, once rmcp has sent it.
    id: Option<RequestId>,
    caller: CallParty,
}

#[derive(Default)]
struct Book {
    next: u64,
    entries: Vec<Entry>,
}

/// The calls in flight on one session (shared by its callers and its client handler).
#[derive(Clone, Default)]
pub(crate) struct Callers {
    book: Arc<Mutex<Book>>,
    /// Signalled when a call's request id is recorded.
    identified: Arc<Notify>,
}

/// Who a request is for.
pub(crate) enum Attribution {
    /// One call's party.
    Call(CallParty),
    /// No call: the request came outside any.
    Outside,
    /// Calls of this many parties are in flight and nothing says which one asks.
    Ambiguous(usize),
}

impl Callers {
    fn lock(&self) -> MutexGuard<'_, Book> {
        crate::sync::lock(&self.book)
    }

    /// A book holding only `caller`'s call: for the requests a 2026-07-28 server makes inside
    /// that call's result, which can only be that call's.
    pub(crate) fn only(caller: CallParty) -> Self {
        let callers = Callers::default();
        *callers.lock() = Book {
            next: 1,
            entries: vec![Entry {
                key: 0,
                id: None,
                caller,
            }],
        };
        callers
    }

    /// A call is about to be sent: it is in flight (for requests no transport ties to a call)
    /// until the returned guard is dropped.
    pub(crate) fn enter(&self, caller: CallParty) -> InFlight {
        let mut book = self.lock();
        let key = book.next;
        book.next += 1;
        book.entries.push(Entry {
            key,
            id: None,
            caller,
        });
        InFlight {
            callers: self.clone(),
            key,
        }
    }

    /// Who a request that arrived as `origin` says (rmcp's mark of the stream it came on, if
    /// the transport has streams) is for.
    pub(crate) async fn attribute(&self, origin: Option<&InboundStreamOrigin>) -> Attribution {
        match origin {
            Some(InboundStreamOrigin::OutboundRequest(id)) => self.by_id(id).await,
            // No stream names a call: tied to one only when every call in flight is one
            // party's.
            _ => self.by_parties(),
        }
    }

    /// The caller of the call sent as `id`; a request on the stream of something other than a
    /// call (a read, a listing) is outside any call.
    async fn by_id(&self, id: &RequestId) -> Attribution {
        let deadline = tokio::time::Instant::now() + ID_WAIT;
        loop {
            // Registered before the book is read, so an id recorded in between wakes it.
            let identified = self.identified.notified();
            tokio::pin!(identified);
            identified.as_mut().enable();
            {
                let book = self.lock();
                if let Some(entry) = book.entries.iter().find(|e| e.id.as_ref() == Some(id)) {
                    return Attribution::Call(entry.caller.clone());
                }
                if book.entries.iter().all(|e| e.id.is_some()) {
                    return Attribution::Outside;
                }
            }
            // A call being sent has no id yet: it may be this one.
            if tokio::time::timeout_at(deadline, identified).await.is_err() {
                return Attribution::Outside;
            }
        }
    }

    /// The party every call in flight is made for, when they are all one relayed party's: a
    /// notification that names no call (a log message) is that party's. `None` with nothing in
    /// flight, calls of several parties, or the harness's own.
    pub(crate) fn sole_party(&self) -> Option<u64> {
        match self.by_parties() {
            Attribution::Call(caller) => caller.party,
            Attribution::Outside | Attribution::Ambiguous(_) => None,
        }
    }

    fn by_parties(&self) -> Attribution {
        let book = self.lock();
        let Some(newest) = book.entries.last() else {
            return Attribution::Outside;
        };
        let mut parties: Vec<Option<u64>> = book.entries.iter().map(|e| e.caller.party).collect();
        parties.sort_unstable();
        parties.dedup();
        match parties.len() {
            1 => Attribution::Call(newest.caller.clone()),
            n => Attribution::Ambiguous(n),
        }
    }
}

/// One call in flight; dropping it takes the call off the book.
pub(crate) struct InFlight {
    callers: Callers,
    key: u64,
}

impl InFlight {
    /// The call was sent as request `id`.
    pub(crate) fn identify(&self, id: RequestId) {
        {
            let mut book = self.callers.lock();
            if let Some(entry) = book.entries.iter_mut().find(|e| e.key == self.key) {
                entry.id = Some(id);
            }
        }
        self.callers.identified.notify_waiters();
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        {
            let mut book = self.callers.lock();
            book.entries.retain(|e| e.key != self.key);
        }
        // A request waiting for this call's id will not get it.
        self.callers.identified.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use futures::future::BoxFuture;
    use serde_json::Value;

    use super::*;
    use crate::host::{HostError, Relayed};

    struct Party(u64);

    impl Relay for Party {
        fn party(&self) -> u64 {
            self.0
        }
        fn relay(&self, _request: Relayed) -> BoxFuture<'_, Result<Value, HostError>> {
            Box::pin(async { Ok(Value::Null) })
        }
    }

    fn caller(party: u64) -> CallParty {
        let relay: Arc<dyn Relay> = Arc::new(Party(party));
        CallParty::of(Some(&relay))
    }

    fn party_of(attribution: Attribution) -> Option<Option<u64>> {
        match attribution {
            Attribution::Call(caller) => Some(caller.party),
            _ => None,
        }
    }

    #[tokio::test]
    async fn without_streams_calls_of_one_party_are_unambiguous_and_of_two_are_not() {
        let callers = Callers::default();
        assert!(matches!(
            callers.attribute(None).await,
            Attribution::Outside
        ));
        let first = callers.enter(caller(1));
        let second = callers.enter(caller(1));
        assert_eq!(party_of(callers.attribute(None).await), Some(Some(1)));
        let other = callers.enter(caller(2));
        assert!(matches!(
            callers.attribute(None).await,
            Attribution::Ambiguous(2)
        ));
        drop(other);
        drop(first);
        drop(second);
        // The harness's own call is a party too.
        let _own = callers.enter(CallParty::of(None));
        assert_eq!(party_of(callers.attribute(None).await), Some(None));
    }

    #[tokio::test]
    async fn a_stream_names_its_call_even_among_many_parties() {
        let callers = Callers::default();
        let a = callers.enter(caller(1));
        let b = callers.enter(caller(2));
        a.identify(RequestId::Number(7));
        b.identify(RequestId::Number(8));
        let origin = InboundStreamOrigin::OutboundRequest(RequestId::Number(8));
        assert_eq!(
            party_of(callers.attribute(Some(&origin)).await),
            Some(Some(2))
        );
        // The stream of something that is not a call.
        let read = InboundStreamOrigin::OutboundRequest(RequestId::Number(99));
        assert!(matches!(
            callers.attribute(Some(&read)).await,
            Attribution::Outside
        ));
        // No call's stream: as without streams.
        assert!(matches!(
            callers
                .attribute(Some(&InboundStreamOrigin::Unassociated))
                .await,
            Attribution::Ambiguous(2)
        ));
    }

    #[tokio::test]
    async fn a_request_that_overtakes_its_call_s_id_waits_for_it() {
        let callers = Callers::default();
        let call = callers.enter(caller(3));
        let waiting = {
            let callers = callers.clone();
            tokio::spawn(async move {
                let origin = InboundStreamOrigin::OutboundRequest(RequestId::Number(5));
                party_of(callers.attribute(Some(&origin)).await)
            })
        };
        tokio::task::yield_now().await;
        call.identify(RequestId::Number(5));
        assert_eq!(waiting.await.ok().flatten(), Some(Some(3)));
    }

    #[test]
    fn a_log_is_a_party_s_only_while_that_party_alone_has_calls_in_flight() {
        let callers = Callers::default();
        assert_eq!(callers.sole_party(), None);
        let a = callers.enter(caller(1));
        assert_eq!(callers.sole_party(), Some(1));
        let b = callers.enter(caller(2));
        assert_eq!(callers.sole_party(), None);
        drop(a);
        assert_eq!(callers.sole_party(), Some(2));
        drop(b);
        let _own = callers.enter(CallParty::of(None));
        assert_eq!(callers.sole_party(), None);
    }

    #[tokio::test]
    async fn a_book_of_one_call_ties_everything_to_it() {
        let callers = Callers::only(caller(4));
        assert_eq!(party_of(callers.attribute(None).await), Some(Some(4)));
    }
}
