//! What `mcpmux servers` shows: every configured server with its state, the plugin servers
//! started once under another name, and the config entries that could not be used.

use serde::Serialize;

use super::Hub;
use crate::config::{ConfigError, ConfigProblem, Origin};
use crate::connection::ListKind;
use crate::redact::redact_text;
use crate::state::{Era, ServerState};

/// What `mcpmux servers` shows about one server.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ServerStatus {
    /// The server's name.
    pub name: String,
    /// `stdio`, `http`, `sse`, `ws`, `inproc`; `-` for an entry that could not be read.
    pub transport: String,
    /// The command line or URL.
    pub target: String,
    /// Its state.
    pub state: ServerState,
    /// The protocol era, when connected.
    pub era: Option<Era>,
    /// The protocol version, when connected.
    pub version: Option<String>,
    /// How many tools it exposes.
    pub tools: usize,
    /// The file it was configured in.
    pub source: Option<String>,
    /// When its tools are the tool cache's (it has not listed them in this run): when the
    /// server listed them, and its version then.
    pub cached: Option<(std::time::SystemTime, Option<String>)>,
    /// The dialect that file was read in (`claude`, `mcpmux`, `codex`, `cursor`, `vscode`,
    /// `gemini`, `windsurf`, `claude-desktop`).
    pub dialect: Option<String>,
    /// Fields of its entry that could not be honoured; the server is used without them.
    pub warnings: Vec<String>,
    /// Whether its live session offers resources (and resource templates).
    pub resources: bool,
    /// Whether its live session offers prompts.
    pub prompts: bool,
    /// Whether its live session notifies updates of subscribed resources.
    pub subscriptions: bool,
    /// Whether its live session completes prompt and template arguments.
    pub completions: bool,
    /// Whether its live session sends log messages.
    pub logging: bool,
    /// Whether its live session's server declares the Tasks extension (SEP-2663): its calls
    /// may be made as tasks ([`Hub::call_task`]).
    pub tasks: bool,
    /// Its sandbox (`project`, `offline +read 2`), for a local server or `headersHelper` that
    /// runs in one; `None` when it runs with the user's full rights.
    pub sandbox: Option<String>,
}

/// One flat JSON object per server, each key once: what `mcpmux servers --json` prints.
impl Serialize for ServerStatus {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("name", &self.name)?;
        map.serialize_entry("transport", &self.transport)?;
        map.serialize_entry("target", &self.target)?;
        map.serialize_entry("state", self.state.label())?;
        if let ServerState::Pending {
            attempt,
            next_retry_at,
            ..
        } = &self.state
        {
            map.serialize_entry("attempt", attempt)?;
            let retry_in_ms = next_retry_at.and_then(|at| {
                at.duration_since(std::time::SystemTime::now())
                    .ok()
                    .map(|d| d.as_millis() as u64)
            });
            map.serialize_entry("retry_in_ms", &retry_in_ms)?;
        }
        if let ServerState::Connected { tools_version, .. } = &self.state {
            map.serialize_entry("tools_version", tools_version)?;
        }
        map.serialize_entry("era", &self.era)?;
        map.serialize_entry("version", &self.version)?;
        map.serialize_entry("tools", &self.tools)?;
        map.serialize_entry("error", &self.error())?;
        if let ServerState::Failed { stderr_tail, .. } = &self.state {
            map.serialize_entry("stderr_tail", stderr_tail)?;
        }
        map.serialize_entry("source", &self.source)?;
        if let Some((listed_at, server_version)) = &self.cached {
            let secs = listed_at
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or_default();
            map.serialize_entry("cached_at", &secs)?;
            map.serialize_entry("cached_server_version", server_version)?;
        }
        map.serialize_entry("dialect", &self.dialect)?;
        map.serialize_entry("warnings", &self.warnings)?;
        map.serialize_entry("sandbox", &self.sandbox)?;
        map.end()
    }
}

/// The sandbox a server's processes run in, if it starts any and has one.
fn sandbox_of(spec: &crate::config::ServerSpec) -> Option<String> {
    let runs_processes = matches!(spec.transport, crate::config::TransportSpec::Stdio { .. })
        || spec.auth.headers_helper.is_some();
    spec.options
        .sandbox
        .as_ref()
        .filter(|sandbox| runs_processes && !sandbox.is_off())
        .map(crate::config::Sandbox::summary)
}

impl ServerStatus {
    /// The error to show in a table, if any.
    pub fn error(&self) -> Option<&str> {
        match &self.state {
            ServerState::Failed { error, .. } => Some(error),
            ServerState::Disabled { reason } => Some(reason),
            ServerState::NeedsAuth { message, .. } | ServerState::Untrusted { message } => {
                Some(message)
            }
            ServerState::Pending {
                last_error: Some(error),
                ..
            } => Some(error),
            _ => None,
        }
    }
}

impl Hub {
    /// Every configured server with its state, plus config entries that could not be used.
    pub fn servers(&self) -> Vec<ServerStatus> {
        super::tools::read_caches(&self.inner.table());
        self.servers_as_read()
    }

