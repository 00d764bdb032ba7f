//! `mcpmux auth` as a user runs it, against the test server's `--oauth` mode: a real protected
//! MCP endpoint and a strict OAuth 2.1 authorization server (PKCE S256, resource indicators,
//! rotating refresh tokens) on 127.0.0.1 that approves every authorization without a person.
//!
//! Every test gets its own HOME, XDG dirs and project directory, and never inherits
//! `MCPMUX_TOKEN_FILE`, `MCPMUX_AUTH_HEADLESS` or a display (no browser is ever launched), so
//! no token of this machine is read or written.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use support::{Sandbox, assert_code, json, table_row};

/// The servers and token file of these tests (`Sandbox` is the shared test support's).
trait AuthSandbox {
    fn with_servers(remote_url: &str) -> Self;
    fn token_file(&self) -> PathBuf;
}

impl AuthSandbox for Sandbox {
    /// A sandbox whose `.mcp.json` has the OAuth server as `remote` and a stdio server as
    /// `local`, approved.
    fn with_servers(remote_url: &str) -> Self {
        let sandbox = Sandbox::new();
        sandbox.project_servers(json!({
            "remote": { "type": "http", "url": remote_url },
            "local": { "command": support::testserver().display().to_string() },
        }));
        sandbox
    }

    /// Where `TokenStore::user_default()` puts the file in this sandbox.
    fn token_file(&self) -> PathBuf {
        self.home.join(".config").join("mcpmux").join("tokens.json")
    }
}

/// The test server as an OAuth-protected resource and authorization server.
fn oauth_server() -> support::ServerProcess {
    support::testserver_http(&["--oauth"])
}

/// A plain HTTP/1.1 request on 127.0.0.1 (redirects are not followed): status, the
/// `Location` header if any, and the body.
fn http(method: &str, url: &str) -> (u16, Option<String>, String) {
    let rest = url.strip_prefix("http://").unwrap();
    let (authority, target) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let target = if target.is_empty() { "/" } else { target };
    let mut stream = std::net::TcpStream::connect(authority).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    write!(
        stream,
        "{method} {target} HTTP/1.1\r\nHost: {authority}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status in {head:?}"));
    let location = head.lines().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.eq_ignore_ascii_case("location")
            .then(|| value.trim().to_string())
    });
    (status, location, body.to_string())
}

fn origin(server: &support::ServerProcess) -> String {
    server.url.trim_end_matches("/mcp").to_string()
}

/// `GET /admin/oauth/stats`.
fn stats(server: &support::ServerProcess) -> Value {
    let (status, _, body) = http("GET", &format!("{}/admin/oauth/stats", origin(server)));
    assert_eq!(status, 200, "{body}");
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("stats are not JSON ({e}): {body}"))
}

/// `POST /admin/oauth/{what}` (`revoke`, `expire`).
fn admin(server: &support::ServerProcess, what: &str) {
    let (status, _, body) = http("POST", &format!("{}/admin/oauth/{what}", origin(server)));
    assert_eq!(status, 200, "{what}: {body}");
}

/// The entry of `name` in `mcpmux servers --json` or the `servers` of `mcpmux auth status
/// --json`.
fn entry<'a>(servers: &'a Value, name: &str) -> &'a Value {
    servers
        .as_array()
        .unwrap_or_else(|| panic!("not an array: {servers:#}"))
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no `{name}` in {servers:#}"))
}

// ----- 1. log in once, then every command uses the stored token -----

