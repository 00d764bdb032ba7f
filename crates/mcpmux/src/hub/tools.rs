//! The hub's tool set: one catalog assembled from every server's tools and the harness's
//! local tools (naming, filters and merge are the catalog's; this file decides when to
//! rebuild and attaches each tool's input validator, compiled on its first call), what is
//! listed now, and the hub as a tool source.

use std::collections::HashSet;
use std::sync::{Arc, OnceLock};

use futures::future::BoxFuture;
use serde_json::Value;

use super::{Hub, Server, Table};
use crate::call_options::CallOptions;
use crate::catalog::merge::{Dropped, SourceKind};
use crate::catalog::naming;
use crate::catalog::scope::Scope;
use crate::catalog::{Catalog, ServerTool, Tool};
use crate::error::Result;
use crate::local_tools::{Health, ToolSource};
use crate::result::ToolResult;
use crate::schema::validate::Compiled;
use crate::state::ServerState;
use crate::sync;

/// A shared, immutable catalog with each tool's input validator, compiled when a call first
/// needs it: a listing compiles nothing, a call compiles the one schema it validates against.
pub(super) type Snapshot = Arc<Catalog<OnceLock<Compiled>>>;

impl Hub {
    /// The catalog of the lists read so far: rebuilt only when a server's tools, state or
    /// breaker changed since the last one. Reads no cached list: the call path's, which
    /// reads only the server a call goes to (see `Hub::lookup_after_startup`).
    pub(super) fn catalog(&self) -> Snapshot {
        self.assemble(&self.inner.table())
    }

    /// The catalog of every one of `table`'s servers: a listing's, which first reads the
    /// cached lists of the lazy servers not started yet.
    fn catalog_of(&self, table: &Table) -> Snapshot {
        read_caches(table);
        self.assemble(table)
    }

    /// The catalog of `table`'s servers as they are now (see [`Hub::catalog`]).
    fn assemble(&self, table: &Table) -> Snapshot {
        let inner = &self.inner;
        let generation: u64 = table
            .connections()
            .map(|c| c.generation())
            .fold(0u64, u64::wrapping_add);
        let key = (table.epoch, generation);
        {
            let cached = sync::read(&inner.catalog);
            if cached.0 == key {
                return cached.1.clone();
            }
        }
        let tool_lists: Vec<(&Server, Arc<Vec<ServerTool>>)> = table
            .servers
            .iter()
            .filter_map(|s| s.connection.routable_tools().map(|t| (s.as_ref(), t)))
            .collect();
        let (catalog, dropped) = Catalog::assemble(
            tool_lists.iter().map(|(server, tools)| {
                (server.spec.name.as_str(), tools.as_slice(), &server.filter)
            }),
            inner.registry.entries(),
        );
        *sync::write(&inner.shadowed) = dropped;
        // A listing needs only to know which tools cannot be called: the bounds' walk, not
        // a compile (with 100 servers of 53 tools, compiling every schema cost a listing
        // most of its time and memory). A call compiles its tool's schema on first use.
        let catalog = Arc::new(catalog.attach(|tool| {
            tool.cached = table
                .server(&tool.server)
                .is_some_and(|s| s.connection.is_cached());
            if let Err(reason) = crate::schema::budget::check(&tool.input_schema) {
                tool.unusable = Some(format!("its input schema cannot be used: {reason}"));
            }
            OnceLock::new()
        }));
        let listed: HashSet<(&str, &str)> = catalog
            .tools()
            .iter()
            .map(|tool| (tool.server.as_str(), tool.raw_name.as_str()))
            .collect();
        inner
            .validators
            .retain_listed(|server, tool| listed.contains(&(server, tool)));
        *sync::write(&inner.catalog) = (key, catalog.clone());
        catalog
    }

    /// Whether `tool` is listed now: local, or its server connected with its breaker closed.
    fn listed(&self, table: &Table, tool: &Tool) -> bool {
        table
            .server(&tool.server)
            .is_none_or(|s| s.connection.listed())
    }

    /// The tool set: local tools first, then the tools of every connected server, by name.
    ///
    /// The tool cache's list stands in for a server that has not listed its tools yet (such
    /// tools are marked [`Tool::cached`]); a lazy server without one is started by this
    /// listing, and its tools come with a later one ([`Hub::wait_ready`] waits for them).
    pub fn tools(&self) -> Vec<Tool> {
        self.read_tools(None, |tools| tools.iter().copied().cloned().collect())
    }

