//! `mcpmux-testmodel WIRE SCRIPT_JSON`: the scripted model as a program, for tests written in
//! another language (the Python package's agent-loop and adapter tests, its bench). It serves
//! one wire format (`openai` or `anthropic`) on 127.0.0.1, prints its base URL on the first
//! line of stdout, and when stdin closes prints a report (one JSON line: violations, steps
//! left, and per request the bytes of its tool definitions and their names) and exits.
//!
//! The script is a JSON array of steps: `{"text": "..."}`, `{"tool_calls": [[NAME, ARGS], ...]}`
//! (ARGS: the arguments as JSON text), or both in one step (text, then the calls).

use std::io::{Read, Write};
use std::process::ExitCode;

use mcpmux_testmodel::{ScriptedModel, Step, Wire};
use serde_json::{Value, json};

fn step(value: &Value) -> Result<Step, String> {
    let text = value.get("text").and_then(Value::as_str);
    let calls: Vec<(String, String)> = match value.get("tool_calls") {
        None => Vec::new(),
        Some(Value::Array(calls)) => calls
            .iter()
            .map(|call| match call.as_array().map(Vec::as_slice) {
                Some([Value::String(name), Value::String(args)]) => {
                    Ok((name.clone(), args.clone()))
                }
                _ => Err(format!(
                    "a tool call is [NAME, ARGUMENTS_JSON_TEXT], not {call}"
                )),
            })
            .collect::<Result<_, _>>()?,
        Some(other) => return Err(format!("tool_calls must be a list, not {other}")),
    };
    Ok(match (text, calls.is_empty()) {
        (Some(text), true) => Step::text(text),
        (None, false) => Step::tool_calls(calls),
        (Some(text), false) => Step::text_and_tool_calls(text, calls),
        (None, true) => return Err(format!("a step needs text or tool_calls: {value}")),
    })
}

fn steps(script: &str) -> Result<Vec<Step>, String> {
    let value: Value = serde_json::from_str(script).map_err(|e| format!("script: {e}"))?;
    value
        .as_array()
        .ok_or("the script is a JSON array of steps")?
        .iter()
        .map(step)
        .collect()
}

fn report(model: &ScriptedModel) -> Value {
    let requests: Vec<Value> = model
        .requests()
        .iter()
        .map(|request| {
            let tools = request.tools();
            let bytes: usize = tools
                .iter()
                .map(|t| serde_json::to_string(t).map_or(0, |s| s.len()))
                .sum();
            let names: Vec<Value> = tools
                .iter()
                .filter_map(|t| {
                    t.pointer("/function/name")
                        .or_else(|| t.get("name"))
                        .cloned()
                })
                .collect();
            json!({"tool_bytes": bytes, "tools": names})
        })
        .collect();
    json!({
        "violations": model.violations(),
        "remaining": model.remaining(),
        "requests": requests,
    })
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (wire, script) = match args.as_slice() {
        [wire, script] => (wire.as_str(), script.as_str()),
        _ => {
            eprintln!("usage: mcpmux-testmodel openai|anthropic SCRIPT_JSON");
            return ExitCode::from(2);
        }
    };
    let wire = match wire {
        "openai" => Wire::OpenAi,
        "anthropic" => Wire::Anthropic,
        other => {
            eprintln!("unknown wire {other}: openai or anthropic");
            return ExitCode::from(2);
        }
    };
    let steps = match steps(script) {
        Ok(steps) => steps,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let model = match ScriptedModel::start(wire, steps).await {
        Ok(model) => model,
        Err(e) => {
            eprintln!("cannot listen: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut out = std::io::stdout();
    if writeln!(out, "{}", model.base_url())
        .and_then(|()| out.flush())
        .is_err()
    {
        return ExitCode::FAILURE;
    }
    // Serve until the test closes stdin.
    let _ = tokio::task::spawn_blocking(|| std::io::stdin().read_to_end(&mut Vec::new())).await;
    let _ = writeln!(out, "{}", report(&model));
    ExitCode::SUCCESS
}
