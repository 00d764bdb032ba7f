//! OpenTelemetry end to end: `mcpmux serve --http` with `OTEL_EXPORTER_OTLP_ENDPOINT` pointing
//! at a real OTLP/HTTP receiver (`tests/otlp/receiver.py`, decoding what the exporter sends),
//! called by the official TypeScript SDK client carrying a `traceparent` in `_meta`: the
//! gateway's span continues the client's trace, the hub's call span is its child, and the test
//! server receives the same trace in its request's `_meta`, the hub's span as its parent; each
//! way a call can end is its own outcome on its span.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::*;

/// The client's trace and its own (unexported) span.
const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CLIENT_SPAN: &str = "00f067aa0ba902b7";

/// The OTLP receiver, killed when dropped.
struct Receiver {
    child: Child,
    port: u16,
    spans: PathBuf,
}

impl Receiver {
    fn start(dir: &Path) -> Receiver {
        Receiver::start_with(dir, &[])
    }

    /// The receiver with `args` after its file (`--grpc-tls DIR`).
    fn start_with(dir: &Path, args: &[&str]) -> Receiver {
        let spans = dir.join("spans.jsonl");
        let mut child = Command::new(venv_bin("python"))
            .arg(workspace().join("crates/mcpmux-cli/tests/otlp/receiver.py"))
            .arg(&spans)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start the OTLP receiver");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line
            .trim()
            .strip_prefix("listening on ")
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("the receiver said {line:?}"));
        Receiver { child, port, spans }
    }

    /// The spans received so far.
    fn spans(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.spans)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// Waits until `pred` holds of the spans received.
    fn until(&self, what: &str, pred: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        eventually_blocking(Duration::from_secs(20), Duration::from_millis(50), || {
            let spans = self.spans();
            pred(&spans).then_some(spans)
        })
        .unwrap_or_else(|| panic!("never received {what}: {:#?}", self.spans()))
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `mcpmux serve --http` over `config`, exporting to `receiver`.
fn served(sandbox: &Sandbox, config: &Path, receiver: &Receiver) -> Served {
    served_with(sandbox, config, receiver, &[])
}

/// `mcpmux serve --http` over `config` with `extra` arguments, exporting to `receiver`.
fn served_with(sandbox: &Sandbox, config: &Path, receiver: &Receiver, extra: &[&str]) -> Served {
    let mut args = vec![
        "serve",
        "--http",
        "127.0.0.1:0",
        "--config",
        config.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let mut cmd = sandbox.command(&args);
    cmd.env(
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        format!("http://127.0.0.1:{}", receiver.port),
    )
    .env("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
    .env("OTEL_SERVICE_NAME", "gateway-under-test")
    // Exported every 100 ms rather than every 5 s.
    .env("OTEL_BSP_SCHEDULE_DELAY", "100");
    Served::spawn(cmd)
}

/// `mcpmux serve --http` over one server, `t` (the test server with a call log and `args`),
/// exporting to a receiver of its own; each ends (the gateway first) when dropped.
struct Traced {
    served: Served,
    receiver: Receiver,
    calls: PathBuf,
    _sandbox: Sandbox,
}

impl Traced {
    fn start(args: &[&str]) -> Traced {
        let sandbox = Sandbox::new();
        let calls = sandbox.project.join("calls.jsonl");
        let config = sandbox.home.join("gateway.toml");
        let mut argv = vec!["--call-log", calls.to_str().unwrap()];
        argv.extend_from_slice(args);
        sandbox.write_file(
            &config,
            &format!(
                "[servers.t]\ncommand = {:?}\nargs = {:?}\n",
                testserver().to_str().unwrap(),
                argv
            ),
        );
        let receiver = Receiver::start(&sandbox.home);
        let served = served(&sandbox, &config, &receiver);
        Traced {
            served,
            receiver,
            calls,
            _sandbox: sandbox,
        }
    }
}

fn named<'a>(spans: &'a [Value], name: &str, kind: i64) -> Option<&'a Value> {
    spans
        .iter()
        .find(|s| s["name"] == name && s["kind"] == kind && s["trace"] == TRACE)
}

/// OTLP span kinds.
const SERVER: i64 = 2;
const CLIENT: i64 = 3;

#[test]
fn a_traced_call_through_serve_continues_the_client_s_trace_to_the_upstream_server() {
    let traced = Traced::start(&[]);
    let (served, receiver, calls) = (&traced.served, &traced.receiver, &traced.calls);
    let traceparent = format!("00-{TRACE}-{CLIENT_SPAN}-01");
    let lines = ts_client(
        served.target(),
        json!([{"do": "call", "name": "mcp__t__echo", "arguments": {"text": "traced"},
                 "meta": {"traceparent": traceparent}}]),
    );
    assert_eq!(text_of(&lines[0]["result"]), "traced", "{lines:?}");

    let spans = receiver.until("the gateway's and the hub's spans", |spans| {
        named(spans, "tools/call mcp__t__echo", SERVER).is_some()
            && named(spans, "tools/call mcp__t__echo", CLIENT).is_some()
    });
    let gateway = named(&spans, "tools/call mcp__t__echo", SERVER).unwrap();
    let hub = named(&spans, "tools/call mcp__t__echo", CLIENT).unwrap();
    assert_eq!(gateway["parent"], CLIENT_SPAN, "{gateway}");
    assert_eq!(hub["parent"], gateway["span"], "{hub}");
    assert_eq!(gateway["service"], "gateway-under-test");
    let attributes = &hub["attributes"];
    assert_eq!(attributes["mcp.method.name"], "tools/call");
    assert_eq!(attributes["gen_ai.tool.name"], "mcp__t__echo");
    assert_eq!(attributes["mcpmux.server"], "t");
    assert_eq!(attributes["mcpmux.transport"], "stdio");
    assert_eq!(attributes["network.transport"], "pipe");
    assert_eq!(attributes["mcpmux.outcome"], "ok");
    assert_eq!(attributes["mcpmux.bytes_out"], 17, "{attributes}");
    assert!(
        attributes["mcpmux.bytes_in"].as_i64().unwrap() > 0,
        "{attributes}"
    );

    // The upstream server was sent the same trace, the hub's call as its parent.
    let logged = call_log(calls);
    let sent = logged
        .iter()
        .find_map(|l| l["traceparent"].as_str())
        .unwrap_or_else(|| panic!("no traceparent reached the server: {logged:?}"));
    assert_eq!(
        sent,
        format!("00-{TRACE}-{}-01", hub["span"].as_str().unwrap())
    );
}

#[test]
fn each_way_a_call_ends_is_its_own_outcome_on_its_span() {
    let sandbox = Sandbox::new();
    let config = sandbox.home.join("gateway.toml");
    let server = testserver();
    let server = server.to_str().unwrap();
    sandbox.write_file(
        &config,
        &format!(
            "[servers.t]\ncommand = {server:?}\n\n\
             [servers.h]\ncommand = {server:?}\ncall_timeout = \"300ms\"\n\
             breaker = {{ threshold = 1, cool_down = \"60s\" }}\n\n\
             [servers.p]\ncommand = {server:?}\nstages = [\"build\"]\n\n\
             [policy]\ndeny = [\"mcp__t__add\"]\n"
        ),
    );
    let receiver = Receiver::start(&sandbox.home);
    // Server `p` is for the `build` stage only: outside the scope served.
    let served = served_with(&sandbox, &config, &receiver, &["--scope", "plan"]);
    let meta = json!({"traceparent": format!("00-{TRACE}-{CLIENT_SPAN}-01")});
    let call = |name: &str, arguments: Value| json!({"do": "call", "name": name, "arguments": arguments, "meta": meta});
    let lines = ts_client(
        served.target(),
        json!([
            call("mcp__t__echo", json!({"text": "fine"})),
            call("mcp__t__fail", json!({})),
            call("mcp__t__add", json!({"a": 1, "b": 2})),
            call("mcp__t__echo", json!({"text": 5})),
            call("mcp__nobody__nothing", json!({})),
            call("mcp__p__echo", json!({"text": "out of scope"})),
            call("mcp__h__hang", json!({})),
            // The timeout opened h's breaker (its threshold is one failure).
            call("mcp__h__echo", json!({"text": "refused"})),
            {"do": "progress_then_cancel", "name": "mcp__t__slow",
             "arguments": {"ms": 20000, "steps": 100}},
        ]),
    );
    assert_eq!(lines.len(), 9, "{lines:?}");
    assert_eq!(lines[8]["cancelled"], true, "{lines:?}");
    let expected = [
        ("mcp__t__echo", "ok"),
        ("mcp__t__fail", "tool_error"),
        ("mcp__t__add", "refused_policy"),
        ("mcp__t__echo", "invalid_arguments"),
        ("mcp__nobody__nothing", "unknown"),
        ("mcp__p__echo", "refused_scope"),
        ("mcp__h__hang", "timeout"),
        ("mcp__h__echo", "refused_breaker"),
        ("mcp__t__slow", "cancelled"),
    ];
    let outcomes = |spans: &[Value]| -> Vec<(String, String, i64)> {
        spans
            .iter()
            .filter(|s| s["kind"] == CLIENT && s["attributes"]["mcp.method.name"] == "tools/call")
            .map(|s| {
                (
                    s["attributes"]["gen_ai.tool.name"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string(),
                    s["attributes"]["mcpmux.outcome"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string(),
                    s["status"]["code"].as_i64().unwrap_or_default(),
                )
            })
            .collect()
    };
    let spans = receiver.until("a span of each call", |spans| {
        outcomes(spans).len() >= expected.len()
    });
    let mut seen = outcomes(&spans);
    seen.sort();
    let mut wanted: Vec<(String, String, i64)> = expected
        .iter()
        // OTLP status codes: unset (0) for a call that went well, error (2) otherwise.
        .map(|(tool, outcome)| {
            let code = if *outcome == "ok" { 0 } else { 2 };
            (tool.to_string(), outcome.to_string(), code)
        })
        .collect();
    wanted.sort();
    assert_eq!(seen, wanted);
    let failed = spans
        .iter()
        .find(|s| s["attributes"]["mcpmux.outcome"] == "refused_policy")
        .unwrap();
    assert_eq!(failed["attributes"]["error.type"], "refused_policy");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_is_one_trace_with_a_span_per_turn_model_request_and_tool_call() {
    use mcpmux_testmodel::{ScriptedModel, Step, Wire};
    let model = ScriptedModel::start(
        Wire::OpenAi,
        vec![
            Step::tool_calls([("mcp__demo__add", r#"{"a":2,"b":3}"#)]).with_usage(120, 9),
            Step::text("The sum is 5.").with_usage(160, 6),
        ],
    )
    .await
    .unwrap();
    let sandbox = Sandbox::new();
    let receiver = Receiver::start(&sandbox.home);
    let mut cmd = sandbox.command(&["run", "What is 2 + 3?", "--model", "openai:test-model"]);
    for name in [
        "OPENAI_API_KEY",
        "ANTHROPIC_BASE_URL",
        "ANTHROPIC_API_KEY",
        "MCPMUX_MODEL",
    ] {
        cmd.env_remove(name);
    }
    cmd.env("OPENAI_BASE_URL", model.base_url()).env(
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        format!("http://127.0.0.1:{}", receiver.port),
    );
    let run = tokio::task::spawn_blocking(move || run_command(cmd, None))
        .await
        .unwrap();
    assert_eq!(run.code, Some(0), "{run:?}");
    // Exported at exit: the provider is shut down before the process ends.
    let spans = receiver.spans();
    let find = |name: &str| -> Vec<&Value> { spans.iter().filter(|s| s["name"] == name).collect() };
    let agent = find("invoke_agent mcpmux");
    assert_eq!(agent.len(), 1, "{spans:#?}");
    let agent = agent[0];
    assert_eq!(agent["parent"], "", "the run is the trace's root");
    assert_eq!(agent["attributes"]["gen_ai.usage.input_tokens"], 280);
    let turns = find("mcpmux.turn");
    assert_eq!(turns.len(), 2, "{spans:#?}");
    let chats = find("chat test-model");
    assert_eq!(chats.len(), 2, "{spans:#?}");
    let tool = find("tools/call mcp__demo__add");
    assert_eq!(tool.len(), 1, "{spans:#?}");
    for span in turns.iter().chain(&chats).chain(&tool) {
        assert_eq!(span["trace"], agent["trace"], "{span}");
    }
    assert!(turns.iter().all(|t| t["parent"] == agent["span"]));
    let first = turns
        .iter()
        .find(|t| t["attributes"]["mcpmux.iteration"] == 1)
        .unwrap();
    assert_eq!(tool[0]["parent"], first["span"]);
    let first_chat = chats.iter().find(|c| c["parent"] == first["span"]).unwrap();
    assert_eq!(first_chat["attributes"]["gen_ai.usage.input_tokens"], 120);
    assert_eq!(first_chat["attributes"]["gen_ai.usage.output_tokens"], 9);
    assert_eq!(
        first_chat["attributes"]["gen_ai.request.model"],
        "test-model"
    );
}

/// The spans named `name` whose `mcpmux.server` is `server`.
fn of_server<'a>(spans: &'a [Value], name: &str, server: &str) -> Vec<&'a Value> {
    spans
        .iter()
        .filter(|s| s["name"] == name && s["attributes"]["mcpmux.server"] == server)
        .collect()
}

#[test]
fn a_server_s_start_handshake_list_changes_breaker_and_restart_are_spans() {
    let sandbox = Sandbox::new();
    let calls = sandbox.project.join("calls.jsonl");
    let config = sandbox.home.join("gateway.toml");
    let server = testserver();
    let server = server.to_str().unwrap();
    sandbox.write_file(
        &config,
        &format!(
            "[servers.t]\ncommand = {server:?}\nargs = [\"--call-log\", {:?}]\n\n\
             [servers.h]\ncommand = {server:?}\ncall_timeout = \"300ms\"\n\
             breaker = {{ threshold = 1, cool_down = \"60s\" }}\n",
            calls.to_str().unwrap()
        ),
    );
    let receiver = Receiver::start(&sandbox.home);
    let served = served(&sandbox, &config, &receiver);
    let lines = ts_client(
        served.target(),
        json!([
            {"do": "call", "name": "mcp__t__change_tools", "arguments": {}},
            {"do": "call", "name": "mcp__t__change_lists", "arguments": {}},
            {"do": "call", "name": "mcp__h__hang", "arguments": {}},
            {"do": "call", "name": "mcp__t__sleep_then_exit", "arguments": {"ms": 100}},
        ]),
    );
    assert_eq!(lines.len(), 4, "{lines:?}");
    let word = |s: &Value| s["attributes"]["mcpmux.lifecycle"].clone();
    let spans = receiver.until("t's restart and h's breaker", |spans| {
        !of_server(spans, "server restart", "t").is_empty()
            && !of_server(spans, "server breaker open", "h").is_empty()
            && spans
                .iter()
                .any(|s| s["name"] == "server list changed" && word(s) == "resources_changed")
    });

    // Each server's start, its handshake inside it, in an era, with its tools listed.
    for name in ["t", "h"] {
        let start = of_server(&spans, "server start", name);
        assert_eq!(start.len(), 1, "{spans:#?}");
        let start = start[0];
        assert_eq!(start["attributes"]["mcpmux.lifecycle"], "start");
        assert!(start["attributes"]["mcpmux.tools"].as_i64().unwrap() > 0);
        assert!(start["attributes"]["mcpmux.era"].is_string(), "{start}");
        let handshake = spans
            .iter()
            .find(|s| s["name"] == "server handshake" && s["parent"] == start["span"])
            .unwrap_or_else(|| panic!("no handshake under {start}: {spans:#?}"));
        assert_eq!(handshake["trace"], start["trace"]);
        assert!(handshake["attributes"]["mcpmux.protocol.version"].is_string());
    }
    // The start's listing carried its trace to the server.
    let start = of_server(&spans, "server start", "t")[0];
    let listed = call_log(&calls);
    let traced = listed
        .iter()
        .filter_map(|l| l["tools/list"].as_str())
        .find(|tp| tp.contains(start["trace"].as_str().unwrap()));
    assert!(traced.is_some(), "{listed:?}");

    // The restart says why: the server exited (code 7) under no call.
    let restart = of_server(&spans, "server restart", "t")[0];
    assert_eq!(restart["attributes"]["mcpmux.lifecycle"], "restart");
    let cause = restart["attributes"]["mcpmux.cause"].as_str().unwrap();
    assert!(cause.contains('7'), "{cause}");
    assert!(restart["attributes"]["mcpmux.attempt"].as_i64().unwrap() >= 1);

    let opened = of_server(&spans, "server breaker open", "h")[0];
    assert_eq!(opened["attributes"]["mcpmux.lifecycle"], "breaker_open");
    assert!(
        opened["attributes"]["mcpmux.cause"]
            .as_str()
            .unwrap()
            .contains("circuit breaker open"),
        "{opened}"
    );
    let changed: Vec<Value> = of_server(&spans, "server list changed", "t")
        .into_iter()
        .map(word)
        .collect();
    for list in ["tools_changed", "prompts_changed", "resources_changed"] {
        assert!(changed.contains(&json!(list)), "{list}: {changed:?}");
    }
}

#[test]
fn a_list_request_sent_upstream_carries_the_client_s_trace() {
    let traced = Traced::start(&["--prompts"]);
    let (served, receiver, calls) = (&traced.served, &traced.receiver, &traced.calls);
    let traceparent = format!("00-{TRACE}-{CLIENT_SPAN}-01");
    let lines = ts_client(
        served.target(),
        json!([
            {"do": "resources", "meta": {"traceparent": traceparent}},
            {"do": "prompts", "meta": {"traceparent": traceparent}},
        ]),
    );
    assert_eq!(lines.len(), 2, "{lines:?}");
    let spans = receiver.until("the list spans", |spans| {
        named(spans, "resources/list", CLIENT).is_some()
            && named(spans, "prompts/list", CLIENT).is_some()
    });
    let logged = call_log(calls);
    for method in ["resources/list", "prompts/list"] {
        let gateway = named(&spans, method, SERVER).unwrap();
        assert_eq!(gateway["parent"], CLIENT_SPAN, "{gateway}");
        let hub = named(&spans, method, CLIENT).unwrap();
        assert_eq!(hub["parent"], gateway["span"], "{hub}");
        let sent = format!("00-{TRACE}-{}-01", hub["span"].as_str().unwrap());
        assert!(
            logged.iter().any(|l| l[method] == sent.as_str()),
            "{method} did not carry {sent}: {logged:?}"
        );
    }
}

#[test]
fn a_malformed_or_oversized_trace_context_from_a_client_is_ignored_safely() {
    let traced = Traced::start(&[]);
    let (served, receiver, calls) = (&traced.served, &traced.receiver, &traced.calls);
    let traceparent = format!("00-{TRACE}-{CLIENT_SPAN}-01");
    let too_many = (0..65).map(|i| format!("k{i}=v")).collect::<Vec<_>>();
    let echo = |text: &str, meta: Value| json!({"do": "call", "name": "mcp__t__echo", "arguments": {"text": text}, "meta": meta});
    let lines = ts_client(
        served.target(),
        json!([
            echo(
                "malformed",
                json!({"traceparent": "00-not-a-trace-zz", "baggage": 7})
            ),
            echo(
                "oversized",
                json!({"traceparent": format!("00-{TRACE}-{CLIENT_SPAN}-01{}", "0".repeat(300))})
            ),
            echo(
                "fine baggage",
                json!({"traceparent": traceparent, "baggage": "tenant=acme"})
            ),
            echo(
                "too much baggage",
                json!({"traceparent": traceparent, "baggage": too_many.join(",")})
            ),
            echo(
                "long tracestate",
                json!({"traceparent": traceparent, "tracestate": format!("k={}", "v".repeat(600))})
            ),
        ]),
    );
    assert_eq!(lines.len(), 5, "{lines:?}");
    for line in &lines {
        assert!(line["result"].is_object(), "{lines:?}");
    }
    let gateway_spans = |spans: &[Value]| -> Vec<Value> {
        spans
            .iter()
            .filter(|s| s["name"] == "tools/call mcp__t__echo" && s["kind"] == SERVER)
            .cloned()
            .collect()
    };
    let spans = receiver.until("five gateway spans", |spans| {
        gateway_spans(spans).len() >= 5
    });
    let roots = gateway_spans(&spans)
        .into_iter()
        .filter(|s| s["parent"] == "")
        .count();
    let continued = gateway_spans(&spans)
        .into_iter()
        .filter(|s| s["trace"] == TRACE && s["parent"] == CLIENT_SPAN)
        .count();
    // The malformed and the oversized traceparent each start a trace of their own; a bad
    // baggage or tracestate leaves the good traceparent beside it continued.
    assert_eq!((roots, continued), (2, 3), "{spans:#?}");

    // The upstream server got a trace context with each call, and only the bounded baggage.
    let logged = call_log(calls);
    let sent_to_server = logged
        .iter()
        .filter(|l| l["traceparent"].is_string())
        .count();
    assert_eq!(sent_to_server, 5, "{logged:?}");
    let baggage: Vec<&str> = logged
        .iter()
        .filter_map(|l| l["baggage"].as_str())
        .collect();
    // Baggage of more members than W3C allows is dropped whole, not cut to its first ones.
    assert_eq!(baggage, ["tenant=acme"], "{logged:?}");
}

#[test]
fn spans_reach_a_grpc_collector_over_tls_that_trusts_its_own_certificate() {
    let sandbox = with_testserver(&[]);
    let certs = sandbox.home.join("collector");
    std::fs::create_dir_all(&certs).unwrap();
    let receiver = Receiver::start_with(&sandbox.home, &["--grpc-tls", certs.to_str().unwrap()]);
    let endpoint = format!("https://127.0.0.1:{}", receiver.port);
    let ca = certs.join("ca.pem");
    let otel = |trusted: bool| {
        let mut env = vec![
            ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.clone()),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc".to_string()),
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "2000".to_string()),
        ];
        if trusted {
            env.push(("OTEL_EXPORTER_OTLP_CERTIFICATE", ca.display().to_string()));
        }
        env
    };
    let call = |text: &str, trusted: bool| {
        let env = otel(trusted);
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let arguments = json!({ "text": text }).to_string();
        let run = sandbox.run_with_env(&["call", "mcp__t__echo", &arguments], &env);
        assert_code(&run, 0);
    };
    // A collector whose certificate is not trusted gets nothing, and the call is unharmed.
    call("untrusted", false);
    assert!(receiver.spans().is_empty(), "{:#?}", receiver.spans());
    call("trusted", true);
    let spans = receiver.until("the call's span over gRPC and TLS", |spans| {
        spans.iter().any(|s| s["name"] == "tools/call mcp__t__echo")
    });
    let call = spans
        .iter()
        .find(|s| s["name"] == "tools/call mcp__t__echo")
        .unwrap();
    assert_eq!(call["attributes"]["mcpmux.outcome"], "ok", "{call}");
    assert_eq!(call["service"], "mcpmux");
}
