//! How a hub behaves beyond each server's own spec: the harness's policy, approver, tools,
//! host callbacks, token store, spill folder, era and tool caches, and whether servers start
//! lazily. Plain settings with builders.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::auth::{Authorizer, TokenStore};
use crate::config::PolicyRules;
use crate::connection::era::EraCache;
use crate::connection::tool_cache::ToolCache;
use crate::defaults;
use crate::host::Host;
use crate::local_tools::LocalTools;
use crate::policy::{Approver, DenyAll};
use crate::spill::Spill;
use crate::telemetry::wire::WireLog;

/// How a hub behaves beyond each server's own spec.
#[derive(Clone)]
#[non_exhaustive]
pub struct HubOptions {
    /// Where the era cache lives; `None` keeps it in memory (tests, sandboxes).
    pub era_cache: Option<PathBuf>,
    /// How long every stdio server gets to exit after its stdin closes; `None` uses each
    /// server's own `shutdown_grace` option.
    pub shutdown_grace: Option<Duration>,
    /// Permission rules of the harness, added to the config's `[policy]`.
    pub policy: PolicyRules,
    /// Who decides `ask` calls; without one they are refused.
    pub approver: Arc<dyn Approver>,
    /// Built-in tools and custom handlers (refreshed by the harness before starting).
    pub registry: Arc<LocalTools>,
    /// Where truncated results are spilled in full.
    pub spill: Spill,
    /// Leave the spill files this hub wrote when it shuts down (they are removed otherwise;
    /// files older than a day go when any hub starts).
    pub keep_spills: bool,
    /// Answers to server→client requests (roots, sampling, elicitation); by default none is
    /// offered.
    pub host: Host,
    /// Where OAuth tokens live (the user's token file by default, memory when ephemeral).
    pub token_store: TokenStore,
    /// Runs an OAuth authorization inside the hub when a server needs one; without one such a
    /// server ends `NeedsAuth { login: true }`.
    pub authorizer: Option<Arc<dyn Authorizer>>,
    /// Start each server on its first use (a call to one of its tools, or a listing that needs
    /// it) rather than with the hub; a server's own `lazy` option overrides this.
    pub lazy: bool,
    /// The folder of the tool cache (`$XDG_CACHE_HOME/mcpmux/tools` by default); `None`
    /// lists only what servers say now.
    pub tool_cache: Option<PathBuf>,
    /// How old a cached tool list may be and still be listed (a day by default).
    pub tool_cache_max_age: Duration,
    /// How long calls in flight to a server [`Hub::reconfigure`](crate::Hub::reconfigure)
    /// removed or replaced may take to finish before it is stopped (10 s by default).
    pub reload_drain: Duration,
    /// How long a stdio server's reader polls its pipe for the answer to a lone tool call
    /// before it sleeps (50 µs by default; zero never polls): a quick tool's answer then
    /// comes without the wake-ups of a sleeping reader, for at most this much CPU per call,
    /// and one reader of the hub polls at a time, none while work waits in the runtime's
    /// global queue. Capped at 1 ms: a poll holds a runtime thread.
    pub read_spin: Duration,
    /// Whether a streamable-HTTP server's tool calls, prompts and reads are POSTed from the
    /// calling task (true by default) rather than through rmcp's transport worker: a
    /// handshake-era session's, once rmcp holds its session id. Off only to compare the two.
    pub http_beside: bool,
    /// The most one message from a server may take (a stdio line, an SSE event; 64 MiB by
    /// default): a larger one is skipped unread and fails the request it answers with
    /// "answer over …". A streamable HTTP server's JSON body has rmcp's own bound, 16 MiB.
    pub max_message_bytes: usize,
    /// Where every JSON-RPC message to and from each server is written (`--wire-log`);
    /// `None` writes none.
    pub wire_log: Option<WireLog>,
}

impl std::fmt::Debug for HubOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HubOptions")
            .field("era_cache", &self.era_cache)
            .field("shutdown_grace", &self.shutdown_grace)
            .field("policy", &self.policy)
            .field("local_tools", &self.registry.entries().len())
            .field("token_store", &self.token_store)
            .field("authorizer", &self.authorizer.is_some())
            .field("lazy", &self.lazy)
            .field("tool_cache", &self.tool_cache)
            .field("tool_cache_max_age", &self.tool_cache_max_age)
            .field("reload_drain", &self.reload_drain)
            .field("read_spin", &self.read_spin)
            .field("http_beside", &self.http_beside)
            .field("max_message_bytes", &self.max_message_bytes)
            .field("wire_log", &self.wire_log)
            .finish()
    }
}

