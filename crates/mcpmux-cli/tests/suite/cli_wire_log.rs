//! `--wire-log FILE`: every JSON-RPC message to and from each server, in order, one JSON line
//! each, for a stdio server, a streamable HTTP server and through `mcpmux serve`; a secret
//! planted in the config (an environment value, a header) and echoed by the server never
//! appears in it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use serde_json::{Value, json};

use crate::support::*;

const SECRET: &str = "planted-Wire-S3cret-7731";

fn wire(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(
        !text.contains(SECRET),
        "the planted secret was written: {text}"
    );
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// `server`'s messages, each with its direction.
fn of<'a>(lines: &'a [Value], server: &str) -> Vec<(&'a str, &'a Value)> {
    lines
        .iter()
        .filter(|l| l["server"] == server)
        .map(|l| (l["dir"].as_str().unwrap(), &l["message"]))
        .collect()
}

/// Every answer received came after the request it answers, sent under its id, and the
/// `tools/call` of `tool` went with `arguments` and came back with `text`.
fn assert_replays(messages: &[(&str, &Value)], tool: &str, arguments: Value, text: &str) {
    for (at, (dir, message)) in messages.iter().enumerate() {
        let is_answer = message.get("method").is_none() && message.get("id").is_some();
        if *dir == "recv" && is_answer {
            let asked = messages[..at].iter().any(|(d, m)| {
                *d == "send" && m["id"] == message["id"] && m.get("method").is_some()
            });
            assert!(
                asked,
                "{message} answers nothing sent before it: {messages:#?}"
            );
        }
    }
    let (at, call) = messages
        .iter()
        .enumerate()
        .find(|(_, (dir, m))| *dir == "send" && m["method"] == "tools/call")
        .map(|(at, (_, m))| (at, *m))
        .unwrap_or_else(|| panic!("no tools/call in {messages:#?}"));
    assert_eq!(call["params"]["name"], tool);
    assert_eq!(call["params"]["arguments"], arguments);
    let answer = messages[at + 1..]
        .iter()
        .find(|(dir, m)| *dir == "recv" && m["id"] == call["id"])
        .unwrap()
        .1;
    assert_eq!(answer["result"]["content"][0]["text"], text, "{answer}");
}

#[test]
fn the_wire_log_of_a_stdio_and_an_http_server_holds_each_message_in_order_without_the_secret() {
    let http = testserver_http(&[]);
    let sandbox = Sandbox::with_user_servers(json!({
        "ts": {"command": testserver(), "args": [], "env": {"API_TOKEN": SECRET}},
        "web": {"url": http.url, "headers": {"Authorization": format!("Bearer {SECRET}")}},
    }));
    let log = sandbox.home.join("wire.jsonl");
    let log_arg = log.to_str().unwrap();
    let said = format!("{{\"text\":\"say {SECRET}\"}}");
    let run = sandbox.run(&["call", "mcp__ts__echo", &said, "--wire-log", log_arg]);
    assert_code(&run, 0);
    let run = sandbox.run_with_env(
        &["call", "mcp__web__echo", r#"{"text":"over http"}"#],
        &[("MCPMUX_WIRE_LOG", log_arg)],
    );
    assert_code(&run, 0);

    let lines = wire(&log);
    assert!(lines.iter().all(|l| l["ts"].is_string()), "{lines:#?}");
    let stdio = of(&lines, "ts");
    assert_replays(
        &stdio,
        "echo",
        json!({"text": "say [redacted]"}),
        "say [redacted]",
    );
    let web = of(&lines, "web");
    assert_replays(&web, "echo", json!({"text": "over http"}), "over http");
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&log).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o600);
}

#[test]
fn the_wire_log_of_serve_holds_what_a_client_s_call_sent_upstream() {
    let sandbox = with_testserver(&[]);
    let log = sandbox.home.join("wire.jsonl");
    let served = Served::start(&sandbox, &["--wire-log", log.to_str().unwrap()]);
    let lines = ts_client(
        served.target(),
        json!([{"do": "call", "name": "mcp__t__echo", "arguments": {"text": "through"}}]),
    );
    assert_eq!(text_of(&lines[0]["result"]), "through", "{lines:?}");
    drop(served);
    let lines = wire(&log);
    assert_replays(
        &of(&lines, "t"),
        "echo",
        json!({"text": "through"}),
        "through",
    );
}

