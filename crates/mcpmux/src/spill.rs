//! The spill folder: where the full output of a cut result goes, one private file each, and
//! how that folder is kept from growing: a hub removes the files it wrote when it shuts down
//! (unless told to keep them), files older than a day are removed when a hub starts, and the
//! folder's total size is capped, oldest files first. Knows nothing of hubs or servers.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use crate::{defaults, platform};

/// Where full outputs of truncated results go: one file per result, readable only by us.
#[derive(Debug, Clone)]
pub struct Spill {
    dir: PathBuf,
    max_total_bytes: u64,
    max_age: Duration,
    /// The files written through this spill and its clones, for [`Spill::remove_written`].
    written: Arc<Mutex<Vec<PathBuf>>>,
}

impl PartialEq for Spill {
    fn eq(&self, other: &Self) -> bool {
        self.dir == other.dir
            && self.max_total_bytes == other.max_total_bytes
            && self.max_age == other.max_age
    }
}

impl Eq for Spill {}

impl Default for Spill {
    fn default() -> Self {
        Self::in_temp_dir()
    }
}

/// Distinguishes spill files written in the same process and the same second.
static SPILL_COUNTER: AtomicU64 = AtomicU64::new(0);

impl Spill {
    /// Spill into `dir` (created 0700 when missing).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Spill {
            dir: dir.into(),
            max_total_bytes: defaults::SPILL_MAX_TOTAL_BYTES,
            max_age: defaults::SPILL_MAX_AGE,
            written: Arc::default(),
        }
    }

    /// Spill into `$TMPDIR/mcpmux-spill`.
    pub fn in_temp_dir() -> Self {
        Self::new(std::env::temp_dir().join("mcpmux-spill"))
    }

    /// Builder-style: the most bytes the folder may hold (oldest files are removed beyond it;
    /// a single output larger than this is not spilled).
    pub fn with_max_total_bytes(mut self, bytes: u64) -> Self {
        self.max_total_bytes = bytes;
        self
    }

    /// Builder-style: how old a file may get before [`Spill::remove_stale`] removes it.
    pub fn with_max_age(mut self, age: Duration) -> Self {
        self.max_age = age;
        self
    }

    /// The directory spilled files go to.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The same folder and limits with a record of its own of the files written (a hub takes
    /// one, so it removes its own files and not those of another hub given the same options).
    pub(crate) fn detached(&self) -> Self {
        Spill {
            written: Arc::default(),
            ..self.clone()
        }
    }

    /// Writes `text` to a new file named after `source`; the file is created 0600 and never
    /// replaces an existing one. Refuses a directory that others can write to or that we do
    /// not own, and an output larger than the folder's cap. Then removes the oldest files
    /// while the folder holds more than its cap.
    pub fn write(&self, source: &str, text: &str) -> io::Result<PathBuf> {
        if text.len() as u64 > self.max_total_bytes {
            return Err(io::Error::other(format!(
                "{} bytes is more than the spill folder may hold ({} bytes)",
                text.len(),
                self.max_total_bytes
            )));
        }
        self.prepare_dir()?;
        let stem: String = source
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .take(80)
            .collect();
        let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%S");
        let n = SPILL_COUNTER.fetch_add(1, Ordering::Relaxed);
        let path = self
            .dir
            .join(format!("{stem}-{stamp}-{}-{n}.txt", std::process::id()));
        let mut options = fs::OpenOptions::new();
        options.write(true).create_new(true);
        let mut file = platform::fs::private_file(&mut options).open(&path)?;
        self.record(path.clone());
        file.write_all(text.as_bytes())?;
        file.flush()?;
        drop(file);
        if let Err(e) = self.enforce_cap(&path) {
            tracing::warn!(dir = %self.dir.display(), "could not keep the spill folder under its cap: {e}");
        }
        Ok(path)
    }

    fn record(&self, path: PathBuf) {
        crate::sync::lock(&self.written).push(path);
    }

    /// Removes the files written through this spill (and its clones) so far. Returns how many
    /// were removed; files already gone are not counted.
    pub fn remove_written(&self) -> usize {
        let paths = std::mem::take(&mut *crate::sync::lock(&self.written));
        let mut removed = 0;
        for path in paths {
            match fs::remove_file(&path) {
                Ok(()) => removed += 1,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => {
                    tracing::warn!(file = %path.display(), "could not remove a spill file: {e}")
                }
            }
        }
        removed
    }

    /// Removes the folder's files older than the maximum age (a day by default). A folder
    /// that does not exist yet has nothing to remove. Returns how many were removed.
    pub fn remove_stale(&self) -> io::Result<usize> {
        let now = SystemTime::now();
        let mut removed = 0;
        for (path, modified, _) in self.files()? {
            let age = now.duration_since(modified).unwrap_or_default();
            if age > self.max_age && remove_quietly(&path) {
                removed += 1;
            }
        }
        Ok(removed)
    }

    /// Removes the oldest files (never `keep`, the one just written) while the folder holds
    /// more than its cap.
    fn enforce_cap(&self, keep: &Path) -> io::Result<()> {
        let mut files = self.files()?;
        let mut total: u64 = files.iter().map(|(_, _, size)| size).sum();
        if total <= self.max_total_bytes {
            return Ok(());
        }
        files.sort_by_key(|(_, modified, _)| *modified);
        for (path, _, size) in files {
            if total <= self.max_total_bytes {
                break;
            }
            if path != keep && remove_quietly(&path) {
                total = total.saturating_sub(size);
            }
        }
        Ok(())
    }

    /// The regular files of the folder with their modification time and size (links and
    /// folders inside are left alone). Empty when the folder does not exist.
    fn files(&self) -> io::Result<Vec<(PathBuf, SystemTime, u64)>> {
        let entries = match fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        let mut files = Vec::new();
        for entry in entries.flatten() {
            let Ok(meta) = entry.metadata() else { continue };
            if meta.is_file() {
                let modified = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
                files.push((entry.path(), modified, meta.len()));
            }
        }
        Ok(files)
    }

    fn prepare_dir(&self) -> io::Result<()> {
        platform::fs::dir_mode(fs::DirBuilder::new().recursive(true), 0o700).create(&self.dir)?;
        let meta = fs::symlink_metadata(&self.dir)?;
        // Windows has no owner id or mode to check (`platform::fs`): a folder is enough there.
        let others = match (platform::fs::unix_mode(&meta), platform::fs::my_uid()) {
            (Some(mode), Some(me)) => mode.uid != me || mode.bits & 0o022 != 0,
            _ => false,
        };
        if !meta.is_dir() || others {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!(
                    "{} is not a private directory of this user",
                    self.dir.display()
                ),
            ));
        }
        Ok(())
    }
}

