//! The raw JSON-RPC gate: decisions rmcp's server cannot be told to make.
//!
//! rmcp 3.9.0 validates `server/discover`'s `_meta` before the handler's `discover` hook runs (a
//! bare discover gets -32602, never -32601), a failed `initialize` ends the whole stdio
//! session, a notification before the lifecycle is chosen ends it too, and it answers every
//! request (unknown methods with -32601). To behave like a handshake-only
//! server, a stateless-only server, or one that ignores unknown methods, each incoming message
//! is judged here on its raw `method` *before* rmcp parses it; the stdio transport and the HTTP
//! middleware both ask this module. It knows nothing about transports or tools.

use std::borrow::Cow;

use rmcp::model::{ErrorCode, ErrorData, ProtocolVersion, RequestId};
use serde::Deserialize;

use crate::cli::Era;

/// What to do with one incoming message.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Hand it to rmcp.
    Pass,
    /// Read it and never answer.
    Drop,
    /// Answer it with this JSON-RPC error, without rmcp seeing it.
    Reply(ErrorData),
}

/// The rules from the command line.
#[derive(Debug, Clone, Copy)]
pub struct Gate {
    pub era: Era,
    pub ignore_unknown: bool,
    pub never_answer: bool,
}

/// The fields of a JSON-RPC message the gate looks at; everything else is skipped.
#[derive(Debug, Deserialize)]
pub struct Probe<'a> {
    #[serde(borrow, default)]
    pub method: Option<Cow<'a, str>>,
    #[serde(default)]
    pub id: Option<RequestId>,
    #[serde(default)]
    params: Option<ProbeParams<'a>>,
}

#[derive(Debug, Deserialize)]
struct ProbeParams<'a> {
    #[serde(borrow, default, rename = "protocolVersion")]
    protocol_version: Option<Cow<'a, str>>,
}

/// Methods this server implements in the handshake era (what rmcp answers with a real result
/// for this handler). Notifications are never judged.
const HANDSHAKE_METHODS: &[&str] = &[
    "initialize",
    "ping",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/templates/list",
    "prompts/list",
    "completion/complete",
    "logging/setLevel",
];

/// Methods a 2026-07-28 (stateless) server implements: no `initialize`, no `ping`.
const STATELESS_METHODS: &[&str] = &[
    "server/discover",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/templates/list",
    "prompts/list",
    "completion/complete",
];

impl Gate {
    /// True when every message passes, so callers can skip probing altogether.
    pub fn is_transparent(&self) -> bool {
        self.era == Era::Both && !self.ignore_unknown && !self.never_answer
    }

    /// Judge one message. `probe` is `None` when the line was JSON but not a JSON-RPC object.
    pub fn judge(&self, probe: &Probe<'_>) -> Verdict {
        if self.never_answer {
            return Verdict::Drop;
        }
        if self.era == Era::Stateless
            && probe.id.is_none()
            && probe.method.as_deref() == Some("notifications/initialized")
        {
            // No handshake in this era; rmcp would end the session on a notification that
            // arrives before any request chose a lifecycle.
            return Verdict::Drop;
        }
        let (Some(method), Some(_)) = (probe.method.as_deref(), probe.id.as_ref()) else {
            // Notifications and responses are never answered anyway.
            return Verdict::Pass;
        };
        if self.ignore_unknown && !self.implements(method) {
            return Verdict::Drop;
        }
        match (self.era, method) {
            // Exactly what the Node reference servers send for a method they do not know.
            (Era::Handshake, "server/discover") => Verdict::Reply(ErrorData::new(
                ErrorCode::METHOD_NOT_FOUND,
                "Method not found",
                None,
            )),
            // What rmcp itself answers when a server supports no version with a handshake.
            (Era::Stateless, "initialize") => {
                let requested = probe
                    .params
                    .as_ref()
                    .and_then(|params| params.protocol_version.as_deref())
                    .unwrap_or_default();
                let requested: ProtocolVersion =
                    serde_json::from_value(serde_json::Value::String(requested.to_owned()))
                        .unwrap_or_default();
                Verdict::Reply(ErrorData::unsupported_protocol_version(
                    requested,
                    &[ProtocolVersion::V_2026_07_28],
                ))
            }
            _ => Verdict::Pass,
        }
    }

    fn implements(&self, method: &str) -> bool {
        match self.era {
            // `--ignore-unknown` models a legacy server: discover is unknown to it.
            Era::Both | Era::Handshake => HANDSHAKE_METHODS.contains(&method),
            Era::Stateless => STATELESS_METHODS.contains(&method),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe(line: &str) -> Probe<'_> {
        serde_json::from_str(line).unwrap_or(Probe {
            method: None,
            id: None,
            params: None,
        })
    }

    const DISCOVER: &str = r#"{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{}}"#;
    const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}"#;
    const CUSTOM: &str = r#"{"jsonrpc":"2.0","id":"a","method":"x/y"}"#;
    const NOTE: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

    fn gate(era: Era, ignore_unknown: bool) -> Gate {
        Gate {
            era,
            ignore_unknown,
            never_answer: false,
        }
    }

    #[test]
    fn both_passes_everything() {
        let gate = gate(Era::Both, false);
        assert!(gate.is_transparent());
        for line in [DISCOVER, INIT, CUSTOM, NOTE] {
            assert_eq!(gate.judge(&probe(line)), Verdict::Pass);
        }
    }

    #[test]
    fn handshake_rejects_discover_like_node() {
        let Verdict::Reply(error) = gate(Era::Handshake, false).judge(&probe(DISCOVER)) else {
            panic!("discover must be answered with an error");
        };
        assert_eq!(error.code, ErrorCode::METHOD_NOT_FOUND);
        assert_eq!(error.message, "Method not found");
        assert_eq!(
            gate(Era::Handshake, false).judge(&probe(INIT)),
            Verdict::Pass
        );
    }

    #[test]
    fn stateless_rejects_initialize() {
        let Verdict::Reply(error) = gate(Era::Stateless, false).judge(&probe(INIT)) else {
            panic!("initialize must be answered with an error");
        };
        assert_eq!(error.code, ErrorCode::UNSUPPORTED_PROTOCOL_VERSION);
        assert_eq!(
            gate(Era::Stateless, false).judge(&probe(DISCOVER)),
            Verdict::Pass
        );
        assert_eq!(
            gate(Era::Stateless, false).judge(&probe(NOTE)),
            Verdict::Drop
        );
    }

    #[test]
    fn ignore_unknown_drops_discover_and_custom_methods() {
        let gate = gate(Era::Both, true);
        assert_eq!(gate.judge(&probe(DISCOVER)), Verdict::Drop);
        assert_eq!(gate.judge(&probe(CUSTOM)), Verdict::Drop);
        assert_eq!(gate.judge(&probe(INIT)), Verdict::Pass);
        assert_eq!(gate.judge(&probe(NOTE)), Verdict::Pass);
    }

    #[test]
    fn never_answer_drops_everything() {
        let gate = Gate {
            era: Era::Both,
            ignore_unknown: false,
            never_answer: true,
        };
        assert_eq!(gate.judge(&probe(INIT)), Verdict::Drop);
        assert_eq!(gate.judge(&probe(NOTE)), Verdict::Drop);
    }
}
