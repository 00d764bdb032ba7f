//! The seam every call of the hub starts and ends at: a `tracing` span named and attributed as
//! the OpenTelemetry conventions for MCP say (`{mcp.method.name} {target}`, `mcp.method.name`,
//! `gen_ai.tool.name`, `gen_ai.prompt.name`, `mcp.resource.uri`, `network.transport`,
//! `error.type`), with mcpmux's own beside them (`mcpmux.server`, `mcpmux.transport`,
//! `mcpmux.era`, `mcpmux.outcome`, `mcpmux.bytes_out`, `mcpmux.bytes_in`), and the
//! [`CallRecord`] its observers are told. With no subscriber taking the span and no observer,
//! a call pays one disabled-span check and one atomic load: no clock read, no allocation.

use std::sync::Arc;
use std::time::Instant;

use tracing::Span;
use tracing::field::Empty;

use super::{CALL_TARGET, CallKind, CallObserver, CallRecord, Observers, Outcome};
use crate::error::{Error, Result};
use crate::result::ToolResult;
use crate::state::Era;

/// One call being made: its span, and what its observers will be told.
pub(crate) struct CallProbe<'a> {
    span: Span,
    observers: Option<Arc<Vec<Arc<dyn CallObserver>>>>,
    /// Set only when someone looks (the span is enabled or an observer is there).
    started: Option<Instant>,
    kind: CallKind,
    name: &'a str,
    server: Option<String>,
    transport: Option<&'static str>,
    era: Option<Era>,
    bytes_out: Option<usize>,
}

impl<'a> CallProbe<'a> {
    /// A call of `kind` to `name` starts.
    pub(crate) fn start(observers: &Observers, kind: CallKind, name: &'a str) -> Self {
        let span = tracing::info_span!(
            target: CALL_TARGET,
            "mcp call",
            otel.name = Empty,
            otel.kind = "client",
            otel.status_code = Empty,
            otel.status_message = Empty,
            mcp.method.name = kind.method(),
            gen_ai.operation.name = Empty,
            gen_ai.tool.name = Empty,
            gen_ai.prompt.name = Empty,
            mcp.resource.uri = Empty,
            mcpmux.era = Empty,
            network.transport = Empty,
            error.type = Empty,
            mcpmux.server = Empty,
            mcpmux.transport = Empty,
            mcpmux.outcome = Empty,
            mcpmux.bytes_out = Empty,
            mcpmux.bytes_in = Empty,
            mcpmux.attempts = Empty,
        );
        let observers = observers.current();
        let looked_at = !span.is_disabled();
        if looked_at {
            let method = kind.method();
            match kind {
                CallKind::Tool => {
                    span.record("gen_ai.operation.name", "execute_tool");
                    span.record("gen_ai.tool.name", name);
                    span.record("otel.name", format!("{method} {name}"));
                }
                CallKind::Prompt => {
                    span.record("gen_ai.prompt.name", name);
                    span.record("otel.name", format!("{method} {name}"));
                }
                // A URI is no low-cardinality span name: an attribute only.
                CallKind::Read => {
                    span.record("mcp.resource.uri", resource_uri(name));
                    span.record("otel.name", method);
                }
                CallKind::Complete => {
                    span.record("otel.name", method);
                }
            }
        }
        let started = (looked_at || observers.is_some()).then(Instant::now);
        CallProbe {
            span,
            observers,
            started,
            kind,
            name,
            server: None,
            transport: None,
            era: None,
            bytes_out: None,
        }
    }

    /// The span the call runs in (what it sends to servers carries its trace context).
    pub(crate) fn span(&self) -> &Span {
        &self.span
    }

    /// Whether anyone looks at this call: what is worth computing for it.
    pub(crate) fn wanted(&self) -> bool {
        self.started.is_some()
    }

    /// Where the call went (`server`, `None` for a local tool or a call refused before a
    /// server was chosen; `transport` as `Site` names it), in which `era`, after how many
    /// `attempts`, sending `bytes_out` of arguments.
    pub(crate) fn carried(
        &mut self,
        server: Option<&str>,
        transport: &'static str,
        era: Option<Era>,
        attempts: u32,
        bytes_out: Option<usize>,
    ) {
        if !self.wanted() {
            return;
        }
        if !self.span.is_disabled() {
            if let Some(server) = server {
                self.span.record("mcpmux.server", server);
            }
            self.span.record("mcpmux.transport", transport);
            if let Some(network) = network_transport(transport) {
                self.span.record("network.transport", network);
            }
            if let Some(era) = era {
                self.span.record("mcpmux.era", era.to_string());
            }
            self.span.record("mcpmux.attempts", attempts);
            if let Some(bytes) = bytes_out {
                // As a signed integer: OpenTelemetry has no unsigned one (an u64 is exported
                // as text).
                self.span
                    .record("mcpmux.bytes_out", i64::try_from(bytes).unwrap_or(i64::MAX));
            }
        }
        if self.observers.is_some() {
            self.server = server.map(str::to_string);
        }
        self.transport = Some(transport);
        self.era = era;
        self.bytes_out = bytes_out;
    }

