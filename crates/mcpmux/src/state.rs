//! What the library tells a harness about its servers: the protocol era found, the state each
//! server's supervisor publishes, and the events a harness may react to. Plain data: it knows
//! nothing of how a connection reaches those states. Its texts show URLs redacted
//! (`crate::redact`).

use std::borrow::Cow;
use std::time::SystemTime;

use crate::redact::redact_text;

use serde::{Deserialize, Serialize};

/// The two live eras of MCP.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Era {
    /// `initialize` handshake, protocol 2024-11-05 … 2025-11-25.
    Handshake,
    /// Stateless `server/discover`, protocol 2026-07-28 and later.
    Stateless,
}

impl std::fmt::Display for Era {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Era::Handshake => "handshake",
            Era::Stateless => "stateless",
        })
    }
}

/// The state of one server, as published by its supervisor.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ServerState {
    /// Connecting, or waiting to reconnect after the connection was lost.
    Pending {
        /// 1 for the first attempt.
        attempt: u32,
        /// When the next reconnect attempt starts, while waiting for it.
        #[serde(skip)]
        next_retry_at: Option<SystemTime>,
        /// Why the last connection or attempt ended, when reconnecting.
        last_error: Option<String>,
    },
    /// Connected; its tools are in the hub's tool set.
    Connected {
        /// The protocol era found.
        era: Era,
        /// The protocol version in use.
        version: String,
        /// How many tools it offers.
        tools: usize,
        /// Bumped each time its tool list changes.
        tools_version: u64,
    },
    /// Could not connect.
    Failed {
        /// What went wrong and what to do.
        error: String,
        /// The last lines the server wrote to stderr.
        stderr_tail: Vec<String>,
    },
    /// The server needs authorization (HTTP 401); not retried until the user logs in.
    NeedsAuth {
        /// What the server said, and what would authorize it.
        message: String,
        /// A login would authorize it: the OAuth flow `auth::login` runs (the CLI's
        /// `mcpmux auth login NAME`). False when the credentials its config gives were refused
        /// and only better ones in its config help.
        login: bool,
    },
    /// Not in use: disabled in config, given up on, or held off by the circuit breaker.
    Disabled {
        /// Why.
        reason: String,
    },
    /// Shut down by us.
    Stopped,
    /// Lazy: not started yet; it starts on first use (a call to one of its tools, or a
    /// listing that needs it). Its cached tools, when the tool cache has them, are listed.
    Idle,
    /// A project-level server the person has not approved: never started.
    Untrusted {
        /// What it would run and the command that approves it.
        message: String,
    },
}

impl ServerState {
    /// The one-word name of the state: `pending`, `connected`, `failed`, `needs_auth`,
    /// `disabled`, `stopped`, `idle`, `untrusted`.
    pub fn label(&self) -> &'static str {
        match self {
            ServerState::Pending { .. } => "pending",
            ServerState::Connected { .. } => "connected",
            ServerState::Failed { .. } => "failed",
            ServerState::NeedsAuth { .. } => "needs_auth",
            ServerState::Disabled { .. } => "disabled",
            ServerState::Stopped => "stopped",
            ServerState::Idle => "idle",
            ServerState::Untrusted { .. } => "untrusted",
        }
    }

    /// This state with every URL in its texts shown as
    /// [`redact_url`](crate::redact::redact_url) shows it: what the supervisor publishes and
    /// `mcpmux servers` prints.
    pub(crate) fn redacted(self) -> Self {
        let clean = |text: String| match redact_text(&text) {
            Cow::Borrowed(_) => text,
            Cow::Owned(clean) => clean,
        };
        match self {
            ServerState::Pending {
                attempt,
                next_retry_at,
                last_error,
            } => ServerState::Pending {
                attempt,
                next_retry_at,
                last_error: last_error.map(clean),
            },
            ServerState::Failed { error, stderr_tail } => ServerState::Failed {
                error: clean(error),
                stderr_tail: stderr_tail.into_iter().map(clean).collect(),
            },
            ServerState::NeedsAuth { message, login } => ServerState::NeedsAuth {
                message: clean(message),
                login,
            },
            ServerState::Disabled { reason } => ServerState::Disabled {
                reason: clean(reason),
            },
            ServerState::Untrusted { message } => ServerState::Untrusted {
                message: clean(message),
            },
            other @ (ServerState::Connected { .. } | ServerState::Stopped | ServerState::Idle) => {
                other
            }
        }
    }

    pub(crate) fn connecting() -> Self {
        ServerState::Pending {
            attempt: 1,
            next_retry_at: None,
            last_error: None,
        }
    }
}

