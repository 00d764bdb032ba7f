//! Protocol eras and the cache that remembers, across runs, which era each server speaks, so a
//! CLI start does not pay the `server/discover` probe again.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rmcp::service::{Peer, RoleClient};
use serde::{Deserialize, Serialize};

use crate::state::Era;

/// The era of a live session, by the rule the handshake named it with: a protocol version
/// without `initialize` is 2026-07-28's. Read from the session itself, so it holds while the
/// circuit breaker has the server `disabled` and cannot describe another session than the
/// one the request goes to.
pub(crate) fn era_of(peer: &Peer<RoleClient>) -> Era {
    match peer.peer_info() {
        Some(info) if !info.protocol_version.has_initialize() => Era::Stateless,
        _ => Era::Handshake,
    }
}

/// What was learnt about one server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct EraEntry {
    pub era: Era,
    pub version: String,
}

/// A small JSON file keyed by server signature; shared by every connection of a hub.
#[derive(Clone, Default)]
pub(crate) struct EraCache {
    inner: Arc<Mutex<CacheState>>,
}

#[derive(Default)]
struct CacheState {
    path: Option<PathBuf>,
    entries: BTreeMap<String, EraEntry>,
}

impl EraCache {
    /// A cache persisted at `path` (loaded now); `None` keeps it in memory only.
    pub(crate) fn open(path: Option<PathBuf>) -> Self {
        let entries = path.as_deref().map(read_entries).unwrap_or_default();
        Self {
            inner: Arc::new(Mutex::new(CacheState { path, entries })),
        }
    }

    /// The default location: `$XDG_CACHE_HOME/mcpmux/eras.json` or `~/.cache/mcpmux/eras.json`.
    pub(crate) fn default_path() -> Option<PathBuf> {
        let base = crate::platform::dirs::cache_home_from_env()?;
        Some(base.join("mcpmux").join("eras.json"))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, CacheState> {
        crate::sync::lock(&self.inner)
    }

    /// The era remembered for `signature`.
    pub(crate) fn get(&self, signature: &str) -> Option<EraEntry> {
        self.lock().entries.get(&key(signature)).cloned()
    }

    /// Remembers `entry` for `signature` (written through when it changed).
    pub(crate) fn put(&self, signature: &str, entry: EraEntry) {
        let mut state = self.lock();
        if state.entries.get(&key(signature)) == Some(&entry) {
            return;
        }
        state.entries.insert(key(signature), entry);
        state.save();
    }

    /// Forgets `signature` (its server no longer answers in the cached era).
    pub(crate) fn forget(&self, signature: &str) {
        let mut state = self.lock();
        if state.entries.remove(&key(signature)).is_some() {
            state.save();
        }
    }
}

impl CacheState {
    fn save(&self) {
        let Some(path) = &self.path else { return };
        let write = || -> std::io::Result<()> {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir)?;
            }
            let text = serde_json::to_vec_pretty(&self.entries).map_err(std::io::Error::other)?;
            // Write-then-rename: two mcpmux processes must never see a torn file.
            let tmp = path.with_extension(format!("tmp.{}", std::process::id()));
            std::fs::write(&tmp, text)?;
            std::fs::rename(&tmp, path)
        };
        if let Err(e) = write() {
            tracing::debug!(path = %path.display(), error = %e, "cannot write the era cache");
        }
    }
}

fn read_entries(path: &Path) -> BTreeMap<String, EraEntry> {
    match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or_else(|e| {
            tracing::debug!(path = %path.display(), error = %e, "ignoring a corrupt era cache");
            BTreeMap::new()
        }),
        Err(_) => BTreeMap::new(),
    }
}

/// Signatures contain commands and URLs; the file stores a hash of them only.
fn key(signature: &str) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(signature.as_bytes());
    digest.iter().take(12).map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn survives_a_restart_and_forgets_on_request() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("eras.json");
        let cache = EraCache::open(Some(path.clone()));
        let entry = EraEntry {
            era: Era::Stateless,
            version: "2026-07-28".into(),
        };
        cache.put("stdio:uvx\u{1f}mcp-server-time", entry.clone());

        let reopened = EraCache::open(Some(path.clone()));
        assert_eq!(reopened.get("stdio:uvx\u{1f}mcp-server-time"), Some(entry));
        assert!(!std::fs::read_to_string(&path).unwrap().contains("uvx"));

        reopened.forget("stdio:uvx\u{1f}mcp-server-time");
        assert_eq!(
            EraCache::open(Some(path)).get("stdio:uvx\u{1f}mcp-server-time"),
            None
        );
    }

    #[test]
    fn a_corrupt_file_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("eras.json");
        std::fs::write(&path, "{not json").unwrap();
        assert_eq!(EraCache::open(Some(path)).get("x"), None);
    }
}
