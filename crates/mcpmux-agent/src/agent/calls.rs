//! One model turn's tool calls, run concurrently through the hub: each call's provider-side
//! name routed back to its exposed tool, `search_tools` answered from the plan, arguments
//! parsed, and every outcome — a result, a refusal, an invalid or unknown call — turned into
//! the one result block that answers the call's id, in the order the calls were made.
//! Knows nothing of providers' wire formats.

use futures::future::join_all;
use mcpmux::schema::Export;
use mcpmux::{CallOptions, Hub, render_untrusted, render_untrusted_error};
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use super::{AgentEvent, AgentOptions};
use crate::search::{Discovered, SEARCH_TOOL, ToolPlan};
use crate::transcript::Block;

/// A tool call the model made.
pub(super) struct Call {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

/// What the calls of one turn need to run.
pub(super) struct Turn<'a> {
    pub hub: &'a Hub,
    pub options: &'a AgentOptions,
    pub export: &'a Export,
    pub plan: &'a ToolPlan,
    pub cancel: &'a CancellationToken,
    pub events: &'a (dyn Fn(AgentEvent) + Send + Sync),
}

/// The result blocks answering `calls`, in their order.
pub(super) async fn run(
    turn: &Turn<'_>,
    calls: Vec<Call>,
    discovered: &mut Discovered,
) -> Vec<Block> {
    // `search_tools` is answered here, before the others run: it changes what is callable.
    let mut answers: Vec<Option<Block>> = Vec::with_capacity(calls.len());
    let mut pending = Vec::new();
    for (index, call) in calls.into_iter().enumerate() {
        if call.name == SEARCH_TOOL && turn.plan.is_deferred() {
            answers.push(Some(search(turn, &call, discovered)));
        } else {
            answers.push(None);
            pending.push((index, call));
        }
    }
    let results = join_all(pending.iter().map(|(_, call)| one(turn, call))).await;
    for ((index, _), block) in pending.iter().zip(results) {
        answers[*index] = Some(block);
    }
    answers.into_iter().flatten().collect()
}

fn search(turn: &Turn<'_>, call: &Call, discovered: &mut Discovered) -> Block {
    let arguments = serde_json::from_str::<Value>(if call.arguments.trim().is_empty() {
        "{}"
    } else {
        &call.arguments
    });
    let (content, is_error, found) = match arguments {
        Err(e) => (
            format!(
                "search_tools: the arguments are not valid JSON ({e}); send {{\"query\": \"what you want to do\"}}"
            ),
            true,
            Vec::new(),
        ),
        Ok(arguments) => match turn.plan.search(&arguments, discovered) {
            Ok(answer) => (answer.to_text(), false, answer.tools),
            Err(e) => (e.to_string(), true, Vec::new()),
        },
    };
    (turn.events)(AgentEvent::ToolCall {
        id: call.id.clone(),
        tool: SEARCH_TOOL.to_string(),
        arguments: call.arguments.clone(),
    });
    (turn.events)(AgentEvent::ToolResult {
        id: call.id.clone(),
        tool: SEARCH_TOOL.to_string(),
        is_error,
        text: if is_error {
            content.clone()
        } else {
            format!("found {}", found.join(", "))
        },
    });
    Block::ToolResult {
        id: call.id.clone(),
        content,
        is_error,
        discovered: found,
    }
}

/// The exposed tool a provider-side name stands for: a tool sent in this request, or a
/// deferred one called by its exact name (the model knew it; the hub still checks it).
fn route<'a>(turn: &'a Turn<'_>, name: &'a str) -> Option<&'a str> {
    turn.export.tool_name(name).or_else(|| {
        turn.plan
            .deferred
            .iter()
            .find(|t| t.name == name)
            .map(|t| t.name.as_str())
    })
}

