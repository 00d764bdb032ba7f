//! Secrets kept apart from config: `$XDG_CONFIG_HOME/mcpmux/secrets.toml`
//! (`~/.config/mcpmux/secrets.toml`), `NAME = "value"` lines, read for `${secret:NAME}`.
//!
//! The file must be the person's alone: mode 0600 (no group or other bits) inside a folder of
//! mode 0700, owned by them; otherwise nothing in it is used and the error says which modes
//! were found and the `chmod` to run. A value is held as a [`SecretValue`], whose `Debug`
//! prints no value, and is never part of an error or a log line. Knows nothing of servers: the
//! dialects ask for a name while expanding a field.
//!
//! Why no OS keyring: the `keyring` crate's Secret Service backend needs libdbus (absent from
//! the build machines) and a running, unlocked Secret Service (absent on headless machines and
//! CI); its kernel-keyring backend forgets keys at logout or reboot. A file with checked
//! permissions works the same everywhere.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use super::write::{self, read_bounded};
use crate::platform::fs;

/// The secrets file's name, inside the user's `mcpmux` config folder.
pub const SECRETS_FILE: &str = "secrets.toml";

/// A secret's value: `Debug` shows only its length class, never the text.
#[derive(Clone, PartialEq, Eq)]
pub struct SecretValue(String);

impl SecretValue {
    /// The value, for the one place that must send it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for SecretValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SecretValue(<redacted>)")
    }
}

/// Why the secrets file could not be used or changed. Never holds a value.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SecretsError {
    /// Group or others may read or enter it, or someone else owns it.
    #[error(
        "{}: refused: {problem} (file mode {file_mode}, folder mode {dir_mode}); secrets must be yours alone: run `chmod 600 {}` and `chmod 700 {}`; no secret is used until then",
        file.display(),
        file.display(),
        dir.display()
    )]
    Exposed {
        /// The secrets file.
        file: PathBuf,
        /// Its folder.
        dir: PathBuf,
        /// The file's mode, octal (`0644`).
        file_mode: String,
        /// The folder's mode, octal (`0755`).
        dir_mode: String,
        /// What is wrong, in words.
        problem: String,
    },
    /// Not readable, not TOML, or a value that is not text.
    #[error("{}: {message}", file.display())]
    File {
        /// The secrets file.
        file: PathBuf,
        /// What is wrong and what to do (an I/O cause's words included).
        message: String,
        /// The I/O error, when there is one. A TOML parser's error is never kept: its
        /// message quotes the offending line, which may hold a secret.
        #[source]
        source: Option<std::io::Error>,
    },
    /// The name cannot name a secret.
    #[error("\"{name}\" is not a valid secret name: use letters, digits, -, _ and . (1 to 128)")]
    InvalidName {
        /// The name, escaped.
        name: String,
    },
    /// `rm` of a name the file does not have.
    #[error("{}: no secret named \"{name}\": `mcpmux secret list` shows the names", file.display())]
    NotFound {
        /// The name.
        name: String,
        /// The secrets file.
        file: PathBuf,
    },
    /// Neither a home directory nor `XDG_CONFIG_HOME`.
    #[error("there is no user config folder to keep secrets in: set HOME (or XDG_CONFIG_HOME)")]
    NoHome,
}

fn check_name(name: &str) -> Result<(), SecretsError> {
    if super::expand::valid_secret_name(name) {
        Ok(())
    } else {
        Err(SecretsError::InvalidName {
            name: name
                .chars()
                .take(80)
                .flat_map(char::escape_default)
                .collect(),
        })
    }
}

/// The secrets in `file`; none when it does not exist. Refused when others may read it.
pub fn read_secrets(file: &Path) -> Result<BTreeMap<String, SecretValue>, SecretsError> {
    let Some(text) = read_checked(file)? else {
        return Ok(BTreeMap::new());
    };
    let table: toml::Table = text.parse().map_err(|e: toml::de::Error| SecretsError::File {
        file: file.to_path_buf(),
        // toml's message quotes the offending line, which may hold a value: keep only its
        // position.
        message: format!(
            "not valid TOML{}: write NAME = \"value\" lines, or set them with `mcpmux secret set NAME`",
            e.span()
                .map(|span| format!(" at byte {}", span.start))
                .unwrap_or_default()
        ),
        source: None,
    })?;
    let mut secrets = BTreeMap::new();
    for (name, value) in table {
        match value {
            toml::Value::String(value) => {
                secrets.insert(name, SecretValue(value));
            }
            other => {
                return Err(SecretsError::File {
                    file: file.to_path_buf(),
                    message: format!(
                        "\"{}\" is {}, not text: write NAME = \"value\"",
                        name.escape_default(),
                        other.type_str()
                    ),
                    source: None,
                });
            }
        }
    }
    Ok(secrets)
}

