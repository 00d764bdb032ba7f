//! The checks of an Anthropic Messages request: path, `anthropic-version` and credentials
//! headers, `model`/`max_tokens`/`messages`, user/assistant alternation starting with a user
//! message, `system` only at the top level, every `tool_use` answered by exactly one
//! `tool_result` in the next user message (tool results first), tool definitions and
//! `tool_choice`.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::{kind, object_with_model, root_is_object, valid_tool_name};

const PATH: &str = "/v1/messages";

/// Every problem with one Anthropic request.
pub(super) fn check(path: &str, headers: &[(String, String)], body: &Value) -> Vec<String> {
    let mut out = Vec::new();
    if path != PATH {
        out.push(format!("path {path} (the client must POST {PATH})"));
    }
    let has = |name: &str| {
        headers
            .iter()
            .any(|(key, _)| key.eq_ignore_ascii_case(name))
    };
    if !has("anthropic-version") {
        out.push("header anthropic-version is missing (e.g. 2023-06-01)".to_owned());
    }
    if !has("x-api-key") && !has("authorization") {
        out.push("neither header x-api-key nor authorization is present".to_owned());
    }
    let json_body = headers.iter().any(|(key, value)| {
        key.eq_ignore_ascii_case("content-type") && value.starts_with("application/json")
    });
    if !json_body {
        out.push("header content-type is not application/json".to_owned());
    }
    let Some(map) = object_with_model(body, &mut out) else {
        return out;
    };
    match map.get("max_tokens") {
        Some(value) if value.as_u64().is_some_and(|n| n > 0) => {}
        Some(value) => out.push(format!(
            "\"max_tokens\" is {value} (expected a positive integer)"
        )),
        None => out.push("\"max_tokens\" is missing (it is required)".to_owned()),
    }
    match map.get("messages") {
        Some(Value::Array(messages)) if !messages.is_empty() => check_messages(messages, &mut out),
        Some(Value::Array(_)) => out.push("\"messages\" is empty".to_owned()),
        Some(other) => out.push(format!(
            "\"messages\" is {} (expected an array)",
            kind(other)
        )),
        None => out.push("\"messages\" is missing".to_owned()),
    }
    check_system(map.get("system"), &mut out);
    let names = check_tools(map.get("tools"), &mut out);
    check_tool_choice(map.get("tool_choice"), &names, &mut out);
    match map.get("stream") {
        None | Some(Value::Bool(_)) => {}
        Some(other) => out.push(format!(
            "\"stream\" is {} (expected a boolean)",
            kind(other)
        )),
    }
    out
}

/// `system`: a string or an array of text blocks.
fn check_system(system: Option<&Value>, out: &mut Vec<String>) {
    match system {
        None | Some(Value::String(_)) => {}
        Some(Value::Array(blocks)) => {
            for (index, block) in blocks.iter().enumerate() {
                let is_text = block.get("type").and_then(Value::as_str) == Some("text")
                    && block.get("text").is_some_and(Value::is_string);
                if !is_text {
                    out.push(format!("system[{index}] is not a text block"));
                }
            }
        }
        Some(other) => out.push(format!(
            "\"system\" is {} (expected a string or text blocks)",
            kind(other)
        )),
    }
}

/// The blocks of a message's content (a string is one text block); `None` when malformed.
fn blocks(message: &Value) -> Option<Vec<&Value>> {
    match message.get("content") {
        Some(Value::String(_)) => Some(Vec::new()),
        Some(Value::Array(blocks)) => Some(blocks.iter().collect()),
        _ => None,
    }
}

fn is_empty_content(message: &Value) -> bool {
    match message.get("content") {
        Some(Value::String(text)) => text.is_empty(),
        Some(Value::Array(blocks)) => blocks.is_empty(),
        _ => false,
    }
}