impl Default for HubOptions {
    fn default() -> Self {
        Self {
            era_cache: EraCache::default_path(),
            shutdown_grace: None,
            policy: PolicyRules::default(),
            approver: Arc::new(DenyAll),
            registry: Arc::new(LocalTools::new()),
            spill: Spill::in_temp_dir(),
            keep_spills: false,
            host: Host::default(),
            token_store: TokenStore::user_default(),
            authorizer: None,
            lazy: false,
            tool_cache: ToolCache::default_dir(),
            tool_cache_max_age: defaults::TOOL_CACHE_MAX_AGE,
            reload_drain: defaults::RELOAD_DRAIN,
            read_spin: defaults::READ_SPIN,
            http_beside: true,
            max_message_bytes: defaults::MAX_STDIO_FRAME,
            wire_log: None,
        }
    }
}

impl HubOptions {
    /// Options with the era cache and the OAuth tokens kept in memory only, and no tool cache.
    pub fn ephemeral() -> Self {
        Self {
            era_cache: None,
            tool_cache: None,
            token_store: TokenStore::memory(),
            ..Self::default()
        }
    }

    /// Builder-style: where OAuth tokens are kept.
    pub fn with_token_store(mut self, store: TokenStore) -> Self {
        self.token_store = store;
        self
    }

    /// Builder-style: run OAuth authorizations inside the hub with `authorizer`.
    pub fn with_authorizer(mut self, authorizer: Arc<dyn Authorizer>) -> Self {
        self.authorizer = Some(authorizer);
        self
    }

    /// Builder-style: how long a stdio server's reader polls for a lone call's answer
    /// (`Duration::ZERO`: never).
    pub fn with_read_spin(mut self, spin: Duration) -> Self {
        self.read_spin = spin;
        self
    }

    /// Builder-style: whether a streamable-HTTP server's plain requests are POSTed from the
    /// calling task (see [`HubOptions::http_beside`]).
    pub fn with_http_beside(mut self, beside: bool) -> Self {
        self.http_beside = beside;
        self
    }

    /// Builder-style: the most one message from a server may take (see
    /// [`HubOptions::max_message_bytes`]).
    pub fn with_max_message_bytes(mut self, bytes: usize) -> Self {
        self.max_message_bytes = bytes;
        self
    }

    /// Builder-style: set the shutdown grace period.
    pub fn with_shutdown_grace(mut self, grace: Duration) -> Self {
        self.shutdown_grace = Some(grace);
        self
    }

    /// Builder-style: add permission rules (to those of the config).
    pub fn with_policy(mut self, rules: PolicyRules) -> Self {
        self.policy = rules;
        self
    }

    /// Builder-style: who approves `ask` calls.
    pub fn with_approver(mut self, approver: Arc<dyn Approver>) -> Self {
        self.approver = approver;
        self
    }

    /// Builder-style: built-in tools and custom handlers, shown with and routed like MCP tools.
    pub fn with_registry(mut self, registry: LocalTools) -> Self {
        self.registry = Arc::new(registry);
        self
    }

    /// Builder-style: where truncated results are spilled.
    pub fn with_spill(mut self, spill: Spill) -> Self {
        self.spill = spill;
        self
    }

    /// Builder-style: keep the spill files when the hub shuts down.
    pub fn with_keep_spills(mut self, keep: bool) -> Self {
        self.keep_spills = keep;
        self
    }

    /// Builder-style: the harness's answers to server→client requests.
    pub fn with_host(mut self, host: Host) -> Self {
        self.host = host;
        self
    }

    /// Builder-style: set the era cache file.
    pub fn with_era_cache(mut self, path: Option<PathBuf>) -> Self {
        self.era_cache = path;
        self
    }

    /// Builder-style: start servers on first use (see [`HubOptions::lazy`]).
    pub fn with_lazy(mut self, lazy: bool) -> Self {
        self.lazy = lazy;
        self
    }

    /// Builder-style: the tool cache's folder; `None` turns the cache off.
    pub fn with_tool_cache(mut self, dir: Option<PathBuf>) -> Self {
        self.tool_cache = dir;
        self
    }

    /// Builder-style: how old a cached tool list may be and still be listed.
    pub fn with_tool_cache_max_age(mut self, max_age: Duration) -> Self {
        self.tool_cache_max_age = max_age;
        self
    }

    /// Builder-style: write every JSON-RPC message to and from each server to `log`.
    pub fn with_wire_log(mut self, log: WireLog) -> Self {
        self.wire_log = Some(log);
        self
    }

    /// Builder-style: how long a reload lets calls in flight to a server it removes finish.
    pub fn with_reload_drain(mut self, drain: Duration) -> Self {
        self.reload_drain = drain;
        self
    }
}
