//! Tool search (deferred loading, issue #13) at the size it is for: the real catalog (the
//! reference MCP servers from `test-deps` and the test server's `--many-tools` catalog, listed
//! through a hub) for tool-definition tokens with and without deferral and recall@5 over the
//! labelled queries (and what `mcpmux serve --search` lists instead, counted the same way;
//! its end-to-end figures through an SDK client: `scripts/bench-serve-search.mjs`); then 10 000 listed tools (the same servers, the test server's catalog
//! repeated per tenant) for index build time and per-query search latency.
//!
//! `cargo run --release -p mcpmux-bench -- search [--tools N] [--reps N] [--server PATH] [--quick] [--json]`
//!
//! Latency is each `ToolIndex::search` call timed alone, every labelled query `--reps` times
//! (interleaved: one pass over the queries per repetition), p50 and p99 of all of them.

use std::collections::HashSet;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use mcpmux::schema::{ExportFormat, export};
use mcpmux::{Hub, HubOptions, ServerSpec, Tool};
use mcpmux_agent::search::estimate_tokens;
use mcpmux_agent::{DeferralOptions, Discovered, ToolIndex, plan};
use serde::Deserialize;
use serde_json::json;

/// The test server's catalog served once: beyond that it repeats per tenant.
const MANY_TOOLS: usize = 172;

/// How many hits a query's expected tools must be among.
const K: usize = 5;

struct Args {
    tools: usize,
    reps: usize,
    builds: usize,
    server: Option<PathBuf>,
    json: bool,
}

fn parse(args: impl Iterator<Item = String>) -> anyhow::Result<Args> {
    let mut parsed = Args {
        tools: 10_000,
        reps: 200,
        builds: 5,
        server: None,
        json: false,
    };
    let mut it = args;
    while let Some(flag) = it.next() {
        let mut value = || it.next().context(format!("{flag} needs a value"));
        match flag.as_str() {
            "--tools" => parsed.tools = value()?.parse()?,
            "--reps" => parsed.reps = value()?.parse()?,
            "--server" => parsed.server = Some(PathBuf::from(value()?)),
            "--json" => parsed.json = true,
            "--quick" => {
                parsed.tools = 1_000;
                parsed.reps = 2;
                parsed.builds = 1;
            }
            other => bail!(
                "unknown flag {other}; flags: --tools N --reps N --server PATH --quick --json"
            ),
        }
    }
    if parsed.reps == 0 {
        bail!("--reps must be at least 1");
    }
    Ok(parsed)
}

/// One labelled query and the exposed names of the tools that answer it.
#[derive(Deserialize)]
struct Labelled {
    query: String,
    expected: Vec<String>,
}

/// `crates/mcpmux-agent/testdata/search_queries.json`.
#[derive(Deserialize)]
struct QuerySet {
    queries: Vec<Labelled>,
    held_out: Vec<Labelled>,
}

fn queries(workspace: &Path) -> anyhow::Result<QuerySet> {
    let path = workspace.join("crates/mcpmux-agent/testdata/search_queries.json");
    let text = std::fs::read_to_string(&path).with_context(|| path.display().to_string())?;
    Ok(serde_json::from_str(&text)?)
}

/// The reference servers and the test server serving `many` catalog tools as `apps`.
fn specs(
    workspace: &Path,
    server: &Path,
    many: usize,
    dir: &Path,
) -> anyhow::Result<Vec<ServerSpec>> {
    let installed = |relative: &str| -> anyhow::Result<String> {
        let path = workspace.join("test-deps").join(relative);
        if !path.exists() {
            bail!(
                "{} is missing: run scripts/install-test-deps.sh",
                path.display()
            );
        }
        Ok(path.to_string_lossy().into_owned())
    };
    let none = Vec::<String>::new;
    Ok(vec![
        ServerSpec::stdio(
            "everything",
            installed("node_modules/.bin/mcp-server-everything")?,
            ["stdio"],
        ),
        ServerSpec::stdio(
            "filesystem",
            installed("node_modules/.bin/mcp-server-filesystem")?,
            [dir.to_string_lossy().into_owned()],
        ),
        ServerSpec::stdio(
            "memory",
            installed("node_modules/.bin/mcp-server-memory")?,
            none(),
        )
        .with_env(
            "MEMORY_FILE_PATH",
            dir.join("memory.jsonl").to_string_lossy(),
        ),
        ServerSpec::stdio("time", installed(".venv/bin/mcp-server-time")?, none()),
        ServerSpec::stdio(
            "apps",
            server.to_string_lossy(),
            ["--many-tools".to_string(), many.to_string()],
        ),
    ]
    .into_iter()
    .map(|spec| spec.with_startup_timeout(Duration::from_secs(60)))
    .collect())
}

