//! Tool lists kept on disk, one file per server identity, so that a listing needs no server
//! start: a warm `mcpmux tools` answers from here, and a lazy server's tools are listed before
//! it runs. A session's own list always replaces the cached one (and is written back unless the
//! file already holds it), so an entry written by another version of a server is not used once
//! that server has answered.
//!
//! The identity is the transport, the command and its arguments or the URL, the working
//! folder, and a hash of the env and headers: the file name is a hash of all of it, and the
//! file holds no command, URL, env or header value. A cache file is someone else's bytes too
//! (a server wrote most of it): it is read with a size bound, and a bad one is ignored.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::catalog::ServerTool;
use crate::config::{ServerSpec, TransportSpec};
use crate::defaults;

/// Bumped when the file's shape changes: an entry of another format is ignored.
const FORMAT: u32 = 1;

/// Where tool lists are kept, and how old an entry may be to be used.
#[derive(Clone, Debug)]
pub(crate) struct ToolCache {
    dir: Option<PathBuf>,
    max_age: Duration,
}

/// One server's cached list.
#[derive(Debug, Clone)]
pub(crate) struct Cached {
    pub tools: Arc<Vec<ServerTool>>,
    /// When the server listed them.
    pub listed_at: SystemTime,
    /// The server's own version (`serverInfo.version`) when it listed them.
    pub server_version: Option<String>,
}

#[derive(Serialize, Deserialize)]
struct Entry {
    format: u32,
    /// Seconds since the Unix epoch.
    listed_at: u64,
    #[serde(default)]
    server_version: Option<String>,
    tools: Vec<Value>,
}

impl ToolCache {
    /// A cache in `dir` (`None`: no cache) whose entries are used up to `max_age` old.
    pub(crate) fn new(dir: Option<PathBuf>, max_age: Duration) -> Self {
        Self { dir, max_age }
    }

    /// The default folder: `$XDG_CACHE_HOME/mcpmux/tools` or `~/.cache/mcpmux/tools`
    /// (`%LOCALAPPDATA%\mcpmux\tools` on Windows).
    pub(crate) fn default_dir() -> Option<PathBuf> {
        let base = crate::platform::dirs::cache_home_from_env()?;
        Some(base.join("mcpmux").join("tools"))
    }

    /// The cached list of `spec`'s server, when there is one young enough.
    pub(crate) fn load(&self, spec: &ServerSpec) -> Option<Cached> {
        let path = self.path(spec)?;
        let bytes = read_bounded(&path)?;
        let entry: Entry = match serde_json::from_slice(&bytes) {
            Ok(entry) => entry,
            Err(e) => {
                tracing::debug!(server = %spec.name, path = %path.display(), "ignoring a corrupt tool cache entry: {e}");
                return None;
            }
        };
        if entry.format != FORMAT {
            return None;
        }
        let listed_at = UNIX_EPOCH + Duration::from_secs(entry.listed_at);
        let age = SystemTime::now()
            .duration_since(listed_at)
            .unwrap_or_default();
        if age > self.max_age {
            tracing::debug!(server = %spec.name, ?age, "tool cache entry too old; not used");
            return None;
        }
        let mut tools = Vec::with_capacity(entry.tools.len().min(defaults::MAX_CACHED_TOOLS));
        for value in entry.tools.into_iter().take(defaults::MAX_CACHED_TOOLS) {
            match ServerTool::from_json(value) {
                Some(tool)
                    if !tools
                        .iter()
                        .any(|t: &ServerTool| t.raw_name == tool.raw_name) =>
                {
                    tools.push(tool)
                }
                _ => {
                    tracing::debug!(server = %spec.name, "tool cache entry holds a bad or repeated tool; not used");
                    return None;
                }
            }
        }
        Some(Cached {
            tools: Arc::new(tools),
            listed_at,
            server_version: entry.server_version,
        })
    }

    /// Keeps `tools` as `spec`'s server listed them now. A failure to write is logged and
    /// otherwise ignored: the cache only saves time.
    pub(crate) fn store(
        &self,
        spec: &ServerSpec,
        server_version: Option<&str>,
        tools: &[ServerTool],
    ) {
        let Some(path) = self.path(spec) else { return };
        if tools.len() > defaults::MAX_CACHED_TOOLS {
            tracing::debug!(server = %spec.name, tools = tools.len(), "too many tools to cache");
            return;
        }
        let entry = Entry {
            format: FORMAT,
            listed_at: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or_default(),
            server_version: server_version.map(str::to_owned),
            tools: tools.iter().map(ServerTool::to_json).collect(),
        };
        if self.holds(&path, &entry) {
            return;
        }
        let bytes = match serde_json::to_vec(&entry) {
            Ok(bytes) if bytes.len() as u64 <= defaults::MAX_TOOL_CACHE_BYTES => bytes,
            Ok(_) => {
                tracing::debug!(server = %spec.name, "tool list too large to cache");
                return;
            }
            Err(e) => {
                tracing::debug!(server = %spec.name, "cannot encode the tool list: {e}");
                return;
            }
        };
        // Write-then-rename in a folder only the user can enter: two processes never see a
        // torn file, and tool descriptions (which may say what a private server does) stay
        // private.
        if let Err(e) = crate::config::write_cache(&path, &bytes, 0o600, 0o700) {
            tracing::debug!(server = %spec.name, path = %path.display(), "cannot write the tool cache: {e}");
        }
    }

