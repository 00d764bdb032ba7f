//! What can be wrong with a config file or one of its entries (`ConfigError`, each naming the
//! file, the server and the field) and how it reads to a person: the place, the line and
//! column, the valid keys or a near miss. Knows nothing of how the files are found or merged.

use std::io;
use std::path::{Path, PathBuf};

use super::fields;

/// One file or server entry that could not be used.
#[derive(Debug)]
pub struct ConfigProblem {
    /// The file it is in.
    pub file: PathBuf,
    /// The server entry, when the problem is in one entry rather than the whole file.
    pub server: Option<String>,
    /// What is wrong.
    pub error: ConfigError,
}

/// A configuration error: names the file, the server and the field, and what to do.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file exists (or was asked for with `--config`) but could not be read.
    #[error("{}: cannot read the file: {}", file.display(), read_reason(source))]
    Read {
        /// The file.
        file: PathBuf,
        /// Why reading failed.
        #[source]
        source: io::Error,
    },

    /// Another user could change the file (it, or a folder above it, is writable by group or
    /// others, or belongs to someone else): nothing in it is used, as ssh refuses such files.
    #[error(
        "{}: refused: {problem}, so another user could change what mcpmux runs: run `{fix}` (nothing in this file is used until then)",
        file.display()
    )]
    Exposed {
        /// The file.
        file: PathBuf,
        /// What is wrong: which file or folder, its mode or owner.
        problem: String,
        /// The command that fixes it.
        fix: String,
    },

    /// The file is not valid JSON or TOML; nothing in it is used.
    #[error(
        "{}{}: not valid {format}: {message}: fix the syntax (nothing in this file is used until then)",
        file.display(),
        position(*line, *column)
    )]
    Parse {
        /// The file.
        file: PathBuf,
        /// `JSON` or `TOML`.
        format: &'static str,
        /// 1-based line of the error, when known.
        line: Option<usize>,
        /// 1-based column (in characters) of the error, when known.
        column: Option<usize>,
        /// What the parser said. Its error is not kept as a `source`: its words are here, its
        /// position in `line` and `column`, and a boxed cause would take `Error` past clippy's
        /// `result_large_err` bound (128 bytes) in every harness returning it.
        message: String,
    },

    /// A field the entry needs is absent.
    #[error("{}: field \"{field}\" is missing: {hint}", place(file, Some(server)))]
    MissingField {
        /// The file.
        file: PathBuf,
        /// The server entry.
        server: String,
        /// The missing field.
        field: String,
        /// What the entry needs, in the file's own syntax.
        hint: String,
    },

    /// `type` names no transport mcpmux knows.
    #[error(
        "{}: field \"type\" is \"{value}\", which is not a transport: use one of {}",
        place(file, Some(server)),
        fields::VALID_TYPES
    )]
    UnknownType {
        /// The file.
        file: PathBuf,
        /// The server entry.
        server: String,
        /// The type as written.
        value: String,
    },

    /// A `${VAR}` reference to an unset variable, with no default.
    #[error(
        "{}: field \"{field}\" uses ${{{variable}}}, which is not set: set {variable} in the environment, or give a default with ${{{variable}:-default}}",
        place(file, Some(server))
    )]
    UnsetVariable {
        /// The file.
        file: PathBuf,
        /// The server entry.
        server: String,
        /// The field holding the reference (`env.TOKEN`, `args[2]`, `headers.Authorization`).
        field: String,
        /// The variable's name.
        variable: String,
    },

    /// A `${secret:NAME}` reference to a secret the secrets file does not hold, with no default.
    #[error(
        "{}: field \"{field}\" uses ${{secret:{secret}}}, which is not in {}: run `mcpmux secret set {secret}` (it reads the value from standard input)",
        place(file, Some(server)),
        store.as_deref().map_or_else(|| "the secrets file (there is no home folder for one)".to_owned(), |f| f.display().to_string())
    )]
    MissingSecret {
        /// The file.
        file: PathBuf,
        /// The server entry.
        server: String,
        /// The field holding the reference.
        field: String,
        /// The secret's name.
        secret: String,
        /// The secrets file looked in.
        store: Option<PathBuf>,
    },

    /// A key `mcpmux.toml` does not know (other dialects tolerate unknown keys).
    #[error("{}: unknown key \"{key}\": {}", place(file, server.as_deref()), key_advice(suggestion.as_deref(), valid))]
    UnknownKey {
        /// The file.
        file: PathBuf,
        /// The server entry; none for a top-level key.
        server: Option<String>,
        /// The key as written.
        key: String,
        /// The nearest valid key, when one is close.
        suggestion: Option<String>,
        /// Every valid key at that place.
        valid: &'static [&'static str],
    },

    /// A field has a value of the wrong type or shape (bad duration, bad URL, number for text).
    #[error("{}{}: {message}", place(file, server.as_deref()), field_part(field.as_deref()))]
    InvalidValue {
        /// The file.
        file: PathBuf,
        /// The server entry, when the value is in one.
        server: Option<String>,
        /// The field (`url`, `env.TOKEN`, `startup_timeout`); none when the entry as a whole is wrong.
        field: Option<String>,
        /// What is wrong and what to write instead.
        message: String,
    },

    /// A server a project-level file defines that the person has not approved: neither started
    /// nor expanded.
    #[error(
        "{}: not approved: a project-level server runs only once you approve it: it would run `{target}`; run `mcpmux trust` in {} to approve the project's servers as they are now",
        place(file, Some(server)),
        project.display()
    )]
    Untrusted {
        /// The project file.
        file: PathBuf,
        /// The server entry.
        server: String,
        /// What it would run or reach, as written.
        target: String,
        /// The project directory, where `mcpmux trust` approves it.
        project: PathBuf,
    },

    /// A field of another tool's file that mcpmux cannot honour: a warning, the rest of the
    /// server is used.
    #[error(
        "{}: field \"{field}\" is not honoured: {reason}; the rest of the server is used",
        place(file, Some(server))
    )]
    Unhonoured {
        /// The file.
        file: PathBuf,
        /// The server entry.
        server: String,
        /// The field as written.
        field: String,
        /// Why, and what to do instead.
        reason: String,
    },

    /// An `mcpmux.toml` overlay (options only) for a server no earlier file defines.
    #[error(
        "{}: nothing to adjust: no earlier file defines server \"{server}\": define it here with `command` or `url`, or fix the name",
        place(file, Some(server))
    )]
    NothingToAdjust {
        /// The file.
        file: PathBuf,
        /// The server the overlay names.
        server: String,
    },
}

