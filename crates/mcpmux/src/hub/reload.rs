//! Changing a running hub's servers ([`Hub::reconfigure`]): the new configuration is checked
//! whole (unique names, a valid policy) before anything changes, compared server by server
//! with the one running, and swapped in as one new table, so the call path never waits for a
//! reload. A server whose entry is unchanged keeps its connection; one whose entry changed
//! only in what the hub applies (tool filter, scope, side effects, result limit, `required`)
//! keeps it too, under its new settings; one whose connection changed is replaced; one gone
//! is stopped once its calls in flight have finished (within the drain). What one connection
//! does is `connection/`'s.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::{Hub, Server, Table};
use crate::config::{ConfigProblem, ConfigSet, Origin, PolicyRules, ServerSpec, ToolFilter};
use crate::defaults;
use crate::error::{Error, Result};
use crate::policy::Policy;
use crate::state::{HubEvent, Reload};
use crate::sync;

/// A configuration that passed the checks a hub makes before starting anything: what a new
/// table is made of.
pub(super) struct Checked {
    /// The servers to run, plugin duplicates left out.
    pub specs: Vec<Arc<ServerSpec>>,
    problems: Vec<ConfigProblem>,
    duplicates: Vec<(ServerSpec, String)>,
    rules: PolicyRules,
    policy: Policy,
}

impl Checked {
    /// Checks `config` with the harness's own rules added to its policy: server names must be
    /// unique and the rules valid.
    pub(super) fn new(config: ConfigSet, harness: &PolicyRules) -> Result<Self> {
        let mut names = HashSet::new();
        for spec in &config.servers {
            if !names.insert(spec.name.as_str()) {
                return Err(Error::DuplicateServer {
                    name: spec.name.clone(),
                });
            }
        }
        let mut rules = config.policy;
        rules.allow.extend(harness.allow.iter().cloned());
        rules.ask.extend(harness.ask.iter().cloned());
        rules.deny.extend(harness.deny.iter().cloned());
        let policy = Policy::from_rules(&rules)?;
        // Plugin servers repeating a configured one are started once; hand-written ones never
        // merge (two accounts of one server differ only in env).
        let (specs, duplicates) = crate::config::deduplicate(config.servers);
        Ok(Checked {
            specs: specs.into_iter().map(Arc::new).collect(),
            problems: config.problems,
            duplicates,
            rules,
            policy,
        })
    }

    /// The table of `servers` (one record per spec, in order) as configuration `epoch`.
    pub(super) fn into_table(self, servers: Vec<Arc<Server>>, epoch: u64) -> Table {
        let by_name: HashMap<String, usize> = servers
            .iter()
            .enumerate()
            .map(|(i, s)| (s.spec.name.clone(), i))
            .collect();
        Table {
            servers,
            by_name,
            problems: self.problems,
            duplicates: self.duplicates,
            rules: self.rules,
            policy: Arc::new(self.policy),
            epoch,
        }
    }
}

