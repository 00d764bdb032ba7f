//! In-process servers: a server value in this binary, reached over an in-memory duplex.
//! No process, no socket; the same MCP session as any other transport.

use crate::config::InProcessServer;

/// Buffer of the in-memory pipe; large enough that a typical result never waits on a reader.
const DUPLEX_BUFFER: usize = 256 * 1024;

/// The running server side of one in-process session; stopped when dropped.
pub(crate) struct ServerTask(tokio::task::JoinHandle<()>);

impl Drop for ServerTask {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Starts a fresh session of `server` and returns the client end of its pipe.
pub(crate) fn start(server: &InProcessServer) -> (tokio::io::DuplexStream, ServerTask) {
    let (client, server_end) = tokio::io::duplex(DUPLEX_BUFFER);
    let task = tokio::spawn((server.serve)(server_end));
    (client, ServerTask(task))
}
