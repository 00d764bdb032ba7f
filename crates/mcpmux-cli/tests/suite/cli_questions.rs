//! A server's questions at the terminal: `call` and `run` answer an elicitation with a form
//! typed under a real pseudo-terminal (util-linux `script`, driven like `expect`: each answer
//! is typed once its prompt shows), decline it cleanly without a terminal, and `call` draws the
//! server's progress notifications as a progress line on a terminal only. `run`'s sampling is
//! in `cli_sampling.rs`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::io::{Read, Write};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;
use support::Sandbox;

/// How long a prompt may take to show before the test fails (a bound, not a wait).
pub(crate) const PATIENCE: Duration = Duration::from_secs(60);

/// `mcpmux` on a pseudo-terminal, typed at as a person would.
pub(crate) struct Pty {
    child: Child,
    keys: Option<ChildStdin>,
    screen: Arc<(Mutex<String>, Condvar)>,
    /// How far `expect` has read.
    seen: usize,
}

impl Pty {
    /// `mcpmux ARGS` in `sandbox` with stdin, stdout and stderr on one pseudo-terminal.
    pub(crate) fn start(sandbox: &Sandbox, args: &[&str], env: &[(&str, String)]) -> Pty {
        let mut cmd = support::on_pty(env!("CARGO_BIN_EXE_mcpmux").as_ref(), args);
        sandbox.hermetic(&mut cmd).env("TERM", "xterm");
        for (name, value) in env {
            cmd.env(name, value);
        }
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("util-linux `script` runs");
        let keys = child.stdin.take();
        let screen = Arc::new((Mutex::new(String::new()), Condvar::new()));
        let mut out = child.stdout.take().unwrap();
        let shared = screen.clone();
        std::thread::spawn(move || {
            let mut buffer = [0u8; 4096];
            while let Ok(n) = out.read(&mut buffer) {
                if n == 0 {
                    break;
                }
                let (text, changed) = &*shared;
                text.lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner())
                    .push_str(&String::from_utf8_lossy(&buffer[..n]));
                changed.notify_all();
            }
        });
        Pty {
            child,
            keys,
            screen,
            seen: 0,
        }
    }

    /// Waits until `text` shows after what was already seen, and moves past it.
    #[track_caller]
    pub(crate) fn expect(&mut self, text: &str) {
        let (screen, changed) = &*self.screen;
        let deadline = Instant::now() + PATIENCE;
        let mut shown = screen.lock().unwrap();
        loop {
            if let Some(at) = shown[self.seen..].find(text) {
                self.seen += at + text.len();
                return;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(
                !left.is_zero(),
                "never showed {text:?}; the screen: {shown:?}"
            );
            shown = changed.wait_timeout(shown, left).unwrap().0;
        }
    }

    /// The pid of the terminal's program (`script`): mcpmux and its servers are below it.
    pub(crate) fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// Types `keys`.
    pub(crate) fn send(&mut self, keys: &str) {
        let pipe = self.keys.as_mut().unwrap();
        pipe.write_all(keys.as_bytes()).unwrap();
        pipe.flush().unwrap();
    }

    /// Waits for the end: the exit code and the whole screen.
    pub(crate) fn finish(mut self) -> (Option<i32>, String) {
        let deadline = Instant::now() + PATIENCE;
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!("did not end: {:?}", self.screen.0.lock().unwrap());
            }
            // Polls a child process: there is no portable wait with a timeout.
            std::thread::sleep(Duration::from_millis(20));
        };
        self.keys = None;
        // The reader has the rest once the pty closes.
        let (screen, changed) = &*self.screen;
        let shown = screen.lock().unwrap();
        let shown = changed
            .wait_timeout(shown, Duration::from_millis(200))
            .unwrap()
            .0;
        (status.code(), shown.clone())
    }
}

fn sandbox() -> Sandbox {
    Sandbox::with_user_servers(json!({
        "t": { "command": support::testserver(), "args": ["--era", "handshake"] }
    }))
}

const FORM: &str = r#"{"what":"form","message":"Tell us about you"}"#;
const SECRET: &str = "s3cret-tok";

