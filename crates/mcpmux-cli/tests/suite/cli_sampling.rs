//! `mcpmux run` answers a server's `sampling/createMessage` with its own model: after the
//! person allowed it at a terminal (a pseudo-terminal, `script`), or at once with `--yes`;
//! refused without a terminal and without `--yes`. The scripted model endpoint shows the
//! request reached the model, and the test server's tool result shows the answer reached it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::cli_questions::Pty;
use crate::support;

use mcpmux_testmodel::{ScriptedModel, Step, Wire};
use serde_json::json;
use support::Sandbox;

const ASK: &str = r#"{"what":"sampling","message":"Say hello"}"#;

fn sandbox() -> Sandbox {
    Sandbox::with_user_servers(json!({
        "t": { "command": support::testserver(), "args": ["--era", "handshake"] }
    }))
}

/// The run's model: calls `ask_client` for a sampling request, answers that request (which
/// must carry the server's message), then ends with the tool's result in view.
async fn model() -> ScriptedModel {
    ScriptedModel::start(
        Wire::OpenAi,
        vec![
            Step::tool_calls([("mcp__t__ask_client", ASK)]),
            Step::text("Hello from the model").expect(|body| {
                let said = body["messages"].to_string();
                if said.contains("Say hello") && !said.contains("ask_client") {
                    Ok(())
                } else {
                    Err(format!("not the server's sampling request: {said}"))
                }
            }),
            Step::text("Done.").expect(|body| {
                let said = body["messages"].to_string();
                if said.contains("reply: Hello from the model (model test-model)") {
                    Ok(())
                } else {
                    Err(format!("the sampled reply did not reach the tool: {said}"))
                }
            }),
        ],
    )
    .await
    .unwrap()
}

/// A run's model that calls `ask_client` for a sampling request, then ends once the tool's
/// result shows the request refused with `refusal`.
async fn refused_model(refusal: &'static str) -> ScriptedModel {
    ScriptedModel::start(
        Wire::OpenAi,
        vec![
            Step::tool_calls([("mcp__t__ask_client", ASK)]),
            Step::text("Refused.").expect(move |body| {
                let said = body["messages"].to_string();
                if said.contains(refusal) {
                    Ok(())
                } else {
                    Err(format!("no refusal in view: {said}"))
                }
            }),
        ],
    )
    .await
    .unwrap()
}

fn env(model: &ScriptedModel) -> Vec<(&'static str, String)> {
    vec![
        ("OPENAI_BASE_URL", model.base_url()),
        ("MCPMUX_MODEL", "openai:test-model".into()),
    ]
}

const RUN: [&str; 3] = ["run", "Ask the server", "--all-tools"];

#[tokio::test(flavor = "multi_thread")]
async fn sampling_is_asked_at_the_terminal_and_answered_by_the_runs_model() {
    let model = model().await;
    let sandbox = sandbox();
    let env = env(&model);
    let (code, screen) = tokio::task::spawn_blocking(move || {
        let mut pty = Pty::start(&sandbox, &RUN, &env);
        pty.expect("server `t` asks the model (test-model) for a completion (1 message, at most 50 tokens, last: \"Say hello\"). Allow? [y/N] ");
        pty.send("y\n");
        pty.finish()
    })
    .await
    .unwrap();
    assert_eq!(code, Some(0), "{screen:?}");
    assert!(screen.contains("Done."), "{screen:?}");
    assert_eq!(model.violations(), Vec::<String>::new());
    assert_eq!(model.remaining(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn sampling_said_no_to_at_the_terminal_is_refused_to_the_server() {
    let model = refused_model("refused: -1 the user declined the sampling request").await;
    let sandbox = sandbox();
    let env = env(&model);
    let (code, screen) = tokio::task::spawn_blocking(move || {
        let mut pty = Pty::start(&sandbox, &RUN, &env);
        pty.expect("Allow? [y/N] ");
        pty.send("\n");
        pty.finish()
    })
    .await
    .unwrap();
    assert_eq!(code, Some(0), "{screen:?}");
    assert_eq!(model.violations(), Vec::<String>::new());
    assert_eq!(
        model.remaining(),
        0,
        "the model was asked twice, not three times"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn yes_lets_sampling_through_without_asking() {
    let model = model().await;
    let sandbox = sandbox();
    let mut cmd = sandbox.command(&["--yes", RUN[0], RUN[1], RUN[2]]);
    cmd.envs(env(&model));
    let run = tokio::task::spawn_blocking(move || support::run_command(cmd, None))
        .await
        .unwrap();
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, "Done.\n", "{run:?}");
    assert!(
        run.stderr
            .contains("server `t` asks the model for a completion (1 message, at most 50 tokens"),
        "{run:?}"
    );
    assert_eq!(model.violations(), Vec::<String>::new());
    assert_eq!(model.remaining(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn without_a_terminal_or_yes_sampling_is_refused_with_how_to_allow_it() {
    let model = refused_model("refused: -1 sampling was not approved").await;
    let sandbox = sandbox();
    let mut cmd = sandbox.command(&RUN);
    cmd.envs(env(&model));
    let run = tokio::task::spawn_blocking(move || support::run_command(cmd, None))
        .await
        .unwrap();
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(
        run.stderr.contains(
            "refused: there is no terminal to ask on (run on a terminal, or pass --yes to allow it)"
        ),
        "{run:?}"
    );
    assert_eq!(model.violations(), Vec::<String>::new());
    assert_eq!(model.remaining(), 0);
}
