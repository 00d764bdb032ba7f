//! MANY servers: starts them concurrently, keeps the namespaced tool set current, routes calls
//! by exact name, reports every server's state, changes the servers while running (`reload`),
//! and shuts everything down. The one door for calls from a harness. Each server is one record
//! (`Server`): its connection with the tool filter and side-effect overrides of its spec. The
//! records of one configuration form an immutable `Table`, read lock-free by every call and
//! swapped whole by a reload. What one server does is `connection/`'s; this folder only
//! chooses servers and fans out.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use arc_swap::ArcSwap;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

mod call;
mod listing;
mod observe;
mod options;
mod reload;
mod resources;
mod status;
mod tasks;
mod tools;

pub use listing::ListingNotes;
pub use options::HubOptions;
pub use status::ServerStatus;

use crate::auth::AuthContext;
use crate::broadcast::Broadcast;
use crate::catalog::filter::NameFilter;
use crate::catalog::merge::Dropped;
use crate::catalog::naming;
use crate::config::{ConfigProblem, ConfigSet, PolicyRules, ServerSpec};
use crate::connection::era::EraCache;
use crate::connection::tool_cache::ToolCache;
use crate::connection::{Connection, Shared};
use crate::error::{Error, Result};
use crate::local_tools::LocalTools;
use crate::policy::{Approver, EffectOverrides, Policy};
use crate::schema::validate::ValidatorCache;
use crate::spill::Spill;
use crate::state::{HubEvent, ServerState};
use crate::transport::TransportContext;

/// One configured server: its connection, and what its spec says about its tools.
struct Server {
    /// The spec as configured now. It differs from the connection's own only in what the hub
    /// applies (tool filter, scope, side effects, result limit, `required`): a reload that
    /// changes only those keeps the connection.
    spec: Arc<ServerSpec>,
    connection: Arc<Connection>,
    /// Which of its tools are exposed (`tools.allow` / `tools.deny`).
    filter: NameFilter,
    /// Side effects declared in config over the server's own annotations.
    effects: EffectOverrides,
    /// The start of every tool name this server exposes (`mcp__<server>__`): how a name
    /// the catalog does not hold is traced to its server.
    prefix: String,
    /// Set when a reload removed or replaced this server: why, for the calls it cuts short.
    retired: std::sync::OnceLock<&'static str>,
}

impl Server {
    /// The record of `spec` over `connection`.
    fn new(spec: Arc<ServerSpec>, connection: Arc<Connection>) -> Self {
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
            spec,
            connection,
            retired: std::sync::OnceLock::new(),
        }
    }

    /// A call's failure, said plainly when a reload took the server away under it.
    fn explain(&self, error: Error) -> Error {
        match self.retired.get() {
            Some(why) => Error::Unavailable {
                server: self.spec.name.clone(),
                state: ServerState::Stopped,
                reason: format!("{why} while the call was in flight ({error})"),
            },
            None => error,
        }
    }
}

/// The servers of one configuration: immutable, replaced whole by a reload, so the call path
/// reads it without a lock.
struct Table {
    servers: Vec<Arc<Server>>,
    by_name: HashMap<String, usize>,
    problems: Vec<ConfigProblem>,
    /// Servers not started because another has the same signature: (name, kept).
    duplicates: Vec<(ServerSpec, String)>,
    /// The config's permission rules with the harness's.
    rules: PolicyRules,
    policy: Arc<Policy>,
    /// Which configuration this is (0 at start, one more per reload): part of the catalog's
    /// key, since a new set of servers may add up to an old generation.
    epoch: u64,
}

impl Table {
    /// The record of the server named `name`.
    fn server(&self, name: &str) -> Option<&Arc<Server>> {
        self.by_name.get(name).map(|&i| &self.servers[i])
    }

    /// The server whose tools are exposed under the longest prefix of `name`: a lookup in
    /// the table of prefixes, for a name the catalog does not hold (yet).
    fn owner_by_prefix(&self, name: &str) -> Option<&Arc<Server>> {
        self.servers
            .iter()
            .filter(|s| name.starts_with(&s.prefix))
            .max_by_key(|s| s.prefix.len())
    }

    /// Every server's connection, in config order.
    fn connections(&self) -> impl Iterator<Item = &Arc<Connection>> {
        self.servers.iter().map(|s| &s.connection)
    }
}

struct Inner {
    table: ArcSwap<Table>,
    /// Held while a reload computes and swaps the table, and by shutdown: one at a time.
    reconfiguring: Mutex<()>,
    /// Set by shutdown: the servers can no longer be changed.
    closed: std::sync::atomic::AtomicBool,
    /// What new servers are started with.
    shared: Shared,
    lazy: bool,
    /// The harness's own permission rules, added to each config's.
    harness_rules: PolicyRules,
    /// How long calls in flight to a removed or replaced server may take to finish.
    drain: Duration,
    /// Cancelled by shutdown: servers still draining after a reload stop at once.
    draining: CancellationToken,
    /// Servers a reload removed or replaced, being drained and stopped: shutdown waits for them.
    retiring: TaskTracker,
    catalog: RwLock<((u64, u64), tools::Snapshot)>,
    /// Tools shadowed by a same-named tool of higher precedence, at the last rebuild.
    shadowed: RwLock<Vec<Dropped>>,
    events: Broadcast<HubEvent>,
    approver: Arc<dyn Approver>,
    registry: Arc<LocalTools>,
    validators: ValidatorCache,
    /// The spill folder, with this hub's own record of the files it wrote.
    spill: Spill,
    keep_spills: bool,
    /// The transports' shared resources: shutdown waits for their process reapers.
    transports: TransportContext,
    /// Told of every call as it ends (`Hub::observe`).
    observers: crate::telemetry::Observers,
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
    /// The servers now. A guard, not a lock: hold it only across code that does not await.
    fn table(&self) -> arc_swap::Guard<Arc<Table>> {
        self.table.load()
    }

