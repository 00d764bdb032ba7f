//! The WebSocket face: the same MCP server at `ws://ADDR/mcp`, one session per connection,
//! one JSON-RPC message per text frame, subprotocol `mcp`.
//!
//! Owns binding (loopback only, always), the `listening on …` line, the upgrade checks (the
//! client must offer `mcp`; a browser's `Origin` is refused, so no web page can drive it) and
//! the frame ↔ message bridge with the gate in front. MCP semantics stay in rmcp and `server`.

use std::{io::Write, net::SocketAddr, sync::Arc};

use anyhow::Context;
use axum::{
    Router,
    extract::{
        State, WebSocketUpgrade,
        ws::{Message, WebSocket},
    },
    http::{HeaderMap, StatusCode, header},
    response::{IntoResponse, Response},
    routing::get,
};
use futures::{
    SinkExt, StreamExt,
    stream::{SplitSink, SplitStream},
};
use rmcp::{
    RoleServer, ServiceExt,
    model::{ClientJsonRpcMessage, ErrorData, RequestId, ServerJsonRpcMessage},
    service::{RxJsonRpcMessage, ServerInitializeError, TxJsonRpcMessage},
    transport::Transport,
};
use tokio::sync::Mutex;

use crate::{
    gate::{Gate, Probe, Verdict},
    server::{Shared, TestServer},
};

/// The subprotocol MCP over WebSocket is negotiated with.
const SUBPROTOCOL: &str = "mcp";
/// Largest incoming message, like the stdio face's line limit.
const MAX_MESSAGE_BYTES: usize = 64 * 1024 * 1024;

/// How to serve WebSocket.
#[derive(Debug, Clone, Copy)]
pub struct WsOptions {
    pub addr: SocketAddr,
    pub gate: Gate,
}

struct WsState {
    shared: Arc<Shared>,
    gate: Gate,
}

/// Bind, print the `listening on` line, and serve until the process is stopped.
pub async fn serve(shared: Arc<Shared>, options: WsOptions) -> anyhow::Result<()> {
    anyhow::ensure!(
        options.addr.ip().is_loopback(),
        "refusing to serve WebSocket on non-loopback address {}",
        options.addr
    );
    let listener = tokio::net::TcpListener::bind(options.addr)
        .await
        .with_context(|| format!("binding {}", options.addr))?;
    let local = listener.local_addr().context("reading the bound address")?;
    let state = Arc::new(WsState {
        shared,
        gate: options.gate,
    });
    let app = Router::new().route("/mcp", get(upgrade)).with_state(state);
    {
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "listening on ws://{local}/mcp").context("writing to stdout")?;
        stdout.flush().context("flushing stdout")?;
    }
    axum::serve(listener, app)
        .await
        .context("serving WebSocket")
}

async fn upgrade(
    State(state): State<Arc<WsState>>,
    headers: HeaderMap,
    ws: WebSocketUpgrade,
) -> Response {
    if headers.contains_key(header::ORIGIN) {
        return (
            StatusCode::FORBIDDEN,
            "testserver: browser origins are refused",
        )
            .into_response();
    }
    let offers_mcp = headers
        .get_all(header::SEC_WEBSOCKET_PROTOCOL)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .any(|protocol| protocol.trim() == SUBPROTOCOL);
    if !offers_mcp {
        return (
            StatusCode::BAD_REQUEST,
            "testserver: offer the `mcp` WebSocket subprotocol",
        )
            .into_response();
    }
    ws.protocols([SUBPROTOCOL])
        .max_message_size(MAX_MESSAGE_BYTES)
        .on_upgrade(move |socket| session(state, socket))
}

async fn session(state: Arc<WsState>, socket: WebSocket) {
    let (sink, stream) = socket.split();
    let transport = WsTransport {
        sink: Arc::new(Mutex::new(sink)),
        stream,
        gate: state.gate,
    };
    match TestServer::new_session(state.shared.clone())
        .serve(transport)
        .await
    {
        Ok(running) => {
            let reason = running.waiting().await;
            tracing::info!(?reason, "WebSocket session ended");
        }
        Err(ServerInitializeError::ConnectionClosed(_)) => {}
        Err(error) => tracing::warn!(%error, "WebSocket session failed to start"),
    }
}

/// rmcp's server transport over one socket.
struct WsTransport {
    sink: Arc<Mutex<SplitSink<WebSocket, Message>>>,
    stream: SplitStream<WebSocket>,
    gate: Gate,
}

async fn send_frame(
    sink: &Mutex<SplitSink<WebSocket, Message>>,
    message: &ServerJsonRpcMessage,
) -> Result<(), axum::Error> {
    let text = serde_json::to_string(message).map_err(axum::Error::new)?;
    sink.lock().await.send(Message::Text(text.into())).await
}

impl WsTransport {
    /// Gate and parse one frame's payload; `Some` is a message for rmcp.
    fn judge(&self, payload: &[u8]) -> Option<ClientJsonRpcMessage> {
        if !self.gate.is_transparent()
            && let Ok(probe) = serde_json::from_slice::<Probe<'_>>(payload)
        {
            match self.gate.judge(&probe) {
                Verdict::Pass => {}
                Verdict::Drop => {
                    tracing::debug!(method = ?probe.method, "dropping a message unanswered");
                    return None;
                }
                Verdict::Reply(error) => {
                    self.reply(error, probe.id);
                    return None;
                }
            }
        }
        match serde_json::from_slice::<ClientJsonRpcMessage>(payload) {
            Ok(message) => Some(message),
            Err(error) => {
                tracing::debug!(%error, "ignoring a frame that is not a JSON-RPC message");
                None
            }
        }
    }

    /// Answers for the gate without blocking the read loop.
    fn reply(&self, error: ErrorData, id: Option<RequestId>) {
        let sink = self.sink.clone();
        tokio::spawn(async move {
            let message = ServerJsonRpcMessage::error(error, id);
            if let Err(error) = send_frame(&sink, &message).await {
                tracing::debug!(%error, "cannot send the gate's answer");
            }
        });
    }
}

impl Transport<RoleServer> for WsTransport {
    type Error = axum::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let sink = self.sink.clone();
        async move { send_frame(&sink, &item).await }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            let message = match self.stream.next().await? {
                Ok(message) => message,
                Err(error) => {
                    tracing::debug!(%error, "the WebSocket broke");
                    return None;
                }
            };
            let judged = match &message {
                Message::Text(text) => self.judge(text.as_str().as_bytes()),
                Message::Binary(bytes) => self.judge(bytes),
                // axum answers pings itself.
                Message::Ping(_) | Message::Pong(_) => continue,
                Message::Close(_) => return None,
            };
            if judged.is_some() {
                return judged;
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        let mut sink = self.sink.lock().await;
        let _ = sink.send(Message::Close(None)).await;
        sink.close().await
    }
}
