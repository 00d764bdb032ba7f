//! Over HTTP, the W3C trace context a request carries in its `_meta` (SEP-414, put there by
//! `connection/trace_meta.rs`) is sent as headers too (`traceparent`, `tracestate`,
//! `baggage`): what an HTTP proxy or a server's own HTTP instrumentation reads.

use std::collections::HashMap;

use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, GetMeta};

/// `headers` with the trace context of `message`'s `_meta` added (a request only).
pub(crate) fn with_trace_headers(
    message: &ClientJsonRpcMessage,
    mut headers: HashMap<HeaderName, HeaderValue>,
) -> HashMap<HeaderName, HeaderValue> {
    let ClientJsonRpcMessage::Request(request) = message else {
        return headers;
    };
    let meta = request.request.get_meta();
    for (name, value) in [
        ("traceparent", meta.get_traceparent()),
        ("tracestate", meta.get_tracestate()),
        ("baggage", meta.get_baggage()),
    ] {
        if let Some(value) = value.and_then(|v| HeaderValue::from_str(v).ok()) {
            headers.insert(HeaderName::from_static(name), value);
        }
    }
    headers
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use rmcp::model::{CallToolRequestParams, ClientRequest, NumberOrString};

    use super::*;

    #[test]
    fn a_request_s_traceparent_in_meta_becomes_its_header() {
        let mut request = ClientRequest::CallToolRequest(rmcp::model::Request::new(
            CallToolRequestParams::new("t"),
        ));
        let parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        request.get_meta_mut().set_traceparent(parent);
        let message = ClientJsonRpcMessage::request(request, NumberOrString::Number(1));
        let headers = with_trace_headers(&message, HashMap::new());
        assert_eq!(headers[&HeaderName::from_static("traceparent")], parent);
        assert!(!headers.contains_key("tracestate"));
    }
}