#[test]
fn a_form_is_filled_at_the_terminal_and_the_server_gets_the_typed_values() {
    let sandbox = sandbox();
    let mut pty = Pty::start(&sandbox, &["call", "mcp__t__ask_client", FORM], &[]);
    pty.expect("server `t` asks for input:");
    pty.expect("Tell us about you");
    pty.expect("Answer? [Y]es, [n]o (decline), [c]ancel: ");
    pty.send("y\n");
    // Fields come in the order of their names: the schema's object keeps no other.
    pty.expect("Age: ");
    pty.send("forty\n");
    pty.expect("`forty` is not a whole number");
    pty.expect("Age: ");
    pty.send("200\n");
    pty.expect("give a number from 0 to 150");
    pty.expect("Age: ");
    pty.send("41\n");
    pty.expect("1) Red");
    pty.expect("3) Blue");
    pty.expect("Colour [1-3]: ");
    pty.send("2\n");
    pty.expect("Name (What to call you): ");
    pty.send("Ann\n");
    pty.expect("Subscribe [y/n] (default n): ");
    pty.send("y\n");
    pty.expect("Token (not shown): ");
    pty.send(&format!("{SECRET}\n"));
    let (code, screen) = pty.finish();
    assert_eq!(code, Some(0), "{screen:?}");
    let reversed: String = SECRET.chars().rev().collect();
    assert!(
        screen.contains(&format!(
            r#"form: {{"age":41,"color":"green","name":"Ann","subscribe":true,"token":"reversed:{reversed}"}}"#
        )),
        "{screen:?}"
    );
    assert!(!screen.contains(SECRET), "the secret was shown: {screen:?}");
    // What was typed elsewhere was echoed as usual.
    assert!(screen.contains("Ann"), "{screen:?}");
}

#[test]
fn defaults_are_taken_on_enter_and_required_fields_are_insisted_on() {
    let sandbox = sandbox();
    let mut pty = Pty::start(&sandbox, &["call", "mcp__t__ask_client", FORM], &[]);
    pty.expect("Answer? ");
    pty.send("\n");
    pty.expect("Age: ");
    pty.send("7\n");
    pty.expect("Colour [1-3]: ");
    pty.send("blue\n");
    pty.expect("Name (What to call you): ");
    pty.send("\n");
    pty.expect("required: please give a value");
    pty.expect("Name (What to call you): ");
    pty.send("Bo\n");
    pty.expect("Subscribe [y/n] (default n): ");
    pty.send("\n");
    pty.expect("Token (not shown): ");
    pty.send("x\n");
    let (code, screen) = pty.finish();
    assert_eq!(code, Some(0), "{screen:?}");
    assert!(
        screen.contains(
            r#"form: {"age":7,"color":"blue","name":"Bo","subscribe":false,"token":"reversed:x"}"#
        ),
        "{screen:?}"
    );
}

#[test]
fn a_form_declined_at_the_terminal_is_declined_to_the_server() {
    let sandbox = sandbox();
    let mut pty = Pty::start(&sandbox, &["call", "mcp__t__ask_client", FORM], &[]);
    pty.expect("Answer? ");
    pty.send("n\n");
    let (code, screen) = pty.finish();
    assert_eq!(code, Some(0), "{screen:?}");
    assert!(screen.contains("form: (decline)"), "{screen:?}");
    assert!(!screen.contains("Name ("), "{screen:?}");
}

#[test]
fn ctrl_c_cancels_the_form_not_mcpmux() {
    let sandbox = sandbox();
    let mut pty = Pty::start(&sandbox, &["call", "mcp__t__ask_client", FORM], &[]);
    pty.expect("Answer? ");
    pty.send("y\n");
    pty.expect("Age: ");
    pty.send("\u{3}");
    pty.expect("input for `t` cancelled (Ctrl-C again ends mcpmux)");
    let (code, screen) = pty.finish();
    assert_eq!(code, Some(0), "{screen:?}");
    assert!(screen.contains("form: (cancel)"), "{screen:?}");
}

