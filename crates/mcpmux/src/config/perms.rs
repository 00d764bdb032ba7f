//! Who else may change a file mcpmux trusts as it is (the person's config files, `--config`
//! files, the approvals file, the secrets file): like ssh's `StrictModes`, a file that another
//! user could rewrite, or that sits in a folder another user could swap it out of, is refused.
//!
//! The rule, for the file (symlinks resolved) and every folder above it up to `/`, and for the
//! folders above a symlink itself: each must belong to the person or to root; none may be
//! writable by group or others, except a folder owned by root with the sticky bit set (`/tmp`),
//! where others may add entries but not rename or remove the person's. So a private temporary
//! folder inside `/tmp` is accepted, and so is a file the person owns, mode 0644, directly in
//! `/tmp`. A project's own files are not checked here: nothing of them runs unapproved, and the
//! approval covers what they say. Knows nothing of what the file holds.
//!
//! On Windows there are no modes or owner ids to check (see `platform::fs`): every file passes.

use std::path::{Path, PathBuf};

use crate::platform::fs;

/// Why a file is refused: what is wrong (which file or folder, its mode or owner) and the
/// command that fixes it. Never the file's content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Exposed {
    /// What is wrong, naming the path and its mode or owner.
    pub problem: String,
    /// The command that fixes it (`chmod go-w '/path'`).
    pub fix: String,
}

/// Checks that only the person (or root) can change `path` and the folders that lead to it.
/// A file that does not exist passes (there is nothing to read).
pub(crate) fn check_not_writable_by_others(path: &Path) -> Result<(), Exposed> {
    let resolved = match std::fs::canonicalize(path) {
        Ok(resolved) => resolved,
        // Absent (or unreadable): the read that follows reports it.
        Err(_) => return Ok(()),
    };
    check_one(&resolved, false)?;
    let mut folders: Vec<PathBuf> = resolved
        .ancestors()
        .skip(1)
        .map(Path::to_path_buf)
        .collect();
    // A symlink can be replaced by whoever may write the folder that holds it.
    let is_link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    if is_link
        && let Some(parent) = path.parent()
        && let Ok(parent) = std::fs::canonicalize(if parent.as_os_str().is_empty() {
            Path::new(".")
        } else {
            parent
        })
    {
        folders.extend(parent.ancestors().map(Path::to_path_buf));
    }
    folders.sort();
    folders.dedup();
    for folder in folders.iter().rev() {
        check_one(folder, true)?;
    }
    Ok(())
}

fn check_one(path: &Path, folder: bool) -> Result<(), Exposed> {
    let Ok(meta) = std::fs::metadata(path) else {
        return Ok(());
    };
    let (
        Some(fs::UnixMode {
            bits: mode,
            uid: owner,
        }),
        Some(me),
    ) = (fs::unix_mode(&meta), fs::my_uid())
    else {
        return Ok(());
    };
    let what = if folder { "folder" } else { "file" };
    let shown = quoted(path);
    if owner != me && owner != 0 {
        return Err(Exposed {
            problem: format!(
                "the {what} {} belongs to user id {owner}, not you or root",
                path.display()
            ),
            fix: format!("chown {me} {shown}"),
        });
    }
    let sticky_root = folder && owner == 0 && mode & 0o1000 != 0;
    if mode & 0o022 != 0 && !sticky_root {
        let who = if mode & 0o002 != 0 {
            "anyone"
        } else {
            "its group"
        };
        return Err(Exposed {
            problem: format!(
                "{who} may write the {what} {} (mode {mode:04o})",
                path.display()
            ),
            fix: format!("chmod go-w {shown}"),
        });
    }
    Ok(())
}

/// A path as a shell word: single quotes, a quote inside written `'\''`.
fn quoted(path: &Path) -> String {
    let text = crate::terminal::escape_controls(&path.to_string_lossy()).into_owned();
    format!("'{}'", text.replace('\'', r"'\''"))
}

#[cfg(all(test, unix))]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn chmod(path: &Path, mode: u32) {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn a_private_file_in_a_temp_folder_inside_sticky_tmp_passes() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("config.toml");
        std::fs::write(&file, "").unwrap();
        chmod(&file, 0o644);
        assert_eq!(check_not_writable_by_others(&file), Ok(()));
        assert_eq!(
            check_not_writable_by_others(&dir.path().join("absent.toml")),
            Ok(())
        );
    }

    #[test]
    fn a_file_others_can_write_is_refused_with_the_chmod_that_fixes_it() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("config.toml");
        std::fs::write(&file, "").unwrap();
        for (mode, who) in [(0o666, "anyone"), (0o664, "its group")] {
            chmod(&file, mode);
            let refused = check_not_writable_by_others(&file).unwrap_err();
            assert!(
                refused.problem.contains(who) && refused.problem.contains(&format!("{mode:04o}")),
                "{refused:?}"
            );
            assert_eq!(refused.fix, format!("chmod go-w '{}'", file.display()));
        }
    }

    #[test]
    fn a_folder_others_can_write_is_refused_unless_root_owns_it_sticky() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("mcpmux");
        std::fs::create_dir(&folder).unwrap();
        let file = folder.join("config.toml");
        std::fs::write(&file, "").unwrap();
        chmod(&folder, 0o777);
        let refused = check_not_writable_by_others(&file).unwrap_err();
        assert!(refused.problem.contains("folder"), "{refused:?}");
        assert_eq!(refused.fix, format!("chmod go-w '{}'", folder.display()));
        // Sticky but not root's: whoever owns it may still swap the file (tests run as root
        // in CI, where it is root's: then it passes, like /tmp).
        chmod(&folder, 0o1777);
        assert_eq!(
            check_not_writable_by_others(&file).is_ok(),
            fs::my_uid() == Some(0)
        );
    }

    #[test]
    fn a_symlink_is_checked_where_it_points_and_where_it_lies() {
        let dir = tempfile::tempdir().unwrap();
        let open = dir.path().join("open");
        std::fs::create_dir(&open).unwrap();
        chmod(&open, 0o777);
        let target = open.join("secrets.toml");
        std::fs::write(&target, "").unwrap();
        chmod(&target, 0o600);
        let private = dir.path().join("private");
        std::fs::create_dir(&private).unwrap();
        let link = private.join("secrets.toml");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let refused = check_not_writable_by_others(&link).unwrap_err();
        assert!(refused.problem.contains("open"), "{refused:?}");

        // The other way round: a private target, linked from a folder anyone may write.
        chmod(&open, 0o700);
        let link_in_open = open.join("link.toml");
        let private_target = private.join("real.toml");
        std::fs::write(&private_target, "").unwrap();
        std::os::unix::fs::symlink(&private_target, &link_in_open).unwrap();
        chmod(&open, 0o777);
        assert!(check_not_writable_by_others(&link_in_open).is_err());
        assert_eq!(check_not_writable_by_others(&private_target), Ok(()));
    }
}
