//! Lazy servers and the tool cache, against the real test server: a lazy server runs only once
//! something uses it, a call starts only the server it goes to, and a warm cache lists a
//! server's tools without starting it — until the server says otherwise.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::path::Path;
use std::time::Duration;

use mcpmux::{Error, Hub, HubEvent, HubOptions, ServerSpec, ServerState};
use serde_json::json;
use support::*;

/// The test server processes of this test process whose command line holds `marker`.
fn running(marker: &str) -> usize {
    descendants(std::process::id() as i32)
        .iter()
        .filter(|p| p.state != 'Z' && p.cmdline.contains(marker))
        .count()
}

/// A test server whose command line carries `marker` (an unused `--page-size`), so its
/// process can be found.
fn marked(name: &str, marker: &str, args: &[&str]) -> ServerSpec {
    let mut args: Vec<&str> = args.to_vec();
    args.extend(["--page-size", marker]);
    stdio_testserver(name, &args)
        .with_options(fast())
        .with_call_timeout(Duration::from_secs(5))
        .with_startup_timeout(Duration::from_secs(10))
}

fn lazy_options(cache: Option<&Path>) -> HubOptions {
    hub_options()
        .with_lazy(true)
        .with_tool_cache(cache.map(Path::to_path_buf))
}

/// Runs `specs` once in an eager hub so the tool cache at `cache` holds their lists.
async fn warm(cache: &Path, specs: Vec<ServerSpec>) {
    let names: Vec<String> = specs.iter().map(|s| s.name.clone()).collect();
    let hub = started_with(specs, hub_options().with_tool_cache(Some(cache.into()))).await;
    for name in names {
        assert!(is_connected(&state(&hub, &name)), "{name} did not connect");
    }
    hub.shutdown().await;
}

#[tokio::test]
async fn a_lazy_server_starts_on_the_first_call_to_one_of_its_tools_and_no_other_does() {
    let hub = Hub::start(
        vec![marked("alpha", "7101", &[]), marked("beta", "7102", &[])],
        lazy_options(None),
    )
    .unwrap();
    assert_eq!(state(&hub, "alpha"), ServerState::Idle);
    assert_eq!((running("7101"), running("7102")), (0, 0));

    assert_eq!(echo(&hub, "alpha", "hi").await.unwrap(), "hi");
    assert!(is_connected(&state(&hub, "alpha")));
    assert_eq!(state(&hub, "beta"), ServerState::Idle);
    assert_eq!((running("7101"), running("7102")), (1, 0));

    hub.shutdown().await;
    assert_eq!(state(&hub, "beta"), ServerState::Stopped);
    assert_eq!(running("7101"), 0, "the started server is reaped");
}

#[tokio::test]
async fn a_call_to_a_fast_server_does_not_wait_for_a_slow_one_starting_beside_it() {
    // Eager: both start with the hub; the call needs only its own server.
    let hub = Hub::start(
        vec![
            marked("quick", "7111", &[]),
            marked("sluggish", "7112", &["--startup-delay-ms", "20000"]),
        ],
        hub_options(),
    )
    .unwrap();
    assert_eq!(echo(&hub, "quick", "now").await.unwrap(), "now");
    assert!(
        matches!(state(&hub, "sluggish"), ServerState::Pending { .. }),
        "the call returned while the slow server was still starting"
    );
    hub.shutdown().await;
    assert_eq!(running("7112"), 0);
}

#[tokio::test]
async fn an_eager_server_starts_with_a_lazy_hub_and_a_lazy_one_with_an_eager_hub_waits() {
    let mut eager = marked("eager", "7121", &[]);
    eager.options.lazy = Some(false);
    let hub = Hub::start(vec![eager, marked("idle", "7122", &[])], lazy_options(None)).unwrap();
    wait_state(&hub, "eager", Duration::from_secs(10), is_connected).await;
    assert_eq!(state(&hub, "idle"), ServerState::Idle);
    hub.shutdown().await;

    let mut lazy = marked("lazy", "7123", &[]);
    lazy.options.lazy = Some(true);
    let hub = Hub::start(vec![lazy, marked("other", "7124", &[])], hub_options()).unwrap();
    wait_state(&hub, "other", Duration::from_secs(10), is_connected).await;
    assert_eq!(state(&hub, "lazy"), ServerState::Idle);
    assert_eq!(running("7123"), 0);
    hub.shutdown().await;
}

