//! What a streamable-HTTP server's answers mean for the request that got them and for the
//! session: an HTTP error to a request we posted fails that request at once, even when its
//! body names no request (the reference servers answer `{"id": null, …}`), and the ways
//! servers say "I do not know this session" — the spec's 404 and the reference servers' 400
//! "No valid session ID provided" — become rmcp's `SessionExpired`, which makes rmcp's
//! transport initialize a new session (the saved `initialize`: same era, same capabilities)
//! and send the request again on it.
//!
//! The [`SessionWatch`] tells the connection what happened beneath it: a session replaced (so
//! subscriptions are made again and the tools listed again) and a standalone `GET` stream
//! refused for an unknown session (so the connection sends a request that meets the dead
//! session and gets it replaced). Knows HTTP answers and JSON-RPC framing; nothing of tools,
//! calls or the hub.

use std::sync::atomic::{AtomicBool, Ordering};

use rmcp::model::{ClientJsonRpcMessage, ClientRequest, ErrorData, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_client::{StreamableHttpError, StreamableHttpPostResponse};
use tokio::sync::{Notify, watch};

type HttpError = StreamableHttpError<reqwest::Error>;

/// Longest part of a server's error text quoted in an error, in characters.
const PREVIEW_CHARS: usize = 200;

/// Session events of one streamable-HTTP transport, shared by every clone of its client and
/// watched by the connection that owns the session.
#[derive(Debug)]
pub(crate) struct SessionWatch {
    /// A request met an unknown session; the next `initialize` replaces it.
    expiring: AtomicBool,
    /// Counts sessions that replaced a lost one.
    renewed: watch::Sender<u64>,
    /// The standalone stream found the session gone while no request was in flight.
    lost: Notify,
    /// The server answered something: requests waiting for it to come back go at once.
    answered: Notify,
}

impl Default for SessionWatch {
    fn default() -> Self {
        Self {
            expiring: AtomicBool::new(false),
            renewed: watch::channel(0).0,
            lost: Notify::new(),
            answered: Notify::new(),
        }
    }
}

impl SessionWatch {
    /// Changes each time a new session replaces a lost one.
    pub(crate) fn renewals(&self) -> watch::Receiver<u64> {
        self.renewed.subscribe()
    }

    /// Resolves when a standalone `GET` stream was refused for an unknown session.
    pub(crate) async fn session_lost(&self) {
        self.lost.notified().await
    }

    /// The session is gone; the `initialize` that follows starts its replacement.
    fn expire(&self) {
        self.expiring.store(true, Ordering::Release);
    }

    /// Called with every `POST`'s outcome: an `initialize` answered after a session loss is
    /// the new session.
    fn observe_initialize(&self, message: &ClientJsonRpcMessage, answered: bool) {
        if answered && is_initialize(message) && self.expiring.swap(false, Ordering::AcqRel) {
            tracing::info!("the server did not know the session; a new one replaced it");
            self.renewed.send_modify(|n| *n += 1);
        }
    }
}

pub(crate) fn is_initialize(message: &ClientJsonRpcMessage) -> bool {
    matches!(message, ClientJsonRpcMessage::Request(request)
        if matches!(request.request, ClientRequest::InitializeRequest(_)))
}

/// Runs `post` and, while a server with a live session (`in_session`) refuses connections,
/// again after a pause: it is restarting, and a request that never reached it is safe to send
/// again, a `tools/call` too (no connection, so nothing was delivered). Without a session (the
/// handshake) a refusal stands at once: that server is not there.
/// The pause ends early when another request reaches the server: requests waiting together
/// go on together (a renewed session must not wait for one of them to wake up).
pub(crate) async fn while_unreachable<T, F, Fut>(
    watch: &SessionWatch,
    in_session: bool,
    post: F,
) -> Result<T, HttpError>
where
    F: Fn() -> Fut,
    Fut: Future<Output = Result<T, HttpError>>,
{
    let mut outcome = post().await;
    let started = tokio::time::Instant::now();
    let mut delay = crate::defaults::HTTP_UNREACHABLE_FIRST_DELAY;
    while in_session
        && let Err(StreamableHttpError::Client(error)) = &outcome
        && error.is_connect()
        && started.elapsed() + delay < crate::defaults::HTTP_UNREACHABLE_WAIT
    {
        tracing::debug!("the server refuses connections ({error}); waiting for it to come back");
        tokio::select! {
            () = tokio::time::sleep(delay) => {}
            () = watch.answered.notified() => {}
        }
        delay = (delay * 2).min(crate::defaults::HTTP_UNREACHABLE_MAX_DELAY);
        outcome = post().await;
    }
    if !matches!(&outcome, Err(StreamableHttpError::Client(error)) if error.is_connect()) {
        watch.answered.notify_waiters();
    }
    outcome
}

/// What the answer to a `POST` of `message` (sent with `session_id`, if any) means: an error
/// that names no request is made the answer to this one, and an unknown session becomes
/// `SessionExpired` (rmcp then initializes a new session and sends the request again).
pub(crate) fn post_outcome(
    watch: &SessionWatch,
    message: &ClientJsonRpcMessage,
    session_id: Option<&str>,
    outcome: Result<StreamableHttpPostResponse, HttpError>,
) -> Result<StreamableHttpPostResponse, HttpError> {
    let outcome = judge_post(message, session_id, outcome);
    if matches!(outcome, Err(StreamableHttpError::SessionExpired)) {
        watch.expire();
    }
    watch.observe_initialize(message, outcome.is_ok());
    outcome
}

fn judge_post(
    message: &ClientJsonRpcMessage,
    session_id: Option<&str>,
    outcome: Result<StreamableHttpPostResponse, HttpError>,
) -> Result<StreamableHttpPostResponse, HttpError> {
    let ClientJsonRpcMessage::Request(request) = message else {
        return outcome;
    };
    match outcome {
        // A JSON answer to a POST of one request is that request's answer, whatever id it
        // carries. rmcp's client would hand an error without our id to a session that cannot
        // match it, and the call would wait for its deadline.
        Ok(StreamableHttpPostResponse::Json(ServerJsonRpcMessage::Error(error), sid))
            if error.id.as_ref() != Some(&request.id) =>
        {
            let text = preview(error.error.message.as_bytes());
            if session_id.is_some() && says_session_unknown(&text) {
                tracing::debug!("the server does not know the session ({text})");
                // rmcp sends the request again on the new session, a `tools/call` too: a
                // server that did not know the session refused it before running it, so it
                // cannot run twice. This is the only place a `tools/call` is sent again;
                // everywhere else (`http::resend_on_stale_connection`, `connection::call`)
                // it never is, because the server may already have started it.
                return Err(StreamableHttpError::SessionExpired);
            }
            let answer = ErrorData::new(
                error.error.code,
                format!("the server refused the request without answering it: {text}"),
                None,
            );
            Ok(StreamableHttpPostResponse::Json(
                ServerJsonRpcMessage::error(answer, Some(request.id.clone())),
                sid,
            ))
        }
        // rmcp's words for a non-JSON error answer: "HTTP <status>: <the whole body>".
        Err(StreamableHttpError::UnexpectedServerResponse(text)) => {
            let Some((status, head, body)) = http_status(&text) else {
                return Err(StreamableHttpError::UnexpectedServerResponse(text));
            };
            let body = preview(body.as_bytes());
            if session_id.is_some() && matches!(status, 400 | 404) && says_session_unknown(&body) {
                tracing::debug!(status, "the server does not know the session ({body})");
                return Err(StreamableHttpError::SessionExpired);
            }
            // rmcp's head ("HTTP 400 Bad Request") is kept: the legacy fallback and the
            // 401 handling read the status from it.
            let head = preview(head.as_bytes());
            let text = if body.is_empty() {
                head
            } else {
                format!("{head}: {body}")
            };
            Err(StreamableHttpError::UnexpectedServerResponse(text.into()))
        }
        other => other,
    }
}

/// What the answer to a `GET` of the standalone stream (sent with `session_id`, if any) means:
/// 404, or 400 (the reference servers' "No valid session ID provided"), for a session id means
/// the server no longer knows the session. Nothing but a request can replace it (rmcp starts
/// a new session only when a `POST` meets the old one), so the connection is told to send one.
pub(crate) fn get_outcome<T>(
    watch: &SessionWatch,
    session_id: Option<&str>,
    outcome: Result<T, HttpError>,
) -> Result<T, HttpError> {
    let Err(StreamableHttpError::Client(error)) = &outcome else {
        watch.answered.notify_waiters();
        return outcome;
    };
    if !error.is_connect() {
        watch.answered.notify_waiters();
    }
    if session_id.is_none() {
        return outcome;
    }
    let unknown = error.status().is_some_and(|s| {
        s == reqwest::StatusCode::NOT_FOUND || s == reqwest::StatusCode::BAD_REQUEST
    });
    if unknown {
        tracing::debug!("the event stream was refused for the session ({error}); renewing it");
        watch.lost.notify_one();
    } else if error.is_connect() {
        // The server is down (restarting?): the request sent to find the session waits
        // until it is back, and renews the session if it came back without it.
        tracing::debug!("the event stream cannot reach the server ({error})");
        watch.lost.notify_one();
    }
    outcome
}

/// `HTTP 400 Bad Request: body` → (400, "HTTP 400 Bad Request", "body").
fn http_status(text: &str) -> Option<(u16, &str, &str)> {
    let status = text.strip_prefix("HTTP ")?.get(..3)?.parse::<u16>().ok()?;
    let (head, body) = text.split_once(": ").unwrap_or((text, ""));
    Some((status, head, body))
}

/// How servers word an unknown session: the reference TypeScript server "Bad Request: No
/// valid session ID provided", the Python SDK and rmcp "Session not found", others "invalid"
/// or "expired" session.
fn says_session_unknown(text: &str) -> bool {
    let text = text.to_ascii_lowercase();
    text.contains("session")
        && ["no valid", "not found", "invalid", "unknown", "expired"]
            .iter()
            .any(|word| text.contains(word))
}

/// A server's error text fit for one line of an error message: tags and control characters
/// (a terminal escape) dropped, whitespace collapsed, cut short.
pub(crate) fn preview(body: &[u8]) -> String {
    let tidy: String = super::sse::tidy_body(body)
        .chars()
        .filter(|c| !c.is_control())
        .collect();
    match tidy.char_indices().nth(PREVIEW_CHARS) {
        Some((cut, _)) => format!("{}…", &tidy[..cut]),
        None => tidy,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use rmcp::model::{NumberOrString, PingRequest, RequestId};

    fn ping(id: i64) -> ClientJsonRpcMessage {
        ClientJsonRpcMessage::request(
            ClientRequest::PingRequest(PingRequest::default()),
            RequestId::Number(id),
        )
    }

    fn error_answer(
        id: Option<RequestId>,
        message: &str,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        Ok(StreamableHttpPostResponse::Json(
            ServerJsonRpcMessage::error(
                ErrorData::new(rmcp::model::ErrorCode(-32000), message.to_string(), None),
                id,
            ),
            None,
        ))
    }

    fn answered_id(outcome: &Result<StreamableHttpPostResponse, HttpError>) -> Option<RequestId> {
        match outcome {
            Ok(StreamableHttpPostResponse::Json(ServerJsonRpcMessage::Error(e), _)) => e.id.clone(),
            _ => None,
        }
    }

    #[test]
    fn an_error_naming_no_request_becomes_the_answer_to_the_request_posted() {
        let watch = SessionWatch::default();
        let got = post_outcome(
            &watch,
            &ping(7),
            None,
            error_answer(None, "Internal server error"),
        );
        assert_eq!(answered_id(&got), Some(NumberOrString::Number(7)));
        let Ok(StreamableHttpPostResponse::Json(ServerJsonRpcMessage::Error(e), _)) = got else {
            unreachable!()
        };
        assert!(
            e.error.message.contains("Internal server error"),
            "{}",
            e.error.message
        );
    }

    #[test]
    fn the_reference_servers_400_for_a_session_ends_the_session() {
        let watch = SessionWatch::default();
        let got = post_outcome(
            &watch,
            &ping(1),
            Some("old"),
            error_answer(None, "Bad Request: No valid session ID provided"),
        );
        assert!(matches!(got, Err(StreamableHttpError::SessionExpired)));
        let text = Err(StreamableHttpError::UnexpectedServerResponse(
            "HTTP 400 Bad Request: Bad Request: No valid session ID provided".into(),
        ));
        assert!(matches!(
            post_outcome(&watch, &ping(2), Some("old"), text),
            Err(StreamableHttpError::SessionExpired)
        ));
    }

    #[test]
    fn without_a_session_id_or_with_another_complaint_it_is_no_session_loss() {
        let watch = SessionWatch::default();
        let got = post_outcome(
            &watch,
            &ping(3),
            None,
            error_answer(None, "No valid session ID provided"),
        );
        assert_eq!(answered_id(&got), Some(NumberOrString::Number(3)));
        let got = post_outcome(
            &watch,
            &ping(4),
            Some("s"),
            error_answer(None, "Bad Request: Parse error"),
        );
        assert_eq!(answered_id(&got), Some(NumberOrString::Number(4)));
        let not_found = Err(StreamableHttpError::UnexpectedServerResponse(
            "HTTP 404 Not Found: Session not found".into(),
        ));
        assert!(matches!(
            post_outcome(&watch, &ping(5), None, not_found),
            Err(StreamableHttpError::UnexpectedServerResponse(_))
        ));
    }

    #[test]
    fn an_answer_with_our_id_is_left_alone() {
        let watch = SessionWatch::default();
        let got = post_outcome(
            &watch,
            &ping(9),
            Some("s"),
            error_answer(Some(RequestId::Number(9)), "Session not found"),
        );
        assert_eq!(answered_id(&got), Some(NumberOrString::Number(9)));
    }

    #[test]
    fn error_bodies_are_quoted_short_and_without_control_characters() {
        let body = format!("HTTP 502 Bad Gateway: \x1b[2J{}", "x".repeat(5000));
        let got = judge_post(
            &ping(1),
            None,
            Err(StreamableHttpError::UnexpectedServerResponse(body.into())),
        );
        let Err(StreamableHttpError::UnexpectedServerResponse(text)) = got else {
            unreachable!()
        };
        assert!(text.starts_with("HTTP 502 Bad Gateway: [2J"), "{text}");
        assert!(!text.contains('\x1b'));
        assert!(
            text.chars().count() <= "HTTP 502 Bad Gateway: ".len() + 201,
            "{text}"
        );
    }

    #[test]
    fn an_initialize_after_a_session_loss_counts_as_a_renewal() {
        let watch = SessionWatch::default();
        let renewals = watch.renewals();
        let init = ClientJsonRpcMessage::request(
            ClientRequest::InitializeRequest(rmcp::model::InitializeRequest::new(
                Default::default(),
            )),
            RequestId::Number(0),
        );
        watch.observe_initialize(&init, true);
        assert_eq!(*renewals.borrow(), 0, "the first session is no renewal");
        let _ = post_outcome(
            &watch,
            &ping(1),
            Some("s"),
            Err(StreamableHttpError::SessionExpired),
        );
        watch.observe_initialize(&init, true);
        assert_eq!(*renewals.borrow(), 1);
    }
}
