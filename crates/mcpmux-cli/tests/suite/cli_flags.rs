//! The flags and streams every command shares: `-v` (a count) and `--log`/`MCPMUX_LOG` (a
//! filter) writing to stderr only, and every command ending quietly on a closed stdout.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::process::Stdio;

use support::{Sandbox, assert_code};

#[test]
fn verbose_flag_logs_to_stderr_only() {
    let sandbox = Sandbox::new();
    let run = sandbox.run(&["-vv", "call", "mcp__demo__echo", r#"{"text":"x"}"#]);
    assert_code(&run, 0);
    assert_eq!(run.stdout, "x\n", "logs must not reach stdout: {run:#?}");
    assert!(
        run.stderr.contains("DEBUG"),
        "debug logs expected: {run:#?}"
    );
}

/// `-v` counts: it takes no value, so `mcpmux -v tools` is the `tools` command, said louder.
#[test]
fn v_before_a_command_is_a_count_not_a_filter_that_swallows_the_command() {
    let sandbox = Sandbox::new();
    let run = sandbox.run(&["-v", "tools"]);
    assert_code(&run, 0);
    assert!(run.stdout.contains("mcp__demo__echo"), "{run:#?}");
    let run = sandbox.run(&["-vv", "tools"]);
    assert_code(&run, 0);
    assert!(run.stdout.contains("mcp__demo__echo"), "{run:#?}");
}

#[test]
fn log_flag_and_mcpmux_log_take_a_filter_and_a_malformed_one_is_refused() {
    let sandbox = Sandbox::new();
    let echo = ["call", "mcp__demo__echo", r#"{"text":"x"}"#];
    let run = sandbox.run(&[&["--log", "mcpmux=debug"][..], &echo].concat());
    assert_code(&run, 0);
    assert_eq!(run.stdout, "x\n", "{run:#?}");
    assert!(run.stderr.contains("DEBUG"), "{run:#?}");
    let run = sandbox.run_with_env(&echo, &[("MCPMUX_LOG", "mcpmux=debug")]);
    assert_code(&run, 0);
    assert!(run.stderr.contains("DEBUG"), "{run:#?}");
    let run = sandbox.run(&[&["--log", "mcpmux=loud"][..], &echo].concat());
    assert_code(&run, 2);
    assert!(run.stderr.contains("not a log filter"), "{run:#?}");
}

/// `mcpmux tools | head -1`: the reader goes away; `print!` then panics with a backtrace
/// instead of mcpmux exiting quietly. Every command that prints ends as if all was read:
/// exit 0, nothing on stderr about the pipe.
#[test]
fn every_command_ends_quietly_with_status_0_on_a_closed_stdout() {
    use std::os::fd::{FromRawFd, OwnedFd};
    let sandbox = Sandbox::new();
    let commands: &[&[&str]] = &[
        &["tools"],
        &["tools", "--format", "openai"],
        &["tools", "--json"],
        &["servers"],
        &["servers", "--json"],
        &["prompts"],
        &["call", "mcp__demo__echo", r#"{"text":"x"}"#],
        &["trust"],
        &["trust", "--revoke"],
        &["secret", "list"],
        &["add", "fs", "--", "echo", "hi"],
        &["remove", "fs"],
        &["completions", "bash"],
        &["man"],
        &["--help"],
        &["--version"],
    ];
    for args in commands {
        let mut fds = [0; 2];
        // SAFETY: `fds` has room for the two descriptors pipe(2) writes.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        // SAFETY: both descriptors were just opened by pipe(2) and are owned by nothing else.
        let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        drop(read);
        let output = sandbox
            .command(args)
            .stdin(Stdio::null())
            .stdout(Stdio::from(write))
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        let shown = args.join(" ");
        assert!(
            !stderr.contains("panicked") && !stderr.to_lowercase().contains("broken pipe"),
            "`mcpmux {shown}` with a closed stdout: {stderr}"
        );
        assert_eq!(output.status.code(), Some(0), "`mcpmux {shown}`: {stderr}");
    }
}
