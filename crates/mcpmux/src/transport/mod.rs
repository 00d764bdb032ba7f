//! Transports: how bytes reach a server. Each one ends in something rmcp can serve a client
//! session over; none of them knows about tools, calls or the hub.
//!
//! `open` turns a [`TransportSpec`] into an [`Opened`] transport plus whatever side handles it
//! needs (a child process to reap, an in-process server task to stop).

mod busy_pipe;
mod call_result;
pub(crate) mod headers_helper;
pub(crate) mod http;
mod http_client;
pub(crate) mod http_direct;
mod http_screen;
pub(crate) mod http_session;
pub(crate) mod inproc;
pub(crate) mod lines;
pub(crate) mod nesting;
mod oversize;
mod refusal;
mod sandbox;
pub(crate) use sandbox::denial as sandbox_denial;
pub(crate) mod sse;
pub(crate) mod stdio;
mod trace_headers;
pub(crate) mod wire_tap;
pub(crate) mod ws;

use std::collections::BTreeMap;
use std::sync::Arc;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

use crate::config::{ServerSpec, TransportSpec};
use crate::error::Error;

pub(crate) use refusal::HandshakeRefusal;
pub(crate) use stdio::{ExitInfo, ProcessHandle};

/// Shared per-hub transport resources: one pooled HTTP client for every HTTP server, built on
/// first use (setting up TLS costs milliseconds a stdio-only hub should not pay).
#[derive(Clone)]
pub(crate) struct TransportContext {
    http: std::sync::Arc<std::sync::OnceLock<reqwest::Client>>,
    /// Token store, authorizer and each server's OAuth state.
    auth: crate::auth::AuthContext,
    /// The tasks that reap child processes: a process whose connection was dropped mid-start
    /// (the hub shutting down during a handshake) is still being stopped by one of them, and
    /// shutdown waits for it.
    reapers: tokio_util::task::TaskTracker,
    /// How long a stdio server's reader polls for a lone call's answer, one reader at a time
    /// (`busy_pipe.rs`).
    polling: Arc<busy_pipe::Polling>,
    /// The most one message from a server may take: a stdio line, an SSE event.
    max_message: usize,
    /// Where every message to and from a server is logged (`wire_tap.rs`), if anywhere.
    wire_log: Option<crate::telemetry::wire::WireLog>,
    /// Whether a streamable-HTTP session's plain requests are POSTed beside rmcp's worker
    /// (`http_direct.rs`).
    http_beside: bool,
}

impl TransportContext {
    /// A context whose OAuth tokens live in `auth`'s store.
    pub fn new(auth: crate::auth::AuthContext) -> Self {
        Self {
            http: Default::default(),
            auth,
            reapers: tokio_util::task::TaskTracker::new(),
            polling: busy_pipe::Polling::new(crate::defaults::READ_SPIN),
            max_message: crate::defaults::MAX_STDIO_FRAME,
            wire_log: None,
            http_beside: true,
        }
    }

    /// This context, POSTing a streamable-HTTP session's plain requests beside rmcp's worker
    /// (`beside`) or through it.
    pub fn with_http_beside(mut self, beside: bool) -> Self {
        self.http_beside = beside;
        self
    }

    /// This context, logging every message to and from a server to `log`.
    pub fn with_wire_log(mut self, log: Option<crate::telemetry::wire::WireLog>) -> Self {
        self.wire_log = log;
        self
    }

    /// The wire log, if there is one.
    pub(crate) fn wire_log(&self) -> Option<&crate::telemetry::wire::WireLog> {
        self.wire_log.as_ref()
    }

    /// Where `server`'s messages are logged, if anywhere.
    pub(crate) fn wire_target(&self, server: &str) -> Option<wire_tap::WireTarget> {
        wire_tap::WireTarget::of(self.wire_log.as_ref(), server)
    }

    /// This context, reading messages of at most `bytes` (`oversize.rs` says what happens to
    /// a larger one).
    pub fn with_max_message(mut self, bytes: usize) -> Self {
        self.max_message = bytes.max(1);
        self
    }

    /// The most one message from a server may take.
    pub(crate) fn max_message(&self) -> usize {
        self.max_message
    }

    /// This context, its stdio readers polling `spin` (at most `MAX_READ_SPIN`) for a lone
    /// call's answer.
    pub fn with_read_spin(mut self, spin: std::time::Duration) -> Self {
        self.polling = busy_pipe::Polling::new(spin.min(crate::defaults::MAX_READ_SPIN));
        self
    }

