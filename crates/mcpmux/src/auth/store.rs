//! The token store: OAuth tokens and client registrations per server, in one JSON file only
//! the user can read, or in memory.
//!
//! The file is refused, not repaired, when its permissions let anyone else read it: a token
//! file that leaked once must be looked at by a person. Writes go to a private temporary file
//! renamed over the old one, so a crash never leaves half a file. Every read checks the file's
//! modification time, so a `mcpmux auth login` in another terminal reaches a running hub.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use rmcp::transport::auth::{AuthorizationMetadata, StoredCredentials};
use serde::{Deserialize, Serialize};

/// The file's format version; a newer one is refused rather than overwritten.
const VERSION: u32 = 1;

/// What the store knows of one server.
#[derive(Clone, Default, Serialize, Deserialize)]
pub(crate) struct Entry {
    /// The MCP endpoint the tokens are for; an entry for another URL is not used.
    pub resource: String,
    /// The authorization server's issuer the tokens and the client come from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issuer: Option<String>,
    /// The authorization server's metadata, so a restart needs no discovery to refresh.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<AuthorizationMetadata>,
    /// The client mcpmux is at that authorization server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<Client>,
    /// The tokens, in rmcp's own shape.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials: Option<StoredCredentials>,
    /// The private DPoP key the tokens are bound to (PKCS#8, base64url), when the
    /// authorization server takes DPoP: without it a stored token is useless.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dpop_key: Option<String>,
}

/// A client registration (dynamic, pre-registered or a metadata-document URL).
#[derive(Clone, Serialize, Deserialize, PartialEq, Eq)]
pub(crate) struct Client {
    /// The client id.
    pub client_id: String,
    /// Its secret, for a confidential client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    /// The redirect URI it was registered with.
    pub redirect_uri: String,
}

#[derive(Default, Serialize, Deserialize)]
struct FileBody {
    version: u32,
    #[serde(default)]
    servers: BTreeMap<String, Entry>,
}

/// Why the store could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The file lets other users read it.
    #[error(
        "the token file {path} is readable by other users (mode {mode:o}): tokens in it may have leaked; check it, then run `chmod 600 {path}`"
    )]
    Exposed {
        /// The file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// Reading, writing or parsing failed.
    #[error("the token file {path}: {message}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What went wrong and what to do.
        message: String,
    },
}

/// Where tokens live: a private file, or memory only.
#[derive(Clone)]
pub struct TokenStore {
    inner: Arc<Inner>,
}

struct Inner {
    path: Option<PathBuf>,
    cache: Mutex<Cache>,
}

#[derive(Default)]
struct Cache {
    body: FileBody,
    /// The file's modification time when `body` was read; `None`: never read.
    read_at: Option<Option<SystemTime>>,
}

impl std::fmt::Debug for TokenStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.inner.path {
            Some(path) => write!(f, "TokenStore({})", path.display()),
            None => f.write_str("TokenStore(memory)"),
        }
    }
}

impl TokenStore {
    /// A store in the file at `path` (created 0600 on first save, its folder 0700).
    pub fn file(path: impl Into<PathBuf>) -> Self {
        Self::new(Some(path.into()))
    }

    /// A store that forgets everything when the process ends (tests, sandboxes).
    pub fn memory() -> Self {
        Self::new(None)
    }

    /// The user's store: `$MCPMUX_TOKEN_FILE`, else `$XDG_CONFIG_HOME/mcpmux/tokens.json`, else
    /// `~/.config/mcpmux/tokens.json`; memory when there is no home directory.
    pub fn user_default() -> Self {
        Self::new(Self::default_path())
    }

    /// The path [`TokenStore::user_default`] uses.
    pub fn default_path() -> Option<PathBuf> {
        if let Some(path) = std::env::var_os("MCPMUX_TOKEN_FILE").filter(|p| !p.is_empty()) {
            return Some(PathBuf::from(path));
        }
        let config = std::env::var_os("XDG_CONFIG_HOME")
            .filter(|p| !p.is_empty())
            .map(PathBuf::from)
            .or_else(|| {
                std::env::var_os("HOME")
                    .filter(|p| !p.is_empty())
                    .map(|home| PathBuf::from(home).join(".config"))
            })?;
        Some(config.join("mcpmux").join("tokens.json"))
    }

    fn new(path: Option<PathBuf>) -> Self {
        Self {
            inner: Arc::new(Inner {
                path,
                cache: Mutex::new(Cache::default()),
            }),
        }
    }

    /// The file, if this store has one.
    pub fn path(&self) -> Option<&Path> {
        self.inner.path.as_deref()
    }

    /// The entry of `server` for `resource`, if there is one.
    pub(crate) fn get(&self, server: &str, resource: &str) -> Result<Option<Entry>, StoreError> {
        self.with_body(|body| {
            Ok(body
                .servers
                .get(server)
                .filter(|entry| entry.resource == resource)
                .cloned())
        })
    }

    /// Changes the entry of `server` for `resource` (a fresh one when it is for another URL),
    /// then saves.
    pub(crate) fn update(
        &self,
        server: &str,
        resource: &str,
        change: impl FnOnce(&mut Entry),
    ) -> Result<(), StoreError> {
        self.with_body(|body| {
            let entry = body.servers.entry(server.to_owned()).or_default();
            if entry.resource != resource {
                *entry = Entry {
                    resource: resource.to_owned(),
                    ..Entry::default()
                };
            }
            change(entry);
            Ok(())
        })?;
        self.save()
    }

    /// Forgets everything about `server`; true when there was something.
    pub fn remove(&self, server: &str) -> Result<bool, StoreError> {
        let removed = self.with_body(|body| Ok(body.servers.remove(server).is_some()))?;
        if removed {
            self.save()?;
        }
        Ok(removed)
    }

