//! Raw HTTP/1.1 on 127.0.0.1 for what no real server does on cue: reading one request off a
//! socket, and a proxy that breaks connections on purpose.

use std::time::Duration;

/// Reads one HTTP/1.1 request (head and `content-length` body) from `socket`, keeping what
/// follows it in `buffer` for the next call; `None` when the peer closes first.
pub async fn read_http_request(
    socket: &mut tokio::net::TcpStream,
    buffer: &mut Vec<u8>,
) -> Option<Vec<u8>> {
    use tokio::io::AsyncReadExt;
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        match socket.read(&mut chunk).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => buffer.extend_from_slice(&chunk[..n]),
        }
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).to_lowercase();
    let length = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .map_or(0, |v| v.trim().parse::<usize>().unwrap());
    while buffer.len() < head_end + length {
        match socket.read(&mut chunk).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => buffer.extend_from_slice(&chunk[..n]),
        }
    }
    Some(buffer.drain(..head_end + length).collect())
}

/// What [`BreakingProxy`] does with one HTTP request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Break {
    /// Relay it and its response.
    Relay,
    /// Close the connection without sending it on: the server never sees it.
    Before,
    /// Send it on, then close the connection before the response: the server did the work.
    After,
    /// Answer it HTTP 401 with a `Bearer` challenge; the server never sees it.
    Unauthorized,
    /// Answer it `307 Temporary Redirect` to this location; the server never sees it.
    Redirect(&'static str),
}

/// A TCP proxy on 127.0.0.1 in front of an HTTP server that breaks connections on purpose,
/// the way a server closing an idle keep-alive connection as it is reused does. Every
/// relayed response gets `connection: close`, so each request arrives on its own connection
/// and `rule` sees each one (head and body).
pub struct BreakingProxy {
    pub url: String,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for BreakingProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl BreakingProxy {
    /// Proxies `upstream` (`http://host:port/path`); the proxy URL keeps the path.
    pub async fn start<F>(upstream: &str, rule: F) -> Self
    where
        F: Fn(&str) -> Break + Send + Sync + 'static,
    {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let rest = upstream.strip_prefix("http://").expect("http upstream");
        let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        let upstream_addr = authority.to_string();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}{path}", listener.local_addr().unwrap());
        let rule = std::sync::Arc::new(rule);
        let task = tokio::spawn(async move {
            while let Ok((mut client, _)) = listener.accept().await {
                let rule = rule.clone();
                let upstream_addr = upstream_addr.clone();
                tokio::spawn(async move {
                    let mut buffer = Vec::new();
                    let Some(request) = read_http_request(&mut client, &mut buffer).await else {
                        return;
                    };
                    let verdict = rule(&String::from_utf8_lossy(&request));
                    if verdict == Break::Before {
                        return;
                    }
                    if verdict == Break::Unauthorized {
                        let _ = client
                            .write_all(
                                b"HTTP/1.1 401 Unauthorized\r\nwww-authenticate: Bearer\r\n\
                                  content-length: 13\r\nconnection: close\r\n\r\ntoken refused",
                            )
                            .await;
                        return;
                    }
                    if let Break::Redirect(location) = verdict {
                        let answer = format!(
                            "HTTP/1.1 307 Temporary Redirect\r\nlocation: {location}\r\n\
                             content-length: 0\r\nconnection: close\r\n\r\n"
                        );
                        let _ = client.write_all(answer.as_bytes()).await;
                        return;
                    }
                    let Ok(mut server) = tokio::net::TcpStream::connect(&upstream_addr).await
                    else {
                        return;
                    };
                    // The server closes its side after answering, which ends the relay.
                    let mut request = request;
                    if let Some(line_end) = request.windows(2).position(|w| w == b"\r\n") {
                        let at = line_end + 2;
                        request.splice(at..at, b"connection: close\r\n".iter().copied());
                    }
                    if server.write_all(&request).await.is_err() {
                        return;
                    }
                    if verdict == Break::After {
                        // Long enough for the server to read the request and start on it.
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        return;
                    }
                    // Relay the response with `connection: close` added to its head.
                    let mut head = Vec::new();
                    let mut chunk = [0u8; 8192];
                    let head_end = loop {
                        if let Some(at) = head.windows(4).position(|w| w == b"\r\n\r\n") {
                            break at + 2;
                        }
                        match server.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => head.extend_from_slice(&chunk[..n]),
                        }
                    };
                    head.splice(head_end..head_end, b"connection: close\r\n".iter().copied());
                    if client.write_all(&head).await.is_err() {
                        return;
                    }
                    let _ = tokio::io::copy(&mut server, &mut client).await;
                });
            }
        });
        BreakingProxy { url, task }
    }
}

/// What [`raw_http_server`] answers one request with.
pub enum RawReply {
    /// Write this and read the next request on the same connection.
    Answer(String),
    /// Write this (a stream's head and first events) and hold the connection open for a minute.
    Stream(String),
}

/// A raw HTTP/1.1 server on 127.0.0.1: every request (head and body) goes to `reply`, whose
/// answer is written back. Returns the address it listens on.
pub async fn raw_http_server(
    reply: impl Fn(&[u8]) -> RawReply + Send + Sync + 'static,
) -> std::net::SocketAddr {
    use tokio::io::AsyncWriteExt;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let reply = std::sync::Arc::new(reply);
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let reply = reply.clone();
            tokio::spawn(async move {
                let mut buffer = Vec::new();
                while let Some(request) = read_http_request(&mut socket, &mut buffer).await {
                    match reply(&request) {
                        RawReply::Answer(answer) => {
                            if socket.write_all(answer.as_bytes()).await.is_err() {
                                return;
                            }
                        }
                        RawReply::Stream(stream) => {
                            let _ = socket.write_all(stream.as_bytes()).await;
                            tokio::time::sleep(Duration::from_secs(60)).await;
                            return;
                        }
                    }
                }
            });
        }
    });
    addr
}
