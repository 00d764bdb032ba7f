//! rmcp's view of one server's tokens in the [`TokenStore`], with the store's refresh lock as
//! rmcp's refresh guard: rmcp takes it before it reads the refresh token and keeps it until
//! the successor is saved, so two hubs (in one process or two) never spend the same rotating
//! refresh token, and the second one refreshes with what the first one saved.
//!
//! It knows the store and rmcp's `CredentialStore` contract, nothing of servers' sessions.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rmcp::transport::auth::{
    AuthError, CredentialRefreshGuard, CredentialStore, StoredCredentials,
};

use super::store::{StoreError, TokenStore};

/// One server's credentials in the store.
pub(crate) struct Credentials {
    store: TokenStore,
    server: String,
    resource: String,
    /// Set while this handle holds the refresh lock: reads then bypass the store's cache, so
    /// a refresh token another process saved a clock tick ago is the one used.
    refreshing: Arc<AtomicBool>,
}

impl Credentials {
    /// The credentials of `server` at `resource` in `store`.
    pub fn new(store: TokenStore, server: &str, resource: &str) -> Self {
        Self {
            store,
            server: server.to_owned(),
            resource: resource.to_owned(),
            refreshing: Arc::new(AtomicBool::new(false)),
        }
    }
}

/// The refresh lock, and the flag that makes reads fresh while it is held.
struct Held {
    _lock: Option<super::store::RefreshLock>,
    refreshing: Arc<AtomicBool>,
}

impl Drop for Held {
    fn drop(&mut self) {
        self.refreshing.store(false, Ordering::Release);
    }
}

pub(crate) fn store_error(error: StoreError) -> AuthError {
    AuthError::CredentialStoreError(error.to_string())
}

#[async_trait::async_trait]
impl CredentialStore for Credentials {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        let entry = if self.refreshing.load(Ordering::Acquire) {
            self.store.get_fresh(&self.server, &self.resource)
        } else {
            self.store.get(&self.server, &self.resource)
        };
        Ok(entry
            .map_err(store_error)?
            .and_then(|entry| entry.credentials))
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        self.store
            .update(&self.server, &self.resource, |entry| {
                if credentials.issuer.is_some() {
                    entry.issuer = credentials.issuer.clone();
                }
                entry.credentials = Some(credentials);
            })
            .map_err(store_error)
    }

    async fn clear(&self) -> Result<(), AuthError> {
        self.store
            .update(&self.server, &self.resource, |entry| {
                entry.credentials = None;
            })
            .map_err(store_error)
    }

    async fn acquire_refresh_guard(&self) -> Result<Option<CredentialRefreshGuard>, AuthError> {
        let store = self.store.clone();
        // flock blocks: wait on a blocking-pool thread, not on the runtime's.
        let lock = tokio::task::spawn_blocking(move || store.refresh_lock())
            .await
            .map_err(|e| AuthError::CredentialStoreError(format!("the refresh lock: {e}")))?
            .map_err(store_error)?;
        self.refreshing.store(true, Ordering::Release);
        Ok(Some(CredentialRefreshGuard::new(Held {
            _lock: lock,
            refreshing: self.refreshing.clone(),
        })))
    }
}
