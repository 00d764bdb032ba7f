//! A listing streamed server by server: the names are fitted over every server's tool names
//! alone (the catalog's own naming, filters and merge, run on lists that carry only names),
//! then each server's whole list is read when its tools are printed and let go after. A
//! listing of 100 servers of 53 tools each held every schema twice (the cached lists kept in
//! the connections and the catalog's copies); this holds one server's at a time, and leaves
//! the hub as it found it (apart from the servers it starts, as every listing does).

use std::sync::Arc;
use std::time::SystemTime;

use serde_json::Value;

use super::{Hub, Server, Table};
use crate::catalog::merge::ToolOrigin;
use crate::catalog::scope::Scope;
use crate::catalog::{Catalog, ServerTool, Tool, ToolAnnotations};

/// What a streamed listing found besides the tools it handed out.
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct ListingNotes {
    /// The servers some of whose listed tools came from the tool cache, with when that list
    /// was made, in listing order.
    pub from_cache: Vec<(String, SystemTime)>,
}

/// Where one server's tools are read from when they are printed.
enum Source {
    /// A list the hub holds anyway (a live session's, or one it has read before).
    Held(Arc<Vec<ServerTool>>),
    /// The tool cache's list, read again when printed; when it was made.
    Cache(SystemTime),
}

/// A server's list while its tools are printed.
struct Reading {
    server: String,
    tools: Arc<Vec<ServerTool>>,
    cached: bool,
    listed_at: Option<SystemTime>,
}

impl Hub {
    /// [`Hub::read_tools`] handed to `each` one tool at a time, in the same order and with
    /// the same names, holding one server's list at a time: what a program that prints a
    /// listing and is done with it uses (the CLI's `tools --json`). `only` keeps one
    /// server's tools. The lazy servers' cached lists are read here and not kept by the hub.
    pub fn stream_tools<E>(
        &self,
        scope: Option<&Scope>,
        only: Option<&str>,
        mut each: impl FnMut(&Tool) -> Result<(), E>,
    ) -> Result<ListingNotes, E> {
        let table = self.inner.table.load_full();
        let sources = self.start_for_listing(&table);
        let skeletons: Vec<(&str, Vec<ServerTool>, &Server)> = sources
            .iter()
            .map(|(server, _, names)| {
                let tools = names.iter().map(|name| skeleton(name)).collect();
                (server.spec.name.as_str(), tools, server.as_ref())
            })
            .collect();
        let (catalog, _) = Catalog::assemble(
            skeletons
                .iter()
                .map(|(name, tools, server)| (*name, tools.as_slice(), &server.filter)),
            self.inner.registry.entries(),
        );
        drop(skeletons);
        let source_of = |name: &str| {
            sources
                .iter()
                .find(|(server, _, _)| server.spec.name == name)
                .map(|(server, source, _)| (server, source))
        };
        let mut notes = ListingNotes::default();
        let mut reading: Option<Reading> = None;
        for named in catalog.tools() {
            if only.is_some_and(|only| named.server != only) {
                continue;
            }
            let mcp = match catalog.get_with_origin(&named.name) {
                Some((_, ToolOrigin::Mcp { server })) => source_of(server),
                _ => None,
            };
            let Some((server, source)) = mcp else {
                // A local tool: the catalog holds it whole.
                let record = table.server(&named.server);
                if record.is_none_or(|s| {
                    s.connection.listed()
                        && scope.is_none_or(|scope| scope.admits_server(&s.spec.options))
                }) {
                    let mut tool = named.clone();
                    tool.cached = record.is_some_and(|s| s.connection.is_cached());
                    if let Err(reason) = crate::schema::budget::check(&tool.input_schema) {
                        tool.unusable = Some(format!("its input schema cannot be used: {reason}"));
                    }
                    each(&tool)?;
                }
                continue;
            };
            let connection = &server.connection;
            let listed = match source {
                Source::Held(_) => connection.listed(),
                Source::Cache(_) => connection.before_first_answer(),
            };
            if !listed || scope.is_some_and(|scope| !scope.admits_server(&server.spec.options)) {
                continue;
            }
            if reading.as_ref().is_none_or(|r| r.server != named.server) {
                reading = read(server, source);
            }
            let Some(reading) = reading.as_ref() else {
                continue;
            };
            // A cache file changed between the two reads may lack the tool: it is left out.
            let Some(tool) = reading.tools.iter().find(|t| t.raw_name == named.raw_name) else {
                continue;
            };
            let tool = whole(named, tool, reading.cached);
            if tool.cached
                && let Some(listed_at) = reading.listed_at
                && !notes.from_cache.iter().any(|(s, _)| s == &tool.server)
            {
                notes.from_cache.push((tool.server.clone(), listed_at));
            }
            each(&tool)?;
        }
        // In the servers' order, as `Hub::servers` gives them.
        notes
            .from_cache
            .sort_by_key(|(name, _)| table.by_name.get(name).copied());
        Ok(notes)
    }

