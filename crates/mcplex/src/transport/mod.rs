//! Transports: how bytes reach a server. Each one ends in something rmcp can serve a client
//! session over; none of them knows about tools, calls or the hub.
//!
//! `open` turns a [`TransportSpec`] into an [`Opened`] transport plus whatever side handles it
//! needs (a child process to reap, an in-process server task to stop).

pub(crate) mod http;
pub(crate) mod inproc;
pub(crate) mod stdio;

use crate::config::{ServerSpec, TransportSpec};
use crate::error::Error;

pub(crate) use stdio::{ExitInfo, ProcessHandle};

/// Shared per-hub transport resources: one pooled HTTP client for every HTTP server, built on
/// first use (setting up TLS costs milliseconds a stdio-only hub should not pay).
#[derive(Clone, Default)]
pub(crate) struct TransportContext {
    http: std::sync::Arc<std::sync::OnceLock<reqwest::Client>>,
}

impl TransportContext {
    /// The shared HTTP client.
    fn http(&self) -> Result<reqwest::Client, Error> {
        if let Some(client) = self.http.get() {
            return Ok(client.clone());
        }
        let client = http::pooled_client()?;
        Ok(self.http.get_or_init(|| client).clone())
    }
}

/// A transport ready for the MCP session, with its side handles.
pub(crate) enum Opened {
    /// A child process; the handle owns the process and its stderr tail.
    Stdio {
        transport: stdio::StdioTransport,
        process: ProcessHandle,
    },
    /// Streamable HTTP.
    Http(http::HttpTransport),
    /// An in-memory duplex to a server task in this process.
    InProcess {
        stream: tokio::io::DuplexStream,
        server: inproc::ServerTask,
    },
}

/// Opens the transport described by `spec`. Nothing is sent yet.
pub(crate) async fn open(spec: &ServerSpec, ctx: &TransportContext) -> Result<Opened, Error> {
    match &spec.transport {
        TransportSpec::Stdio {
            command,
            args,
            env,
            cwd,
        } => {
            let (transport, process) =
                stdio::spawn(&spec.name, command, args, env, cwd.as_deref())?;
            Ok(Opened::Stdio { transport, process })
        }
        TransportSpec::Http { url, headers } => Ok(Opened::Http(http::connect(
            &spec.name,
            url,
            headers,
            ctx.http()?,
        )?)),
        TransportSpec::InProcess(server) => {
            let (stream, server) = inproc::start(server);
            Ok(Opened::InProcess { stream, server })
        }
        TransportSpec::Sse { .. } | TransportSpec::Ws { .. } => Err(Error::Connect {
            server: spec.name.clone(),
            message: format!(
                "transport type `{}` is not supported yet; use `stdio` or `http` (streamable HTTP)",
                spec.transport.kind()
            ),
            stderr_tail: Vec::new(),
        }),
    }
}
