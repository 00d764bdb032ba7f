//! Trace context across a hop (SEP-414): the W3C `traceparent`, `tracestate` and `baggage` of
//! the span a request is sent in, put into the request's `params._meta` (and, over HTTP, its
//! headers), and read back from what a client sends the gateway. The library knows no
//! OpenTelemetry: whoever runs a pipeline (the CLI, a harness) installs a [`Propagator`] once;
//! without one nothing is added and a request pays one atomic load.

use std::sync::OnceLock;

/// The `_meta` keys (and HTTP header names) of W3C trace context, as SEP-414 names them.
pub const FIELDS: [&str; 3] = ["traceparent", "tracestate", "baggage"];

/// Reads and writes a span's trace context as W3C fields. Installed once per process.
pub trait Propagator: Send + Sync + 'static {
    /// Hands each W3C field of `span`'s context (`traceparent`, `tracestate`, `baggage`) to
    /// `put`; nothing for a span without a valid context.
    fn inject(&self, span: &tracing::Span, put: &mut dyn FnMut(&'static str, String));

    /// Makes the context the fields read by `get` name (a client's `traceparent`, …) the
    /// parent of `span`; a missing or malformed field leaves `span` as it is.
    fn extract(&self, span: &tracing::Span, get: &dyn Fn(&str) -> Option<String>);
}

static PROPAGATOR: OnceLock<Box<dyn Propagator>> = OnceLock::new();

/// Installs the process's propagator; false if one already was (it stays).
pub fn install(propagator: impl Propagator) -> bool {
    PROPAGATOR.set(Box::new(propagator)).is_ok()
}

/// The trace context of the current span, each field handed to `put`: what a request the
/// library sends now carries. Nothing without a propagator or outside any traced span.
pub fn inject_current(put: &mut dyn FnMut(&'static str, String)) {
    if let Some(propagator) = PROPAGATOR.get() {
        let span = tracing::Span::current();
        if !span.is_disabled() {
            propagator.inject(&span, put);
        }
    }
}

/// Makes the context `get` reads the parent of `span` (see [`Propagator::extract`]); nothing
/// without a propagator, or for a disabled span.
pub fn extract(span: &tracing::Span, get: &dyn Fn(&str) -> Option<String>) {
    if let Some(propagator) = PROPAGATOR.get()
        && !span.is_disabled()
    {
        propagator.extract(span, get);
    }
}

/// Whether a propagator is installed: whether reading a client's fields is worth it.
pub fn installed() -> bool {
    PROPAGATOR.get().is_some()
}