/// Every tool a hub on `specs` lists once its servers settled.
async fn list(specs: Vec<ServerSpec>) -> anyhow::Result<Vec<Tool>> {
    let names: Vec<String> = specs.iter().map(|s| s.name.clone()).collect();
    let hub = Hub::start(specs, HubOptions::ephemeral())?;
    hub.wait_ready().await?;
    let tools = hub.tools();
    hub.shutdown().await;
    for name in names {
        if !tools.iter().any(|t| t.server == name) {
            bail!("no tools listed from {name}");
        }
    }
    Ok(tools)
}

/// Mean recall@K: the share of each query's expected tools among its first K hits.
fn recall<'a>(index: &ToolIndex, queries: impl IntoIterator<Item = &'a Labelled>) -> f64 {
    let (mut total, mut count) = (0.0, 0);
    for query in queries {
        let hits: HashSet<String> = index
            .search(&query.query, K)
            .into_iter()
            .map(|h| h.name)
            .collect();
        let found = query.expected.iter().filter(|e| hits.contains(*e)).count();
        total += found as f64 / query.expected.len().max(1) as f64;
        count += 1;
    }
    total / f64::from(count.max(1))
}

/// Tool-definition tokens of one request to `provider`: every definition, the deferred plan's
/// first request, and the request after one search found its tools.
fn tokens(tools: &[Tool], provider: ExportFormat) -> anyhow::Result<(usize, usize, usize)> {
    let plan = plan(tools, &DeferralOptions::default(), provider);
    if !plan.is_deferred() {
        bail!(
            "{provider:?}: {} tokens of definitions were not deferred",
            plan.tokens_all
        );
    }
    let mut discovered = Discovered::default();
    plan.search(
        &json!({"query": "create a calendar event"}),
        &mut discovered,
    )?;
    let after = export(&plan.request_tools(&discovered), provider)
        .tools
        .iter()
        .map(|t| estimate_tokens(&t.definition))
        .sum();
    Ok((plan.tokens_all, plan.tokens_sent, after))
}

