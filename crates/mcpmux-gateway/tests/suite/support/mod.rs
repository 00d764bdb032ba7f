//! Shared by the gateway's integration tests: the workspace's test support (the
//! `mcpmux-test-support` crate: where the test server is, polling, its call log, a hub on real
//! servers with short timeouts, `mcpmux serve` as a process and the SDK clients), a gateway
//! served over HTTP on 127.0.0.1 with a port of 0, stopped like a signal would stop it, and an
//! OAuth authorization server for it to trust (`issuer.rs`).
#![allow(dead_code, unused_imports, clippy::unwrap_used, clippy::expect_used)]

mod issuer;

pub use issuer::*;
pub use mcpmux_test_support::*;

use mcpmux::{Hub, ServerSpec};
use mcpmux_gateway::{Gateway, GatewayOptions, HttpError, HttpOptions, HttpServer};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// A gateway serving HTTP in this process.
pub struct Served {
    /// `http://127.0.0.1:PORT/mcp`
    pub url: String,
    /// `http://127.0.0.1:PORT`
    pub base: String,
    pub hub: Hub,
    pub gateway: Gateway,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<Result<(), HttpError>>>,
}

impl Served {
    /// Serves a hub on `specs` (not waiting for them) with `options`, and HTTP options as
    /// `http` leaves them (127.0.0.1:0 to start with).
    pub async fn start(
        specs: Vec<ServerSpec>,
        options: GatewayOptions,
        http: impl FnOnce(&mut HttpOptions),
    ) -> Self {
        let hub = Hub::start(specs, hub_options()).unwrap();
        Self::serve(hub, options, http).await
    }

    /// Serves a hub on `specs` started with a relaying host, the gateway given that host (the
    /// servers' logs and notices reach the clients, their requests the calling client).
    pub async fn hosted(specs: Vec<ServerSpec>, options: GatewayOptions) -> Self {
        Self::hosted_with(specs, options, |_| {}).await
    }

    /// [`Served::hosted`] with HTTP options as `http` leaves them.
    pub async fn hosted_with(
        specs: Vec<ServerSpec>,
        options: GatewayOptions,
        http: impl FnOnce(&mut HttpOptions),
    ) -> Self {
        let host = mcpmux::Host::relaying();
        let hub = Hub::start(specs, hub_options().with_host(host.clone())).unwrap();
        Self::serve(hub, options.with_host(host), http).await
    }

    /// Serves `hub` with `options`, and HTTP options as `http` leaves them.
    pub async fn serve(
        hub: Hub,
        options: GatewayOptions,
        http: impl FnOnce(&mut HttpOptions),
    ) -> Self {
        let gateway = Gateway::new(hub.clone(), options);
        let mut http_options = HttpOptions::new("127.0.0.1:0".parse().unwrap());
        http(&mut http_options);
        let server = HttpServer::bind(gateway.clone(), http_options)
            .await
            .unwrap();
        let addr = server.local_addr();
        let (stop, stopped) = oneshot::channel();
        let task = tokio::spawn(server.serve(async move {
            let _ = stopped.await;
        }));
        Served {
            url: format!("http://{addr}/mcp"),
            base: format!("http://{addr}"),
            hub,
            gateway,
            stop: Some(stop),
            task: Some(task),
        }
    }

    /// Stops serving as a signal would (graceful), then closes the hub.
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            task.await.unwrap().unwrap();
        }
        self.hub.shutdown().await;
    }
}

/// A `POST /mcp` of `body` with the headers a streamable-HTTP client sends, plus `extra`.
pub async fn post(
    url: &str,
    body: &serde_json::Value,
    extra: &[(&str, &str)],
) -> reqwest::Response {
    post_by(&reqwest::Client::new(), url, body, extra).await
}

/// [`post`] sent by `client` (one bound to a local address: another identity).
pub async fn post_by(
    client: &reqwest::Client,
    url: &str,
    body: &serde_json::Value,
    extra: &[(&str, &str)],
) -> reqwest::Response {
    let mut request = client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body.to_string());
    for (name, value) in extra {
        request = request.header(*name, *value);
    }
    request.send().await.unwrap()
}

/// A handshake-era session opened by `client` with `extra` headers on each request
/// (`initialize`, then `notifications/initialized`), its handshake done: its id.
pub async fn open_session(client: &reqwest::Client, url: &str, extra: &[(&str, &str)]) -> String {
    open_session_with(client, url, &initialize(), extra).await
}