#[test]
fn the_wire_log_of_serve_over_stdio_holds_both_sides_in_order_without_the_secret() {
    let sandbox = Sandbox::with_user_servers(json!({
        "t": {"command": testserver(), "args": [], "env": {"API_TOKEN": SECRET}},
    }));
    let log = sandbox.home.join("wire.jsonl");
    let said = format!("say {SECRET}");
    let lines = ts_client(
        json!({ "stdio": stdio_target(&sandbox, &["--wire-log", log.to_str().unwrap()]) }),
        json!([{"do": "call", "name": "mcp__t__echo", "arguments": {"text": said}}]),
    );
    assert!(lines[0]["result"].is_object(), "{lines:?}");
    let lines = wire(&log);
    // Upstream: the hub's call to the server, the secret it echoed redacted.
    assert_replays(
        &of(&lines, "t"),
        "echo",
        json!({"text": "say [redacted]"}),
        "say [redacted]",
    );
    // Downstream: the client's call received, the gateway's answer sent after it.
    let client = of(&lines, "(client)");
    let flipped: Vec<(&str, &Value)> = client
        .iter()
        .map(|(dir, m)| (if *dir == "recv" { "send" } else { "recv" }, *m))
        .collect();
    assert_replays(
        &flipped,
        "mcp__t__echo",
        json!({"text": "say [redacted]"}),
        "say [redacted]",
    );
    // In the file's order: the client's call, then the call upstream, its answer, then the
    // client's answer.
    assert_call_in_order(&lines, "(client)", "t");
}

/// A sandbox whose server `t` gets `SECRET` from the secrets file (`${secret:gh}`) in its
/// environment.
fn with_planted_secret() -> Sandbox {
    let sandbox = Sandbox::with_user_servers(json!({
        "t": {"command": testserver(), "args": [], "env": {"API_TOKEN": "${secret:gh}"}},
    }));
    let run = sandbox.run_with_stdin(&["secret", "set", "gh"], Some(SECRET));
    assert_code(&run, 0);
    sandbox
}

/// `value` as the wire log shows it: the planted secret redacted.
fn redacted(value: &Value) -> Value {
    serde_json::from_str(&value.to_string().replace(SECRET, "[redacted]")).unwrap()
}

/// The names the log gives the gateway's clients over HTTP, in the order they first appear.
fn clients(lines: &[Value]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for line in lines {
        let name = line["server"].as_str().unwrap();
        if name.starts_with("client:") && !names.iter().any(|n| n == name) {
            names.push(name.to_string());
        }
    }
    names
}

/// In the file's order: `client`'s `tools/call` received, the call sent to `server`, its
/// answer, then the answer sent to `client`.
#[track_caller]
fn assert_call_in_order(lines: &[Value], client: &str, server: &str) {
    let at = |peer: &str, dir: &str, answer: bool| {
        lines
            .iter()
            .position(|l| {
                l["server"] == peer
                    && l["dir"] == dir
                    && (l["message"]["method"] == "tools/call") != answer
                    && (!answer || l["message"]["result"]["content"].is_array())
            })
            .unwrap_or_else(|| panic!("no {dir} of {peer}: {lines:#?}"))
    };
    let order = [
        at(client, "recv", false),
        at(server, "send", false),
        at(server, "recv", true),
        at(client, "send", true),
    ];
    assert!(
        order.windows(2).all(|w| w[0] < w[1]),
        "{order:?}: {lines:#?}"
    );
}

/// The TypeScript SDK client (handshake era) on `target`, calling `mcp__t__echo` with the
/// planted secret: every message it sent and received, in order.
fn ts_wire(mut target: Value) -> Vec<Value> {
    target["wire"] = json!(true);
    let said = format!("say {SECRET}");
    let lines = ts_client(
        target,
        json!([{"do": "call", "name": "mcp__t__echo", "arguments": {"text": said}}]),
    );
    assert_eq!(text_of(&lines[0]["result"]), said, "{lines:?}");
    lines[1]["wire"].as_array().unwrap().clone()
}

