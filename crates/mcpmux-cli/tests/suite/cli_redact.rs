//! Secrets never leave through errors: upstream servers configured with a secret in their
//! URL's query, fragment and userinfo and in a header (one from a `${VAR}`), reached at
//! addresses that refuse, answer 500, or close the connection, and every channel the user or
//! a client reads — `mcpmux servers` (table and JSON), `tools`, a failed `call`, `-v` logs,
//! and `mcpmux serve --http`'s `/readyz`, `/metrics`, a `tools/call` error result and its
//! access log — searched for them. The host and path stay visible.

use crate::support;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use support::*;

/// What every secret starts with: none of it may appear anywhere.
const SECRET: &str = "S3CR3T";

/// A fake upstream on 127.0.0.1: it reads each request, keeps its head, then answers 500 or
/// closes without a word.
struct Fake {
    port: u16,
    heads: Arc<Mutex<Vec<String>>>,
}

impl Fake {
    fn start(answer_500: bool) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let heads = Arc::new(Mutex::new(Vec::new()));
        let seen = heads.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
                let mut head = Vec::new();
                let mut buf = [0u8; 4096];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                seen.lock()
                    .unwrap()
                    .push(String::from_utf8_lossy(&head).into_owned());
                if answer_500 {
                    let _ = stream.write_all(
                        b"HTTP/1.1 500 Internal Server Error\r\nContent-Type: text/plain\r\n\
                          Content-Length: 13\r\nConnection: close\r\n\r\nupstream died",
                    );
                }
            }
        });
        Fake { port, heads }
    }

    fn heads(&self) -> String {
        self.heads.lock().unwrap().join("\n")
    }
}

/// A 127.0.0.1 port nothing listens on.
fn refused_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

fn assert_no_secret(channel: &str, text: &str) {
    assert!(!text.contains(SECRET), "{channel} shows a secret:\n{text}");
}

#[test]
fn no_secret_in_a_url_or_header_reaches_any_output() {
    let refused = refused_port();
    let broken = Fake::start(true);
    let closer = Fake::start(false);
    let userinfo = "S3CR3T-USER:S3CR3T-PASS@";
    let query = "?api_key=S3CR3T-QUERY&x=1#S3CR3T-FRAG";
    let headers = r#"{ "X-Api-Key" = "S3CR3T-HEADER", "X-From-Var" = "${REDACT_TEST_VAR}" }"#;
    let server = |name: &str, kind: &str, scheme: &str, port: u16, path: &str, required: bool| {
        format!(
            "[servers.{name}]\ntype = \"{kind}\"\nurl = \"{scheme}://{userinfo}127.0.0.1:{port}{path}{query}\"\n\
             headers = {headers}\nrequired = {required}\nstartup_timeout = \"3s\"\n\n"
        )
    };
    // A required server that fails stops the CLI's commands before they show anything: the
    // servers are required only for the gateway, whose `/readyz` names them.
    let config = |required: bool| {
        [
            server("refused", "http", "http", refused, "/mcp/refused", required),
            server(
                "broken",
                "http",
                "http",
                broken.port,
                "/mcp/broken",
                required,
            ),
            server(
                "closer",
                "sse",
                "http",
                closer.port,
                "/sse/closer",
                required,
            ),
            server("sock", "ws", "ws", refused, "/ws/sock", required),
        ]
        .concat()
    };
    let sandbox = Sandbox::new();
    let user_config = sandbox.home.join(".config/mcpmux/config.toml");
    sandbox.write_file(&user_config, &config(false));
    let env = [("REDACT_TEST_VAR", "S3CR3T-VAR")];

    let table = sandbox.run_with_env(&["servers"], &env);
    assert_no_secret("`mcpmux servers`", &format!("{table:#?}"));
    let listed = sandbox.run_with_env(&["servers", "--json"], &env);
    assert_no_secret("`mcpmux servers --json`", &format!("{listed:#?}"));
    let listed = json(&listed);
    let refused_entry = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "refused")
        .unwrap();
    assert_eq!(
        refused_entry["target"],
        format!("http://127.0.0.1:{refused}/mcp/refused?…")
    );
    let errors = listed.to_string();
    for shown in [
        format!("127.0.0.1:{refused}/mcp/refused"),
        format!("127.0.0.1:{}/sse/closer", closer.port),
        format!("127.0.0.1:{refused}/ws/sock"),
    ] {
        assert!(errors.contains(&shown), "{shown} not in {errors}");
    }
    let tools = sandbox.run_with_env(&["--log", "debug", "tools"], &env);
    assert_no_secret("`mcpmux --log debug tools`", &format!("{tools:#?}"));
    let call = sandbox.run_with_env(&["--log", "trace", "call", "mcp__broken__echo", "{}"], &env);
    assert_ne!(call.code, Some(0), "{call:#?}");
    assert!(call.stderr.contains("server `broken`"), "{call:#?}");
    assert_no_secret("`mcpmux --log trace call`", &format!("{call:#?}"));

    sandbox.write_file(&user_config, &config(true));
    let mut serve = sandbox.command(&[
        "--log",
        "debug",
        "serve",
        "--http",
        "127.0.0.1:0",
        "--access-log",
        "text",
    ]);
    serve.envs(env);
    let served = Served::spawn(serve);
    let ready = eventually_blocking(Duration::from_secs(20), Duration::from_millis(50), || {
        let (status, body) = http_get(&served.url, "/readyz", &[]);
        (status == 503 && body.contains("sock")).then_some(body)
    })
    .expect("/readyz never named the servers");
    assert_no_secret("/readyz", &ready);
    assert!(
        ready.starts_with("not ready: required servers not connected: "),
        "{ready}"
    );
    let (_, metrics) = http_get(&served.url, "/metrics", &[]);
    assert_no_secret("/metrics", &metrics);
    let lines = ts_client(
        served.target(),
        json!([
            {"do": "call", "name": "mcp__refused__echo", "arguments": {}},
            {"do": "call", "name": "mcp__closer__echo", "arguments": {}},
        ]),
    );
    let results = serde_json::to_string(&lines).unwrap();
    assert_no_secret("a tools/call error result", &results);
    assert!(
        results.contains(&format!("127.0.0.1:{refused}/mcp/refused")),
        "{results}"
    );
    let (_, stderr) = served.terminate(Duration::from_secs(10));
    assert_no_secret("`mcpmux serve` stderr and access log", &stderr);
    assert!(stderr.contains("/readyz"), "no access log line: {stderr}");

    // The secrets were in play: the upstream was sent the header, the variable and the query.
    let sent = broken.heads();
    for secret in ["S3CR3T-HEADER", "S3CR3T-VAR", "S3CR3T-QUERY"] {
        assert!(sent.contains(secret), "{secret} never sent: {sent}");
    }
}
