//! Tasks (SEP-2663): a task-augmented call through the hub, and the requests about the task
//! (`Hub::task`, `Hub::update_task`, `Hub::cancel_task`) routed to the server that runs it.
//! Against the test server's conformance mode (a real rmcp server with the suite's task
//! fixtures: `greet` answers at once, `slow_compute` sleeps, `failing_job` only runs as a task,
//! `confirm_delete` asks for a confirmation), over stdio — a process the test can crash — and
//! over streamable HTTP.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::time::Duration;

use mcpmux::{
    CallOptions, Error, Hub, ServerSpec, Task, TaskCall, TaskOutcome, TaskState, TaskStatus,
};
use serde_json::{Map, Value, json};

/// The conformance test server over stdio as `c`, with a generous call deadline (a test that
/// waited for it would show as a slow test, not a pass).
fn conformance(call_timeout: Duration) -> ServerSpec {
    support::fast_testserver("c", &["--conformance"])
        .with_call_timeout(call_timeout)
        .with_startup_timeout(Duration::from_secs(20))
}

async fn hub() -> Hub {
    support::started(vec![conformance(Duration::from_secs(20))]).await
}

async fn start(hub: &Hub, tool: &str, arguments: Value) -> Task {
    match hub
        .call_task(tool, arguments, CallOptions::default())
        .await
        .unwrap()
    {
        TaskCall::Started(task) => task,
        TaskCall::Completed(result) => panic!("{tool} answered at once: {}", result.to_text()),
    }
}

/// Asks about `task` until `done` says yes (within 20 s, at the task's poll interval).
async fn until(hub: &Hub, task: &Task, done: impl Fn(&TaskState) -> bool) -> TaskState {
    let every = task.poll_interval.unwrap_or(Duration::from_millis(100));
    support::eventually_async(Duration::from_secs(20), every, || async {
        let state = hub.task(&task.server, &task.id).await.unwrap();
        done(&state).then_some(state)
    })
    .await
    .unwrap_or_else(|| panic!("task {} never got there", task.id))
}

fn text(outcome: &TaskOutcome) -> String {
    match outcome {
        TaskOutcome::Completed(result) => result.to_text(),
        other => panic!("not completed: {other:?}"),
    }
}

#[tokio::test]
async fn a_task_augmented_call_returns_the_servers_task_and_tasks_get_follows_it_to_its_result() {
    let hub = hub().await;
    assert!(hub.servers()[0].tasks, "the server declares the extension");
    let task = start(&hub, "mcp__c__slow_compute", json!({"seconds": 0.2})).await;
    assert_eq!(task.server, "c");
    assert!(!task.status.is_terminal(), "{:?}", task.status);
    assert_eq!(task.ttl, Some(Duration::from_secs(60)));
    let state = until(&hub, &task, |s| s.task.status.is_terminal()).await;
    assert_eq!(state.task.status, TaskStatus::Completed);
    assert_eq!(state.task.id, task.id);
    assert_eq!(text(&state.outcome), "computed after 0.2s");
    hub.shutdown().await;
}

#[tokio::test]
async fn a_tool_that_answers_at_once_is_a_completed_task_call_and_a_plain_call_never_gets_a_task() {
    let hub = hub().await;
    let call = hub
        .call_task(
            "mcp__c__greet",
            json!({"name": "Ada"}),
            CallOptions::default(),
        )
        .await
        .unwrap();
    let TaskCall::Completed(result) = call else {
        panic!("{call:?}")
    };
    assert_eq!(result.to_text(), "Hello, Ada!");
    // The extension is declared per request: the same session's plain call runs at once.
    let plain = hub
        .call("mcp__c__slow_compute", json!({"seconds": 0}))
        .await
        .unwrap();
    assert_eq!(plain.to_text(), "computed after 0s");
    hub.shutdown().await;
}

#[tokio::test]
async fn a_task_only_tool_called_plainly_is_a_missing_capability_that_names_the_fix() {
    let hub = hub().await;
    let error = hub
        .call("mcp__c__failing_job", json!({}))
        .await
        .unwrap_err();
    let Error::MissingCapability {
        server, required, ..
    } = &error
    else {
        panic!("{error:?}")
    };
    assert_eq!(server, "c");
    assert!(
        required.as_ref().unwrap()["extensions"][mcpmux::TASKS_EXTENSION].is_object(),
        "{required:?}"
    );
    assert!(
        error.to_string().contains("call the tool as a task"),
        "{error}"
    );
    // As a task it runs, and its tool error is a completed task's `isError` result.
    let task = start(&hub, "mcp__c__failing_job", json!({})).await;
    let state = until(&hub, &task, |s| s.task.status.is_terminal()).await;
    let TaskOutcome::Completed(result) = &state.outcome else {
        panic!("{:?}", state.outcome)
    };
    assert!(result.is_error);
    hub.shutdown().await;
}