    /// A tool call ended with `result` (a task started counts as answered).
    pub(crate) fn finish_tool(self, result: &Result<crate::task::TaskCall>) {
        if !self.wanted() {
            return;
        }
        match result {
            Ok(crate::task::TaskCall::Completed(answer)) => {
                let outcome = if answer.is_error {
                    Outcome::ToolError
                } else {
                    Outcome::Ok
                };
                self.end(outcome, Some(answer), None);
            }
            Ok(crate::task::TaskCall::Started(_)) => self.end(Outcome::Ok, None, None),
            Err(error) => self.end(Outcome::of_error(error), None, Some(error)),
        }
    }

    /// Any other call ended with `result`.
    pub(crate) fn finish<T>(self, result: &Result<T>) {
        if !self.wanted() {
            return;
        }
        match result {
            Ok(_) => self.end(Outcome::Ok, None, None),
            Err(error) => self.end(Outcome::of_error(error), None, Some(error)),
        }
    }

    fn end(self, outcome: Outcome, answer: Option<&ToolResult>, error: Option<&Error>) {
        let duration = self.started.map(|t| t.elapsed()).unwrap_or_default();
        let bytes_in = answer.map(crate::result::result_size);
        if !self.span.is_disabled() {
            let span = &self.span;
            span.record("mcpmux.outcome", outcome.as_str());
            if let Some(bytes) = bytes_in {
                span.record("mcpmux.bytes_in", i64::try_from(bytes).unwrap_or(i64::MAX));
            }
            if outcome.failed() {
                span.record("error.type", outcome.as_str());
                span.record("otel.status_code", "ERROR");
                // Errors carry no token, header value or URL query (the library's rule).
                match error {
                    Some(error) => span.record("otel.status_message", error.to_string()),
                    None => span.record("otel.status_message", "the tool answered with isError"),
                };
            }
        }
        if let Some(observers) = &self.observers {
            let record = CallRecord {
                kind: self.kind,
                name: self.name,
                server: self.server.as_deref(),
                transport: self.transport,
                era: self.era,
                outcome,
                duration,
                bytes_out: self.bytes_out,
                bytes_in,
            };
            for observer in observers.iter() {
                observer.call_ended(&record);
            }
        }
    }
}

/// `network.transport` as the conventions word it: `pipe` for a child's stdio, `tcp` for
/// every HTTP and WebSocket transport, `inproc` for a server in this process; none for a
/// local tool or a call that went nowhere.
fn network_transport(transport: &str) -> Option<&'static str> {
    match transport {
        "stdio" => Some("pipe"),
        "inproc" => Some("inproc"),
        "http" | "sse" | "ws" => Some("tcp"),
        _ => None,
    }
}

/// A resource URI as a span shows it: its query or userinfo may carry a token, so they are
/// left out, as in every error and log line of the library.
fn resource_uri(uri: &str) -> String {
    crate::redact::redact_url(uri)
}

/// The size of `value` as JSON, counted without keeping it.
pub(crate) fn json_size(value: &impl serde::Serialize) -> usize {
    let mut counter = Counter(0);
    // Writing to a counter cannot fail; a value that cannot be written counts what was.
    let _ = serde_json::to_writer(&mut counter, value);
    counter.0
}

/// Counts the bytes a serializer writes, keeping none.
struct Counter(usize);

impl std::io::Write for Counter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use std::sync::Mutex;

    use super::*;

    /// An outcome, the server and the bytes sent, as an observer was told them.
    type Told = (Outcome, Option<String>, Option<usize>);

    #[derive(Default)]
    struct Seen(Mutex<Vec<Told>>);

    impl CallObserver for Seen {
        fn call_ended(&self, call: &CallRecord<'_>) {
            self.0.lock().unwrap().push((
                call.outcome,
                call.server.map(str::to_string),
                call.bytes_out,
            ));
        }
    }

    #[test]
    fn an_observer_is_told_the_server_the_outcome_and_the_bytes_sent() {
        let observers = Observers::default();
        let seen = Arc::new(Seen::default());
        observers.add(seen.clone());
        let mut probe = CallProbe::start(&observers, CallKind::Tool, "mcp__s__t");
        let sent = json_size(&serde_json::json!({"a": 1}));
        probe.carried(Some("s"), "stdio", Some(Era::Handshake), 1, Some(sent));
        probe.finish_tool(&Err(Error::Cancelled("by the caller".into())));
        let seen = seen.0.lock().unwrap();
        assert_eq!(*seen, vec![(Outcome::Cancelled, Some("s".into()), Some(7))]);
    }

    #[test]
    fn a_read_span_names_its_uri_without_query_or_userinfo() {
        let shown = resource_uri("https://user:pw@example.com/doc?token=s3cret");
        assert!(shown.contains("example.com/doc"), "{shown}");
        assert!(
            !shown.contains("s3cret") && !shown.contains("pw@"),
            "{shown}"
        );
    }

    #[test]
    fn without_observer_or_subscriber_nothing_is_measured() {
        let observers = Observers::default();
        let mut probe = CallProbe::start(&observers, CallKind::Tool, "t");
        assert!(!probe.wanted());
        probe.carried(Some("s"), "stdio", None, 1, Some(7));
        assert_eq!(probe.bytes_out, None);
    }
}
