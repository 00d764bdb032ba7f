//! The tool loop against a real HTTP endpoint speaking each provider's wire format (streamed
//! and not), over a hub on the real test server: tool calls run through the hub, results go
//! back once per call id, and every way a model can get a call wrong comes back to it as an
//! error result it can act on.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use mcpmux_agent::{AgentEvent, AgentOptions, Block, Role, StopReason, Transcript};
use mcpmux_testmodel::{Step, Wire};
use serde_json::json;
use support::{MODES, agent, hub, run, tool_results};

#[tokio::test]
async fn a_tool_call_runs_through_the_hub_and_the_model_answers_from_its_result() {
    let hub = hub().await;
    for (wire, stream) in MODES {
        let steps = vec![
            Step::text_and_tool_calls("Let me add.", [("mcp__t__add", r#"{"a":2,"b":3}"#)])
                .with_usage(100, 10),
            Step::text("2 + 3 = 5.").with_usage(150, 5).expect(|body| {
                let results = tool_results(body);
                match results.as_slice() {
                    [(text, error)]
                        if text.contains('5')
                            && text.contains("untrusted_content")
                            && *error != Some(true) =>
                    {
                        Ok(())
                    }
                    other => Err(format!(
                        "expected one wrapped result holding 5, got {other:?}"
                    )),
                }
            }),
        ];
        let (model, agent) = agent(&hub, wire, stream, steps, AgentOptions::default()).await;
        let mut transcript = Transcript::new();
        let (outcome, events) = run(&agent, &mut transcript, Some("What is 2 + 3?")).await;
        let mode = format!("{wire:?} stream={stream}");
        assert_eq!(outcome.stop, StopReason::Final, "{mode}");
        assert_eq!(outcome.answer, "2 + 3 = 5.", "{mode}");
        assert_eq!((outcome.iterations, outcome.tool_calls), (2, 1), "{mode}");
        assert_eq!(
            (outcome.usage.input_tokens, outcome.usage.output_tokens),
            (250, 15),
            "{mode}"
        );
        assert_eq!(transcript.usage, outcome.usage, "{mode}");
        assert_eq!(model.violations(), Vec::<String>::new(), "{mode}");
        assert_eq!(model.remaining(), 0, "{mode}");
        // user, assistant (text + call), user (result), assistant (answer).
        let roles: Vec<Role> = transcript.messages.iter().map(|m| m.role).collect();
        assert_eq!(
            roles,
            [Role::User, Role::Assistant, Role::User, Role::Assistant],
            "{mode}"
        );
        let text: String = events
            .iter()
            .filter_map(|e| match e {
                AgentEvent::Text(t) => Some(t.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(
            text, "Let me add.2 + 3 = 5.",
            "{mode}: text streamed as events"
        );
        assert!(
            events.iter().any(|e| matches!(e, AgentEvent::ToolResult { tool, is_error: false, text, .. } if tool == "mcp__t__add" && text == "5")),
            "{mode}: {events:?}"
        );
        // The request carried the hub's tools in the provider's format.
        let first = &model.requests()[0];
        let offered = support::offered(&first.body);
        assert!(
            offered.contains(&"mcp__t__add".to_string()),
            "{mode}: {offered:?}"
        );
        if wire == Wire::Anthropic {
            assert_eq!(first.header("anthropic-version"), Some("2023-06-01"));
            assert_eq!(first.header("x-api-key"), Some("sk-test"));
        } else {
            assert_eq!(first.header("authorization"), Some("Bearer sk-test"));
        }
    }
    hub.shutdown().await;
}

#[tokio::test]
async fn parallel_tool_calls_run_concurrently_and_each_id_is_answered_once_in_order() {
    let hub = hub().await;
    for (wire, stream) in MODES {
        let steps = vec![
            Step::tool_calls([
                ("mcp__t__slow", r#"{"ms":300,"steps":1}"#),
                ("mcp__t__echo", r#"{"text":"second"}"#),
                ("mcp__t__slow", r#"{"ms":200,"steps":1}"#),
            ]),
            Step::text("done").expect(|body| {
                let results = tool_results(body);
                if results.len() == 3 && results[1].0.contains("second") {
                    Ok(())
                } else {
                    Err(format!("results out of order: {results:?}"))
                }
            }),
        ];
        let (model, agent) = agent(&hub, wire, stream, steps, AgentOptions::default()).await;
        let (outcome, events) = run(&agent, &mut Transcript::new(), Some("go")).await;
        let mode = format!("{wire:?} stream={stream}");
        assert_eq!(outcome.stop, StopReason::Final, "{mode}");
        assert_eq!(model.violations(), Vec::<String>::new(), "{mode}");
        // Every call started before the first one ended: they ran at once.
        let order: Vec<&str> = events
            .iter()
            .filter_map(|e| match e {
                AgentEvent::ToolCall { .. } => Some("call"),
                AgentEvent::ToolResult { .. } => Some("result"),
                _ => None,
            })
            .collect();
        assert_eq!(
            order,
            ["call", "call", "call", "result", "result", "result"],
            "{mode}"
        );
    }
    hub.shutdown().await;
}

#[tokio::test]
async fn every_wrong_call_goes_back_to_the_model_as_an_error_it_can_act_on() {
    let hub = hub().await;
    for (wire, stream) in MODES {
        // Anthropic's non-streamed `input` is always an object: a malformed one can only
        // arrive streamed.
        let malformed = wire == Wire::OpenAi || stream;
        let mut calls = vec![
            ("mcp__t__ad", r#"{"a":1,"b":2}"#),
            ("mcp__t__add", r#"{"a":"two","b":2}"#),
            ("mcp__t__fail", r#"{"message":"disk on fire"}"#),
        ];
        if malformed {
            calls.push(("mcp__t__add", r#"{"a":2,"#));
        }
        let expected = calls.len();
        let steps = vec![
            Step::tool_calls(calls),
            Step::tool_calls([("mcp__t__add", r#"{"a":2,"b":2}"#)]),
            Step::text("fixed"),
        ];
        let (model, agent) = agent(&hub, wire, stream, steps, AgentOptions::default()).await;
        let (outcome, _) = run(&agent, &mut Transcript::new(), Some("go")).await;
        let mode = format!("{wire:?} stream={stream}");
        assert_eq!(outcome.stop, StopReason::Final, "{mode}: not a failed run");
        assert_eq!(model.violations(), Vec::<String>::new(), "{mode}");
        let second = &model.requests()[1].body;
        let results = tool_results(second);
        assert_eq!(results.len(), expected, "{mode}: {results:?}");
        assert!(
            results[0].0.contains("no tool named `mcp__t__ad`"),
            "{mode}: {}",
            results[0].0
        );
        assert!(
            results[0].0.contains("did you mean `mcp__t__add`"),
            "{mode}: {}",
            results[0].0
        );
        assert!(
            results[1].0.contains("invalid arguments"),
            "{mode}: {}",
            results[1].0
        );
        assert!(
            results[2].0.contains("disk on fire"),
            "{mode}: {}",
            results[2].0
        );
        if malformed {
            assert!(
                results[3].0.contains("not valid JSON"),
                "{mode}: {}",
                results[3].0
            );
        }
        if wire == Wire::Anthropic {
            assert!(
                results.iter().all(|(_, e)| *e == Some(true)),
                "{mode}: {results:?}"
            );
        }
        let third = tool_results(&model.requests()[2].body);
        assert!(third.last().unwrap().0.contains('4'), "{mode}: {third:?}");
    }
    hub.shutdown().await;
}

#[tokio::test]
async fn a_policy_refusal_and_an_approvers_no_reach_the_model_as_error_results() {
    let mut rules = mcpmux::config::PolicyRules::default();
    rules.deny.push("mcp__t__fail".into());
    rules.ask.push("mcp__t__echo".into());
    let approver: std::sync::Arc<dyn mcpmux::Approver> =
        std::sync::Arc::new(mcpmux::policy::DenyAll);
    let hub = support::hub_with(
        vec![support::testserver_spec(&[])],
        mcpmux::HubOptions::ephemeral()
            .with_policy(rules)
            .with_approver(approver),
    )
    .await;
    let steps = vec![
        Step::tool_calls([("mcp__t__fail", "{}"), ("mcp__t__echo", r#"{"text":"hi"}"#)]),
        Step::text("I may not."),
    ];
    let (model, agent) = agent(&hub, Wire::Anthropic, true, steps, AgentOptions::default()).await;
    let (outcome, _) = run(&agent, &mut Transcript::new(), Some("go")).await;
    assert_eq!(outcome.stop, StopReason::Final);
    let results = tool_results(&model.requests()[1].body);
    assert!(results[0].0.contains("mcp__t__fail"), "{results:?}");
    assert!(results.iter().all(|(_, e)| *e == Some(true)), "{results:?}");
    assert!(results[1].0.contains("approv"), "{results:?}");
    assert_eq!(model.violations(), Vec::<String>::new());
    hub.shutdown().await;
}

#[tokio::test]
async fn a_repeated_call_id_from_the_model_is_still_answered_exactly_once_each() {
    let hub = hub().await;
    let steps = vec![
        Step::tool_calls([
            ("mcp__t__echo", r#"{"text":"a"}"#),
            ("mcp__t__echo", r#"{"text":"b"}"#),
        ]),
        Step::text("ok"),
    ];
    let (model, agent) = agent(&hub, Wire::OpenAi, false, steps, AgentOptions::default()).await;
    let mut transcript = Transcript::new();
    let (outcome, _) = run(&agent, &mut transcript, Some("go")).await;
    assert_eq!(outcome.stop, StopReason::Final);
    let ids: Vec<&str> = transcript.messages[1]
        .tool_calls()
        .map(|(id, _, _)| id)
        .collect();
    let answered: Vec<&str> = transcript.messages[2]
        .content
        .iter()
        .filter_map(|b| match b {
            Block::ToolResult { id, .. } => Some(id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(ids, answered);
    assert_eq!(model.violations(), Vec::<String>::new());
    hub.shutdown().await;
}

#[tokio::test]
async fn tools_of_another_scope_are_neither_offered_nor_callable() {
    let mut options = mcpmux::config::ServerOptions::default();
    options.stages = Some(vec!["build".into()]);
    let hub = support::hub_with(
        vec![
            support::testserver_spec(&[]),
            mcpmux::ServerSpec::stdio(
                "b",
                support::testserver().to_string_lossy(),
                ["--page-size".to_string(), "777".to_string()],
            )
            .with_options(options),
        ],
        mcpmux::HubOptions::ephemeral(),
    )
    .await;
    let steps = vec![
        Step::tool_calls([("mcp__b__echo", r#"{"text":"x"}"#)]),
        Step::text("ok"),
    ];
    let (model, agent) = agent(
        &hub,
        Wire::OpenAi,
        true,
        steps,
        AgentOptions::default().with_scope(mcpmux::Scope::stage("plan")),
    )
    .await;
    let (outcome, _) = run(&agent, &mut Transcript::new(), Some("go")).await;
    assert_eq!(outcome.stop, StopReason::Final);
    let offered = support::offered(&model.requests()[0].body);
    assert!(
        offered.iter().any(|n| n.starts_with("mcp__t__")),
        "{offered:?}"
    );
    assert!(
        !offered.iter().any(|n| n.starts_with("mcp__b__")),
        "{offered:?}"
    );
    let results = tool_results(&model.requests()[1].body);
    assert!(
        results[0].0.contains("outside scope") || results[0].0.contains("no tool"),
        "{results:?}"
    );
    hub.shutdown().await;
}

#[tokio::test]
async fn arguments_reach_the_server_as_the_model_wrote_them() {
    let hub = hub().await;
    let steps = vec![
        Step::tool_calls([(
            "mcp__t__echo",
            &*json!({"text": "ünïcødé \u{1b}[2J"}).to_string(),
        )]),
        Step::text("ok"),
    ];
    let (_model, agent) = agent(&hub, Wire::Anthropic, true, steps, AgentOptions::default()).await;
    let (outcome, events) = run(&agent, &mut Transcript::new(), Some("go")).await;
    assert_eq!(outcome.stop, StopReason::Final);
    assert!(
        events.iter().any(
            |e| matches!(e, AgentEvent::ToolResult { text, .. } if text == "ünïcødé \u{1b}[2J")
        ),
        "{events:?}"
    );
    hub.shutdown().await;
}
