//! `mcpmux serve` serving resources, resource templates and prompts, driven by the official
//! SDK clients (TypeScript: the handshake era; Python: 2026-07-28 and the handshake) over
//! stdio and HTTP, with the reference server-everything (resources, templates, prompts) and the
//! test server (one resource, no prompts) behind it: URIs kept and reads routed to the server
//! that lists them, prompts named `mcp__SERVER__PROMPT`, errors passed on, and capabilities
//! declared only when some upstream offers them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mcpmux_test_support as support;

use serde_json::{Value, json};
use support::*;

/// server-everything as `everything` and the test server as `t`.
fn sandbox() -> Sandbox {
    Sandbox::with_user_servers(json!({
        "everything": { "command": npm_bin("mcp-server-everything"), "args": [] },
        "t": { "command": testserver(), "args": [] },
    }))
}

/// What every client does: the capabilities, every listing, reads across both servers, two
/// prompts filled in, and three failures.
fn actions() -> Value {
    json!([
        {"do": "capabilities"},
        {"do": "resources"},
        {"do": "templates"},
        {"do": "read", "uri": "demo://resource/dynamic/text/1"},
        {"do": "read", "uri": "test://counter"},
        {"do": "prompts"},
        {"do": "get_prompt", "name": "mcp__everything__args-prompt", "arguments": {"city": "Lisbon"}},
        {"do": "get_prompt", "name": "mcp__everything__simple-prompt"},
        {"do": "get_prompt", "name": "mcp__nope__prompt"},
        {"do": "get_prompt", "name": "mcp__everything__args-prompt"},
        {"do": "read", "uri": "demo://resource/nope/1"},
    ])
}

/// The line an action printed (they print one each, in order).
fn line<'a>(lines: &'a [Value], index: usize, who: &str) -> &'a Value {
    lines
        .get(index)
        .unwrap_or_else(|| panic!("{who}: no line {index}: {lines:?}"))
}

#[track_caller]
fn assert_served(lines: &[Value], who: &str) {
    let capabilities = &line(lines, 0, who)["capabilities"];
    assert!(
        capabilities["resources"].is_object(),
        "{who}: {capabilities}"
    );
    assert!(capabilities["prompts"].is_object(), "{who}: {capabilities}");

    let resources = line(lines, 1, who)["resources"].as_array().unwrap();
    let uris: Vec<&str> = resources
        .iter()
        .map(|r| r["uri"].as_str().unwrap())
        .collect();
    assert!(uris.contains(&"test://counter"), "{who}: {uris:?}");
    assert!(
        uris.iter().any(|u| u.starts_with("demo://resource/")),
        "{who}: {uris:?}"
    );
    assert!(
        resources.iter().all(|r| r.get("server").is_none()),
        "{who}: the hub's own field leaked: {resources:?}"
    );

    let templates = line(lines, 2, who)["templates"].as_array().unwrap();
    assert!(
        templates
            .iter()
            .any(|t| t["uriTemplate"] == "demo://resource/dynamic/text/{resourceId}"),
        "{who}: {templates:?}"
    );

    let text = &line(lines, 3, who)["contents"][0];
    assert_eq!(
        text["uri"], "demo://resource/dynamic/text/1",
        "{who}: {lines:?}"
    );
    assert!(
        !text["text"].as_str().unwrap_or_default().is_empty(),
        "{who}: {text}"
    );
    let counter = &line(lines, 4, who)["contents"][0];
    assert_eq!(counter["uri"], "test://counter", "{who}: {lines:?}");

    let prompts = line(lines, 5, who)["prompts"].as_array().unwrap();
    let args_prompt = prompts
        .iter()
        .find(|p| p["name"] == "mcp__everything__args-prompt")
        .unwrap_or_else(|| panic!("{who}: {prompts:?}"));
    assert!(
        args_prompt["arguments"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a["name"] == "city" && a["required"] == true),
        "{who}: {args_prompt}"
    );
    assert!(
        prompts
            .iter()
            .all(|p| p["name"].as_str().unwrap().starts_with("mcp__everything__")),
        "{who}: {prompts:?}"
    );

    let filled = &line(lines, 6, who)["prompt"];
    assert_eq!(filled["messages"][0]["role"], "user", "{who}: {filled}");
    assert!(filled.to_string().contains("Lisbon"), "{who}: {filled}");
    assert!(
        line(lines, 7, who)["prompt"]["messages"][0].is_object(),
        "{who}: {lines:?}"
    );

    let unknown = line(lines, 8, who);
    assert_eq!(unknown["code"], -32602, "{who}: {unknown}");
    assert!(
        unknown["error"]
            .as_str()
            .unwrap()
            .contains("mcp__nope__prompt"),
        "{who}: {unknown}"
    );
    let missing_argument = line(lines, 9, who);
    assert!(
        missing_argument["error"].is_string(),
        "{who}: {missing_argument}"
    );
    assert!(
        missing_argument["error"]
            .as_str()
            .unwrap()
            .contains("server `everything`"),
        "{who}: {missing_argument}"
    );
    let missing = line(lines, 10, who);
    assert!(missing["error"].is_string(), "{who}: {missing}");
}

