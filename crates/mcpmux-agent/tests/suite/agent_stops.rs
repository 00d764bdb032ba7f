//! How a run stops, against the scripted endpoint of each wire format: retries of rate limits,
//! overloads and broken streams; the iteration limit with the state kept and continued; the
//! budget; refusals; the output limit; cancellation; an endpoint nobody answers.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::time::{Duration, Instant};

use mcpmux_agent::provider::{OpenAi, ProviderConfig};
use mcpmux_agent::{AgentEvent, AgentOptions, ProviderError, Role, StopReason, Transcript};
use mcpmux_testmodel::{Step, Wire};
use support::{MODES, agent, hub, run, tool_results};
use tokio_util::sync::CancellationToken;

#[tokio::test]
async fn a_429_with_retry_after_is_waited_for_then_the_turn_goes_on() {
    let hub = hub().await;
    for wire in [Wire::OpenAi, Wire::Anthropic] {
        let steps = vec![Step::status(429, Some(1)), Step::text("after the wait")];
        let (model, agent) = agent(&hub, wire, true, steps, AgentOptions::default()).await;
        let (outcome, events) = run(&agent, &mut Transcript::new(), Some("hi")).await;
        assert_eq!(outcome.stop, StopReason::Final, "{wire:?}");
        assert_eq!(outcome.answer, "after the wait");
        let waits: Vec<Duration> = events
            .iter()
            .filter_map(|e| match e {
                AgentEvent::Retrying { after, .. } => Some(*after),
                _ => None,
            })
            .collect();
        assert_eq!(
            waits,
            [Duration::from_secs(1)],
            "{wire:?}: retry-after honoured"
        );
        assert_eq!(model.requests().len(), 2);
    }
    hub.shutdown().await;
}

#[tokio::test]
async fn a_rate_limit_longer_than_the_policy_waits_is_reported_at_once() {
    let hub = hub().await;
    let steps = vec![Step::status(429, Some(3600))];
    let (model, agent) = agent(&hub, Wire::OpenAi, true, steps, AgentOptions::default()).await;
    let started = Instant::now();
    let mut transcript = Transcript::new();
    let (outcome, _) = run(&agent, &mut transcript, Some("hi")).await;
    assert!(started.elapsed() < Duration::from_secs(5));
    match &outcome.stop {
        StopReason::Provider(ProviderError::Status {
            status: 429,
            attempts: 1,
            ..
        }) => {}
        other => panic!("{other:?}"),
    }
    assert_eq!(model.requests().len(), 1);
    // The prompt stays in the transcript: a later run sends it again.
    assert_eq!(transcript.messages.len(), 1);
    hub.shutdown().await;
}

#[tokio::test]
async fn server_errors_are_retried_with_backoff_then_reported_with_the_attempts() {
    let hub = hub().await;
    for wire in [Wire::OpenAi, Wire::Anthropic] {
        let code = if wire == Wire::Anthropic { 529 } else { 503 };
        let steps = vec![
            Step::status(code, None),
            Step::status(code, None),
            Step::status(code, None),
        ];
        let (model, agent) = agent(&hub, wire, false, steps, AgentOptions::default()).await;
        let (outcome, events) = run(&agent, &mut Transcript::new(), Some("hi")).await;
        let StopReason::Provider(error) = &outcome.stop else {
            panic!("{:?}", outcome.stop)
        };
        assert!(error.to_string().contains("after 3 attempts"), "{error}");
        assert!(
            error.to_string().contains(&format!("HTTP {code}")),
            "{error}"
        );
        assert_eq!(
            events
                .iter()
                .filter(|e| matches!(e, AgentEvent::Retrying { .. }))
                .count(),
            2
        );
        assert_eq!(model.remaining(), 0);
    }
    hub.shutdown().await;
}

#[tokio::test]
async fn a_client_error_is_not_retried() {
    let hub = hub().await;
    let steps = vec![Step::status(400, None), Step::text("never")];
    let (model, agent) = agent(&hub, Wire::Anthropic, true, steps, AgentOptions::default()).await;
    let (outcome, _) = run(&agent, &mut Transcript::new(), Some("hi")).await;
    assert!(matches!(
        outcome.stop,
        StopReason::Provider(ProviderError::Status { status: 400, .. })
    ));
    assert_eq!(model.remaining(), 1);
    hub.shutdown().await;
}

