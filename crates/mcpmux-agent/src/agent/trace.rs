//! The spans of a run, under the OpenTelemetry GenAI conventions where they exist: one
//! `invoke_agent` span per run, a `mcpmux.turn` span per model turn, inside it a `chat {model}`
//! span per model request (`gen_ai.request.model`, `gen_ai.provider.name`,
//! `gen_ai.usage.input_tokens`, `gen_ai.usage.output_tokens`) beside the hub's
//! `tools/call {tool}` spans (`execute_tool`) of the turn's calls. Disabled spans without a
//! subscriber that takes them.

use tracing::Span;
use tracing::field::Empty;

use crate::transcript::Usage;

/// The span of one run.
pub(super) fn run() -> Span {
    tracing::info_span!(
        "agent run",
        otel.name = "invoke_agent mcpmux",
        gen_ai.operation.name = "invoke_agent",
        gen_ai.agent.name = "mcpmux",
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
    )
}

/// The span of turn `iteration` (1 for the first).
pub(super) fn turn(iteration: usize) -> Span {
    // Signed: OpenTelemetry has no unsigned integer (an u64 is exported as text).
    let iteration = i64::try_from(iteration).unwrap_or(i64::MAX);
    tracing::info_span!(
        "agent turn",
        otel.name = "mcpmux.turn",
        mcpmux.iteration = iteration
    )
}

/// The span of one model request of `provider` for `model`, inside `turn`.
pub(super) fn chat(turn: &Span, provider: &'static str, model: &str) -> Span {
    let span = tracing::info_span!(
        parent: turn,
        "model request",
        otel.name = Empty,
        otel.kind = "client",
        gen_ai.operation.name = "chat",
        gen_ai.provider.name = provider,
        gen_ai.request.model = model,
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
    );
    if !span.is_disabled() {
        span.record("otel.name", format!("chat {model}"));
    }
    span
}

/// The tokens `usage` counted, on `span`.
pub(super) fn used(span: &Span, usage: &Usage) {
    span.record(
        "gen_ai.usage.input_tokens",
        i64::try_from(usage.input_tokens).unwrap_or(i64::MAX),
    );
    span.record(
        "gen_ai.usage.output_tokens",
        i64::try_from(usage.output_tokens).unwrap_or(i64::MAX),
    );
}
