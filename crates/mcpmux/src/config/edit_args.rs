//! What `mcpmux add` is given and how editing fails: a server entry checked before anything is
//! written (name, command, URL and transport, `KEY=value` and `Name: value` items), and
//! [`EditError`]. A value typed after `=` or `:` is never repeated in an error: it may be a
//! secret. Knows nothing of files (`edit.rs` writes the entry).

use std::path::PathBuf;

/// Longest server name accepted: names become part of `mcp__server__tool` (64 chars at most
/// for most providers), so a longer one could never be exposed unshortened.
const MAX_NAME: usize = 64;

/// How the server written is reached.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum NewTransport {
    /// A command run as a child process.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// `env`, in the order given.
        env: Vec<(String, String)>,
    },
    /// A remote server.
    Remote {
        /// `http`, `sse` or `ws`.
        kind: &'static str,
        /// The URL.
        url: String,
        /// `headers`, in the order given.
        headers: Vec<(String, String)>,
    },
}

/// A checked server entry, ready to be written.
#[derive(Clone, PartialEq, Eq)]
pub struct NewServer {
    /// Its name.
    pub name: String,
    /// How it is reached.
    pub transport: NewTransport,
}

impl std::fmt::Debug for NewServer {
    /// Names only: env and header values are often secrets.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (target, keys): (String, Vec<&str>) = match &self.transport {
            NewTransport::Stdio { command, args, env } => (
                std::iter::once(command.as_str())
                    .chain(args.iter().map(String::as_str))
                    .collect::<Vec<_>>()
                    .join(" "),
                env.iter().map(|(k, _)| k.as_str()).collect(),
            ),
            NewTransport::Remote { url, headers, .. } => (
                url.clone(),
                headers.iter().map(|(k, _)| k.as_str()).collect(),
            ),
        };
        f.debug_struct("NewServer")
            .field("name", &self.name)
            .field("target", &target)
            .field("keys", &keys)
            .finish()
    }
}

/// Why an entry could not be added or removed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EditError {
    /// The name is not one a server can have.
    #[error(
        "\"{name}\" is not a valid server name: use letters, digits, - and _ (1 to 64 of them)"
    )]
    InvalidName {
        /// The name as given.
        name: String,
    },
    /// An argument is malformed; `given` never holds a value that may be secret.
    #[error("{flag} {given}: {reason}")]
    InvalidArgument {
        /// The option (`--url`, `--env`, `--header`, `--transport`, the command).
        flag: &'static str,
        /// What was given (for `--env`/`--header`, only the key).
        given: String,
        /// What is wrong and what to write.
        reason: String,
    },
    /// The file already has a server of that name.
    #[error("{}: a server named \"{name}\" is already there: pick another name, or give --force to replace it", file.display())]
    Exists {
        /// The name.
        name: String,
        /// The file.
        file: PathBuf,
    },
    /// No file looked in has a server of that name.
    #[error(
        "no server named \"{name}\" in {}: `mcpmux servers` lists the servers and the files they come from",
        list(files)
    )]
    NotFound {
        /// The name.
        name: String,
        /// Every file looked in.
        files: Vec<PathBuf>,
    },
    /// The name is in more than one file and no scope says which.
    #[error(
        "server \"{name}\" is in {}: give --scope user or --scope project",
        list(files)
    )]
    Ambiguous {
        /// The name.
        name: String,
        /// The files it is in.
        files: Vec<PathBuf>,
    },
    /// The file cannot be read, parsed or written, or its servers are not a table/object.
    #[error("{}: {message}", file.display())]
    File {
        /// The file.
        file: PathBuf,
        /// What is wrong and what to do; nothing was written.
        message: String,
    },
    /// User scope with neither a home directory nor `XDG_CONFIG_HOME`.
    #[error(
        "there is no user config folder: set HOME (or XDG_CONFIG_HOME), or use --scope project"
    )]
    NoUserConfig,
}

fn list(files: &[PathBuf]) -> String {
    files
        .iter()
        .map(|f| f.display().to_string())
        .collect::<Vec<_>>()
        .join(" and ")
}

/// Whether `name` can be a server name: letters, digits, `-`, `_`, at most 64.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

impl NewServer {
    /// A command-line server; `env` holds `K=V` items.
    pub fn stdio(
        name: &str,
        command_line: &[String],
        env: &[String],
        headers: &[String],
    ) -> Result<Self, EditError> {
        check_name(name)?;
        if !headers.is_empty() {
            return Err(EditError::InvalidArgument {
                flag: "--header",
                given: header_key(&headers[0]),
                reason:
                    "headers go to remote servers: use --url for one, or pass the value with --env"
                        .to_owned(),
            });
        }
        let Some((command, args)) = command_line.split_first() else {
            return Err(EditError::InvalidArgument {
                flag: "the command",
                given: "(none)".to_owned(),
                reason: "give the command after --, like `mcpmux add fs -- npx -y @modelcontextprotocol/server-filesystem ~/notes`, or --url for a remote server".to_owned(),
            });
        };
        if command.trim().is_empty() {
            return Err(EditError::InvalidArgument {
                flag: "the command",
                given: "\"\"".to_owned(),
                reason: "is empty: give the program to run, like npx".to_owned(),
            });
        }
        if let Some(bad) = command_line.iter().find(|a| a.contains('\0')) {
            return Err(EditError::InvalidArgument {
                flag: "the command",
                given: bad.replace('\0', "\\0"),
                reason: "contains a NUL byte, which no program can receive".to_owned(),
            });
        }
        let env = env
            .iter()
            .map(|item| env_pair(item))
            .collect::<Result<_, _>>()?;
        Ok(NewServer {
            name: name.to_owned(),
            transport: NewTransport::Stdio {
                command: command.clone(),
                args: args.to_vec(),
                env,
            },
        })
    }

