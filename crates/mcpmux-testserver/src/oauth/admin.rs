//! The `/admin/oauth/*` knobs a test turns: revoke every token, expire every access token, and
//! the counters of what happened.

use std::{sync::Arc, time::Instant};

use axum::{Json, extract::State};
use serde_json::{Value, json};

use super::{AuthorizationServer, Stats};

impl AuthorizationServer {
    pub(super) fn revoke_all(&self) -> Value {
        let mut ledger = self.lock();
        let access = ledger.access.len();
        let refresh = ledger.refresh.len();
        ledger.access.clear();
        ledger.refresh.clear();
        json!({ "revoked_access_tokens": access, "revoked_refresh_tokens": refresh })
    }

    pub(super) fn expire_all(&self) -> Value {
        let now = Instant::now();
        let mut ledger = self.lock();
        for access in ledger.access.values_mut() {
            access.expires_at = Some(now);
        }
        json!({ "expired_access_tokens": ledger.access.len() })
    }

    pub(super) fn stats(&self) -> Stats {
        self.lock().stats.clone()
    }
}

/// `POST /admin/oauth/revoke`: every access and refresh token stops working.
pub(super) async fn admin_revoke(State(server): State<Arc<AuthorizationServer>>) -> Json<Value> {
    Json(server.revoke_all())
}

/// `POST /admin/oauth/expire`: every access token expires now; refresh tokens stay valid.
pub(super) async fn admin_expire(State(server): State<Arc<AuthorizationServer>>) -> Json<Value> {
    Json(server.expire_all())
}

/// `GET /admin/oauth/stats`
pub(super) async fn admin_stats(State(server): State<Arc<AuthorizationServer>>) -> Json<Stats> {
    Json(server.stats())
}
