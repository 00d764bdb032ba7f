//! Streamable HTTP through rmcp's client, on one pooled `reqwest::Client` shared by every
//! server of a hub (rmcp's default client opens a connection per request).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::common::client_side_sse::ExponentialBackoff;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

use super::http_client::AuthorizingClient;
use crate::error::Error;

/// The rmcp transport type we use for streamable HTTP.
pub(crate) type HttpTransport = StreamableHttpClientTransport<AuthorizingClient>;

/// The shared HTTP client: pooled keep-alive connections, no Nagle delay.
pub(crate) fn pooled_client() -> Result<reqwest::Client, Error> {
    reqwest::Client::builder()
        .connect_timeout(crate::defaults::HTTP_CONNECT_TIMEOUT)
        .pool_idle_timeout(crate::defaults::HTTP_POOL_IDLE_TIMEOUT)
        .tcp_nodelay(true)
        .redirect(crate::auth::redirect::same_origin())
        .user_agent(concat!("mcpmux/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| Error::Connect {
            server: "*".into(),
            message: format!("cannot build the HTTP client: {e}"),
            stderr_tail: Vec::new(),
            source: crate::error::cause(crate::redact::redact_reqwest(e)),
        })
}

/// Builds the transport for `url`; fails on a header that is not valid HTTP or is reserved.
pub(crate) fn connect(
    server: &str,
    url: &str,
    headers: &BTreeMap<String, String>,
    client: AuthorizingClient,
    max_message: usize,
) -> Result<HttpTransport, Error> {
    // rmcp manages these itself and refuses them as custom headers.
    let custom_headers: HashMap<_, _> = super::header_map(
        server,
        headers,
        &["accept", "mcp-session-id", "last-event-id"],
    )?
    .into_iter()
    .filter_map(|(name, value)| name.map(|name| (name, value)))
    .collect();
    let mut retry = ExponentialBackoff::default();
    retry.max_times = Some(crate::defaults::HTTP_SSE_RECONNECT_TRIES);
    retry.base_duration = crate::defaults::HTTP_SSE_RECONNECT_BASE;
    retry.max_delay = Some(crate::defaults::HTTP_SSE_RECONNECT_MAX_DELAY);
    let mut config = StreamableHttpClientTransportConfig::default();
    config.uri = Arc::from(url);
    config.retry_config = Arc::new(retry);
    config.custom_headers = custom_headers;
    config.reinit_on_expired_session = true;
    // 16 POSTs in flight is rmcp's default; a harness calling many tools at once on one
    // server should not queue behind it.
    config.max_concurrent_requests = 64;
    config.control_request_timeout = crate::defaults::HTTP_CONTROL_TIMEOUT;
    // rmcp's 16 MiB would refuse an answer a stdio server may send; past this bound the
    // request fails with the reason (`http_screen.rs`).
    config.max_sse_event_size = max_message;
    Ok(StreamableHttpClientTransport::with_client(client, config))
}
