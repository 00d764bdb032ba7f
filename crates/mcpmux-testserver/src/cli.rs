//! Command-line flags of `mcpmux-testserver`.
//!
//! Owns parsing and validation only: every flag becomes a plain value here and the modules
//! that implement the behaviour (`server`, `tools`, `faults`, `gate`, `stdio`, `http`, `ws`,
//! `oauth`) read them. Nothing in this module does I/O.

use std::{net::SocketAddr, path::PathBuf};

use clap::{Parser, ValueEnum};
use rmcp::model::ProtocolVersion;

use crate::oauth::{DEFAULT_TOKEN_TTL_SECS, PresetClient};

/// A real MCP server (rmcp server side) with fault knobs, for mcpmux's integration tests and
/// benchmarks.
///
/// Speaks newline-delimited JSON-RPC on stdin/stdout by default (logs only on stderr),
/// streamable HTTP under `/mcp` with `--http ADDR`, or WebSocket under `/mcp` with `--ws ADDR`. Every knob below is a real behaviour of this
/// process, not a mock.
///
/// Tools: echo, add, slow, image, pid, hang, fail, huge, flood, change_tools (toggles `extra`),
/// change_lists, bump, log, ask (2026-07-28 input_required), ask_client (handshake-era
/// server→client requests), write_stderr, sleep_then_exit, hostile.
#[derive(Debug, Parser)]
#[command(name = "mcpmux-testserver", version, about, long_about, after_long_help = AFTER_HELP)]
pub struct Cli {
    // ----- transport -----
    /// Serve streamable HTTP on ADDR (e.g. 127.0.0.1:0) under the path /mcp instead of stdio.
    /// After binding, prints exactly one line to stdout: `listening on http://ADDR/mcp`.
    #[arg(long, value_name = "ADDR", help_heading = "Transport")]
    pub http: Option<SocketAddr>,

