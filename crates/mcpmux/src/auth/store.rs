//! The token store: OAuth tokens and client registrations per server, in one JSON file only
//! the user can read, or in memory.
//!
//! The file is refused, not repaired, when its permissions let anyone else read it: a token
//! file that leaked once must be looked at by a person. Writes go to a private temporary file
//! of a unique name, created exclusively (so never through a symlink planted there), renamed
//! over the old one, so a crash never leaves half a file. Every read checks the file's
//! identity and modification time, so a `mcpmux auth login` in another terminal reaches a
//! running hub: at most once every [`RECHECK`] (a `stat` of the file on every request was a
//! syscall in nine of an HTTP upstream's tool call), and always under a refresh's lock or a
//! write's, where another hub's change must be seen at once.
//!
//! Several hubs share the file, in one process or many. Each change is a read-modify-write
//! under an advisory lock (`flock`, or `LockFileEx` on Windows, on `.tokens.json.lock` beside it), so no hub's write undoes
//! another's; a token refresh holds a second lock (`.tokens.json.refresh.lock`) from reading
//! the refresh token to saving its successor, so a rotating refresh token is never spent
//! twice.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use rmcp::transport::auth::{AuthorizationMetadata, StoredCredentials};
use serde::{Deserialize, Serialize};

use crate::platform::fs;
use crate::sync::lock;

/// The file's format version; a newer one is refused rather than overwritten.
const VERSION: u32 = 1;

/// How long a read trusts the file's last check: a change another process makes (a login, a
/// rotation by a refresh elsewhere) is seen by a plain read this much later at most.
pub(crate) const RECHECK: Duration = Duration::from_millis(100);

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
        /// What went wrong and what to do (the cause's words included).
        message: String,
        /// The I/O or JSON error, when there is one.
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
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
    /// [`RECHECK`], but for tests.
    recheck: Duration,
}

#[derive(Default)]
struct Cache {
    body: FileBody,
    /// The file's stamp when `body` was read; `None`: never read.
    read_at: Option<Option<Stamp>>,
    /// When the file's stamp was last taken.
    checked: Option<Instant>,
}

/// What tells one version of the file from another without reading it: every write renames a
/// new file into place, so the inode changes even when the clock's tick does not.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Stamp {
    modified: Option<SystemTime>,
    inode: u64,
    len: u64,
}

