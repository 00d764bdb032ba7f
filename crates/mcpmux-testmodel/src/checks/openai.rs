//! The checks of an OpenAI Chat Completions request: path, `model` and `messages`, roles,
//! every assistant `tool_calls[].id` answered by exactly one `role: "tool"` message right
//! after it, tool definitions (names, `parameters` rooted at an object, strict mode), and
//! `tool_choice`/`stream_options` consistent with them.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::{kind, object_with_model, root_is_object, strict_problems, valid_tool_name};

const PATH: &str = "/v1/chat/completions";
const ROLES: [&str; 5] = ["system", "developer", "user", "assistant", "tool"];

/// Every problem with one OpenAI request.
pub(super) fn check(path: &str, body: &Value) -> Vec<String> {
    let mut out = Vec::new();
    if path != PATH {
        out.push(format!("path {path} (the client must POST {PATH})"));
    }
    let Some(map) = object_with_model(body, &mut out) else {
        return out;
    };
    match map.get("messages") {
        Some(Value::Array(messages)) if !messages.is_empty() => check_messages(messages, &mut out),
        Some(Value::Array(_)) => out.push("\"messages\" is empty".to_owned()),
        Some(other) => out.push(format!(
            "\"messages\" is {} (expected an array)",
            kind(other)
        )),
        None => out.push("\"messages\" is missing".to_owned()),
    }
    let names = check_tools(map.get("tools"), &mut out);
    check_tool_choice(map.get("tool_choice"), &names, &mut out);
    match map.get("stream") {
        None | Some(Value::Bool(_)) => {}
        Some(other) => out.push(format!(
            "\"stream\" is {} (expected a boolean)",
            kind(other)
        )),
    }
    if map.contains_key("stream_options") && map.get("stream") != Some(&Value::Bool(true)) {
        out.push("\"stream_options\" is only allowed when \"stream\" is true".to_owned());
    }
    for field in ["max_tokens", "max_completion_tokens"] {
        if let Some(value) = map.get(field)
            && value.as_u64().is_none_or(|n| n == 0)
        {
            out.push(format!(
                "\"{field}\" is {value} (expected a positive integer)"
            ));
        }
    }
    out
}

/// Roles, and the pairing of tool calls with tool messages.
fn check_messages(messages: &[Value], out: &mut Vec<String>) {
    // id → the message (1-based) that issued it
    let mut issued: HashMap<String, usize> = HashMap::new();
    let mut answered: HashSet<String> = HashSet::new();
    // ids of the latest assistant message still waiting for their tool messages
    let mut pending: Vec<String> = Vec::new();
    // id → the message that came before it was answered
    let mut interrupted: HashMap<String, usize> = HashMap::new();

    for (index, message) in messages.iter().enumerate() {
        let number = index + 1;
        let Some(role) = message.get("role").and_then(Value::as_str) else {
            out.push(format!("message {number} has no string \"role\""));
            continue;
        };
        if !ROLES.contains(&role) {
            out.push(format!(
                "message {number} has role \"{role}\" (allowed: {})",
                ROLES.join(", ")
            ));
            continue;
        }
        if role == "tool" {
            check_tool_message(
                message,
                number,
                &issued,
                &mut answered,
                &mut pending,
                &interrupted,
                out,
            );
            continue;
        }
        for id in pending.drain(..) {
            interrupted.insert(id, number);
        }
        if role == "assistant" {
            for id in assistant_call_ids(message, number, out) {
                if let Some(first) = issued.get(&id) {
                    out.push(format!(
                        "message {number} reuses tool_call id \"{id}\" of message {first}"
                    ));
                    continue;
                }
                issued.insert(id.clone(), number);
                pending.push(id);
            }
        } else if message.get("content").is_none() {
            out.push(format!("message {number} ({role}) has no \"content\""));
        }
    }
    for id in pending {
        let from = issued.get(&id).copied().unwrap_or(0);
        out.push(format!(
            "tool_call \"{id}\" of message {from} is never answered by a tool message"
        ));
    }
    let mut late: Vec<(&String, &usize)> = interrupted
        .iter()
        .filter(|(id, _)| !answered.contains(*id))
        .collect();
    late.sort();
    for (id, before) in late {
        let from = issued.get(id).copied().unwrap_or(0);
        out.push(format!(
            "tool_call \"{id}\" of message {from} is not answered before message {before} \
             (tool messages must follow their assistant message immediately)"
        ));
    }
}

/// One `role: "tool"` message: answers a pending id, exactly once.
fn check_tool_message(
    message: &Value,
    number: usize,
    issued: &HashMap<String, usize>,
    answered: &mut HashSet<String>,
    pending: &mut Vec<String>,
    interrupted: &HashMap<String, usize>,
    out: &mut Vec<String>,
) {
    match message.get("content") {
        Some(Value::String(_) | Value::Array(_)) => {}
        Some(other) => out.push(format!(
            "message {number} (tool) has content {} (expected a string or text parts)",
            kind(other)
        )),
        None => out.push(format!("message {number} (tool) has no \"content\"")),
    }
    let Some(id) = message.get("tool_call_id").and_then(Value::as_str) else {
        out.push(format!(
            "message {number} (tool) has no string \"tool_call_id\""
        ));
        return;
    };
    if answered.contains(id) {
        out.push(format!(
            "message {number} answers tool_call \"{id}\" a second time"
        ));
        return;
    }
    let Some(from) = issued.get(id) else {
        out.push(format!(
            "message {number} answers tool_call \"{id}\", which no assistant message issued"
        ));
        return;
    };
    answered.insert(id.to_owned());
    if let Some(position) = pending.iter().position(|pending| pending == id) {
        pending.remove(position);
    } else {
        let before = interrupted.get(id).copied().unwrap_or(0);
        out.push(format!(
            "message {number} answers tool_call \"{id}\" of message {from} out of order \
             (after message {before}; tool messages must follow their assistant message immediately)"
        ));
    }
}

