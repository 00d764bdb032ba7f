//! The hub against real third-party MCP servers: the Node reference servers (handshake era)
//! and Python's mcp-server-time (stateless 2026-07-28), as installed by
//! `scripts/install-test-deps.sh`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::time::{Duration, Instant};

use mcpmux::{Content, Era, Hub, HubOptions, ServerSpec, ServerState};
use serde_json::json;
use support::connected;

fn text_of(result: &mcpmux::ToolResult) -> String {
    result.to_text()
}

async fn check_everything(hub: &Hub, server: &str) {
    let echo = hub
        .call(&format!("mcp__{server}__echo"), json!({"message": "hi"}))
        .await
        .unwrap();
    assert_eq!(text_of(&echo), "Echo: hi");
    assert!(!echo.is_error);

    let sum = hub
        .call(&format!("mcp__{server}__get-sum"), json!({"a": 2, "b": 3}))
        .await
        .unwrap();
    assert!(text_of(&sum).contains('5'), "{}", text_of(&sum));

    let image = hub
        .call(&format!("mcp__{server}__get-tiny-image"), json!({}))
        .await
        .unwrap();
    assert!(
        image
            .content
            .iter()
            .any(|c| matches!(c, Content::Image { mime_type, data } if mime_type == "image/png" && !data.is_empty())),
        "no image block in {image:?}"
    );
}

#[tokio::test]
async fn everything_over_stdio() {
    let hub = support::started(vec![ServerSpec::stdio(
        "everything",
        support::npm_bin("mcp-server-everything").to_string_lossy(),
        ["stdio"],
    )])
    .await;
    let (era, version) = connected(&hub, "everything");
    assert_eq!(era, Era::Handshake);
    assert_eq!(version, "2025-11-25");
    assert!(hub.tool("mcp__everything__echo").is_some());
    check_everything(&hub, "everything").await;
    hub.shutdown().await;
}

#[tokio::test]
async fn everything_over_streamable_http_on_loopback() {
    let server = support::node_http(
        &support::npm_script("@modelcontextprotocol/server-everything", "dist/index.js"),
        &["streamableHttp"],
        "/mcp",
    );
    let hub = support::started(vec![ServerSpec::http("everything", &server.url)]).await;
    let (era, _) = connected(&hub, "everything");
    assert_eq!(era, Era::Handshake);
    check_everything(&hub, "everything").await;
    hub.shutdown().await;
}

#[tokio::test]
async fn filesystem_reads_back_what_the_test_wrote_and_writes_what_we_ask() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::write(root.join("note.txt"), "written by the test\n").unwrap();
    // server-filesystem serves the client's roots when the client offers them (the project
    // directory by default): the project here is the temp dir.
    let hub = support::started_with(
        vec![ServerSpec::stdio(
            "fs",
            support::npm_bin("mcp-server-filesystem").to_string_lossy(),
            [root.to_string_lossy().to_string()],
        )],
        support::hub_options().with_host(mcpmux::host::Host::default().with_project_dir(&root)),
    )
    .await;
    let read = hub
        .call(
            "mcp__fs__read_text_file",
            json!({"path": root.join("note.txt")}),
        )
        .await
        .unwrap();
    assert!(!read.is_error, "{read:?}");
    assert_eq!(text_of(&read).trim(), "written by the test");

    let write = hub
        .call(
            "mcp__fs__write_file",
            json!({"path": root.join("out.txt"), "content": "from the hub"}),
        )
        .await
        .unwrap();
    assert!(!write.is_error, "{write:?}");
    assert_eq!(
        std::fs::read_to_string(root.join("out.txt")).unwrap(),
        "from the hub"
    );

    // Outside the allowed directory the tool answers isError: a result, not a failure.
    let denied = hub
        .call("mcp__fs__read_text_file", json!({"path": "/etc/hostname"}))
        .await
        .unwrap();
    assert!(denied.is_error);
    hub.shutdown().await;
}

#[tokio::test]
async fn memory_keeps_entities() {
    let dir = tempfile::tempdir().unwrap();
    let spec = ServerSpec::stdio(
        "memory",
        support::npm_bin("mcp-server-memory").to_string_lossy(),
        Vec::<String>::new(),
    )
    .with_env(
        "MEMORY_FILE_PATH",
        dir.path().join("memory.jsonl").to_string_lossy(),
    );
    let hub = support::started(vec![spec]).await;
    let created = hub
        .call(
            "mcp__memory__create_entities",
            json!({"entities": [{"name": "mcpmux", "entityType": "project", "observations": ["speaks MCP"]}]}),
        )
        .await
        .unwrap();
    assert!(!created.is_error, "{created:?}");
    let graph = hub
        .call("mcp__memory__read_graph", json!({}))
        .await
        .unwrap();
    let text = text_of(&graph);
    assert!(
        text.contains("mcpmux") && text.contains("speaks MCP"),
        "{text}"
    );
    hub.shutdown().await;
}