    /// The tools a stage and agent may use: local tools, and the tools of every connected
    /// server whose `stages` and `agents` admit the scope.
    pub fn tools_for(&self, scope: &Scope) -> Vec<Tool> {
        self.read_tools(Some(scope), |tools| {
            tools.iter().copied().cloned().collect()
        })
    }

    /// [`Hub::tools`], or [`Hub::tools_for`] `scope`, lent to `read` instead of copied: a
    /// program that prints the list and is done with it holds one copy of every schema, not
    /// two (the CLI's listing of 100 servers of 53 tools each).
    pub fn read_tools<R>(&self, scope: Option<&Scope>, read: impl FnOnce(&[&Tool]) -> R) -> R {
        self.start_uncached();
        // Held while `read` runs (it may print): an `Arc`, not a guard of the swap.
        let table = self.inner.table.load_full();
        let catalog = self.catalog_of(&table);
        let tools: Vec<&Tool> = catalog
            .tools()
            .iter()
            .filter(|tool| self.listed(&table, tool))
            .filter(|tool| {
                scope.is_none_or(|scope| {
                    table
                        .server(&tool.server)
                        .is_none_or(|s| scope.admits_server(&s.spec.options))
                })
            })
            .collect();
        read(&tools)
    }

    /// Tools left out because a same-named tool of higher precedence (a built-in over an MCP
    /// tool) took the name, with the reason.
    pub fn shadowed(&self) -> Vec<Dropped> {
        sync::read(&self.inner.shadowed).clone()
    }

    /// The tool exposed as `name`, if it is listed now.
    pub fn tool(&self, name: &str) -> Option<Tool> {
        self.with_listed(name, Tool::clone)
    }

    /// The server (or tool source) of the tool exposed as `name`, if it is listed now:
    /// [`Hub::tool`]'s answer to "whose is it", without copying the tool and its schemas.
    pub fn tool_server(&self, name: &str) -> Option<String> {
        self.with_listed(name, |t| t.server.clone())
    }

    /// The name `server`'s tool `raw_name` is exposed under: the catalog's (listed now or
    /// not), else, for a tool its server has not listed (it is down, or not started), the name
    /// it would get — unless another tool holds that name, when there is none.
    pub fn exposed_tool_name(&self, server: &str, raw_name: &str) -> Option<String> {
        let catalog = self.catalog_of(&self.inner.table());
        if let Some(tool) = catalog
            .tools()
            .iter()
            .find(|t| t.server == server && t.raw_name == raw_name)
        {
            return Some(tool.name.clone());
        }
        let name = naming::assign(&[(server, raw_name)]).pop()?;
        catalog.get(&name).is_none().then_some(name)
    }

    /// `read` of the tool exposed as `name`, if it is listed now.
    fn with_listed<R>(&self, name: &str, read: impl FnOnce(&Tool) -> R) -> Option<R> {
        let table = self.inner.table();
        self.catalog_of(&table)
            .get(name)
            .filter(|t| self.listed(&table, t))
            .map(read)
    }
}

/// Reads the cached list of every lazy server of `table` not started yet, once each.
pub(super) fn read_caches(table: &Table) {
    for connection in table.connections() {
        connection.load_cached();
    }
}

/// A hub is itself a tool source: its MCP servers' tools behind one name, so one hub (or a
/// harness's own registry) can take another's servers as a source like any other.
impl ToolSource for Hub {
    fn name(&self) -> &str {
        "mcp"
    }

    fn kind(&self) -> SourceKind {
        SourceKind::Mcp
    }

    fn tools(&self) -> BoxFuture<'_, Result<Vec<Tool>>> {
        Box::pin(async move {
            let tools = self.tools();
            let table = self.inner.table();
            Ok(tools
                .into_iter()
                .filter(|t| table.server(&t.server).is_some())
                .collect())
        })
    }

    fn call<'a>(
        &'a self,
        name: &'a str,
        arguments: Value,
        options: &'a CallOptions,
    ) -> BoxFuture<'a, Result<ToolResult>> {
        Box::pin(self.call_with(name, arguments, options.clone()))
    }

    fn health(&self) -> Health {
        let states: Vec<ServerState> = self
            .inner
            .table()
            .connections()
            .map(|c| c.state())
            .collect();
        let connected = states
            .iter()
            .filter(|s| matches!(s, ServerState::Connected { .. }))
            .count();
        if connected == states.len() {
            Health::Ready
        } else if connected == 0 {
            Health::Unavailable {
                reason: "no MCP server is connected".into(),
            }
        } else {
            Health::Degraded {
                reason: format!("{connected} of {} MCP servers connected", states.len()),
            }
        }
    }
}