/// The names in `file`, sorted; never a value.
pub fn secret_names(file: &Path) -> Result<Vec<String>, SecretsError> {
    Ok(read_secrets(file)?.into_keys().collect())
}

/// Sets `name` to `value` in `file`, keeping the rest (comments too); the file is written
/// 0600 in a 0700 folder.
pub fn set_secret(file: &Path, name: &str, value: &str) -> Result<(), SecretsError> {
    check_name(name)?;
    let text = read_checked(file)?.unwrap_or_default();
    let mut doc: toml_edit::DocumentMut = text.parse().map_err(|_| SecretsError::File {
        file: file.to_path_buf(),
        message: "not valid TOML, so nothing was changed: fix it or remove it".to_owned(),
        source: None,
    })?;
    doc.insert(name, toml_edit::value(value));
    write_private(file, doc.to_string().as_bytes())
}

/// Removes `name` from `file`.
pub fn remove_secret(file: &Path, name: &str) -> Result<(), SecretsError> {
    let text = read_checked(file)?.unwrap_or_default();
    let mut doc: toml_edit::DocumentMut = text.parse().map_err(|_| SecretsError::File {
        file: file.to_path_buf(),
        message: "not valid TOML, so nothing was changed: fix it or remove it".to_owned(),
        source: None,
    })?;
    if doc.remove(name).is_none() {
        return Err(SecretsError::NotFound {
            name: name
                .chars()
                .take(80)
                .flat_map(char::escape_default)
                .collect(),
            file: file.to_path_buf(),
        });
    }
    write_private(file, doc.to_string().as_bytes())
}

fn write_private(file: &Path, bytes: &[u8]) -> Result<(), SecretsError> {
    write::write_atomic(file, bytes, 0o600, 0o700).map_err(|e| SecretsError::File {
        file: file.to_path_buf(),
        message: format!("cannot write it: {e}"),
        source: Some(e),
    })?;
    // An existing file keeps its mode through the write; it was checked to be private.
    Ok(())
}

/// The file's text once its permissions and owner were checked; `None` when absent. A
/// symlink is checked where it points (that folder is where a write lands) and where it lies
/// (whoever may write that folder may repoint it).
fn read_checked(file: &Path) -> Result<Option<String>, SecretsError> {
    let link_dir = file.parent().unwrap_or(Path::new("."));
    let is_link = std::fs::symlink_metadata(file).is_ok_and(|m| m.file_type().is_symlink());
    let target = if is_link {
        match std::fs::canonicalize(file) {
            Ok(target) => target,
            // A link to nothing: a write replaces the link in its own (checked) folder.
            Err(_) => file.to_path_buf(),
        }
    } else {
        file.to_path_buf()
    };
    if target != file {
        let link_dir_meta = std::fs::metadata(link_dir).map_err(|e| SecretsError::File {
            file: file.to_path_buf(),
            message: format!("cannot read its folder: {e}"),
            source: Some(e),
        })?;
        check_private(file, link_dir, None, &link_dir_meta)?;
    }
    let dir = target.parent().unwrap_or(Path::new("."));
    let meta = match std::fs::metadata(&target) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // Nothing to read yet; a folder others may enter is still refused before a first
            // secret is written into it.
            if let Ok(dir_meta) = std::fs::metadata(dir) {
                check_private(file, dir, None, &dir_meta)?;
            }
            return Ok(None);
        }
        Err(e) => {
            return Err(SecretsError::File {
                file: file.to_path_buf(),
                message: format!("cannot read it: {e}"),
                source: Some(e),
            });
        }
    };
    let dir_meta = std::fs::metadata(dir).map_err(|e| SecretsError::File {
        file: file.to_path_buf(),
        message: format!("cannot read its folder: {e}"),
        source: Some(e),
    })?;
    check_private(&target, dir, Some(&meta), &dir_meta)?;
    read_bounded(&target).map_err(|e| SecretsError::File {
        file: file.to_path_buf(),
        message: format!("cannot read it: {e}"),
        source: Some(e),
    })
}