#[tokio::test]
async fn a_stream_broken_midway_is_retried_whole() {
    let hub = hub().await;
    for wire in [Wire::OpenAi, Wire::Anthropic] {
        let steps = vec![
            Step::stream_error("half an ans"),
            Step::text("the whole answer"),
        ];
        let (_model, agent) = agent(&hub, wire, true, steps, AgentOptions::default()).await;
        let mut transcript = Transcript::new();
        let (outcome, events) = run(&agent, &mut transcript, Some("hi")).await;
        assert_eq!(outcome.stop, StopReason::Final, "{wire:?}");
        assert_eq!(outcome.answer, "the whole answer", "{wire:?}");
        assert_eq!(
            transcript.last_answer().as_deref(),
            Some("the whole answer")
        );
        assert!(
            events
                .iter()
                .any(|e| matches!(e, AgentEvent::Retrying { .. })),
            "{wire:?}"
        );
    }
    hub.shutdown().await;
}

#[tokio::test]
async fn the_iteration_limit_keeps_the_last_state_and_a_later_run_continues_it() {
    let hub = hub().await;
    for (wire, stream) in MODES {
        let steps = vec![
            Step::tool_calls([("mcp__t__add", r#"{"a":1,"b":1}"#)]),
            Step::tool_calls([("mcp__t__add", r#"{"a":2,"b":2}"#)]),
            // The continuation: the endpoint sees both earlier results, each answered once.
            Step::text("2 and 4").expect(|body| {
                let results = tool_results(body);
                if results.len() == 2 && results[1].0.contains('4') {
                    Ok(())
                } else {
                    Err(format!("{results:?}"))
                }
            }),
        ];
        let options = AgentOptions::default().with_max_iterations(2);
        let (model, agent) = agent(&hub, wire, stream, steps, options).await;
        let mut transcript = Transcript::new();
        let (outcome, _) = run(&agent, &mut transcript, Some("add twice")).await;
        let mode = format!("{wire:?} stream={stream}");
        assert_eq!(
            outcome.stop,
            StopReason::IterationLimit { max: 2 },
            "{mode}"
        );
        assert_eq!(outcome.tool_calls, 2, "{mode}");
        // The last turn's calls ran: the transcript ends with their results.
        assert_eq!(
            transcript.messages.last().unwrap().role,
            Role::User,
            "{mode}"
        );
        let mut saved = Vec::new();
        transcript.write_jsonl(&mut saved).unwrap();
        let mut transcript = Transcript::read_jsonl(saved.as_slice()).unwrap();
        let (outcome, _) = run(&agent, &mut transcript, None).await;
        assert_eq!(outcome.stop, StopReason::Final, "{mode}");
        assert_eq!(outcome.answer, "2 and 4", "{mode}");
        assert_eq!(model.violations(), Vec::<String>::new(), "{mode}");
    }
    hub.shutdown().await;
}

#[tokio::test]
async fn a_second_prompt_continues_the_conversation_with_everything_before_it() {
    let hub = hub().await;
    let steps = vec![
        Step::text("Hello."),
        Step::text("You said hi before.").expect(|body| {
            let count = body["messages"].as_array().map_or(0, Vec::len);
            // OpenAI: system + 3; Anthropic: 3.
            if count >= 3 {
                Ok(())
            } else {
                Err(format!("{count} messages"))
            }
        }),
    ];
    let options = AgentOptions::default().with_system("Be brief.");
    let (model, agent) = agent(&hub, Wire::OpenAi, true, steps, options).await;
    let mut transcript = Transcript::new();
    run(&agent, &mut transcript, Some("hi")).await;
    let (outcome, _) = run(&agent, &mut transcript, Some("what did I say?")).await;
    assert_eq!(outcome.answer, "You said hi before.");
    assert_eq!(transcript.messages.len(), 4);
    assert_eq!(model.requests()[1].body["messages"][0]["role"], "system");
    assert_eq!(model.violations(), Vec::<String>::new());
    hub.shutdown().await;
}

#[tokio::test]
async fn a_token_budget_stops_the_run_before_the_next_request() {
    let hub = hub().await;
    let steps = vec![
        Step::tool_calls([("mcp__t__echo", r#"{"text":"x"}"#)]).with_usage(900, 200),
        Step::text("never asked"),
    ];
    let options = AgentOptions::default().with_max_tokens(1000);
    let (model, agent) = agent(&hub, Wire::Anthropic, true, steps, options).await;
    let (outcome, _) = run(&agent, &mut Transcript::new(), Some("hi")).await;
    let StopReason::Budget { message } = &outcome.stop else {
        panic!("{:?}", outcome.stop)
    };
    assert!(message.contains("1100 of 1000 tokens"), "{message}");
    assert_eq!(model.remaining(), 1);
    hub.shutdown().await;
}

#[tokio::test]
async fn a_request_over_the_size_budget_is_not_sent() {
    let hub = hub().await;
    let options = AgentOptions::default().with_max_request_bytes(100);
    let (model, agent) = agent(&hub, Wire::OpenAi, true, vec![Step::text("x")], options).await;
    let (outcome, _) = run(&agent, &mut Transcript::new(), Some("hi")).await;
    assert!(
        matches!(outcome.stop, StopReason::Budget { .. }),
        "{:?}",
        outcome.stop
    );
    assert_eq!(model.requests().len(), 0);
    hub.shutdown().await;
}

#[tokio::test]
async fn a_refusal_and_a_cut_answer_are_stops_of_their_own() {
    let hub = hub().await;
    for (wire, stream) in MODES {
        let steps = vec![Step::refusal("I can't help with that.")];
        let (_model, refusing) = agent(&hub, wire, stream, steps, AgentOptions::default()).await;
        let (outcome, _) = run(&refusing, &mut Transcript::new(), Some("hi")).await;
        assert!(
            matches!(&outcome.stop, StopReason::Refusal { message } if message.contains("can't help")),
            "{wire:?} {stream}: {:?}",
            outcome.stop
        );
        let steps = vec![Step::max_tokens("and then the")];
        let (_model, cut) = agent(&hub, wire, stream, steps, AgentOptions::default()).await;
        let (outcome, _) = run(&cut, &mut Transcript::new(), Some("hi")).await;
        assert_eq!(outcome.stop, StopReason::MaxTokens, "{wire:?} {stream}");
        assert_eq!(outcome.answer, "and then the");
    }
    hub.shutdown().await;
}

#[tokio::test]
async fn cancelling_stops_a_run_waiting_on_the_model() {
    let hub = hub().await;
    let steps = vec![Step::text("late").with_delay(Duration::from_secs(30))];
    let (_model, agent) = agent(&hub, Wire::OpenAi, true, steps, AgentOptions::default()).await;
    let cancel = CancellationToken::new();
    let trigger = {
        let cancel = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            cancel.cancel();
        })
    };
    let started = Instant::now();
    let outcome = agent
        .run_with(&mut Transcript::new(), Some("hi"), &|_| {}, &cancel)
        .await;
    trigger.await.unwrap();
    assert_eq!(outcome.stop, StopReason::Cancelled);
    assert!(started.elapsed() < Duration::from_secs(10));
    hub.shutdown().await;
}

#[tokio::test]
async fn an_endpoint_nobody_answers_is_one_error_naming_the_variable() {
    let hub = hub().await;
    // A port just freed: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let provider = OpenAi::new(ProviderConfig::new(
        "m",
        format!("http://127.0.0.1:{port}/v1"),
    ))
    .unwrap();
    let agent = mcpmux_agent::Agent::new(
        hub.clone(),
        std::sync::Arc::new(provider),
        AgentOptions::default(),
    );
    let (outcome, events) = run(&agent, &mut Transcript::new(), Some("hi")).await;
    let StopReason::Provider(error) = &outcome.stop else {
        panic!("{:?}", outcome.stop)
    };
    assert!(
        matches!(error, ProviderError::Unreachable { .. }),
        "{error:?}"
    );
    assert!(error.to_string().contains("OPENAI_BASE_URL"), "{error}");
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, AgentEvent::Retrying { .. }))
    );
    hub.shutdown().await;
}