#[tokio::test]
async fn python_time_server_speaks_the_stateless_era() {
    let hub = support::started(vec![ServerSpec::stdio(
        "time",
        support::venv_bin("mcp-server-time").to_string_lossy(),
        Vec::<String>::new(),
    )])
    .await;
    let (era, version) = connected(&hub, "time");
    assert_eq!(era, Era::Stateless);
    assert_eq!(version, "2026-07-28");
    let now = hub
        .call("mcp__time__get_current_time", json!({"timezone": "UTC"}))
        .await
        .unwrap();
    assert!(!now.is_error, "{now:?}");
    assert!(text_of(&now).contains("UTC"), "{}", text_of(&now));
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_concurrent_calls_from_sixteen_tasks_get_their_own_answers() {
    let hub = support::started(vec![ServerSpec::stdio(
        "everything",
        support::npm_bin("mcp-server-everything").to_string_lossy(),
        ["stdio"],
    )])
    .await;
    let tasks: Vec<_> = (0..16)
        .map(|task| {
            let hub = hub.clone();
            tokio::spawn(async move {
                let mut futures = Vec::new();
                for i in 0..(200 / 16 + usize::from(task < 200 % 16)) {
                    let hub = hub.clone();
                    futures.push(async move {
                        let message = format!("task {task} call {i}");
                        let result = hub
                            .call("mcp__everything__echo", json!({"message": message}))
                            .await
                            .unwrap();
                        assert_eq!(result.to_text(), format!("Echo: {message}"));
                    });
                }
                let n = futures.len();
                futures::future::join_all(futures).await;
                n
            })
        })
        .collect();
    let mut total = 0;
    for task in tasks {
        total += task.await.unwrap();
    }
    assert_eq!(total, 200);
    hub.shutdown().await;
}

#[tokio::test]
async fn broken_servers_are_reported_within_their_startup_timeout_while_others_work() {
    let started = Instant::now();
    let hub = support::started_with(
        vec![
            ServerSpec::stdio(
                "good",
                support::npm_bin("mcp-server-memory").to_string_lossy(),
                Vec::<String>::new(),
            ),
            ServerSpec::stdio("missing", "definitely-not-an-mcp-server-xyz", ["--stdio"]),
            ServerSpec::stdio(
                "exits",
                "sh",
                ["-c", "echo 'fatal: no API key configured' >&2; exit 3"],
            ),
            ServerSpec::stdio("silent", "sleep", ["1000"])
                .with_startup_timeout(Duration::from_millis(1500)),
        ],
        HubOptions::ephemeral().with_shutdown_grace(Duration::from_millis(100)),
    )
    .await;
    // The silent server cost its own startup timeout, not more.
    assert!(started.elapsed() < Duration::from_secs(10));

    let state = |name: &str| {
        hub.servers()
            .into_iter()
            .find(|s| s.name == name)
            .unwrap()
            .state
    };
    match state("missing") {
        ServerState::Failed { error, .. } => {
            assert!(error.contains("not found"), "{error}");
            assert!(
                error.contains("definitely-not-an-mcp-server-xyz"),
                "{error}"
            );
        }
        other => panic!("{other:?}"),
    }
    match state("exits") {
        ServerState::Failed { error, stderr_tail } => {
            assert!(error.contains("exited with status 3"), "{error}");
            assert_eq!(stderr_tail, vec!["fatal: no API key configured"]);
        }
        other => panic!("{other:?}"),
    }
    match state("silent") {
        ServerState::Failed { error, .. } => {
            assert!(error.contains("startup timeout of 1.5s"), "{error}");
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(state("good"), ServerState::Connected { .. }));
    let graph = hub.call("mcp__memory__read_graph", json!({})).await;
    assert!(graph.is_err(), "memory server is named `good` here");
    let graph = hub.call("mcp__good__read_graph", json!({})).await.unwrap();
    assert!(!graph.is_error);

    let err = hub
        .call("mcp__exits__anything", json!({}))
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("server `exits` is failed"), "{err}");
    hub.shutdown().await;
}
