//! `mcpmux prompts get NAME --arg KEY=VALUE` against the test server's `greet` prompt.

use crate::support::*;

#[test]
fn prompts_get_fills_in_the_prompt_from_the_server_that_lists_it() {
    let sandbox = with_testserver(&["--prompts"]);
    let run = sandbox.run(&["prompts", "get", "greet", "--arg", "name=Ada"]);
    assert_code(&run, 0);
    assert_eq!(run.stdout, "[user]\nSay hello to Ada.\n", "{run:#?}");

    let run = sandbox.run(&[
        "prompts", "get", "greet", "--server", "t", "--arg", "name=A=B", "--json",
    ]);
    assert_code(&run, 0);
    let prompt = json(&run);
    assert_eq!(prompt["messages"][0]["role"], "user", "{run:#?}");
    assert_eq!(
        prompt["messages"][0]["content"]["text"], "Say hello to A=B.",
        "a value keeps its own `=`: {run:#?}"
    );

    // The listing is still `mcpmux prompts`.
    let run = sandbox.run(&["prompts"]);
    assert_code(&run, 0);
    assert!(table_row(&run.stdout, "t").contains("greet"), "{run:#?}");
}

#[test]
fn prompts_get_says_what_is_wrong_with_a_name_an_argument_or_a_missing_value() {
    let sandbox = with_testserver(&["--prompts"]);
    let run = sandbox.run(&["prompts", "get", "nope"]);
    assert_code(&run, 2);
    assert!(
        run.stderr.contains("no server lists a prompt `nope`"),
        "{run:#?}"
    );

    let run = sandbox.run(&["prompts", "get", "greet", "--arg", "name"]);
    assert_code(&run, 2);
    assert!(run.stderr.contains("expected KEY=VALUE"), "{run:#?}");

    // The server's own refusal, for a required argument left out.
    let run = sandbox.run(&["prompts", "get", "greet"]);
    assert_code(&run, 2);
    assert!(run.stderr.contains("`name` is required"), "{run:#?}");
    assert!(run.stdout.is_empty(), "{run:#?}");
}
