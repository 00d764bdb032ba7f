//! The W3C propagator over OpenTelemetry (feature `opentelemetry`): `traceparent`/`tracestate`
//! and `baggage` of a `tracing` span whose OpenTelemetry context `tracing-opentelemetry` keeps.
//! A harness that exports with OpenTelemetry installs it with [`super::propagate::install`];
//! the CLI does the same. Behind a feature so the library itself stays free of OpenTelemetry.

use std::collections::HashMap;

use opentelemetry::propagation::{TextMapCompositePropagator, TextMapPropagator};
use opentelemetry_sdk::propagation::{BaggagePropagator, TraceContextPropagator};
use tracing_opentelemetry::OpenTelemetrySpanExt;

use super::propagate::{FIELDS, Propagator};

/// W3C trace context and baggage, read from and written to a span's OpenTelemetry context.
pub struct W3cPropagator(TextMapCompositePropagator);

impl Default for W3cPropagator {
    fn default() -> Self {
        W3cPropagator(TextMapCompositePropagator::new(vec![
            Box::new(TraceContextPropagator::new()),
            Box::new(BaggagePropagator::new()),
        ]))
    }
}

impl Propagator for W3cPropagator {
    fn inject(&self, span: &tracing::Span, put: &mut dyn FnMut(&'static str, String)) {
        let mut fields = HashMap::new();
        self.0.inject_context(&span.context(), &mut fields);
        for name in FIELDS {
            if let Some(value) = fields.remove(name) {
                put(name, value);
            }
        }
    }

    fn extract(&self, span: &tracing::Span, get: &dyn Fn(&str) -> Option<String>) {
        let fields: HashMap<String, String> = FIELDS
            .iter()
            .filter_map(|name| get(name).map(|value| (name.to_string(), value)))
            .collect();
        if fields.is_empty() {
            return;
        }
        // A span already closed or outside the OpenTelemetry layer has no context to parent.
        let _ = span.set_parent(self.0.extract(&fields));
    }
}

#[cfg(test)]
#[allow(clippy::expect_used)]
mod tests {
    use super::*;
    use opentelemetry::trace::TracerProvider as _;
    use tracing_subscriber::layer::SubscriberExt;

    #[test]
    fn a_traceparent_read_is_the_one_written_back_under_the_same_trace() {
        let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder().build();
        let subscriber = tracing_subscriber::registry()
            .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("test")));
        tracing::subscriber::with_default(subscriber, || {
            let w3c = W3cPropagator::default();
            let incoming = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
            let span = tracing::info_span!("call");
            w3c.extract(&span, &|name| {
                (name == "traceparent").then(|| incoming.to_string())
            });
            let mut written = HashMap::new();
            w3c.inject(&span, &mut |name, value| {
                written.insert(name, value);
            });
            let traceparent = written.get("traceparent").expect("a traceparent");
            assert!(
                traceparent.starts_with("00-4bf92f3577b34da6a3ce929d0e0e4736-"),
                "{traceparent}"
            );
            assert!(!traceparent.contains("00f067aa0ba902b7"), "a child span id");
        });
    }

    #[test]
    fn nothing_is_written_for_a_span_outside_any_trace() {
        let w3c = W3cPropagator::default();
        let mut written = Vec::new();
        w3c.inject(&tracing::Span::none(), &mut |name, _| written.push(name));
        assert!(written.is_empty(), "{written:?}");
    }
}