    /// Waits, at most `within`, until every child process this context started is reaped.
    pub async fn reaped(&self, within: std::time::Duration) {
        self.reapers.close();
        if tokio::time::timeout(within, self.reapers.wait())
            .await
            .is_err()
        {
            tracing::warn!(
                "{} server process(es) still being stopped after {within:?}",
                self.reapers.len()
            );
        }
        self.reapers.reopen();
    }

    /// Refusals of a server's OAuth credentials that could not be answered.
    pub fn auth_refusals(&self, spec: &ServerSpec) -> Option<tokio::sync::watch::Receiver<u64>> {
        self.auth.refusals(spec)
    }

    /// The OAuth credentials stored for a server now, serialized, to notice a new login.
    pub fn stored_credentials(&self, spec: &ServerSpec) -> Option<String> {
        self.auth.stored_credentials(spec)
    }

    /// The last OAuth failure of a server, in words, cleared.
    pub fn take_auth_failure(&self, spec: &ServerSpec) -> Option<String> {
        self.auth.take_failure(spec)
    }

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
    /// Streamable HTTP, and what its answers say about the session.
    /// Its plain requests may be POSTed beside rmcp's worker by `direct`.
    Http {
        transport: http_direct::Routed<wire_tap::Tapped<http::HttpTransport>>,
        session: Arc<http_session::SessionWatch>,
        direct: Option<Arc<http_direct::HttpDirect>>,
    },
    /// Legacy HTTP+SSE (2024-11-05), its `endpoint` event already received.
    Sse(wire_tap::Tapped<sse::SseTransport>),
    /// WebSocket, upgraded with the `mcp` subprotocol.
    Ws(wire_tap::Tapped<ws::WsTransport>),
    /// An in-memory duplex to a server task in this process.
    InProcess {
        stream: tokio::io::DuplexStream,
        /// Where its messages are logged.
        wire: Option<wire_tap::WireTarget>,
        server: inproc::ServerTask,
    },
}

/// Why a transport did not open.
#[derive(Debug)]
pub(crate) struct OpenFailure {
    pub(crate) error: Error,
    /// The server answered the opening request (the SSE `GET`, the WebSocket upgrade) with
    /// HTTP 401: it wants credentials, and retrying with the same ones will not help.
    pub(crate) unauthorized: bool,
}

impl From<Error> for OpenFailure {
    fn from(error: Error) -> Self {
        OpenFailure {
            error,
            unauthorized: false,
        }
    }
}

/// What to do about an HTTP 401 from a legacy SSE or WebSocket server. OAuth login is for
/// streamable HTTP only, so the fix is a token in the config.
pub(crate) fn unauthorized_advice(sent_authorization: bool) -> &'static str {
    if sent_authorization {
        "the server requires authorization and refused the `Authorization` header sent; give \
         a valid token in the server's `headers` or `headersHelper`"
    } else {
        "the server requires authorization; give a token in the server's `headers` \
         (an `Authorization: Bearer …` header) or a `headersHelper` that prints one"
    }
}

/// Opens the transport described by `spec`. Nothing is sent yet.
pub(crate) async fn open(spec: &ServerSpec, ctx: &TransportContext) -> Result<Opened, OpenFailure> {
    match &spec.transport {
        TransportSpec::Stdio {
            command,
            args,
            env,
            cwd,
        } => {
            let (transport, process) = stdio::spawn(
                &spec.name,
                command,
                args,
                env,
                cwd.as_deref(),
                spec.options.sandbox.as_ref(),
                ctx,
            )?;
            Ok(Opened::Stdio { transport, process })
        }
        TransportSpec::Http { url, headers } => {
            let printed = helper_output(spec).await?;
            let headers = merged(headers, printed.as_ref());
            // A static or helper-made Authorization header is the user's choice of credentials.
            let state = ctx.auth.server(spec, url);
            let oauth = (!crate::auth::has_authorization_header(&headers)).then(|| state.clone());
            let helper = match (&spec.auth.headers_helper, &printed, &oauth) {
                (Some(command), Some(printed), None) => {
                    Some(Arc::new(headers_helper::Helper::new(
                        &spec.name,
                        command,
                        spec.startup_timeout,
                        spec.options.sandbox.as_ref(),
                        printed,
                    )?))
                }
                _ => None,
            };
            let outside_oauth = oauth.is_none().then_some(state);
            let client = http_client::AuthorizingClient::new(ctx.http()?, oauth)
                .named(&spec.name)
                .with_helper(helper)
                .reporting_refusals_to(outside_oauth);
            let session = client.session_watch();
            let transport =
                http::connect(&spec.name, url, &headers, client.clone(), ctx.max_message)?;
            let wire = ctx.wire_target(&spec.name);
            let (direct, transport) = http_direct::HttpDirect::new(
                client,
                url,
                ctx.max_message,
                wire.clone(),
                wire_tap::Tapped::new(transport, wire),
            );
            Ok(Opened::Http {
                transport,
                session,
                direct: ctx.http_beside.then_some(direct),
            })
        }
        TransportSpec::InProcess(server) => {
            let (stream, server) = inproc::start(server);
            Ok(Opened::InProcess {
                stream,
                wire: ctx.wire_target(&spec.name),
                server,
            })
        }
        TransportSpec::Sse { url, headers } => {
            let headers = with_helper_headers(spec, headers).await?;
            let transport = sse::connect(
                &spec.name,
                url,
                &headers,
                ctx.http()?,
                spec.startup_timeout,
                ctx.max_message,
            )
            .await?;
            Ok(Opened::Sse(wire_tap::Tapped::new(
                transport,
                ctx.wire_target(&spec.name),
            )))
        }
        TransportSpec::Ws { url, headers } => {
            let headers = with_helper_headers(spec, headers).await?;
            let transport = ws::connect(&spec.name, url, &headers, spec.startup_timeout).await?;
            Ok(Opened::Ws(wire_tap::Tapped::new(
                transport,
                ctx.wire_target(&spec.name),
            )))
        }
    }
}

