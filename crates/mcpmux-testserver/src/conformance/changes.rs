//! Who hears that the tool or prompt list changed: 2026-07-28 `subscriptions/listen` streams
//! (each with the filter rmcp accepted for it) and handshake-era sessions. One list per
//! process, like the lists themselves: the `test_trigger_*` tools of one request reach the
//! listen streams of others. Owns the one tool and the one prompt those tools add and remove.

use std::{
    sync::{
        Mutex, MutexGuard,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use rmcp::{
    RoleServer,
    service::{Peer, SubscriptionContext, SubscriptionSendError, SubscriptionSink},
};

/// Which list changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum List {
    /// `tools/list`.
    Tools,
    /// `prompts/list`.
    Prompts,
}

/// Whether the tool `test_dynamic_tool` is listed now (toggled by `test_trigger_tool_change`).
static DYNAMIC_TOOL: AtomicBool = AtomicBool::new(false);
/// Whether the prompt `test_dynamic_prompt` is listed now (toggled by
/// `test_trigger_prompt_change`).
static DYNAMIC_PROMPT: AtomicBool = AtomicBool::new(false);

/// Whether the dynamic item of `list` is listed now.
pub fn dynamic(list: List) -> bool {
    match list {
        List::Tools => DYNAMIC_TOOL.load(Ordering::SeqCst),
        List::Prompts => DYNAMIC_PROMPT.load(Ordering::SeqCst),
    }
}

/// Adds or removes the dynamic item of `list`, then tells who listens: a real change, so a
/// client (or a gateway) that compares lists sees one.
pub async fn toggle(list: List) {
    match list {
        List::Tools => DYNAMIC_TOOL.fetch_xor(true, Ordering::SeqCst),
        List::Prompts => DYNAMIC_PROMPT.fetch_xor(true, Ordering::SeqCst),
    };
    announce(list).await;
}

/// Longest a change waits for acknowledged listens to start listening.
const PENDING_WAIT: Duration = Duration::from_secs(2);

static NEXT: AtomicU64 = AtomicU64::new(1);
static LISTENERS: Mutex<Vec<(u64, SubscriptionSink)>> = Mutex::new(Vec::new());
static SESSIONS: Mutex<Vec<Peer<RoleServer>>> = Mutex::new(Vec::new());
/// Listens acknowledged but not yet listening: rmcp acknowledges before it runs the
/// handler's `listen`, so a client told "subscribed" may cause a change before the stream is
/// in the list. A change waits for these first.
static PENDING: AtomicU64 = AtomicU64::new(0);

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    match mutex.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}

/// A listen was accepted; its stream will be added by [`listen`].
pub fn expect_listen() {
    PENDING.fetch_add(1, Ordering::SeqCst);
}

/// Keeps `context`'s stream in the list until it is cancelled.
pub async fn listen(context: SubscriptionContext) {
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    lock(&LISTENERS).push((id, context.sink().clone()));
    let _ = PENDING.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
    context.cancelled().await;
    lock(&LISTENERS).retain(|(other, _)| *other != id);
}

/// Remembers a handshake-era session.
pub fn add_session(peer: Peer<RoleServer>) {
    let mut sessions = lock(&SESSIONS);
    sessions.retain(|p| !p.is_transport_closed());
    sessions.push(peer);
}

/// Tells every listen stream whose filter asked for `list`, and every session.
async fn announce(list: List) {
    let since = Instant::now();
    while PENDING.load(Ordering::SeqCst) > 0 && since.elapsed() < PENDING_WAIT {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let listeners: Vec<(u64, SubscriptionSink)> = lock(&LISTENERS).clone();
    for (id, sink) in listeners {
        let sent = match list {
            List::Tools => sink.notify_tool_list_changed().await,
            List::Prompts => sink.notify_prompt_list_changed().await,
        };
        match sent {
            // Not in this stream's filter: rmcp kept it off the stream, as it should.
            Ok(()) | Err(SubscriptionSendError::NotificationNotAccepted(_)) => {}
            Err(error) => {
                tracing::debug!(%error, "list change not sent; forgetting the stream");
                lock(&LISTENERS).retain(|(other, _)| *other != id);
            }
        }
    }
    let sessions: Vec<Peer<RoleServer>> = lock(&SESSIONS).clone();
    for peer in sessions {
        let sent = match list {
            List::Tools => peer.notify_tool_list_changed().await,
            List::Prompts => peer.notify_prompt_list_changed().await,
        };
        if sent.is_err() {
            lock(&SESSIONS).retain(|p| !p.is_transport_closed());
        }
    }
}
