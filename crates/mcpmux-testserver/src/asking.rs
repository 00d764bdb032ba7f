//! What the tool `ask_client` does in the handshake era: inside its call, it sends the client
//! a real server→client request (`elicitation/create`, `sampling/createMessage` or
//! `roots/list`) and answers with what the client said, so a test sees which client was
//! asked. With `together: N` it first waits until N calls of `ask_client` are in flight in
//! this process (each session's and each HTTP session's alike), so a test can be sure the
//! requests of concurrent calls overlap; with `linger`, each call then stays in flight until
//! all N have their answers, so no call of the group ends before every request was made.
//! Knows nothing of transports.

#![allow(deprecated)] // Sampling and roots are SEP-2577-deprecated in rmcp, yet the handshake era's.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use rmcp::{
    RoleServer,
    model::{ClientResult, ServerRequest},
    service::{Peer, RequestContext},
};
use serde_json::{Value, json};
use tokio::sync::Notify;

/// How long `linger` waits for the rest of its group.
const GATHER_WAIT: Duration = Duration::from_secs(20);

/// The calls of `ask_client` in flight in this process, and a bell rung at each arrival.
static IN_FLIGHT: AtomicU64 = AtomicU64::new(0);
static ARRIVED: Notify = Notify::const_new();

/// The calls of `ask_client` answered and lingering: how many wait now, and how many groups
/// have been let go (a group leaves together once `together` of them wait); a bell rung then.
static LINGERING: std::sync::Mutex<(u64, u64)> = std::sync::Mutex::new((0, 0));
static RELEASED: Notify = Notify::const_new();

/// Stays until `together` calls are answered and lingering (20 s at most, or until the call
/// is cancelled); then the whole group leaves.
pub async fn linger(together: u64, context: &RequestContext<RoleServer>) {
    let released = RELEASED.notified();
    tokio::pin!(released);
    released.as_mut().enable();
    let group = {
        let mut lingering = LINGERING.lock().unwrap_or_else(|p| p.into_inner());
        lingering.0 += 1;
        if lingering.0 >= together {
            lingering.0 = 0;
            lingering.1 += 1;
            RELEASED.notify_waiters();
            return;
        }
        lingering.1
    };
    let deadline = tokio::time::Instant::now() + GATHER_WAIT;
    loop {
        tokio::select! {
            () = released.as_mut() => {}
            () = tokio::time::sleep_until(deadline) => break,
            () = context.ct.cancelled() => break,
        }
        if LINGERING.lock().unwrap_or_else(|p| p.into_inner()).1 != group {
            return;
        }
        released.set(RELEASED.notified());
        released.as_mut().enable();
    }
    // Given up: no longer counted in the group still gathering.
    let mut lingering = LINGERING.lock().unwrap_or_else(|p| p.into_inner());
    if lingering.1 == group {
        lingering.0 = lingering.0.saturating_sub(1);
    }
}

/// Counts one call of `ask_client` in flight while it lives.
struct Present;

impl Present {
    fn arrive() -> Self {
        IN_FLIGHT.fetch_add(1, Ordering::SeqCst);
        ARRIVED.notify_waiters();
        Present
    }
}