    /// Starts the connection of `spec` as the hub started its first servers.
    fn connect(&self, spec: &Arc<ServerSpec>) -> Arc<Connection> {
        connect(&self.shared, self.lazy, spec)
    }
}

/// Starts the connection of `spec`: lazily (on first use) if its own `lazy` option, else the
/// hub's, says so.
fn connect(shared: &Shared, lazy: bool, spec: &Arc<ServerSpec>) -> Arc<Connection> {
    let lazy = spec.options.lazy.unwrap_or(lazy);
    Arc::new(Connection::start(
        ServerSpec::clone(spec),
        shared.clone(),
        lazy,
    ))
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
        Self::from_config(
            ConfigSet {
                servers: specs,
                ..ConfigSet::default()
            },
            options,
        )
    }

    /// Starts the servers of a loaded config; its problems are listed in [`Hub::servers`].
    pub fn from_config(config: ConfigSet, options: HubOptions) -> Result<Self> {
        let checked = reload::Checked::new(config, &options.policy)?;
        let events = Broadcast::new(EVENT_BUFFER);
        let shared = Shared {
            ctx: TransportContext::new(AuthContext::new(
                options.token_store.clone(),
                options.authorizer.clone(),
            ))
            .with_read_spin(options.read_spin)
            .with_http_beside(options.http_beside)
            .with_max_message(options.max_message_bytes)
            .with_wire_log(options.wire_log.clone()),
            eras: EraCache::open(options.era_cache.clone()),
            events: events.clone(),
            shutdown_grace: options.shutdown_grace,
            host: options.host.clone(),
            tool_cache: ToolCache::new(options.tool_cache.clone(), options.tool_cache_max_age),
        };
        let transports = shared.ctx.clone();
        let spill = options.spill.detached();
        match spill.remove_stale() {
            Ok(0) => {}
            Ok(n) => tracing::debug!(dir = %spill.dir().display(), "removed {n} stale spill files"),
            Err(e) => {
                tracing::warn!(dir = %spill.dir().display(), "could not clean the spill folder: {e}")
            }
        }
        let servers = checked
            .specs
            .iter()
            .map(|spec| {
                let connection = connect(&shared, options.lazy, spec);
                Arc::new(Server::new(spec.clone(), connection))
            })
            .collect();
        let inner = Arc::new(Inner {
            table: ArcSwap::from_pointee(checked.into_table(servers, 0)),
            reconfiguring: Mutex::new(()),
            closed: std::sync::atomic::AtomicBool::new(false),
            shared,
            lazy: options.lazy,
            harness_rules: options.policy,
            drain: options.reload_drain,
            draining: CancellationToken::new(),
            retiring: TaskTracker::new(),
            catalog: RwLock::new(((u64::MAX, u64::MAX), Arc::default())),
            shadowed: RwLock::new(Vec::new()),
            events,
            approver: options.approver,
            registry: options.registry,
            validators: ValidatorCache::default(),
            spill,
            keep_spills: options.keep_spills,
            transports,
            observers: crate::telemetry::Observers::default(),
        });
        Ok(Hub { inner })
    }

    /// Waits until every server's first connection attempt has settled. Each server is
    /// bounded by its own startup timeout. Fails if a `required` server failed.
    ///
    /// A lazy server whose tools the tool cache holds stays idle (its cached tools are listed);
    /// one without is started now, since the listing that follows needs it.
    pub async fn wait_ready(&self) -> Result<()> {
        self.start_uncached();
        self.settle().await
    }

    /// [`Hub::wait_ready`] for a caller that then streams the listing ([`Hub::stream_tools`]):
    /// the same servers are started, but the cached lists that decide it are read and let
    /// go, not kept by the hub.
    pub async fn wait_ready_to_stream(&self) -> Result<()> {
        self.start_to_stream();
        self.settle().await
    }

    /// Waits for every server's first attempt to settle; fails if a `required` one failed.
    async fn settle(&self) -> Result<()> {
        let table = self.inner.table.load_full();
        for server in &table.servers {
            let connection = &server.connection;
            connection.settled().await;
            if server.spec.required
                && let ServerState::Failed { error, .. } = connection.state()
            {
                return Err(Error::RequiredServerFailed {
                    server: server.spec.name.clone(),
                    message: error,
                });
            }
        }
        Ok(())
    }

    /// Starts every idle server with no cached tools (a listing cannot show them otherwise),
    /// and every idle required one (startup must find out whether it fails).
    fn start_uncached(&self) {
        let table = self.inner.table();
        tools::read_caches(&table);
        for server in &table.servers {
            let connection = &server.connection;
            if connection.is_idle() && (!connection.is_cached() || server.spec.required) {
                connection.ensure_started();
            }
        }
    }

    /// Subscribes to state and tool-list changes.
    pub fn subscribe(&self) -> broadcast::Receiver<HubEvent> {
        self.inner.events.subscribe()
    }

    /// Closes every server concurrently and reaps every child process; a server a reload is
    /// still draining is stopped at once. The servers cannot be changed afterwards.
    pub async fn shutdown(&self) {
        let table = {
            let _one_at_a_time = crate::sync::lock(&self.inner.reconfiguring);
            self.inner
                .closed
                .store(true, std::sync::atomic::Ordering::Release);
            self.inner.table.load_full()
        };
        self.inner.draining.cancel();
        self.inner.retiring.close();
        futures::future::join_all(table.connections().map(|c| c.shutdown())).await;
        self.inner.retiring.wait().await;
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