/// Legacy HTTP+SSE on a streamable HTTP spec's URL and headers, for a server that refused the
/// streamable handshake as an old server does (see [`HandshakeRefusal::LegacySse`]).
pub(crate) async fn open_legacy_sse(
    spec: &ServerSpec,
    ctx: &TransportContext,
    within: std::time::Duration,
) -> Result<wire_tap::Tapped<sse::SseTransport>, OpenFailure> {
    match &spec.transport {
        TransportSpec::Http { url, headers } => {
            let headers = with_helper_headers(spec, headers).await?;
            let transport = sse::connect(
                &spec.name,
                url,
                &headers,
                ctx.http()?,
                within,
                ctx.max_message,
            )
            .await?;
            Ok(wire_tap::Tapped::new(
                transport,
                ctx.wire_target(&spec.name),
            ))
        }
        other => Err(Error::Connect {
            server: spec.name.clone(),
            message: format!(
                "a `{}` server has no legacy HTTP+SSE fallback",
                other.kind()
            ),
            stderr_tail: Vec::new(),
            source: None,
        }
        .into()),
    }
}

/// The static headers, with what the server's `headersHelper` prints on top (the helper wins:
/// it exists to supply fresh values).
async fn with_helper_headers(
    spec: &ServerSpec,
    headers: &BTreeMap<String, String>,
) -> Result<BTreeMap<String, String>, Error> {
    Ok(merged(headers, helper_output(spec).await?.as_ref()))
}

/// What the server's `headersHelper` prints, if it has one.
async fn helper_output(spec: &ServerSpec) -> Result<Option<BTreeMap<String, String>>, Error> {
    match &spec.auth.headers_helper {
        Some(command) => Ok(Some(
            headers_helper::run(
                &spec.name,
                command,
                spec.startup_timeout,
                spec.options.sandbox.as_ref(),
            )
            .await?,
        )),
        None => Ok(None),
    }
}

/// `headers` with `printed` on top, header names compared without case.
fn merged(
    headers: &BTreeMap<String, String>,
    printed: Option<&BTreeMap<String, String>>,
) -> BTreeMap<String, String> {
    let mut merged = headers.clone();
    for (name, value) in printed.into_iter().flatten() {
        merged.retain(|existing, _| !existing.eq_ignore_ascii_case(name));
        merged.insert(name.clone(), value.clone());
    }
    merged
}

/// The configured headers as an HTTP header map; fails on a name or value that is not valid
/// HTTP, or on a name in `reserved` (headers the transport itself manages).
pub(crate) fn header_map(
    server: &str,
    headers: &BTreeMap<String, String>,
    reserved: &[&str],
) -> Result<HeaderMap, Error> {
    let bad = |message: String| Error::Connect {
        server: server.to_string(),
        message,
        stderr_tail: Vec::new(),
        source: None,
    };
    let mut map = HeaderMap::new();
    for (name, value) in headers {
        let header_name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
            bad(format!(
                "header name `{name}` is not a valid HTTP header name"
            ))
        })?;
        if reserved.contains(&header_name.as_str()) {
            return Err(bad(format!(
                "header `{name}` is managed by the protocol and cannot be set in the config"
            )));
        }
        let header_value = HeaderValue::from_str(value).map_err(|_| {
            bad(format!(
                "header `{name}` has a value that is not valid in HTTP (control characters?)"
            ))
        })?;
        map.insert(header_name, header_value);
    }
    Ok(map)
}