/// Held while a token refresh reads, spends and replaces a refresh token; dropping it lets the
/// next hub (in this process or another) refresh, and that one reads what this one saved.
pub(crate) struct RefreshLock {
    _file: File,
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
        let env = |name: &str| std::env::var(name).ok();
        let home = crate::platform::dirs::home_from_env();
        let config = crate::platform::dirs::config_home(
            crate::platform::dirs::Os::CURRENT,
            home.as_deref(),
            &env,
        )?;
        Some(config.join("mcpmux").join("tokens.json"))
    }

    fn new(path: Option<PathBuf>) -> Self {
        Self::rechecking(path, RECHECK)
    }

    fn rechecking(path: Option<PathBuf>, recheck: Duration) -> Self {
        Self {
            inner: Arc::new(Inner {
                path,
                cache: Mutex::new(Cache::default()),
                recheck,
            }),
        }
    }

    /// The file, if this store has one.
    pub fn path(&self) -> Option<&Path> {
        self.inner.path.as_deref()
    }

    /// The entry of `server` for `resource`, if there is one.
    pub(crate) fn get(&self, server: &str, resource: &str) -> Result<Option<Entry>, StoreError> {
        self.with_body(|body| Ok(entry_of(body, server, resource)))
    }

    /// [`TokenStore::get`], read from the file whatever the cache holds: what a refresh uses
    /// under its lock, where a write a clock tick ago by another process must be seen.
    pub(crate) fn get_fresh(
        &self,
        server: &str,
        resource: &str,
    ) -> Result<Option<Entry>, StoreError> {
        let mut cache = self.cache();
        if let Some(path) = &self.inner.path {
            reload(path, &mut cache)?;
        }
        Ok(entry_of(&cache.body, server, resource))
    }

    /// Waits for this store's refresh lock (blocking: call it off the async threads). `None`
    /// for a memory store, which no other hub shares.
    pub(crate) fn refresh_lock(&self) -> Result<Option<RefreshLock>, StoreError> {
        let Some(path) = &self.inner.path else {
            return Ok(None);
        };
        let lock_path = sibling(path, "refresh.lock");
        let file = open_lock(&lock_path)?;
        lock_exclusive(&file).map_err(|e| io_error(&lock_path, e))?;
        Ok(Some(RefreshLock { _file: file }))
    }

    /// Changes the entry of `server` for `resource` (a fresh one when it is for another URL),
    /// then saves.
    pub(crate) fn update(
        &self,
        server: &str,
        resource: &str,
        change: impl FnOnce(&mut Entry),
    ) -> Result<(), StoreError> {
        self.change(|body| {
            let entry = body.servers.entry(server.to_owned()).or_default();
            if entry.resource != resource {
                *entry = Entry {
                    resource: resource.to_owned(),
                    ..Entry::default()
                };
            }
            change(entry);
            true
        })
        .map(|_| ())
    }

    /// Forgets everything about `server`; true when there was something.
    pub fn remove(&self, server: &str) -> Result<bool, StoreError> {
        self.change(|body| body.servers.remove(server).is_some())
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

    fn cache(&self) -> std::sync::MutexGuard<'_, Cache> {
        lock(&self.inner.cache)
    }

    /// Runs `f` on the current body, re-reading the file first when it changed on disk
    /// (looked at once every `recheck`).
    fn with_body<T>(
        &self,
        f: impl FnOnce(&mut FileBody) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut cache = self.cache();
        if let Some(path) = &self.inner.path {
            let now = Instant::now();
            let trusted = cache.read_at.is_some()
                && cache
                    .checked
                    .is_some_and(|checked| now.duration_since(checked) < self.inner.recheck);
            if !trusted {
                let stamp = stamp(path)?;
                if cache.read_at != Some(stamp) {
                    cache.body = read(path)?;
                    cache.read_at = Some(stamp);
                }
                cache.checked = Some(now);
            }
        }
        f(&mut cache.body)
    }

    /// Applies `change` to the body as it is on disk now and saves it when `change` says it
    /// changed something, all under the file's lock: another hub's change in between is
    /// neither lost nor overwritten.
    fn change(&self, change: impl FnOnce(&mut FileBody) -> bool) -> Result<bool, StoreError> {
        let Some(path) = &self.inner.path else {
            return Ok(change(&mut self.cache().body));
        };
        let lock_path = sibling(path, "lock");
        let lock = open_lock(&lock_path)?;
        lock_exclusive(&lock).map_err(|e| io_error(&lock_path, e))?;
        let mut cache = self.cache();
        reload(path, &mut cache)?;
        if !change(&mut cache.body) {
            return Ok(false);
        }
        cache.body.version = VERSION;
        let text = serde_json::to_string_pretty(&cache.body).map_err(|e| io_error(path, e))?;
        write_private(path, text.as_bytes())?;
        cache.read_at = Some(stamp(path)?);
        cache.checked = Some(Instant::now());
        drop(lock);
        Ok(true)
    }
}

fn entry_of(body: &FileBody, server: &str, resource: &str) -> Option<Entry> {
    body.servers
        .get(server)
        .filter(|entry| entry.resource == resource)
        .cloned()
}

/// Reads the file into `cache`, whatever it held.
fn reload(path: &Path, cache: &mut Cache) -> Result<(), StoreError> {
    let stamp = stamp(path)?;
    cache.body = read(path)?;
    cache.read_at = Some(stamp);
    cache.checked = Some(Instant::now());
    Ok(())
}

/// `.tokens.json.{what}` beside the token file.
fn sibling(path: &Path, what: &str) -> PathBuf {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_else(|| "tokens.json".into());
    dir.join(format!(".{name}.{what}"))
}

/// Opens (creating it 0600, its folder 0700) a lock file; a symlink there is refused.
fn open_lock(path: &Path) -> Result<File, StoreError> {
    private_dir(path)?;
    fs::private_file(
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false),
    )
    .open(path)
    .map_err(|e| io_error(path, e))
}

