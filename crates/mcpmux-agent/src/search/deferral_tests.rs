#![allow(clippy::unwrap_used)]

use super::*;

fn tool(server: &str, raw: &str, description: &str) -> Tool {
    Tool::local(
        format!("mcp__{server}__{raw}"),
        json!({"type": "object", "properties": {"path": {"type": "string", "description": description}}}),
    )
    .with_description(description)
    .with_source(server)
}

/// 60 tools of three servers, about 70 tokens each.
fn catalog() -> Vec<Tool> {
    let mut tools = Vec::new();
    for i in 0..20 {
        tools.push(tool(
            "fs",
            &format!("file_op_{i}"),
            "Does something with a file on disk.",
        ));
        tools.push(tool(
            "gh",
            &format!("issue_op_{i}"),
            "Does something with a GitHub issue.",
        ));
        tools.push(tool(
            "cal",
            &format!("event_op_{i}"),
            "Does something with a calendar event.",
        ));
    }
    tools.push(tool(
        "cal",
        "create_event",
        "Create a calendar event with a start and an end.",
    ));
    tools
}

fn names(tools: &[Tool]) -> Vec<&str> {
    tools.iter().map(|t| t.name.as_str()).collect()
}

#[test]
fn under_the_thresholds_every_tool_is_sent_and_nothing_deferred() {
    let tools = catalog();
    let options = DeferralOptions::default().with_max_tools(100);
    let plan = plan(&tools, &options, ExportFormat::Anthropic);
    assert!(!plan.is_deferred());
    assert_eq!(names(&plan.sent), names(&tools));
    assert!(plan.deferred.is_empty());
    assert_eq!(plan.tokens_sent, plan.tokens_all);
}

#[test]
fn over_the_token_share_only_pinned_tools_and_search_tools_are_sent() {
    let tools = catalog();
    let all = plan(&tools, &DeferralOptions::default(), ExportFormat::OpenAi).tokens_all;
    let exported = export(&tools, ExportFormat::OpenAi);
    assert_eq!(
        all,
        exported
            .tools
            .iter()
            .map(|t| estimate_tokens(&t.definition))
            .sum::<usize>()
    );

    // 10 % of a context just too small for the whole set.
    let options = DeferralOptions::share_of_context(all * 10 - 100, 10)
        .with_pinned("mcp__fs__file_op_1?")
        .with_always_load("gh");
    let plan = plan(&tools, &options, ExportFormat::OpenAi);
    assert!(plan.is_deferred());
    let sent = names(&plan.sent);
    assert_eq!(sent.len(), 10 + 20 + 1, "{sent:?}");
    assert_eq!(sent.last(), Some(&SEARCH_TOOL));
    assert!(sent.contains(&"mcp__fs__file_op_13") && !sent.contains(&"mcp__fs__file_op_3"));
    assert!(plan.deferred.iter().all(|t| t.server != "gh"));
    assert_eq!(plan.deferred.len(), tools.len() - 30);
    assert!(plan.tokens_sent < plan.tokens_all);
    let meta = plan.search_tool.as_ref().unwrap();
    assert!(
        meta.description
            .as_deref()
            .unwrap()
            .contains("Search 31 more tools")
    );
}

#[test]
fn more_tools_than_max_tools_defers_whatever_their_size() {
    let tools = catalog();
    let options = DeferralOptions::default()
        .without_token_limit()
        .with_max_tools(60);
    let plan = plan(&tools, &options, ExportFormat::Anthropic);
    assert!(plan.is_deferred());
    assert_eq!(names(&plan.sent), [SEARCH_TOOL]);
    assert_eq!(plan.deferred.len(), 61);
    let unlimited = DeferralOptions::default().without_token_limit();
    assert!(!super::plan(&tools, &unlimited, ExportFormat::Anthropic).is_deferred());
}

#[test]
fn when_every_tool_is_pinned_nothing_is_deferred() {
    let tools = catalog();
    let options = DeferralOptions::default()
        .with_max_tools(1)
        .with_pinned("*");
    let plan = plan(&tools, &options, ExportFormat::Gemini);
    assert!(!plan.is_deferred());
    assert_eq!(plan.sent.len(), tools.len());
}

