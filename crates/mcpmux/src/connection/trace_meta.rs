//! The trace context of the call a request is sent for, put into the request's `_meta` as
//! SEP-414 names it (`traceparent`, `tracestate`, `baggage`): every transport carries it,
//! stdio included, and over HTTP `transport/http_client.rs` copies it into the headers too.
//! Nothing is added without an installed propagator (`telemetry::propagate`).

use rmcp::model::RequestMetaObject;
use serde_json::Value;

/// `meta` with the current span's trace context added (made when there was none and a
/// propagator has something to add).
pub(super) fn traced(mut meta: Option<RequestMetaObject>) -> Option<RequestMetaObject> {
    crate::telemetry::propagate::inject_current(&mut |key, value| {
        meta.get_or_insert_default()
            .0
            .0
            .insert(key.to_string(), Value::String(value));
    });
    meta
}