    /// Whether the file at `path` already holds `entry`'s list, written less than half the
    /// maximum age before it. Then it is not written again: most starts list what the last
    /// one did, and the write and rename (0.2-0.4 ms, more when the disk is busy) ran before
    /// a one-shot call went out on a one-thread runtime. The older `listed_at` kept only makes
    /// the entry expire sooner, never later than the list was last seen.
    fn holds(&self, path: &Path, entry: &Entry) -> bool {
        let Some(bytes) = read_bounded(path) else {
            return false;
        };
        let Ok(old) = serde_json::from_slice::<Entry>(&bytes) else {
            return false;
        };
        old.format == entry.format
            && old.server_version == entry.server_version
            && old.tools == entry.tools
            && entry.listed_at.saturating_sub(old.listed_at) < self.max_age.as_secs() / 2
            && old.listed_at <= entry.listed_at
    }

    /// The file of `spec`'s server; none without a folder, or for an in-process server
    /// (it starts at once, and its label says nothing of its version).
    fn path(&self, spec: &ServerSpec) -> Option<PathBuf> {
        let dir = self.dir.as_ref()?;
        if matches!(spec.transport, TransportSpec::InProcess(_)) {
            return None;
        }
        Some(dir.join(format!("{}.json", identity(spec))))
    }
}

