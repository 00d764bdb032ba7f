//! End to end through real third-party MCP servers: the scripted model reads a file with
//! server-filesystem's `read_text_file`, then writes what it read, changed, with
//! `write_file`; the file on disk is what a person would check.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use mcpmux::{HubOptions, ServerSpec};
use mcpmux_agent::{AgentOptions, StopReason, Transcript};
use mcpmux_testmodel::{Step, Wire};
use serde_json::json;
use support::{agent, hub_with, npm_bin, tool_results};

#[tokio::test]
async fn the_model_reads_a_file_with_one_tool_and_writes_it_with_another() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::write(root.join("note.txt"), "buy milk").unwrap();
    let hub = hub_with(
        vec![
            ServerSpec::stdio(
                "fs",
                npm_bin("mcp-server-filesystem").to_string_lossy(),
                [root.to_string_lossy().to_string()],
            ),
            ServerSpec::stdio(
                "everything",
                npm_bin("mcp-server-everything").to_string_lossy(),
                Vec::<String>::new(),
            ),
        ],
        HubOptions::ephemeral().with_host(mcpmux::host::Host::default().with_project_dir(&root)),
    )
    .await;
    for (wire, stream) in [(Wire::OpenAi, true), (Wire::Anthropic, true)] {
        let out = root.join(format!("out-{wire:?}.txt"));
        let read = json!({"path": root.join("note.txt")}).to_string();
        let write = json!({"path": out, "content": "BUY MILK"}).to_string();
        let steps = vec![
            Step::tool_calls([("mcp__fs__read_text_file", read)]),
            Step::tool_calls([("mcp__fs__write_file", write)]).expect(|body| {
                let results = tool_results(body);
                match results.as_slice() {
                    [(text, _)] if text.contains("buy milk") => Ok(()),
                    other => Err(format!(
                        "the file's text did not reach the model: {other:?}"
                    )),
                }
            }),
            Step::text("Saved it in capitals."),
        ];
        let (model, agent) = agent(&hub, wire, stream, steps, AgentOptions::default()).await;
        let (outcome, _) = run(&agent).await;
        assert_eq!(outcome.stop, StopReason::Final, "{wire:?}");
        assert_eq!(model.violations(), Vec::<String>::new(), "{wire:?}");
        assert_eq!(
            std::fs::read_to_string(&out).unwrap(),
            "BUY MILK",
            "{wire:?}"
        );
        // Both servers' tools were offered, in the provider's format.
        let offered = support::offered(&model.requests()[0].body);
        assert!(
            offered.iter().any(|n| n == "mcp__everything__echo"),
            "{offered:?}"
        );
    }
    hub.shutdown().await;
}

async fn run(
    agent: &mcpmux_agent::Agent,
) -> (mcpmux_agent::RunOutcome, Vec<mcpmux_agent::AgentEvent>) {
    support::run(
        agent,
        &mut Transcript::new(),
        Some("Copy my note in capitals."),
    )
    .await
}
