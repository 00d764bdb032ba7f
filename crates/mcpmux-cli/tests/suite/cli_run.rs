//! `mcpmux run`: the binary against a scripted model on a real 127.0.0.1 endpoint (OpenAI and
//! Anthropic wire formats) and the built-in demo server: what a person sees on stdout and
//! stderr, the exit code, the transcript file, and the one-line errors for a model that cannot
//! be reached.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use mcpmux_testmodel::{ScriptedModel, Step, Wire};
use support::{Run, Sandbox};

/// Runs `mcpmux ARGS` in `sandbox` off the test's runtime (the scripted model serves on it),
/// with the provider variables of this machine removed and `env` set.
async fn mcpmux(sandbox: &Sandbox, args: &[&str], env: &[(&str, String)]) -> Run {
    let mut cmd = sandbox.command(args);
    for name in [
        "OPENAI_BASE_URL",
        "OPENAI_API_KEY",
        "ANTHROPIC_BASE_URL",
        "ANTHROPIC_API_KEY",
        "MCPMUX_MODEL",
    ] {
        cmd.env_remove(name);
    }
    for (name, value) in env {
        cmd.env(name, value);
    }
    tokio::task::spawn_blocking(move || support::run_command(cmd, None))
        .await
        .unwrap()
}

fn openai_env(model: &ScriptedModel) -> Vec<(&'static str, String)> {
    vec![("OPENAI_BASE_URL", model.base_url())]
}