#[test]
fn a_secret_typed_is_never_echoed_even_when_ctrl_c_ends_its_prompt() {
    let sandbox = sandbox();
    let mut pty = Pty::start(&sandbox, &["call", "mcp__t__ask_client", FORM], &[]);
    pty.expect("Answer? ");
    pty.send("y\n41\n1\nAnn\nn\n");
    pty.expect("Token (not shown): ");
    // Typed, not yet entered, then Ctrl-C: the tty drops the line, echo comes back on.
    pty.send(SECRET);
    pty.send("\u{3}");
    pty.expect("cancelled");
    let (code, screen) = pty.finish();
    assert_eq!(code, Some(0), "{screen:?}");
    assert!(screen.contains("form: (cancel)"), "{screen:?}");
    assert!(!screen.contains(SECRET), "{screen:?}");
}

#[test]
fn without_a_terminal_a_form_is_declined_with_how_to_answer() {
    let sandbox = sandbox();
    let run = sandbox.run_within(&["call", "mcp__t__ask_client", FORM], PATIENCE);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout.trim(), "form: (decline)", "{run:?}");
    assert!(
        run.stderr.contains(
            "server `t` asked for input (Tell us about you); declined: there is no terminal to \
             ask on (run mcpmux on a terminal to answer)"
        ),
        "{run:?}"
    );
}

#[test]
fn a_servers_form_text_is_shown_escaped() {
    let sandbox = sandbox();
    let hostile = r#"{"what":"form","message":"hi \u001b]0;pwned\u0007 \u001b[2J there"}"#;
    let mut pty = Pty::start(&sandbox, &["call", "mcp__t__ask_client", hostile], &[]);
    pty.expect(r"hi \x1b]0;pwned\x07 \x1b[2J there");
    pty.expect("Answer? ");
    pty.send("c\n");
    let (code, screen) = pty.finish();
    assert_eq!(code, Some(0), "{screen:?}");
    assert!(screen.contains("form: (cancel)"), "{screen:?}");
    assert!(!screen.contains("\u{1b}]0;pwned"), "{screen:?}");
}

#[test]
fn progress_shows_as_a_line_on_a_terminal_cleared_before_the_result() {
    let sandbox = sandbox();
    let mut pty = Pty::start(
        &sandbox,
        &["call", "mcp__t__slow", r#"{"ms":1200,"steps":4}"#],
        &[],
    );
    pty.expect("/4 step 1/4");
    let (code, screen) = pty.finish();
    assert_eq!(code, Some(0), "{screen:?}");
    let result = screen.find("done after 4 steps").expect("the result");
    let last = screen.rfind("/4 step ").unwrap();
    assert!(last < result, "{screen:?}");
    // The line is erased (indicatif clears it) before the result is written.
    assert!(screen[last..result].contains("\u{1b}["), "{screen:?}");
}

#[test]
fn progress_is_not_drawn_on_a_pipe() {
    let sandbox = sandbox();
    let run = sandbox.run_within(
        &["call", "mcp__t__slow", r#"{"ms":400,"steps":4}"#],
        PATIENCE,
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, "done after 4 steps\n");
    assert!(!run.stderr.contains("step"), "{run:?}");
}

#[test]
fn a_second_ctrl_c_ends_mcpmux_and_its_servers() {
    let sandbox = sandbox();
    // `together: 2` with one call: the server asks after a 100 ms gather wait, and with
    // `linger` stays in the call (20 s at most) after the answer, so the second Ctrl-C finds
    // mcpmux waiting.
    let form = r#"{"what":"form","message":"Tell us","together":2,"gather_ms":100,"linger":true}"#;
    let mut pty = Pty::start(&sandbox, &["call", "mcp__t__ask_client", form], &[]);
    pty.expect("Answer? ");
    let servers: std::collections::BTreeSet<i32> = support::descendants(pty.pid())
        .into_iter()
        .filter(|p| p.cmdline.contains("testserver"))
        .map(|p| p.pid)
        .collect();
    assert!(!servers.is_empty(), "the server runs below mcpmux");
    pty.send("y\n");
    pty.expect("Age: ");
    pty.send("\u{3}");
    pty.expect("(Ctrl-C again ends mcpmux)");
    pty.send("\u{3}");
    pty.expect("mcpmux: interrupted");
    let (code, screen) = pty.finish();
    assert_eq!(code, Some(130), "{screen:?}");
    assert!(
        !screen.contains("form: "),
        "the call did not end first: {screen:?}"
    );
    let left = support::wait_gone(&servers, Duration::from_secs(10));
    assert!(left.is_empty(), "servers left: {left:?}");
}