#[test]
fn a_search_returns_definitions_that_are_sent_from_the_next_request_on() {
    let tools = catalog();
    let plan = plan(
        &tools,
        &DeferralOptions::default().with_max_tools(10),
        ExportFormat::Anthropic,
    );
    let mut discovered = Discovered::default();
    assert_eq!(names(&plan.request_tools(&discovered)), [SEARCH_TOOL]);

    let answer = plan
        .search(
            &json!({"query": "create a calendar event", "limit": 2}),
            &mut discovered,
        )
        .unwrap();
    assert_eq!(answer.tools.len(), 2);
    assert_eq!(answer.tools[0], "mcp__cal__create_event");
    let text: Value = serde_json::from_str(&answer.to_text()).unwrap();
    assert_eq!(text["tools"][0]["name"], "mcp__cal__create_event");
    assert!(text["tools"][0]["input_schema"].is_object(), "{text}");
    assert!(text["note"].as_str().unwrap().contains("next turn"));

    let next = plan.request_tools(&discovered);
    assert_eq!(next.len(), 3);
    assert!(discovered.contains("mcp__cal__create_event"));
    assert_eq!(next[0].name, SEARCH_TOOL);
}

#[test]
fn a_search_with_no_match_says_so_and_discovers_nothing() {
    let plan = plan(
        &catalog(),
        &DeferralOptions::default().with_max_tools(10),
        ExportFormat::OpenAi,
    );
    let mut discovered = Discovered::default();
    let answer = plan
        .search(&json!({"query": "quantum teleport"}), &mut discovered)
        .unwrap();
    assert!(answer.tools.is_empty());
    assert!(answer.note.starts_with("No tool matched"));
    assert!(discovered.is_empty());
}

#[test]
fn malformed_search_arguments_are_refused_with_what_to_send() {
    let plan = plan(
        &catalog(),
        &DeferralOptions::default().with_max_tools(10),
        ExportFormat::OpenAi,
    );
    let mut d = Discovered::default();
    let cases = [
        (json!("file"), SearchError::NotAnObject),
        (json!({}), SearchError::MissingQuery),
        (json!({"query": 3}), SearchError::QueryNotAString),
        (
            json!({"query": "file", "limit": 0}),
            SearchError::BadLimit("0".into()),
        ),
        (
            json!({"query": "file", "limit": 21}),
            SearchError::BadLimit("21".into()),
        ),
        (
            json!({"query": "file", "limit": "5"}),
            SearchError::BadLimit("\"5\"".into()),
        ),
    ];
    for (arguments, expected) in cases {
        assert_eq!(plan.search(&arguments, &mut d), Err(expected));
    }
    assert!(d.is_empty());
    let answer = plan
        .search(&json!({"query": "file", "limit": 20}), &mut d)
        .unwrap();
    assert_eq!(answer.tools.len(), 20);
}

#[test]
fn a_tool_with_an_unusable_schema_is_neither_sent_nor_searchable() {
    let mut tools = catalog();
    let mut cyclic = tool("bad", "loop_tool", "A calendar event loop.");
    cyclic.input_schema =
        json!({"type": "object", "properties": {"x": {"$ref": "#"}}, "allOf": [{"$ref": "#"}]});
    tools.push(cyclic);
    for max_tools in [1000, 10] {
        let plan = plan(
            &tools,
            &DeferralOptions::default().with_max_tools(max_tools),
            ExportFormat::Anthropic,
        );
        let everywhere: Vec<&str> = names(&plan.sent)
            .into_iter()
            .chain(names(&plan.deferred))
            .collect();
        assert_eq!(plan.unusable, ["mcp__bad__loop_tool"]);
        assert!(!everywhere.contains(&"mcp__bad__loop_tool"));
        assert!(
            plan.index()
                .search("loop_tool", 5)
                .iter()
                .all(|h| h.name != "mcp__bad__loop_tool")
        );
    }
}

#[test]
fn globs_match_whole_names_with_stars_and_question_marks() {
    assert!(glob("mcp__gh__*", "mcp__gh__create_issue"));
    assert!(glob("*issue*", "mcp__gh__create_issue"));
    assert!(glob("read_?ile", "read_file"));
    assert!(!glob("read_?ile", "read_files"));
    assert!(!glob("mcp__gh__*", "mcp__fs__read"));
    assert!(glob("*", ""));
    assert!(!glob("", "x"));
}
