//! `mcpmux serve` passing on what the upstream servers announce, and serving what is asked
//! beside tools: resource subscriptions (an update reaches only the sessions subscribed; a
//! session that ends releases what it alone held), resource and prompt list changes (to
//! handshake-era sessions and to 2026-07-28 listen streams), completions of prompt and
//! template arguments, logging (a call's logs to its session alone, `logging/setLevel` per
//! session, the server named in `logger`), and lists in pages with cursors a client cannot forge. Driven by the official
//! SDK clients (several TypeScript sessions at once; the Python client in 2026-07-28) against
//! the test server.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mcpmux_test_support as support;

use serde_json::{Value, json};
use support::*;

const UPDATED: &str = "notifications/resources/updated";

fn call(session: usize, name: &str, arguments: Value) -> Value {
    json!({"do": "call", "session": session, "name": name, "arguments": arguments})
}

fn count(line: &Value, key: &str) -> usize {
    line[key].as_array().map_or(0, Vec::len)
}

#[test]
fn a_resource_update_reaches_only_the_sessions_subscribed_and_the_last_one_gone_releases_it() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls.jsonl");
    let sandbox = with_testserver(&["--era", "handshake", "--call-log", log.to_str().unwrap()]);
    let served = Served::start(&sandbox, &[]);
    let lines = ts_sessions(
        served.target(),
        json!([{}, {}]),
        json!([
            {"do": "subscribe", "session": 0, "uri": "test://counter"},
            call(1, "mcp__t__bump", json!({})),
            {"do": "wait", "session": 0, "method": UPDATED, "count": 1},
            // One more round trip of session 1 after session 0 heard it.
            call(1, "mcp__t__echo", json!({"text": "still here"})),
            {"do": "notifications", "session": 1, "method": UPDATED},
            {"do": "subscribe", "session": 1, "uri": "test://counter"},
            call(0, "mcp__t__bump", json!({})),
            {"do": "wait", "session": 0, "method": UPDATED, "count": 2},
            {"do": "wait", "session": 1, "method": UPDATED, "count": 1},
            {"do": "unsubscribe", "session": 0, "uri": "test://counter"},
            {"do": "subscribe", "session": 0, "uri": "test://nope"},
        ]),
    );
    assert_eq!(lines[0]["ok"], true, "{lines:?}");
    assert_eq!(lines[2]["seen"], true, "{lines:?}");
    assert_eq!(lines[2]["notifications"][0]["uri"], "test://counter");
    assert_eq!(
        count(&lines[4], "notifications"),
        0,
        "not subscribed: {lines:?}"
    );
    assert_eq!(lines[7]["seen"], true, "{lines:?}");
    assert_eq!(lines[8]["seen"], true, "{lines:?}");
    assert_eq!(lines[9]["ok"], true, "{lines:?}");
    assert!(lines[10]["error"].is_string(), "{lines:?}");
    // One upstream subscription for both sessions; session 1 still held it when session 0
    // unsubscribed; the session closing at the end of the run released it.
    wait_log_blocking(&log, |l| {
        l.iter().any(|e| e["unsubscribe"] == "test://counter")
    });
    let events = call_log(&log);
    let subscribes = events
        .iter()
        .filter(|e| e["subscribe"] == "test://counter")
        .count();
    let unsubscribes = events
        .iter()
        .filter(|e| e.get("unsubscribe").is_some())
        .count();
    assert_eq!((subscribes, unsubscribes), (1, 1), "{events:?}");
}

