//! How the gateway serves the hub: the scope, the servers readiness waits for, how long a
//! first list waits for startup, the servers whose resources and prompts are not served, the
//! host the hub was started with, the page size, whether a policy `ask` is asked of the
//! calling client, and which names tools are served under (the hub's, short ones, or one
//! server's own), and tool search. Plain settings; knows nothing of sessions.

use std::time::Duration;

use crate::access::AskRoute;
use crate::client_rounds::WaitingLimits;
use crate::paging::DEFAULT_PAGE_SIZE;
use crate::search::SearchOptions;

/// How long the first `tools/list` waits for the hub's servers to settle (their first
/// connection attempts), so a client that lists at once sees the servers that start quickly;
/// later lists never wait, and a server that connects later is announced with `list_changed`.
pub const DEFAULT_LIST_WAIT: Duration = Duration::from_secs(10);

/// How the gateway serves the hub.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct GatewayOptions {
    /// Only what this stage and agent may use is served: the tools, resources, templates,
    /// prompts and notices of the servers it admits; calls outside it are refused.
    pub scope: Option<mcpmux::Scope>,
    /// Servers `/readyz` waits for (the config's `required` servers).
    pub required: Vec<String>,
    /// How long a `tools/list` waits for startup to settle (10 s by default).
    pub list_wait: Duration,
    /// The host the hub was started with ([`mcpmux::Host::relaying`], so the servers may ask
    /// the calling clients for roots, sampling and elicitation): its resource updates, list
    /// changes and server logs are passed on to the clients. Without it none are.
    pub host: Option<mcpmux::Host>,
    /// Items per page of the lists served.
    pub page_size: usize,
    /// A policy `ask` becomes an elicitation to the calling client when it can answer one
    /// (else the hub's approver decides); false leaves every `ask` to the hub's approver (what
    /// `--yes` wants).
    pub ask_clients: bool,
    /// Serve the one upstream server's tools and prompts under its own names (`passthrough`).
    pub passthrough: bool,
    /// Serve `server__tool` names fitted to this many characters instead of
    /// `mcp__server__tool`, for clients that put a prefix of their own before them
    /// (`--names short`; for Claude Code `CLAUDE_CODE_SHORT_NAME_LEN`). Pass-through
    /// mode wins over it.
    pub short_names: Option<usize>,
    /// How many 2026-07-28 calls may wait for their clients' answers (`input_required`).
    pub waiting: WaitingLimits,
    /// Where a policy `ask` goes for identities whose access rule does not say (`--ask`);
    /// `None`: to a local client, refused for every other identity.
    pub ask: Option<AskRoute>,
    /// Tool search (`--search`): `tools/list` answers the pinned tools, the tools the session
    /// found and the `search_tools` and `call_tool` meta-tools. Not with pass-through.
    pub search: Option<SearchOptions>,
}

impl Default for GatewayOptions {
    fn default() -> Self {
        Self {
            scope: None,
            required: Vec::new(),
            list_wait: DEFAULT_LIST_WAIT,
            host: None,
            page_size: DEFAULT_PAGE_SIZE,
            ask_clients: true,
            passthrough: false,
            short_names: None,
            waiting: WaitingLimits::default(),
            ask: None,
            search: None,
        }
    }
}

impl GatewayOptions {
    /// Builder-style: serve only what `scope` may use.
    pub fn with_scope(mut self, scope: Option<mcpmux::Scope>) -> Self {
        self.scope = scope;
        self
    }

    /// Builder-style: the servers readiness waits for.
    pub fn with_required(mut self, required: Vec<String>) -> Self {
        self.required = required;
        self
    }

    /// Builder-style: how long a `tools/list` waits for startup to settle.
    pub fn with_list_wait(mut self, wait: Duration) -> Self {
        self.list_wait = wait;
        self
    }

    /// Builder-style: the host the hub was started with (see [`GatewayOptions::host`]).
    pub fn with_host(mut self, host: mcpmux::Host) -> Self {
        self.host = Some(host);
        self
    }

    /// Builder-style: items per page of the lists served (at least 1).
    pub fn with_page_size(mut self, size: usize) -> Self {
        self.page_size = size.max(1);
        self
    }

    /// Builder-style: serve tools and prompts under the upstream server's own names. For one
    /// server only: check the configuration with [`crate::check_one_server`] first.
    pub fn with_passthrough(mut self, passthrough: bool) -> Self {
        self.passthrough = passthrough;
        self
    }

    /// Builder-style: serve `server__tool` names fitted to `max_len` characters (`None`: the
    /// hub's names).
    pub fn with_short_names(mut self, max_len: Option<usize>) -> Self {
        self.short_names = max_len;
        self
    }

    /// Builder-style: how many 2026-07-28 calls may wait for their clients' answers.
    pub fn with_waiting(mut self, waiting: WaitingLimits) -> Self {
        self.waiting = waiting;
        self
    }

    /// Builder-style: where a policy `ask` goes for identities whose rule does not say.
    pub fn with_ask(mut self, ask: Option<AskRoute>) -> Self {
        self.ask = ask;
        self
    }

    /// Builder-style: serve tool search (see [`GatewayOptions::search`]).
    pub fn with_search(mut self, search: Option<SearchOptions>) -> Self {
        self.search = search;
        self
    }

    /// Builder-style: whether a policy `ask` is asked of the calling client.
    pub fn with_ask_clients(mut self, ask: bool) -> Self {
        self.ask_clients = ask;
        self
    }
}
