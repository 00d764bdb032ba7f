//! WebSocket (`ws://`, `wss://`) with the `mcp` subprotocol, on tokio-tungstenite: one
//! JSON-RPC message per text frame, each way. Pings are answered by tungstenite as frames are
//! read; a close frame or a broken socket ends the session (nothing reconnects here: the
//! supervisor does). `wss://` uses rustls with the platform verifier, like our HTTPS.
//!
//! Knows the WebSocket wire; nothing of tools, calls or the hub.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use futures::stream::{SplitSink, SplitStream};
use futures::{SinkExt, StreamExt};
use rmcp::RoleClient;
use rmcp::model::ServerJsonRpcMessage;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::{self, Message};
use tokio_tungstenite::{Connector, MaybeTlsStream, WebSocketStream};

use super::sse::{error_chain, tidy_body};
use super::{OpenFailure, unauthorized_advice};
use crate::defaults;
use crate::error::{Error, fmt_duration};
use crate::redact::{redact_text, redact_url};

/// The subprotocol MCP over WebSocket is negotiated with (the TypeScript SDK's name).
const SUBPROTOCOL: &str = "mcp";
/// Largest message accepted: the same bound as one stdio line.
const MAX_MESSAGE_BYTES: usize = defaults::MAX_STDIO_FRAME;
/// Largest single frame; a bigger message arrives fragmented (tungstenite's default).
const MAX_FRAME_BYTES: usize = 16 * 1024 * 1024;
/// Headers the WebSocket handshake sets itself.
const RESERVED_HEADERS: &[&str] = &[
    "host",
    "connection",
    "upgrade",
    "sec-websocket-key",
    "sec-websocket-version",
    "sec-websocket-protocol",
    "sec-websocket-extensions",
];

type Socket = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// Why sending a message failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum WsError {
    #[error("cannot encode the message: {0}")]
    Encode(#[source] serde_json::Error),
    #[error("WebSocket send failed: {0}")]
    Send(#[source] tungstenite::Error),
    #[error(
        "WebSocket send did not complete within {}",
        fmt_duration(defaults::WS_SEND_TIMEOUT)
    )]
    Timeout,
}

/// A connected WebSocket session.
pub(crate) struct WsTransport {
    server: Arc<str>,
    /// Shared by the concurrent sends; each holds it for one frame.
    sink: Arc<tokio::sync::Mutex<SplitSink<Socket, Message>>>,
    stream: SplitStream<Socket>,
    ended: bool,
}

/// Connects and upgrades (at most `within`), offering the `mcp` subprotocol and sending the
/// configured headers on the upgrade request.
pub(crate) async fn connect(
    server: &str,
    url: &str,
    headers: &BTreeMap<String, String>,
    within: Duration,
) -> Result<WsTransport, OpenFailure> {
    // Every message names the URL: shown without its query or userinfo.
    let fail = |message: String| Error::Connect {
        server: server.to_string(),
        message: redact_text(&message).into_owned(),
        stderr_tail: Vec::new(),
        source: None,
    };
    let parsed = reqwest::Url::parse(url)
        .map_err(|e| fail(format!("`{url}` is not a valid URL: {e}")).caused_by(e))?;
    let connector = match parsed.scheme() {
        "ws" => Connector::Plain,
        "wss" => Connector::Rustls(tls_config().map_err(&fail)?),
        _ => {
            return Err(fail(format!(
                "`{url}` is not a ws:// or wss:// URL (a WebSocket server is reached over one)"
            ))
            .into());
        }
    };
    let extra = super::header_map(server, headers, RESERVED_HEADERS)?;
    let sent_authorization = extra.contains_key(reqwest::header::AUTHORIZATION);
    let mut request = url
        .into_client_request()
        .map_err(|e| fail(format!("`{url}` cannot be a WebSocket request: {e}")))?;
    request.headers_mut().extend(extra);
    request.headers_mut().insert(
        "sec-websocket-protocol",
        HeaderValue::from_static(SUBPROTOCOL),
    );
    let config = WebSocketConfig::default()
        .max_message_size(Some(MAX_MESSAGE_BYTES))
        .max_frame_size(Some(MAX_FRAME_BYTES));
    let handshake = tokio_tungstenite::connect_async_tls_with_config(
        request,
        Some(config),
        true,
        Some(connector),
    );
    let socket = match tokio::time::timeout(within, handshake).await {
        Ok(Ok((socket, _response))) => socket,
        Ok(Err(e)) => {
            let unauthorized = matches!(
                &e,
                tungstenite::Error::Http(response)
                    if response.status() == tungstenite::http::StatusCode::UNAUTHORIZED
            );
            return Err(OpenFailure {
                error: fail(describe_connect_error(url, e, sent_authorization)),
                unauthorized,
            });
        }
        Err(_) => {
            return Err(fail(format!(
                "the WebSocket upgrade at {url} did not complete within the startup timeout \
                 of {} (raise `startup_timeout` if the server is slow to start)",
                fmt_duration(within)
            ))
            .into());
        }
    };
    tracing::debug!(server, url = %redact_url(url), "WebSocket session open");
    let (sink, stream) = socket.split();
    Ok(WsTransport {
        server: Arc::from(server),
        sink: Arc::new(tokio::sync::Mutex::new(sink)),
        stream,
        ended: false,
    })
}

