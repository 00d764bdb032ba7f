//! The validated description of one server: what the hub needs to start it.
//!
//! A `ServerSpec` can only be built from input that passed validation (see `config::load`), so
//! the hub and the transports trust it. It knows nothing of how a server is connected.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

pub use super::auth_spec::{
    AuthSpec, IdentityProvider, OAuthGrant, OAuthSpec, PrivateKey, TokenSource,
};
use super::dialect::Dialect;
use crate::defaults;
use crate::redact::redact_url;

/// One MCP server as configured, after validation and `${VAR}` expansion.
#[derive(Clone, PartialEq)]
#[non_exhaustive]
pub struct ServerSpec {
    /// The server's name: the key in the user's config, used in `mcp__<name>__<tool>`.
    pub name: String,
    /// How to reach it.
    pub transport: TransportSpec,
    /// A disabled server is listed but never started.
    pub enabled: bool,
    /// A required server that fails to start makes the whole startup fail.
    pub required: bool,
    /// How long connecting (spawn, era probe, handshake, first tool listing) may take.
    pub startup_timeout: Duration,
    /// Default deadline of one tool call.
    pub call_timeout: Duration,
    /// How long the `server/discover` probe may go unanswered before the handshake is tried.
    pub probe_timeout: Duration,
    /// Resilience, result size, tool filters, scoping and side-effect overrides.
    pub options: ServerOptions,
    /// How a remote server is authenticated to: `headersHelper` and `oauth`.
    pub auth: AuthSpec,
    /// Where this entry came from.
    pub origin: Origin,
}

/// Per-server options beyond how to reach it (`mcpmux.toml` only; defaults elsewhere).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ServerOptions {
    /// Retries of a read-only or idempotent call after a transport failure (`max_retries`).
    pub max_retries: u32,
    /// Largest tool result kept inline, in bytes (`max_result_bytes`).
    pub max_result_bytes: usize,
    /// Reconnect delays after a crash or a lost session (`backoff`).
    pub backoff: Backoff,
    /// When to stop sending calls to a failing server (`breaker`).
    pub breaker: Breaker,
    /// How long a stdio server gets to exit after its stdin closes (`shutdown_grace`).
    pub shutdown_grace: Duration,
    /// Which of its tools are exposed and callable (`tools.allow` / `tools.deny`).
    pub tools: ToolFilter,
    /// The stages this server's tools are for; `None` means every stage (`stages`).
    pub stages: Option<Vec<String>>,
    /// The agents this server's tools are for; `None` means every agent (`agents`).
    pub agents: Option<Vec<String>>,
    /// Side effects declared per tool, overriding what its annotations say (`side_effects`):
    /// raw tool name or glob → classes (`read`, `mutate`, `destructive`, `network`).
    pub side_effects: BTreeMap<String, Vec<String>>,
    /// Start on first use rather than with the hub (`lazy`); `None` follows the hub's
    /// `HubOptions::lazy`.
    pub lazy: Option<bool>,
    /// What a local server (and a `headersHelper`) may touch (`sandbox`); `None` until the
    /// config's defaults are applied, then `None` means unsandboxed.
    pub sandbox: Option<super::sandbox::Sandbox>,
}

/// Global permission rules (`[policy]` in mcpmux.toml). Each entry is a tool-name glob
/// (`mcp__github__*`, Claude-style) or a side-effect class written `effect:<class>`
/// (`effect:mutate`). A call matching a `deny` entry is refused, else one matching `ask` needs
/// approval, else it is allowed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PolicyRules {
    /// Entries that allow without asking.
    pub allow: Vec<String>,
    /// Entries that need the harness's (or the user's) approval.
    pub ask: Vec<String>,
    /// Entries that are refused.
    pub deny: Vec<String>,
}

/// Reconnect delays: `initial`, doubling with jitter up to `max`, giving up after `give_up`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Backoff {
    /// First delay.
    pub initial: Duration,
    /// Longest delay.
    pub max: Duration,
    /// Total time of failed reconnects after which the server is disabled.
    pub give_up: Duration,
}