fn check_private(
    file: &Path,
    dir: &Path,
    meta: Option<&std::fs::Metadata>,
    dir_meta: &std::fs::Metadata,
) -> Result<(), SecretsError> {
    let mut problems = Vec::new();
    if meta.is_some_and(|meta| !meta.is_file()) {
        problems.push("it is not a regular file".to_owned());
    }
    // Windows has no modes or owner ids to check: the profile's ACLs keep it (`platform::fs`).
    let (Some(dir_unix), Some(me)) = (fs::unix_mode(dir_meta), fs::my_uid()) else {
        if problems.is_empty() {
            return Ok(());
        }
        return Err(SecretsError::Exposed {
            file: file.to_path_buf(),
            dir: dir.to_path_buf(),
            file_mode: "(none)".to_owned(),
            dir_mode: "(none)".to_owned(),
            problem: problems.join(", "),
        });
    };
    let file_unix = meta.and_then(fs::unix_mode);
    let file_mode = file_unix.map(|m| m.bits);
    let dir_mode = dir_unix.bits;
    if let Some(file_unix) = file_unix {
        if file_unix.bits & 0o077 != 0 {
            problems.push("group or others may read or write the file".to_owned());
        }
        if file_unix.uid != me {
            problems.push(format!(
                "the file belongs to user id {}, not you",
                file_unix.uid
            ));
        }
    }
    if dir_mode & 0o077 != 0 {
        problems.push("group or others may open its folder".to_owned());
    }
    if dir_unix.uid != me {
        problems.push(format!(
            "the folder belongs to user id {}, not you",
            dir_unix.uid
        ));
    }
    if problems.is_empty() {
        return Ok(());
    }
    Err(SecretsError::Exposed {
        file: file.to_path_buf(),
        dir: dir.to_path_buf(),
        file_mode: file_mode.map_or_else(|| "(none yet)".to_owned(), |m| format!("{m:04o}")),
        dir_mode: format!("{dir_mode:04o}"),
        problem: problems.join(", "),
    })
}

/// The secrets one load may use: the file is read at the first `${secret:…}` only, once.
pub(crate) struct SecretSource {
    file: Option<PathBuf>,
    loaded: OnceLock<Result<BTreeMap<String, SecretValue>, String>>,
}

/// What a `${secret:NAME}` lookup found.
pub(crate) enum Lookup {
    /// The value.
    Found(String),
    /// The file has no such name (or does not exist).
    Missing,
    /// The file is refused or broken: the reason, naming the file.
    Unusable(String),
}

impl SecretSource {
    /// Secrets from `file` (none without one).
    pub fn new(file: Option<PathBuf>) -> Self {
        SecretSource {
            file,
            loaded: OnceLock::new(),
        }
    }

    /// The file looked in, when there is one.
    pub fn file(&self) -> Option<&Path> {
        self.file.as_deref()
    }

    /// No secrets at all (tests, fuzzing).
    #[cfg(test)]
    pub fn none() -> Self {
        Self::new(None)
    }

    /// The value of `name`.
    pub fn lookup(&self, name: &str) -> Lookup {
        let Some(file) = &self.file else {
            return Lookup::Missing;
        };
        let loaded = self.loaded.get_or_init(|| {
            let result = read_secrets(file).map_err(|e| e.to_string());
            if let Err(error) = &result {
                tracing::warn!(%error, "secrets file not used");
            }
            result
        });
        match loaded {
            Ok(secrets) => match secrets.get(name) {
                Some(value) => Lookup::Found(value.expose().to_owned()),
                None => Lookup::Missing,
            },
            Err(reason) => Lookup::Unusable(reason.clone()),
        }
    }
}

