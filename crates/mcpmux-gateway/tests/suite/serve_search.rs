//! `mcpmux serve --search`: the official SDK clients (TypeScript: the handshake era; Python:
//! 2026-07-28 and the handshake) over stdio and streamable HTTP see only the pinned tools and
//! the meta-tools, search the test server's catalog, and call what they found — a client that
//! lists again after `list_changed` by name, a client that never lists again through
//! `call_tool` — with argument validation on the `call_tool` path as on a direct call.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mcpmux_test_support as support;

use serde_json::{Value, json};
use support::*;

const FOUND: &str = "mcp__t__calendar_get_event";

/// The test server serving its catalog as `t` (the echo and the catalog's tools).
fn catalog() -> Sandbox {
    with_testserver(&["--many-tools", "172"])
}

fn names(line: &Value) -> Vec<&str> {
    line["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools in {line}"))
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect()
}

/// The tools a `search_tools` result's text names.
fn found(result: &Value) -> Vec<String> {
    let answer: Value = serde_json::from_str(&text_of(result))
        .unwrap_or_else(|e| panic!("search_tools answered no JSON ({e}): {result}"));
    answer["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{answer}"))
        .iter()
        .map(|t| {
            assert!(
                t["inputSchema"].is_object(),
                "a definition with no schema: {t}"
            );
            t["name"].as_str().unwrap().to_string()
        })
        .collect()
}

fn search(query: &str) -> Value {
    json!({"do": "call", "name": "search_tools", "arguments": {"query": query}})
}

/// The catalog tool's answer: its name and the arguments it was given.
#[track_caller]
fn assert_called(line: &Value, who: &str) {
    let result = &line["result"];
    assert_eq!(result["isError"], false, "{who}: {line}");
    let text = text_of(result);
    assert!(
        text.contains("calendar_get_event") && text.contains("e1"),
        "{who}: {text}"
    );
}

#[test]
fn a_typescript_client_that_lists_again_sees_what_it_found_and_calls_it_by_name_over_stdio() {
    let sandbox = catalog();
    let target = json!({"stdio": stdio_target(&sandbox, &["--search", "--pin", "mcp__t__echo"])});
    let lines = ts_client(
        target,
        json!([
            {"do": "list"},
            {"do": "call_expecting_list_changed", "name": "search_tools",
             "arguments": {"query": "get a calendar event"}},
            {"do": "call", "name": FOUND, "arguments": {"id": "e1"}},
            {"do": "call", "name": "mcp__t__echo", "arguments": {"text": "pinned"}},
        ]),
    );
    assert_eq!(
        names(&lines[0]),
        ["search_tools", "call_tool", "mcp__t__echo"],
        "only the meta-tools and the pinned tool are listed"
    );
    assert_eq!(lines[1]["listChanged"], true, "{}", lines[1]);
    let relisted = names(&lines[1]);
    assert!(relisted.contains(&FOUND), "{relisted:?}");
    assert!(
        relisted.len() <= 3 + 5,
        "at most the default five found: {relisted:?}"
    );
    assert_called(&lines[2], "by name");
    assert_eq!(text_of(&lines[3]["result"]), "pinned");
}

