//! The gateway over stdio, for a client that spawns `mcpmux serve`: one session on this
//! process's stdin and stdout (rmcp's transport; the handshake era and 2026-07-28 requests
//! alike), until the client closes stdin or shutdown is asked for. Nothing but MCP frames
//! is written to stdout. Its one client is the only party there is: it also gets the server
//! logs no call explains. Closing the hub is the caller's.

use std::time::Duration;

use rmcp::{ServiceExt, service::ServerInitializeError};

use crate::handler::Gateway;

/// The name the stdio client's messages have in the wire log: no server's name can be it.
pub const CLIENT_PEER: &str = "(client)";

/// Why stdio serving failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StdioError {
    /// The session could not start.
    #[error("the MCP session on stdio could not start: {0}")]
    Start(String),
}

/// Serves one session on stdin/stdout until the client leaves or `shutdown` completes; then
/// lets calls in flight finish within `grace` and cancels the rest.
pub async fn serve_stdio(
    gateway: Gateway,
    shutdown: impl Future<Output = ()> + Send,
    grace: Duration,
) -> Result<(), StdioError> {
    let (stdin, stdout) = rmcp::transport::stdio_pipes();
    // The client's side of the session in the wire log, beside the servers' (`--wire-log`).
    let log = gateway.hub().wire_log();
    let transport = mcpmux::telemetry::wire::WireLog::tap_lines(log, CLIENT_PEER, stdin, stdout);
    // Its one client is the only one there will ever be: a server log no call explains is
    // still its own.
    gateway.serve_alone();
    let mut shutdown = std::pin::pin!(shutdown);
    let running = tokio::select! {
        started = gateway.session().serve(transport) => match started {
            Ok(running) => running,
            // The client went away before choosing a lifecycle: nothing to serve.
            Err(ServerInitializeError::ConnectionClosed(_)) => return Ok(()),
            Err(error) => return Err(StdioError::Start(error.to_string())),
        },
        () = &mut shutdown => return Ok(()),
    };
    let session = running.cancellation_token();
    let mut waiting = std::pin::pin!(running.waiting());
    tokio::select! {
        ended = &mut waiting => {
            tracing::info!(?ended, "stdio session ended");
            // The client left: its calls were cancelled with the session; let them tell
            // their servers before the hub closes.
            gateway.drain(grace).await;
        }
        () = &mut shutdown => {
            gateway.drain(grace).await;
            // rmcp writes the answers still on their way (2 s at most) before it stops.
            session.cancel();
            let ended = waiting.await;
            tracing::info!(?ended, "stdio session closed");
        }
    }
    Ok(())
}