#[tokio::test]
async fn a_task_that_asks_for_input_goes_on_with_the_answer() {
    let hub = hub().await;
    let task = start(&hub, "mcp__c__confirm_delete", json!({})).await;
    let asking = until(&hub, &task, |s| s.task.status != TaskStatus::Working).await;
    let TaskOutcome::InputRequired { requests } = &asking.outcome else {
        panic!("{:?}", asking.outcome)
    };
    assert_eq!(requests["confirm"]["method"], "elicitation/create");
    let mut answers = Map::new();
    answers.insert(
        "confirm".into(),
        json!({"action": "accept", "content": {"confirm": "yes"}}),
    );
    hub.update_task("c", &task.id, answers).await.unwrap();
    let done = until(&hub, &task, |s| s.task.status.is_terminal()).await;
    assert_eq!(text(&done.outcome), "delete: yes");
    hub.shutdown().await;
}

#[tokio::test]
async fn a_cancelled_task_settles_as_cancelled_and_cancelling_it_again_is_acknowledged() {
    let hub = hub().await;
    let task = start(&hub, "mcp__c__slow_compute", json!({"seconds": 60})).await;
    hub.cancel_task("c", &task.id).await.unwrap();
    let state = until(&hub, &task, |s| s.task.status.is_terminal()).await;
    assert_eq!(state.outcome, TaskOutcome::Cancelled);
    hub.cancel_task("c", &task.id).await.unwrap();
    hub.shutdown().await;
}

#[tokio::test]
async fn a_task_id_the_server_does_not_know_is_its_invalid_params_error() {
    let hub = hub().await;
    let error = hub.task("c", "no-such-task").await.unwrap_err();
    assert!(
        matches!(error, Error::Server { code: -32602, .. }),
        "{error:?}"
    );
    let error = hub.task("nobody", "t").await.unwrap_err();
    assert!(matches!(error, Error::UnknownServer { .. }), "{error:?}");
    hub.shutdown().await;
}

#[tokio::test]
async fn a_task_whose_server_crashed_is_lost_at_once_and_new_tasks_go_to_the_restarted_server() {
    // A call deadline far longer than the test waits: an answer that waited for the restarted
    // server, or for the deadline, would fail the test's own timeout below.
    let hub = support::started(vec![conformance(Duration::from_secs(120))]).await;
    let task = start(&hub, "mcp__c__slow_compute", json!({"seconds": 60})).await;
    // This hub's server among those of the tests running beside it: by its own `--page-size`.
    let target = hub.servers()[0].target.clone();
    let unique = &target[target.find("--page-size").expect("a unique --page-size")..];
    let server = support::descendants(std::process::id() as i32)
        .into_iter()
        .find(|p| p.cmdline.contains("--conformance") && p.cmdline.contains(unique))
        .unwrap_or_else(|| panic!("no process runs {target}"));
    unsafe {
        libc::kill(server.pid, libc::SIGKILL);
    }
    let error = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            match hub.task("c", &task.id).await {
                // Asked before the hub noticed the exit: still the old session's answer.
                Ok(state) => assert!(!state.task.status.is_terminal(), "{state:?}"),
                Err(error) => return error,
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("an answer about the task, not a wait for the restart");
    let Error::TaskLost { server, reason, .. } = &error else {
        panic!("{error:?}")
    };
    assert_eq!(server, "c");
    assert!(reason.contains("signal 9"), "{reason}");
    assert!(error.to_string().contains("is lost"), "{error}");
    // The supervisor starts the server again; a new task lives in the new session.
    let again =
        support::eventually_async(Duration::from_secs(20), Duration::from_millis(50), || {
            let hub = hub.clone();
            async move {
                hub.call_task(
                    "mcp__c__slow_compute",
                    json!({"seconds": 0}),
                    CallOptions::default().with_fail_fast(true),
                )
                .await
                .ok()
            }
        })
        .await
        .expect("the restarted server takes calls");
    if let TaskCall::Started(task) = again {
        until(&hub, &task, |s| s.task.status.is_terminal()).await;
    }
    hub.shutdown().await;
}

#[tokio::test]
async fn tasks_work_the_same_with_a_server_over_streamable_http() {
    let server = support::testserver_http(&["--conformance"]);
    let spec = ServerSpec::http("c", &server.url)
        .with_options(support::fast())
        .with_call_timeout(Duration::from_secs(20));
    let hub = support::started(vec![spec]).await;
    let task = start(&hub, "mcp__c__slow_compute", json!({"seconds": 0.1})).await;
    let state = until(&hub, &task, |s| s.task.status.is_terminal()).await;
    assert_eq!(text(&state.outcome), "computed after 0.1s");
    hub.shutdown().await;
}

#[tokio::test]
async fn a_server_without_the_extension_answers_a_task_augmented_call_at_once() {
    let hub = support::started(vec![support::fast_testserver("t", &[])]).await;
    assert!(!hub.servers()[0].tasks);
    let call = hub
        .call_task(
            "mcp__t__echo",
            json!({"text": "hi"}),
            CallOptions::default(),
        )
        .await
        .unwrap();
    let TaskCall::Completed(result) = call else {
        panic!("{call:?}")
    };
    assert_eq!(result.to_text(), "hi");
    hub.shutdown().await;
}