/// Alternation, content shapes, and the pairing of `tool_use` with `tool_result`.
fn check_messages(messages: &[Value], out: &mut Vec<String>) {
    // id → the assistant message (1-based) that issued it
    let mut issued: HashMap<String, usize> = HashMap::new();
    let mut answered: HashSet<String> = HashSet::new();
    // the tool_use ids of the previous message when it was an assistant message
    let mut expected: Vec<String> = Vec::new();
    let mut expected_from = 0;
    let mut previous_role: Option<&str> = None;
    let last = messages.len();

    for (index, message) in messages.iter().enumerate() {
        let number = index + 1;
        let role = match message.get("role").and_then(Value::as_str) {
            Some(role @ ("user" | "assistant")) => role,
            Some("system") => {
                out.push(format!(
                    "message {number} has role \"system\" (the system prompt goes in the top-level \"system\" field)"
                ));
                continue;
            }
            Some(other) => {
                out.push(format!(
                    "message {number} has role \"{other}\" (allowed: user, assistant)"
                ));
                continue;
            }
            None => {
                out.push(format!("message {number} has no string \"role\""));
                continue;
            }
        };
        if number == 1 && role != "user" {
            out.push(format!(
                "message 1 is from {role} (the first message must be from the user)"
            ));
        }
        if previous_role == Some(role) {
            out.push(format!(
                "message {number} is from {role} like message {} (roles must alternate)",
                number - 1
            ));
        }
        previous_role = Some(role);
        let Some(blocks) = blocks(message) else {
            out.push(format!(
                "message {number} content is not a string or an array of blocks"
            ));
            expected.clear();
            continue;
        };
        if is_empty_content(message) && !(role == "assistant" && number == last) {
            out.push(format!(
                "message {number} has empty content (only a final assistant message may)"
            ));
        }
        for (position, block) in blocks.iter().enumerate() {
            if !block.get("type").is_some_and(Value::is_string) {
                out.push(format!(
                    "message {number} content[{position}] has no string \"type\""
                ));
            }
        }
        if role == "user" {
            check_results(
                &blocks,
                number,
                &expected,
                expected_from,
                &issued,
                &mut answered,
                out,
            );
            expected.clear();
        } else {
            for id in &expected {
                out.push(format!(
                    "tool_use \"{id}\" of message {expected_from} is not answered by a tool_result in message {number}"
                ));
            }
            expected = uses(&blocks, number, &mut issued, out);
            expected_from = number;
        }
    }
    for id in expected {
        out.push(format!(
            "tool_use \"{id}\" of message {expected_from} is never answered (no user message with its tool_result follows)"
        ));
    }
}

/// The `tool_use` ids of an assistant message, each new to the conversation.
fn uses(
    blocks: &[&Value],
    number: usize,
    issued: &mut HashMap<String, usize>,
    out: &mut Vec<String>,
) -> Vec<String> {
    let mut ids = Vec::new();
    for (position, block) in blocks.iter().enumerate() {
        if block.get("type").and_then(Value::as_str) != Some("tool_use") {
            continue;
        }
        let at = format!("message {number} content[{position}] (tool_use)");
        if !block.get("name").is_some_and(Value::is_string) {
            out.push(format!("{at} has no string \"name\""));
        }
        if !block.get("input").is_some_and(Value::is_object) {
            out.push(format!("{at} has no object \"input\""));
        }
        let Some(id) = block.get("id").and_then(Value::as_str) else {
            out.push(format!("{at} has no string \"id\""));
            continue;
        };
        if let Some(first) = issued.get(id) {
            out.push(format!(
                "{at} reuses tool_use id \"{id}\" of message {first}"
            ));
            continue;
        }
        issued.insert(id.to_owned(), number);
        ids.push(id.to_owned());
    }
    ids
}

