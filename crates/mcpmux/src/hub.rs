//! MANY servers: starts them concurrently, keeps the namespaced tool set current, routes calls
//! by exact name, reports every server's state, and shuts everything down. The one door for
//! calls from a harness.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;
use tokio::sync::{broadcast, mpsc};
use tokio_util::sync::CancellationToken;

use crate::auth::{AuthContext, Authorizer, TokenStore};
use crate::catalog::filter::NameFilter;
use crate::catalog::scope::Scope;
use crate::catalog::{Catalog, CatalogSnapshot, Tool};
use crate::config::{ConfigError, ConfigProblem, ConfigSet, Origin, PolicyRules, ServerSpec};
use crate::connection::era::EraCache;
use crate::connection::{Connection, Era, ServerState, Shared};
use crate::content::ToolResult;
use crate::defaults;
use crate::error::{Error, Result};
use crate::handler::{self, Dropped, HandlerRegistry, SourcedTool, ToolOrigin};
use crate::host::Host;
use crate::policy::{Approver, DenyAll, EffectOverrides, Policy, SideEffects};
use crate::result::{self, Spill};
use crate::schema::{self, validate::ValidatorCache};
use crate::sync;
use crate::transport::TransportContext;

/// How a hub behaves beyond each server's own spec.
#[derive(Clone)]
#[non_exhaustive]
pub struct HubOptions {
    /// Where the era cache lives; `None` keeps it in memory (tests, sandboxes).
    pub era_cache: Option<PathBuf>,
    /// How long every stdio server gets to exit after its stdin closes; `None` uses each
    /// server's own `shutdown_grace` option.
    pub shutdown_grace: Option<Duration>,
    /// Permission rules of the harness, added to the config's `[policy]`.
    pub policy: PolicyRules,
    /// Who decides `ask` calls; without one they are refused.
    pub approver: Arc<dyn Approver>,
    /// Built-in tools and custom handlers (refreshed by the harness before starting).
    pub registry: Arc<HandlerRegistry>,
    /// Where truncated results are spilled in full.
    pub spill: Spill,
    /// Leave the spill files this hub wrote when it shuts down (they are removed otherwise;
    /// files older than a day go when any hub starts).
    pub keep_spills: bool,
    /// Answers to server→client requests (roots, sampling, elicitation); by default none is
    /// offered.
    pub host: Host,
    /// Where OAuth tokens live (the user's token file by default, memory when ephemeral).
    pub token_store: TokenStore,
    /// Runs an OAuth authorization inside the hub when a server needs one; without one such a
    /// server ends `NeedsAuth` with the command to run.
    pub authorizer: Option<Arc<dyn Authorizer>>,
}

impl std::fmt::Debug for HubOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HubOptions")
            .field("era_cache", &self.era_cache)
            .field("shutdown_grace", &self.shutdown_grace)
            .field("policy", &self.policy)
            .field("local_tools", &self.registry.entries().len())
            .field("token_store", &self.token_store)
            .field("authorizer", &self.authorizer.is_some())
            .finish()
    }
}

impl Default for HubOptions {
    fn default() -> Self {
        Self {
            era_cache: EraCache::default_path(),
            shutdown_grace: None,
            policy: PolicyRules::default(),
            approver: Arc::new(DenyAll),
            registry: Arc::new(HandlerRegistry::new()),
            spill: Spill::in_temp_dir(),
            keep_spills: false,
            host: Host::default(),
            token_store: TokenStore::user_default(),
            authorizer: None,
        }
    }
}

impl HubOptions {
    /// Options with the era cache and the OAuth tokens kept in memory only.
    pub fn ephemeral() -> Self {
        Self {
            era_cache: None,
            token_store: TokenStore::memory(),
            ..Self::default()
        }
    }

    /// Builder-style: where OAuth tokens are kept.
    pub fn with_token_store(mut self, store: TokenStore) -> Self {
        self.token_store = store;
        self
    }

    /// Builder-style: run OAuth authorizations inside the hub with `authorizer`.
    pub fn with_authorizer(mut self, authorizer: Arc<dyn Authorizer>) -> Self {
        self.authorizer = Some(authorizer);
        self
    }

