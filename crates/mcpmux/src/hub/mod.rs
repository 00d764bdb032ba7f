//! MANY servers: starts them concurrently, keeps the namespaced tool set current, routes calls
//! by exact name, reports every server's state, and shuts everything down. The one door for
//! calls from a harness. Each server is one record (`Server`): its connection with the tool
//! filter and side-effect overrides of its spec. What one server does is `connection/`'s;
//! this folder only chooses servers and fans out.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use tokio::sync::broadcast;

mod call;
mod options;
mod resources;
mod status;
mod tasks;
mod tools;

pub use options::HubOptions;
pub use status::ServerStatus;

use crate::auth::AuthContext;
use crate::catalog::filter::NameFilter;
use crate::catalog::merge::Dropped;
use crate::catalog::naming;
use crate::config::{ConfigProblem, ConfigSet, ServerSpec};
use crate::connection::era::EraCache;
use crate::connection::tool_cache::ToolCache;
use crate::connection::{Connection, Shared};
use crate::error::{Error, Result};
use crate::handler::HandlerRegistry;
use crate::policy::{Approver, EffectOverrides, Policy};
use crate::schema::validate::ValidatorCache;
use crate::spill::Spill;
use crate::state::{HubEvent, ServerState};
use crate::transport::TransportContext;

/// One configured server: its connection, and what its spec says about its tools.
struct Server {
    connection: Arc<Connection>,
    /// Which of its tools are exposed (`tools.allow` / `tools.deny`).
    filter: NameFilter,
    /// Side effects declared in config over the server's own annotations.
    effects: EffectOverrides,
    /// The start of every tool name this server exposes (`mcp__<server>__`): how a name
    /// the catalog does not hold is traced to its server.
    prefix: String,
}

struct Inner {
    servers: Vec<Server>,
    by_name: HashMap<String, usize>,
    problems: Vec<ConfigProblem>,
    /// Servers not started because another has the same signature: (name, kept).
    duplicates: Vec<(ServerSpec, String)>,
    catalog: RwLock<(u64, tools::Snapshot)>,
    /// Tools shadowed by a same-named tool of higher precedence, at the last rebuild.
    shadowed: RwLock<Vec<Dropped>>,
    events: broadcast::Sender<HubEvent>,
    policy: Policy,
    approver: Arc<dyn Approver>,
    registry: Arc<HandlerRegistry>,
    validators: ValidatorCache,
    /// The spill folder, with this hub's own record of the files it wrote.
    spill: Spill,
    keep_spills: bool,
    /// The transports' shared resources: shutdown waits for their process reapers.
    transports: TransportContext,
}

impl Drop for Inner {
    /// A hub dropped without [`Hub::shutdown`] cleans up its spill files too.
    fn drop(&mut self) {
        if !self.keep_spills {
            self.spill.remove_written();
        }
    }
}

impl Inner {
    /// The record of the server named `name`.
    fn server(&self, name: &str) -> Option<&Server> {
        self.by_name.get(name).map(|&i| &self.servers[i])
    }

    /// The server whose tools are exposed under the longest prefix of `name`: a lookup in
    /// the table of prefixes, for a name the catalog does not hold (yet).
    fn owner_by_prefix(&self, name: &str) -> Option<&Server> {
        self.servers
            .iter()
            .filter(|s| name.starts_with(&s.prefix))
            .max_by_key(|s| s.prefix.len())
    }
}

/// Many MCP servers as one tool set. Cheap to clone; all clones share the servers.
#[derive(Clone)]
pub struct Hub {
    inner: Arc<Inner>,
}

/// Room for bursts of state changes before a slow subscriber starts missing events.
const EVENT_BUFFER: usize = 1024;

impl Hub {
    /// Starts every enabled server concurrently and returns at once; use [`Hub::wait_ready`]
    /// to wait for startup to settle. Must be called inside a tokio runtime.
    pub fn start(specs: Vec<ServerSpec>, options: HubOptions) -> Result<Self> {
        Self::start_with_problems(specs, Vec::new(), options)
    }

    /// Starts the servers of a loaded config; its problems are listed in [`Hub::servers`].
    pub fn from_config(config: ConfigSet, mut options: HubOptions) -> Result<Self> {
        let mut rules = config.policy;
        rules.allow.append(&mut options.policy.allow);
        rules.ask.append(&mut options.policy.ask);
        rules.deny.append(&mut options.policy.deny);
        options.policy = rules;
        Self::start_with_problems(config.servers, config.problems, options)
    }

