//! Streamable HTTP answers screened on their way to rmcp, so the request each one answers
//! fails at once with the reason instead of waiting for its deadline or losing the session:
//!
//! - a JSON body over rmcp's bound (16 MiB, fixed in rmcp) fails its request with "answer over
//!   16 MiB" as a JSON-RPC error for it (rmcp would fail it as a lost connection, which the
//!   hub retries for a read-only tool: the same answer, too large again);
//! - a JSON body rmcp cannot read as MCP (nested too deep for serde, say) fails its request
//!   with what was wrong, the same way;
//! - an SSE event over the bound set in `http.rs` (64 MiB, a stdio line's) ends the `POST`'s
//!   stream with an error answer for the request posted: rmcp discards the event unread, and
//!   the stream of one `POST` carries its answer. On the standalone `GET` stream no request
//!   is named, and rmcp's own handling (the stream ends) stands;
//! - an SSE event nested too deep to decode goes through the nesting screen (`nesting.rs`):
//!   an error answer for its id in its place (rmcp would skip it without a word).
//!
//! Knows rmcp's streamable HTTP client types; nothing of auth, sessions or the hub.

use std::pin::Pin;
use std::task::{Context, Poll, ready};

use futures::Stream;
use futures::stream::BoxStream;
use rmcp::model::{ClientJsonRpcMessage, ErrorCode, ErrorData, RequestId, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpError, StreamableHttpPostResponse,
};
use sse_stream::Sse;

use super::{nesting, oversize};

type HttpError = StreamableHttpError<reqwest::Error>;
type Events = BoxStream<'static, Result<Sse, SseError>>;

/// JSON-RPC "Parse error": an answer that could not be read.
const PARSE_ERROR: i32 = -32700;

/// rmcp's words for a JSON body it could not read as a message.
const UNREADABLE_BODY: &str = "could not parse JSON response as ServerJsonRpcMessage";

/// The answer to a `POST` of `message`, screened; `max_event` is the bound rmcp was given on
/// one SSE event (`None`: rmcp's default, which is not named here).
pub(crate) fn post(
    server: &str,
    message: &ClientJsonRpcMessage,
    max_event: Option<usize>,
    outcome: Result<StreamableHttpPostResponse, HttpError>,
) -> Result<StreamableHttpPostResponse, HttpError> {
    let id = match message {
        ClientJsonRpcMessage::Request(request) => Some(request.id.clone()),
        _ => None,
    };
    match (outcome, id) {
        (Err(StreamableHttpError::ResponseBodyTooLarge { max_size }), Some(id)) => {
            let reason = oversize::reason(max_size);
            tracing::warn!(server, %id, "failing the request: {reason}");
            Ok(answer(id, oversize::error(max_size)))
        }
        (Err(StreamableHttpError::UnexpectedServerResponse(text)), Some(id))
            if text.starts_with(UNREADABLE_BODY) =>
        {
            tracing::warn!(server, %id, "a response does not read as MCP: failing its request ({text})");
            let failure = ErrorData::new(
                ErrorCode(PARSE_ERROR),
                format!(
                    "the server's answer does not read as MCP: {}",
                    text.trim_start_matches(UNREADABLE_BODY)
                        .trim_start_matches(": ")
                ),
                None,
            );
            Ok(answer(id, failure))
        }
        (Ok(StreamableHttpPostResponse::Sse(stream, session)), id) => {
            let answer_for = id.zip(max_event);
            Ok(StreamableHttpPostResponse::Sse(
                events(server, stream, answer_for),
                session,
            ))
        }
        (outcome, _) => outcome,
    }
}

/// The standalone `GET` stream, screened: no request is named on it.
pub(crate) fn get_stream(server: &str, stream: Events) -> Events {
    events(server, stream, None)
}

/// A JSON-RPC error answer to `id`, as if the body had said it.
fn answer(id: RequestId, error: ErrorData) -> StreamableHttpPostResponse {
    StreamableHttpPostResponse::Json(ServerJsonRpcMessage::error(error, Some(id)), None)
}

/// `stream` with each event through the nesting screen, and an event over the bound answered
/// for `answer_for` (the request, and the bound).
fn events(server: &str, stream: Events, answer_for: Option<(RequestId, usize)>) -> Events {
    Box::pin(Screened {
        server: server.to_string(),
        inner: stream,
        answer_for,
        ended: false,
    })
}

struct Screened {
    server: String,
    inner: Events,
    /// The request the stream answers, and the bound on one event: what an event over it
    /// fails.
    answer_for: Option<(RequestId, usize)>,
    ended: bool,
}

