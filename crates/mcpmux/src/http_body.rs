//! Bounded reads of an HTTP answer's body, the one way every reader of a peer's answer takes
//! it (OAuth endpoints, a legacy SSE server's error pages, the gateway's key fetches, the
//! agent's model providers): never more than a cap in memory, and, when asked, never waiting
//! longer than an idle time for the next bytes. Public for the crates over the library.
//! Knows nothing of what the body holds.

use std::time::Duration;

/// Why a body was not read whole.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BodyError {
    /// Longer than the cap: by its `Content-Length`, or as it arrived.
    #[error("the answer is larger than {max} bytes")]
    TooLarge {
        /// The cap.
        max: usize,
    },
    /// No next bytes within the idle time.
    #[error("no more of the answer within {after:?}")]
    Idle {
        /// The idle time.
        after: Duration,
    },
    /// The connection broke off while the body was read.
    #[error("the answer broke off")]
    Broken(#[source] reqwest::Error),
}

/// `response`'s whole body, refused when it is over `max` bytes (at once when its
/// `Content-Length` says so) or, with `idle`, when its next bytes take longer than that.
pub async fn read_body(
    mut response: reqwest::Response,
    max: usize,
    idle: Option<Duration>,
) -> Result<Vec<u8>, BodyError> {
    if response.content_length().is_some_and(|n| n > max as u64) {
        return Err(BodyError::TooLarge { max });
    }
    let mut body = Vec::new();
    while let Some(chunk) = next_chunk(&mut response, idle).await? {
        let chunk = chunk.as_ref();
        if body.len() + chunk.len() > max {
            return Err(BodyError::TooLarge { max });
        }
        body.extend_from_slice(chunk);
    }
    Ok(body)
}

/// At most the first `max` bytes of `response`'s body, what arrived before an error or
/// `idle` passed without more: an error answer quoted, or a short answer drained so its
/// connection is reused.
pub async fn read_prefix(
    mut response: reqwest::Response,
    max: usize,
    idle: Option<Duration>,
) -> Vec<u8> {
    let mut body = Vec::new();
    while body.len() < max {
        match next_chunk(&mut response, idle).await {
            Ok(Some(chunk)) => body.extend_from_slice(chunk.as_ref()),
            Ok(None) | Err(_) => break,
        }
    }
    body.truncate(max);
    body
}

/// The next chunk of the body, within `idle` when given.
async fn next_chunk(
    response: &mut reqwest::Response,
    idle: Option<Duration>,
) -> Result<Option<impl AsRef<[u8]> + use<>>, BodyError> {
    let chunk = match idle {
        Some(after) => tokio::time::timeout(after, response.chunk())
            .await
            .map_err(|_| BodyError::Idle { after })?,
        None => response.chunk().await,
    };
    chunk.map_err(BodyError::Broken)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A server that answers one request with `head` and then `body`, in chunks, and keeps
    /// the connection open after it when `hang` (a body that never ends).
    async fn serve(head: String, body: Vec<u8>, hang: bool) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/", listener.local_addr().unwrap());
        tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut request = [0u8; 4096];
            let _ = socket.read(&mut request).await;
            let _ = socket.write_all(head.as_bytes()).await;
            for chunk in body.chunks(16 * 1024) {
                if socket.write_all(chunk).await.is_err() {
                    return;
                }
            }
            if hang {
                tokio::time::sleep(Duration::from_secs(60)).await;
            }
        });
        url
    }

    async fn get(url: &str) -> reqwest::Response {
        reqwest::get(url).await.unwrap()
    }

    #[tokio::test]
    async fn a_body_within_the_cap_is_read_whole() {
        let body = b"{\"ok\":true}".to_vec();
        let head = format!("HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n", body.len());
        let url = serve(head, body.clone(), false).await;
        assert_eq!(read_body(get(&url).await, 64, None).await.unwrap(), body);
    }

    #[tokio::test]
    async fn a_body_over_the_cap_is_refused_by_its_length_or_as_it_arrives() {
        let head = "HTTP/1.1 200 OK\r\ncontent-length: 100000\r\n\r\n".to_string();
        let url = serve(head, vec![b'x'; 100_000], false).await;
        let error = read_body(get(&url).await, 1000, None).await.unwrap_err();
        assert!(
            matches!(error, BodyError::TooLarge { max: 1000 }),
            "{error}"
        );
        // No length: an endless body is cut at the cap, not read to its end.
        let head = "HTTP/1.1 200 OK\r\nconnection: close\r\n\r\n".to_string();
        let url = serve(head, vec![b'x'; 1 << 20], true).await;
        let error = read_body(get(&url).await, 64 * 1024, None)
            .await
            .unwrap_err();
        assert_eq!(error.to_string(), "the answer is larger than 65536 bytes");
    }

    #[tokio::test]
    async fn a_body_that_stops_coming_is_given_up_after_the_idle_time() {
        let head = "HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\n".to_string();
        let url = serve(head, b"abc".to_vec(), true).await;
        let idle = Duration::from_millis(200);
        let error = read_body(get(&url).await, 64, Some(idle))
            .await
            .unwrap_err();
        assert!(matches!(error, BodyError::Idle { .. }), "{error}");
        let url = serve(
            "HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\n".to_string(),
            b"abc".to_vec(),
            true,
        )
        .await;
        assert_eq!(read_prefix(get(&url).await, 64, Some(idle)).await, b"abc");
    }

    #[tokio::test]
    async fn a_prefix_is_the_first_bytes_of_a_longer_body() {
        let head = "HTTP/1.1 500 Oops\r\nconnection: close\r\n\r\n".to_string();
        let url = serve(head, vec![b'y'; 1 << 20], true).await;
        let prefix = read_prefix(get(&url).await, 100, None).await;
        assert_eq!(prefix, vec![b'y'; 100]);
    }
}