impl Drop for Present {
    fn drop(&mut self) {
        IN_FLIGHT.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Asks the client of `context` for `what` (`elicitation`, `form` — a form of every field
/// kind —, `elicitation_url` — a URL-mode elicitation —, `sampling`, `roots`), after
/// `together` calls are in flight (or `gather` passed). The answer as one line (`name: …`, `form: {JSON}` (the secret
/// `token` reversed) or `form: (ACTION)`, `url: (ACTION)`, `reply: … (model …)`, `roots: …`), or why the client
/// refused (`Err`).
pub async fn ask(
    what: &str,
    message: Option<String>,
    together: u64,
    gather: Duration,
    context: &RequestContext<RoleServer>,
) -> Result<String, String> {
    let _present = Present::arrive();
    let deadline = tokio::time::Instant::now() + gather;
    loop {
        let arrived = ARRIVED.notified();
        tokio::pin!(arrived);
        arrived.as_mut().enable();
        if IN_FLIGHT.load(Ordering::SeqCst) >= together {
            break;
        }
        tokio::select! {
            () = arrived => {}
            () = tokio::time::sleep_until(deadline) => break,
            () = context.ct.cancelled() => return Err("cancelled".into()),
        }
    }
    let request = match what {
        "elicitation" => json!({
            "method": "elicitation/create",
            "params": {
                "message": message.unwrap_or_else(|| "What is your name?".into()),
                "requestedSchema": {
                    "type": "object",
                    "properties": {"name": {"type": "string", "description": "Your name"}},
                    "required": ["name"]
                }
            }
        }),
        "form" => json!({
            "method": "elicitation/create",
            "params": {
                "message": message.unwrap_or_else(|| "Tell us about you".into()),
                "requestedSchema": form_schema()
            }
        }),
        "elicitation_url" => json!({
            "method": "elicitation/create",
            "params": {
                "mode": "url",
                "message": message.unwrap_or_else(|| "Sign in to continue".into()),
                "url": "https://example.com/sign-in?state=1",
                "elicitationId": "elicit-1"
            }
        }),
        "sampling" => json!({
            "method": "sampling/createMessage",
            "params": {
                "messages": [{"role": "user", "content": {"type": "text", "text": message.unwrap_or_else(|| "Say hello".into())}}],
                "maxTokens": 50
            }
        }),
        "roots" => json!({"method": "roots/list"}),
        other => {
            return Err(format!(
                "`what` is elicitation, form, elicitation_url, sampling or roots, not `{other}`"
            ));
        }
    };
    let request: ServerRequest =
        serde_json::from_value(request).map_err(|e| format!("cannot build the request: {e}"))?;
    let answer = send(&context.peer, request, context).await?;
    let answer = serde_json::to_value(answer).unwrap_or(Value::Null);
    Ok(match what {
        "elicitation" => match answer["action"].as_str() {
            Some("accept") => format!(
                "name: {}",
                answer["content"]["name"].as_str().unwrap_or_default()
            ),
            action => format!("name: ({})", action.unwrap_or("no action")),
        },
        "form" => match answer["action"].as_str() {
            Some("accept") => {
                // The secret is said back reversed: a test sees it arrived whole without
                // the value itself reaching the terminal.
                let mut content = answer["content"].clone();
                if let Some(token) = content["token"].as_str() {
                    content["token"] = Value::String(format!(
                        "reversed:{}",
                        token.chars().rev().collect::<String>()
                    ));
                }
                format!("form: {content}")
            }
            action => format!("form: ({})", action.unwrap_or("no action")),
        },
        "elicitation_url" => format!(
            "url: ({})",
            answer["action"].as_str().unwrap_or("no action")
        ),
        "sampling" => {
            let content = &answer["content"];
            let block = if content.is_array() {
                &content[0]
            } else {
                content
            };
            format!(
                "reply: {} (model {})",
                block["text"].as_str().unwrap_or_default(),
                answer["model"].as_str().unwrap_or_default()
            )
        }
        _ => format!(
            "roots: {}",
            answer["roots"]
                .as_array()
                .map(|roots| roots
                    .iter()
                    .filter_map(|r| r["uri"].as_str())
                    .collect::<Vec<_>>()
                    .join(" "))
                .unwrap_or_default()
        ),
    })
}

/// The form `what: form` asks for: one field of each kind a form may hold (a string, an
/// integer with bounds, a titled enum, a boolean with a default) and a secret `token`, marked
/// `writeOnly` (rmcp's client drops that mark, and refuses `format: password` outright, so a
/// client sees a secret by its name).
fn form_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "title": "Name", "description": "What to call you"},
            "age": {"type": "integer", "title": "Age", "minimum": 0, "maximum": 150},
            "color": {
                "type": "string",
                "title": "Colour",
                "oneOf": [
                    {"const": "red", "title": "Red"},
                    {"const": "green", "title": "Green"},
                    {"const": "blue", "title": "Blue"}
                ]
            },
            "subscribe": {"type": "boolean", "title": "Subscribe", "default": false},
            "token": {"type": "string", "title": "Token", "writeOnly": true}
        },
        "required": ["name", "age", "color", "token"]
    })
}

/// Sends `request` to the client (within this call: over HTTP, on its stream) and waits for
/// the answer, or the call's cancellation.
async fn send(
    peer: &Peer<RoleServer>,
    request: ServerRequest,
    context: &RequestContext<RoleServer>,
) -> Result<ClientResult, String> {
    tokio::select! {
        answer = peer.send_request(request) => answer.map_err(|e| match e {
            rmcp::service::ServiceError::McpError(error) => {
                format!("refused: {} {}", error.code.0, error.message)
            }
            other => format!("failed: {other}"),
        }),
        () = context.ct.cancelled() => Err("cancelled".into()),
    }
}
