//! `mcpmux serve` passing on what an upstream server asks in the middle of a call
//! (`elicitation/create`, `sampling/createMessage`, `roots/list`) to the downstream session
//! whose call it is, and to no other; refusing it cleanly when that session did not declare
//! the capability, when it speaks 2026-07-28, or when nothing tells whose call asks; and a
//! policy `ask` rule asked of the calling client as an elicitation. Driven by the official
//! SDK clients (several TypeScript sessions at once; the Python client in both eras) against
//! the test server's `ask_client` (handshake-era requests) and `ask` (2026-07-28
//! `input_required`), upstream over streamable HTTP and over stdio.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mcpmux_test_support as support;

use serde_json::{Value, json};
use support::*;

/// A session that can answer everything, as `name`.
fn answering(name: &str) -> Value {
    json!({
        "capabilities": {"elicitation": {}, "sampling": {}, "roots": {}},
        "name": name,
        "model": format!("{name}-model"),
        "roots": [{"uri": format!("file:///home/{name}")}],
    })
}

fn ask_client(session: usize, what: &str, together: u64) -> Value {
    json!({"do": "call", "session": session, "name": "mcp__t__ask_client",
           "arguments": {"what": what, "together": together}})
}

/// `call` (an `ask_client` call), staying in flight until its whole group is answered.
fn lingering(mut call: Value) -> Value {
    call["arguments"]["linger"] = json!(true);
    call
}

/// The text of the result of one `parallel` line's `i`th call.
fn parallel_text(line: &Value, i: usize) -> String {
    text_of(&line["parallel"][i]["result"])
}

#[test]
fn two_sessions_calling_the_same_eliciting_tool_at_once_each_get_their_own_request_and_answer() {
    // Upstream over streamable HTTP: each request comes on the stream of the call it is for.
    let upstream = testserver_http(&["--era", "handshake"]);
    let sandbox = Sandbox::with_user_servers(json!({
        "t": { "type": "http", "url": upstream.url }
    }));
    let served = Served::start(&sandbox, &[]);
    let both = |what: &str| json!({"do": "parallel", "actions": [ask_client(0, what, 2), ask_client(1, what, 2)]});
    let lines = ts_sessions(
        served.target(),
        json!([answering("ada"), answering("grace")]),
        json!([
            both("elicitation"),
            both("sampling"),
            both("roots"),
            {"do": "asked", "session": 0},
            {"do": "asked", "session": 1},
        ]),
    );
    assert_eq!(parallel_text(&lines[0], 0), "name: ada", "{lines:?}");
    assert_eq!(parallel_text(&lines[0], 1), "name: grace", "{lines:?}");
    assert_eq!(
        parallel_text(&lines[1], 0),
        "reply: hello from ada (model ada-model)",
        "{lines:?}"
    );
    assert_eq!(
        parallel_text(&lines[1], 1),
        "reply: hello from grace (model grace-model)",
        "{lines:?}"
    );
    assert_eq!(
        parallel_text(&lines[2], 0),
        "roots: file:///home/ada",
        "{lines:?}"
    );
    assert_eq!(
        parallel_text(&lines[2], 1),
        "roots: file:///home/grace",
        "{lines:?}"
    );
    // Each session was asked its own three, once each.
    for session in [3, 4] {
        let asked: Vec<&str> = lines[session]["asked"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["method"].as_str().unwrap())
            .collect();
        assert_eq!(
            asked,
            ["elicitation/create", "sampling/createMessage", "roots/list"],
            "{lines:?}"
        );
    }
}

#[test]
fn a_2026_server_asking_inside_its_result_reaches_the_session_whose_call_it_is() {
    // The test server speaks 2026-07-28 with the hub: `ask` answers input_required, which only
    // the call it answers can be for, whatever else is in flight.
    let sandbox = with_testserver(&[]);
    let served = Served::start(&sandbox, &[]);
    let ask = |session: usize| json!({"do": "call", "session": session, "name": "mcp__t__ask", "arguments": {}});
    let lines = ts_sessions(
        served.target(),
        json!([answering("ada"), answering("grace")]),
        json!([{"do": "parallel", "actions": [ask(0), ask(1)]}]),
    );
    for (i, name) in [(0, "ada"), (1, "grace")] {
        let text = parallel_text(&lines[0], i);
        assert_eq!(
            text,
            format!(
                "name: {name}\nreply: hello from {name} (model {name}-model)\nroots: file:///home/{name}"
            ),
            "{lines:?}"
        );
    }
}

