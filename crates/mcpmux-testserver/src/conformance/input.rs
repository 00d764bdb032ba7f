//! The 2026-07-28 multi round-trip scenarios (SEP-2322): tools and a prompt that answer with
//! an `InputRequiredResult` (elicitation, sampling, roots, several at once, several rounds),
//! re-ask when an answer is missing, keep their progress in a `requestState` sealed with an
//! HMAC (a tampered one is refused), and ask only for what the client's declared
//! capabilities allow. Knows nothing of the handshake-era tools (`tools`).

use std::sync::OnceLock;

use aws_lc_rs::{hmac, rand::SystemRandom};
use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use rmcp::{
    ErrorData, RoleServer,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock,
        GetPromptRequestParams, GetPromptResponse, GetPromptResult, InputRequests,
        InputRequiredResult, InputResponses, PromptMessage,
    },
    service::RequestContext,
};
use serde_json::{Value, json};

/// The prefix of every tool here.
pub const TOOL_PREFIX: &str = "test_input_required_result_";

/// The prompt that asks for input.
pub const PROMPT: &str = "test_input_required_result_prompt";

/// The longest `requestState` read back (ours are far shorter).
const MAX_STATE_BYTES: usize = 4096;

/// The process's key for sealing `requestState`.
fn key() -> &'static hmac::Key {
    static KEY: OnceLock<hmac::Key> = OnceLock::new();
    KEY.get_or_init(
        || match hmac::Key::generate(hmac::HMAC_SHA256, &SystemRandom::new()) {
            Ok(key) => key,
            // No randomness: a fixed key still tells a changed state from ours.
            Err(_) => hmac::Key::new(hmac::HMAC_SHA256, b"mcpmux-testserver conformance"),
        },
    )
}

/// `value` sealed: its JSON, base64url, a dot, and the HMAC of that.
fn seal(value: &Value) -> String {
    let payload = URL_SAFE_NO_PAD.encode(value.to_string());
    let tag = hmac::sign(key(), payload.as_bytes());
    format!("{payload}.{}", URL_SAFE_NO_PAD.encode(tag.as_ref()))
}

/// A sealed state opened, or the error a tampered or foreign one gets (-32602).
fn open(state: &str) -> Result<Value, ErrorData> {
    let refused = || {
        ErrorData::invalid_params(
            "requestState failed its integrity check: it was not sent by this server or was changed",
            None,
        )
    };
    if state.len() > MAX_STATE_BYTES {
        return Err(refused());
    }
    let (payload, tag) = state.split_once('.').ok_or_else(refused)?;
    let tag = URL_SAFE_NO_PAD.decode(tag).map_err(|_| refused())?;
    hmac::verify(key(), payload.as_bytes(), &tag).map_err(|_| refused())?;
    let json = URL_SAFE_NO_PAD.decode(payload).map_err(|_| refused())?;
    serde_json::from_slice(&json).map_err(|_| refused())
}

fn elicitation(message: &str, field: &str, kind: &str) -> Value {
    json!({
        "method": "elicitation/create",
        "params": {
            "mode": "form",
            "message": message,
            "requestedSchema": {
                "type": "object",
                "properties": {field: {"type": kind}},
                "required": [field]
            }
        }
    })
}

fn sampling(text: &str, max_tokens: u32) -> Value {
    json!({
        "method": "sampling/createMessage",
        "params": {
            "messages": [{"role": "user", "content": {"type": "text", "text": text}}],
            "maxTokens": max_tokens
        }
    })
}

fn roots() -> Value {
    json!({"method": "roots/list", "params": {}})
}

/// An `InputRequiredResult` asking `requests`, with `state` sealed when given.
pub(crate) fn ask(
    requests: Value,
    state: Option<&Value>,
) -> Result<InputRequiredResult, ErrorData> {
    let requests: InputRequests = serde_json::from_value(requests)
        .map_err(|error| ErrorData::internal_error(format!("input requests: {error}"), None))?;
    Ok(InputRequiredResult::new(Some(requests), state.map(seal)))
}

fn done(text: impl Into<String>) -> CallToolResponse {
    CallToolResult::success(vec![ContentBlock::text(text)]).into()
}