    /// Serve MCP over WebSocket on ADDR (loopback only, e.g. 127.0.0.1:0) under the path /mcp
    /// with the `mcp` subprotocol instead of stdio. After binding, prints exactly one line to
    /// stdout: `listening on ws://ADDR/mcp`.
    #[arg(
        long,
        value_name = "ADDR",
        conflicts_with = "http",
        help_heading = "Transport"
    )]
    pub ws: Option<SocketAddr>,

    /// Allow `--http` to bind a non-loopback address (refused otherwise) and accept any Host
    /// header.
    #[arg(long, requires = "http", help_heading = "Transport")]
    pub allow_remote: bool,

    /// HTTP: serve every request statelessly (no Mcp-Session-Id) instead of stateful sessions.
    #[arg(long, requires = "http", help_heading = "Transport")]
    pub stateless_http: bool,

    /// Serve the official MCP conformance suite's server scenarios instead of the test tools:
    /// the `test_*` tools, `test://` resources and template, `test_*` prompts, completions,
    /// logging, subscriptions and the Tasks extension of the suite's reference server (for
    /// `conformance server --url http://ADDR/mcp` with `--http`; see conformance/run-server.sh;
    /// over stdio, for tests of a client that needs those tools in a process it can crash).
    /// Every other tool and fault knob is off.
    #[arg(long, conflicts_with = "ws", help_heading = "Transport")]
    pub conformance: bool,

    /// HTTP: answer simple request/response exchanges with `application/json` instead of an SSE
    /// stream (rmcp's json_response; applies to stateless requests).
    #[arg(long, requires = "http", help_heading = "Transport")]
    pub json_response: bool,

    // ----- protocol era -----
    /// Which MCP protocol era to speak: `both` answers `server/discover` and `initialize` (like
    /// a modern rmcp server); `handshake` answers `server/discover` with -32601 Method not found
    /// (like the Node reference servers) and offers only 2024-11-05..2025-11-25; `stateless`
    /// speaks only 2026-07-28 and answers `initialize` with an Unsupported protocol version
    /// error.
    #[arg(long, value_enum, default_value_t = Era::Both, help_heading = "Protocol")]
    pub era: Era,

    /// Answer `initialize` with protocol version V whatever the client offered (e.g. 2024-11-05),
    /// to test negotiating down. V must be a handshake version (before 2026-07-28).
    #[arg(long, value_name = "V", value_parser = parse_handshake_version, help_heading = "Protocol")]
    pub protocol_version: Option<ProtocolVersion>,

    /// Never answer requests whose method this server does not implement, including
    /// `server/discover` (unless `--era stateless`): they are read and silently dropped, like
    /// legacy servers that ignore unknown methods. Tests the client's probe deadline.
    #[arg(long, help_heading = "Protocol")]
    pub ignore_unknown: bool,

    /// Read input but never answer anything (a server that hangs at startup). Over HTTP every
    /// JSON-RPC request POST hangs until the client gives up.
    #[arg(long, help_heading = "Protocol")]
    pub never_answer_initialize: bool,

    // ----- tools/list -----
    /// Paginate `tools/list` with N tools per page, using opaque cursors.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..), help_heading = "Tools")]
    pub page_size: Option<u32>,

    /// With `--page-size`: every page returns the same `nextCursor`, forever (to test the
    /// client's pagination guard).
    #[arg(long, requires = "page_size", help_heading = "Tools")]
    pub repeat_cursor: bool,

    /// Also list N tools of a realistic catalog (issues and pull requests, calendar, email,
    /// databases, storage, tickets, CRM, payments, web search, weather, translation, maps, chat,
    /// CI, monitoring, notes …), for tool-search tests and benches. Deterministic; past the
    /// catalog's size it repeats per workspace (`acme_github_create_issue`). Each answers with its
    /// name and arguments.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(0..=100_000), help_heading = "Tools")]
    pub many_tools: Option<u32>,

    /// Also offer prompts (`greet`), the resource template `test://item/{id}` and completions
    /// of their arguments.
    #[arg(long, help_heading = "Tools")]
    pub prompts: bool,

    /// Append one JSON line per `tools/call` received, before handling it:
    /// `{"tool": NAME, "arguments": {...}}` (arguments is null when the client sent none);
    /// `{"cancelled": TOOL}` when the client cancels a running `hang` or `slow`; and
    /// `{"subscribe": URI}` / `{"unsubscribe": URI}` for each resources/subscribe and
    /// resources/unsubscribe; `{"traceparent": VALUE}` (and `{"baggage": VALUE}`) after a call
    /// whose `_meta` carries one, `{"tools/list": TRACEPARENT}` (`resources/list`,
    /// `prompts/list`) for a list request whose `_meta` carries one.
    #[arg(long, value_name = "FILE", help_heading = "Tools")]
    pub call_log: Option<PathBuf>,

    // ----- process faults -----
    /// Exit with code 4 at startup unless the environment variable NAME holds exactly VALUE
    /// (writing `testserver: NAME does not hold the expected value` to stderr, never a value).
    /// Proves a configured env value, such as a secret, reached the process.
    #[arg(long, value_name = "NAME=VALUE", value_parser = parse_env_requirement, help_heading = "Process faults")]
    pub require_env: Option<(String, String)>,

    /// Exit with code 4 at startup unless the environment variables A and B are both set and
    /// equal (`testserver: A does not hold the expected value`). Lets a test check a secret
    /// without writing the secret on the command line.
    #[arg(long, value_name = "A=B", value_parser = parse_env_requirement, help_heading = "Process faults")]
    pub require_env_equal: Option<(String, String)>,

    /// Write `testserver: exiting at startup with code CODE` to stderr and exit with CODE before
    /// reading any input.
    #[arg(long, value_name = "CODE", help_heading = "Process faults")]
    pub exit_at_startup: Option<i32>,

    /// After answering N tool calls, the next `tools/call` exits the process with code 3 without
    /// answering (after writing `testserver: crashing after N calls` to stderr).
    #[arg(long, value_name = "N", help_heading = "Process faults")]
    pub crash_after: Option<u64>,

    /// A call to TOOL exits the process with code 3 (after a line on stderr) without answering.
    #[arg(long, value_name = "TOOL", help_heading = "Process faults")]
    pub crash_on: Option<String>,

    /// Delay every `tools/call` answer by MS milliseconds (cancellation still stops the wait).
    #[arg(long, value_name = "MS", help_heading = "Process faults")]
    pub slow_ms: Option<u64>,

    /// Ignore SIGTERM (SIG_IGN), so only SIGKILL stops the process.
    #[arg(long, help_heading = "Process faults")]
    pub ignore_sigterm: bool,

    /// Keep running after stdin closes (like server-everything) until signalled.
    #[arg(long, conflicts_with_all = ["http", "ws"], help_heading = "Process faults")]
    pub ignore_stdin_eof: bool,

    /// Write N numbered lines `testserver stderr line I` to stderr at startup.
    #[arg(long, value_name = "N", help_heading = "Process faults")]
    pub stderr_lines: Option<u64>,

    /// Sleep MS milliseconds before serving (a slow starter). Runs after `--stderr-lines` and
    /// before `--exit-at-startup`.
    #[arg(long, value_name = "MS", help_heading = "Process faults")]
    pub startup_delay_ms: Option<u64>,

    // ----- stdio wire faults -----
    /// stdio: print junk to stdout: at startup a non-JSON line, a JSON line that is not JSON-RPC
    /// and a partial line whose newline comes later; before every response the first two again.
    #[arg(long, conflicts_with_all = ["http", "ws"], help_heading = "stdio wire faults")]
    pub garbage: bool,

    /// stdio: before each `tools/call` response, also send a response with an id that was never
    /// issued (`{"jsonrpc":"2.0","id":999999,"result":{}}`).
    #[arg(long, conflicts_with_all = ["http", "ws"], help_heading = "stdio wire faults")]
    pub unknown_id: bool,

    // ----- HTTP faults -----
    /// HTTP: answer requests to /mcp with this status (e.g. 500, 404 = session not found, 401
    /// with `WWW-Authenticate: Bearer resource_metadata=...`). See also POST /admin/fail and
    /// POST /admin/heal on the same listener.
    #[arg(long, value_name = "STATUS", requires = "http", value_parser = parse_status, help_heading = "HTTP faults")]
    pub http_fail: Option<u16>,

    /// HTTP: with `--http-fail`, let the first N requests to /mcp through before failing.
    #[arg(
        long,
        value_name = "N",
        requires = "http_fail",
        default_value_t = 0,
        help_heading = "HTTP faults"
    )]
    pub http_fail_after: u64,

    // ----- OAuth -----
    /// HTTP: make the same listener an OAuth 2.1 authorization server (issuer `http://ADDR`,
    /// metadata, dynamic registration, code flow with PKCE S256, refresh rotation,
    /// client_credentials) and require `Authorization: Bearer` with a live access token on
    /// every request to /mcp (else 401 with `WWW-Authenticate: Bearer resource_metadata=...`).
    /// Consent is automatic: /authorize redirects with a code at once.
    #[arg(
        long,
        requires = "http",
        conflicts_with = "allow_remote",
        help_heading = "OAuth"
    )]
    pub oauth: bool,

    /// With `--oauth`: access tokens expire SECS seconds after they are issued (refresh tokens
    /// do not expire).
    #[arg(
        long,
        value_name = "SECS",
        requires = "oauth",
        default_value_t = DEFAULT_TOKEN_TTL_SECS,
        value_parser = clap::value_parser!(u64).range(1..),
        help_heading = "OAuth"
    )]
    pub token_ttl: u64,

    /// With `--oauth`: a pre-registered confidential client that may use the client_credentials
    /// grant, authenticating with client_secret_basic or client_secret_post. Repeatable.
    #[arg(
        long = "oauth-client",
        value_name = "ID:SECRET",
        requires = "oauth",
        value_parser = parse_preset_client,
        help_heading = "OAuth"
    )]
    pub oauth_clients: Vec<PresetClient>,

    /// With `--oauth`: DPoP (RFC 9449). The metadata offers ES256; the token endpoint wants a
    /// proof and binds the tokens to its key (`token_type: DPoP`); /mcp wants `Authorization:
    /// DPoP TOKEN` with a fresh proof from that key on every request.
    #[arg(long, requires = "oauth", help_heading = "OAuth")]
    pub dpop: bool,

    /// `--dpop`, and every proof must carry this server's nonce: a proof without it is answered
    /// `use_dpop_nonce` with the nonce in `DPoP-Nonce` (400 at /token, 401 at /mcp).
    #[arg(long, requires = "oauth", help_heading = "OAuth")]
    pub dpop_nonce: bool,

    // ----- hostile tools (trust-boundary tests) -----
    /// Also list a tool with a hostile input schema (repeatable): `self-ref` lists `self_ref`,
    /// whose schema applies itself (`allOf: [{"$ref": "#"}]`); `ref-bomb` lists `ref_bomb`,
    /// whose `$defs` chain applies each next level twice (2^40 subschemas). Both answer
    /// "called".
    #[arg(long, value_enum, value_name = "KIND", help_heading = "Hostile tools")]
    pub tool_schema: Vec<ToolSchema>,

    /// stdio: also list the tool `deep_result`, whose calls the transport answers itself with
    /// structuredContent nesting 100 000 arrays (deeper than any JSON parser with a recursion
    /// limit reads).
    #[arg(long, conflicts_with_all = ["http", "ws"], help_heading = "Hostile tools")]
    pub deep_result: bool,

    /// Also list tools whose names are not valid MCP tool names: one with a NUL, one with a
    /// newline, one with a bidi override (U+202E), 300 emoji, 65 `t`s, `../../etc/passwd`.
    /// Each answers "called".
    #[arg(long, help_heading = "Hostile tools")]
    pub hostile_names: bool,

    /// Also list the tool `huge_result`, which answers `{"bytes": N}` with one text block of
    /// N bytes (any transport): past a client's cap on one message when N is large.
    #[arg(long, help_heading = "Hostile tools")]
    pub huge_result: bool,

    /// stdio: answer `tools/list` with BYTES spaces before the JSON, on one line: an answer
    /// past a client's line cap whose ends name no id.
    #[arg(long, value_name = "BYTES", conflicts_with_all = ["http", "ws"], help_heading = "Hostile tools")]
    pub padded_tools_list: Option<usize>,

    // ----- hostile output -----
    /// Write TEXT and a newline to stderr at startup, before `--stderr-lines` (terminal escape
    /// sequences here test what a client shows of a server's stderr).
    #[arg(long, value_name = "TEXT", help_heading = "Hostile output")]
    pub stderr_text: Option<String>,

    /// List TOOL with TEXT as its description (repeatable).
    #[arg(long = "describe", value_name = "TOOL=TEXT", value_parser = parse_description, help_heading = "Hostile output")]
    pub descriptions: Vec<(String, String)>,

    // ----- HTTP session faults -----
    /// HTTP: how a request naming a session this process does not know is answered: `404`
    /// (the spec's answer, and rmcp's) or `400` with a JSON-RPC error without an id, as the
    /// reference TypeScript server answers (`Bad Request: No valid session ID provided`).
    #[arg(long, value_name = "STATUS", requires = "http", default_value_t = 404, value_parser = parse_unknown_session, help_heading = "HTTP faults")]
    pub unknown_session: u16,

    /// HTTP: injected failures (`--http-fail`, /admin/fail) carry a JSON-RPC error without an
    /// id as their body, as the reference servers' error answers do, instead of plain text.
    #[arg(long, requires = "http", help_heading = "HTTP faults")]
    pub http_fail_json: bool,
}

