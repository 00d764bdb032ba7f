//! A startup spinner on stderr with per-server progress; only when stderr is a terminal.

use std::io::{IsTerminal, Write};
use std::time::Duration;

use mcpmux::{Hub, ServerState};

const FRAMES: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/// Waits for startup to settle, with a spinner when a person is watching.
pub async fn startup(hub: &Hub) -> Result<(), mcpmux::Error> {
    wait(hub, hub.wait_ready()).await
}

/// [`startup`] for a listing streamed server by server (`Hub::wait_ready_to_stream`).
pub async fn startup_to_stream(hub: &Hub) -> Result<(), mcpmux::Error> {
    wait(hub, hub.wait_ready_to_stream()).await
}

/// Waits for `ready`, with a spinner when a person is watching.
async fn wait(
    hub: &Hub,
    ready: impl Future<Output = Result<(), mcpmux::Error>>,
) -> Result<(), mcpmux::Error> {
    if std::io::stderr().is_terminal() {
        wait_with_spinner(hub, ready).await
    } else {
        ready.await
    }
}

/// Waits for `ready` (the hub's startup), redrawing one status line.
pub async fn wait_with_spinner(
    hub: &Hub,
    ready: impl Future<Output = Result<(), mcpmux::Error>>,
) -> Result<(), mcpmux::Error> {
    tokio::pin!(ready);
    let mut tick = tokio::time::interval(Duration::from_millis(80));
    let mut frame = 0usize;
    let result = loop {
        tokio::select! {
            result = &mut ready => break result,
            _ = tick.tick() => {
                let servers = hub.servers();
                let done = servers.iter().filter(|s| !matches!(s.state, ServerState::Pending { .. })).count();
                let waiting: Vec<&str> = servers
                    .iter()
                    .filter(|s| matches!(s.state, ServerState::Pending { .. }))
                    .map(|s| s.name.as_str())
                    .collect();
                let mut err = std::io::stderr().lock();
                let _ = write!(
                    err,
                    "\r\x1b[2K{} starting servers {done}/{}: waiting for {}",
                    FRAMES[frame % FRAMES.len()],
                    servers.len(),
                    // Names from a project's config are someone else's words.
                    mcpmux::cli_support::terminal::escape_controls(&waiting.join(", "))
                );
                let _ = err.flush();
                frame += 1;
            }
        }
    };
    let mut err = std::io::stderr().lock();
    let _ = write!(err, "\r\x1b[2K");
    let _ = err.flush();
    result
}