    /// Starts the servers a streamed listing starts ([`Hub::start_for_listing`]), keeping
    /// nothing of the cached lists read to decide it.
    pub(super) fn start_to_stream(&self) {
        drop(self.start_for_listing(&self.inner.table.load_full()));
    }

    /// Each server's source and tool names, its cached list read (and let go) when the hub
    /// holds none; then the servers a listing starts: [`Hub::start_uncached`]'s rule, with
    /// "cached" meaning a list was found here.
    fn start_for_listing<'t>(
        &self,
        table: &'t Table,
    ) -> Vec<(&'t Arc<Server>, Source, Vec<String>)> {
        let mut sources = Vec::new();
        for server in &table.servers {
            let connection = &server.connection;
            let found = match connection.routable_tools() {
                Some(tools) => {
                    let names = tools.iter().map(|t| t.raw_name.clone()).collect();
                    Some((Source::Held(tools), names, connection.is_cached()))
                }
                None if connection.is_idle() => connection.read_cache().map(|cached| {
                    let names = cached.tools.iter().map(|t| t.raw_name.clone()).collect();
                    (Source::Cache(cached.listed_at), names, true)
                }),
                None => None,
            };
            let cached = found.as_ref().is_some_and(|(_, _, cached)| *cached);
            if connection.is_idle() && (!cached || server.spec.required) {
                connection.ensure_started();
            }
            if let Some((source, names, _)) = found {
                sources.push((server, source, names));
            }
        }
        sources
    }
}

/// A tool of which only the name is known: what the naming reads.
fn skeleton(raw_name: &str) -> ServerTool {
    ServerTool {
        raw_name: raw_name.to_string(),
        title: None,
        description: None,
        input_schema: Value::Null,
        output_schema: None,
        annotations: ToolAnnotations::default(),
    }
}

/// `server`'s whole list from `source`; `None` when its cache can no longer be read.
fn read(server: &Server, source: &Source) -> Option<Reading> {
    let connection = &server.connection;
    let (tools, cached, listed_at) = match source {
        Source::Held(tools) => (
            tools.clone(),
            connection.is_cached(),
            connection.cached_at().map(|(at, _)| at),
        ),
        Source::Cache(listed_at) => (connection.read_cache()?.tools, true, Some(*listed_at)),
    };
    Some(Reading {
        server: server.spec.name.clone(),
        tools,
        cached,
        listed_at,
    })
}

/// The tool as the catalog would hold it: `named`'s name, `tool`'s contents, marked as the
/// catalog marks it.
fn whole(named: &Tool, tool: &ServerTool, cached: bool) -> Tool {
    let unusable = crate::schema::budget::check(&tool.input_schema)
        .err()
        .map(|reason| format!("its input schema cannot be used: {reason}"));
    Tool {
        name: named.name.clone(),
        server: named.server.clone(),
        raw_name: tool.raw_name.clone(),
        title: tool.title.clone(),
        description: tool.description.clone(),
        input_schema: tool.input_schema.clone(),
        output_schema: tool.output_schema.clone(),
        annotations: tool.annotations.clone(),
        unusable,
        cached,
    }
}