#[tokio::test(flavor = "multi_thread")]
async fn run_streams_the_answer_shows_each_tool_call_and_the_usage_and_exits_0() {
    for wire in [Wire::OpenAi, Wire::Anthropic] {
        let model = ScriptedModel::start(
            wire,
            vec![
                Step::tool_calls([("mcp__demo__add", r#"{"a":2,"b":3}"#)]).with_usage(120, 9),
                Step::text("The sum is 5.").with_usage(160, 6),
            ],
        )
        .await
        .unwrap();
        let (spec, env) = match wire {
            Wire::OpenAi => ("openai:test-model", openai_env(&model)),
            Wire::Anthropic => (
                "anthropic:test-model",
                vec![
                    ("ANTHROPIC_BASE_URL", model.base_url()),
                    ("ANTHROPIC_API_KEY", "sk-ant-test".to_string()),
                ],
            ),
        };
        let sandbox = Sandbox::new();
        let run = mcpmux(
            &sandbox,
            &[
                "run",
                "What is 2 + 3?",
                "--model",
                spec,
                "--system",
                "Use tools.",
            ],
            &env,
        )
        .await;
        assert_eq!(run.code, Some(0), "{wire:?}: {run:?}");
        assert_eq!(run.stdout, "The sum is 5.\n", "{wire:?}");
        assert!(
            run.stderr.contains("→ mcp__demo__add {\"a\":2,\"b\":3}"),
            "{}",
            run.stderr
        );
        assert!(run.stderr.contains("← mcp__demo__add: 5"), "{}", run.stderr);
        assert!(
            run.stderr
                .contains("2 turns, 1 tool call, 280 tokens in, 15 out"),
            "{}",
            run.stderr
        );
        assert_eq!(model.violations(), Vec::<String>::new(), "{wire:?}");
        let first = &model.requests()[0].body;
        let system = match wire {
            Wire::OpenAi => first["messages"][0]["content"].clone(),
            Wire::Anthropic => first["system"].clone(),
        };
        assert_eq!(system, "Use tools.", "{wire:?}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_transcript_file_is_written_and_continued_by_the_next_run() {
    let model = ScriptedModel::start(
        Wire::OpenAi,
        vec![
            Step::text("Noted: milk."),
            Step::text("You asked me to remember milk.").expect(|body| {
                let said = body["messages"].to_string();
                if said.contains("remember milk") && said.contains("Noted: milk.") {
                    Ok(())
                } else {
                    Err(format!("the first exchange is missing: {said}"))
                }
            }),
        ],
    )
    .await
    .unwrap();
    let sandbox = Sandbox::new();
    let file = sandbox.project.join("chat.jsonl");
    let file_arg = file.to_string_lossy().to_string();
    let env = openai_env(&model);
    let first = mcpmux(
        &sandbox,
        &[
            "run",
            "remember milk",
            "-m",
            "openai:m",
            "--transcript",
            &file_arg,
        ],
        &env,
    )
    .await;
    assert_eq!(first.code, Some(0), "{first:?}");
    assert_eq!(std::fs::read_to_string(&file).unwrap().lines().count(), 3);
    let second = mcpmux(
        &sandbox,
        &[
            "run",
            "what did I ask?",
            "-m",
            "openai:m",
            "--transcript",
            &file_arg,
        ],
        &env,
    )
    .await;
    assert_eq!(second.code, Some(0), "{second:?}");
    assert_eq!(second.stdout, "You asked me to remember milk.\n");
    // Four messages and the usage line.
    assert_eq!(std::fs::read_to_string(&file).unwrap().lines().count(), 5);
    assert_eq!(model.violations(), Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_stopped_by_the_iteration_limit_exits_3_saying_why() {
    let model = ScriptedModel::start(
        Wire::OpenAi,
        vec![Step::tool_calls([(
            "mcp__demo__echo",
            r#"{"text":"again"}"#,
        )])],
    )
    .await
    .unwrap();
    let sandbox = Sandbox::new();
    let run = mcpmux(
        &sandbox,
        &["run", "loop", "-m", "openai:m", "--max-iterations", "1"],
        &openai_env(&model),
    )
    .await;
    assert_eq!(run.code, Some(3), "{run:?}");
    assert!(run.stderr.contains("iteration limit"), "{}", run.stderr);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_ask_rule_is_refused_without_a_terminal_and_approved_with_yes() {
    let sandbox = Sandbox::new();
    let policy = sandbox.project.join("policy.toml");
    sandbox.write_file(&policy, "[policy]\nask = [\"mcp__demo__add\"]\n");
    let policy = policy.to_string_lossy().to_string();
    for (yes, shown) in [(false, "✗ mcp__demo__add"), (true, "← mcp__demo__add: 5")] {
        let model = ScriptedModel::start(
            Wire::OpenAi,
            vec![
                Step::tool_calls([("mcp__demo__add", r#"{"a":2,"b":3}"#)]),
                Step::text("done"),
            ],
        )
        .await
        .unwrap();
        let mut args = vec!["run", "add", "-m", "openai:m", "--config", &policy];
        if yes {
            args.push("--yes");
        }
        let run = mcpmux(&sandbox, &args, &openai_env(&model)).await;
        assert_eq!(run.code, Some(0), "{run:?}");
        assert!(run.stderr.contains(shown), "yes={yes}: {}", run.stderr);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_model_that_cannot_be_used_is_one_line_naming_what_to_set() {
    let sandbox = Sandbox::new();
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    type Case<'a> = (&'a str, Vec<(&'a str, String)>, &'a str);
    let cases: [Case; 4] = [
        ("gpt-4o", vec![], "openai:MODEL"),
        ("openai:gpt-4o", vec![], "OPENAI_API_KEY"),
        ("anthropic:claude-sonnet-4-5", vec![], "ANTHROPIC_API_KEY"),
        (
            "openai:m",
            vec![("OPENAI_BASE_URL", format!("http://127.0.0.1:{closed}/v1"))],
            "OPENAI_BASE_URL",
        ),
    ];
    for (spec, env, named) in cases {
        let run = mcpmux(&sandbox, &["run", "hi", "--model", spec], &env).await;
        assert_eq!(run.code, Some(2), "{spec}: {run:?}");
        let errors: Vec<&str> = run
            .stderr
            .lines()
            .filter(|l| !l.contains("built-in demo"))
            .collect();
        assert_eq!(errors.len(), 1, "{spec}: {}", run.stderr);
        assert!(errors[0].contains(named), "{spec}: {}", errors[0]);
        assert_eq!(run.stdout, "", "{spec}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_large_catalog_is_deferred_behind_search_tools_with_pinned_tools_sent() {
    let sandbox = Sandbox::with_user_servers(serde_json::json!({
        "t": {
            "command": support::testserver().to_string_lossy(),
            "args": ["--many-tools", "300"]
        }
    }));
    let model = ScriptedModel::start(Wire::OpenAi, vec![Step::text("ok")])
        .await
        .unwrap();
    let run = mcpmux(
        &sandbox,
        &[
            "run",
            "hi",
            "-m",
            "openai:m",
            "--pin",
            "mcp__t__echo",
            "--pin",
            "mcp__t__add",
        ],
        &openai_env(&model),
    )
    .await;
    assert_eq!(run.code, Some(0), "{run:?}");
    let names: Vec<String> = model.requests()[0]
        .tools()
        .iter()
        .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
        .collect();
    assert_eq!(names, ["mcp__t__add", "mcp__t__echo", "search_tools"]);
}