/// The answer under `key` if it is an object (an elicitation, sampling or roots result).
pub(crate) fn answer<'a>(responses: Option<&'a InputResponses>, key: &str) -> Option<&'a Value> {
    responses?.get(key).filter(|value| value.is_object())
}

/// What an accepted elicitation answered for `field`.
fn elicited(answer: &Value, field: &str) -> String {
    match &answer["content"][field] {
        Value::String(text) => text.clone(),
        Value::Null => format!("({})", answer["action"].as_str().unwrap_or("no answer")),
        other => other.to_string(),
    }
}

/// The text of a sampling answer.
pub(crate) fn sampled(answer: &Value) -> String {
    let content = &answer["content"];
    let block = if content.is_array() {
        &content[0]
    } else {
        content
    };
    block["text"].as_str().unwrap_or_default().to_owned()
}

/// The URIs of a roots answer.
fn root_uris(answer: &Value) -> String {
    answer["roots"]
        .as_array()
        .map(|roots| {
            roots
                .iter()
                .filter_map(|root| root["uri"].as_str())
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default()
}

/// Answers a `tools/call` of a tool named `test_input_required_result_*`.
pub fn call(
    request: &CallToolRequestParams,
    context: &RequestContext<RoleServer>,
) -> Result<CallToolResponse, ErrorData> {
    let responses = request.input_responses.as_ref();
    let state = request.request_state.as_deref().map(open).transpose()?;
    let name = request.name.strip_prefix(TOOL_PREFIX).unwrap_or_default();
    match name {
        "elicitation" => Ok(match answer(responses, "user_name") {
            Some(given) => done(format!("Hello, {}!", elicited(given, "name"))),
            None => ask(
                json!({"user_name": elicitation("What is your name?", "name", "string")}),
                None,
            )?
            .into(),
        }),
        "sampling" => Ok(match answer(responses, "capital_question") {
            Some(given) => done(format!("The model answered: {}", sampled(given))),
            None => ask(
                json!({"capital_question": sampling("What is the capital of France?", 100)}),
                None,
            )?
            .into(),
        }),
        "list_roots" => Ok(match answer(responses, "client_roots") {
            Some(given) => done(format!("The client's roots: {}", root_uris(given))),
            None => ask(json!({"client_roots": roots()}), None)?.into(),
        }),
        "request_state" => Ok(match (answer(responses, "confirm"), &state) {
            (Some(given), Some(state)) if state["tool"] == "request_state" => {
                done(format!("state-ok: confirmed {}", given["content"]["ok"]))
            }
            _ => ask(
                json!({"confirm": elicitation("Please confirm", "ok", "boolean")}),
                Some(&json!({"tool": "request_state", "round": 1})),
            )?
            .into(),
        }),
        "multiple_inputs" => {
            let keys = ["user_name", "greeting", "client_roots"];
            if state
                .as_ref()
                .is_some_and(|s| s["tool"] == "multiple_inputs")
                && keys.iter().all(|key| answer(responses, key).is_some())
                && let Some(responses) = responses
            {
                return Ok(done(format!(
                    "name: {}; greeting: {}; roots: {}",
                    elicited(&responses["user_name"], "name"),
                    sampled(&responses["greeting"]),
                    root_uris(&responses["client_roots"])
                )));
            }
            Ok(ask(
                json!({
                    "user_name": elicitation("What is your name?", "name", "string"),
                    "greeting": sampling("Generate a greeting", 50),
                    "client_roots": roots()
                }),
                Some(&json!({"tool": "multiple_inputs", "round": 1})),
            )?
            .into())
        }
        "multi_round" => multi_round(responses, state.as_ref()),
        "tampered_state" => Ok(match (answer(responses, "confirm"), &state) {
            (Some(_), Some(state)) if state["tool"] == "tampered_state" => {
                done("state-ok: the requestState came back unchanged")
            }
            _ => ask(
                json!({"confirm": elicitation("Please confirm", "ok", "boolean")}),
                Some(&json!({"tool": "tampered_state", "round": 1})),
            )?
            .into(),
        }),
        "capabilities" => capabilities(responses, context),
        other => Err(ErrorData::invalid_params(
            format!("tool not found: `{TOOL_PREFIX}{other}`"),
            None,
        )),
    }
}

/// Three rounds: a name, then a colour (the state now says so), then the answer.
fn multi_round(
    responses: Option<&InputResponses>,
    state: Option<&Value>,
) -> Result<CallToolResponse, ErrorData> {
    let round = state
        .filter(|s| s["tool"] == "multi_round")
        .and_then(|s| s["round"].as_u64())
        .unwrap_or(0);
    let first = || {
        ask(
            json!({"step1": elicitation("Step 1: What is your name?", "name", "string")}),
            Some(&json!({"tool": "multi_round", "round": 1})),
        )
    };
    match round {
        1 => match answer(responses, "step1") {
            Some(given) => Ok(ask(
                json!({"step2": elicitation("Step 2: What is your favorite color?", "color", "string")}),
                Some(&json!({"tool": "multi_round", "round": 2, "name": elicited(given, "name")})),
            )?
            .into()),
            None => Ok(first()?.into()),
        },
        2 => {
            let name = state
                .and_then(|s| s["name"].as_str())
                .unwrap_or_default()
                .to_owned();
            match answer(responses, "step2") {
                Some(given) => Ok(done(format!(
                    "{name}'s favorite color is {}",
                    elicited(given, "color")
                ))),
                None => Ok(ask(
                    json!({"step2": elicitation("Step 2: What is your favorite color?", "color", "string")}),
                    Some(&json!({"tool": "multi_round", "round": 2, "name": name})),
                )?
                .into()),
            }
        }
        _ => Ok(first()?.into()),
    }
}

/// Asks only for what the client declared: sampling, elicitation and roots as its
/// capabilities (per request in 2026-07-28, from the handshake before) allow.
fn capabilities(
    responses: Option<&InputResponses>,
    context: &RequestContext<RoleServer>,
) -> Result<CallToolResponse, ErrorData> {
    let declared = context.meta.client_capabilities().or_else(|| {
        context
            .peer
            .peer_info()
            .map(|info| info.capabilities.clone())
    });
    let declared = declared
        .and_then(|c| serde_json::to_value(c).ok())
        .unwrap_or_default();
    let mut requests = serde_json::Map::new();
    if declared.get("elicitation").is_some() {
        requests.insert(
            "user_name".into(),
            elicitation("What is your name?", "name", "string"),
        );
    }
    if declared.get("sampling").is_some() {
        requests.insert("greeting".into(), sampling("Generate a greeting", 50));
    }
    if declared.get("roots").is_some() {
        requests.insert("client_roots".into(), roots());
    }
    if requests.is_empty() {
        return Ok(done(
            "The client declared none of sampling, elicitation and roots: nothing to ask",
        ));
    }
    if requests
        .keys()
        .all(|key| answer(responses, key.as_str()).is_some())
    {
        return Ok(done(format!(
            "answered: {}",
            requests.keys().cloned().collect::<Vec<_>>().join(", ")
        )));
    }
    Ok(ask(Value::Object(requests), None)?.into())
}

/// `prompts/get` of [`PROMPT`]: asks for a context, then fills the prompt with it.
pub fn prompt(request: &GetPromptRequestParams) -> Result<GetPromptResponse, ErrorData> {
    match answer(request.input_responses.as_ref(), "user_context") {
        Some(given) => {
            let context = elicited(given, "context");
            let messages: Vec<PromptMessage> = serde_json::from_value(json!([
                {"role": "user", "content": {"type": "text",
                    "text": format!("Use this context: {context}")}}
            ]))
            .map_err(|error| ErrorData::internal_error(format!("prompt: {error}"), None))?;
            Ok(GetPromptResult::new(messages).into())
        }
        None => Ok(ask(
            json!({"user_context": elicitation("What context should the prompt use?", "context", "string")}),
            None,
        )?
        .into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_state_opens_and_a_changed_one_is_refused() {
        let state = json!({"tool": "multi_round", "round": 2});
        let sealed = seal(&state);
        assert_eq!(open(&sealed).ok(), Some(state));
        let mut changed = sealed.clone().into_bytes();
        changed[2] ^= 1;
        let changed = String::from_utf8(changed).unwrap_or_default();
        assert!(open(&changed).is_err());
        assert!(open("not-a-state").is_err());
    }
}