#[test]
fn login_stores_a_private_token_that_servers_tools_and_call_use() {
    let server = oauth_server();
    let sandbox = Sandbox::with_servers(&server.url);

    // Before: the server waits for a login and says which command to run.
    let before = sandbox.run(&["servers"]);
    assert_code(&before, 0);
    let row = table_row(&before.stdout, "remote");
    assert!(row.contains("needs_auth"), "{before:#?}");
    assert!(
        row.contains("run `mcpmux auth login remote`"),
        "the table should show the whole command: {before:#?}"
    );
    assert!(
        table_row(&before.stdout, "local").contains("connected"),
        "{before:#?}"
    );
    let before_json = sandbox.run(&["servers", "--json"]);
    let remote = entry(&json(&before_json), "remote").clone();
    assert_eq!(remote["state"], "needs_auth", "{remote:#}");
    assert!(
        remote["error"]
            .as_str()
            .unwrap()
            .contains("mcpmux auth login remote"),
        "{remote:#}"
    );
    assert!(!sandbox.token_file().exists());

    // Log in.
    let login = sandbox.run(&["auth", "login", "remote", "--headless"]);
    assert_code(&login, 0);
    assert_eq!(
        login.stdout.trim(),
        format!(
            "logged in to remote (tokens in {})",
            sandbox.token_file().display()
        ),
        "{login:#?}"
    );
    let mode = std::fs::metadata(sandbox.token_file())
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o600, "the token file must be private");
    assert_eq!(stats(&server)["authorizations"], 1);

    // After: connected, its tools listed, and a call works, all with the stored token.
    let servers = sandbox.run(&["servers"]);
    assert_code(&servers, 0);
    assert!(
        table_row(&servers.stdout, "remote").contains("connected"),
        "{servers:#?}"
    );
    let tools = sandbox.run(&["tools", "--server", "remote"]);
    assert_code(&tools, 0);
    assert!(tools.stdout.contains("mcp__remote__echo"), "{tools:#?}");
    let call = sandbox.run(&["call", "mcp__remote__echo", r#"{"text":"hi"}"#]);
    assert_code(&call, 0);
    assert_eq!(call.stdout.trim(), "hi", "{call:#?}");

    let after = stats(&server);
    assert_eq!(
        after["authorizations"], 1,
        "the stored login was used, not a new authorization: {after}"
    );
    assert_eq!(after["registrations"], 1, "{after}");
}

// ----- 2. status and logout -----

#[test]
fn status_shows_the_login_and_logout_removes_it() {
    let server = oauth_server();
    let sandbox = Sandbox::with_servers(&server.url);
    let token_file = sandbox.token_file().display().to_string();

    let status = sandbox.run(&["auth", "status"]);
    assert_code(&status, 0);
    let row = table_row(&status.stdout, "remote");
    assert!(row.contains(&server.url), "{status:#?}");
    assert!(
        row.split_whitespace().nth(2) == Some("no"),
        "not logged in yet: {status:#?}"
    );
    assert!(
        !status.stdout.contains("local"),
        "a stdio server has no login: {status:#?}"
    );
    assert!(
        status.stdout.contains(&format!("token file: {token_file}")),
        "{status:#?}"
    );

    // The environment variable a CI job sets instead of the hidden flag.
    let login = sandbox.run_with_env(
        &["auth", "login", "remote"],
        &[("MCPMUX_AUTH_HEADLESS", "1")],
    );
    assert_code(&login, 0);

    let status = sandbox.run(&["auth", "status"]);
    assert_code(&status, 0);
    let row = table_row(&status.stdout, "remote");
    assert_eq!(row.split_whitespace().nth(2), Some("yes"), "{status:#?}");
    assert!(row.contains("UTC"), "when it was received: {status:#?}");
    let status_json = json(&sandbox.run(&["auth", "status", "--json"]));
    assert_eq!(status_json["token_file"], token_file.as_str());
    let remote = entry(&status_json["servers"], "remote");
    assert_eq!(remote["logged_in"], true, "{status_json:#}");
    assert_eq!(remote["url"], server.url.as_str(), "{status_json:#}");
    let received = remote["received_at"].as_u64().unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    assert!(received.abs_diff(now) < 120, "{received} vs {now}");

    let logout = sandbox.run(&["auth", "logout", "remote"]);
    assert_code(&logout, 0);
    assert!(
        logout.stdout.contains("logged out of remote")
            && logout.stdout.contains("tokens were removed"),
        "{logout:#?}"
    );
    let status_json = json(&sandbox.run(&["auth", "status", "--json"]));
    assert_eq!(
        entry(&status_json["servers"], "remote")["logged_in"],
        false,
        "{status_json:#}"
    );
    let status = sandbox.run(&["auth", "status"]);
    assert_eq!(
        table_row(&status.stdout, "remote")
            .split_whitespace()
            .nth(2),
        Some("no"),
        "{status:#?}"
    );

    // Logging out twice says there was nothing to remove, and is not an error.
    let again = sandbox.run(&["auth", "logout", "remote"]);
    assert_code(&again, 0);
    assert!(again.stdout.contains("was not logged in"), "{again:#?}");

    // Without the token the server waits for a login again.
    let servers = sandbox.run(&["servers"]);
    assert!(
        table_row(&servers.stdout, "remote").contains("needs_auth"),
        "{servers:#?}"
    );
}

// ----- 3. a token file others can read -----

#[test]
fn a_token_file_others_can_read_is_refused_with_the_chmod_to_run() {
    let server = oauth_server();
    let sandbox = Sandbox::with_servers(&server.url);
    // Also covers `MCPMUX_TOKEN_FILE`, which wins over the XDG path.
    let token_file = sandbox.home.join("elsewhere").join("tokens.json");
    let token_file_text = token_file.display().to_string();
    let env = [("MCPMUX_TOKEN_FILE", token_file_text.as_str())];

    let login = sandbox.run_with_env(&["auth", "login", "remote", "--headless"], &env);
    assert_code(&login, 0);
    assert!(login.stdout.contains(&token_file_text), "{login:#?}");
    assert!(!sandbox.token_file().exists(), "MCPMUX_TOKEN_FILE was used");
    std::fs::set_permissions(&token_file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let chmod = format!("chmod 600 {token_file_text}");

    let servers = sandbox.run_with_env(&["servers"], &env);
    assert!(
        servers.stderr.contains(&chmod),
        "`servers` should say which chmod to run: {servers:#?}"
    );
    assert!(
        !table_row(&servers.stdout, "remote").contains("connected"),
        "an exposed token must not be used: {servers:#?}"
    );
    assert!(
        table_row(&servers.stdout, "local").contains("connected"),
        "stdio servers are not affected: {servers:#?}"
    );

    let status = sandbox.run_with_env(&["auth", "status"], &env);
    assert_code(&status, 2);
    assert!(status.stderr.contains(&chmod), "{status:#?}");

    // A login is refused before anyone is sent to authorize.
    let before = stats(&server)["authorizations"].clone();
    let login = sandbox.run_with_env(&["auth", "login", "remote", "--headless"], &env);
    assert_code(&login, 2);
    assert!(login.stderr.contains(&chmod), "{login:#?}");
    assert_eq!(stats(&server)["authorizations"], before);

    // Once fixed, the stored login works again.
    std::fs::set_permissions(&token_file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let call = sandbox.run_with_env(&["call", "mcp__remote__echo", r#"{"text":"ok"}"#], &env);
    assert_code(&call, 0);
    assert_eq!(call.stdout.trim(), "ok", "{call:#?}");
}

// ----- 4. servers a login does not apply to -----

#[test]
fn login_to_an_unknown_or_a_stdio_server_is_a_clear_error() {
    let server = oauth_server();
    let sandbox = Sandbox::with_servers(&server.url);

    let unknown = sandbox.run(&["auth", "login", "nope", "--headless"]);
    assert_code(&unknown, 2);
    assert!(
        unknown.stderr.contains("no server named `nope`"),
        "{unknown:#?}"
    );
    assert!(
        unknown.stderr.contains("remote (http) servers: remote"),
        "the error lists the servers one can log in to: {unknown:#?}"
    );
    assert!(unknown.stdout.is_empty(), "{unknown:#?}");

    let stdio = sandbox.run(&["auth", "login", "local", "--headless"]);
    assert_code(&stdio, 2);
    assert!(
        stdio.stderr.contains("server `local` is a stdio server"),
        "{stdio:#?}"
    );
    assert!(stdio.stderr.contains("needs no login"), "{stdio:#?}");
    assert!(
        stdio.stderr.contains("remote (http) servers: remote"),
        "{stdio:#?}"
    );

    let logout = sandbox.run(&["auth", "logout", "nope"]);
    assert_code(&logout, 2);
    assert!(
        logout.stderr.contains("no server named `nope`"),
        "{logout:#?}"
    );

    assert_eq!(stats(&server)["authorizations"], 0);
    assert!(!sandbox.token_file().exists());
}

// ----- 5. the person's flow: a URL to open and a loopback redirect -----

#[test]
fn login_prints_the_url_and_finishes_when_the_browser_comes_back() {
    let server = oauth_server();
    let sandbox = Sandbox::with_servers(&server.url);
    let mut child = sandbox
        .command(&["auth", "login", "remote", "--no-browser", "--timeout", "60"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();

    // The URL is printed on its own indented line.
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut printed = String::new();
    let url = loop {
        let mut line = String::new();
        if stderr.read_line(&mut line).unwrap() == 0 {
            let _ = child.kill();
            panic!("mcpmux printed no authorization URL:\n{printed}");
        }
        printed.push_str(&line);
        if let Some(url) = line.trim().strip_prefix("http://") {
            break format!("http://{url}");
        }
    };
    assert!(printed.contains("open this URL in a browser"), "{printed}");
    assert!(url.contains("/authorize?"), "{url}");

    // What a browser does: the authorization server approves and redirects to the loopback
    // listener, which answers with a page.
    let (status, location, body) = http("GET", &url);
    assert!((300..400).contains(&status), "{status}: {body}");
    let redirect = location.unwrap();
    assert!(redirect.starts_with("http://127.0.0.1:"), "{redirect}");
    let (status, _, page) = http("GET", &redirect);
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("mcpmux is authorized"), "{page}");

    let mut stdout = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    let mut rest = String::new();
    stderr.read_to_string(&mut rest).unwrap();
    let exit = child.wait().unwrap();
    assert!(exit.success(), "{exit:?}\n{printed}{rest}");
    assert!(
        stdout.starts_with("logged in to remote (tokens in "),
        "{stdout}"
    );

    let call = sandbox.run(&["call", "mcp__remote__echo", r#"{"text":"hi"}"#]);
    assert_code(&call, 0);
    assert_eq!(call.stdout.trim(), "hi", "{call:#?}");
    assert_eq!(stats(&server)["authorizations"], 1);
}

#[test]
fn login_without_anyone_to_approve_times_out_with_what_to_do() {
    let server = oauth_server();
    let sandbox = Sandbox::with_servers(&server.url);
    let run = sandbox.run(&["auth", "login", "remote", "--no-browser", "--timeout", "1"]);
    assert_code(&run, 2);
    assert!(run.stderr.contains("/authorize?"), "the URL: {run:#?}");
    assert!(run.stderr.contains("server `remote`"), "{run:#?}");
    assert!(run.stderr.contains("run the command again"), "{run:#?}");
    assert!(run.stdout.is_empty(), "{run:#?}");
    let status = json(&sandbox.run(&["auth", "status", "--json"]));
    assert_eq!(
        entry(&status["servers"], "remote")["logged_in"],
        false,
        "{status:#}"
    );
}

// ----- 6. the stored login across token expiry and revocation -----

#[test]
fn an_expired_token_is_refreshed_and_a_revoked_one_asks_for_a_login_again() {
    let server = oauth_server();
    let sandbox = Sandbox::with_servers(&server.url);
    assert_code(&sandbox.run(&["auth", "login", "remote", "--headless"]), 0);

    // Expired: the stored refresh token gets a new one, no new authorization.
    admin(&server, "expire");
    let call = sandbox.run(&["call", "mcp__remote__echo", r#"{"text":"again"}"#]);
    assert_code(&call, 0);
    assert_eq!(call.stdout.trim(), "again", "{call:#?}");
    let after = stats(&server);
    assert_eq!(after["authorizations"], 1, "{after}");
    assert!(after["refreshes"].as_u64().unwrap() >= 1, "{after}");

    // Revoked (refresh token too): the CLI never authorizes by itself; it says what to run.
    admin(&server, "revoke");
    let servers = sandbox.run(&["servers"]);
    assert_code(&servers, 0);
    let row = table_row(&servers.stdout, "remote");
    assert!(row.contains("needs_auth"), "{servers:#?}");
    assert!(row.contains("mcpmux auth login remote"), "{servers:#?}");
    let call = sandbox.run(&["call", "mcp__remote__echo", r#"{"text":"x"}"#]);
    assert_code(&call, 2);
    assert_eq!(
        call.stderr.matches("mcpmux auth login remote").count(),
        1,
        "said once: {call:#?}"
    );
    assert_eq!(stats(&server)["authorizations"], 1);

    // Logging in again brings it back.
    assert_code(&sandbox.run(&["auth", "login", "remote", "--headless"]), 0);
    let call = sandbox.run(&["call", "mcp__remote__echo", r#"{"text":"back"}"#]);
    assert_code(&call, 0);
    assert_eq!(call.stdout.trim(), "back", "{call:#?}");
}