/// `TOOL=TEXT` of `--describe`.
fn parse_description(value: &str) -> Result<(String, String), String> {
    match value.split_once('=') {
        Some((tool, text)) if !tool.is_empty() => Ok((tool.to_owned(), text.to_owned())),
        _ => Err(format!("expected TOOL=TEXT, got `{value}`")),
    }
}

fn parse_unknown_session(value: &str) -> Result<u16, String> {
    match value {
        "404" => Ok(404),
        "400" => Ok(400),
        other => Err(format!("`{other}` is not 404 or 400")),
    }
}

// The impl (names, schemas) lives with the hostile tools; the type is a flag value, so it
// sits here, below them.
/// A hostile input schema `--tool-schema` lists a tool with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ToolSchema {
    /// Tool `self_ref`: `{"type":"object","properties":{"x":{"type":"string"}},"allOf":[{"$ref":"#"}]}`.
    SelfRef,
    /// Tool `ref_bomb`: property `x` refers to `$defs/d0`, each `dN` is
    /// `{"allOf":[{"$ref":"#/$defs/dN+1"},{"$ref":"#/$defs/dN+1"}]}` up to d40 (a string).
    RefBomb,
}

const AFTER_HELP: &str = "\
HTTP admin endpoints (same listener, never affected by failures):
  POST /admin/fail?status=S[&count=N][&after=M]  answer S to requests to /mcp (after letting M
                                                 through; N times, or until healed)
  POST /admin/heal                               stop failing (also cancels --http-fail)
  POST /admin/drop_sessions                      close every session: their ids now get 404