fn describe_connect_error(
    url: &str,
    error: tungstenite::Error,
    sent_authorization: bool,
) -> String {
    use tungstenite::error::{ProtocolError, SubProtocolError};
    match error {
        tungstenite::Error::Http(response) => {
            let status = response.status();
            let body = response
                .body()
                .as_deref()
                .map(tidy_body)
                .unwrap_or_default();
            let body = if body.is_empty() {
                String::new()
            } else {
                format!(": {body}")
            };
            let refused = format!("the WebSocket upgrade at {url} was refused with HTTP {status}");
            match status.as_u16() {
                401 => format!(
                    "{refused}{body}; {}",
                    unauthorized_advice(sent_authorization)
                ),
                403 => format!(
                    "{refused} (the server refuses this client: check the credentials in the \
                     server's `headers` or `headersHelper`){body}"
                ),
                404 => format!("{refused} (no WebSocket endpoint at this path){body}"),
                _ => format!("{refused}{body}"),
            }
        }
        tungstenite::Error::Protocol(ProtocolError::SecWebSocketSubProtocolError(
            SubProtocolError::NoSubProtocol | SubProtocolError::InvalidSubProtocol,
        )) => format!(
            "the WebSocket server at {url} did not accept the `{SUBPROTOCOL}` subprotocol \
             (is it an MCP server?)"
        ),
        tungstenite::Error::Io(e) => format!("cannot connect to {url}: {}", error_chain(&e)),
        other => format!(
            "WebSocket connection to {url} failed: {}",
            error_chain(&other)
        ),
    }
}

/// The TLS client config for `wss://`: reqwest's crypto provider and the platform's trust
/// store, built once. Never panics on an ambiguous process-wide provider.
fn tls_config() -> Result<Arc<rustls::ClientConfig>, String> {
    static CONFIG: OnceLock<Arc<rustls::ClientConfig>> = OnceLock::new();
    if let Some(config) = CONFIG.get() {
        return Ok(config.clone());
    }
    use rustls_platform_verifier::BuilderVerifierExt;
    let provider = rustls::crypto::CryptoProvider::get_default()
        .cloned()
        .unwrap_or_else(|| Arc::new(rustls::crypto::aws_lc_rs::default_provider()));
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .and_then(|builder| builder.with_platform_verifier())
        .map_err(|e| format!("cannot set up TLS for wss://: {e}"))?
        .with_no_client_auth();
    Ok(CONFIG.get_or_init(|| Arc::new(config)).clone())
}

impl Transport<RoleClient> for WsTransport {
    type Error = WsError;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let sink = self.sink.clone();
        let server = self.server.clone();
        let text = serde_json::to_string(&item).map_err(WsError::Encode);
        async move {
            let text = text?;
            let send = async {
                let mut sink = sink.lock().await;
                sink.send(Message::text(text)).await
            };
            let result = match tokio::time::timeout(defaults::WS_SEND_TIMEOUT, send).await {
                Ok(result) => result.map_err(WsError::Send),
                Err(_) => Err(WsError::Timeout),
            };
            if let Err(e) = &result {
                // The caller sees only "connection lost"; the reason is here.
                tracing::warn!(server = %server, "{}", error_chain(e));
            }
            result
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        while !self.ended {
            // Cancel-safe: a dropped `next()` loses no frame.
            let message = match self.stream.next().await {
                Some(Ok(message)) => message,
                Some(Err(tungstenite::Error::ConnectionClosed)) | None => {
                    tracing::debug!(server = %self.server, "the WebSocket closed");
                    self.ended = true;
                    return None;
                }
                Some(Err(e)) => {
                    tracing::warn!(server = %self.server, "the WebSocket broke: {}", error_chain(&e));
                    self.ended = true;
                    return None;
                }
            };
            let parsed = match &message {
                Message::Text(text) => serde_json::from_str::<ServerJsonRpcMessage>(text.as_str()),
                // Not what the protocol sends, but unambiguous when it is UTF-8 JSON.
                Message::Binary(bytes) => serde_json::from_slice::<ServerJsonRpcMessage>(bytes),
                Message::Close(frame) => {
                    match frame {
                        Some(frame) => {
                            tracing::debug!(server = %self.server, code = u16::from(frame.code), reason = %frame.reason, "the server closed the WebSocket")
                        }
                        None => {
                            tracing::debug!(server = %self.server, "the server closed the WebSocket")
                        }
                    }
                    // tungstenite has queued the close reply; it goes out with the next read.
                    continue;
                }
                // Pongs to its pings are sent by tungstenite itself.
                Message::Ping(_) | Message::Pong(_) | Message::Frame(_) => continue,
            };
            match parsed {
                Ok(message) => return Some(message),
                Err(e) => {
                    let bytes: &[u8] = match &message {
                        Message::Text(text) => text.as_bytes(),
                        Message::Binary(bytes) => bytes,
                        _ => &[],
                    };
                    // Too deep for serde_json: fail the request it answers instead of leaving
                    // it to its deadline.
                    match super::nesting::screen(bytes) {
                        super::nesting::Screen::Answer(answer) => {
                            if let Ok(answer) = serde_json::from_slice(&answer) {
                                tracing::warn!(server = %self.server, "a response is nested too deep to decode: failing its request");
                                return Some(answer);
                            }
                        }
                        super::nesting::Screen::Drop(reason) => {
                            tracing::warn!(server = %self.server, "dropping a message: {reason}");
                        }
                        super::nesting::Screen::Pass => {
                            tracing::warn!(server = %self.server, error = %e, "skipping a WebSocket message that is not JSON-RPC");
                        }
                    }
                }
            }
        }
        None
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.ended = true;
        let close = async {
            let mut sink = self.sink.lock().await;
            let _ = sink.send(Message::Close(None)).await;
            let _ = sink.close().await;
        };
        let _ = tokio::time::timeout(defaults::WS_CLOSE_TIMEOUT, close).await;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tls_config_builds_without_a_process_wide_provider() {
        let config = tls_config();
        assert!(config.is_ok(), "{:?}", config.err());
    }
}