/// Tool-definition tokens of `mcpmux serve --search`'s first `tools/list` (nothing pinned:
/// `search_tools` and `call_tool`), counted as `run`'s definitions are.
fn serve_tokens(catalog: usize, provider: ExportFormat) -> usize {
    export(&mcpmux_gateway::meta_tools(catalog), provider)
        .tools
        .iter()
        .map(|t| estimate_tokens(&t.definition))
        .sum()
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let idx = ((sorted.len().max(1) - 1) as f64 * p).round() as usize;
    sorted.get(idx).copied().unwrap_or_default()
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// Builds the catalogs, measures, prints.
pub fn main(args: impl Iterator<Item = String>) -> anyhow::Result<()> {
    let args = parse(args)?;
    let workspace = crate::programs::workspace()?;
    let set = queries(&workspace)?;
    let server = match &args.server {
        Some(path) => path.clone(),
        None => crate::programs::build_testserver()?,
    };
    let dir = std::env::temp_dir().join(format!("mcpmux-bench-search-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let dir = dir.canonicalize()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let catalogs = runtime.block_on(async {
        let real = list(specs(&workspace, &server, MANY_TOOLS, &dir)?).await?;
        let others = real.len().saturating_sub(MANY_TOOLS);
        let many = args.tools.saturating_sub(others).max(1);
        let big = list(specs(&workspace, &server, many, &dir)?).await?;
        anyhow::Ok((real, big))
    });
    runtime.shutdown_timeout(Duration::from_secs(1));
    let _ = std::fs::remove_dir_all(&dir);
    let (real, big) = catalogs?;

    let anthropic = tokens(&real, ExportFormat::Anthropic)?;
    let openai = tokens(&real, ExportFormat::OpenAi)?;
    let serve = (
        serve_tokens(real.len(), ExportFormat::Anthropic),
        serve_tokens(real.len(), ExportFormat::OpenAi),
    );
    let index = ToolIndex::new(&real);
    let recall_tuned = recall(&index, &set.queries);
    let recall_held = recall(&index, &set.held_out);
    let all: Vec<&Labelled> = set.queries.iter().chain(&set.held_out).collect();
    let recall_all = recall(&index, all.iter().copied());

    let mut builds = Vec::new();
    let mut big_index = ToolIndex::default();
    for _ in 0..args.builds {
        let started = Instant::now();
        big_index = black_box(ToolIndex::new(&big));
        builds.push(started.elapsed());
    }
    builds.sort();
    let build = percentile(&builds, 0.5);
    for query in &all {
        black_box(big_index.search(&query.query, K));
    }
    let mut latencies = Vec::with_capacity(all.len() * args.reps);
    for _ in 0..args.reps {
        for query in &all {
            let started = Instant::now();
            let hits = big_index.search(black_box(&query.query), K);
            latencies.push(started.elapsed());
            black_box(hits);
        }
    }
    latencies.sort();
    let (p50, p99) = (percentile(&latencies, 0.5), percentile(&latencies, 0.99));
    let recall_big = recall(&big_index, all.iter().copied());
    let reduction =
        |(all, sent, _): (usize, usize, usize)| 100.0 * (1.0 - sent as f64 / all as f64);

    if args.json {
        let figures = json!({
            "catalog_tools": real.len(),
            "anthropic": {"all": anthropic.0, "deferred": anthropic.1, "after_search": anthropic.2},
            "openai": {"all": openai.0, "deferred": openai.1, "after_search": openai.2},
            "serve_search": {"anthropic": serve.0, "openai": serve.1},
            "queries": all.len(),
            "recall_at_5": recall_all,
            "recall_tuned": recall_tuned,
            "recall_held_out": recall_held,
            "big_tools": big.len(),
            "build_ms": build.as_secs_f64() * 1e3,
            "search_p50_us": micros(p50),
            "search_p99_us": micros(p99),
            "searches": latencies.len(),
            "recall_big": recall_big,
        });
        println!("{figures}");
        return Ok(());
    }
    println!(
        "catalog: {} tools listed through a hub (server-everything, server-filesystem, \
         server-memory, mcp-server-time, mcpmux-testserver --many-tools {MANY_TOOLS})",
        real.len()
    );
    println!();
    println!(
        "tool-definition tokens per request (estimated: JSON bytes / 4), default DeferralOptions:"
    );
    println!(
        "| provider | all definitions | deferred: search_tools only | after one search (5 found) | fewer |"
    );
    println!("|---|---:|---:|---:|---:|");
    for (name, t) in [("Anthropic", anthropic), ("OpenAI", openai)] {
        println!(
            "| {name} | {} | {} | {} | {:.1}% |",
            t.0,
            t.1,
            t.2,
            reduction(t)
        );
    }
    println!(
        "mcpmux serve --search, tools/list (search_tools and call_tool): Anthropic {} ({:.1}% \
         fewer), OpenAI {} ({:.1}% fewer)",
        serve.0,
        100.0 * (1.0 - serve.0 as f64 / anthropic.0 as f64),
        serve.1,
        100.0 * (1.0 - serve.1 as f64 / openai.0 as f64),
    );
    println!();
    println!(
        "recall@{K}: {recall_all:.3} over {} queries ({recall_tuned:.3} over the {} tuned on, \
         {recall_held:.3} over the {} held out)",
        all.len(),
        set.queries.len(),
        set.held_out.len()
    );
    println!();
    println!(
        "{} tools: index build {:.1} ms (median of {}); search p50 {:.1} µs, p99 {:.1} µs over \
         {} searches ({} queries × {}); recall@{K} {recall_big:.3} (a tenant's copy of the \
         expected tool counts as a miss)",
        big.len(),
        build.as_secs_f64() * 1e3,
        args.builds,
        micros(p50),
        micros(p99),
        latencies.len(),
        all.len(),
        args.reps
    );
    Ok(())
}