    /// The servers with stored tokens, and when each token was received (Unix seconds).
    pub fn servers(&self) -> Result<Vec<(String, Option<u64>)>, StoreError> {
        self.with_body(|body| {
            Ok(body
                .servers
                .iter()
                .filter_map(|(name, entry)| {
                    let credentials = entry.credentials.as_ref()?;
                    credentials.token_response.as_ref()?;
                    Some((name.clone(), credentials.token_received_at))
                })
                .collect())
        })
    }

    /// Runs `f` on the current body, re-reading the file first when it changed on disk.
    fn with_body<T>(
        &self,
        f: impl FnOnce(&mut FileBody) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut cache = match self.inner.cache.lock() {
            Ok(cache) => cache,
            Err(poisoned) => poisoned.into_inner(),
        };
        if let Some(path) = &self.inner.path {
            let modified = modified(path)?;
            if cache.read_at != Some(modified) {
                cache.body = read(path)?;
                cache.read_at = Some(modified);
            }
        }
        f(&mut cache.body)
    }

    fn save(&self) -> Result<(), StoreError> {
        let Some(path) = &self.inner.path else {
            return Ok(());
        };
        let mut cache = match self.inner.cache.lock() {
            Ok(cache) => cache,
            Err(poisoned) => poisoned.into_inner(),
        };
        cache.body.version = VERSION;
        let text = serde_json::to_string_pretty(&cache.body).map_err(|e| io_error(path, e))?;
        write_private(path, text.as_bytes())?;
        cache.read_at = Some(modified(path)?);
        Ok(())
    }
}

/// The file's modification time, `None` when it does not exist; refuses an exposed file.
fn modified(path: &Path) -> Result<Option<SystemTime>, StoreError> {
    use std::os::unix::fs::PermissionsExt;
    match std::fs::metadata(path) {
        Ok(meta) => {
            let mode = meta.permissions().mode() & 0o777;
            if mode & 0o077 != 0 {
                return Err(StoreError::Exposed {
                    path: path.to_path_buf(),
                    mode,
                });
            }
            Ok(meta.modified().ok())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_error(path, e)),
    }
}

fn read(path: &Path) -> Result<FileBody, StoreError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(FileBody::default()),
        Err(e) => return Err(io_error(path, e)),
    };
    let body: FileBody = serde_json::from_str(&text).map_err(|e| StoreError::Io {
        path: path.to_path_buf(),
        message: format!(
            "it is not a token file mcpmux can read ({e}); move it away and log in again"
        ),
    })?;
    if body.version > VERSION {
        return Err(StoreError::Io {
            path: path.to_path_buf(),
            message: format!(
                "it was written by a newer mcpmux (format {}); upgrade mcpmux",
                body.version
            ),
        });
    }
    Ok(body)
}

/// Writes `bytes` to `path` through a 0600 temporary file in the same folder (made 0700).
fn write_private(path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    use std::io::Write;
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let dir = path.parent().unwrap_or(Path::new("."));
    if !dir.as_os_str().is_empty() && !dir.exists() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| io_error(dir, e))?;
    }
    let file_name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_else(|| "tokens.json".into());
    let temporary = dir.join(format!(".{file_name}.{}.tmp", std::process::id()));
    let result = (|| {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&temporary)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&temporary, path)
    })();
    if let Err(e) = result {
        let _ = std::fs::remove_file(&temporary);
        return Err(io_error(path, e));
    }
    Ok(())
}

fn io_error(path: &Path, error: impl std::fmt::Display) -> StoreError {
    StoreError::Io {
        path: path.to_path_buf(),
        message: error.to_string(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "mcpmux-store-{name}-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn saves_privately_and_reads_back() {
        let dir = temp_dir("private");
        let path = dir.join("sub").join("tokens.json");
        let store = TokenStore::file(&path);
        store
            .update("s", "http://x/mcp", |entry| {
                entry.client = Some(Client {
                    client_id: "c".into(),
                    client_secret: None,
                    redirect_uri: "http://127.0.0.1:1/callback".into(),
                })
            })
            .unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let dir_mode = std::fs::metadata(path.parent().unwrap())
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(dir_mode, 0o700);
        let again = TokenStore::file(&path);
        let entry = again.get("s", "http://x/mcp").unwrap().unwrap();
        assert_eq!(entry.client.unwrap().client_id, "c");
        // Another URL under the same name is another server.
        assert!(again.get("s", "http://y/mcp").unwrap().is_none());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn refuses_a_file_others_can_read() {
        let dir = temp_dir("exposed");
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("tokens.json");
        std::fs::write(&path, r#"{"version":1,"servers":{}}"#).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let Err(error) = TokenStore::file(&path).get("s", "u") else {
            panic!("an exposed token file was read");
        };
        assert!(matches!(error, StoreError::Exposed { mode: 0o644, .. }));
        assert!(error.to_string().contains("chmod 600"), "{error}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn sees_changes_made_by_another_process() {
        let dir = temp_dir("reload");
        let path = dir.join("tokens.json");
        let hub = TokenStore::file(&path);
        assert!(hub.get("s", "u").unwrap().is_none());
        // `mcpmux auth login` in another terminal writes the same file.
        std::thread::sleep(std::time::Duration::from_millis(20));
        TokenStore::file(&path)
            .update("s", "u", |entry| entry.issuer = Some("i".into()))
            .unwrap();
        assert_eq!(
            hub.get("s", "u").unwrap().unwrap().issuer.as_deref(),
            Some("i")
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