/// A user message's `tool_result` blocks: first in the content, each answering one id of the
/// assistant message just before, exactly once.
fn check_results(
    blocks: &[&Value],
    number: usize,
    expected: &[String],
    expected_from: usize,
    issued: &HashMap<String, usize>,
    answered: &mut HashSet<String>,
    out: &mut Vec<String>,
) {
    let mut other_seen = false;
    let mut here: HashSet<&str> = HashSet::new();
    for (position, block) in blocks.iter().enumerate() {
        if block.get("type").and_then(Value::as_str) != Some("tool_result") {
            other_seen = true;
            continue;
        }
        let at = format!("message {number} content[{position}] (tool_result)");
        if other_seen {
            out.push(format!(
                "{at} comes after other content (tool_result blocks must come first)"
            ));
        }
        if let Some(content) = block.get("content")
            && !(content.is_string() || content.is_array())
        {
            out.push(format!(
                "{at} content is {} (expected a string or blocks)",
                kind(content)
            ));
        }
        if let Some(is_error) = block.get("is_error")
            && !is_error.is_boolean()
        {
            out.push(format!(
                "{at} is_error is {} (expected a boolean)",
                kind(is_error)
            ));
        }
        let Some(id) = block.get("tool_use_id").and_then(Value::as_str) else {
            out.push(format!("{at} has no string \"tool_use_id\""));
            continue;
        };
        if answered.contains(id) {
            out.push(format!("{at} answers tool_use \"{id}\" a second time"));
            continue;
        }
        match issued.get(id) {
            None => out.push(format!(
                "{at} answers tool_use \"{id}\", which no assistant message issued"
            )),
            Some(from) if !expected.iter().any(|wanted| wanted == id) => out.push(format!(
                "{at} answers tool_use \"{id}\" of message {from}, not of the message just before"
            )),
            Some(_) => {}
        }
        answered.insert(id.to_owned());
        here.insert(id);
    }
    for id in expected {
        if !here.contains(id.as_str()) {
            out.push(format!(
                "tool_use \"{id}\" of message {expected_from} is not answered by a tool_result in message {number}"
            ));
        }
    }
}

/// Tool definitions; returns the names.
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
        if tool.get("type").and_then(Value::as_str) == Some("function") {
            out.push(format!(
                "{at} is in OpenAI's shape (type function); Anthropic wants name, description, input_schema"
            ));
            continue;
        }
        // A server tool (`"type": "web_search_20250305"`, …) has no input_schema of ours.
        let custom = matches!(
            tool.get("type").and_then(Value::as_str),
            None | Some("custom")
        );
        match tool.get("name").and_then(Value::as_str) {
            Some(name) if custom && !valid_tool_name(name) => out.push(format!(
                "{at} name \"{name}\" does not match ^[a-zA-Z0-9_-]{{1,64}}$"
            )),
            Some(name) if names.iter().any(|seen| seen == name) => {
                out.push(format!("{at} name \"{name}\" is defined twice"));
            }
            Some(name) => names.push(name.to_owned()),
            None => out.push(format!("{at} has no string \"name\"")),
        }
        if !custom {
            continue;
        }
        if let Some(description) = tool.get("description")
            && !description.is_string()
        {
            out.push(format!(
                "{at} description is {} (expected a string)",
                kind(description)
            ));
        }
        match tool.get("input_schema") {
            Some(schema) if root_is_object(schema) => {}
            Some(_) => out.push(format!(
                "{at} input_schema must be a JSON Schema whose root \"type\" is \"object\""
            )),
            None => out.push(format!("{at} has no \"input_schema\"")),
        }
        if tool.get("function").is_some() || tool.get("parameters").is_some() {
            out.push(format!(
                "{at} is in OpenAI's shape (function/parameters); Anthropic wants name, description, input_schema"
            ));
        }
    }
    names
}

/// `tool_choice`: `{"type": "auto" | "any" | "none"}` or `{"type": "tool", "name": …}`.
fn check_tool_choice(choice: Option<&Value>, names: &[String], out: &mut Vec<String>) {
    let Some(choice) = choice else {
        return;
    };
    match choice.get("type").and_then(Value::as_str) {
        Some("auto" | "any" | "none") => {}
        Some("tool") => match choice.get("name").and_then(Value::as_str) {
            Some(name) if names.iter().any(|known| known == name) => {}
            Some(name) => out.push(format!(
                "\"tool_choice\" names tool \"{name}\", which is not in \"tools\""
            )),
            None => out.push("\"tool_choice\" of type tool has no \"name\"".to_owned()),
        },
        _ => out.push(format!(
            "\"tool_choice\" is {choice} (expected an object with type auto, any, tool or none)"
        )),
    }
}