    fn start_with_problems(
        specs: Vec<ServerSpec>,
        problems: Vec<ConfigProblem>,
        options: HubOptions,
    ) -> Result<Self> {
        let mut names = std::collections::HashSet::new();
        for spec in &specs {
            if !names.insert(spec.name.clone()) {
                return Err(Error::DuplicateServer {
                    name: spec.name.clone(),
                });
            }
        }
        // Plugin servers repeating a configured one are started once; hand-written ones never
        // merge (two accounts of one server differ only in env).
        let (specs, duplicates) = crate::config::deduplicate(specs);
        let by_name: HashMap<String, usize> = specs
            .iter()
            .enumerate()
            .map(|(i, s)| (s.name.clone(), i))
            .collect();
        let policy = Policy::from_rules(&options.policy)?;
        let (events, _) = broadcast::channel(EVENT_BUFFER);
        let shared = Shared {
            ctx: TransportContext::new(AuthContext::new(
                options.token_store.clone(),
                options.authorizer.clone(),
            )),
            eras: EraCache::open(options.era_cache.clone()),
            events: events.clone(),
            shutdown_grace: options.shutdown_grace,
            host: options.host.clone(),
            tool_cache: ToolCache::new(options.tool_cache.clone(), options.tool_cache_max_age),
        };
        let transports = shared.ctx.clone();
        let servers = specs
            .into_iter()
            .map(|spec| {
                let effects = match EffectOverrides::new(&spec.options.side_effects) {
                    Ok(overrides) => overrides,
                    Err(e) => {
                        tracing::warn!(server = %spec.name, "side_effects ignored: {e}");
                        EffectOverrides::default()
                    }
                };
                Server {
                    filter: NameFilter::new(&spec.options.tools),
                    effects,
                    prefix: naming::base_name(&spec.name, ""),
                    connection: {
                        let lazy = spec.options.lazy.unwrap_or(options.lazy);
                        Arc::new(Connection::start(spec, shared.clone(), lazy))
                    },
                }
            })
            .collect();
        let spill = options.spill.detached();
        match spill.remove_stale() {
            Ok(0) => {}
            Ok(n) => tracing::debug!(dir = %spill.dir().display(), "removed {n} stale spill files"),
            Err(e) => {
                tracing::warn!(dir = %spill.dir().display(), "could not clean the spill folder: {e}")
            }
        }
        Ok(Hub {
            inner: Arc::new(Inner {
                servers,
                by_name,
                problems,
                duplicates,
                catalog: RwLock::new((u64::MAX, Arc::default())),
                shadowed: RwLock::new(Vec::new()),
                events,
                policy,
                approver: options.approver,
                registry: options.registry,
                validators: ValidatorCache::default(),
                spill,
                keep_spills: options.keep_spills,
                transports,
            }),
        })
    }

    /// Every server's connection, in config order.
    fn connections(&self) -> impl Iterator<Item = &Arc<Connection>> {
        self.inner.servers.iter().map(|s| &s.connection)
    }

    /// Waits until every server's first connection attempt has settled. Each server is
    /// bounded by its own startup timeout. Fails if a `required` server failed.
    ///
    /// A lazy server whose tools the tool cache holds stays idle (its cached tools are listed);
    /// one without is started now, since the listing that follows needs it.
    pub async fn wait_ready(&self) -> Result<()> {
        self.start_uncached();
        for connection in self.connections() {
            connection.settled().await;
            if connection.spec.required
                && let ServerState::Failed { error, .. } = connection.state()
            {
                return Err(Error::RequiredServerFailed {
                    server: connection.spec.name.clone(),
                    message: error,
                });
            }
        }
        Ok(())
    }

    /// Starts every idle server with no cached tools (a listing cannot show them otherwise),
    /// and every idle required one (startup must find out whether it fails).
    fn start_uncached(&self) {
        for connection in self.connections() {
            if connection.is_idle() && (!connection.is_cached() || connection.spec.required) {
                connection.ensure_started();
            }
        }
    }

    /// Subscribes to state and tool-list changes.
    pub fn subscribe(&self) -> broadcast::Receiver<HubEvent> {
        self.inner.events.subscribe()
    }

    /// Closes every server concurrently and reaps every child process.
    pub async fn shutdown(&self) {
        futures::future::join_all(self.connections().map(|c| c.shutdown())).await;
        // A server still starting when shutdown came was dropped with its handshake; its
        // process is being stopped by its reaper: no child outlives this call.
        self.inner
            .transports
            .reaped(crate::defaults::REAP_WAIT)
            .await;
        if !self.inner.keep_spills {
            self.inner.spill.remove_written();
        }
    }
}
