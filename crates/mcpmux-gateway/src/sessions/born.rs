//! Sessions born parked: a `/mcp` session whose `initialize` the gateway answers itself
//! (`handshake`), with no rmcp worker ever made for it until a request needs one (`sessions`'
//! doc: a restore). Its record is made under the same caps as any session, its handshake
//! deadline runs from its answer, and its `notifications/initialized` is taken here.

use std::sync::Arc;

use rmcp::model::InitializeRequestParams;
use rmcp::transport::common::server_side_http::session_id;
use rmcp::transport::streamable_http_server::session::SessionId;

use super::{Entry, Params, Sessions, SessionsError, lock, owned_by_caller};
use crate::guard::Client;
use crate::identity::{Refused, ServedRequest};
use crate::outbox::Outbox;

impl Sessions {
    /// Whether a session may be born parked (parking is on).
    pub(crate) fn parks(&self) -> bool {
        self.limits.park_after.is_some()
    }

    /// A slot for a new session of the caller's, under the caps (past one: refused, 503);
    /// its owner.
    pub(super) fn reserve(&self) -> Result<Option<Client>, SessionsError> {
        let owner = ServedRequest::current().map(|identity| identity.client);
        {
            let mut table = lock(&self.table);
            let held = owner
                .as_ref()
                .and_then(|owner| table.per_client.get(owner).copied())
                .unwrap_or(0);
            if table.total >= self.limits.max_sessions || held >= self.limits.max_per_client {
                drop(table);
                tracing::debug!(client = ?owner.as_ref().map(ToString::to_string), "a session refused: past a cap");
                ServedRequest::refuse(Refused::Full {
                    retry_after: self.retry_after(),
                });
                return Err(SessionsError::Full);
            }
            table.total += 1;
            if let Some(owner) = &owner {
                *table.per_client.entry(owner.clone()).or_insert(0) += 1;
            }
        }
        self.sweep();
        Ok(owner)
    }

    /// A new session of the caller's, parked from birth with `params` (what a restore
    /// replays): its id and the outbox of its `GET` stream. Its handshake deadline starts
    /// with [`Sessions::answered`].
    pub(crate) fn born(
        &self,
        params: InitializeRequestParams,
    ) -> Result<(SessionId, Arc<Outbox>), SessionsError> {
        let owner = self.reserve()?;
        let id = session_id();
        let mut entry = Entry::new(owner, None);
        entry.params = Params::of(&params);
        entry.parked = true;
        let outbox = entry.outbox.clone();
        lock(&self.table).entries.insert(id.clone(), entry);
        tracing::debug!("a session born parked");
        Ok((id, outbox))
    }

    /// Session `id`'s `initialize` answered: it has the handshake deadline to finish.
    pub(crate) fn answered(&self, id: &SessionId) {
        self.expire_unfinished(id.clone());
    }

    /// Forgets session `id`, born and not answered (its `initialize` failed).
    pub(crate) async fn unborn(&self, id: &SessionId) {
        super::close(&self.inner, &self.table, id).await;
    }

    /// Whether session `id` is the caller's and parked (a request on it brings it back).
    pub(crate) fn parked_for_caller(&self, id: &str) -> bool {
        let table = lock(&self.table);
        table
            .entries
            .get(id)
            .is_some_and(|entry| entry.parked && owned_by_caller(entry))
    }

    /// Takes the caller's `notifications/initialized` for session `id` when it is parked
    /// and has not finished its handshake (born parked); whether it did. Anything else (a
    /// session with a worker, another identity's, one unknown) is rmcp's to answer.
    pub(crate) fn initialized_born(&self, id: &str) -> bool {
        let mut table = lock(&self.table);
        let Some(entry) = table.entries.get_mut(id) else {
            return false;
        };
        if !(entry.parked && !entry.initialized && owned_by_caller(entry)) {
            return false;
        }
        entry.initialized = true;
        entry.used = std::time::Instant::now();
        true
    }
}