#[test]
fn a_session_that_did_not_declare_the_capability_is_refused_cleanly() {
    let sandbox = with_testserver(&["--era", "handshake"]);
    let target = json!({ "stdio": stdio_target(&sandbox, &[]) });
    let lines = ts_sessions(
        target.clone(),
        // Only roots: no sampling, no elicitation.
        json!([{"capabilities": {"roots": {}}, "roots": [{"uri": "file:///r"}]}]),
        json!([
            ask_client(0, "elicitation", 1),
            ask_client(0, "sampling", 1),
            ask_client(0, "roots", 1),
        ]),
    );
    for (line, capability) in [(&lines[0], "`elicitation`"), (&lines[1], "`sampling`")] {
        let text = text_of(&line["result"]);
        assert_eq!(line["result"]["isError"], true, "{lines:?}");
        assert!(text.starts_with("refused: -32601"), "{text}");
        assert!(
            text.contains(capability) && text.contains("did not declare"),
            "{text}"
        );
    }
    assert_eq!(
        text_of(&lines[2]["result"]),
        "roots: file:///r",
        "{lines:?}"
    );

    // The Python client answers as asked in both eras: in 2026-07-28, which cannot be sent
    // requests, in rounds of input_required.
    let answers = json!({"name": "py", "roots": ["file:///py"]});
    let call = json!([
        {"do": "call", "name": "mcp__t__ask_client", "arguments": {"what": "elicitation"}},
        {"do": "call", "name": "mcp__t__ask_client", "arguments": {"what": "roots"}},
        {"do": "asked"},
    ]);
    for mode in ["legacy", "auto"] {
        let mut with_answers = target.clone();
        with_answers["answers"] = answers.clone();
        let lines = py_client(with_answers, mode, call.clone());
        assert_eq!(
            text_of(&lines[0]["result"]),
            "name: py",
            "{mode}: {lines:?}"
        );
        assert_eq!(
            text_of(&lines[1]["result"]),
            "roots: file:///py",
            "{mode}: {lines:?}"
        );
        assert_eq!(
            lines[2]["asked"],
            json!(["elicitation/create", "roots/list"]),
            "{mode}: {lines:?}"
        );
    }
    // Without the capability, a 2026-07-28 client is refused as cleanly.
    let lines = py_client(target, "auto", call);
    let text = text_of(&lines[0]["result"]);
    assert!(
        text.starts_with("refused: -32601") && text.contains("did not declare"),
        "{lines:?}"
    );
}

#[test]
fn calls_of_two_sessions_on_a_stdio_server_cannot_be_told_apart_so_its_request_is_refused() {
    // stdio says nothing of which call a request belongs to: with calls of two sessions in
    // flight it is refused, never shown to the wrong one; calls of one session are that
    // session's.
    let sandbox = with_testserver(&["--era", "handshake"]);
    let served = Served::start(&sandbox, &[]);
    let lines = ts_sessions(
        served.target(),
        json!([answering("ada"), answering("grace")]),
        json!([
            // Each call stays open until both are answered: no request of the pair can come
            // while only one call is in flight.
            {"do": "parallel", "actions": [lingering(ask_client(0, "elicitation", 2)), lingering(ask_client(1, "elicitation", 2))]},
            {"do": "parallel", "actions": [ask_client(0, "elicitation", 2), ask_client(0, "elicitation", 2)]},
            {"do": "asked", "session": 1},
        ]),
    );
    for i in 0..2 {
        let text = parallel_text(&lines[0], i);
        assert!(
            text.contains("cannot be tied to one tool call"),
            "{lines:?}"
        );
    }
    assert_eq!(parallel_text(&lines[1], 0), "name: ada", "{lines:?}");
    assert_eq!(parallel_text(&lines[1], 1), "name: ada", "{lines:?}");
    assert_eq!(lines[2]["asked"], json!([]), "{lines:?}");
}

#[test]
fn a_policy_ask_is_an_elicitation_to_the_calling_client_and_its_answer_is_honoured() {
    let sandbox = Sandbox::new();
    let config = sandbox.home.join("gateway.toml");
    sandbox.write_file(
        &config,
        &format!(
            "[servers.t]\ncommand = {:?}\n\n[policy]\nask = [\"mcp__t__echo\"]\n",
            testserver().to_str().unwrap()
        ),
    );
    let served = Served::start(&sandbox, &["--config", config.to_str().unwrap()]);
    let elicits = json!({"elicitation": {}});
    let echo = |session: usize| {
        json!({"do": "call", "session": session, "name": "mcp__t__echo",
               "arguments": {"text": "may I \u{1b}[2J"}})
    };
    let lines = ts_sessions(
        served.target(),
        json!([
            {"capabilities": elicits, "approve": true},
            {"capabilities": elicits, "approve": false},
            {"capabilities": elicits, "action": "decline"},
            {"capabilities": {}},
        ]),
        json!([echo(0), echo(1), echo(2), echo(3), {"do": "asked", "session": 0}]),
    );
    assert_eq!(
        text_of(&lines[0]["result"]),
        "may I \u{1b}[2J",
        "approved: {lines:?}"
    );
    for (line, why) in [
        (&lines[1], "answered no"),
        (&lines[2], "declined"),
        // No elicitation: the hub's approver, which refuses without --yes.
        (&lines[3], "needs approval"),
    ] {
        assert_eq!(line["result"]["isError"], true, "{lines:?}");
        let text = text_of(&line["result"]);
        assert!(
            text.contains("mcp__t__echo") && text.contains(why),
            "{text}"
        );
    }
    let message = lines[4]["asked"][0]["message"].as_str().unwrap();
    assert!(message.contains("`mcp__t__echo`"), "{message}");
    assert!(
        message.contains("\\u001b") && !message.contains('\u{1b}'),
        "the arguments are shown escaped: {message}"
    );

    // A 2026-07-28 client is asked in a round of input_required.
    let echo = json!([
        {"do": "call", "name": "mcp__t__echo", "arguments": {"text": "may I"}},
        {"do": "asked"},
    ]);
    for (approve, expected) in [(true, "may I"), (false, "answered no")] {
        let mut target = served.target();
        target["answers"] = json!({"approve": approve});
        let lines = py_client(target, "auto", echo.clone());
        assert!(
            text_of(&lines[0]["result"]).contains(expected),
            "approve {approve}: {lines:?}"
        );
        assert_eq!(
            lines[1]["asked"],
            json!(["elicitation/create"]),
            "{lines:?}"
        );
    }
}