impl ConfigError {
    /// The file the error is in.
    pub fn file(&self) -> &Path {
        match self {
            ConfigError::Read { file, .. }
            | ConfigError::Exposed { file, .. }
            | ConfigError::Parse { file, .. }
            | ConfigError::MissingField { file, .. }
            | ConfigError::UnknownType { file, .. }
            | ConfigError::UnsetVariable { file, .. }
            | ConfigError::MissingSecret { file, .. }
            | ConfigError::UnknownKey { file, .. }
            | ConfigError::InvalidValue { file, .. }
            | ConfigError::Untrusted { file, .. }
            | ConfigError::Unhonoured { file, .. }
            | ConfigError::NothingToAdjust { file, .. } => file,
        }
    }

    /// The server entry the error is in, when it is in one.
    pub fn server(&self) -> Option<&str> {
        match self {
            ConfigError::Read { .. } | ConfigError::Exposed { .. } | ConfigError::Parse { .. } => {
                None
            }
            ConfigError::MissingField { server, .. }
            | ConfigError::UnknownType { server, .. }
            | ConfigError::UnsetVariable { server, .. }
            | ConfigError::MissingSecret { server, .. }
            | ConfigError::Untrusted { server, .. }
            | ConfigError::Unhonoured { server, .. }
            | ConfigError::NothingToAdjust { server, .. } => Some(server),
            ConfigError::UnknownKey { server, .. } | ConfigError::InvalidValue { server, .. } => {
                server.as_deref()
            }
        }
    }
}

impl ConfigError {
    /// Whether this is a warning: the server it names is still used.
    pub fn is_warning(&self) -> bool {
        matches!(self, ConfigError::Unhonoured { .. })
    }
}

impl ConfigProblem {
    /// Whether this is a warning: the server it names is still used.
    pub fn is_warning(&self) -> bool {
        self.error.is_warning()
    }
}

/// `path: server "name"`, the prefix of every message about an entry.
fn place(file: &Path, server: Option<&str>) -> String {
    match server {
        Some(server) => format!("{}: server \"{server}\"", file.display()),
        None => file.display().to_string(),
    }
}

fn field_part(field: Option<&str>) -> String {
    field
        .map(|field| format!(": field \"{field}\""))
        .unwrap_or_default()
}

/// `:line:column`, the form editors and terminals turn into a link.
fn position(line: Option<usize>, column: Option<usize>) -> String {
    match (line, column) {
        (Some(line), Some(column)) => format!(":{line}:{column}"),
        (Some(line), None) => format!(":{line}"),
        _ => String::new(),
    }
}

fn read_reason(error: &io::Error) -> String {
    match error.kind() {
        io::ErrorKind::NotFound => "no such file: check the path".to_owned(),
        io::ErrorKind::PermissionDenied => "permission denied: make it readable".to_owned(),
        io::ErrorKind::IsADirectory => "it is a directory: give the path of a file".to_owned(),
        _ => error.to_string(),
    }
}

fn key_advice(suggestion: Option<&str>, valid: &[&str]) -> String {
    match suggestion {
        Some(suggestion) => format!("did you mean \"{suggestion}\"?"),
        None => format!("valid keys are {}", valid.join(", ")),
    }
}