    /// Builder-style: set the shutdown grace period.
    pub fn with_shutdown_grace(mut self, grace: Duration) -> Self {
        self.shutdown_grace = Some(grace);
        self
    }

    /// Builder-style: add permission rules (to those of the config).
    pub fn with_policy(mut self, rules: PolicyRules) -> Self {
        self.policy = rules;
        self
    }

    /// Builder-style: who approves `ask` calls.
    pub fn with_approver(mut self, approver: Arc<dyn Approver>) -> Self {
        self.approver = approver;
        self
    }

    /// Builder-style: built-in tools and custom handlers, shown with and routed like MCP tools.
    pub fn with_registry(mut self, registry: HandlerRegistry) -> Self {
        self.registry = Arc::new(registry);
        self
    }

    /// Builder-style: where truncated results are spilled.
    pub fn with_spill(mut self, spill: Spill) -> Self {
        self.spill = spill;
        self
    }

    /// Builder-style: keep the spill files when the hub shuts down.
    pub fn with_keep_spills(mut self, keep: bool) -> Self {
        self.keep_spills = keep;
        self
    }

    /// Builder-style: the harness's answers to server→client requests.
    pub fn with_host(mut self, host: Host) -> Self {
        self.host = host;
        self
    }

    /// Builder-style: set the era cache file.
    pub fn with_era_cache(mut self, path: Option<PathBuf>) -> Self {
        self.era_cache = path;
        self
    }
}

/// Options of one call.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct CallOptions {
    /// Deadline of this call (default: the server's `call_timeout`). Progress extends it.
    pub timeout: Option<Duration>,
    /// Where progress notifications of this call go.
    pub progress: Option<mpsc::UnboundedSender<Progress>>,
    /// Cancels the call (and tells the server) when cancelled.
    pub cancel: Option<CancellationToken>,
    /// Fail at once when the server is reconnecting, instead of waiting for it.
    pub fail_fast: bool,
    /// The caller's stage and agent: a tool of a server outside it is refused
    /// ([`Error::OutOfScope`]), as [`Hub::tools_for`] leaves it out. `None` refuses nothing.
    pub scope: Option<Scope>,
}

impl CallOptions {
    /// Builder-style: set the deadline.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Builder-style: receive progress.
    pub fn with_progress(mut self, tx: mpsc::UnboundedSender<Progress>) -> Self {
        self.progress = Some(tx);
        self
    }

    /// Builder-style: fail at once when the server is not connected.
    pub fn with_fail_fast(mut self, fail_fast: bool) -> Self {
        self.fail_fast = fail_fast;
        self
    }

    /// Builder-style: cancel with a token.
    pub fn with_cancel(mut self, token: CancellationToken) -> Self {
        self.cancel = Some(token);
        self
    }

    /// Builder-style: call as `scope`, refusing tools outside it.
    pub fn with_scope(mut self, scope: Scope) -> Self {
        self.scope = Some(scope);
        self
    }
}

/// One progress notification of a running call.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Progress {
    /// Progress so far.
    pub progress: f64,
    /// Total, when known.
    pub total: Option<f64>,
    /// What is happening.
    pub message: Option<String>,
}

/// Something a harness may want to react to.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum HubEvent {
    /// A server changed state.
    StateChanged {
        /// The server.
        server: String,
        /// Its new state.
        state: ServerState,
    },
    /// A server's tool list changed while connected: rebuild the model's tool list.
    ToolsChanged {
        /// The server.
        server: String,
    },
}

/// What `mcpmux servers` shows about one server.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ServerStatus {
    /// The server's name.
    pub name: String,
    /// `stdio`, `http`, `sse`, `ws`, `inproc`; `-` for an entry that could not be read.
    pub transport: String,
    /// The command line or URL.
    pub target: String,
    /// Its state.
    pub state: ServerState,
    /// The protocol era, when connected.
    pub era: Option<Era>,
    /// The protocol version, when connected.
    pub version: Option<String>,
    /// How many tools it exposes.
    pub tools: usize,
    /// The file it was configured in.
    pub source: Option<String>,
}

