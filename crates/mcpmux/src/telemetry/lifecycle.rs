//! A server's life as spans (target [`LIFECYCLE_TARGET`](super::LIFECYCLE_TARGET)): its start
//! or restart (with the restart's cause) from the first byte to its tool list, the handshake
//! inside it (era, protocol version), and the moments between — the circuit breaker opening
//! and closing, a list changing — as spans of no length, so that an OTLP backend shows them
//! (an event outside any span is dropped there). No span is ever entered across a session: a
//! child task rmcp spawns would hold it open until the session ends. Without a subscriber
//! taking them each is one disabled-span check and nothing is formatted.

use tracing::Span;
use tracing::field::Empty;

use super::LIFECYCLE_TARGET;
use crate::state::Era;

/// What moment of a server's life a [`mark`] records (`mcpmux.lifecycle`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Moment {
    /// The circuit breaker opened (or stayed open after a failed probe): calls refused.
    BreakerOpen,
    /// The circuit breaker let calls out again after a good probe.
    BreakerClose,
    /// The circuit breaker's probe (a `tools/list`) after its cool-down.
    BreakerProbe,
    /// The server's tool list changed.
    ToolsChanged,
    /// The server's prompt list changed.
    PromptsChanged,
    /// The server's resource list changed.
    ResourcesChanged,
}

impl Moment {
    /// The span's name and its `mcpmux.lifecycle` word.
    fn words(self) -> (&'static str, &'static str) {
        match self {
            Moment::BreakerOpen => ("server breaker open", "breaker_open"),
            Moment::BreakerClose => ("server breaker close", "breaker_close"),
            Moment::BreakerProbe => ("server breaker probe", "breaker_probe"),
            Moment::ToolsChanged => ("server list changed", "tools_changed"),
            Moment::PromptsChanged => ("server list changed", "prompts_changed"),
            Moment::ResourcesChanged => ("server list changed", "resources_changed"),
        }
    }
}

/// Records `moment` of `server`, with `cause` (said as the library says errors: no token,
/// header value or URL query in it) when there is one. The span is returned for what follows
/// from the moment (a list changed: its new listing) to run in; dropped, it has no length.
pub(crate) fn mark(server: &str, moment: Moment, cause: Option<&str>) -> Span {
    let span = tracing::info_span!(
        target: LIFECYCLE_TARGET,
        "server lifecycle",
        otel.name = Empty,
        mcpmux.server = server,
        mcpmux.lifecycle = Empty,
        mcpmux.cause = Empty,
    );
    if span.is_disabled() {
        return span;
    }
    let (name, word) = moment.words();
    span.record("otel.name", name);
    span.record("mcpmux.lifecycle", word);
    if let Some(cause) = cause {
        span.record("mcpmux.cause", crate::redact::redact_text(cause).as_ref());
    }
    span
}

/// The span of one connection attempt of `server`, until its tool list is in: a `start`, or a
/// `restart` for `cause` (why the last session ended, or the last attempt failed) as attempt
/// number `attempt`. Never entered across the session: a handshake's tasks would keep it.
pub(crate) fn start(server: &str, restart: Option<&str>, attempt: u32) -> Span {
    let span = tracing::info_span!(
        target: LIFECYCLE_TARGET,
        "server start",
        otel.name = Empty,
        otel.status_code = Empty,
        otel.status_message = Empty,
        mcpmux.server = server,
        mcpmux.lifecycle = Empty,
        mcpmux.cause = Empty,
        // Signed: OpenTelemetry has no unsigned integer (an u64 is exported as text).
        mcpmux.attempt = i64::from(attempt),
        mcpmux.era = Empty,
        mcpmux.protocol.version = Empty,
        mcpmux.tools = Empty,
    );
    if span.is_disabled() {
        return span;
    }
    match restart {
        Some(cause) => {
            span.record("otel.name", "server restart");
            span.record("mcpmux.lifecycle", "restart");
            span.record("mcpmux.cause", crate::redact::redact_text(cause).as_ref());
        }
        None => {
            span.record("otel.name", "server start");
            span.record("mcpmux.lifecycle", "start");
        }
    }
    span
}

/// The span of the handshake inside `start` (`initialize`, or `server/discover`).
pub(crate) fn handshake(start: &Span) -> Span {
    tracing::info_span!(
        target: LIFECYCLE_TARGET,
        parent: start,
        "server handshake",
        otel.status_code = Empty,
        otel.status_message = Empty,
        mcpmux.lifecycle = "handshake",
        mcpmux.era = Empty,
        mcpmux.protocol.version = Empty,
    )
}

/// `span` (a start or its handshake) got as far as a session in `era` speaking `version`.
pub(crate) fn handshook(span: &Span, era: Era, version: &str) {
    if span.is_disabled() {
        return;
    }
    span.record("mcpmux.era", era.to_string());
    span.record("mcpmux.protocol.version", version);
}

/// The server started: its tool list holds `tools`.
pub(crate) fn started(span: &Span, tools: usize) {
    if !span.is_disabled() {
        span.record("mcpmux.tools", i64::try_from(tools).unwrap_or(i64::MAX));
    }
}

/// `span` (a start or its handshake) failed with `error` (already redacted by the caller, or
/// redacted here).
pub(crate) fn failed(span: &Span, error: &str) {
    if span.is_disabled() {
        return;
    }
    span.record("otel.status_code", "ERROR");
    span.record(
        "otel.status_message",
        crate::redact::redact_text(error).as_ref(),
    );
}