/// The circuit breaker: `threshold` consecutive failed calls open it for `cool_down`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Breaker {
    /// Consecutive failures (transport, timeout, server error) that open the breaker.
    pub threshold: u32,
    /// How long it stays open before one probe call may half-open it.
    pub cool_down: Duration,
}

/// Glob lists on raw (`create_issue`) or exposed (`mcp__github__create_issue`) tool names.
/// Empty `allow` allows everything; `deny` wins over `allow`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ToolFilter {
    /// Globs of tools to expose; empty means all.
    pub allow: Vec<String>,
    /// Globs of tools to hide (and refuse to call).
    pub deny: Vec<String>,
}

impl Default for ServerOptions {
    fn default() -> Self {
        Self {
            max_retries: defaults::MAX_RETRIES,
            max_result_bytes: defaults::MAX_RESULT_BYTES,
            backoff: Backoff::default(),
            breaker: Breaker::default(),
            shutdown_grace: defaults::SHUTDOWN_GRACE,
            tools: ToolFilter::default(),
            stages: None,
            agents: None,
            side_effects: BTreeMap::new(),
            lazy: None,
            sandbox: None,
        }
    }
}

impl Default for Backoff {
    fn default() -> Self {
        Self {
            initial: defaults::BACKOFF_INITIAL,
            max: defaults::BACKOFF_MAX,
            give_up: defaults::BACKOFF_GIVE_UP,
        }
    }
}

impl Default for Breaker {
    fn default() -> Self {
        Self {
            threshold: defaults::BREAKER_THRESHOLD,
            cool_down: defaults::BREAKER_COOL_DOWN,
        }
    }
}

/// How a server is reached.
#[derive(Clone, PartialEq)]
#[non_exhaustive]
pub enum TransportSpec {
    /// A local child process speaking newline-delimited JSON-RPC on stdin/stdout.
    Stdio {
        /// Program to run (looked up on `PATH` when it has no slash).
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Extra environment, on top of the allowlisted variables of ours.
        env: BTreeMap<String, String>,
        /// Working directory; ours when absent.
        cwd: Option<PathBuf>,
    },
    /// Streamable HTTP (MCP 2025-03-26 and later).
    Http {
        /// Endpoint URL.
        url: String,
        /// Static headers sent with every request.
        headers: BTreeMap<String, String>,
    },
    /// Legacy HTTP+SSE (2024-11-05).
    Sse {
        /// The SSE endpoint URL.
        url: String,
        /// Static headers sent with every request.
        headers: BTreeMap<String, String>,
    },
    /// WebSocket with the `mcp` subprotocol.
    Ws {
        /// `ws://` or `wss://` URL.
        url: String,
        /// Static headers sent on the upgrade request.
        headers: BTreeMap<String, String>,
    },
    /// A server living in this process, connected over an in-memory duplex.
    InProcess(InProcessServer),
}

/// A factory for an in-process server; each connect gets a fresh server value.
#[derive(Clone)]
pub struct InProcessServer {
    /// A label shown in `mcpmux servers` and used in the era cache key.
    pub label: String,
    /// Serves one MCP session on the given stream until it closes.
    pub serve: Arc<dyn Fn(tokio::io::DuplexStream) -> InProcessFuture + Send + Sync>,
}

/// The future an in-process server runs for one session.
pub type InProcessFuture = std::pin::Pin<Box<dyn Future<Output = ()> + Send>>;

impl PartialEq for InProcessServer {
    fn eq(&self, other: &Self) -> bool {
        self.label == other.label && Arc::ptr_eq(&self.serve, &other.serve)
    }
}

/// Where a spec came from: the file and the dialect it was read in.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Origin {
    /// A config file on disk.
    File {
        /// The file's path.
        path: PathBuf,
        /// The dialect it was read in.
        dialect: Dialect,
    },
    /// Built in code by the embedding harness.
    Code,
    /// The embedded demo server used when nothing is configured.
    Demo,
    /// Arrived with a plugin or an imported tool config rather than written by the person:
    /// started only when no hand-written or earlier server has the same signature.
    Plugin {
        /// The plugin or imported config it came from, as shown in `mcpmux servers`.
        source: String,
    },
}

