//! `mcpmux completions SHELL` and `mcpmux man`: written from the argument definitions, they
//! name every command and render as roff.

use crate::support::*;

#[test]
fn completion_scripts_for_each_shell_name_the_subcommands() {
    let sandbox = Sandbox::new();
    for shell in ["bash", "zsh", "fish", "powershell"] {
        let run = sandbox.run(&["completions", shell]);
        assert_code(&run, 0);
        for command in ["servers", "tools", "call", "serve", "completions", "man"] {
            assert!(
                run.stdout.contains(command),
                "{shell}: `{command}` missing: {run:#?}"
            );
        }
        assert!(run.stdout.contains("no-cache"), "{shell}: {run:#?}");
        assert!(run.stderr.is_empty(), "{shell}: {run:#?}");
    }
    let run = sandbox.run(&["completions", "tcsh"]);
    assert_code(&run, 2);
}

#[test]
fn man_prints_a_roff_page_with_the_commands_and_global_flags() {
    let sandbox = Sandbox::new();
    let run = sandbox.run(&["man"]);
    assert_code(&run, 0);
    assert!(run.stdout.contains(".TH mcpmux"), "{run:#?}");
    for text in ["serve", "completions", "\\-\\-log", "\\-\\-import"] {
        assert!(
            run.stdout.contains(text),
            "`{text}` missing: {}",
            run.stdout
        );
    }
}
