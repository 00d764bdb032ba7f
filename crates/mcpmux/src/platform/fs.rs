//! Files and folders only the person may read, and the facts the Unix checks of "who else may
//! read or change this" are built on (mode bits, owner, the effective user).
//!
//! On Unix a private file is created 0600 without following a symlink, a private folder 0700,
//! and [`unix_mode`] gives the checks in `config/perms.rs`, `config/secrets.rs`, the token
//! store and the spill folder what they test. Windows has no mode bits: a file's access is its
//! ACL, inherited from the folder it is made in, and the folders mcpmux keeps files in
//! (`%APPDATA%`, `%LOCALAPPDATA%`, the profile) are the person's alone by default. So there
//! [`unix_mode`] is `None` and those checks say nothing, rather than inventing an answer; an
//! ACL check is not done on this platform.

use std::fs::{DirBuilder, Metadata, OpenOptions};

/// A file's mode bits and owner, as Unix keeps them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct UnixMode {
    /// The permission bits (`& 0o7777`).
    pub bits: u32,
    /// The owner's user id.
    pub uid: u32,
}

/// The mode and owner of `meta`; `None` where files have none (Windows).
pub(crate) fn unix_mode(meta: &Metadata) -> Option<UnixMode> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        Some(UnixMode {
            bits: meta.permissions().mode() & 0o7777,
            uid: meta.uid(),
        })
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        None
    }
}

/// The user id files must belong to (the effective user's); `None` where there is none.
pub(crate) fn my_uid() -> Option<u32> {
    #[cfg(unix)]
    {
        // SAFETY: geteuid has no preconditions and cannot fail.
        Some(unsafe { libc::geteuid() })
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// A file identity that changes when the file is replaced (the inode on Unix); 0 elsewhere,
/// where the modification time and length the callers also compare must do.
pub(crate) fn file_id(meta: &Metadata) -> u64 {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        meta.ino()
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        0
    }
}

/// Makes `options` create a file only the person may read: mode 0600, and a symlink in its
/// place is refused (`O_NOFOLLOW`), on Unix. On Windows the file takes its folder's ACL.
pub(crate) fn private_file(options: &mut OpenOptions) -> &mut OpenOptions {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600).custom_flags(libc::O_NOFOLLOW)
    }
    #[cfg(not(unix))]
    {
        options
    }
}

/// Makes `builder` create folders with `mode` on Unix (0700 for a private one); on Windows
/// they take their parent's ACL.
pub(crate) fn dir_mode(builder: &mut DirBuilder, mode: u32) -> &mut DirBuilder {
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(mode)
    }
    #[cfg(not(unix))]
    {
        let _ = mode;
        builder
    }
}

/// Gives the open file `file` the mode `bits` on Unix; nothing on Windows.
pub(crate) fn set_file_mode(file: &std::fs::File, bits: u32) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        file.set_permissions(std::fs::Permissions::from_mode(bits))
    }
    #[cfg(not(unix))]
    {
        let _ = (file, bits);
        Ok(())
    }
}

#[cfg(all(test, unix))]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_private_file_is_0600_and_refuses_a_symlink_in_its_place() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        private_file(OpenOptions::new().write(true).create(true))
            .open(&path)
            .unwrap();
        let meta = std::fs::metadata(&path).unwrap();
        assert_eq!(unix_mode(&meta).unwrap().bits & 0o777, 0o600);
        assert_eq!(Some(unix_mode(&meta).unwrap().uid), my_uid());
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&path, &link).unwrap();
        assert!(
            private_file(OpenOptions::new().write(true).create(true))
                .open(&link)
                .is_err()
        );
    }
}
