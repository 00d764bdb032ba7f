//! `mcpmux secret` and `${secret:NAME}` as a user meets them: a value goes in on stdin, reaches
//! the server, and is never printed — not by `servers`, `tools`, `call`, a failing start or a
//! trace log; a secrets file others can read is refused with the `chmod` to run.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

use serde_json::json;
use support::{Run, Sandbox, assert_code, table_row};

/// A value no output would hold by chance.
const VALUE: &str = "tok-Zq81-distinctive";

fn secrets_file(sandbox: &Sandbox) -> PathBuf {
    sandbox
        .home
        .join(".config")
        .join("mcpmux")
        .join("secrets.toml")
}

fn set(sandbox: &Sandbox, name: &str, stdin: &str) -> Run {
    sandbox.run_with_stdin(&["secret", "set", name], Some(stdin))
}

#[track_caller]
fn assert_hidden(run: &Run) {
    assert!(
        !run.stdout.contains(VALUE) && !run.stderr.contains(VALUE),
        "the secret's value was printed: {run:#?}"
    );
}

#[test]
fn a_secret_set_on_stdin_reaches_the_server_and_no_output_shows_it() {
    let sandbox = Sandbox::new();
    let run = set(&sandbox, "gh", &format!("{VALUE}\n"));
    assert_code(&run, 0);
    assert_hidden(&run);
    let mode = std::fs::metadata(secrets_file(&sandbox))
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o600);

    let http = support::testserver_http(&[]);
    let server = support::testserver().display().to_string();
    sandbox.write_file(
        &sandbox.home.join(".claude.json"),
        &json!({"mcpServers": {
            // Starts only when the secret, newline stripped, reached its environment.
            "ts": {"command": server, "args": ["--require-env-equal", "TOKEN=EXPECTED"], "env": {"TOKEN": "${secret:gh}", "EXPECTED": VALUE}},
            "web": {"url": http.url, "headers": {"Authorization": "Bearer ${secret:gh}"}},
            // A failing start whose error is shown.
            "bad": {"command": server, "args": ["--require-env-equal", "TOKEN=OTHER"], "env": {"TOKEN": "${secret:gh}", "OTHER": "x"}},
        }})
        .to_string(),
    );
    let trace = [("MCPMUX_LOG", "trace"), ("RUST_LOG", "trace")];
    let mut runs = Vec::new();
    for args in [
        &["servers"][..],
        &["servers", "--json"],
        &["tools"],
        &["tools", "--json"],
        &["call", "mcp__ts__echo", r#"{"text":"reached"}"#],
        &["call", "mcp__web__echo", r#"{"text":"reached"}"#],
        &["call", "mcp__bad__echo", r#"{"text":"x"}"#],
        &["secret", "list"],
    ] {
        runs.push(sandbox.run(args));
        runs.push(sandbox.run_with_env(args, &trace));
    }
    for run in &runs {
        assert_hidden(run);
    }
    let servers = &runs[0];
    assert!(
        table_row(&servers.stdout, "ts").contains("connected"),
        "{servers:#?}"
    );
    assert!(
        table_row(&servers.stdout, "web").contains("connected"),
        "{servers:#?}"
    );
    assert!(
        servers.stdout.contains("does not hold the expected value"),
        "the failing start is shown: {servers:#?}"
    );
    assert_eq!(runs[8].stdout, "reached\n", "{:#?}", runs[8]);
    assert_eq!(runs[10].stdout, "reached\n", "{:#?}", runs[10]);
    assert!(
        runs[14].stdout.lines().any(|l| l == "gh"),
        "{:#?}",
        runs[14]
    );
    // The trace runs did log: the check above is not vacuous.
    assert!(runs[1].stderr.len() > 1000, "{:#?}", runs[1]);
}

#[test]
fn a_secrets_file_others_can_read_is_refused_with_the_modes_and_the_chmod() {
    let sandbox = Sandbox::new();
    assert_code(&set(&sandbox, "gh", VALUE), 0);
    let file = secrets_file(&sandbox);
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    sandbox.write_file(
        &sandbox.home.join(".claude.json"),
        r#"{"mcpServers": {"s": {"command": "true", "env": {"T": "${secret:gh}"}}}}"#,
    );
    let run = sandbox.run(&["servers", "--json"]);
    assert_hidden(&run);
    assert!(
        run.stdout.contains("file mode 0644") && run.stdout.contains("chmod 600"),
        "{run:#?}"
    );
    let run = sandbox.run(&["secret", "list"]);
    assert_code(&run, 2);
    assert!(
        run.stderr.contains("chmod 600") && run.stderr.contains("secrets.toml"),
        "{run:#?}"
    );
    let run = set(&sandbox, "other", "v");
    assert_code(&run, 2);
    assert!(run.stderr.contains("file mode 0644"), "{run:#?}");

    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::set_permissions(
        file.parent().unwrap(),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    let run = sandbox.run(&["secret", "list"]);
    assert_code(&run, 2);
    assert!(
        run.stderr.contains("folder mode 0755") && run.stderr.contains("chmod 700"),
        "{run:#?}"
    );
}

#[test]
fn a_missing_secret_is_named_with_the_command_that_sets_it() {
    let sandbox = Sandbox::new();
    sandbox.write_file(
        &sandbox.home.join(".claude.json"),
        r#"{"mcpServers": {"s": {"url": "https://s.test/mcp", "headers": {"X-Key": "${secret:api}"}}}}"#,
    );
    let run = sandbox.run(&["servers", "--json"]);
    assert!(
        run.stdout.contains("headers.X-Key") && run.stdout.contains("mcpmux secret set api"),
        "{run:#?}"
    );
}

#[test]
fn a_value_is_taken_from_stdin_only_and_rm_forgets_it() {
    let sandbox = Sandbox::new();
    let run = sandbox.run(&["secret", "set", "gh", VALUE]);
    assert_code(&run, 2);
    assert!(
        !secrets_file(&sandbox).exists(),
        "a value given as an argument is not stored"
    );
    let run = set(&sandbox, "gh", "");
    assert_code(&run, 2);
    assert!(run.stderr.contains("empty"), "{run:#?}");
    let run = set(&sandbox, "bad name", "v");
    assert_code(&run, 2);
    assert!(run.stderr.contains("not a valid secret name"), "{run:#?}");

    assert_code(&set(&sandbox, "gh", &format!("{VALUE}\r\n")), 0);
    let stored = std::fs::read_to_string(secrets_file(&sandbox)).unwrap();
    assert!(
        stored.contains(&format!("\"{VALUE}\"")),
        "newline stripped: {stored}"
    );
    let run = sandbox.run(&["secret", "rm", "gh"]);
    assert_code(&run, 0);
    let run = sandbox.run(&["secret", "list"]);
    assert!(!run.stdout.lines().any(|l| l == "gh"), "{run:#?}");
    let run = sandbox.run(&["secret", "rm", "gh"]);
    assert_code(&run, 2);
    assert!(run.stderr.contains("no secret named \"gh\""), "{run:#?}");
}

#[test]
fn a_project_entry_reads_no_secret_until_approved_and_trust_names_the_secrets_it_uses() {
    let sandbox = Sandbox::new();
    assert_code(&set(&sandbox, "gh", VALUE), 0);
    let server = support::testserver().display().to_string();
    sandbox.write_file(
        &sandbox.project.join(".mcp.json"),
        &json!({"mcpServers": {"p": {"command": server, "args": ["--require-env-equal", "T=E"], "env": {"T": "${secret:gh}", "E": VALUE}}}}).to_string(),
    );
    // Refused if read: an unapproved entry must not touch it.
    let file = secrets_file(&sandbox);
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let run = sandbox.run(&["servers", "--json"]);
    assert!(
        run.stdout.contains("untrusted") && !run.stdout.contains("chmod"),
        "{run:#?}"
    );
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();

    let run = sandbox.run(&["trust"]);
    assert_code(&run, 0);
    assert!(run.stdout.contains("uses secrets: gh"), "{run:#?}");
    assert_hidden(&run);
    let run = sandbox.run(&["call", "mcp__p__echo", r#"{"text":"approved"}"#]);
    assert_eq!(run.stdout, "approved\n", "{run:#?}");
}

#[test]
fn a_value_typed_at_a_terminal_is_not_echoed() {
    use std::io::{Read, Write};
    use std::process::Stdio;
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    let sandbox = Sandbox::new();
    let mut cmd = support::on_pty(
        env!("CARGO_BIN_EXE_mcpmux").as_ref(),
        &["secret", "set", "gh"],
    );
    sandbox
        .hermetic(&mut cmd)
        .env("TERM", "xterm")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("util-linux `script` runs");
    let screen = Arc::new(Mutex::new(String::new()));
    let mut stdout = child.stdout.take().unwrap();
    let shown = Arc::clone(&screen);
    let reader = std::thread::spawn(move || {
        let mut buffer = [0u8; 1024];
        while let Ok(n) = stdout.read(&mut buffer) {
            if n == 0 {
                break;
            }
            shown
                .lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(&buffer[..n]));
        }
    });
    let prompted =
        support::eventually_blocking(Duration::from_secs(20), Duration::from_millis(10), || {
            screen
                .lock()
                .unwrap()
                .contains("value of secret")
                .then_some(())
        });
    assert!(
        prompted.is_some(),
        "no prompt: {:?}",
        screen.lock().unwrap()
    );
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(format!("{VALUE}\n").as_bytes()).unwrap();
    let status =
        support::eventually_blocking(Duration::from_secs(20), Duration::from_millis(10), || {
            child.try_wait().unwrap()
        });
    drop(stdin);
    if status.is_none() {
        let _ = child.kill();
    }
    let _ = child.wait();
    reader.join().unwrap();
    let screen = screen.lock().unwrap().clone();
    assert!(status.is_some_and(|s| s.success()), "{screen:?}");
    assert!(
        !screen.contains(VALUE),
        "the typed value was echoed: {screen:?}"
    );
    assert!(screen.contains("stored secret `gh`"), "{screen:?}");
    let stored = std::fs::read_to_string(secrets_file(&sandbox)).unwrap();
    assert!(stored.contains(&format!("gh = \"{VALUE}\"")), "{stored}");
}

#[test]
fn a_signal_at_the_value_prompt_leaves_the_terminal_echoing() {
    use std::io::Read;
    use std::process::Stdio;
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    let sandbox = Sandbox::new();
    // mcpmux reads the terminal while the shell waits to print the terminal's settings after.
    let line = format!(
        "'{}' secret set gh </dev/tty & echo \"pid=$!;\"; wait $!; echo \"exit=$?\"; stty -a",
        env!("CARGO_BIN_EXE_mcpmux")
    );
    let mut cmd = support::script(&line);
    sandbox
        .hermetic(&mut cmd)
        .env("TERM", "xterm")
        // Kept open: script ends the terminal's input when its own ends.
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("util-linux `script` runs");
    let screen = Arc::new(Mutex::new(String::new()));
    let mut stdout = child.stdout.take().unwrap();
    let shown = Arc::clone(&screen);
    let reader = std::thread::spawn(move || {
        let mut buffer = [0u8; 1024];
        while let Ok(n) = stdout.read(&mut buffer) {
            if n == 0 {
                break;
            }
            shown
                .lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(&buffer[..n]));
        }
    });
    let pid =
        support::eventually_blocking(Duration::from_secs(20), Duration::from_millis(10), || {
            let screen = screen.lock().unwrap();
            if !screen.contains("value of secret") {
                return None;
            }
            let start = screen.find("pid=")? + 4;
            let end = start + screen[start..].find(';')?;
            screen[start..end].parse::<i32>().ok()
        });
    let Some(pid) = pid else {
        panic!("no prompt: {:?}", screen.lock().unwrap());
    };
    // SAFETY: a plain kill of the process this test started (through script and sh).
    assert_eq!(
        unsafe { libc::kill(pid, libc::SIGTERM) },
        0,
        "pid {pid}: {:?}",
        screen.lock().unwrap()
    );
    let done =
        support::eventually_blocking(Duration::from_secs(20), Duration::from_millis(10), || {
            screen.lock().unwrap().contains("speed").then_some(())
        });
    drop(child.stdin.take());
    let _ = child.kill();
    let _ = child.wait();
    reader.join().unwrap();
    let screen = screen.lock().unwrap().clone();
    assert!(done.is_some(), "stty never ran: {screen:?}");
    assert!(
        screen.contains("exit=143"),
        "mcpmux should die of the signal: {screen:?}"
    );
    assert!(!screen.contains("-echo "), "echo left off: {screen:?}");
    assert!(!secrets_file(&sandbox).exists());
}
