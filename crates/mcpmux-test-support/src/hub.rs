//! A hub on real servers, the way every integration test starts one: short timeouts and backoff
//! so that no test waits for seconds, the one server's state and how to wait for a state or an
//! event, and the calls the test server answers (`echo`, `pid`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use mcpmux::config::ServerOptions;
use mcpmux::host::ResourceEvent;
use mcpmux::{Era, Error, Hub, HubEvent, HubOptions, ServerSpec, ServerState};
use serde_json::json;
use tokio::sync::broadcast;

use super::poll::eventually;
use super::servers::testserver;

/// `n` milliseconds.
pub fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Short backoff, breaker and grace: no test waits for seconds.
pub fn fast() -> ServerOptions {
    let mut o = ServerOptions::default();
    o.backoff.initial = ms(20);
    o.backoff.max = ms(200);
    o.breaker.threshold = 3;
    o.breaker.cool_down = ms(200);
    o.shutdown_grace = ms(200);
    o
}

/// The test server over stdio as `name`, with `args`, and the hub's defaults otherwise.
pub fn stdio_testserver(name: &str, args: &[&str]) -> ServerSpec {
    ServerSpec::stdio(
        name,
        testserver().to_string_lossy(),
        args.iter().map(|a| a.to_string()),
    )
}

/// [`stdio_testserver`] with [`fast`] options and short timeouts. The hub starts a server
/// configured twice (same command and args) only once, so every spec gets a distinct, harmless
/// `--page-size` (larger than the tool list: one page).
pub fn fast_testserver(name: &str, args: &[&str]) -> ServerSpec {
    static UNIQUE: AtomicU64 = AtomicU64::new(1000);
    let page_size = UNIQUE.fetch_add(1, Ordering::Relaxed).to_string();
    let args = args
        .iter()
        .map(|a| a.to_string())
        .chain(["--page-size".to_string(), page_size]);
    ServerSpec::stdio(name, testserver().to_string_lossy(), args)
        .with_options(fast())
        .with_call_timeout(Duration::from_secs(5))
        .with_startup_timeout(Duration::from_secs(10))
}

/// An in-memory hub (no token file) that gives its servers 200 ms to stop.
pub fn hub_options() -> HubOptions {
    HubOptions::ephemeral().with_shutdown_grace(ms(200))
}

/// A hub on `specs` with [`hub_options`], once every server settled.
pub async fn started(specs: Vec<ServerSpec>) -> Hub {
    started_with(specs, hub_options()).await
}

/// A hub on `specs` with `options`, once every server settled.
pub async fn started_with(specs: Vec<ServerSpec>, options: HubOptions) -> Hub {
    let hub = Hub::start(specs, options).unwrap();
    hub.wait_ready().await.unwrap();
    hub
}

/// Starts a hub on `spec` alone, waits for it to settle and returns the server's state and how
/// long settling took; the hub is shut down.
pub async fn settled(spec: ServerSpec) -> (ServerState, Duration) {
    let name = spec.name.clone();
    let started_at = Instant::now();
    let hub = Hub::start(vec![spec], HubOptions::ephemeral()).unwrap();
    hub.wait_ready().await.unwrap();
    let elapsed = started_at.elapsed();
    let state = state(&hub, &name);
    hub.shutdown().await;
    (state, elapsed)
}

/// The state of server `name`, as `servers()` shows it.
pub fn state(hub: &Hub, name: &str) -> ServerState {
    hub.servers()
        .into_iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no server {name}"))
        .state
}

/// The state of a hub's first (usually only) server.
pub fn only_state(hub: &Hub) -> ServerState {
    hub.servers().into_iter().next().unwrap().state
}

/// Polls the server's state until `pred` holds; panics after `within`.
pub async fn wait_state(
    hub: &Hub,
    name: &str,
    within: Duration,
    pred: impl Fn(&ServerState) -> bool,
) -> ServerState {
    let matched = eventually(within, ms(2), || {
        let s = state(hub, name);
        pred(&s).then_some(s)
    })
    .await;
    matched.unwrap_or_else(|| {
        panic!(
            "{name}: state never matched within {within:?}; last: {:?}",
            state(hub, name)
        )
    })
}

/// Whether the state is connected.
pub fn is_connected(s: &ServerState) -> bool {
    matches!(s, ServerState::Connected { .. })
}

/// The era and protocol version of connected server `name`; panics when it is not connected.
pub fn connected(hub: &Hub, name: &str) -> (Era, String) {
    match state(hub, name) {
        ServerState::Connected { era, version, .. } => (era, version),
        other => panic!("server {name} is not connected: {other:?}"),
    }
}

