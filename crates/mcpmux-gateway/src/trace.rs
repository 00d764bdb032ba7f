//! The span of each request a client sends the gateway that reaches upstream servers
//! (`tools/call`, `resources/read`, `prompts/get`, `completion/complete`, the resource, template
//! and prompt lists), a server span as the OpenTelemetry conventions for
//! MCP name it (`{mcp.method.name} {target}`), continuing the client's trace: the W3C context
//! in the request's `params._meta` (SEP-414), else in its HTTP headers (`traceparent`, …). The
//! hub's call span, and what it sends upstream, are its children. Without a subscriber taking
//! it, the span is disabled and nothing is read.

use rmcp::RoleServer;
use rmcp::service::RequestContext;
use tracing::Span;
use tracing::field::Empty;

/// The span of one request of `method` for `target` (a tool or prompt name; none for a read,
/// a completion or a list, whose targets are no span names), from the session numbered `session`.
pub(crate) fn request_span(
    method: &'static str,
    target: Option<&str>,
    session: u64,
    context: &RequestContext<RoleServer>,
) -> Span {
    let span = tracing::info_span!(
        "mcp request",
        otel.name = Empty,
        otel.kind = "server",
        mcp.method.name = method,
        gen_ai.tool.name = Empty,
        jsonrpc.request.id = Empty,
        mcpmux.session = session,
    );
    if span.is_disabled() {
        return span;
    }
    match target {
        Some(target) => {
            span.record("otel.name", format!("{method} {target}"));
            if method == "tools/call" {
                span.record("gen_ai.tool.name", target);
            }
        }
        None => {
            span.record("otel.name", method);
        }
    }
    span.record("jsonrpc.request.id", context.id.to_string());
    if mcpmux::telemetry::propagate::installed() {
        let meta = &context.meta;
        let headers = context
            .extensions
            .get::<http::request::Parts>()
            .map(|parts| &parts.headers);
        mcpmux::telemetry::propagate::extract(&span, &|name| {
            let in_meta = meta.get(name).and_then(|v| v.as_str());
            let in_headers = || headers?.get(name)?.to_str().ok();
            in_meta.or_else(in_headers).map(str::to_string)
        });
    }
    span
}
