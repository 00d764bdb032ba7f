//! Deferred loading in the loop, against the test server's large catalog: only pinned tools
//! and `search_tools` go in the first request; a search's matches are sent from the next turn
//! and called through the hub; a transcript remembers what was found.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use mcpmux::HubOptions;
use mcpmux_agent::{AgentEvent, AgentOptions, DeferralOptions, StopReason, Transcript};
use mcpmux_testmodel::{Step, Wire};
use serde_json::json;
use support::{agent, hub_with, offered, run, testserver_spec, tool_results};

#[tokio::test]
async fn a_large_catalog_is_searched_and_what_is_found_is_sent_and_called_next_turn() {
    let hub = hub_with(
        vec![testserver_spec(&["--many-tools", "300"])],
        HubOptions::ephemeral(),
    )
    .await;
    let all = hub.tools();
    assert!(all.len() > 300, "{}", all.len());
    let wanted = all
        .iter()
        .find(|t| t.name.ends_with("calendar_find_free_slots"))
        .expect("the catalog has a free-slot finder")
        .name
        .clone();
    let deferral = DeferralOptions::default().with_pinned("mcp__t__echo");
    for wire in [Wire::OpenAi, Wire::Anthropic] {
        let arguments = json!({"query": "find a free time slot in my calendar for a meeting"});
        let wanted_in_search = wanted.clone();
        let wanted_offered = wanted.clone();
        let steps = vec![
            Step::tool_calls([("search_tools", arguments.to_string())]),
            Step::tool_calls([(
                wanted.clone(),
                json!({"attendees": ["ana@example.com"], "duration_minutes": 30}).to_string(),
            )])
            .expect(move |body| {
                let results = tool_results(body);
                let offered = offered(body);
                if !results[0].0.contains(&wanted_in_search) {
                    Err(format!(
                        "the search did not return {wanted_in_search}: {}",
                        results[0].0
                    ))
                } else if !offered.contains(&wanted_offered) {
                    Err(format!(
                        "{wanted_offered} not sent after it was found: {offered:?}"
                    ))
                } else {
                    Ok(())
                }
            }),
            Step::text("Tuesday at 10 is free."),
        ];
        let options = AgentOptions::default().with_deferral(Some(deferral.clone()));
        let (model, agent) = agent(&hub, wire, true, steps, options).await;
        let mut transcript = Transcript::new();
        let (outcome, events) = run(&agent, &mut transcript, Some("When am I free?")).await;
        assert_eq!(outcome.stop, StopReason::Final, "{wire:?}");
        assert_eq!(model.violations(), Vec::<String>::new(), "{wire:?}");
        let first = offered(&model.requests()[0].body);
        assert_eq!(first, ["mcp__t__echo", "search_tools"], "{wire:?}");
        // The found tool ran on the server (it answers with its name).
        let called = events.iter().any(|e| {
            matches!(e, AgentEvent::ToolResult { tool, is_error: false, text, .. }
                if *tool == wanted && text.contains("calendar_find_free_slots"))
        });
        assert!(called, "{wire:?}: {events:?}");
        // A continued conversation still sends what was found.
        assert!(transcript.discovered().any(|n| n == wanted), "{wire:?}");
        // Measured on the real requests: the deferred first request is a fraction of the whole.
        let deferred_bytes = model.requests()[0].body["tools"].to_string().len();
        let all_tools = mcpmux::schema::export(&all, mcpmux::schema::ExportFormat::Anthropic);
        let all_bytes = all_tools.definitions().to_string().len();
        assert!(
            deferred_bytes * 20 < all_bytes,
            "{deferred_bytes} vs {all_bytes}"
        );
    }
    hub.shutdown().await;
}

#[tokio::test]
async fn a_bad_search_is_an_error_result_that_says_how_to_search() {
    let hub = hub_with(
        vec![testserver_spec(&["--many-tools", "100"])],
        HubOptions::ephemeral(),
    )
    .await;
    let steps = vec![
        Step::tool_calls([("search_tools", r#"{"limit": 500}"#)]),
        Step::text("ok").expect(|body| {
            let results = tool_results(body);
            if results[0].0.contains("query") && results[0].1 == Some(true) {
                Ok(())
            } else {
                Err(format!("{results:?}"))
            }
        }),
    ];
    let options =
        AgentOptions::default().with_deferral(Some(DeferralOptions::default().with_max_tools(10)));
    let (model, agent) = agent(&hub, Wire::Anthropic, false, steps, options).await;
    let (outcome, _) = run(&agent, &mut Transcript::new(), Some("go")).await;
    assert_eq!(outcome.stop, StopReason::Final);
    assert_eq!(model.violations(), Vec::<String>::new());
    hub.shutdown().await;
}

#[tokio::test]
async fn a_small_catalog_is_sent_whole_without_a_search_tool() {
    let hub = hub_with(vec![testserver_spec(&[])], HubOptions::ephemeral()).await;
    let (model, agent) = agent(
        &hub,
        Wire::OpenAi,
        true,
        vec![Step::text("hi")],
        AgentOptions::default(),
    )
    .await;
    run(&agent, &mut Transcript::new(), Some("go")).await;
    let offered = offered(&model.requests()[0].body);
    assert_eq!(offered.len(), hub.tools().len());
    assert!(!offered.contains(&"search_tools".to_string()));
    hub.shutdown().await;
}
