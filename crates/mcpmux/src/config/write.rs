//! Writing a file the person keeps (their config, `.mcp.json`, the secrets file) so that a
//! crash, a full disk or a second writer never leaves half of it: the new text goes to a temp
//! file beside the target, is synced, takes the old file's permissions, then is renamed over.
//!
//! A leaf of `config/`: knows nothing of what the bytes mean.

use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use crate::platform::fs;

/// The largest file `mcpmux add`, `remove` and `secret` will read to edit: far above any
/// hand-kept config (Claude's `~/.claude.json` is the biggest seen, a few hundred KiB), low
/// enough that a planted huge file cannot exhaust memory.
pub(crate) const MAX_EDITED_FILE: u64 = 16 * 1024 * 1024;

/// The file's text, or `None` when it does not exist; refused past [`MAX_EDITED_FILE`].
pub(crate) fn read_bounded(path: &Path) -> io::Result<Option<String>> {
    read_capped(path, MAX_EDITED_FILE)
}

/// The text of a regular file of at most `cap` bytes, or `None` when it does not exist. A FIFO
/// or device is refused before it is opened, so reading never blocks on one.
pub(crate) fn read_capped(path: &Path, cap: u64) -> io::Result<Option<String>> {
    match std::fs::metadata(path) {
        Ok(meta) if !meta.is_file() => {
            return Err(io::Error::other(
                "it is not a regular file (a folder, pipe or device)",
            ));
        }
        Ok(_) => {}
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(error),
    }
    let file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(error),
    };
    let mut bytes = Vec::new();
    file.take(cap + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > cap {
        return Err(io::Error::other(format!(
            "it is larger than {} KiB, far more than a config file holds: check what it is",
            cap / 1024
        )));
    }
    let text = String::from_utf8(bytes)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "it is not UTF-8 text"))?;
    Ok(Some(
        text.strip_prefix('\u{feff}').unwrap_or(&text).to_owned(),
    ))
}

/// The file a write to `path` lands in: a symlinked config (dotfiles kept in a repository)
/// is written through, not replaced by a plain file.
pub(crate) fn resolved(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// Replaces `path` with `bytes` atomically, on the disk when this returns. An existing file
/// keeps its permissions; a new one gets `new_mode`, and missing folders are created with
/// `dir_mode`.
pub(crate) fn write_atomic(
    path: &Path,
    bytes: &[u8],
    new_mode: u32,
    dir_mode: u32,
) -> io::Result<()> {
    replace(path, bytes, new_mode, dir_mode, true)
}

/// [`write_atomic`] for a cache: readers still never see a torn file, but the disk is not
/// waited for. A cache lost in a crash costs one refill (a bad entry is ignored), while the
/// fsync cost every `mcpmux call` its tool-list write.
pub(crate) fn write_cache(
    path: &Path,
    bytes: &[u8],
    new_mode: u32,
    dir_mode: u32,
) -> io::Result<()> {
    replace(path, bytes, new_mode, dir_mode, false)
}

fn replace(
    path: &Path,
    bytes: &[u8],
    new_mode: u32,
    dir_mode: u32,
    durable: bool,
) -> io::Result<()> {
    let path = resolved(path);
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if !dir.exists() {
        fs::dir_mode(std::fs::DirBuilder::new().recursive(true), dir_mode).create(&dir)?;
    }
    let mode = match std::fs::metadata(&path) {
        // Windows has no mode to keep: the new file takes the folder's ACL.
        Ok(meta) => fs::unix_mode(&meta).map_or(new_mode, |mode| mode.bits),
        Err(error) if error.kind() == io::ErrorKind::NotFound => new_mode,
        Err(error) => return Err(error),
    };
    // tempfile creates the file 0600 with a random name (O_EXCL): no other user can open it
    // before its permissions are set, and two writers never share one.
    let mut temporary = tempfile::Builder::new()
        .prefix(".mcpmux-")
        .suffix(".tmp")
        .tempfile_in(&dir)?;
    temporary.write_all(bytes)?;
    fs::set_file_mode(temporary.as_file(), mode)?;
    if durable {
        temporary.as_file().sync_all()?;
    }
    temporary.persist(&path).map_err(|error| error.error)?;
    Ok(())
}

#[cfg(all(test, unix))]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn an_existing_file_keeps_its_mode_and_a_new_one_gets_the_given_mode() {
        let dir = tempfile::tempdir().unwrap();
        let old = dir.path().join("old.toml");
        std::fs::write(&old, "a").unwrap();
        std::fs::set_permissions(&old, std::fs::Permissions::from_mode(0o640)).unwrap();
        write_atomic(&old, b"b", 0o600, 0o700).unwrap();
        assert_eq!(std::fs::read_to_string(&old).unwrap(), "b");
        let mode = std::fs::metadata(&old).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o640);

        let new = dir.path().join("sub").join("new.toml");
        write_atomic(&new, b"c", 0o600, 0o700).unwrap();
        let mode = std::fs::metadata(&new).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let leftovers: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
            .collect();
        assert!(leftovers.is_empty());
    }

    #[test]
    fn a_symlinked_file_is_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.json");
        std::fs::write(&real, "{}").unwrap();
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        write_atomic(&link, b"[1]", 0o644, 0o755).unwrap();
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(std::fs::read_to_string(&real).unwrap(), "[1]");
    }
}