    /// A remote server at `url`; `transport` is `http`, `sse` or `ws` (default: from the
    /// URL's scheme); `headers` holds `K: V` items.
    pub fn remote(
        name: &str,
        url: &str,
        transport: Option<&str>,
        env: &[String],
        headers: &[String],
    ) -> Result<Self, EditError> {
        check_name(name)?;
        if let Some(item) = env.first() {
            return Err(EditError::InvalidArgument {
                flag: "--env",
                given: item.split('=').next().unwrap_or_default().to_owned(),
                reason: "environment variables go to a command's process: a remote server takes --header".to_owned(),
            });
        }
        let bad_url = |reason: String| EditError::InvalidArgument {
            flag: "--url",
            given: url.to_owned(),
            reason,
        };
        let parsed = url::Url::parse(url).map_err(|e| {
            bad_url(format!(
                "not a URL ({e}): write it in full, like https://example.com/mcp"
            ))
        })?;
        let scheme = parsed.scheme();
        let kind = match transport.map(str::to_ascii_lowercase).as_deref() {
            None if matches!(scheme, "ws" | "wss") => "ws",
            None => "http",
            Some("http" | "streamable-http") => "http",
            Some("sse") => "sse",
            Some("ws" | "websocket") => "ws",
            Some(other) => {
                return Err(EditError::InvalidArgument {
                    flag: "--transport",
                    given: other.to_owned(),
                    reason: "is not a transport: use http, sse or ws".to_owned(),
                });
            }
        };
        let schemes: &[&str] = if kind == "ws" {
            &["ws", "wss"]
        } else {
            &["http", "https"]
        };
        if !schemes.contains(&scheme) {
            return Err(bad_url(format!(
                "a {kind} server needs a {} URL, not {scheme}://",
                schemes.join(":// or ") + "://"
            )));
        }
        if parsed.host_str().is_none_or(str::is_empty) {
            return Err(bad_url(
                "has no host: write it like https://example.com/mcp".to_owned(),
            ));
        }
        let headers = headers
            .iter()
            .map(|item| header_pair(item))
            .collect::<Result<_, _>>()?;
        Ok(NewServer {
            name: name.to_owned(),
            transport: NewTransport::Remote {
                kind,
                url: url.to_owned(),
                headers,
            },
        })
    }
}

fn check_name(name: &str) -> Result<(), EditError> {
    if valid_name(name) {
        Ok(())
    } else {
        Err(EditError::InvalidName {
            name: name
                .chars()
                .take(80)
                .flat_map(char::escape_default)
                .collect(),
        })
    }
}

/// `K=V`: a variable name, then anything (a value may hold `=`).
fn env_pair(item: &str) -> Result<(String, String), EditError> {
    let Some((key, value)) = item.split_once('=') else {
        return Err(EditError::InvalidArgument {
            flag: "--env",
            // Without a separator it may be a value typed in the wrong place: never echoed.
            given: "(not shown)".to_owned(),
            reason: "has no =: write KEY=value".to_owned(),
        });
    };
    let mut chars = key.chars();
    let valid = matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !valid {
        return Err(EditError::InvalidArgument {
            flag: "--env",
            given: key_shown(key),
            reason: "is not a variable name: use letters, digits and _, not starting with a digit"
                .to_owned(),
        });
    }
    if value.contains('\0') {
        return Err(EditError::InvalidArgument {
            flag: "--env",
            given: key.to_owned(),
            reason: "the value contains a NUL byte, which no environment can hold".to_owned(),
        });
    }
    Ok((key.to_owned(), value.to_owned()))
}

/// `K: V` (or `K:V`): an HTTP header name and a value without control characters.
fn header_pair(item: &str) -> Result<(String, String), EditError> {
    let Some((key, value)) = item.split_once(':') else {
        return Err(EditError::InvalidArgument {
            flag: "--header",
            given: "(not shown)".to_owned(),
            reason: "has no colon: write \"Name: value\"".to_owned(),
        });
    };
    let key = key.trim();
    if http::HeaderName::from_bytes(key.as_bytes()).is_err() {
        return Err(EditError::InvalidArgument {
            flag: "--header",
            given: key_shown(key),
            reason: "is not a header name: use letters, digits and -, like Authorization"
                .to_owned(),
        });
    }
    let value = value.trim();
    if http::HeaderValue::from_str(value).is_err() {
        return Err(EditError::InvalidArgument {
            flag: "--header",
            given: key.to_owned(),
            reason: "the value holds a line break or another control character, which no header can carry".to_owned(),
        });
    }
    Ok((key.to_owned(), value.to_owned()))
}

fn header_key(item: &str) -> String {
    key_shown(item.split(':').next().unwrap_or_default())
}

/// A key as shown in a message: escaped, cut (it may be anything the person typed).
fn key_shown(text: &str) -> String {
    let shown: String = text
        .chars()
        .take(40)
        .flat_map(char::escape_default)
        .collect();
    format!("\"{shown}\"")
}
