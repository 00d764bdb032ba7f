//! The HTTP side: one handler for every path and method that reads the body (bounded),
//! records the request, runs the wire's checks, takes the next script step and hands it to
//! the wire's rendering. Owns the shared state (script, requests, violations); ids come from
//! `ids`.
//! Knows nothing of the providers' shapes beyond dispatching to `openai`/`anthropic`/`checks`.

use std::{
    collections::VecDeque,
    sync::{Arc, Mutex, MutexGuard},
    time::{SystemTime, UNIX_EPOCH},
};

use axum::{
    Router,
    extract::{Request, State},
    http::{Method, StatusCode},
    response::Response,
};
use serde_json::Value;

use crate::ids::next_id_suffix;
use crate::{
    anthropic, checks, openai,
    script::{Step, Turn},
    wire::{Received, Wire},
};

/// The largest request body read: far above any real conversation a test sends, small enough
/// that a runaway client cannot exhaust memory.
pub(crate) const MAX_BODY_BYTES: usize = 32 * 1024 * 1024;

/// What the server and the test share.
pub(crate) struct Shared {
    wire: Wire,
    state: Mutex<Script>,
}

struct Script {
    steps: VecDeque<Step>,
    requests: Vec<Received>,
    violations: Vec<String>,
    issued: Vec<String>,
}

impl Shared {
    pub(crate) fn new(wire: Wire, steps: Vec<Step>) -> Shared {
        Shared {
            wire,
            state: Mutex::new(Script {
                steps: steps.into(),
                requests: Vec::new(),
                violations: Vec::new(),
                issued: Vec::new(),
            }),
        }
    }

    /// The state; a panic elsewhere while holding it leaves it usable (it is only appended to).
    fn lock(&self) -> MutexGuard<'_, Script> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(crate) fn requests(&self) -> Vec<Received> {
        self.lock().requests.clone()
    }

    pub(crate) fn violations(&self) -> Vec<String> {
        self.lock().violations.clone()
    }

    pub(crate) fn remaining(&self) -> usize {
        self.lock().steps.len()
    }

    pub(crate) fn issued(&self) -> Vec<String> {
        self.lock().issued.clone()
    }
}

/// Every path and method goes to [`handle`]: a wrong path is a violation, not a 404 to guess at.
pub(crate) fn router(shared: Arc<Shared>) -> Router {
    Router::new().fallback(handle).with_state(shared)
}

/// What became of reading a request.
enum Intake {
    /// A JSON body the checks can look at.
    Json(Value),
    /// A body that could not be used: the status to answer and why.
    Refused(Value, StatusCode, String),
}

async fn read(request: Request) -> (Method, String, Vec<(String, String)>, Intake) {
    let (parts, body) = request.into_parts();
    let path = parts.uri.path().to_owned();
    let headers = parts
        .headers
        .iter()
        .map(|(name, value)| {
            let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
            (name.as_str().to_owned(), value)
        })
        .collect();
    let intake = match axum::body::to_bytes(body, MAX_BODY_BYTES).await {
        Err(error) => Intake::Refused(
            Value::Null,
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("body unreadable or over {MAX_BODY_BYTES} bytes: {error}"),
        ),
        Ok(bytes) => match serde_json::from_slice::<Value>(&bytes) {
            Ok(value) => Intake::Json(value),
            Err(error) => Intake::Refused(
                Value::String(String::from_utf8_lossy(&bytes).into_owned()),
                StatusCode::BAD_REQUEST,
                format!("body is not JSON: {error}"),
            ),
        },
    };
    (parts.method, path, headers, intake)
}

async fn handle(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let wire = shared.wire;
    let (method, path, headers, intake) = read(request).await;
    let mut problems = Vec::new();
    if method != Method::POST {
        problems.push(format!("method {method} (the API takes POST)"));
    }
    let (body, status) = match intake {
        Intake::Json(body) => {
            problems.extend(checks::check(wire, &path, &headers, &body));
            (body, StatusCode::BAD_REQUEST)
        }
        Intake::Refused(body, status, why) => {
            problems.push(why);
            (body, status)
        }
    };
    let refusal = (!problems.is_empty()).then_some((status, problems));

    let stream = body.get("stream") == Some(&Value::Bool(true));
    let include_usage = body
        .pointer("/stream_options/include_usage")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let model = body
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("scripted-model")
        .to_owned();

    let (number, step) = {
        let mut script = shared.lock();
        script.requests.push(Received {
            path,
            headers,
            body: body.clone(),
        });
        let number = script.requests.len();
        if let Some((status, problems)) = refusal {
            for problem in &problems {
                script
                    .violations
                    .push(format!("request {number}: {problem}"));
            }
            drop(script);
            return error(wire, status, &problems.join("; "), None);
        }
        let Some(step) = script.steps.pop_front() else {
            script
                .violations
                .push(format!("script exhausted at request {number}"));
            drop(script);
            let message = format!("script exhausted at request {number}");
            return error(wire, StatusCode::INTERNAL_SERVER_ERROR, &message, None);
        };
        (number, step)
    };

    let failed: Vec<String> = step
        .checks
        .iter()
        .filter_map(|check| check(&body).err())
        .map(|why| format!("request {number}: expectation failed: {why}"))
        .collect();
    let call_ids: Vec<String> = (0..step.call_count())
        .map(|_| match wire {
            Wire::OpenAi => format!("call_{}", next_id_suffix()),
            Wire::Anthropic => format!("toolu_{}", next_id_suffix()),
        })
        .collect();
    {
        let mut script = shared.lock();
        script.violations.extend(failed);
        script.issued.extend(call_ids.iter().cloned());
    }

    if let Some(delay) = step.delay {
        tokio::time::sleep(delay).await;
    }
    let turn = Turn {
        model,
        stream,
        include_usage,
        response_id: match wire {
            Wire::OpenAi => format!("chatcmpl-{}", next_id_suffix()),
            Wire::Anthropic => format!("msg_{}", next_id_suffix()),
        },
        call_ids,
        created: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|elapsed| elapsed.as_secs())
            .unwrap_or(0),
        usage: step.usage,
    };
    match wire {
        Wire::OpenAi => openai::reply(&step.reply, &turn),
        Wire::Anthropic => anthropic::reply(&step.reply, &turn),
    }
}

/// An error answer in the wire's format.
fn error(wire: Wire, status: StatusCode, message: &str, retry_after: Option<u64>) -> Response {
    match wire {
        Wire::OpenAi => openai::error(status, Some(message), retry_after),
        Wire::Anthropic => anthropic::error(status, Some(message), retry_after),
    }
}
