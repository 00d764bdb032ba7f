//! `mcpmux serve --http`'s `/metrics`, scraped after real calls by the TypeScript SDK client:
//! calls, errors and latency per server and tool, the servers' states, the open sessions; a
//! server name with a quote, a backslash and a line feed (config keys may hold anything)
//! escaped so the exposition stays parseable; the door's rules (`Host`, token) hold for it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mcpmux_test_support as support;

use serde_json::json;
use support::*;

/// The server whose name would break an unescaped exposition.
const WEIRD: &str = "we\"i\\rd\nname";

/// The value of the sample line that starts with `series` (name and labels, exactly).
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
        .and_then(|value| value.split_whitespace().next()?.parse().ok())
}

/// Every line is a comment or `name{labels} value`, with every label value a closed quoted
/// string: no value ran past its quotes or onto the next line.
fn assert_parseable(text: &str) {
    assert!(text.trim_end().ends_with("# EOF"), "{text}");
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let (name, rest) = line.split_at(line.find(['{', ' ']).unwrap_or(line.len()));
        assert!(
            name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') && !name.is_empty(),
            "{line:?}"
        );
        let mut rest = rest;
        if let Some(labels) = rest.strip_prefix('{') {
            let mut chars = labels.char_indices();
            let mut end = None;
            let mut quoted = false;
            while let Some((i, c)) = chars.next() {
                match (quoted, c) {
                    (true, '\\') => {
                        chars.next();
                    }
                    (_, '"') => quoted = !quoted,
                    (false, '}') => {
                        end = Some(i);
                        break;
                    }
                    _ => {}
                }
            }
            let end = end.unwrap_or_else(|| panic!("labels never closed: {line:?}"));
            rest = &labels[end + 1..];
        }
        let value = rest.trim();
        assert!(value.parse::<f64>().is_ok() || value == "+Inf", "{line:?}");
    }
}

#[test]
fn metrics_count_calls_errors_and_latency_per_server_and_tool_with_names_escaped() {
    let sandbox = Sandbox::with_user_servers(json!({
        "t": { "command": testserver(), "args": [] },
        WEIRD: { "command": testserver(), "args": [] },
    }));
    let served = Served::start(&sandbox, &[]);
    let lines = ts_client(
        served.target(),
        json!([
            {"do": "list"},
            {"do": "call", "name": "mcp__t__echo", "arguments": {"text": "one"}},
            {"do": "call", "name": "mcp__t__echo", "arguments": {"text": "two"}},
            {"do": "call", "name": "mcp__t__echo", "arguments": {"text": 5}},
            {"do": "call", "name": "mcp__we_i_rd_name__echo", "arguments": {"text": "odd"}},
            {"do": "call", "name": "mcp__nobody__nothing", "arguments": {}},
        ]),
    );
    assert_eq!(text_of(&lines[1]["result"]), "one", "{lines:?}");
    assert_eq!(lines[3]["result"]["isError"], true, "{lines:?}");
    assert_eq!(text_of(&lines[4]["result"]), "odd", "{lines:?}");
    assert!(lines[5]["error"].is_string(), "{lines:?}");
    // One session still open while scraping.
    let (status, _) = post_initialize(&served.url, &[]);
    assert_eq!(status, 200);

    let (status, body) = http_get(&served.url, "/metrics", &[]);
    assert_eq!(status, 200, "{body}");
    let text = unchunk(&body);
    assert_parseable(&text);
    let echo = r#"{server="t",tool="mcp__t__echo"}"#;
    assert_eq!(
        sample(&text, &format!("mcpmux_gateway_calls_total{echo}")),
        Some(3.0),
        "{text}"
    );
    assert_eq!(
        sample(&text, &format!("mcpmux_gateway_call_errors_total{echo}")),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        sample(
            &text,
            &format!("mcpmux_gateway_call_duration_seconds_count{echo}")
        ),
        Some(3.0),
        "{text}"
    );
    assert!(
        sample(
            &text,
            &format!("mcpmux_gateway_call_duration_seconds_sum{echo}")
        )
        .unwrap()
            > 0.0,
        "{text}"
    );
    let weird = r#"{server="we\"i\\rd\nname",tool="mcp__we_i_rd_name__echo"}"#;
    assert_eq!(
        sample(&text, &format!("mcpmux_gateway_calls_total{weird}")),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        sample(&text, r#"mcpmux_gateway_calls_total{server="",tool=""}"#),
        Some(1.0),
        "an unknown name is counted without its name as a label: {text}"
    );
    assert!(!text.contains("nobody"), "{text}");
    assert_eq!(
        sample(
            &text,
            r#"mcpmux_gateway_server_state{server="t",state="connected"}"#
        ),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        sample(
            &text,
            r#"mcpmux_gateway_server_state{server="t",state="failed"}"#
        ),
        Some(0.0),
        "{text}"
    );
    assert!(
        sample(&text, "mcpmux_gateway_sessions").unwrap() >= 1.0,
        "{text}"
    );

    // A browser page on another name (DNS rebinding) cannot read it.
    let (status, _) = http_get(&served.url, "/metrics", &[("Host", "evil.example")]);
    assert_eq!(status, 403);
}

#[test]
fn with_a_token_metrics_wants_it_too() {
    let sandbox = with_testserver(&[]);
    let mut cmd = sandbox.command(&["serve", "--http", "127.0.0.1:0"]);
    cmd.env("MCPMUX_GATEWAY_TOKEN", "metrics-token-1");
    let served = Served::spawn(cmd);
    let (status, _) = http_get(&served.url, "/metrics", &[]);
    assert_eq!(status, 401);
    let (status, body) = http_get(
        &served.url,
        "/metrics",
        &[("Authorization", "Bearer metrics-token-1")],
    );
    assert_eq!(status, 200, "{body}");
    assert!(unchunk(&body).contains("mcpmux_gateway_sessions"), "{body}");
    // Probes stay open: a load balancer or kubelet has no token.
    let (status, _) = http_get(&served.url, "/healthz", &[]);
    assert_eq!(status, 200);
}