/// The error of a server that did not connect (its row in `servers()` names it).
pub fn failed(state: ServerState) -> String {
    match state {
        ServerState::Failed { error, .. } => error,
        other => panic!("expected Failed, got {other:?}"),
    }
}

/// The message of a server that waits for credentials.
pub fn needs_auth(state: ServerState) -> String {
    match state {
        ServerState::NeedsAuth { message, .. } => message,
        other => panic!("expected NeedsAuth, got {other:?}"),
    }
}

/// Waits for the next event matching `pred` (skipping others, surviving lag).
pub async fn wait_event(
    events: &mut broadcast::Receiver<HubEvent>,
    within: Duration,
    pred: impl Fn(&HubEvent) -> bool,
) -> HubEvent {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        match tokio::time::timeout_at(deadline, events.recv()).await {
            Err(_) => panic!("no matching event within {within:?}"),
            Ok(Ok(event)) if pred(&event) => return event,
            Ok(Ok(_)) | Ok(Err(broadcast::error::RecvError::Lagged(_))) => {}
            Ok(Err(e)) => panic!("event channel: {e}"),
        }
    }
}

/// Matches the event of `server` entering the state labelled `label`.
pub fn state_event(server: &str, label: &str) -> impl Fn(&HubEvent) -> bool {
    let server = server.to_string();
    let label = label.to_string();
    move |e| matches!(e, HubEvent::StateChanged { server: s, state } if *s == server && state.label() == label)
}

/// The next resource update (server, URI), if one arrives within `within`.
pub async fn next_update(
    events: &mut broadcast::Receiver<ResourceEvent>,
    within: Duration,
) -> Option<(String, String)> {
    tokio::time::timeout(within, async {
        loop {
            if let ResourceEvent::Updated { server, uri } = events.recv().await.unwrap() {
                break (server, uri);
            }
        }
    })
    .await
    .ok()
}

/// The test server's `echo` on `server`: the text, or the call's error.
pub async fn echo(hub: &Hub, server: &str, text: &str) -> Result<String, Error> {
    hub.call(&format!("mcp__{server}__echo"), json!({ "text": text }))
        .await
        .map(|r| r.to_text())
}

/// The test server's `hang` on `server` under a `timeout` deadline: how the call ended, and
/// how long it took.
pub async fn timed_hang(
    hub: &Hub,
    server: &str,
    timeout: Duration,
) -> (Result<mcpmux::ToolResult, Error>, Duration) {
    let sent = Instant::now();
    let result = hub
        .call_with(
            &format!("mcp__{server}__hang"),
            json!({}),
            mcpmux::CallOptions::default().with_timeout(timeout),
        )
        .await;
    (result, sent.elapsed())
}

/// The pid of the test server process serving `server` now.
pub async fn pid_of(hub: &Hub, server: &str) -> u32 {
    hub.call(&format!("mcp__{server}__pid"), json!({}))
        .await
        .unwrap()
        .to_text()
        .parse()
        .unwrap()
}

/// The reference server-everything's entry script (to run it over HTTP under node).
pub fn everything_script() -> std::path::PathBuf {
    super::servers::npm_script("@modelcontextprotocol/server-everything", "dist/index.js")
}

/// A streamable-HTTP server at `url` as `name`, with [`fast`] options and short timeouts.
pub fn fast_http(name: &str, url: &str) -> ServerSpec {
    ServerSpec::http(name, url)
        .with_options(fast())
        .with_call_timeout(Duration::from_secs(5))
        .with_startup_timeout(Duration::from_secs(10))
}

/// The `tools_version` of connected server `name`; panics when it is not connected.
pub fn tools_version(hub: &Hub, name: &str) -> u64 {
    match state(hub, name) {
        ServerState::Connected { tools_version, .. } => tools_version,
        other => panic!("{name} is not connected: {other:?}"),
    }
}

/// Calls `echo` on `server` `n` times concurrently; every answer must be its own text.
pub async fn echo_many(hub: &Hub, server: &str, n: usize) {
    let calls = (0..n).map(|i| {
        let text = format!("{server} #{i}");
        async move {
            let got = echo(hub, server, &text).await;
            assert_eq!(got.as_deref().ok(), Some(text.as_str()), "{got:?}");
        }
    });
    futures::future::join_all(calls).await;
}

/// The error kinds a harness can act on when a server is in trouble.
pub fn is_clear_server_error(e: &Error) -> bool {
    matches!(
        e,
        Error::ConnectionLost { .. }
            | Error::Timeout { .. }
            | Error::Unavailable { .. }
            | Error::CircuitOpen { .. }
            | Error::Server { .. }
    )
}