/// Removes `path`; a file another process removed first is not an error worth a warning.
fn remove_quietly(path: &Path) -> bool {
    match fs::remove_file(path) {
        Ok(()) => true,
        Err(e) if e.kind() == io::ErrorKind::NotFound => false,
        Err(e) => {
            tracing::warn!(file = %path.display(), "could not remove a spill file: {e}");
            false
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn set_age(path: &Path, age: Duration) {
        let file = fs::File::options().write(true).open(path).unwrap();
        file.set_modified(SystemTime::now() - age).unwrap();
    }

    #[test]
    fn the_oldest_files_go_first_when_the_folder_is_over_its_cap() {
        let dir = tempfile::tempdir().unwrap();
        let spill = Spill::new(dir.path().join("s")).with_max_total_bytes(250);
        let a = spill.write("a", &"a".repeat(100)).unwrap();
        let b = spill.write("b", &"b".repeat(100)).unwrap();
        set_age(&a, Duration::from_secs(60));
        set_age(&b, Duration::from_secs(30));
        let c = spill.write("c", &"c".repeat(100)).unwrap();
        assert!(!a.exists(), "the oldest is removed");
        assert!(b.exists() && c.exists());
        let err = spill.write("d", &"d".repeat(300)).unwrap_err();
        assert!(
            err.to_string()
                .contains("more than the spill folder may hold"),
            "{err}"
        );
    }

    #[test]
    fn stale_files_are_removed_and_fresh_ones_kept() {
        let dir = tempfile::tempdir().unwrap();
        let spill = Spill::new(dir.path().join("s"));
        let old = spill.write("old", "x").unwrap();
        let new = spill.write("new", "y").unwrap();
        set_age(&old, Duration::from_secs(2 * 24 * 3600));
        assert_eq!(spill.remove_stale().unwrap(), 1);
        assert!(!old.exists() && new.exists());
        assert_eq!(
            Spill::new(dir.path().join("none")).remove_stale().unwrap(),
            0
        );
    }

    #[test]
    fn only_the_files_of_this_spill_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let ours = Spill::new(dir.path());
        let theirs = ours.detached();
        let a = ours.write("a", "x").unwrap();
        let b = theirs.write("b", "y").unwrap();
        assert_eq!(ours.clone().remove_written(), 1);
        assert!(!a.exists() && b.exists());
        assert_eq!(ours.remove_written(), 0);
    }
}
