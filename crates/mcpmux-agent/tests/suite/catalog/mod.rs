//! The real catalog tool search is measured on, and the labelled queries kept beside it: the
//! reference MCP servers installed by `scripts/install-test-deps.sh` (server-everything,
//! server-filesystem, server-memory, Python mcp-server-time) and the test server with its
//! `--many-tools` catalog, listed once per test binary through a real `mcpmux::Hub`.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::OnceLock;
use std::time::Duration;

use mcpmux::{Hub, HubOptions, ServerSpec, Tool};
use serde::Deserialize;

/// How many of the test server's `--many-tools` catalog are served: all of it once (beyond
/// that it repeats per tenant, which would make every query ambiguous).
pub const MANY_TOOLS: usize = 172;

/// The servers of the catalog, by the names their tools are exposed under.
pub const SERVERS: [&str; 5] = ["everything", "filesystem", "memory", "time", "apps"];

/// A server installed by `scripts/install-test-deps.sh`.
fn installed(relative: &str) -> String {
    let path = crate::support::workspace().join("test-deps").join(relative);
    assert!(
        path.exists(),
        "{} is missing: run scripts/install-test-deps.sh (or scripts/test.sh)",
        path.display()
    );
    path.to_string_lossy().into_owned()
}

/// The catalog's servers; `dir` is the filesystem server's root and the memory server's file.
fn specs(dir: &Path) -> Vec<ServerSpec> {
    let startup = Duration::from_secs(30);
    vec![
        ServerSpec::stdio(
            "everything",
            installed("node_modules/.bin/mcp-server-everything"),
            ["stdio"],
        ),
        ServerSpec::stdio(
            "filesystem",
            installed("node_modules/.bin/mcp-server-filesystem"),
            [dir.to_string_lossy().into_owned()],
        ),
        ServerSpec::stdio(
            "memory",
            installed("node_modules/.bin/mcp-server-memory"),
            Vec::<String>::new(),
        )
        .with_env(
            "MEMORY_FILE_PATH",
            dir.join("memory.jsonl").to_string_lossy(),
        ),
        ServerSpec::stdio(
            "time",
            installed(".venv/bin/mcp-server-time"),
            Vec::<String>::new(),
        ),
        ServerSpec::stdio(
            "apps",
            crate::support::testserver().to_string_lossy(),
            ["--many-tools".to_string(), MANY_TOOLS.to_string()],
        ),
    ]
    .into_iter()
    .map(|spec| spec.with_startup_timeout(startup))
    .collect()
}

/// Every tool the hub lists from the catalog's servers, listed once per test binary.
pub fn catalog() -> &'static [Tool] {
    static CATALOG: OnceLock<Vec<Tool>> = OnceLock::new();
    CATALOG.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let runtime = tokio::runtime::Runtime::new().unwrap();
        runtime.block_on(async {
            let hub = Hub::start(specs(&root), HubOptions::ephemeral()).unwrap();
            hub.wait_ready().await.unwrap();
            let tools = hub.tools();
            for server in SERVERS {
                assert!(
                    tools.iter().any(|t| t.server == server),
                    "no tools from {server}: {:?}",
                    hub.servers()
                );
            }
            hub.shutdown().await;
            tools
        })
    })
}

/// One labelled query: what a model would ask `search_tools`, and the tools that answer it.
#[derive(Debug, Clone, Deserialize)]
pub struct Labelled {
    /// The query, phrased from the need, not from the tool's name.
    pub query: String,
    /// Exposed names of every tool that does what the query asks.
    pub expected: Vec<String>,
    /// Why it is hard, when it is.
    #[serde(default)]
    pub hard: Option<String>,
}

/// The labelled set, `testdata/search_queries.json`: the queries the ranking was improved
/// on, and the held-out ones written before that and not used for it.
#[derive(Debug, Deserialize)]
pub struct QuerySet {
    /// Measured while improving the ranking.
    pub queries: Vec<Labelled>,
    /// Not looked at while improving it.
    pub held_out: Vec<Labelled>,
}

impl QuerySet {
    /// Every query, the tuned ones first.
    pub fn all(&self) -> Vec<&Labelled> {
        self.queries.iter().chain(&self.held_out).collect()
    }
}

/// The labelled set, `testdata/search_queries.json`.
pub fn queries() -> QuerySet {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/search_queries.json");
    let text = std::fs::read_to_string(&path).unwrap();
    serde_json::from_str(&text).unwrap()
}