#[tokio::test]
async fn without_a_cached_list_a_listing_starts_the_lazy_servers_it_needs() {
    let hub = Hub::start(vec![marked("listed", "7131", &[])], lazy_options(None)).unwrap();
    hub.wait_ready().await.unwrap();
    assert!(is_connected(&state(&hub, "listed")));
    let tools = hub.tools();
    assert!(tools.iter().any(|t| t.name == "mcp__listed__echo"));
    assert!(tools.iter().all(|t| !t.cached));
    hub.shutdown().await;
}

#[tokio::test]
async fn a_warm_cache_lists_a_lazy_servers_tools_without_starting_it() {
    let cache = tempfile::tempdir().unwrap();
    warm(cache.path(), vec![marked("warm", "7141", &[])]).await;

    let hub = Hub::start(
        vec![marked("warm", "7141", &[])],
        lazy_options(Some(cache.path())),
    )
    .unwrap();
    hub.wait_ready().await.unwrap();
    let tools = hub.tools();
    let echo_tool = tools.iter().find(|t| t.name == "mcp__warm__echo").unwrap();
    assert!(echo_tool.cached, "marked as from the cache");
    assert!(echo_tool.input_schema["properties"]["text"].is_object());
    assert_eq!(state(&hub, "warm"), ServerState::Idle);
    assert_eq!(running("7141"), 0, "listing started no process");
    let status = hub.servers();
    let row = status.iter().find(|s| s.name == "warm").unwrap();
    assert!(row.cached.is_some());
    assert_eq!(row.tools, tools.len());
    let json = serde_json::to_value(row).unwrap();
    assert_eq!(json["state"], "idle");
    assert!(json["cached_at"].as_u64().unwrap() > 0);

    // First use: the server starts, answers, and its own list replaces the cache's.
    assert_eq!(echo(&hub, "warm", "used").await.unwrap(), "used");
    assert!(is_connected(&state(&hub, "warm")));
    assert!(hub.tools().iter().all(|t| !t.cached));
    assert!(hub.servers()[0].cached.is_none());
    hub.shutdown().await;
}

#[tokio::test]
async fn a_cached_list_the_server_contradicts_is_replaced_and_announced() {
    let cache = tempfile::tempdir().unwrap();
    warm(cache.path(), vec![marked("moved", "7151", &[])]).await;
    // Another version of the server listed other tools: a `ghost` it no longer has.
    let file = std::fs::read_dir(cache.path())
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let mut entry: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    entry["server_version"] = json!("0.0.1-old");
    entry["tools"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "ghost", "inputSchema": {"type": "object"}}));
    std::fs::write(&file, entry.to_string()).unwrap();

    let hub = Hub::start(
        vec![marked("moved", "7151", &[])],
        lazy_options(Some(cache.path())),
    )
    .unwrap();
    let mut events = hub.subscribe();
    assert!(hub.tool("mcp__moved__ghost").is_some_and(|t| t.cached));
    let row = &hub.servers()[0];
    assert_eq!(row.cached.as_ref().unwrap().1.as_deref(), Some("0.0.1-old"));

    // Calling the ghost starts the server, which does not have it: its list wins.
    let err = hub.call("mcp__moved__ghost", json!({})).await.unwrap_err();
    assert!(matches!(err, Error::UnknownTool { .. }), "{err}");
    wait_event(
        &mut events,
        Duration::from_secs(10),
        |e| matches!(e, HubEvent::ToolsChanged { server } if server == "moved"),
    )
    .await;
    assert!(hub.tool("mcp__moved__ghost").is_none());
    assert!(hub.tool("mcp__moved__echo").is_some_and(|t| !t.cached));
    hub.shutdown().await;

    // The server's answer was written back: the next run's cache has no ghost.
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        !text.contains("ghost") && !text.contains("0.0.1-old"),
        "{text}"
    );
}