impl Origin {
    /// Whether the person wrote this entry (a config file, code, the demo): such servers are
    /// never merged with another, whatever their signature.
    pub fn is_hand_written(&self) -> bool {
        !matches!(self, Origin::Plugin { .. })
    }
}

impl ServerSpec {
    /// A spec with the documented defaults, for harnesses that build specs in code.
    pub fn new(name: impl Into<String>, transport: TransportSpec) -> Self {
        let probe_timeout = match transport {
            TransportSpec::Http { .. } => defaults::HTTP_PROBE_TIMEOUT,
            _ => defaults::PROBE_TIMEOUT,
        };
        Self {
            name: name.into(),
            transport,
            enabled: true,
            required: false,
            startup_timeout: defaults::STARTUP_TIMEOUT,
            call_timeout: defaults::CALL_TIMEOUT,
            probe_timeout,
            options: ServerOptions::default(),
            auth: AuthSpec::default(),
            origin: Origin::Code,
        }
    }

    /// A stdio spec: `command` with `args`, nothing else set.
    pub fn stdio<I, S>(name: impl Into<String>, command: impl Into<String>, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self::new(
            name,
            TransportSpec::Stdio {
                command: command.into(),
                args: args.into_iter().map(Into::into).collect(),
                env: BTreeMap::new(),
                cwd: None,
            },
        )
    }

    /// A streamable HTTP spec for `url`.
    pub fn http(name: impl Into<String>, url: impl Into<String>) -> Self {
        Self::new(
            name,
            TransportSpec::Http {
                url: url.into(),
                headers: BTreeMap::new(),
            },
        )
    }

    /// Builder-style: set the startup timeout.
    pub fn with_startup_timeout(mut self, timeout: Duration) -> Self {
        self.startup_timeout = timeout;
        self
    }

    /// Builder-style: set the default call timeout.
    pub fn with_call_timeout(mut self, timeout: Duration) -> Self {
        self.call_timeout = timeout;
        self
    }

    /// Builder-style: set the era probe timeout.
    pub fn with_probe_timeout(mut self, timeout: Duration) -> Self {
        self.probe_timeout = timeout;
        self
    }

    /// Builder-style: add an environment variable (stdio only; ignored otherwise).
    pub fn with_env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        if let TransportSpec::Stdio { env, .. } = &mut self.transport {
            env.insert(key.into(), value.into());
        }
        self
    }

    /// Builder-style: set the per-server options.
    pub fn with_options(mut self, options: ServerOptions) -> Self {
        self.options = options;
        self
    }

    /// Builder-style: set how a remote server is authenticated to.
    pub fn with_auth(mut self, auth: AuthSpec) -> Self {
        self.auth = auth;
        self
    }

    /// Builder-style: mark as required or not.
    pub fn with_required(mut self, required: bool) -> Self {
        self.required = required;
        self
    }

    /// A stable key for this server's identity (transport + command/args or url, not env or
    /// headers), used for the era cache and for deduplicating plugin servers.
    pub fn signature(&self) -> String {
        self.transport.signature()
    }
}

impl TransportSpec {
    /// The short transport name shown to users: `stdio`, `http`, `sse`, `ws`, `inproc`.
    pub fn kind(&self) -> &'static str {
        match self {
            TransportSpec::Stdio { .. } => "stdio",
            TransportSpec::Http { .. } => "http",
            TransportSpec::Sse { .. } => "sse",
            TransportSpec::Ws { .. } => "ws",
            TransportSpec::InProcess(_) => "inproc",
        }
    }

    /// See [`ServerSpec::signature`].
    pub fn signature(&self) -> String {
        match self {
            TransportSpec::Stdio { command, args, .. } => {
                let mut s = format!("stdio:{command}");
                for arg in args {
                    s.push('\u{1f}');
                    s.push_str(arg);
                }
                s
            }
            TransportSpec::Http { url, .. } => format!("http:{url}"),
            TransportSpec::Sse { url, .. } => format!("sse:{url}"),
            TransportSpec::Ws { url, .. } => format!("ws:{url}"),
            TransportSpec::InProcess(server) => format!("inproc:{}", server.label),
        }
    }
}

