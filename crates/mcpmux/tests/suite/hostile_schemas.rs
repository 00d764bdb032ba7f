//! The trust boundary against a real hostile server (the test server with `--tool-schema` and
//! `--deep-result`): a tool schema that refers to itself or expands exponentially, and a
//! result nested too deep to decode, cost one tool or one call — never the process, never a
//! hang, never the server's other tools.
//!
//! Each scenario runs on a thread of its own with a deadline: a stack overflow aborts the test
//! binary and a spin fails the deadline, so neither can pass by hanging.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::future::Future;
use std::time::{Duration, Instant};

use mcpmux::schema::{ExportFormat, export};
use mcpmux::{CallOptions, Error, Hub};
use serde_json::json;

/// Runs `scenario` on its own runtime and thread; fails if it takes longer than `limit`.
fn within<T: Send + 'static>(
    limit: Duration,
    scenario: impl Future<Output = T> + Send + 'static,
) -> T {
    // Built (if need be) before the clock starts.
    support::testserver();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let _ = tx.send(runtime.block_on(scenario));
        runtime.shutdown_background();
    });
    rx.recv_timeout(limit)
        .expect("the scenario did not finish in time: a hang or a runaway computation")
}

async fn started(args: &[&str]) -> Hub {
    let options = support::hub_options();
    support::started_with(vec![support::stdio_testserver("ts", args)], options).await
}

async fn echo_works(hub: &Hub) {
    let result = hub
        .call("mcp__ts__echo", json!({"text": "still here"}))
        .await
        .unwrap();
    assert_eq!(result.to_text(), "still here");
}

#[test]
fn a_tool_whose_schema_refers_to_itself_is_listed_unusable_with_the_reason_and_refused() {
    within(Duration::from_secs(30), async {
        let hub = started(&["--tool-schema", "self-ref"]).await;
        let tools = hub.tools();
        let bad = tools
            .iter()
            .find(|t| t.name == "mcp__ts__self_ref")
            .expect("the unusable tool stays listed");
        let reason = bad.unusable.clone().expect("marked unusable");
        assert_eq!(
            reason,
            "its input schema cannot be used: `/allOf/0` refers back to the root without \
             descending into the value (a `$ref` cycle through `allOf`/`anyOf`/`oneOf`/`not`/\
             `if`): validating it would never end"
        );
        let echo = tools.iter().find(|t| t.name == "mcp__ts__echo").unwrap();
        assert_eq!(echo.unusable, None);

        let err = hub
            .call("mcp__ts__self_ref", json!({"x": "a"}))
            .await
            .unwrap_err();
        let Error::UnusableTool { tool, reason: why } = &err else {
            panic!("not refused as unusable: {err}");
        };
        assert_eq!(tool, "mcp__ts__self_ref");
        assert_eq!(why, &reason);
        assert!(
            err.to_string()
                .starts_with("tool `mcp__ts__self_ref` cannot be called: its input schema"),
            "{err}"
        );

        for provider in ExportFormat::ALL {
            let exported = export(&tools, provider);
            assert!(
                exported.tools.iter().all(|t| t.tool != "mcp__ts__self_ref"),
                "{provider}: a model must not be offered it"
            );
            assert!(exported.tools.iter().any(|t| t.tool == "mcp__ts__echo"));
            assert_eq!(exported.unusable.len(), 1, "{provider}");
            assert_eq!(exported.unusable[0].reason, reason);
        }
        echo_works(&hub).await;
        hub.shutdown().await;
    });
}

#[test]
fn a_schema_that_expands_to_two_to_the_fortieth_is_refused_promptly() {
    within(Duration::from_secs(30), async {
        let hub = started(&["--tool-schema", "ref-bomb"]).await;
        let started = Instant::now();
        let err = hub
            .call("mcp__ts__ref_bomb", json!({"x": "a"}))
            .await
            .unwrap_err();
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{:?}",
            started.elapsed()
        );
        assert!(matches!(err, Error::UnusableTool { .. }), "{err}");
        assert!(
            err.to_string().contains("nested `$ref`s or combinators"),
            "{err}"
        );
        echo_works(&hub).await;
        hub.shutdown().await;
    });
}

#[test]
fn a_result_nested_too_deep_to_read_fails_that_call_at_once_and_the_server_keeps_working() {
    within(Duration::from_secs(30), async {
        let hub = started(&["--deep-result"]).await;
        let started = Instant::now();
        let err = hub
            .call_with(
                "mcp__ts__deep_result",
                json!({}),
                CallOptions::default().with_timeout(Duration::from_secs(20)),
            )
            .await
            .unwrap_err();
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "waited {:?} for a message that was already there",
            started.elapsed()
        );
        let text = err.to_string();
        assert!(
            text.contains(
                "the server's answer could not be read: it nests arrays and objects deeper \
                 than 127 levels (100003 found)"
            ),
            "{text}"
        );
        echo_works(&hub).await;
        hub.shutdown().await;
    });
}