/// The ids of an assistant message's `tool_calls`, checking each call's shape.
fn assistant_call_ids(message: &Value, number: usize, out: &mut Vec<String>) -> Vec<String> {
    let calls = match message.get("tool_calls") {
        None | Some(Value::Null) => {
            if message.get("content").is_none() {
                out.push(format!(
                    "message {number} (assistant) has neither \"content\" nor \"tool_calls\""
                ));
            }
            return Vec::new();
        }
        Some(Value::Array(calls)) if calls.is_empty() => {
            out.push(format!(
                "message {number} has an empty \"tool_calls\" array (omit it instead)"
            ));
            return Vec::new();
        }
        Some(Value::Array(calls)) => calls,
        Some(other) => {
            out.push(format!(
                "message {number} has \"tool_calls\" {} (expected an array)",
                kind(other)
            ));
            return Vec::new();
        }
    };
    let mut ids = Vec::new();
    for (index, call) in calls.iter().enumerate() {
        let at = format!("message {number} tool_calls[{index}]");
        if call.get("type").and_then(Value::as_str) != Some("function") {
            out.push(format!("{at} has no \"type\": \"function\""));
        }
        if call
            .pointer("/function/name")
            .and_then(Value::as_str)
            .is_none()
        {
            out.push(format!("{at} has no string function.name"));
        }
        if call
            .pointer("/function/arguments")
            .and_then(Value::as_str)
            .is_none()
        {
            out.push(format!(
                "{at} has no string function.arguments (arguments are JSON text, not an object)"
            ));
        }
        match call.get("id").and_then(Value::as_str) {
            Some(id) if !id.is_empty() => ids.push(id.to_owned()),
            _ => out.push(format!("{at} has no string \"id\"")),
        }
    }
    ids
}

/// Tool definitions; returns the valid names.
fn check_tools(tools: Option<&Value>, out: &mut Vec<String>) -> Vec<String> {
    let tools = match tools {
        None => return Vec::new(),
        Some(Value::Array(tools)) => tools,
        Some(other) => {
            out.push(format!("\"tools\" is {} (expected an array)", kind(other)));
            return Vec::new();
        }
    };
    let mut names: Vec<String> = Vec::new();
    for (index, tool) in tools.iter().enumerate() {
        let at = format!("tools[{index}]");
        if tool.get("type").and_then(Value::as_str) != Some("function") {
            out.push(format!("{at} has no \"type\": \"function\""));
        }
        let Some(function) = tool.get("function").and_then(Value::as_object) else {
            out.push(format!("{at} has no \"function\" object"));
            continue;
        };
        match function.get("name").and_then(Value::as_str) {
            Some(name) if !valid_tool_name(name) => out.push(format!(
                "{at} name \"{name}\" does not match ^[a-zA-Z0-9_-]{{1,64}}$"
            )),
            Some(name) if names.iter().any(|seen| seen == name) => {
                out.push(format!("{at} name \"{name}\" is defined twice"));
            }
            Some(name) => names.push(name.to_owned()),
            None => out.push(format!("{at} has no string function.name")),
        }
        if let Some(description) = function.get("description")
            && !description.is_string()
        {
            out.push(format!(
                "{at} description is {} (expected a string)",
                kind(description)
            ));
        }
        let strict = function.get("strict") == Some(&Value::Bool(true));
        match function.get("parameters") {
            None if strict => out.push(format!("{at} is strict but has no \"parameters\"")),
            None => {}
            Some(parameters) if !root_is_object(parameters) => out.push(format!(
                "{at} parameters must be a JSON Schema whose root \"type\" is \"object\""
            )),
            Some(parameters) if strict => {
                strict_problems(parameters, &format!("{at} parameters #"), 0, out);
            }
            Some(_) => {}
        }
    }
    names
}

/// `tool_choice`: `none`/`auto`/`required`, or a function that is defined.
fn check_tool_choice(choice: Option<&Value>, names: &[String], out: &mut Vec<String>) {
    match choice {
        None => {}
        Some(Value::String(mode)) if mode == "required" && names.is_empty() => {
            out.push("\"tool_choice\" is \"required\" but no tools are defined".to_owned());
        }
        Some(Value::String(mode)) if ["none", "auto", "required"].contains(&mode.as_str()) => {}
        Some(Value::Object(_)) => {
            let name = choice.and_then(|choice| choice.pointer("/function/name"));
            match name.and_then(Value::as_str) {
                Some(name) if names.iter().any(|known| known == name) => {}
                Some(name) => out.push(format!(
                    "\"tool_choice\" names function \"{name}\", which is not in \"tools\""
                )),
                None => out.push("\"tool_choice\" object has no function.name".to_owned()),
            }
        }
        Some(other) => out.push(format!(
            "\"tool_choice\" is {other} (expected none, auto, required or a function)"
        )),
    }
}