#[test]
fn sdk_clients_list_read_and_get_resources_and_prompts_through_serve_over_stdio() {
    let sandbox = sandbox();
    let target = json!({ "stdio": stdio_target(&sandbox, &[]) });
    let ts = ts_client(target.clone(), actions());
    assert_served(&ts, "TypeScript client (handshake)");
    let modern = py_client(target.clone(), "auto", actions());
    assert_served(&modern, "Python client (2026-07-28)");
    let legacy = py_client(target, "legacy", actions());
    assert_served(&legacy, "Python client (handshake)");
}

#[test]
fn sdk_clients_list_read_and_get_resources_and_prompts_through_serve_over_http() {
    let sandbox = sandbox();
    let served = Served::start(&sandbox, &[]);
    let ts = ts_client(served.target(), actions());
    assert_served(&ts, "TypeScript client over HTTP (session)");
    let modern = py_client(served.target(), "auto", actions());
    assert_served(&modern, "Python client over HTTP (stateless 2026-07-28)");
    let legacy = py_client(served.target(), "legacy", actions());
    assert_served(&legacy, "Python client over HTTP (session)");
}

#[test]
fn prompts_are_declared_only_when_an_upstream_offers_them_and_scope_hides_a_server() {
    // The test server offers resources but no prompts.
    let sandbox = with_testserver(&[]);
    let lines = ts_client(
        json!({ "stdio": stdio_target(&sandbox, &[]) }),
        json!([{"do": "capabilities"}, {"do": "resources"}]),
    );
    let capabilities = &lines[0]["capabilities"];
    assert!(capabilities["resources"].is_object(), "{capabilities}");
    assert!(capabilities.get("prompts").is_none(), "{capabilities}");
    assert!(capabilities["tools"].is_object(), "{capabilities}");

    // server-everything only for the `build` stage: served as `plan/coder`, neither its
    // resources nor its prompts are.
    let sandbox = Sandbox::new();
    let config = sandbox.home.join("gateway.toml");
    sandbox.write_file(
        &config,
        &format!(
            "[servers.t]\ncommand = {:?}\n\n[servers.everything]\ncommand = {:?}\n\
             stages = [\"build\"]\n",
            testserver().to_str().unwrap(),
            npm_bin("mcp-server-everything").to_str().unwrap(),
        ),
    );
    let args = [
        "--config",
        config.to_str().unwrap(),
        "--scope",
        "plan/coder",
    ];
    let lines = py_client(
        json!({ "stdio": stdio_target(&sandbox, &args) }),
        "legacy",
        json!([{"do": "capabilities"}, {"do": "resources"}]),
    );
    let capabilities = &lines[0]["capabilities"];
    assert!(capabilities.get("prompts").is_none(), "{capabilities}");
    let uris: Vec<&str> = lines[1]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["uri"].as_str().unwrap())
        .collect();
    assert_eq!(uris, ["test://counter"], "{lines:?}");
}