impl Stream for Screened {
    type Item = Result<Sse, SseError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.ended {
            return Poll::Ready(None);
        }
        let item = ready!(self.inner.as_mut().poll_next(cx));
        Poll::Ready(match item {
            Some(Ok(mut event)) => {
                if let Some(data) = &event.data {
                    match nesting::screen(data.as_bytes()) {
                        nesting::Screen::Pass => {}
                        nesting::Screen::Answer(replacement) => {
                            tracing::warn!(server = %self.server, "a response is nested too deep to decode: failing its request");
                            event.data = String::from_utf8(replacement).ok();
                        }
                        nesting::Screen::Drop(reason) => {
                            tracing::warn!(server = %self.server, "dropping a message: {reason}");
                            event.data = None;
                        }
                    }
                }
                Some(Ok(event))
            }
            Some(Err(error)) if too_large(&error) => match self.answer_for.take() {
                Some((id, max)) => {
                    let reason = oversize::reason(max);
                    tracing::warn!(server = %self.server, %id, "failing the request: {reason}");
                    self.ended = true;
                    let failure = ServerJsonRpcMessage::error(oversize::error(max), Some(id));
                    match serde_json::to_string(&failure) {
                        Ok(data) => Some(Ok(Sse {
                            data: Some(data),
                            ..Sse::default()
                        })),
                        Err(_) => Some(Err(error)),
                    }
                }
                None => Some(Err(error)),
            },
            other => other,
        })
    }
}

/// rmcp's bounded SSE stream refusing an event over its bound (its error type is private:
/// its words are what can be matched).
fn too_large(error: &SseError) -> bool {
    matches!(error, SseError::Body(inner) if inner.to_string().contains("exceeded the maximum size"))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use futures::StreamExt;

    fn request(id: i64) -> ClientJsonRpcMessage {
        serde_json::from_value(serde_json::json!({
            "jsonrpc": "2.0", "id": id, "method": "tools/list"
        }))
        .unwrap()
    }

    fn error_of(response: StreamableHttpPostResponse) -> (RequestId, String) {
        match response {
            StreamableHttpPostResponse::Json(ServerJsonRpcMessage::Error(error), _) => {
                (error.id.unwrap(), error.error.message.into_owned())
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_body_over_the_bound_is_an_error_answer_for_the_request() {
        let outcome = Err(StreamableHttpError::ResponseBodyTooLarge { max_size: 16 << 20 });
        let (id, text) = error_of(post("s", &request(3), Some(1), outcome).unwrap());
        assert_eq!(id, RequestId::Number(3));
        assert!(text.starts_with("answer over 16 MiB: "), "{text}");
    }

    #[test]
    fn a_body_that_does_not_read_is_an_error_answer_for_the_request() {
        let outcome = Err(StreamableHttpError::UnexpectedServerResponse(
            format!("{UNREADABLE_BODY}: recursion limit exceeded at line 1: [[[[").into(),
        ));
        let (id, text) = error_of(post("s", &request(4), None, outcome).unwrap());
        assert_eq!(id, RequestId::Number(4));
        assert_eq!(
            text,
            "the server's answer does not read as MCP: recursion limit exceeded at line 1: [[[["
        );
    }

    #[tokio::test]
    async fn an_event_over_the_bound_ends_the_stream_with_an_error_answer_for_the_request() {
        let too_large: Box<dyn std::error::Error + Send + Sync> =
            "SSE event exceeded the maximum size of 64 bytes".into();
        let progress = Sse {
            data: Some(r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}"#.into()),
            ..Sse::default()
        };
        let stream: Events = futures::stream::iter([
            Ok(progress.clone()),
            Err(SseError::Body(too_large)),
            Ok(progress),
        ])
        .boxed();
        let outcome = Ok(StreamableHttpPostResponse::Sse(stream, None));
        let Ok(StreamableHttpPostResponse::Sse(stream, _)) =
            post("s", &request(5), Some(64), outcome)
        else {
            panic!("not a stream");
        };
        let events: Vec<_> = stream.collect().await;
        assert_eq!(events.len(), 2, "{events:?}");
        let answer: serde_json::Value =
            serde_json::from_str(events[1].as_ref().unwrap().data.as_deref().unwrap()).unwrap();
        assert_eq!(answer["id"], 5);
        let text = answer["error"]["message"].as_str().unwrap();
        assert!(text.starts_with("answer over 64 bytes: "), "{text}");
    }

    #[tokio::test]
    async fn an_event_nested_too_deep_becomes_an_error_answer_for_its_id() {
        let deep = format!(
            r#"{{"jsonrpc":"2.0","id":6,"result":{{"x":{}{}}}}}"#,
            "[".repeat(300),
            "]".repeat(300)
        );
        let stream: Events = futures::stream::iter([Ok(Sse {
            data: Some(deep),
            ..Sse::default()
        })])
        .boxed();
        let events: Vec<_> = get_stream("s", stream).collect().await;
        let answer: serde_json::Value =
            serde_json::from_str(events[0].as_ref().unwrap().data.as_deref().unwrap()).unwrap();
        assert_eq!(answer["id"], 6);
        assert_eq!(answer["error"]["code"], PARSE_ERROR);
    }
}