/// One flat JSON object per server, each key once: what `mcpmux servers --json` prints.
impl Serialize for ServerStatus {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("name", &self.name)?;
        map.serialize_entry("transport", &self.transport)?;
        map.serialize_entry("target", &self.target)?;
        map.serialize_entry("state", self.state.label())?;
        if let ServerState::Pending {
            attempt,
            next_retry_at,
            ..
        } = &self.state
        {
            map.serialize_entry("attempt", attempt)?;
            let retry_in_ms = next_retry_at.and_then(|at| {
                at.duration_since(std::time::SystemTime::now())
                    .ok()
                    .map(|d| d.as_millis() as u64)
            });
            map.serialize_entry("retry_in_ms", &retry_in_ms)?;
        }
        if let ServerState::Connected { tools_version, .. } = &self.state {
            map.serialize_entry("tools_version", tools_version)?;
        }
        map.serialize_entry("era", &self.era)?;
        map.serialize_entry("version", &self.version)?;
        map.serialize_entry("tools", &self.tools)?;
        map.serialize_entry("error", &self.error())?;
        if let ServerState::Failed { stderr_tail, .. } = &self.state {
            map.serialize_entry("stderr_tail", stderr_tail)?;
        }
        map.serialize_entry("source", &self.source)?;
        map.end()
    }
}

impl ServerStatus {
    /// The error to show in a table, if any.
    pub fn error(&self) -> Option<&str> {
        match &self.state {
            ServerState::Failed { error, .. } => Some(error),
            ServerState::Disabled { reason } => Some(reason),
            ServerState::NeedsAuth { message } | ServerState::Untrusted { message } => {
                Some(message)
            }
            ServerState::Pending {
                last_error: Some(error),
                ..
            } => Some(error),
            _ => None,
        }
    }
}

struct Inner {
    connections: Vec<Connection>,
    by_name: HashMap<String, usize>,
    problems: Vec<ConfigProblem>,
    /// Servers not started because another has the same signature: (name, kept).
    duplicates: Vec<(ServerSpec, String)>,
    catalog: RwLock<(u64, CatalogSnapshot)>,
    /// Tools shadowed by a same-named tool of higher precedence, at the last rebuild.
    shadowed: RwLock<Vec<Dropped>>,
    events: broadcast::Sender<HubEvent>,
    /// Per connection: its tool filter and side-effect overrides.
    filters: Vec<NameFilter>,
    effects: Vec<EffectOverrides>,
    policy: Policy,
    approver: Arc<dyn Approver>,
    registry: Arc<HandlerRegistry>,
    validators: ValidatorCache,
    /// The spill folder, with this hub's own record of the files it wrote.
    spill: Spill,
    keep_spills: bool,
}

impl Drop for Inner {
    /// A hub dropped without [`Hub::shutdown`] cleans up its spill files too.
    fn drop(&mut self) {
        if !self.keep_spills {
            self.spill.remove_written();
        }
    }
}

/// Many MCP servers as one tool set. Cheap to clone; all clones share the servers.
#[derive(Clone)]
pub struct Hub {
    inner: Arc<Inner>,
}

/// A hub reference that does not keep its servers running, for tasks the hub may outlive.
#[derive(Clone)]
pub(crate) struct WeakHub(std::sync::Weak<Inner>);

