//! Tool search measured on a real catalog (issue #13): the reference MCP servers and the test
//! server's `--many-tools` catalog, listed through a real hub. Recall@5 over the labelled
//! queries in `testdata/search_queries.json`, and the tool-definition tokens a request carries
//! with and without deferral, for the Anthropic and OpenAI exports. Figures are printed
//! (`cargo test -p mcpmux-agent --test search_quality -- --nocapture`); timing is the bench's
//! (`cargo run --release -p mcpmux-bench -- search`), not a test's.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::catalog;

use std::collections::HashSet;

use mcpmux::schema::{ExportFormat, export};
use mcpmux_agent::search::estimate_tokens;
use mcpmux_agent::{DeferralOptions, Discovered, ToolIndex, plan};
use serde_json::json;

/// How many hits a query's expected tools must be among.
const K: usize = 5;

/// Recall@K of one query: the share of its expected tools among the first K hits.
fn recall(index: &ToolIndex, query: &catalog::Labelled) -> f64 {
    let hits: HashSet<String> = index
        .search(&query.query, K)
        .into_iter()
        .map(|h| h.name)
        .collect();
    let found = query.expected.iter().filter(|e| hits.contains(*e)).count();
    found as f64 / query.expected.len() as f64
}

#[test]
fn the_labelled_set_has_50_queries_over_every_server_naming_only_listed_tools() {
    let catalog = catalog::catalog();
    assert!(catalog.len() >= 200, "catalog of {} tools", catalog.len());
    let names: HashSet<&str> = catalog.iter().map(|t| t.name.as_str()).collect();
    let set = catalog::queries();
    let queries = set.all();
    assert!(queries.len() >= 50, "{} queries", queries.len());
    let mut servers = HashSet::new();
    for query in &queries {
        assert!(!query.expected.is_empty(), "{query:?}");
        for name in &query.expected {
            assert!(
                names.contains(name.as_str()),
                "{name} is not listed: {query:?}"
            );
            let tool = catalog.iter().find(|t| &t.name == name).unwrap();
            servers.insert(tool.server.clone());
            // Written from the need, not copied from a name of more than one word.
            let raw = tool.raw_name.to_lowercase().replace('-', "_");
            let text = query.query.to_lowercase().replace([' ', '-'], "_");
            assert!(!(raw.contains('_') && text.contains(&raw)), "{query:?}");
        }
    }
    for server in catalog::SERVERS {
        assert!(servers.contains(server), "no query for {server}");
    }
    // Every service of the many-tools catalog (`github_…`, `calendar_…`: a prefix four or
    // more of the test server's tools share) has a query.
    let service = |raw: &str| raw.split('_').next().unwrap_or_default().to_string();
    let mut sizes: std::collections::HashMap<String, usize> = Default::default();
    for tool in catalog.iter().filter(|t| t.server == "apps") {
        *sizes.entry(service(&tool.raw_name)).or_default() += 1;
    }
    let asked: HashSet<String> = queries
        .iter()
        .flat_map(|q| &q.expected)
        .filter_map(|name| name.strip_prefix("mcp__apps__"))
        .map(service)
        .collect();
    assert!(
        sizes.values().filter(|&&n| n >= 4).count() >= 10,
        "{sizes:?}"
    );
    for (name, size) in sizes {
        assert!(
            size < 4 || asked.contains(&name),
            "no query for the {name} service"
        );
    }
}

#[test]
fn labelled_queries_find_their_tools_in_the_top_five_at_least_nine_times_in_ten() {
    let catalog = catalog::catalog();
    let index = ToolIndex::new(catalog);
    let set = catalog::queries();
    let mut misses = Vec::new();
    let mut measure = |queries: &[&catalog::Labelled]| {
        let mut total = 0.0;
        for query in queries {
            let r = recall(&index, query);
            total += r;
            if r < 1.0 {
                let hits: Vec<String> = index
                    .search(&query.query, K)
                    .into_iter()
                    .map(|h| h.name)
                    .collect();
                misses.push(format!(
                    "{:?} expected {:?}, got {hits:?}",
                    query.query, query.expected
                ));
            }
        }
        total / queries.len() as f64
    };
    let tuned = measure(&set.queries.iter().collect::<Vec<_>>());
    let held_out = measure(&set.held_out.iter().collect::<Vec<_>>());
    let all = set.all();
    let overall = (tuned * set.queries.len() as f64 + held_out * set.held_out.len() as f64)
        / all.len() as f64;
    println!(
        "recall@{K} = {overall:.3} over {} queries ({tuned:.3} over the {} tuned on, {held_out:.3} \
         over the {} held out), {} tools; misses:\n  {}",
        all.len(),
        set.queries.len(),
        set.held_out.len(),
        catalog.len(),
        misses.join("\n  ")
    );
    assert!(
        overall >= 0.9,
        "recall@{K} = {overall:.3}; misses:\n  {}",
        misses.join("\n  ")
    );
}

#[test]
fn deferring_200_real_tools_sends_at_least_85_percent_fewer_definition_tokens() {
    let catalog = catalog::catalog();
    for provider in [ExportFormat::Anthropic, ExportFormat::OpenAi] {
        let plan = plan(catalog, &DeferralOptions::default(), provider);
        assert!(
            plan.is_deferred(),
            "{provider:?}: {} tokens not deferred",
            plan.tokens_all
        );
        let reduction = 1.0 - plan.tokens_sent as f64 / plan.tokens_all as f64;

        // The request after one search: the meta-tool and the five definitions it found.
        let mut discovered = Discovered::default();
        plan.search(
            &json!({"query": "create a calendar event"}),
            &mut discovered,
        )
        .unwrap();
        let after: usize = export(&plan.request_tools(&discovered), provider)
            .tools
            .iter()
            .map(|t| estimate_tokens(&t.definition))
            .sum();
        println!(
            "{provider:?}: {} tools; all definitions {} tokens; deferred {} tokens ({:.1}% fewer); \
             after one search ({} found) {} tokens ({:.1}% fewer)",
            catalog.len(),
            plan.tokens_all,
            plan.tokens_sent,
            reduction * 100.0,
            discovered.len(),
            after,
            (1.0 - after as f64 / plan.tokens_all as f64) * 100.0
        );
        assert_eq!(plan.sent.len(), 1, "only search_tools is sent");
        assert!(reduction >= 0.85, "{provider:?}: {reduction:.3}");
        assert!(
            after as f64 <= plan.tokens_all as f64 * 0.15,
            "{provider:?}: {after}"
        );
    }
}
