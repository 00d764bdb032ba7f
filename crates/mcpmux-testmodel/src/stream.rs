//! Server-sent events on the wire: a `text/event-stream` response sent frame by frame (each
//! frame its own write, so a client sees them arrive apart), optionally cut before its end,
//! and the splitting of text into the small pieces a model streams. Knows nothing of either
//! provider's event names or shapes.

use std::time::Duration;

use axum::{
    body::{Body, Bytes},
    http::{HeaderValue, header},
    response::Response,
};

/// How many characters of text go in one streamed delta.
const TEXT_PIECE_CHARS: usize = 6;
/// How many characters of tool arguments go in one streamed delta: small, so a JSON token is
/// split across deltas as real models do.
const ARGUMENT_PIECE_CHARS: usize = 7;
/// The pause before a scripted cut, so the frames before it are flushed to the client first.
const PAUSE_BEFORE_CUT: Duration = Duration::from_millis(50);

/// Streams `frames` as `text/event-stream`; when `cut`, the connection is then aborted
/// instead of ended (the client sees the body fail).
///
/// Each frame goes out in two writes split at its middle byte — wherever that falls, even
/// inside a UTF-8 character — as a network may deliver it: a client must buffer until the
/// blank line that ends an event, and decode text only after joining the pieces.
pub(crate) fn sse(frames: Vec<String>, cut: bool) -> Response {
    let (sender, receiver) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(4);
    tokio::spawn(async move {
        for frame in frames {
            let mut first = Bytes::from(frame);
            let second = first.split_off(first.len() / 2);
            for half in [first, second] {
                if half.is_empty() {
                    continue;
                }
                if sender.send(Ok(half)).await.is_err() {
                    return;
                }
                tokio::task::yield_now().await;
            }
        }
        if cut {
            tokio::time::sleep(PAUSE_BEFORE_CUT).await;
            let cut = std::io::Error::new(std::io::ErrorKind::ConnectionAborted, "scripted cut");
            let _ = sender.send(Err(cut)).await;
        }
    });
    let stream = futures::stream::unfold(receiver, |mut receiver| async move {
        receiver.recv().await.map(|item| (item, receiver))
    });
    let mut response = Response::new(Body::from_stream(stream));
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream; charset=utf-8"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// Text in streamed pieces (none for empty text).
pub(crate) fn text_pieces(text: &str) -> Vec<String> {
    pieces(text, TEXT_PIECE_CHARS)
}

/// Tool arguments in streamed pieces (none for empty arguments).
pub(crate) fn argument_pieces(arguments: &str) -> Vec<String> {
    pieces(arguments, ARGUMENT_PIECE_CHARS)
}

fn pieces(text: &str, chars: usize) -> Vec<String> {
    let all: Vec<char> = text.chars().collect();
    all.chunks(chars.max(1))
        .map(|piece| piece.iter().collect())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_rejoin_to_the_text_and_never_split_a_character() {
        let text = "héllo wörld, ünïcode ✓ and more";
        let parts = text_pieces(text);
        assert!(parts.len() > 1);
        assert_eq!(parts.concat(), text);
        assert!(text_pieces("").is_empty());
    }
}
