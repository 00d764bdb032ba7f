//! `mcpmux call NAME --arg KEY=VALUE`: each value typed from the tool's input schema, beside
//! (and over) the JSON arguments, against the test server's tools.

use crate::support::*;

#[test]
fn arg_pairs_are_typed_from_the_tools_schema() {
    let sandbox = with_testserver(&[]);
    // `add` takes numbers: "2" must reach it as 2, not "2".
    let run = sandbox.run(&["call", "mcp__t__add", "--arg", "a=2", "--arg", "b=3.5"]);
    assert_code(&run, 0);
    assert_eq!(run.stdout.trim(), "5.5", "{run:#?}");
    // `echo` takes a string: "42" stays a string.
    let run = sandbox.run(&["call", "mcp__t__echo", "--arg", "text=42"]);
    assert_code(&run, 0);
    assert_eq!(run.stdout, "42\n", "{run:#?}");
    // With JSON arguments too: a pair wins over the JSON's key.
    let run = sandbox.run(&["call", "mcp__t__add", r#"{"a":1,"b":1}"#, "--arg", "b=10"]);
    assert_code(&run, 0);
    assert_eq!(run.stdout.trim(), "11", "{run:#?}");
}

#[test]
fn an_arg_value_the_schema_does_not_admit_is_refused_before_the_call() {
    let sandbox = with_testserver(&[]);
    let run = sandbox.run(&["call", "mcp__t__add", "--arg", "a=two", "--arg", "b=1"]);
    assert_code(&run, 2);
    assert!(
        run.stderr
            .contains("--arg a=two: the tool's schema says `a` is a JSON number"),
        "{run:#?}"
    );
    let run = sandbox.run(&["call", "mcp__t__add", "--arg", "novalue"]);
    assert_code(&run, 2);
    assert!(run.stderr.contains("expected KEY=VALUE"), "{run:#?}");
}