#[tokio::test]
async fn an_eager_hub_lists_cached_tools_while_the_server_starts_then_its_own() {
    let cache = tempfile::tempdir().unwrap();
    let spec = || marked("late", "7161", &["--startup-delay-ms", "300"]);
    warm(cache.path(), vec![spec()]).await;

    let hub = Hub::start(
        vec![spec()],
        hub_options().with_tool_cache(Some(cache.path().into())),
    )
    .unwrap();
    assert!(matches!(state(&hub, "late"), ServerState::Pending { .. }));
    assert!(hub.tool("mcp__late__echo").is_some_and(|t| t.cached));
    hub.wait_ready().await.unwrap();
    assert!(hub.tool("mcp__late__echo").is_some_and(|t| !t.cached));
    hub.shutdown().await;
}

#[tokio::test]
async fn a_server_that_fails_to_start_takes_its_cached_tools_out_of_the_listing() {
    let cache = tempfile::tempdir().unwrap();
    warm(cache.path(), vec![marked("flaky", "7171", &[])]).await;
    // The same server (one identity), given no time to start: its first attempt fails.
    let broken = marked("flaky", "7171", &[]).with_startup_timeout(Duration::from_millis(1));
    let hub = Hub::start(vec![broken], lazy_options(Some(cache.path()))).unwrap();
    assert!(hub.tool("mcp__flaky__echo").is_some_and(|t| t.cached));
    let err = echo(&hub, "flaky", "x").await.unwrap_err();
    assert!(
        matches!(err, Error::Unavailable { .. } | Error::Timeout { .. }),
        "{err}"
    );
    assert!(matches!(state(&hub, "flaky"), ServerState::Failed { .. }));
    assert!(
        hub.tools().is_empty(),
        "a failed server's cached tools are not listed"
    );
    hub.shutdown().await;
}

#[tokio::test]
async fn a_name_no_server_prefix_explains_starts_every_lazy_server_before_it_is_refused() {
    let hub = Hub::start(
        vec![marked("one", "7181", &[]), marked("two", "7182", &[])],
        lazy_options(None),
    )
    .unwrap();
    let err = hub.call("mcp__nobody__echo", json!({})).await.unwrap_err();
    assert!(matches!(err, Error::UnknownTool { .. }), "{err}");
    assert!(is_connected(&state(&hub, "one")) && is_connected(&state(&hub, "two")));
    hub.shutdown().await;
}

#[tokio::test]
async fn listing_resources_starts_the_lazy_servers_that_may_offer_them() {
    let hub = Hub::start(vec![marked("res", "7191", &[])], lazy_options(None)).unwrap();
    assert_eq!(state(&hub, "res"), ServerState::Idle);
    let listing = hub.resources(None).await.unwrap();
    assert!(listing.errors.is_empty(), "{:?}", listing.errors);
    assert!(is_connected(&state(&hub, "res")));
    hub.shutdown().await;
}