#[test]
fn the_wire_log_of_serve_over_http_and_legacy_sse_holds_each_client_message_as_sent() {
    let sandbox = with_planted_secret();
    let log = sandbox.home.join("wire.jsonl");
    let served = Served::start(&sandbox, &["--wire-log", log.to_str().unwrap()]);
    let sse = served.url.replace("/mcp", "/sse");
    let mut seen = 0;
    for (transport, target) in [("/mcp", served.target()), ("/sse", json!({ "sse": sse }))] {
        let sent = ts_wire(target);
        let lines = wire(&log)[seen..].to_vec();
        seen += lines.len();
        // One session, one name, with no trace of its id.
        let names = clients(&lines);
        assert_eq!(names.len(), 1, "{transport}: {names:?}");
        let client = &names[0];
        assert_eq!(client.len(), "client:".len() + 16, "{client}");
        assert_call_in_order(&lines, client, "t");
        assert_replays(
            &of(&lines, "t"),
            "echo",
            json!({"text": "say [redacted]"}),
            "say [redacted]",
        );
        // What the client sent, received in the same order; what it received, sent.
        let logged = of(&lines, client);
        for (client_dir, log_dir) in [("send", "recv"), ("recv", "send")] {
            let by_client: Vec<Value> = sent
                .iter()
                .filter(|m| m["dir"] == client_dir)
                .map(|m| redacted(&m["message"]))
                .collect();
            let by_log: Vec<Value> = logged
                .iter()
                .filter(|(dir, _)| *dir == log_dir)
                .map(|(_, m)| (*m).clone())
                .collect();
            assert!(!by_client.is_empty(), "{transport}: {sent:#?}");
            assert_eq!(by_log, by_client, "{transport}: the client's {client_dir}");
        }
    }
    drop(served);
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(!text.contains("sessionId"), "a legacy session id: {text}");
}

#[test]
fn the_wire_log_of_serve_over_http_in_the_2026_era_holds_the_client_s_side_without_the_token() {
    let sandbox = with_planted_secret();
    let log = sandbox.home.join("wire.jsonl");
    let token = "gateway-Bearer-T0ken-5521";
    let mut cmd = sandbox.command(&[
        "serve",
        "--http",
        "127.0.0.1:0",
        "--wire-log",
        log.to_str().unwrap(),
    ]);
    cmd.env("MCPMUX_GATEWAY_TOKEN", token);
    let served = Served::spawn(cmd);
    let mut target = served.target();
    target["headers"] = json!({"Authorization": format!("Bearer {token}")});
    let said = format!("say {SECRET}");
    let lines = py_client(
        target,
        "auto",
        json!([
            {"do": "version"},
            {"do": "call", "name": "mcp__t__echo", "arguments": {"text": said}},
        ]),
    );
    assert_eq!(lines[0]["protocol"], "2026-07-28", "{lines:?}");
    let received = &lines[1]["result"];
    assert_eq!(text_of(received), said, "{lines:?}");
    drop(served);

    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        !text.contains(token),
        "the bearer token was written: {text}"
    );
    let lines = wire(&log);
    assert_call_in_order(&lines, "client:stateless", "t");
    let client = of(&lines, "client:stateless");
    let call = client
        .iter()
        .find(|(dir, m)| *dir == "recv" && m["method"] == "tools/call")
        .unwrap()
        .1;
    assert_eq!(call["params"]["name"], "mcp__t__echo");
    assert_eq!(call["params"]["arguments"]["text"], "say [redacted]");
    let answer = client
        .iter()
        .find(|(dir, m)| *dir == "send" && m["id"] == call["id"])
        .unwrap()
        .1;
    // What the client got, as the log shows it (the SDK prints its model: every field it
    // knows, absent ones as null).
    let mut got = redacted(received);
    drop_nulls(&mut got);
    assert_eq!(answer["result"], got);
}

fn drop_nulls(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.retain(|_, v| !v.is_null());
            map.values_mut().for_each(drop_nulls);
        }
        Value::Array(items) => items.iter_mut().for_each(drop_nulls),
        _ => {}
    }
}
