//! What parking takes beside the table (`sessions`' doc says when and why): rmcp's session
//! store over the table (a parked session's `initialize` parameters, read back only by its
//! owner), the task that parks idle sessions, expires parked ones and closes half-open ones,
//! and the hand-back of the memory they freed.

use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use rmcp::transport::streamable_http_server::session::{
    SessionId, SessionState, SessionStore, SessionStoreError, local::LocalSessionManager,
};

use super::{AtRest, Params, SessionLimits, Table, lock, owned_by_caller};
use crate::identity::{Refused, ServedRequest};

/// rmcp's session store, over the table: a session's `initialize` parameters kept with its
/// record, read back for a restore only by the identity that owns it, and only while parked.
pub(super) struct Store {
    pub(super) table: Weak<Mutex<Table>>,
}

#[async_trait::async_trait]
impl SessionStore for Store {
    async fn load(&self, session_id: &str) -> Result<Option<SessionState>, SessionStoreError> {
        let Some(table) = self.table.upgrade() else {
            return Ok(None);
        };
        let table = lock(&table);
        let Some(entry) = table.entries.get(session_id) else {
            return Ok(None);
        };
        if !owned_by_caller(entry) {
            tracing::debug!("a parked session's id was presented by another identity");
            ServedRequest::refuse(Refused::NotFound);
            return Ok(None);
        }
        if !entry.parked {
            return Ok(None);
        }
        Ok(entry
            .params
            .as_ref()
            .and_then(Params::read)
            .map(SessionState::new))
    }

    async fn store(&self, session_id: &str, state: &SessionState) -> Result<(), SessionStoreError> {
        // Only a session already counted gets a record's parameters: the store makes none.
        if let Some(table) = self.table.upgrade()
            && let Some(entry) = lock(&table).entries.get_mut(session_id)
            && entry.params.is_none()
        {
            entry.params = Params::of(&state.initialize_params);
        }
        Ok(())
    }

    async fn delete(&self, _session_id: &str) -> Result<(), SessionStoreError> {
        // A `DELETE`: `close_session` has already forgotten the record.
        Ok(())
    }
}

/// The task that parks idle sessions, expires parked ones and closes those past their
/// handshake deadline, while the sessions last.
pub(super) struct Sweeper {
    pub(super) table: Weak<Mutex<Table>>,
    pub(super) inner: Weak<LocalSessionManager>,
    pub(super) turns: Arc<tokio::sync::Mutex<()>>,
    pub(super) limits: SessionLimits,
    pub(super) at_rest: AtRest,
}

impl Sweeper {
    pub(super) async fn run(self) {
        let shortest = self
            .limits
            .park_after
            .map_or(self.limits.idle, |park| park.min(self.limits.idle))
            .min(self.limits.handshake);
        let tick = (shortest / 2).clamp(Duration::from_millis(20), Duration::from_secs(5));
        loop {
            tokio::time::sleep(tick).await;
            let (Some(table), Some(inner)) = (self.table.upgrade(), self.inner.upgrade()) else {
                return;
            };
            let expired = self.expire(&table) + self.close_unfinished(&table, &inner).await;
            let parked = self.park(&table, &inner).await;
            if expired + parked >= TRIM_AT_LEAST {
                give_back_memory();
            }
        }
    }

    /// Forgets parked sessions unused for the idle limit; how many.
    fn expire(&self, table: &Mutex<Table>) -> usize {
        let mut table = lock(table);
        let idle = self.limits.idle;
        let expired: Vec<SessionId> = table
            .entries
            .iter()
            .filter(|(_, entry)| entry.parked && entry.used.elapsed() >= idle)
            .map(|(id, _)| id.clone())
            .collect();
        for id in &expired {
            if let Some(entry) = table.entries.remove(id) {
                entry.outbox.close();
                table.release(entry.owner.as_ref());
            }
        }
        if !expired.is_empty() {
            tracing::debug!(sessions = expired.len(), "parked sessions expired");
        }
        expired.len()
    }

    /// Closes the sessions whose handshake deadline passed before their
    /// `notifications/initialized`; how many.
    async fn close_unfinished(&self, table: &Mutex<Table>, inner: &LocalSessionManager) -> usize {
        let now = Instant::now();
        let unfinished: Vec<SessionId> = lock(table)
            .entries
            .iter()
            .filter(|(_, entry)| {
                !entry.initialized && entry.handshake_until.is_some_and(|until| until <= now)
            })
            .map(|(id, _)| id.clone())
            .collect();
        for id in &unfinished {
            tracing::debug!("a session closed: no notifications/initialized in time");
            super::close(inner, table, id).await;
        }
        unfinished.len()
    }

    /// Parks every session that may be; how many.
    async fn park(&self, table: &Mutex<Table>, inner: &LocalSessionManager) -> usize {
        let Some(park_after) = self.limits.park_after else {
            return 0;
        };
        let now = Instant::now();
        let candidates: Vec<SessionId> = lock(table)
            .entries
            .iter()
            .filter(|(_, entry)| entry.parkable(now, park_after, self.at_rest))
            .map(|(id, _)| id.clone())
            .collect();
        let mut parked = 0;
        for id in candidates {
            let turn = self.turns.lock().await;
            let handler = {
                let mut table = lock(table);
                let Some(entry) = table.entries.get_mut(&id) else {
                    continue;
                };
                // Asked again under the lock: a request may have come since.
                if !entry.parkable(Instant::now(), park_after, self.at_rest) {
                    continue;
                }
                entry.parked = true;
                entry.pumped = false;
                entry.goodbyes += 1;
                entry.handler.take()
            };
            let handle = inner.sessions.write().await.remove(&id);
            drop(turn);
            drop(handler);
            if let Some(handle) = handle
                && let Err(error) = handle.close().await
            {
                tracing::debug!(%error, "a parked session's worker did not close cleanly");
            }
            parked += 1;
        }
        if parked > 0 {
            tracing::debug!(sessions = parked, "idle sessions parked");
        }
        parked
    }
}

/// Sessions closed or parked between two hand-backs of freed memory: a hand-back takes a few
/// milliseconds; a session parked or closed with a live worker frees some 80 KiB, one born
/// parked and never woken only its record, stream and connection (some 20 KiB).
pub(super) const TRIM_EVERY: usize = 256;
/// Sessions closed since the last hand-back for the last one's going to call for another.
pub(super) const TRIM_AT_LEAST: usize = 16;

/// Hands the pages freed by closed sessions back to the system, off the async threads.
pub(super) fn give_back_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    tokio::task::spawn_blocking(|| {
        // SAFETY: malloc_trim only releases free pages of glibc's own heap; it takes no
        // pointer and is safe to call from any thread at any time.
        unsafe {
            libc::malloc_trim(0);
        }
    });
}