With --oauth, on the same listener (the admin endpoints are never protected):
  GET  /.well-known/oauth-protected-resource[/mcp]  RFC 9728 resource metadata
  GET  /.well-known/oauth-authorization-server      RFC 8414 metadata (also at
                                                    /.well-known/openid-configuration)
  POST /register                                    RFC 7591 dynamic client registration
  GET  /authorize                                   code flow: PKCE S256 and resource required
  POST /token                                       authorization_code, refresh_token (rotated;
                                                    a spent one used again revokes its login),
                                                    client_credentials
  POST /admin/oauth/revoke                          revoke every access and refresh token
  POST /admin/oauth/expire                          expire every access token (refresh stays)
  GET  /admin/oauth/stats                           counters: registrations, authorizations,
                                                    code_exchanges, refreshes, refresh_reuse,
                                                    client_credentials, rejected (401s on /mcp),
                                                    last_scope, last_resource

Exit codes: 0 on stdin EOF or a client that left before the handshake, 1 on error, 2 on bad
flags, 3 for --crash-after/--crash-on, 7 for the sleep_then_exit tool, CODE for
--exit-at-startup.

Logs go to stderr only; MCPMUX_TESTSERVER_LOG takes a tracing filter (default: error).";

/// The protocol era(s) the server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Era {
    /// `server/discover` and `initialize`, like a modern rmcp server.
    Both,
    /// Only the `initialize` handshake (2024-11-05 … 2025-11-25).
    Handshake,
    /// Only the stateless 2026-07-28 revision.
    Stateless,
}

