//! What a hostile server can do to the person's terminal through `mcpmux`: nothing. Runs the
//! binary under a real pseudo-terminal (util-linux `script`) against the test server, whose
//! `hostile` tool answers with `ESC ]0;pwned BEL` (retitle), `ESC[2J` (clear), a C1 CSI and a
//! bidi override; the terminal must show them escaped. Through a pipe the bytes are kept, as
//! they are on a terminal with `--raw`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::process::{Command, Output, Stdio};

use serde_json::json;
use support::Sandbox;

const RETITLE: &str = "\u{1b}]0;pwned\u{7}";
const CLEAR: &str = "\u{1b}[2J";

// Each sandbox's `~/.claude.json` holds the servers (the person's own config: these tests are
// about what a server shows, not about approving a project's).
/// Runs on a terminal and on pipes (`Sandbox` is the shared test support's).
trait TerminalSandbox {
    fn env(&self, cmd: &mut Command);
    fn on_terminal(&self, args: &[&str]) -> (Option<i32>, String);
    fn piped(&self, args: &[&str]) -> Output;
}

impl TerminalSandbox for Sandbox {
    fn env(&self, cmd: &mut Command) {
        self.hermetic(cmd)
            .env("TERM", "xterm")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
    }

    /// `mcpmux ARGS` with stdout and stderr on a pseudo-terminal: what the person sees.
    fn on_terminal(&self, args: &[&str]) -> (Option<i32>, String) {
        let mut cmd = support::on_pty(env!("CARGO_BIN_EXE_mcpmux").as_ref(), args);
        self.env(&mut cmd);
        let Output { status, stdout, .. } = cmd.output().expect("util-linux `script` runs");
        (status.code(), String::from_utf8_lossy(&stdout).into_owned())
    }

    /// `mcpmux ARGS` with stdout and stderr on pipes.
    fn piped(&self, args: &[&str]) -> Output {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_mcpmux"));
        cmd.args(args);
        self.env(&mut cmd);
        cmd.output().unwrap()
    }
}

fn testserver(args: &[&str]) -> serde_json::Value {
    json!({ "command": support::testserver(), "args": args })
}

/// The terminal shows the sequences as text and never receives them.
#[track_caller]
fn assert_shown_escaped(screen: &str) {
    assert!(
        !screen.contains(RETITLE),
        "raw OSC reached the terminal: {screen:?}"
    );
    assert!(
        !screen.contains("\u{1b}]"),
        "raw OSC reached the terminal: {screen:?}"
    );
    assert!(
        !screen.contains(CLEAR),
        "raw CSI reached the terminal: {screen:?}"
    );
    assert!(
        !screen.contains('\u{9b}'),
        "raw C1 CSI reached the terminal: {screen:?}"
    );
    assert!(
        !screen.contains('\u{202e}'),
        "raw bidi override: {screen:?}"
    );
    assert!(screen.contains(r"\x1b]0;pwned\x07"), "{screen:?}");
    assert!(screen.contains(r"\x1b[2J"), "{screen:?}");
}

#[test]
fn a_result_with_terminal_escapes_is_shown_escaped_on_a_terminal() {
    let sandbox = Sandbox::with_user_servers(json!({ "evil": testserver(&[]) }));
    let (code, screen) = sandbox.on_terminal(&["call", "mcp__evil__hostile"]);
    assert_eq!(code, Some(0), "{screen:?}");
    assert_shown_escaped(&screen);
    assert!(
        screen.contains(r"\u{9b}31mred \u{202e}txt.exe\r"),
        "{screen:?}"
    );
    // Text around the escapes is untouched.
    assert!(screen.contains("hostile start"), "{screen:?}");
    assert!(screen.contains("obey me"), "{screen:?}");
}