/// Waits for an exclusive lock on `file` (`flock` on Unix, `LockFileEx` on Windows, through
/// fs4), released when it is closed. (`File::lock` does the same from Rust 1.89, above this
/// crate's MSRV.) A signal interrupting the wait is not a failure: it waits again.
fn lock_exclusive(file: &File) -> std::io::Result<()> {
    loop {
        match fs4::FileExt::lock(file) {
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
            done => return done,
        }
    }
}

/// Makes the folder of `path` (0700) when it is missing.
fn private_dir(path: &Path) -> Result<(), StoreError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    if !dir.as_os_str().is_empty() && !dir.exists() {
        fs::dir_mode(std::fs::DirBuilder::new().recursive(true), 0o700)
            .create(dir)
            .map_err(|e| io_error(dir, e))?;
    }
    Ok(())
}

/// The file's stamp, `None` when it does not exist; refuses an exposed file.
fn stamp(path: &Path) -> Result<Option<Stamp>, StoreError> {
    match std::fs::metadata(path) {
        Ok(meta) => {
            // Windows has no mode bits to check: see `platform::fs`.
            if let Some(mode) = fs::unix_mode(&meta).map(|mode| mode.bits & 0o777)
                && mode & 0o077 != 0
            {
                return Err(StoreError::Exposed {
                    path: path.to_path_buf(),
                    mode,
                });
            }
            Ok(Some(Stamp {
                modified: meta.modified().ok(),
                inode: fs::file_id(&meta),
                len: meta.len(),
            }))
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
        source: Some(Box::new(e)),
    })?;
    if body.version > VERSION {
        return Err(StoreError::Io {
            path: path.to_path_buf(),
            message: format!(
                "it was written by a newer mcpmux (format {}); upgrade mcpmux",
                body.version
            ),
            source: None,
        });
    }
    Ok(body)
}

