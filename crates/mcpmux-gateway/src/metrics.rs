//! What `/metrics` shows, in the Prometheus (OpenMetrics) text format: calls, failed calls and
//! call latency per server and tool (counters and a histogram, told by the hub's call seam), each
//! upstream server's state (a gauge per server and state, read from the hub at scrape time)
//! and the open downstream sessions (given by the transport); the client connections open,
//! refused past a cap and cut by a deadline (counted by the connection layer). Label values come from config
//! keys and names a client sent: they are escaped here, since `prometheus-client` writes them
//! as they are, and a name the hub does not know is never a label (no client can grow the
//! series without bound). Knows nothing of HTTP.

use std::collections::BTreeSet;
use std::fmt::Write;
use std::sync::Mutex;
use std::time::Duration;

use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue, LabelValueEncoder};
use prometheus_client::metrics::{
    counter::Counter,
    family::Family,
    gauge::Gauge,
    histogram::{Histogram, exponential_buckets},
};
use prometheus_client::registry::Registry;

/// The content type of the exposition.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Every state a server can be in, as [`mcpmux::ServerState::label`] names it: each gets a
/// series per server (1 for the state it is in, 0 for the others).
const STATES: [&str; 8] = [
    "pending",
    "connected",
    "failed",
    "needs_auth",
    "disabled",
    "stopped",
    "idle",
    "untrusted",
];

/// A label value written with `\`, `"` and line feeds escaped, as the text format wants.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
struct Text(String);

impl EncodeLabelValue for Text {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> Result<(), std::fmt::Error> {
        for c in self.0.chars() {
            match c {
                '\\' => encoder.write_str("\\\\")?,
                '"' => encoder.write_str("\\\"")?,
                '\n' => encoder.write_str("\\n")?,
                c => encoder.write_char(c)?,
            }
        }
        Ok(())
    }
}

/// One tool of one server.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CallLabels {
    server: Text,
    tool: Text,
}

/// One state of one server.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StateLabels {
    server: Text,
    state: Text,
}

/// Why a connection was refused or cut: one of a few fixed words.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabels {
    reason: Text,
}

type LatencyFamily = Family<CallLabels, Histogram, fn() -> Histogram>;

/// The gateway's metrics.
pub struct Metrics {
    registry: Registry,
    calls: Family<CallLabels, Counter>,
    errors: Family<CallLabels, Counter>,
    latency: LatencyFamily,
    states: Family<StateLabels, Gauge>,
    /// The servers `states` has series of: a server a reload removed loses them.
    stated: Mutex<BTreeSet<String>>,
    sessions: Gauge,
    parked: Gauge,
    connections: Gauge,
    refused: Family<ReasonLabels, Counter>,
    cut: Family<ReasonLabels, Counter>,
}

/// Buckets of call latency: 5 ms to about 41 s, doubling (a tool call is a process spawn, a
/// network round trip or minutes of work; past the last bucket `+Inf` still counts it).
fn latency_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.005, 2.0, 14))
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::default();
        let calls = Family::<CallLabels, Counter>::default();
        let errors = Family::<CallLabels, Counter>::default();
        let latency: LatencyFamily = Family::new_with_constructor(latency_histogram);
        let states = Family::<StateLabels, Gauge>::default();
        let sessions = Gauge::default();
        let parked = Gauge::default();
        let connections = Gauge::default();
        let refused = Family::<ReasonLabels, Counter>::default();
        let cut = Family::<ReasonLabels, Counter>::default();
        registry.register(
            "mcpmux_gateway_calls",
            "Tool calls through the gateway, by upstream server and tool (empty labels: a name the hub does not know)",
            calls.clone(),
        );
        registry.register(
            "mcpmux_gateway_call_errors",
            "Tool calls that failed (an error result or no result), by upstream server and tool",
            errors.clone(),
        );
        registry.register(
            "mcpmux_gateway_call_duration_seconds",
            "Tool call latency through the gateway, by upstream server and tool",
            latency.clone(),
        );
        registry.register(
            "mcpmux_gateway_server_state",
            "Each upstream server's state: 1 for the state it is in, 0 for the others",
            states.clone(),
        );
        registry.register(
            "mcpmux_gateway_sessions",
            "Open downstream sessions (handshake-era HTTP sessions: /mcp and legacy SSE)",
            sessions.clone(),
        );
        registry.register(
            "mcpmux_gateway_sessions_parked",
            "Of the open /mcp sessions, those idle with their worker let go (brought back when next used)",
            parked.clone(),
        );
        registry.register(
            "mcpmux_gateway_connections",
            "Open client connections (HTTP)",
            connections.clone(),
        );
        registry.register(
            "mcpmux_gateway_connections_refused",
            "Client connections closed at once past a cap: `total` (overall) or `peer` (one peer address)",
            refused.clone(),
        );
        registry.register(
            "mcpmux_gateway_connections_cut",
            "Client connections closed by a deadline: `header` (a head too slow), `body` (a body too slow: 408), `idle` (kept alive too long), `unread` (an answer the peer did not read)",
            cut.clone(),
        );
        Self {
            registry,
            calls,
            errors,
            latency,
            states,
            stated: Mutex::default(),
            sessions,
            parked,
            connections,
            refused,
            cut,
        }
    }
}

