//! A `POST /mcp` answer in one write. rmcp streams every answer to a POST as SSE: hyper gets
//! its head, each event and the stream's end as separate frames and, as each comes after the
//! last was flushed, writes a plain call's answer in three `writev`s (a fifth of the gateway's
//! CPU per call went there, by `perf`), each waking the client for a fragment. When the
//! stream ends within a short window, its events are joined into one body of known length,
//! which hyper writes with its head in one `writev`. A stream still open after the window (a
//! long call, its progress, a request to the client) goes on as it came, what was read so far
//! first: nothing is lost, reordered or held past the window. Other answers (GET streams,
//! JSON, 202s) pass untouched.

use std::pin::Pin;
use std::time::Duration;

use axum::{
    body::{Body, Bytes},
    extract::{Request, State},
    http::{HeaderValue, Method, header},
    middleware::Next,
    response::Response,
};
use futures::StreamExt;
use http_body::Body as _;

/// How long an SSE answer may be held back to be sent whole (`HttpOptions::one_write_window`):
/// a call to a local server ends within a few hundred microseconds (the gateway bench); a
/// longer one's first event waits at most this.
pub const DEFAULT_WINDOW: Duration = Duration::from_millis(2);
/// The most an answer held back may hold: past it the answer streams on, as it came.
pub const MAX_JOINED_BYTES: usize = 1024 * 1024;

/// The middleware: runs the request, then joins an SSE answer to a POST that ends within
/// `window` (zero: never).
pub async fn answer_in_one_write(
    State(window): State<Duration>,
    request: Request,
    next: Next,
) -> Response {
    let post = request.method() == Method::POST;
    let response = next.run(request).await;
    if !post || window.is_zero() || !is_event_stream(&response) {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    match join(body, window, MAX_JOINED_BYTES).await {
        Joined::Whole(bytes) => {
            // Said in a header: the door's count of answers in flight wraps the body in a
            // stream of unknown length, and hyper would send that chunked again.
            parts.headers.remove(header::TRANSFER_ENCODING);
            parts
                .headers
                .insert(header::CONTENT_LENGTH, HeaderValue::from(bytes.len()));
            Response::from_parts(parts, Body::from(bytes))
        }
        Joined::Streaming { read, rest, error } => {
            let read = futures::stream::iter(read.into_iter().map(Ok::<_, axum::Error>));
            let error = futures::stream::iter(error.map(Err));
            let rest = rest.map(Body::into_data_stream);
            let body = read
                .chain(error)
                .chain(futures::stream::iter(rest).flatten());
            Response::from_parts(parts, Body::from_stream(body))
        }
    }
}

fn is_event_stream(response: &Response) -> bool {
    response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"))
}

/// What reading an answer for up to a window gave.
enum Joined {
    /// The whole answer, which ended in the window.
    Whole(Bytes),
    /// What was read before the window closed (or the answer grew too large, failed, or sent
    /// something but data), and the rest of it, if any.
    Streaming {
        read: Vec<Bytes>,
        rest: Option<Body>,
        error: Option<axum::Error>,
    },
}

/// Reads `body` until it ends, `window` passes or it holds more than `max` bytes.
async fn join(mut body: Body, window: Duration, max: usize) -> Joined {
    let mut read: Vec<Bytes> = Vec::new();
    let mut held = 0;
    let deadline = tokio::time::sleep(window);
    tokio::pin!(deadline);
    loop {
        let frame = tokio::select! {
            biased;
            frame = next_frame(&mut body) => frame,
            () = &mut deadline => break,
        };
        match frame {
            None => return Joined::Whole(concat(read, held)),
            Some(Err(error)) => {
                return Joined::Streaming {
                    read,
                    rest: None,
                    error: Some(error),
                };
            }
            Some(Ok(frame)) => match frame.into_data() {
                Ok(data) => {
                    held += data.len();
                    read.push(data);
                    if held > max {
                        break;
                    }
                }
                // Trailers: rmcp sends none on an SSE answer, and a stream of data carries
                // none on either way; dropped as `into_data_stream` would drop them.
                Err(_trailers) => {}
            },
        }
    }
    Joined::Streaming {
        read,
        rest: Some(body),
        error: None,
    }
}

/// The body's next frame; none once it ended.
pub(crate) async fn next_frame(
    body: &mut Body,
) -> Option<Result<http_body::Frame<Bytes>, axum::Error>> {
    std::future::poll_fn(|cx| Pin::new(&mut *body).poll_frame(cx)).await
}

/// The pieces `read`, `held` bytes in all, as one.
pub(crate) fn concat(mut read: Vec<Bytes>, held: usize) -> Bytes {
    if read.len() == 1 {
        return read.pop().unwrap_or_default();
    }
    let mut joined = Vec::with_capacity(held);
    for piece in read {
        joined.extend_from_slice(&piece);
    }
    Bytes::from(joined)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::time::Instant;

    fn pieces(delays_ms: &[u64]) -> Body {
        let delays = delays_ms.to_vec();
        let stream =
            futures::stream::iter(delays.into_iter().enumerate()).then(|(i, ms)| async move {
                tokio::time::sleep(Duration::from_millis(ms)).await;
                Ok::<_, std::io::Error>(Bytes::from(format!("data: {i}\n\n")))
            });
        Body::from_stream(stream)
    }

    #[tokio::test]
    async fn an_answer_that_ends_in_the_window_is_one_body_of_every_event_in_order() {
        let joined = join(pieces(&[0, 0, 0]), Duration::from_secs(5), 1 << 20).await;
        let Joined::Whole(bytes) = joined else {
            panic!("not joined");
        };
        assert_eq!(&bytes[..], b"data: 0\n\ndata: 1\n\ndata: 2\n\n");
    }

    #[tokio::test]
    async fn an_answer_still_open_after_the_window_streams_on_with_nothing_lost() {
        let started = Instant::now();
        let joined = join(pieces(&[0, 300]), Duration::from_millis(20), 1 << 20).await;
        assert!(
            started.elapsed() < Duration::from_millis(250),
            "held past the window"
        );
        let Joined::Streaming {
            read,
            rest: Some(rest),
            error: None,
        } = joined
        else {
            panic!("not streaming on");
        };
        assert_eq!(read, vec![Bytes::from("data: 0\n\n")]);
        let rest = axum::body::to_bytes(rest, 1 << 20).await.unwrap();
        assert_eq!(&rest[..], b"data: 1\n\n");
    }

    #[tokio::test]
    async fn an_answer_larger_than_the_bound_is_not_held_whole() {
        let joined = join(pieces(&[0, 0, 0]), Duration::from_secs(5), 4).await;
        let Joined::Streaming { read, rest, .. } = joined else {
            panic!("held whole");
        };
        assert_eq!(read.len(), 1);
        let rest = axum::body::to_bytes(rest.unwrap(), 1 << 20).await.unwrap();
        assert_eq!(&rest[..], b"data: 1\n\ndata: 2\n\n");
    }
}