impl WeakHub {
    /// The hub, unless every [`Hub`] clone has been dropped.
    pub(crate) fn upgrade(&self) -> Option<Hub> {
        self.0.upgrade().map(|inner| Hub { inner })
    }
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
        let policy =
            Policy::from_rules(&options.policy).map_err(|e| Error::Policy(e.to_string()))?;
        let mut filters = Vec::new();
        let mut effects = Vec::new();
        for spec in &specs {
            filters.push(NameFilter::new(&spec.options.tools));
            effects.push(match EffectOverrides::new(&spec.options.side_effects) {
                Ok(overrides) => overrides,
                Err(e) => {
                    tracing::warn!(server = %spec.name, "side_effects ignored: {e}");
                    EffectOverrides::default()
                }
            });
        }
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
        };
        let connections = specs
            .into_iter()
            .map(|spec| Connection::start(spec, shared.clone()))
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
                connections,
                by_name,
                problems,
                duplicates,
                catalog: RwLock::new((u64::MAX, Arc::new(Catalog::default()))),
                shadowed: RwLock::new(Vec::new()),
                events,
                filters,
                effects,
                policy,
                approver: options.approver,
                registry: options.registry,
                validators: ValidatorCache::default(),
                spill,
                keep_spills: options.keep_spills,
            }),
        })
    }

    /// A reference to this hub that does not keep it alive.
    pub(crate) fn downgrade(&self) -> WeakHub {
        WeakHub(Arc::downgrade(&self.inner))
    }

    /// Every server's connection, in config order (resources.rs sends through them).
    pub(crate) fn connections(&self) -> &[Connection] {
        &self.inner.connections
    }

    /// Waits until every server's first connection attempt has settled. Each server is
    /// bounded by its own startup timeout. Fails if a `required` server failed.
    pub async fn wait_ready(&self) -> Result<()> {
        for connection in &self.inner.connections {
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

    /// Subscribes to state and tool-list changes.
    pub fn subscribe(&self) -> broadcast::Receiver<HubEvent> {
        self.inner.events.subscribe()
    }

    fn catalog(&self) -> CatalogSnapshot {
        let generation: u64 = self
            .inner
            .connections
            .iter()
            .map(Connection::generation)
            .fold(0u64, u64::wrapping_add);
        {
            let cached = sync::read(&self.inner.catalog);
            if cached.0 == generation {
                return cached.1.clone();
            }
        }
        let tool_lists: Vec<(&str, Arc<Vec<crate::catalog::ServerTool>>)> = self
            .inner
            .connections
            .iter()
            .filter_map(|c| c.routable_tools().map(|t| (c.spec.name.as_str(), t)))
            .collect();
        let mcp = Catalog::mcp_tools(
            tool_lists
                .iter()
                .map(|(name, tools)| (*name, tools.as_slice())),
        );
        let inner = &self.inner;
        let visible = mcp.into_iter().filter(|tool| {
            inner
                .by_name
                .get(&tool.server)
                .is_none_or(|&i| inner.filters[i].allows(&tool.raw_name, &tool.name))
        });
        let sourced = inner
            .registry
            .entries()
            .iter()
            .cloned()
            .chain(visible.map(|tool| SourcedTool {
                origin: ToolOrigin::Mcp {
                    server: tool.server.clone(),
                },
                tool,
            }));
        let merged = handler::merge(sourced);
        *sync::write(&self.inner.shadowed) = merged.dropped;
        let mut catalog = Catalog::from_sourced(merged.tools);
        // Compiled once per schema version: an invalid schema is logged now, and the tool
        // stays listed (its calls go unvalidated).
        catalog.attach_validators(|tool| {
            inner
                .validators
                .input(&tool.server, &tool.raw_name, &tool.input_schema)
        });
        let catalog = Arc::new(catalog);
        let mut cached = sync::write(&self.inner.catalog);
        *cached = (generation, catalog.clone());
        catalog
    }

    /// Whether `tool` is listed now: local, or its server connected with its breaker closed.
    fn listed(&self, tool: &Tool) -> bool {
        match self.inner.by_name.get(&tool.server) {
            Some(&i) => self.inner.connections[i].listed(),
            None => true,
        }
    }

    /// The tool set: local tools first, then the tools of every connected server, by name.
    pub fn tools(&self) -> Vec<Tool> {
        self.catalog()
            .tools()
            .iter()
            .filter(|t| self.listed(t))
            .cloned()
            .collect()
    }

    /// The tools a stage and agent may use: local tools, and the tools of every connected
    /// server whose `stages` and `agents` admit the scope.
    pub fn tools_for(&self, scope: &Scope) -> Vec<Tool> {
        let catalog = self.catalog();
        catalog
            .tools()
            .iter()
            .filter(|tool| self.listed(tool))
            .filter(|tool| match self.inner.by_name.get(&tool.server) {
                Some(&i) => scope.admits_server(&self.inner.connections[i].spec.options),
                None => true,
            })
            .cloned()
            .collect()
    }

    /// Tools left out because a same-named tool of higher precedence (a built-in over an MCP
    /// tool) took the name, with the reason.
    pub fn shadowed(&self) -> Vec<Dropped> {
        sync::read(&self.inner.shadowed).clone()
    }

    /// The tool exposed as `name`, if it is listed now.
    pub fn tool(&self, name: &str) -> Option<Tool> {
        self.catalog().get(name).filter(|t| self.listed(t)).cloned()
    }

    /// Every configured server with its state, plus config entries that could not be used.
    pub fn servers(&self) -> Vec<ServerStatus> {
        let mut out: Vec<ServerStatus> = self
            .inner
            .connections
            .iter()
            .map(|c| {
                let state = c.state();
                let (era, version, tools) = match &state {
                    ServerState::Connected {
                        era,
                        version,
                        tools,
                        ..
                    } => (Some(*era), Some(version.clone()), *tools),
                    _ => (None, None, 0),
                };
                ServerStatus {
                    name: c.spec.name.clone(),
                    transport: c.spec.transport.kind().into(),
                    target: c.spec.transport.to_string(),
                    state,
                    era,
                    version,
                    tools,
                    source: match &c.spec.origin {
                        Origin::File { path, .. } => Some(path.display().to_string()),
                        Origin::Demo => Some("built-in demo".into()),
                        Origin::Plugin { source } => Some(source.clone()),
                        _ => None,
                    },
                }
            })
            .collect();
        for (spec, kept) in &self.inner.duplicates {
            out.push(ServerStatus {
                name: spec.name.clone(),
                transport: spec.transport.kind().into(),
                target: spec.transport.to_string(),
                state: ServerState::Disabled {
                    reason: format!(
                        "the same server as `{kept}` (same command and args, or URL), from a plugin: started once, as `{kept}`"
                    ),
                },
                era: None,
                version: None,
                tools: 0,
                source: match &spec.origin {
                    Origin::File { path, .. } => Some(path.display().to_string()),
                    Origin::Plugin { source } => Some(source.clone()),
                    _ => None,
                },
            });
        }
        for problem in &self.inner.problems {
            out.push(ServerStatus {
                name: problem
                    .server
                    .clone()
                    .unwrap_or_else(|| format!("({})", problem.file.display())),
                transport: "-".into(),
                target: match &problem.error {
                    ConfigError::Untrusted { target, .. } => target.clone(),
                    _ => String::new(),
                },
                state: match &problem.error {
                    ConfigError::Untrusted { .. } => ServerState::Untrusted {
                        message: problem.error.to_string(),
                    },
                    _ => ServerState::Failed {
                        error: problem.error.to_string(),
                        stderr_tail: Vec::new(),
                    },
                },
                era: None,
                version: None,
                tools: 0,
                source: Some(problem.file.display().to_string()),
            });
        }
        out
    }

    /// Calls the tool exposed as `name` with JSON `arguments` (an object, or null for none).
    pub async fn call(&self, name: &str, arguments: Value) -> Result<ToolResult> {
        self.call_with(name, arguments, CallOptions::default())
            .await
    }

    /// [`Hub::call`] with a deadline, progress or cancellation.
    pub async fn call_with(
        &self,
        name: &str,
        arguments: Value,
        options: CallOptions,
    ) -> Result<ToolResult> {
        let arguments = match arguments {
            Value::Object(map) => Some(map),
            Value::Null => None,
            other => {
                return Err(Error::InvalidArguments {
                    tool: name.to_string(),
                    message: format!("arguments must be a JSON object, got {}", json_kind(&other)),
                });
            }
        };
        // Borrowed from the catalog snapshot: no per-call copy of the tool and its schemas.
        let catalog = self.catalog();
        let looked_up;
        let (tool, origin) = match catalog.get_with_origin(name) {
            Some(found) => found,
            None => {
                looked_up = self.lookup_after_startup(name, &options).await?;
                (&looked_up.0, &looked_up.1)
            }
        };
        let inner = &self.inner;
        let index = match &origin {
            ToolOrigin::Mcp { server } => inner.by_name.get(server).copied(),
            _ => None,
        };
        let arguments = Value::Object(arguments.unwrap_or_default());

        // Scope: what `tools_for` leaves out cannot be called by name either.
        if let (Some(scope), Some(i)) = (&options.scope, index) {
            let spec = &inner.connections[i].spec;
            if let Some(reason) = scope.refuses(&spec.options) {
                return Err(Error::OutOfScope {
                    tool: tool.name.clone(),
                    server: spec.name.clone(),
                    scope: scope.to_string(),
                    reason,
                });
            }
        }

        // Policy: a denied call never reaches the server.
        if !inner.policy.is_allow_all() {
            let effects = match index {
                Some(i) => inner.effects[i].effects_of(tool),
                None => SideEffects::from_annotations(&tool.annotations),
            };
            inner
                .policy
                .enforce(tool, effects, &arguments, inner.approver.as_ref())
                .await
                .map_err(Error::Denied)?;
        }
        // Validation: the server never sees arguments its own schema rejects.
        let arguments = inner
            .validators
            .prepare(tool, catalog.validator(&tool.name), arguments)
            .map_err(|refusal| match refusal {
                schema::CallRefusal::Arguments(problems) => Error::InvalidArguments {
                    tool: tool.name.clone(),
                    message: schema::validate::describe(&problems),
                },
                schema::CallRefusal::Unusable(reason) => Error::UnusableTool {
                    tool: tool.name.clone(),
                    reason,
                },
            })?;

        let (result, max_bytes) = match index {
            Some(i) => {
                let Value::Object(map) = arguments else {
                    return Err(Error::InvalidArguments {
                        tool: tool.name.clone(),
                        message: "arguments must be a JSON object".into(),
                    });
                };
                let connection = &inner.connections[i];
                let result = connection
                    .call(&tool.raw_name, Some(map), is_safe(tool), &options)
                    .await?;
                (result, connection.spec.options.max_result_bytes)
            }
            None => {
                let Some(resolved) = inner.registry.resolve(&tool.name) else {
                    return Err(Error::UnknownTool {
                        name: name.to_string(),
                        suggestion: None,
                    });
                };
                (
                    resolved.call(arguments, &options).await?,
                    defaults::MAX_RESULT_BYTES,
                )
            }
        };
        let mut result = result;
        let limit = schema::budget::MAX_RESULT_DEPTH;
        if result
            .structured_content
            .as_ref()
            .is_some_and(|v| schema::budget::depth_exceeds(v, limit))
        {
            // Only an in-process source can get here (the wire stops at serde_json's limit).
            if let Some(deep) = result.structured_content.take() {
                schema::budget::dispose(deep);
            }
            tracing::warn!(tool = %tool.name, "structuredContent nested deeper than {limit} levels was dropped");
            result.output_problems.push(format!(
                "structuredContent dropped: nested deeper than {limit} levels"
            ));
        }
        if let Some(structured) = &result.structured_content {
            let problems = schema::check_output(&inner.validators, tool, structured);
            if !problems.is_empty() {
                tracing::warn!(
                    tool = %tool.name,
                    "structuredContent does not match the tool's outputSchema: {}",
                    schema::validate::describe(&problems)
                );
                result.output_problems = problems.iter().map(ToString::to_string).collect();
            }
        }
        Ok(result::truncate(result, max_bytes, &tool.name, Some(&inner.spill)).result)
    }

    /// A name not found may belong to a server that is still starting: wait for startup to
    /// settle (within the call's deadline) and look again.
    async fn lookup_after_startup(
        &self,
        name: &str,
        options: &CallOptions,
    ) -> Result<(Tool, ToolOrigin)> {
        let pending = self
            .inner
            .connections
            .iter()
            .any(|c| matches!(c.state(), ServerState::Pending { .. }));
        let deadline = options.timeout.unwrap_or(defaults::CALL_TIMEOUT);
        if pending
            && tokio::time::timeout(deadline, self.wait_ready())
                .await
                .is_err()
        {
            // Still starting when the call's deadline ran out: say so, not "no such tool".
            if let Some(server) = self.pending_owner(name) {
                return Err(Error::Timeout {
                    server,
                    what: "waiting for the server to start".into(),
                    after: deadline,
                });
            }
        }
        let catalog = self.catalog();
        match catalog.get_with_origin(name) {
            Some((tool, origin)) => Ok((tool.clone(), origin.clone())),
            None => {
                // A known server that is down deserves a better answer than "no such tool".
                if let Some(rest) = name.strip_prefix("mcp__")
                    && let Some((server, _)) = rest.split_once("__")
                    && let Some(&i) = self.inner.by_name.get(server)
                {
                    let connection = &self.inner.connections[i];
                    let state = connection.state();
                    if !matches!(state, ServerState::Connected { .. }) {
                        return Err(Error::Unavailable {
                            server: server.to_string(),
                            state: state.label().into(),
                            reason: match state {
                                ServerState::Failed { error, .. } => error,
                                ServerState::Disabled { reason } => reason,
                                ServerState::NeedsAuth { message } => message,
                                _ => "not connected".into(),
                            },
                        });
                    }
                }
                Err(Error::UnknownTool {
                    name: name.to_string(),
                    suggestion: catalog.suggest(name),
                })
            }
        }
    }

    /// The still-starting server a tool name would belong to, if any.
    fn pending_owner(&self, name: &str) -> Option<String> {
        self.inner
            .connections
            .iter()
            .filter(|c| matches!(c.state(), ServerState::Pending { .. }))
            .find(|c| {
                name.starts_with(&format!(
                    "mcp__{}__",
                    crate::catalog::naming::sanitize(&c.spec.name)
                ))
            })
            .map(|c| c.spec.name.clone())
    }

    /// Closes every server concurrently and reaps every child process.
    pub async fn shutdown(&self) {
        futures::future::join_all(self.inner.connections.iter().map(Connection::shutdown)).await;
        if !self.inner.keep_spills {
            self.inner.spill.remove_written();
        }
    }
}

/// A tool whose call may be sent again after a lost connection: the server says it is
/// read-only or idempotent.
fn is_safe(tool: &Tool) -> bool {
    tool.annotations.read_only_hint == Some(true) || tool.annotations.idempotent_hint == Some(true)
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A hub is itself a tool source: its MCP servers' tools behind one name, so one hub (or a
/// harness's own registry) can take another's servers as a source like any other.
impl handler::ToolSource for Hub {
    fn name(&self) -> &str {
        "mcp"
    }

    fn kind(&self) -> handler::SourceKind {
        handler::SourceKind::Mcp
    }

    fn tools(&self) -> futures::future::BoxFuture<'_, Result<Vec<Tool>>> {
        Box::pin(async move {
            Ok(self
                .tools()
                .into_iter()
                .filter(|t| self.inner.by_name.contains_key(&t.server))
                .collect())
        })
    }

    fn call<'a>(
        &'a self,
        name: &'a str,
        arguments: Value,
        options: &'a CallOptions,
    ) -> futures::future::BoxFuture<'a, Result<ToolResult>> {
        Box::pin(self.call_with(name, arguments, options.clone()))
    }

    fn health(&self) -> handler::Health {
        let states: Vec<ServerState> = self
            .inner
            .connections
            .iter()
            .map(Connection::state)
            .collect();
        let connected = states
            .iter()
            .filter(|s| matches!(s, ServerState::Connected { .. }))
            .count();
        if connected == states.len() {
            handler::Health::Ready
        } else if connected == 0 {
            handler::Health::Unavailable {
                reason: "no MCP server is connected".into(),
            }
        } else {
            handler::Health::Degraded {
                reason: format!("{connected} of {} MCP servers connected", states.len()),
            }
        }
    }
}