    /// [`Hub::servers`] without reading the lazy servers' cached lists into the hub: one not
    /// read yet shows idle with no tools and no `cached` time. What a caller that streamed
    /// the listing ([`Hub::stream_tools`]) asks after it, to keep none of those lists.
    pub fn servers_as_read(&self) -> Vec<ServerStatus> {
        let table = self.inner.table();
        let mut out: Vec<ServerStatus> = table
            .servers
            .iter()
            .map(|server| {
                let (c, spec) = (&server.connection, &server.spec);
                let state = c.state();
                let (era, version, tools) = match &state {
                    ServerState::Connected {
                        era,
                        version,
                        tools,
                        ..
                    } => (Some(*era), Some(version.clone()), *tools),
                    _ if c.listed() => (
                        None,
                        None,
                        c.routable_tools().map_or(0, |tools| tools.len()),
                    ),
                    _ => (None, None, 0),
                };
                ServerStatus {
                    name: spec.name.clone(),
                    transport: spec.transport.kind().into(),
                    target: spec.transport.to_string(),
                    state,
                    era,
                    version,
                    tools,
                    source: match &spec.origin {
                        Origin::File { path, .. } => Some(path.display().to_string()),
                        Origin::Demo => Some("built-in demo".into()),
                        Origin::Plugin { source } => Some(source.clone()),
                        _ => None,
                    },
                    cached: c.cached_at(),
                    dialect: dialect_of(&spec.origin),
                    warnings: warnings_for(&table.problems, spec),
                    resources: c.offers(ListKind::Resources),
                    prompts: c.offers(ListKind::Prompts),
                    subscriptions: c.offers_subscriptions(),
                    completions: c.offers_completions(),
                    logging: c.offers_logging(),
                    tasks: c.offers_tasks(),
                    sandbox: sandbox_of(spec),
                }
            })
            .collect();
        for (spec, kept) in &table.duplicates {
            out.push(ServerStatus {
                name: spec.name.clone(),
                transport: spec.transport.kind().into(),
                target: spec.transport.to_string(),
                state: ServerState::Disabled {
                    reason: format!(
                        "the same server as `{kept}` (same command and args, or URL), from a plugin: started once, as `{kept}`"
                    ),
                },
                era: None,
                version: None,
                tools: 0,
                cached: None,
                source: match &spec.origin {
                    Origin::File { path, .. } => Some(path.display().to_string()),
                    Origin::Plugin { source } => Some(source.clone()),
                    _ => None,
                },
                dialect: dialect_of(&spec.origin),
                warnings: warnings_for(&table.problems, spec),
                resources: false,
                prompts: false,
                subscriptions: false,
                completions: false,
                logging: false,
                tasks: false,
                sandbox: sandbox_of(spec),
            });
        }
        for problem in &table.problems {
            if problem.is_warning() {
                // Shown with the server it is about (`warnings_for`); one whose entry another
                // file replaced concerns nothing that runs.
                continue;
            }
            out.push(ServerStatus {
                name: problem
                    .server
                    .clone()
                    .unwrap_or_else(|| format!("({})", problem.file.display())),
                transport: "-".into(),
                target: match &problem.error {
                    ConfigError::Untrusted { target, .. } => target.clone(),
                    _ => String::new(),
                },
                state: match &problem.error {
                    ConfigError::Untrusted { .. } => ServerState::Untrusted {
                        message: problem.error.to_string(),
                    },
                    _ => ServerState::Failed {
                        error: problem.error.to_string(),
                        stderr_tail: Vec::new(),
                    },
                },
                era: None,
                version: None,
                tools: 0,
                cached: None,
                source: Some(problem.file.display().to_string()),
                dialect: None,
                warnings: Vec::new(),
                resources: false,
                prompts: false,
                subscriptions: false,
                completions: false,
                logging: false,
                tasks: false,
                sandbox: None,
            });
        }
        // Printed, served and logged: no URL's query or userinfo, whatever text made it.
        for status in &mut out {
            status.target = redact_text(&status.target).into_owned();
            let state = std::mem::replace(&mut status.state, ServerState::Stopped);
            status.state = state.redacted();
            for warning in &mut status.warnings {
                *warning = redact_text(warning).into_owned();
            }
        }
        out
    }
}

/// The warnings about `spec`'s own entry: same server, same file.
fn warnings_for(problems: &[ConfigProblem], spec: &crate::config::ServerSpec) -> Vec<String> {
    let Origin::File { path, .. } = &spec.origin else {
        return Vec::new();
    };
    problems
        .iter()
        .filter(|problem| {
            problem.is_warning()
                && problem.server.as_deref() == Some(spec.name.as_str())
                && &problem.file == path
        })
        .map(|problem| problem.error.to_string())
        .collect()
}

/// The dialect a file-configured server was read in.
fn dialect_of(origin: &Origin) -> Option<String> {
    match origin {
        Origin::File { dialect, .. } => Some(dialect.name().to_owned()),
        _ => None,
    }
}