/// The hash naming a server's cache file: what decides which server answers, never a value
/// of its env or headers in the clear.
pub(crate) fn identity(spec: &ServerSpec) -> String {
    let mut hash = Sha256::new();
    let mut field = |part: &[u8]| {
        hash.update((part.len() as u64).to_le_bytes());
        hash.update(part);
    };
    field(spec.transport.signature().as_bytes());
    let map_hash = |map: &std::collections::BTreeMap<String, String>| {
        let mut h = Sha256::new();
        for (k, v) in map {
            h.update((k.len() as u64).to_le_bytes());
            h.update(k.as_bytes());
            h.update((v.len() as u64).to_le_bytes());
            h.update(v.as_bytes());
        }
        h.finalize()
    };
    match &spec.transport {
        TransportSpec::Stdio { env, cwd, .. } => {
            field(&map_hash(env));
            let cwd = cwd
                .as_deref()
                .map(Path::to_string_lossy)
                .unwrap_or_default();
            field(cwd.as_bytes());
        }
        TransportSpec::Http { headers, .. }
        | TransportSpec::Sse { headers, .. }
        | TransportSpec::Ws { headers, .. } => field(&map_hash(headers)),
        TransportSpec::InProcess(_) => {}
    }
    hash.finalize()
        .iter()
        .take(16)
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The file's bytes, or `None` when absent, unreadable or larger than the bound.
fn read_bounded(path: &Path) -> Option<Vec<u8>> {
    use std::io::Read;
    let file = std::fs::File::open(path).ok()?;
    let mut bytes = Vec::new();
    let read = file
        .take(defaults::MAX_TOOL_CACHE_BYTES + 1)
        .read_to_end(&mut bytes);
    match read {
        Ok(n) if n as u64 <= defaults::MAX_TOOL_CACHE_BYTES => Some(bytes),
        Ok(_) => {
            tracing::debug!(path = %path.display(), "tool cache entry too large; not used");
            None
        }
        Err(e) => {
            tracing::debug!(path = %path.display(), "cannot read the tool cache entry: {e}");
            None
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn tool(name: &str) -> ServerTool {
        ServerTool::from_json(serde_json::json!({
            "name": name,
            "description": "d",
            "inputSchema": {"type": "object", "properties": {"x": {"type": "string"}}},
            "annotations": {"readOnlyHint": true}
        }))
        .unwrap()
    }

    #[test]
    fn a_stored_list_comes_back_with_its_version_and_no_secret_in_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let cache = ToolCache::new(Some(dir.path().to_path_buf()), Duration::from_secs(60));
        let spec = ServerSpec::stdio("s", "uvx", ["mcp-server-time"]).with_env("TOKEN", "hunter2");
        cache.store(&spec, Some("1.2.3"), &[tool("a"), tool("b")]);

        let cached = cache.load(&spec).unwrap();
        assert_eq!(*cached.tools, vec![tool("a"), tool("b")]);
        assert_eq!(cached.server_version.as_deref(), Some("1.2.3"));
        for file in std::fs::read_dir(dir.path()).unwrap() {
            let path = file.unwrap().path();
            let text = std::fs::read_to_string(&path).unwrap();
            assert!(!text.contains("hunter2") && !text.contains("uvx"), "{text}");
            assert!(!path.to_string_lossy().contains("uvx"));
        }
    }

    #[test]
    fn another_env_or_argument_is_another_server() {
        let dir = tempfile::tempdir().unwrap();
        let cache = ToolCache::new(Some(dir.path().to_path_buf()), Duration::from_secs(60));
        let spec = ServerSpec::stdio("s", "srv", ["--a"]).with_env("K", "1");
        cache.store(&spec, None, &[tool("a")]);
        assert!(
            cache
                .load(&ServerSpec::stdio("s", "srv", ["--a"]).with_env("K", "2"))
                .is_none()
        );
        assert!(
            cache
                .load(&ServerSpec::stdio("s", "srv", ["--b"]).with_env("K", "1"))
                .is_none()
        );
        // The name is not part of the identity: a renamed server keeps its list.
        assert!(
            cache
                .load(&ServerSpec::stdio("t", "srv", ["--a"]).with_env("K", "1"))
                .is_some()
        );
    }

    #[test]
    fn an_old_corrupt_or_oversized_entry_is_not_used() {
        let dir = tempfile::tempdir().unwrap();
        let spec = ServerSpec::http("h", "http://127.0.0.1:1/mcp");
        let cache = ToolCache::new(Some(dir.path().to_path_buf()), Duration::from_secs(60));
        cache.store(&spec, None, &[tool("a")]);
        assert!(cache.load(&spec).is_some());
        let path = cache.path(&spec).unwrap();
        let day_old = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs()
            - 86_400;
        let old = format!(r#"{{"format":1,"listed_at":{day_old},"tools":[{{"name":"a"}}]}}"#);
        std::fs::write(&path, old).unwrap();
        assert!(cache.load(&spec).is_none());
        std::fs::write(&path, "{\"format\":1,\"listed_at\":").unwrap();
        assert!(cache.load(&spec).is_none());
        let huge = vec![b' '; defaults::MAX_TOOL_CACHE_BYTES as usize + 10];
        std::fs::write(&path, huge).unwrap();
        assert!(cache.load(&spec).is_none());
    }

    #[cfg(unix)]
    #[test]
    fn the_same_list_is_not_written_again_until_half_its_age() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let cache = ToolCache::new(Some(dir.path().to_path_buf()), Duration::from_secs(600));
        let spec = ServerSpec::stdio("s", "srv", Vec::<String>::new());
        let path = cache.path(&spec).unwrap();
        // Each write is a new file renamed over the old one: a new inode.
        let inode = || std::fs::metadata(&path).unwrap().ino();
        cache.store(&spec, Some("1"), &[tool("a")]);
        let first = inode();
        cache.store(&spec, Some("1"), &[tool("a")]);
        assert_eq!(inode(), first, "the same list was written again");
        cache.store(&spec, Some("1"), &[tool("a"), tool("b")]);
        let second = inode();
        assert_ne!(second, first, "a changed list was not written");
        assert_eq!(cache.load(&spec).unwrap().tools.len(), 2);
        cache.store(&spec, Some("2"), &[tool("a"), tool("b")]);
        assert_ne!(inode(), second, "a new server version was not written");
        // An entry written more than half the maximum age ago is written again, so its age
        // keeps saying when the list was last seen.
        let third = inode();
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let mut entry: Entry = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        entry.listed_at = now - 301;
        std::fs::write(&path, serde_json::to_vec(&entry).unwrap()).unwrap();
        let aged = inode();
        assert_eq!(aged, third);
        cache.store(&spec, Some("2"), &[tool("a"), tool("b")]);
        assert_ne!(
            inode(),
            aged,
            "a list older than half the maximum age was not rewritten"
        );
        let listed_at = cache.load(&spec).unwrap().listed_at;
        assert!(listed_at >= UNIX_EPOCH + Duration::from_secs(now));
    }

    #[cfg(unix)]
    #[test]
    fn the_cache_is_private_to_the_user() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("tools");
        let cache = ToolCache::new(Some(root.clone()), Duration::from_secs(60));
        let spec = ServerSpec::stdio("s", "srv", Vec::<String>::new());
        cache.store(&spec, None, &[tool("a")]);
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&root), 0o700);
        assert_eq!(mode(&cache.path(&spec).unwrap()), 0o600);
    }
}