/// Header and env values are secrets: specs are printed with them redacted.
const REDACTED: &str = "<redacted>";

fn redacted_map(map: &BTreeMap<String, String>) -> BTreeMap<&str, &str> {
    map.keys().map(|k| (k.as_str(), REDACTED)).collect()
}

impl fmt::Debug for TransportSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TransportSpec::Stdio {
                command,
                args,
                env,
                cwd,
            } => f
                .debug_struct("Stdio")
                .field("command", command)
                .field("args", args)
                .field("env", &redacted_map(env))
                .field("cwd", cwd)
                .finish(),
            TransportSpec::Http { url, headers }
            | TransportSpec::Sse { url, headers }
            | TransportSpec::Ws { url, headers } => f
                .debug_struct(self.kind())
                .field("url", &redact_url(url))
                .field("headers", &redacted_map(headers))
                .finish(),
            TransportSpec::InProcess(server) => {
                f.debug_tuple("InProcess").field(&server.label).finish()
            }
        }
    }
}

impl fmt::Debug for ServerSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerSpec")
            .field("name", &self.name)
            .field("transport", &self.transport)
            .field("enabled", &self.enabled)
            .field("required", &self.required)
            .field("startup_timeout", &self.startup_timeout)
            .field("call_timeout", &self.call_timeout)
            .field("probe_timeout", &self.probe_timeout)
            .field("options", &self.options)
            .field("auth", &self.auth)
            .field("origin", &self.origin)
            .finish()
    }
}

impl fmt::Display for TransportSpec {
    /// What `mcpmux servers` prints as the target: the command line or the URL (without its
    /// query or userinfo).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TransportSpec::Stdio { command, args, .. } => {
                write!(f, "{command}")?;
                for arg in args {
                    write!(f, " {arg}")?;
                }
                Ok(())
            }
            TransportSpec::Http { url, .. }
            | TransportSpec::Sse { url, .. }
            | TransportSpec::Ws { url, .. } => f.write_str(&redact_url(url)),
            TransportSpec::InProcess(server) => write!(f, "in-process {}", server.label),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_output_redacts_env_and_headers() {
        let spec =
            ServerSpec::stdio("gh", "gh-mcp", ["--stdio"]).with_env("GITHUB_TOKEN", "s3cr3t");
        let printed = format!("{spec:?}");
        assert!(printed.contains("GITHUB_TOKEN"), "{printed}");
        assert!(!printed.contains("s3cr3t"), "{printed}");

        let mut http = ServerSpec::http("remote", "https://example.test/mcp");
        if let TransportSpec::Http { headers, .. } = &mut http.transport {
            headers.insert("Authorization".into(), "Bearer abc".into());
        }
        let printed = format!("{http:?}");
        assert!(!printed.contains("Bearer abc"), "{printed}");
    }

    #[test]
    fn a_url_is_printed_without_its_query_or_userinfo() {
        let spec = ServerSpec::http("r", "https://u:S2@example.test/mcp?api_key=S1");
        for printed in [spec.transport.to_string(), format!("{spec:?}")] {
            assert!(printed.contains("https://example.test/mcp?…"), "{printed}");
            assert!(
                !printed.contains("S1") && !printed.contains("S2"),
                "{printed}"
            );
        }
    }

    #[test]
    fn signature_distinguishes_args_and_ignores_env() {
        let a = ServerSpec::stdio("a", "npx", ["-y", "pkg"]);
        let b = ServerSpec::stdio("b", "npx", ["-y pkg"]);
        assert_ne!(a.signature(), b.signature());
        let c = ServerSpec::stdio("c", "npx", ["-y", "pkg"]).with_env("X", "1");
        assert_eq!(a.signature(), c.signature());
    }
}