/// A server a reload took out of the table, and why (for the calls it cuts short).
type Retired = (Arc<Server>, &'static str);

impl Hub {
    /// Replaces the hub's servers with those of `config`, keeping what did not change, and
    /// says what changed.
    ///
    /// - A server whose entry is unchanged is untouched: its session, calls in flight, circuit
    ///   breaker and state are kept.
    /// - A server whose entry changed only in what the hub applies (`tools.allow`/`deny`,
    ///   `stages`, `agents`, `side_effects`, `max_result_bytes`, `required`, the file it is
    ///   in) keeps its session; the new settings apply to the next listing and call.
    /// - A new server starts as configured (eagerly, or on first use when lazy); use
    ///   [`Hub::wait_ready`] to wait for it, and to learn whether a `required` one failed.
    /// - A removed server, or one whose connection changed (command, arguments, environment,
    ///   URL, timeouts, …), leaves the tool set at once: new calls no longer reach it, calls
    ///   in flight get [`HubOptions::reload_drain`](crate::HubOptions::reload_drain) to
    ///   finish (then end with [`Error::Unavailable`] saying why), and its process is reaped
    ///   before this returns. A changed one is replaced by a new connection at once.
    /// - The config's problems and permission rules replace the old ones (the harness's own
    ///   rules stay).
    ///
    /// The tool set's change is announced as [`HubEvent::Reconfigured`], then as the new
    /// servers connect. An invalid config (two servers of one name, an invalid rule) changes
    /// nothing and is an error, as is a hub already shut down.
    pub async fn reconfigure(&self, config: ConfigSet) -> Result<Reload> {
        let (reload, retired) = self.swap(config)?;
        if !reload.is_empty() {
            tracing::info!("servers reconfigured: {reload}");
            self.inner
                .events
                .send(HubEvent::Reconfigured(reload.clone()));
        }
        // Tracked, so that shutdown waits for a retirement this future no longer awaits.
        let retiring: Vec<_> = retired
            .into_iter()
            .map(|(server, _)| {
                self.inner.retiring.spawn(retire(
                    server,
                    self.inner.drain,
                    self.inner.draining.clone(),
                ))
            })
            .collect();
        let stopped = !retiring.is_empty();
        for task in retiring {
            let _ = task.await;
        }
        if stopped {
            // A retired server that was still starting was dropped with its handshake: its
            // process is being stopped by its reaper, which must be done too.
            self.inner.transports.reaped(defaults::REAP_WAIT).await;
        }
        Ok(reload)
    }

    /// Checks `config`, builds the new table beside the old one and swaps it in: one reload at
    /// a time, no await, so the table is never half-built.
    fn swap(&self, config: ConfigSet) -> Result<(Reload, Vec<Retired>)> {
        let inner = &self.inner;
        let _one_at_a_time = sync::lock(&inner.reconfiguring);
        if inner.closed.load(std::sync::atomic::Ordering::Acquire) {
            return Err(Error::HubShutDown);
        }
        let checked = Checked::new(config, &inner.harness_rules)?;
        let old = inner.table.load_full();
        let mut reload = Reload {
            policy_changed: checked.rules != old.rules,
            ..Reload::default()
        };
        let mut retired: Vec<Retired> = Vec::new();
        let mut servers = Vec::with_capacity(checked.specs.len());
        for spec in &checked.specs {
            let name = spec.name.clone();
            let record = match old.server(&spec.name) {
                None => {
                    reload.added.push(name);
                    Arc::new(Server::new(spec.clone(), inner.connect(spec)))
                }
                Some(current) if *current.spec == **spec => {
                    reload.kept.push(name);
                    current.clone()
                }
                Some(current) if same_connection(&current.connection.spec, spec) => {
                    reload.updated.push(name);
                    let connection = current.connection.clone();
                    // Now eager, and still waiting for its first use.
                    if !spec.options.lazy.unwrap_or(inner.lazy) && connection.is_idle() {
                        connection.ensure_started();
                    }
                    Arc::new(Server::new(spec.clone(), connection))
                }
                Some(current) => {
                    reload.restarted.push(name);
                    retired.push((current.clone(), "replaced by a changed entry of the config"));
                    Arc::new(Server::new(spec.clone(), inner.connect(spec)))
                }
            };
            servers.push(record);
        }
        let wanted: HashSet<&str> = checked.specs.iter().map(|s| s.name.as_str()).collect();
        for server in &old.servers {
            if !wanted.contains(server.spec.name.as_str()) {
                reload.removed.push(server.spec.name.clone());
                retired.push((server.clone(), "removed from the config"));
            }
        }
        for (server, why) in &retired {
            let _ = server.retired.set(*why);
        }
        inner
            .table
            .store(Arc::new(checked.into_table(servers, old.epoch + 1)));
        Ok((reload, retired))
    }
}

/// Lets the calls in flight to a retired server finish (within `drain`, or until the hub
/// shuts down), then stops it and reaps its process.
async fn retire(server: Arc<Server>, drain: Duration, stop: CancellationToken) {
    let deadline = tokio::time::Instant::now() + drain;
    // Each call in flight holds the record; this task holds one more.
    while Arc::strong_count(&server) > 1 && tokio::time::Instant::now() < deadline {
        tokio::select! {
            () = stop.cancelled() => break,
            () = tokio::time::sleep(defaults::DRAIN_POLL) => {}
        }
    }
    let left = Arc::strong_count(&server) - 1;
    if left > 0 {
        tracing::warn!(server = %server.spec.name, calls = left, "stopping a server a reload took away with calls still in flight");
    }
    server.connection.shutdown().await;
}

/// Whether a server running as `running` can go on as `wanted`: they differ at most in what
/// the hub applies, never in what its connection uses.
fn same_connection(running: &ServerSpec, wanted: &ServerSpec) -> bool {
    connection_part(running) == connection_part(wanted)
}

/// `spec` without what only the hub reads (`hub/`, never `connection/`): the tool filter,
/// scope, side effects, result limit, `required`, `lazy` (read once, at start) and origin.
fn connection_part(spec: &ServerSpec) -> ServerSpec {
    let mut spec = spec.clone();
    spec.required = false;
    spec.origin = Origin::Code;
    spec.options.tools = ToolFilter::default();
    spec.options.stages = None;
    spec.options.agents = None;
    spec.options.side_effects = BTreeMap::new();
    spec.options.max_result_bytes = 0;
    spec.options.lazy = None;
    spec
}