/// Something a harness may want to react to.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum HubEvent {
    /// A server changed state.
    StateChanged {
        /// The server.
        server: String,
        /// Its new state.
        state: ServerState,
    },
    /// A server's tool list changed while connected: rebuild the model's tool list.
    ToolsChanged {
        /// The server.
        server: String,
    },
    /// The hub's servers were changed ([`Hub::reconfigure`](crate::Hub::reconfigure)): the
    /// tool set may have changed with them.
    Reconfigured(Reload),
}

/// What [`Hub::reconfigure`](crate::Hub::reconfigure) changed, by server name (each list in
/// config order).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Reload {
    /// Servers new to the hub, started as configured (eagerly or on first use).
    pub added: Vec<String>,
    /// Servers no longer configured: stopped, their processes reaped.
    pub removed: Vec<String>,
    /// Servers whose connection changed (command, arguments, environment, URL, timeouts, …):
    /// the old one stopped, a new one started.
    pub restarted: Vec<String>,
    /// Servers whose connection is unchanged but whose tool filter, scope, side effects, result
    /// limit or `required` changed: their session is kept and the new settings apply at once.
    pub updated: Vec<String>,
    /// Servers whose entry is unchanged: their session, calls in flight and breaker are kept.
    pub kept: Vec<String>,
    /// Whether the permission rules (`[policy]`) changed.
    pub policy_changed: bool,
}

impl Reload {
    /// Whether nothing a harness would notice changed: no server added, removed, restarted or
    /// updated, and the same permission rules.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty()
            && self.removed.is_empty()
            && self.restarted.is_empty()
            && self.updated.is_empty()
            && !self.policy_changed
    }
}

/// One line: `added a, b; removed c; restarted d; updated e; policy changed; 2 unchanged`.
impl std::fmt::Display for Reload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut parts = Vec::new();
        for (what, names) in [
            ("added", &self.added),
            ("removed", &self.removed),
            ("restarted", &self.restarted),
            ("updated", &self.updated),
        ] {
            if !names.is_empty() {
                parts.push(format!("{what} {}", names.join(", ")));
            }
        }
        if self.policy_changed {
            parts.push("policy changed".into());
        }
        if parts.is_empty() {
            parts.push("nothing changed".into());
        }
        parts.push(format!("{} unchanged", self.kept.len()));
        f.write_str(&parts.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_published_state_shows_no_url_query_or_userinfo() {
        let url = "see http://u:S2@h:1/mcp?api_key=S1 now";
        let states = [
            ServerState::Pending {
                attempt: 2,
                next_retry_at: None,
                last_error: Some(url.into()),
            },
            ServerState::Failed {
                error: url.into(),
                stderr_tail: vec![url.into()],
            },
            ServerState::NeedsAuth {
                message: url.into(),
                login: true,
            },
            ServerState::Disabled { reason: url.into() },
            ServerState::Untrusted {
                message: url.into(),
            },
        ];
        for state in states {
            let shown = format!("{:?}", state.redacted());
            assert!(shown.contains("http://h:1/mcp?…"), "{shown}");
            assert!(!shown.contains("S1") && !shown.contains("S2"), "{shown}");
        }
    }
}