fn parse_handshake_version(value: &str) -> Result<ProtocolVersion, String> {
    let valid_shape = value.len() == 10
        && value.chars().enumerate().all(|(index, c)| match index {
            4 | 7 => c == '-',
            _ => c.is_ascii_digit(),
        });
    if !valid_shape {
        return Err(format!("`{value}` is not a YYYY-MM-DD protocol version"));
    }
    let version: ProtocolVersion =
        serde_json::from_value(serde_json::Value::String(value.to_owned()))
            .map_err(|error| error.to_string())?;
    if !version.has_initialize() {
        return Err(format!(
            "`{value}` has no initialize handshake; pick a version before {}",
            ProtocolVersion::NO_INITIALIZE
        ));
    }
    Ok(version)
}

fn parse_status(value: &str) -> Result<u16, String> {
    let status: u16 = value
        .parse()
        .map_err(|_| format!("`{value}` is not an HTTP status"))?;
    if !(100..=599).contains(&status) {
        return Err(format!("`{value}` is not an HTTP status (100..=599)"));
    }
    Ok(status)
}

fn parse_preset_client(value: &str) -> Result<PresetClient, String> {
    match value.split_once(':') {
        Some((id, secret)) if !id.is_empty() && !secret.is_empty() => Ok(PresetClient {
            id: id.to_owned(),
            secret: secret.to_owned(),
        }),
        _ => Err(format!("`{value}` is not ID:SECRET")),
    }
}

/// `NAME=VALUE` of `--require-env`.
fn parse_env_requirement(text: &str) -> Result<(String, String), String> {
    text.split_once('=')
        .map(|(name, value)| (name.to_owned(), value.to_owned()))
        .ok_or_else(|| "expected NAME=VALUE".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handshake_versions_are_accepted() {
        assert_eq!(
            parse_handshake_version("2024-11-05"),
            Ok(ProtocolVersion::V_2024_11_05)
        );
        assert!(parse_handshake_version("2026-07-28").is_err());
        assert!(parse_handshake_version("latest").is_err());
    }

    #[test]
    fn statuses_are_bounded() {
        assert_eq!(parse_status("401"), Ok(401));
        assert!(parse_status("99").is_err());
        assert!(parse_status("x").is_err());
    }

    #[test]
    fn preset_clients_are_id_colon_secret() {
        assert_eq!(
            parse_preset_client("ci:s3:cret"),
            Ok(PresetClient {
                id: "ci".to_owned(),
                secret: "s3:cret".to_owned()
            })
        );
        assert!(parse_preset_client("ci").is_err());
        assert!(parse_preset_client(":secret").is_err());
        assert!(parse_preset_client("ci:").is_err());
    }

    #[test]
    fn oauth_needs_http() {
        assert!(Cli::try_parse_from(["t", "--oauth"]).is_err());
        assert!(Cli::try_parse_from(["t", "--http", "127.0.0.1:0", "--token-ttl", "5"]).is_err());
        let cli = Cli::try_parse_from(["t", "--http", "127.0.0.1:0", "--oauth"]);
        assert_eq!(
            cli.ok().map(|cli| cli.token_ttl),
            Some(DEFAULT_TOKEN_TTL_SECS)
        );
    }

    #[test]
    fn descriptions_are_tool_equals_text() {
        assert_eq!(
            parse_description("echo=a=b"),
            Ok(("echo".to_owned(), "a=b".to_owned()))
        );
        assert!(parse_description("=x").is_err());
        assert!(parse_description("echo").is_err());
    }

    #[test]
    fn cli_is_well_formed() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