/// Runs one call; its outcome whatever happens.
async fn one(turn: &Turn<'_>, call: &Call) -> Block {
    let answer = |content: String, is_error: bool| Block::ToolResult {
        id: call.id.clone(),
        content,
        is_error,
        discovered: Vec::new(),
    };
    let Some(tool) = route(turn, &call.name) else {
        let message = unknown_tool(turn, &call.name);
        (turn.events)(AgentEvent::ToolResult {
            id: call.id.clone(),
            tool: call.name.clone(),
            is_error: true,
            text: message.clone(),
        });
        return answer(message, true);
    };
    (turn.events)(AgentEvent::ToolCall {
        id: call.id.clone(),
        tool: tool.to_string(),
        arguments: call.arguments.clone(),
    });
    let (content, is_error, text) = match arguments(&call.arguments) {
        Err(message) => {
            let message = format!("invalid arguments for `{}`: {message}", call.name);
            (message.clone(), true, message)
        }
        Ok(arguments) => {
            let mut options = CallOptions::default().with_cancel(turn.cancel.child_token());
            if let Some(scope) = &turn.options.scope {
                options = options.with_scope(scope.clone());
            }
            if let Some(timeout) = turn.options.call_timeout {
                options = options.with_timeout(timeout);
            }
            match turn
                .hub
                .call_with(tool, Value::Object(arguments), options)
                .await
            {
                Ok(result) => {
                    let text = result.to_text();
                    (render_untrusted(&result, tool), result.is_error, text)
                }
                Err(error) => (render_untrusted_error(&error), true, error.to_string()),
            }
        }
    };
    (turn.events)(AgentEvent::ToolResult {
        id: call.id.clone(),
        tool: tool.to_string(),
        is_error,
        text,
    });
    answer(content, is_error)
}

/// The model's arguments as an object: empty text is `{}` (models send it for tools without
/// parameters); anything else must be one JSON object.
fn arguments(text: &str) -> Result<Map<String, Value>, String> {
    if text.trim().is_empty() {
        return Ok(Map::new());
    }
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(other) => Err(format!(
            "expected one JSON object of arguments, got {}",
            kind(&other)
        )),
        Err(e) => Err(format!(
            "not valid JSON ({e}); send one JSON object matching the tool's input schema"
        )),
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Says the tool does not exist, which names are close, and where to look.
fn unknown_tool(turn: &Turn<'_>, name: &str) -> String {
    let shown = mcpmux::cli_support::terminal::escape_controls(name);
    let shown: String = shown.chars().take(100).collect();
    let close = turn
        .export
        .tools
        .iter()
        .map(|t| t.name.as_str())
        .find(|candidate| similar(candidate, name));
    let mut message = format!("no tool named `{shown}` is available");
    if let Some(close) = close {
        message.push_str(&format!("; did you mean `{close}`?"));
    }
    if turn.plan.is_deferred() {
        message.push_str(&format!("; call `{SEARCH_TOOL}` to find more tools"));
    } else {
        message.push_str("; call only the tools listed in this request");
    }
    message
}

/// Names that differ only in case or separators, by a typo or two, or one ending the other.
fn similar(candidate: &str, name: &str) -> bool {
    let norm = |s: &str| -> Vec<u8> {
        s.bytes()
            .filter(u8::is_ascii_alphanumeric)
            .map(|c| c.to_ascii_lowercase())
            .take(128)
            .collect()
    };
    let (a, b) = (norm(candidate), norm(name));
    if b.len() < 3 {
        return false;
    }
    a.ends_with(&b) || b.ends_with(&a) || edit_distance(&a, &b) <= 2
}

/// Levenshtein distance (inputs are at most 128 bytes).
fn edit_distance(a: &[u8], b: &[u8]) -> usize {
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, x) in a.iter().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, y) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(x != y));
            diagonal = above;
        }
    }
    row[b.len()]
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn arguments_must_be_one_object_and_empty_text_means_none() {
        assert!(arguments("").unwrap().is_empty());
        assert!(arguments("  ").unwrap().is_empty());
        assert_eq!(arguments("{\"a\":1}").unwrap()["a"], 1);
        assert!(arguments("[1]").unwrap_err().contains("an array"));
        assert!(arguments("{\"a\":").unwrap_err().contains("not valid JSON"));
        let deep = "[".repeat(100_000);
        assert!(arguments(&deep).is_err());
    }

    #[test]
    fn a_misspelt_tool_name_finds_its_neighbour() {
        assert!(similar("mcp__fs__read_file", "read_file"));
        assert!(similar("mcp__fs__read_file", "MCP__FS__READ-FILE"));
        assert!(similar("mcp__t__add", "mcp__t__ad"));
        assert!(similar("mcp__t__add", "mcp__t__adds"));
        assert!(!similar("mcp__fs__read_file", "write"));
    }
}