/// Writes `bytes` to `path` through a new 0600 temporary file in the same folder (made 0700).
fn write_private(path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    use std::io::Write;
    private_dir(path)?;
    let (temporary, mut file) = create_temporary(path)?;
    let result = (|| {
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

/// A temporary file beside `path` of a name no other writer uses (process, counter, clock),
/// created exclusively: `O_EXCL` fails on anything already there, a symlink included.
fn create_temporary(path: &Path) -> Result<(PathBuf, File), StoreError> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let mut last_error = None;
    for _ in 0..8 {
        let nanos = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or_default();
        let unique = format!(
            "{}-{}-{nanos:08x}.tmp",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let temporary = sibling(path, &unique);
        match fs::private_file(std::fs::OpenOptions::new().write(true).create_new(true))
            .open(&temporary)
        {
            Ok(file) => return Ok((temporary, file)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last_error = Some(e),
            Err(e) => return Err(io_error(&temporary, e)),
        }
    }
    let words = last_error
        .as_ref()
        .map_or_else(|| "no free name".to_owned(), ToString::to_string);
    Err(StoreError::Io {
        path: path.to_path_buf(),
        message: format!("cannot create a temporary file: {words}"),
        source: last_error.map(|e| Box::new(e) as _),
    })
}

fn io_error(path: &Path, error: impl std::error::Error + Send + Sync + 'static) -> StoreError {
    StoreError::Io {
        path: path.to_path_buf(),
        message: error.to_string(),
        source: Some(Box::new(error)),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    #[cfg(unix)]
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

    #[cfg(unix)]
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

    #[cfg(unix)]
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

    #[cfg(unix)]
    #[test]
    fn an_unreadable_or_foreign_token_file_keeps_its_cause_under_the_same_words() {
        let dir = temp_dir("causes");
        std::fs::create_dir_all(&dir).unwrap();
        // A private folder where the file should be: reading it is an I/O error.
        let folder = dir.join("folder.json");
        std::fs::create_dir(&folder).unwrap();
        std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(0o700)).unwrap();
        let Err(error) = TokenStore::file(&folder).get("s", "u") else {
            panic!("a folder was read as a token file");
        };
        let cause = std::error::Error::source(&error).expect("a cause");
        let io = cause
            .downcast_ref::<std::io::Error>()
            .expect("an io::Error");
        assert!(error.to_string().ends_with(&io.to_string()), "{error}");
        let path = dir.join("tokens.json");
        std::fs::write(&path, "{").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        let Err(error) = TokenStore::file(&path).get("s", "u") else {
            panic!("a file of bad JSON was read");
        };
        let cause = std::error::Error::source(&error).expect("a cause");
        assert!(
            cause.downcast_ref::<serde_json::Error>().is_some(),
            "{cause}"
        );
        assert!(error.to_string().contains("not a token file"), "{error}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn hubs_writing_one_file_at_once_lose_no_change() {
        let dir = temp_dir("concurrent");
        let path = dir.join("tokens.json");
        let writers: Vec<_> = (0..8)
            .map(|writer| {
                // A store each, as separate hubs (or processes) have.
                let store = TokenStore::file(&path);
                std::thread::spawn(move || {
                    for round in 0..20 {
                        store
                            .update(&format!("s{writer}"), "u", |entry| {
                                entry.issuer = Some(format!("round {round}"))
                            })
                            .unwrap();
                    }
                })
            })
            .collect();
        for writer in writers {
            writer.join().unwrap();
        }
        let store = TokenStore::file(&path);
        for writer in 0..8 {
            let entry = store.get(&format!("s{writer}"), "u").unwrap();
            assert_eq!(entry.unwrap().issuer.as_deref(), Some("round 19"));
        }
        // No temporary file is left behind.
        let names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(names.iter().all(|n| !n.ends_with(".tmp")), "{names:?}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// The last look at the file taken longer ago than any `recheck`.
    fn age_the_check(store: &TokenStore) {
        store.cache().checked = None;
    }

    #[test]
    fn sees_changes_made_by_another_process() {
        let dir = temp_dir("reload");
        let path = dir.join("tokens.json");
        let hub = TokenStore::rechecking(Some(path.clone()), Duration::ZERO);
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

    #[test]
    fn a_file_rotated_by_another_process_is_seen_once_the_check_is_due_and_under_a_lock_at_once() {
        let dir = temp_dir("rotated");
        let path = dir.join("tokens.json");
        let other = TokenStore::file(&path);
        other
            .update("s", "u", |entry| entry.issuer = Some("first".into()))
            .unwrap();
        let hub = TokenStore::rechecking(Some(path.clone()), Duration::from_secs(3600));
        let issuer = |store: &TokenStore| store.get("s", "u").unwrap().unwrap().issuer;
        assert_eq!(issuer(&hub).as_deref(), Some("first"));
        // Another process's refresh renames a new file into place (a new inode).
        other
            .update("s", "u", |entry| entry.issuer = Some("rotated".into()))
            .unwrap();
        // Within the window the file is not looked at: the last reading stands.
        assert_eq!(issuer(&hub).as_deref(), Some("first"));
        // A refresh reads the file under its lock whatever the window says.
        let fresh = hub.get_fresh("s", "u").unwrap().unwrap();
        assert_eq!(fresh.issuer.as_deref(), Some("rotated"));
        assert_eq!(issuer(&hub).as_deref(), Some("rotated"));
        other
            .update("s", "u", |entry| entry.issuer = Some("again".into()))
            .unwrap();
        // A write of the hub's own reads the file under the write lock: nothing of the
        // other's is lost, and the hub's reads see both.
        hub.update("t", "u", |entry| entry.issuer = Some("mine".into()))
            .unwrap();
        assert_eq!(issuer(&hub).as_deref(), Some("again"));
        other
            .update("s", "u", |entry| entry.issuer = Some("last".into()))
            .unwrap();
        assert_eq!(issuer(&hub).as_deref(), Some("again"));
        // Once the check is due, the rotation is seen.
        age_the_check(&hub);
        assert_eq!(issuer(&hub).as_deref(), Some("last"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_missing_file_is_looked_for_once_a_window_not_once_a_read() {
        let dir = temp_dir("missing");
        let path = dir.join("tokens.json");
        let hub = TokenStore::rechecking(Some(path.clone()), Duration::from_secs(3600));
        assert!(hub.get("s", "u").unwrap().is_none());
        TokenStore::file(&path)
            .update("s", "u", |entry| entry.issuer = Some("i".into()))
            .unwrap();
        assert!(
            hub.get("s", "u").unwrap().is_none(),
            "looked again within the window"
        );
        age_the_check(&hub);
        assert_eq!(
            hub.get("s", "u").unwrap().unwrap().issuer.as_deref(),
            Some("i")
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