/// Watches the FIFO at `path` until `stop`: whoever opens it to read is seen (a non-blocking
/// open for writing succeeds only then), told so in the answer, and let go with a line that
/// is not JSON.
#[cfg(unix)]
fn watch_fifo(
    path: std::path::PathBuf,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> std::thread::JoinHandle<bool> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    use std::sync::atomic::Ordering;
    std::thread::spawn(move || {
        let mut read = false;
        while !stop.load(Ordering::Acquire) {
            if let Ok(mut fifo) = std::fs::OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(&path)
            {
                read = true;
                let _ = fifo.write_all(b"not json\n");
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        read
    })
}

#[cfg(unix)]
#[tokio::test]
async fn a_call_reads_no_cached_list_but_that_of_its_own_server_and_a_listing_reads_them_all() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let cache = tempfile::tempdir().unwrap();
    warm(cache.path(), vec![marked("bystander", "7201", &[])]).await;
    // The bystander's entry becomes a FIFO: a reader blocks on it until the watcher sees it.
    let entries: Vec<_> = std::fs::read_dir(cache.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(entries.len(), 1, "{entries:?}");
    let fifo = entries[0].clone();
    std::fs::remove_file(&fifo).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let stop = Arc::new(AtomicBool::new(false));
    let watcher = watch_fifo(fifo.clone(), stop.clone());

    let hub = Hub::start(
        vec![
            marked("target", "7202", &[]),
            marked("bystander", "7201", &[]),
        ],
        lazy_options(Some(cache.path())),
    )
    .unwrap();
    hub.prepare("mcp__target__echo");
    assert_eq!(echo(&hub, "target", "hi").await.unwrap(), "hi");
    stop.store(true, Ordering::Release);
    assert!(
        !watcher.join().unwrap(),
        "the call read the bystander's cached list"
    );
    assert_eq!(running("7201"), 0, "the call started only its own server");

    // A listing is what reads every list (this one is not JSON: ignored, the server started).
    let stop = Arc::new(AtomicBool::new(false));
    let watcher = watch_fifo(fifo, stop.clone());
    hub.wait_ready().await.unwrap();
    stop.store(true, Ordering::Release);
    assert!(
        watcher.join().unwrap(),
        "the listing read the bystander's list"
    );
    assert!(hub.tools().iter().any(|t| t.name == "mcp__bystander__echo"));
    hub.shutdown().await;
}

/// A streamed listing (`stream_tools`) hands out what `tools()` lists, in its order and with
/// its marks, names the servers listed from the cache, keeps one server's tools with `only`,
/// starts the server without a cached list as `wait_ready` does, and leaves the hub holding
/// none of the cached lists it read.
#[tokio::test]
async fn a_streamed_listing_lists_what_tools_lists_and_keeps_no_cached_list() {
    let cache = tempfile::tempdir().unwrap();
    let specs = || {
        vec![
            marked("one", "7151", &[]),
            marked("two", "7152", &[]),
            marked("cold", "7153", &[]),
        ]
    };
    warm(cache.path(), specs()[..2].to_vec()).await;

    let hub = Hub::start(specs(), lazy_options(Some(cache.path()))).unwrap();
    hub.wait_ready_to_stream().await.unwrap();
    let mut streamed = Vec::new();
    let notes = hub
        .stream_tools::<()>(None, None, |tool| {
            streamed.push(tool.clone());
            Ok(())
        })
        .unwrap();
    let from_cache: Vec<&str> = notes.from_cache.iter().map(|(s, _)| s.as_str()).collect();
    assert_eq!(from_cache, ["one", "two"]);
    assert_eq!(
        (running("7151"), running("7152")),
        (0, 0),
        "a cached server started"
    );
    // `servers_as_read`, not `servers` (nor `state`, which asks it): that reads the caches.
    for row in hub.servers_as_read() {
        if row.name == "cold" {
            assert!(
                is_connected(&row.state),
                "the uncached server was not started"
            );
        } else {
            assert!(
                row.cached.is_none() && row.tools == 0,
                "{row:?} kept a list"
            );
        }
    }

    let mut two = Vec::new();
    hub.stream_tools::<()>(None, Some("two"), |tool| {
        two.push(tool.name.clone());
        Ok(())
    })
    .unwrap();
    assert!(
        !two.is_empty() && two.iter().all(|n| n.starts_with("mcp__two__")),
        "{two:?}"
    );

    let listed = hub.tools();
    assert!(listed.iter().any(|t| t.cached) && listed.iter().any(|t| !t.cached));
    assert!(
        streamed == listed,
        "the streamed listing differs from tools()"
    );
    hub.shutdown().await;
}