#[test]
fn a_typescript_client_that_never_lists_again_calls_through_call_tool_over_http() {
    let sandbox = catalog();
    let served = Served::start(&sandbox, &["--search"]);
    let lines = ts_client(
        served.target(),
        json!([
            {"do": "list"},
            search("get a calendar event"),
            {"do": "call", "name": "call_tool",
             "arguments": {"name": FOUND, "arguments": {"id": "e1"}}},
            // Validation on the call_tool path, as on a direct call.
            {"do": "call", "name": "call_tool", "arguments": {"name": FOUND, "arguments": {}}},
            // A tool never found nor listed, called directly: accepted.
            {"do": "call", "name": "mcp__t__echo", "arguments": {"text": "unlisted"}},
            // Hostile: a query past the bound, a limit past the most.
            {"do": "call", "name": "search_tools", "arguments": {"query": "x".repeat(2000)}},
            {"do": "call", "name": "search_tools", "arguments": {"query": "event", "limit": 1000}},
        ]),
    );
    assert_eq!(names(&lines[0]), ["search_tools", "call_tool"]);
    let hits = found(&lines[1]["result"]);
    assert!(
        hits.len() <= 5 && hits.contains(&FOUND.to_string()),
        "{hits:?}"
    );
    assert_called(&lines[2], "through call_tool");
    assert_eq!(lines[3]["result"]["isError"], true, "{}", lines[3]);
    assert!(
        text_of(&lines[3]["result"]).contains("missing required property `id`"),
        "{}",
        lines[3]
    );
    assert_eq!(text_of(&lines[4]["result"]), "unlisted");
    for line in &lines[5..7] {
        assert_eq!(line["result"]["isError"], true, "{line}");
    }
    assert!(text_of(&lines[5]["result"]).contains("at most 1024 bytes"));
    assert!(text_of(&lines[6]["result"]).contains("`limit` must be an integer from 1 to 20"));
}

#[test]
fn a_python_client_of_2026_07_28_calls_what_it_found_through_call_tool_over_http() {
    let sandbox = catalog();
    let served = Served::start(&sandbox, &["--search", "--pin", "t:*"]);
    let lines = py_client(
        served.target(),
        "auto",
        json!([
            {"do": "version"},
            search("get a calendar event"),
            {"do": "call", "name": "call_tool",
             "arguments": {"name": FOUND, "arguments": {"id": "e1"}}},
        ]),
    );
    assert_eq!(lines[0]["protocol"], "2026-07-28", "{lines:?}");
    // A whole server pinned: nothing of it is behind the search.
    assert!(found(&lines[1]["result"]).is_empty(), "{}", lines[1]);
    assert_called(&lines[2], "pinned, through call_tool");

    let served = Served::start(&sandbox, &["--search"]);
    let lines = py_client(
        served.target(),
        "auto",
        json!([
            {"do": "list"},
            search("get a calendar event"),
            {"do": "call", "name": "call_tool",
             "arguments": {"name": FOUND, "arguments": {"id": "e1"}}},
        ]),
    );
    assert_eq!(names(&lines[0]), ["search_tools", "call_tool"]);
    assert!(found(&lines[1]["result"]).contains(&FOUND.to_string()));
    assert_called(&lines[2], "2026-07-28 through call_tool");
}

#[test]
fn a_python_client_of_the_handshake_lists_again_and_calls_by_name_over_stdio() {
    let sandbox = catalog();
    let target = json!({"stdio": stdio_target(&sandbox, &["--search"])});
    let lines = py_client(
        target,
        "legacy",
        json!([
            {"do": "list"},
            search("get a calendar event"),
            {"do": "list"},
            {"do": "call", "name": FOUND, "arguments": {"id": "e1"}},
        ]),
    );
    assert_eq!(names(&lines[0]), ["search_tools", "call_tool"]);
    let hits = found(&lines[1]["result"]);
    let relisted = names(&lines[2]);
    assert_eq!(&relisted[..2], ["search_tools", "call_tool"]);
    for hit in &hits {
        assert!(
            relisted.contains(&hit.as_str()),
            "{hit} not listed: {relisted:?}"
        );
    }
    assert_called(&lines[3], "the handshake, by name");
}

#[test]
fn serve_searches_when_the_config_s_serve_table_says_so_with_its_pins_and_the_flags() {
    let sandbox = catalog();
    sandbox.write_file(
        &sandbox.home.join(".config/mcpmux/config.toml"),
        "[serve]\nsearch = true\npin = [\"mcp__t__echo\"]\n",
    );
    let target = json!({"stdio": stdio_target(&sandbox, &["--pin", "mcp__t__add"])});
    let lines = ts_client(target, json!([{"do": "list"}]));
    assert_eq!(
        names(&lines[0]),
        ["search_tools", "call_tool", "mcp__t__add", "mcp__t__echo"],
        "{lines:?}"
    );
}