#[test]
fn a_server_error_with_terminal_escapes_is_shown_escaped_on_the_terminals_stderr() {
    let sandbox = Sandbox::with_user_servers(json!({ "evil": testserver(&[]) }));
    let (code, screen) = sandbox.on_terminal(&["call", "mcp__evil__hostile", r#"{"as":"error"}"#]);
    assert_eq!(code, Some(2), "{screen:?}");
    assert!(
        screen.contains("server `evil` returned error"),
        "{screen:?}"
    );
    assert_shown_escaped(&screen);
}

#[test]
fn tool_descriptions_and_stderr_tails_are_shown_escaped_on_a_terminal() {
    let hostile = format!("desc {RETITLE} {CLEAR} end");
    let describe = format!("hostile={hostile}");
    let sandbox = Sandbox::with_user_servers(json!({
        "evil": testserver(&["--describe", &describe]),
        "dies": testserver(&["--stderr-text", &hostile, "--exit-at-startup", "3"]),
    }));
    let (code, screen) = sandbox.on_terminal(&["tools"]);
    assert_eq!(code, Some(0), "{screen:?}");
    assert!(
        screen.contains(r"desc \x1b]0;pwned\x07 \x1b[2J end"),
        "{screen:?}"
    );
    assert!(
        !screen.contains(RETITLE) && !screen.contains(CLEAR),
        "{screen:?}"
    );

    let (code, screen) = sandbox.on_terminal(&["servers"]);
    assert_eq!(code, Some(0), "{screen:?}");
    assert!(screen.contains("dies stderr (last lines)"), "{screen:?}");
    assert!(screen.contains(r"desc \x1b]0;pwned\x07"), "{screen:?}");
    assert!(
        !screen.contains(RETITLE) && !screen.contains(CLEAR),
        "{screen:?}"
    );
}

#[test]
fn pipes_get_the_bytes_as_they_are_with_or_without_raw() {
    let sandbox = Sandbox::with_user_servers(json!({ "evil": testserver(&[]) }));
    for args in [
        &["call", "mcp__evil__hostile"][..],
        &["--raw", "call", "mcp__evil__hostile"],
    ] {
        let out = sandbox.piped(args);
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        let stdout = String::from_utf8(out.stdout).unwrap();
        assert!(stdout.contains(RETITLE), "{stdout:?}");
        assert!(stdout.contains(CLEAR), "{stdout:?}");
        assert!(stdout.contains("\u{9b}31m"), "{stdout:?}");
    }
}

#[test]
fn raw_keeps_the_bytes_on_a_terminal_too() {
    let sandbox = Sandbox::with_user_servers(json!({ "evil": testserver(&[]) }));
    let (code, screen) = sandbox.on_terminal(&["--raw", "call", "mcp__evil__hostile"]);
    assert_eq!(code, Some(0), "{screen:?}");
    assert!(screen.contains(RETITLE), "{screen:?}");
    assert!(screen.contains(CLEAR), "{screen:?}");
}

#[test]
fn json_on_a_terminal_stays_valid_json_with_the_controls_escaped() {
    let sandbox = Sandbox::with_user_servers(json!({ "evil": testserver(&[]) }));
    let (code, screen) = sandbox.on_terminal(&["call", "--json", "mcp__evil__hostile"]);
    assert_eq!(code, Some(0), "{screen:?}");
    assert!(
        !screen.contains('\u{9b}') && !screen.contains('\u{202e}'),
        "{screen:?}"
    );
    // The pty turns "\n" into "\r\n"; undo that before parsing.
    let value: serde_json::Value = serde_json::from_str(&screen.replace("\r\n", "\n")).unwrap();
    assert!(
        value["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("\u{9b}31mred \u{202e}txt.exe"),
        "{value}"
    );
}

#[test]
fn structured_content_is_pretty_printed_on_a_terminal_and_kept_as_is_on_a_pipe() {
    let sandbox = Sandbox::with_user_servers(json!({ "t": testserver(&[]) }));
    let args = ["call", "mcp__t__add", r#"{"a":2,"b":3}"#];
    let (code, screen) = sandbox.on_terminal(&args);
    assert_eq!(code, Some(0), "{screen:?}");
    // The pty turns "\n" into "\r\n".
    assert!(
        screen
            .replace("\r\n", "\n")
            .contains("5\n\n{\n  \"sum\": 5\n}\n"),
        "{screen:?}"
    );
    let out = sandbox.piped(&args);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(String::from_utf8(out.stdout).unwrap(), "5\n");
}