/// A handshake-era session whose client declares `capabilities` (e.g. elicitation, which
/// sends its calls through rmcp's session worker rather than the inline path).
pub async fn open_session_declaring(
    client: &reqwest::Client,
    url: &str,
    capabilities: serde_json::Value,
) -> String {
    let mut initialize = initialize();
    initialize["params"]["capabilities"] = capabilities;
    open_session_with(client, url, &initialize, &[]).await
}

async fn open_session_with(
    client: &reqwest::Client,
    url: &str,
    initialize: &serde_json::Value,
    extra: &[(&str, &str)],
) -> String {
    let answer = post_by(client, url, initialize, extra).await;
    assert_eq!(answer.status(), 200, "{}", answer.text().await.unwrap());
    let id = answer.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_string();
    let _ = answer.text().await;
    let mut in_session = extra.to_vec();
    in_session.extend([
        ("mcp-session-id", id.as_str()),
        ("mcp-protocol-version", "2025-06-18"),
    ]);
    let done = serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let sent = post_by(client, url, &done, &in_session).await;
    assert_eq!(sent.status(), 202);
    id
}

/// An `initialize` request of the handshake era.
pub fn initialize() -> serde_json::Value {
    serde_json::json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "gateway-test", "version": "1"}
        }
    })
}

/// `/metrics`' value of `series` (its name and labels as written), 0 when absent.
pub async fn metric(base: &str, series: &str) -> f64 {
    let text = reqwest::get(format!("{base}/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or(0.0)
}

/// The headers of a request in handshake-era session `id`.
pub fn in_session(id: &str) -> [(&str, &str); 2] {
    [
        ("mcp-session-id", id),
        ("mcp-protocol-version", "2025-06-18"),
    ]
}

/// A client whose requests come from `from` (another loopback address: another identity).
pub fn client_from(from: &str) -> reqwest::Client {
    reqwest::Client::builder()
        .local_address(from.parse::<std::net::IpAddr>().unwrap())
        .build()
        .unwrap()
}

/// How many sessions `/metrics` says are parked.
pub async fn parked(base: &str) -> u64 {
    metric(base, "mcpmux_gateway_sessions_parked").await as u64
}

/// Waits until `/metrics` says `n` sessions are parked.
pub async fn until_parked(base: &str, n: u64) {
    let seen = eventually_async(
        std::time::Duration::from_secs(10),
        std::time::Duration::from_millis(25),
        || async { (parked(base).await == n).then_some(()) },
    )
    .await;
    assert!(
        seen.is_some(),
        "{n} sessions were not parked (now {})",
        parked(base).await
    );
}

/// A gateway with default options in front of the fast test server `t`, which logs its calls
/// (and their cancellations) to a file in `dir`: the gateway, and the log's path.
pub async fn served_with_call_log(dir: &std::path::Path) -> (Served, std::path::PathBuf) {
    let log = dir.join("calls.jsonl");
    let served = Served::start(
        vec![fast_testserver("t", &["--call-log", log.to_str().unwrap()])],
        GatewayOptions::default(),
        |_| {},
    )
    .await;
    (served, log)
}

/// A `GET /mcp` stream of session `id` by `client`, resuming after `last` if given.
pub async fn listen(
    client: &reqwest::Client,
    url: &str,
    id: &str,
    last: Option<&str>,
) -> reqwest::Response {
    let mut request = client
        .get(url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", id)
        .header("mcp-protocol-version", "2025-06-18");
    if let Some(last) = last {
        request = request.header("last-event-id", last);
    }
    request.send().await.unwrap()
}

/// Reads `stream` into `read` until it holds `wanted` (10 s at most).
pub async fn read_until(stream: &mut reqwest::Response, wanted: &str, read: &mut String) {
    while !read.contains(wanted) {
        let chunk = tokio::time::timeout(std::time::Duration::from_secs(10), stream.chunk())
            .await
            .unwrap_or_else(|_| panic!("{wanted} did not come: {read}"))
            .unwrap()
            .unwrap_or_else(|| panic!("the stream ended before {wanted}: {read}"));
        read.push_str(&String::from_utf8_lossy(&chunk));
    }
}
