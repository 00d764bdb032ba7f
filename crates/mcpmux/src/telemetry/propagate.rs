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
/// without a propagator, or for a disabled span. What a client sends is bounded first: a field
/// longer than W3C allows, with a character no W3C header has, or a `baggage` of more members
/// than W3C allows is as if absent (a malformed `traceparent` is the propagator's to ignore:
/// the span then starts a trace of its own).
pub fn extract(span: &tracing::Span, get: &dyn Fn(&str) -> Option<String>) {
    if let Some(propagator) = PROPAGATOR.get()
        && !span.is_disabled()
    {
        propagator.extract(span, &|name| {
            get(name).filter(|value| admitted(name, value))
        });
    }
}

/// Whether a client's `value` of the W3C field `name` is within the bounds mcpmux reads.
fn admitted(name: &str, value: &str) -> bool {
    use crate::defaults;
    let longest = match name {
        "traceparent" => defaults::MAX_TRACEPARENT_LEN,
        "tracestate" => defaults::MAX_TRACESTATE_LEN,
        "baggage" => defaults::MAX_BAGGAGE_LEN,
        _ => return false,
    };
    // Visible ASCII and spaces only, as every W3C trace header is: no control character, no
    // line break, nothing a log or a header would carry differently.
    let printable = value
        .bytes()
        .all(|b| (0x20..0x7f).contains(&b) || b == b'\t');
    let members = || value.split(',').count();
    value.len() <= longest
        && printable
        && (name != "baggage" || members() <= defaults::MAX_BAGGAGE_MEMBERS)
}

/// Whether a propagator is installed: whether reading a client's fields is worth it.
pub fn installed() -> bool {
    PROPAGATOR.get().is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_well_formed_trace_context_is_read() {
        let parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        assert!(admitted("traceparent", parent));
        assert!(admitted(
            "tracestate",
            "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7"
        ));
        assert!(admitted("baggage", "user=alice, tenant=acme;prop=1"));
    }

    #[test]
    fn an_oversized_trace_context_field_is_dropped_at_the_door() {
        let long = "a".repeat(crate::defaults::MAX_TRACEPARENT_LEN + 1);
        assert!(!admitted("traceparent", &long));
        let state = format!("k={}", "v".repeat(crate::defaults::MAX_TRACESTATE_LEN));
        assert!(!admitted("tracestate", &state));
        let baggage = format!("k={}", "v".repeat(crate::defaults::MAX_BAGGAGE_LEN));
        assert!(!admitted("baggage", &baggage));
    }

    #[test]
    fn baggage_of_too_many_members_is_dropped_whole() {
        let members = crate::defaults::MAX_BAGGAGE_MEMBERS;
        let within = (0..members).map(|i| format!("k{i}=v")).collect::<Vec<_>>();
        assert!(admitted("baggage", &within.join(",")));
        let beyond = (0..=members).map(|i| format!("k{i}=v")).collect::<Vec<_>>();
        assert!(!admitted("baggage", &beyond.join(",")));
    }

    #[test]
    fn a_field_with_a_control_character_or_of_another_name_is_ignored() {
        assert!(!admitted("traceparent", "00-4bf9\r\nx-injected: 1"));
        assert!(!admitted("baggage", "k=v\u{0}"));
        assert!(!admitted("baggage", "k=caf\u{e9}"));
        assert!(!admitted("x-other", "v"));
    }
}