#[test]
fn resource_and_prompt_list_changes_reach_sessions_and_listen_streams() {
    let sandbox = with_testserver(&["--prompts"]);
    let served = Served::start(&sandbox, &[]);
    let lines = ts_sessions(
        served.target(),
        json!([{}]),
        json!([
            {"do": "capabilities"},
            call(0, "mcp__t__change_lists", json!({})),
            {"do": "wait", "method": "notifications/resources/list_changed"},
            {"do": "wait", "method": "notifications/prompts/list_changed"},
        ]),
    );
    let capabilities = &lines[0]["capabilities"];
    assert_eq!(
        capabilities["resources"]["listChanged"], true,
        "{capabilities}"
    );
    assert_eq!(
        capabilities["resources"]["subscribe"], true,
        "{capabilities}"
    );
    assert_eq!(
        capabilities["prompts"]["listChanged"], true,
        "{capabilities}"
    );
    assert_eq!(lines[2]["seen"], true, "{lines:?}");
    assert_eq!(lines[3]["seen"], true, "{lines:?}");

    // 2026-07-28: on a listen stream, with a resource subscription too.
    let listen = json!([{
        "do": "listen_events", "name": "mcp__t__change_lists", "count": 2,
        "filter": {"resources_list_changed": true, "prompts_list_changed": true},
    }, {
        // The first update comes once the upstream subscription is made (a change before it
        // would otherwise reach nobody); the bump's comes after it.
        "do": "listen_events", "name": "mcp__t__bump", "before": 1, "count": 2,
        "filter": {"resource_subscriptions": ["test://counter"]},
    }]);
    let lines = py_client(served.target(), "auto", listen);
    let kinds: Vec<&str> = lines[0]["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds.len(), 2, "{lines:?}");
    assert!(
        kinds.iter().any(|k| k.contains("Resource")) && kinds.iter().any(|k| k.contains("Prompt")),
        "{lines:?}"
    );
    let updates = lines[1]["events"].as_array().unwrap();
    assert_eq!(updates.len(), 2, "{lines:?}");
    assert!(
        updates.iter().all(|e| e["uri"] == "test://counter"),
        "{lines:?}"
    );
}

#[test]
fn prompt_and_template_arguments_are_completed_by_their_server() {
    let sandbox = with_testserver(&["--prompts"]);
    let target = json!({ "stdio": stdio_target(&sandbox, &[]) });
    let lines = ts_sessions(
        target,
        json!([{}]),
        json!([
            {"do": "capabilities"},
            {"do": "complete", "ref": {"type": "ref/prompt", "name": "mcp__t__greet"},
             "argument": {"name": "name", "value": "A"}},
            {"do": "complete", "ref": {"type": "ref/resource", "uri": "test://item/{id}"},
             "argument": {"name": "id", "value": "4"}},
            {"do": "complete", "ref": {"type": "ref/prompt", "name": "mcp__t__nope"},
             "argument": {"name": "name", "value": ""}},
        ]),
    );
    assert!(
        lines[0]["capabilities"]["completions"].is_object(),
        "{lines:?}"
    );
    assert_eq!(
        lines[1]["completion"]["values"],
        json!(["Ada", "Alan"]),
        "{lines:?}"
    );
    assert_eq!(lines[2]["completion"]["values"], json!(["42"]), "{lines:?}");
    assert_eq!(lines[3]["code"], -32602, "{lines:?}");
}

#[test]
fn each_session_gets_the_server_logs_of_its_own_calls_its_level_admits_with_the_server_named() {
    let sandbox = with_testserver(&["--era", "handshake"]);
    let served = Served::start(&sandbox, &[]);
    let log = |session: usize, level: &str, text: &str| {
        call(
            session,
            "mcp__t__log",
            json!({"level": level, "text": text}),
        )
    };
    let message = "notifications/message";
    let lines = ts_sessions(
        served.target(),
        json!([{}, {}]),
        json!([
            {"do": "capabilities"},
            {"do": "set_level", "session": 0, "level": "debug"},
            {"do": "set_level", "session": 1, "level": "error"},
            log(0, "warning", "careful"),
            {"do": "wait", "session": 0, "method": message},
            log(1, "warning", "muted"),
            log(1, "error", "broken"),
            {"do": "wait", "session": 1, "method": message},
            log(0, "info", "again"),
            {"do": "wait", "session": 0, "method": message, "count": 2},
        ]),
    );
    assert!(lines[0]["capabilities"]["logging"].is_object(), "{lines:?}");
    // The upstream server was asked for debug: the most any session wants.
    assert_eq!(text_of(&lines[3]["result"]), "logged", "{lines:?}");
    let first = &lines[4]["notifications"][0];
    assert_eq!(first["level"], "warning", "{lines:?}");
    assert_eq!(first["logger"], "t/testserver", "{lines:?}");
    assert_eq!(first["data"], "careful", "{lines:?}");
    // Session 1 asked for errors only, and hears only its own calls' logs: not its warning,
    // not session 0's.
    assert_eq!(text_of(&lines[5]["result"]), "logged", "{lines:?}");
    let datas = |line: &Value| -> Vec<Value> {
        line["notifications"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["data"].clone())
            .collect()
    };
    assert_eq!(datas(&lines[7]), [json!("broken")], "{lines:?}");
    // Session 1's error, passed on before session 0's "again", never reached session 0.
    assert_eq!(
        datas(&lines[9]),
        [json!("careful"), json!("again")],
        "{lines:?}"
    );
}

#[test]
fn served_over_stdio_the_one_client_also_gets_a_log_no_call_explains() {
    let sandbox = with_testserver(&["--era", "handshake"]);
    let target = json!({ "stdio": stdio_target(&sandbox, &[]) });
    let late = json!({"level": "info", "text": "late", "after_ms": 30});
    let lines = ts_sessions(
        target,
        json!([{}]),
        json!([
            call(0, "mcp__t__log", late),
            {"do": "wait", "session": 0, "method": "notifications/message"},
        ]),
    );
    assert_eq!(text_of(&lines[0]["result"]), "will log", "{lines:?}");
    // Sent after its call answered: tied to no call, yet nobody else's it could be.
    assert_eq!(lines[1]["seen"], true, "{lines:?}");
    assert_eq!(lines[1]["notifications"][0]["data"], "late", "{lines:?}");
}

#[test]
fn a_catalog_of_ten_thousand_tools_is_served_in_pages_and_a_forged_cursor_is_refused() {
    let sandbox = with_testserver(&["--many-tools", "10000"]);
    let served = Served::start(&sandbox, &[]);
    let lines = ts_sessions(
        served.target(),
        json!([{}]),
        json!([
            {"do": "pages", "list": "tools"},
            {"do": "list", "list": "tools"},
            {"do": "list", "list": "tools", "cursor": "page-2"},
        ]),
    );
    let tools = lines[0]["items"].as_array().unwrap();
    assert!(tools.len() > 10_000, "{}", tools.len());
    let mut unique: Vec<&str> = tools.iter().map(|t| t.as_str().unwrap()).collect();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), tools.len(), "no tool twice");
    assert_eq!(lines[0]["pages"], 11, "1000 a page: {}", lines[0]["pages"]);
    // A cursor taken apart and put back with another page's number is not one.
    let cursor = lines[1]["nextCursor"].as_str().unwrap();
    let first = if cursor.starts_with('A') { "B" } else { "A" };
    let forged = format!("{first}{}", &cursor[1..]);
    let refused = ts_sessions(
        served.target(),
        json!([{}]),
        json!([{"do": "list", "list": "tools", "cursor": forged}]),
    );
    assert_eq!(refused[0]["code"], -32602, "{refused:?}");
    assert_eq!(lines[2]["code"], -32602, "{lines:?}");

    // --page-size: resources and prompts too.
    let sandbox = with_testserver(&["--prompts"]);
    let served = Served::start(&sandbox, &["--page-size", "1"]);
    let lines = ts_sessions(
        served.target(),
        json!([{}]),
        json!([
            {"do": "pages", "list": "tools"},
            {"do": "pages", "list": "prompts"},
        ]),
    );
    let tools = count(&lines[0], "items");
    assert_eq!(lines[0]["pages"], tools, "one a page: {lines:?}");
    assert_eq!(lines[1]["items"], json!(["mcp__t__greet"]), "{lines:?}");
}
