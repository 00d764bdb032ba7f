//! `mcpmux serve --search` end to end: an agent loop on an official SDK client
//! (`tests/clients/ts-agent.mjs`: TypeScript, handshake era, Anthropic Messages;
//! `tests/clients/py-agent.py`: Python, 2026-07-28 or the handshake, OpenAI Chat Completions)
//! driven by the scripted model endpoint (`mcpmux-testmodel`), over stdio and streamable HTTP:
//! TypeScript over both, Python in 2026-07-28 and the handshake over both.
//! The model searches, calls what it found — by name for a client that lists again, through
//! `call_tool` for one that does not — and answers; each step checks what it was sent: the
//! listed tools, the search's answer, the test server's real output. The same task on plain
//! `serve` (every tool listed, called directly) sends more bytes per request: asserted.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

use mcpmux_test_support as support;
use mcpmux_testmodel::{ScriptedModel, Step, Wire};
use serde_json::{Value, json};
use support::*;

const FOUND: &str = "mcp__t__calendar_get_event";
const PROMPT: &str = "What is calendar event e1?";
const QUERY: &str = "get a calendar event";

/// How the client reaches the tool the search found.
#[derive(Clone, Copy, PartialEq)]
enum Calls {
    /// Every tool is listed (plain `serve`): the model calls it directly.
    Listed,
    /// `--search`, a client that lists again: by name.
    ByName,
    /// `--search`, a client that lists once: through `call_tool`.
    Through,
    /// `--search` in 2026-07-28, a client that lists before every request: by name. There is
    /// no session to remember the find, so its list does not hold the tool; the model has
    /// the definition from the search's answer, and a direct call of an unlisted tool works.
    Unlisted,
}

/// The text of the tool results the last message(s) of a request carry, in either wire.
fn last_results(body: &Value, wire: Wire) -> String {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    match wire {
        Wire::Anthropic => messages
            .last()
            .and_then(|m| m["content"].as_array().cloned())
            .unwrap_or_default()
            .iter()
            .filter(|b| b["type"] == "tool_result")
            .map(|b| b["content"].as_str().unwrap_or_default().to_string())
            .collect(),
        Wire::OpenAi => messages
            .iter()
            .rev()
            .take_while(|m| m["role"] == "tool")
            .map(|m| m["content"].as_str().unwrap_or_default().to_string())
            .collect(),
    }
}

fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .filter_map(|t| {
            t.pointer("/function/name")
                .or_else(|| t.get("name"))
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .collect()
}

/// The script of the task: search (unless every tool is listed), call the calendar tool with
/// `e1`, answer. Each step checks the request it answers.
fn script(wire: Wire, calls: Calls) -> Vec<Step> {
    let call = match calls {
        Calls::Listed | Calls::ByName | Calls::Unlisted => {
            (FOUND.to_string(), json!({"id": "e1"}).to_string())
        }
        Calls::Through => (
            "call_tool".to_string(),
            json!({"name": FOUND, "arguments": {"id": "e1"}}).to_string(),
        ),
    };
    let answer = Step::text("Event e1 is on the calendar.").expect(move |body| {
        let results = last_results(body, wire);
        (results.contains("calendar_get_event") && results.contains("e1"))
            .then_some(())
            .ok_or(format!("not the test server's answer: {results:?}"))
    });
    if calls == Calls::Listed {
        let first = Step::tool_calls([call]).expect(|body| {
            let names = tool_names(body);
            names
                .iter()
                .any(|n| n == FOUND)
                .then_some(())
                .ok_or(format!("{FOUND} is not listed: {names:?}"))
        });
        return vec![first, answer];
    }
    let search =
        Step::tool_calls([("search_tools", json!({"query": QUERY}).to_string())]).expect(|body| {
            let names = tool_names(body);
            (names == ["search_tools", "call_tool"])
                .then_some(())
                .ok_or(format!("not only the meta-tools: {names:?}"))
        });
    let found = Step::tool_calls([call]).expect(move |body| {
        let results = last_results(body, wire);
        if !results.contains(FOUND) {
            return Err(format!("the search did not find {FOUND}: {results:?}"));
        }
        let listed = tool_names(body).iter().any(|n| n == FOUND);
        match (calls, listed) {
            (Calls::ByName, false) => Err(format!("{FOUND} not listed after the search")),
            (Calls::Through, true) => Err(format!("{FOUND} listed to a client that lists once")),
            _ => Ok(()),
        }
    });
    vec![search, found, answer]
}

fn agent_client(script: &str, scenario: Value) -> Vec<Value> {
    let (mut cmd, what) = if script.ends_with(".mjs") {
        let mut cmd = Command::new("node");
        cmd.arg(clients().join(script))
            .arg(workspace().join("test-deps/node_modules"));
        (cmd, "the TypeScript SDK agent")
    } else {
        (Command::new(venv_bin("python")), "the Python SDK agent")
    };
    if script.ends_with(".py") {
        cmd.arg(clients().join(script));
    }
    cmd.arg(scenario.to_string());
    run_client(cmd, what)
}

/// Runs the task with the agent `script` on `target` (`{"stdio": …}` or `{"url": …}`, plus
/// `mode`), checks the model saw the whole sequence and got the real answer, and returns the
/// bytes of each request the client sent.
async fn task(script: &'static str, target: Value, wire: Wire, calls: Calls) -> Vec<u64> {
    run(script, target, wire, calls).await.0
}

/// [`task`] by the Python agent in `mode`: the bytes, and the protocol version it spoke.
async fn py_task(target: Value, mode: &str, calls: Calls) -> (Vec<u64>, String) {
    let mut target = target;
    target["mode"] = json!(mode);
    let (bytes, end) = run("py-agent.py", target, Wire::OpenAi, calls).await;
    (
        bytes,
        end["protocol"].as_str().unwrap_or_default().to_string(),
    )
}

async fn run(script: &'static str, target: Value, wire: Wire, calls: Calls) -> (Vec<u64>, Value) {
    let model = ScriptedModel::start(wire, self::script(wire, calls))
        .await
        .unwrap();
    let mut scenario = target;
    scenario["model"] = json!(model.base_url());
    scenario["prompt"] = json!(PROMPT);
    scenario["relist"] = json!(matches!(calls, Calls::ByName | Calls::Unlisted));
    let lines = tokio::task::spawn_blocking(move || agent_client(script, scenario))
        .await
        .unwrap();
    assert!(model.violations().is_empty(), "{:#?}", model.violations());
    assert_eq!(model.remaining(), 0, "{lines:?}");
    let end = lines.last().unwrap();
    assert_eq!(end["answer"], "Event e1 is on the calendar.", "{lines:?}");
    let expected: &[&str] = match calls {
        Calls::Listed => &[FOUND],
        Calls::ByName | Calls::Unlisted => &["search_tools", FOUND],
        Calls::Through => &["search_tools", "call_tool"],
    };
    assert_eq!(end["calls"], json!(expected), "{lines:?}");
    let bytes = lines.iter().filter_map(|l| l["bytes"].as_u64()).collect();
    (bytes, end.clone())
}

/// Every request of the searching run is smaller than every request of the plain one.
#[track_caller]
fn assert_smaller(search: &[u64], plain: &[u64]) {
    let most = search.iter().max().unwrap();
    let least = plain.iter().min().unwrap();
    assert!(
        most < least,
        "search sent {search:?} bytes, plain {plain:?}"
    );
}

fn catalog() -> Sandbox {
    with_testserver(&["--many-tools", "172"])
}

#[tokio::test(flavor = "multi_thread")]
async fn a_typescript_agent_solves_the_task_over_stdio_by_name_and_through_call_tool_with_fewer_bytes()
 {
    let sandbox = catalog();
    let search = json!({"stdio": stdio_target(&sandbox, &["--search"])});
    let plain = json!({"stdio": stdio_target(&sandbox, &[])});
    let by_name = task(
        "ts-agent.mjs",
        search.clone(),
        Wire::Anthropic,
        Calls::ByName,
    )
    .await;
    let through = task("ts-agent.mjs", search, Wire::Anthropic, Calls::Through).await;
    let plain = task("ts-agent.mjs", plain, Wire::Anthropic, Calls::Listed).await;
    assert_eq!((by_name.len(), through.len(), plain.len()), (3, 3, 2));
    assert_smaller(&by_name, &plain);
    assert_smaller(&through, &plain);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_typescript_agent_solves_the_task_over_http_through_call_tool_and_by_name() {
    let sandbox = catalog();
    let served = Served::start(&sandbox, &["--search"]);
    task(
        "ts-agent.mjs",
        served.target(),
        Wire::Anthropic,
        Calls::Through,
    )
    .await;
    task(
        "ts-agent.mjs",
        served.target(),
        Wire::Anthropic,
        Calls::ByName,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_python_agent_of_2026_07_28_solves_the_task_over_http_by_name_and_through_call_tool() {
    // 2026-07-28 has no session: a client that lists every turn calls by name a tool its list
    // does not hold; one that lists once goes through `call_tool`.
    let sandbox = catalog();
    let served = Served::start(&sandbox, &["--search"]);
    let (by_name, era) = py_task(served.target(), "auto", Calls::Unlisted).await;
    assert_eq!(era, "2026-07-28");
    let (through, _) = py_task(served.target(), "auto", Calls::Through).await;
    let plain = Served::start(&sandbox, &[]);
    let (plain, _) = py_task(plain.target(), "auto", Calls::Listed).await;
    assert_smaller(&by_name, &plain);
    assert_smaller(&through, &plain);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_python_agent_of_the_handshake_solves_the_task_over_stdio_by_name_and_through_call_tool()
{
    let sandbox = catalog();
    let target = json!({"stdio": stdio_target(&sandbox, &["--search"])});
    let (_, era) = py_task(target.clone(), "legacy", Calls::ByName).await;
    assert_ne!(era, "2026-07-28");
    py_task(target, "legacy", Calls::Through).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_python_agent_solves_the_task_over_http_in_the_handshake_and_over_stdio_in_2026_07_28() {
    let sandbox = catalog();
    let served = Served::start(&sandbox, &["--search"]);
    let (_, era) = py_task(served.target(), "legacy", Calls::ByName).await;
    assert_ne!(era, "2026-07-28");
    let target = json!({"stdio": stdio_target(&sandbox, &["--search"])});
    let (_, era) = py_task(target, "auto", Calls::Through).await;
    assert_eq!(era, "2026-07-28");
}