impl Metrics {
    /// Counts one call of `tool` (its server and exposed name as the hub knows them: `None`
    /// for a name it does not) that took `elapsed`.
    pub fn record(&self, tool: Option<(&str, &str)>, elapsed: Duration, failed: bool) {
        let (server, tool) = tool.unwrap_or_default();
        let labels = CallLabels {
            server: Text(server.to_string()),
            tool: Text(tool.to_string()),
        };
        self.calls.get_or_create(&labels).inc();
        if failed {
            self.errors.get_or_create(&labels).inc();
        }
        self.latency
            .get_or_create(&labels)
            .observe(elapsed.as_secs_f64());
    }

    /// A client connection was taken (`true`) or has ended (`false`).
    pub(crate) fn connection(&self, opened: bool) {
        if opened {
            self.connections.inc();
        } else {
            self.connections.dec();
        }
    }

    /// A client connection was refused past a cap (`total`, `peer`).
    pub(crate) fn connection_refused(&self, reason: &'static str) {
        let reason = Text(reason.to_string());
        self.refused.get_or_create(&ReasonLabels { reason }).inc();
    }

    /// A client connection was cut by a deadline (`header`, `body`, `idle`, `unread`).
    pub(crate) fn connection_cut(&self, reason: &'static str) {
        let reason = Text(reason.to_string());
        self.cut.get_or_create(&ReasonLabels { reason }).inc();
    }

    /// The exposition: the servers' states read from `hub` now, `sessions` (`parked` of them)
    /// as given.
    pub fn render(
        &self,
        hub: &mcpmux::Hub,
        sessions: usize,
        parked: usize,
    ) -> Result<String, std::fmt::Error> {
        let servers = hub.servers();
        let names: BTreeSet<String> = servers.iter().map(|s| s.name.clone()).collect();
        let mut stated = mcpmux::cli_support::sync::lock(&self.stated);
        for gone in stated.difference(&names) {
            for state in STATES {
                self.states.remove(&StateLabels {
                    server: Text(gone.clone()),
                    state: Text(state.to_string()),
                });
            }
        }
        *stated = names;
        drop(stated);
        for server in servers {
            let now = server.state.label();
            for state in STATES {
                let labels = StateLabels {
                    server: Text(server.name.clone()),
                    state: Text(state.to_string()),
                };
                self.states
                    .get_or_create(&labels)
                    .set(i64::from(state == now));
            }
        }
        self.sessions
            .set(i64::try_from(sessions).unwrap_or(i64::MAX));
        self.parked.set(i64::try_from(parked).unwrap_or(i64::MAX));
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &self.registry)?;
        Ok(text)
    }
}

/// The hub tells the metrics of each tool call as it ends (its one seam): server, exposed
/// name, duration, and whether it failed (an error result or no result).
impl mcpmux::CallObserver for Metrics {
    fn call_ended(&self, call: &mcpmux::CallRecord<'_>) {
        if call.kind == mcpmux::CallKind::Tool {
            let tool = call.server.map(|server| (server, call.name));
            self.record(tool, call.duration, call.outcome.failed());
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn hostile_label_values_cannot_break_the_exposition() {
        let metrics = Metrics::default();
        let server = "a\"b\\c\nd} x=\"1";
        metrics.record(Some((server, "mcp__x__t")), Duration::from_millis(3), true);
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &metrics.registry).unwrap();
        let line = text
            .lines()
            .find(|l| l.starts_with("mcpmux_gateway_calls_total{"))
            .unwrap();
        assert_eq!(
            line,
            r#"mcpmux_gateway_calls_total{server="a\"b\\c\nd} x=\"1",tool="mcp__x__t"} 1"#
        );
        // Every sample line is one line: no value ran onto the next.
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            assert!(line.starts_with("mcpmux_gateway_"), "{line:?} in\n{text}");
        }
    }
}