#[test]
fn with_ask_deny_a_policy_ask_is_refused_and_never_put_to_the_client() {
    let sandbox = Sandbox::new();
    let config = sandbox.home.join("gateway.toml");
    sandbox.write_file(
        &config,
        &format!(
            "[servers.t]\ncommand = {:?}\n\n[policy]\nask = [\"mcp__t__echo\"]\n",
            testserver().to_str().unwrap()
        ),
    );
    let served = Served::start(
        &sandbox,
        &["--config", config.to_str().unwrap(), "--ask", "deny"],
    );
    let lines = ts_sessions(
        served.target(),
        json!([{"capabilities": {"elicitation": {}}, "approve": true}]),
        json!([
            {"do": "call", "session": 0, "name": "mcp__t__echo", "arguments": {"text": "mine"}},
            {"do": "asked", "session": 0},
        ]),
    );
    // An agent that would approve its own call is not asked: the hub's approver refuses.
    assert_eq!(lines[0]["result"]["isError"], true, "{lines:?}");
    assert!(
        text_of(&lines[0]["result"]).contains("needs approval"),
        "{lines:?}"
    );
    assert_eq!(lines[1]["asked"], json!([]), "{lines:?}");
}

#[test]
fn the_reference_server_s_sampling_and_elicitation_tools_reach_the_calling_client() {
    // server-everything lists these tools only to a client that offers sampling and
    // elicitation: the gateway offers them upstream, and passes each request on.
    let sandbox = Sandbox::with_user_servers(json!({
        "everything": { "command": npm_bin("mcp-server-everything"), "args": [] }
    }));
    let lines = ts_sessions(
        json!({ "stdio": stdio_target(&sandbox, &[]) }),
        json!([answering("ada")]),
        json!([
            {"do": "call", "name": "mcp__everything__trigger-sampling-request",
             "arguments": {"prompt": "hi", "maxTokens": 10}},
            {"do": "call", "name": "mcp__everything__trigger-elicitation-request"},
            {"do": "asked"},
        ]),
    );
    let sampled = text_of(&lines[0]["result"]);
    assert!(sampled.contains("hello from ada"), "{lines:?}");
    let elicited = lines[1]["result"].to_string();
    assert!(elicited.contains("Name: ada"), "{lines:?}");
    assert_eq!(lines[2]["asked"].as_array().unwrap().len(), 2, "{lines:?}");
}

#[test]
fn a_2026_server_is_told_what_each_handshake_session_declared_for_its_own_call() {
    // The gateway could answer all three for some client; each call's server is told only
    // what the calling session declared in its initialize, and asks for that alone.
    let upstream = testserver_http(&["--conformance"]);
    let sandbox = Sandbox::with_user_servers(json!({
        "c": { "type": "http", "url": upstream.url }
    }));
    let served = Served::start(&sandbox, &["--passthrough"]);
    let call = |session: usize| {
        json!({"do": "call", "session": session,
               "name": "test_input_required_result_capabilities", "arguments": {}})
    };
    let lines = ts_sessions(
        served.target(),
        json!([
            {"capabilities": {"elicitation": {}}, "name": "ada"},
            answering("grace"),
        ]),
        json!([
            {"do": "parallel", "actions": [call(0), call(1)]},
            {"do": "asked", "session": 0},
        ]),
    );
    assert_eq!(
        parallel_text(&lines[0], 0),
        "answered: user_name",
        "{lines:?}"
    );
    let all = parallel_text(&lines[0], 1);
    let mut keys: Vec<&str> = all
        .strip_prefix("answered: ")
        .unwrap_or_else(|| panic!("{lines:?}"))
        .split(", ")
        .collect();
    keys.sort_unstable();
    assert_eq!(keys, ["client_roots", "greeting", "user_name"], "{lines:?}");
    assert_eq!(
        lines[1]["asked"][0]["method"], "elicitation/create",
        "{lines:?}"
    );
    assert_eq!(lines[1]["asked"].as_array().unwrap().len(), 1, "{lines:?}");
}