#[cfg(all(test, unix))]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn private_dir() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let inner = dir.path().join("mcpmux");
        std::fs::create_dir(&inner).unwrap();
        std::fs::set_permissions(&inner, std::fs::Permissions::from_mode(0o700)).unwrap();
        (dir, inner.join(SECRETS_FILE))
    }

    #[test]
    fn an_unreadable_file_keeps_its_io_cause_and_bad_toml_keeps_none_that_could_quote_a_value() {
        let (_dir, file) = private_dir();
        // Not UTF-8: reading it is an I/O error (InvalidData).
        std::fs::write(&file, b"\xff\xfe\xfd").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        let error = read_secrets(&file).unwrap_err();
        let cause = std::error::Error::source(&error).unwrap_or_else(|| panic!("{error:?}"));
        let io = cause.downcast_ref::<std::io::Error>().unwrap();
        assert_eq!(io.kind(), std::io::ErrorKind::InvalidData);
        assert!(
            error
                .to_string()
                .ends_with(&format!("cannot read it: {io}")),
            "{error}"
        );
        let (_dir, file) = private_dir();
        std::fs::write(&file, "token = \"S3CRET\" oops\n").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        let error = read_secrets(&file).unwrap_err();
        assert!(std::error::Error::source(&error).is_none(), "{error:?}");
        assert!(!format!("{error:?}").contains("S3CRET"), "{error:?}");
    }

    #[test]
    fn set_list_and_remove_keep_the_file_private_and_print_no_value() {
        let (_dir, file) = private_dir();
        set_secret(&file, "gh", "value-one").unwrap();
        set_secret(&file, "api.key", "value \"two\"\n").unwrap();
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(secret_names(&file).unwrap(), ["api.key", "gh"]);
        let secrets = read_secrets(&file).unwrap();
        assert_eq!(secrets["api.key"].expose(), "value \"two\"\n");
        assert!(!format!("{secrets:?}").contains("value"));
        remove_secret(&file, "gh").unwrap();
        assert_eq!(secret_names(&file).unwrap(), ["api.key"]);
        let error = remove_secret(&file, "gh").unwrap_err();
        assert!(
            error.to_string().contains("no secret named \"gh\""),
            "{error}"
        );
    }

    #[test]
    fn a_file_or_folder_others_can_read_is_refused_with_the_modes_and_the_chmod() {
        let (_dir, file) = private_dir();
        set_secret(&file, "gh", "hunter2").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        let text = read_secrets(&file).unwrap_err().to_string();
        assert!(
            text.contains("file mode 0644") && text.contains("chmod 600"),
            "{text}"
        );
        assert!(!text.contains("hunter2"));
        // set refuses too rather than writing a secret into a readable file.
        assert!(set_secret(&file, "x", "y").is_err());

        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        let dir = file.parent().unwrap();
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let text = read_secrets(&file).unwrap_err().to_string();
        assert!(
            text.contains("folder mode 0755") && text.contains("chmod 700"),
            "{text}"
        );
    }

    #[test]
    fn a_symlink_into_a_folder_others_can_enter_is_refused_and_nothing_is_written_there() {
        let (dir, file) = private_dir();
        let open = dir.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        let target = open.join("secrets.toml");
        std::fs::write(&target, "gh = \"hunter2\"\n").unwrap();
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::os::unix::fs::symlink(&target, &file).unwrap();

        let text = read_secrets(&file).unwrap_err().to_string();
        assert!(
            text.contains("folder mode 0777") && text.contains(&open.display().to_string()),
            "{text}"
        );
        assert!(!text.contains("hunter2"), "{text}");
        assert!(set_secret(&file, "x", "y").is_err());
        let entries: Vec<_> = std::fs::read_dir(&open)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(entries, [std::ffi::OsString::from("secrets.toml")]);

        // A link from a folder others can enter to a private file is refused too.
        let (_other, private_file) = private_dir();
        set_secret(&private_file, "gh", "v").unwrap();
        let exposed_link = open.join("link.toml");
        std::os::unix::fs::symlink(&private_file, &exposed_link).unwrap();
        assert!(read_secrets(&exposed_link).is_err());
        assert!(read_secrets(&private_file).is_ok());
    }

    #[test]
    fn bad_names_and_non_text_values_are_refused_without_values() {
        let (_dir, file) = private_dir();
        for name in ["", "a b", "${x}", &"n".repeat(129)] {
            assert!(matches!(
                set_secret(&file, name, "v"),
                Err(SecretsError::InvalidName { .. })
            ));
        }
        write::write_atomic(&file, b"n = 5\nok = \"hunter2\"\n", 0o600, 0o700).unwrap();
        let text = read_secrets(&file).unwrap_err().to_string();
        assert!(text.contains("\"n\" is integer"), "{text}");
        write::write_atomic(&file, b"k = \"hunter2\n", 0o600, 0o700).unwrap();
        let text = read_secrets(&file).unwrap_err().to_string();
        assert!(
            text.contains("not valid TOML") && !text.contains("hunter2"),
            "{text}"
        );
    }
}
