//! `mcpmux serve`: the hub served as one MCP server, over stdio (for a client that spawns
//! it) or streamable HTTP with `--http ADDR`. Parses the flags, reads the token, prints where
//! it listens, and says what each config reload changed; serving and reloading are
//! `mcpmux-gateway`'s. A reload reads the config as startup did (`prepare` and `read` share
//! every step). In stdio mode nothing but MCP goes to stdout.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use mcpmux_gateway::{
    Baseline, ConnectionLimits, Gateway, GatewayOptions, HttpOptions, HttpServer, Loaded,
    OAuthOptions, Rate, RateLimit, ReloadOptions, Reloader, SessionLimits, Token,
};

/// The variable a bearer token may come from instead of `--token-file`.
const TOKEN_ENV: &str = "MCPMUX_GATEWAY_TOKEN";

/// How `mcpmux serve` names what it serves.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Names {
    /// The hub's names, `mcp__SERVER__TOOL`.
    Full,
    /// `SERVER__TOOL`, fitted to `--max-name-len`.
    Short,
}

/// Flags of `mcpmux serve`.
#[derive(clap::Args, Debug)]
pub struct ServeArgs {
    /// Serve streamable HTTP at http://ADDR/mcp (e.g. 127.0.0.1:8080; port 0 picks one)
    /// instead of stdio. An address other than loopback needs a token.
    #[arg(long, value_name = "ADDR")]
    http: Option<SocketAddr>,
    /// HTTP: require `Authorization: Bearer TOKEN`, the token read from FILE (mode 600).
    /// Also MCPMUX_GATEWAY_TOKEN.
    #[arg(long, value_name = "FILE", requires = "http")]
    token_file: Option<PathBuf>,
    /// HTTP: named tokens and the access rules of identities, from FILE (TOML, mode 600): what
    /// each token or OAuth identity may list and call, its rate limit, where its policy `ask`
    /// goes. See the README, "Who may do what".
    #[arg(long, value_name = "FILE", requires = "http")]
    tokens_file: Option<PathBuf>,
    /// Where a policy `ask` goes when an identity's rule does not say: `client` (an
    /// elicitation to the calling client) or `deny`. Default: `client` for a local client
    /// without credentials (stdio, loopback), `deny` for every other identity.
    #[arg(long, value_name = "ROUTE")]
    ask: Option<mcpmux_gateway::AskRoute>,
    /// HTTP: also let in browser requests from ORIGIN (`https://app.example.com`);
    /// loopback origins always are, others get 403 (repeatable).
    #[arg(long = "allow-origin", value_name = "ORIGIN", requires = "http")]
    allow_origin: Vec<String>,
    /// HTTP: also accept this `Host` header (`mcp.example.com`, `host:port`) besides loopback
    /// names (repeatable).
    #[arg(long = "allow-host", value_name = "HOST", requires = "http")]
    allow_host: Vec<String>,
    /// HTTP: accept OAuth 2.1 access tokens (JWTs) of this authorization server
    /// (`https://auth.example.com/realms/x`; http only on loopback): signature checked against
    /// its published keys, `aud` this gateway's resource. Combines with --token-file.
    #[arg(long, value_name = "URL", requires = "http")]
    oauth_issuer: Option<String>,
    /// HTTP, OAuth: this gateway's public URL, the audience tokens are issued for
    /// (`https://mcp.example.com/mcp`). Defaults to http://ADDR/mcp on loopback.
    #[arg(long, value_name = "URL", requires = "oauth_issuer")]
    oauth_resource: Option<String>,
    /// HTTP, OAuth: the issuer's key set (JWKS) URL, when it publishes no metadata.
    #[arg(long, value_name = "URL", requires = "oauth_issuer")]
    oauth_jwks_url: Option<String>,
    /// HTTP, OAuth: a scope every token must hold (repeatable); 403 without it.
    #[arg(long = "oauth-scope", value_name = "SCOPE", requires = "oauth_issuer")]
    oauth_scope: Vec<String>,
    /// HTTP: requests each client may send to /mcp (`50/s`, `600/min`, `1000/h`); a client is
    /// its token's subject, else the static token, else its address. Past it: 429.
    #[arg(long, value_name = "RATE", requires = "http")]
    rate_limit: Option<Rate>,
    /// HTTP: requests a client may send at once after a pause (default: the rate's count).
    #[arg(long, value_name = "N", requires = "rate_limit")]
    rate_burst: Option<std::num::NonZeroU32>,
    /// HTTP: `/mcp` sessions open at once, at most; past it a new session gets 503 with
    /// `Retry-After`.
    #[arg(long, value_name = "N", requires = "http",
          default_value_t = SessionLimits::default().max_sessions as u32,
          value_parser = clap::value_parser!(u32).range(1..))]
    max_sessions: u32,
    /// HTTP: sessions one client (a token's subject, a named token, an address) may hold at
    /// once, on `/mcp` and on `/sse` each; past it: 503 (with `Retry-After` on `/mcp`).
    #[arg(long, value_name = "N", requires = "http",
          default_value_t = SessionLimits::default().max_per_client as u32,
          value_parser = clap::value_parser!(u32).range(1..))]
    max_sessions_per_client: u32,
    /// HTTP: seconds a `/mcp` session may sit without a request before it is closed.
    #[arg(long, value_name = "SECS", requires = "http",
          default_value_t = SessionLimits::default().idle.as_secs())]
    session_idle: u64,
    /// HTTP: seconds an idle `/mcp` session holding nothing beyond its handshake keeps its
    /// worker before it is parked (a small record kept, brought back when next used); 0:
    /// never parked.
    #[arg(long, value_name = "SECS", requires = "http",
          default_value_t = SessionLimits::default().park_after.map_or(0, |d| d.as_secs() as u32))]
    session_park_after: u32,
    /// HTTP: log one line per request on stderr (`text` or `json`), whatever --verbose says.
    #[arg(
        long,
        value_name = "FORMAT",
        requires = "http",
        num_args = 0..=1,
        default_missing_value = "text"
    )]
    access_log: Option<AccessLog>,
    /// HTTP: seconds a request's head may take to arrive (from the accept, or from its first
    /// byte on a kept-alive connection); then the connection is closed.
    #[arg(long, value_name = "SECS", requires = "http",
          default_value_t = ConnectionLimits::default().header_timeout.as_secs_f64())]
    header_timeout: f64,
    /// HTTP: seconds a request's body may take to arrive once its head has; then 408.
    #[arg(long, value_name = "SECS", requires = "http",
          default_value_t = ConnectionLimits::default().body_timeout.as_secs_f64())]
    body_timeout: f64,
    /// HTTP: seconds a kept-alive connection may wait for its next request, and an answer
    /// for a client that reads none of it.
    #[arg(long, value_name = "SECS", requires = "http",
          default_value_t = ConnectionLimits::default().idle_timeout.as_secs_f64())]
    idle_timeout: f64,
    /// HTTP: connections open at once, at most (kept below the open-file limit); past it a
    /// connection is closed at once. Each SSE stream holds one.
    #[arg(long, value_name = "N", requires = "http",
          default_value_t = ConnectionLimits::default().max_connections as u32,
          value_parser = clap::value_parser!(u32).range(1..))]
    max_connections: u32,
    /// HTTP: connections one peer address (IPv6: its /64) may hold at once; 0: no such cap.
    /// Behind a proxy every connection comes from the proxy: raise it, or 0.
    #[arg(long, value_name = "N", requires = "http",
          default_value_t = ConnectionLimits::default().max_connections_per_peer as u32)]
    max_connections_per_peer: u32,
    /// HTTP: the largest request head (request line and headers) in bytes; past it: 431.
    #[arg(long, value_name = "BYTES", requires = "http",
          default_value_t = ConnectionLimits::default().max_header_bytes as u32,
          value_parser = clap::value_parser!(u32).range(1024..))]
    max_header_bytes: u32,
    /// Seconds calls in flight may take to finish on Ctrl-C or SIGTERM before they are
    /// cancelled.
    #[arg(long, value_name = "SECS", default_value_t = 10.0)]
    grace: f64,
    /// Serve only the tools this stage and agent may use (`plan/coder`).
    #[arg(long, value_name = "STAGE/AGENT")]
    scope: Option<mcpmux::Scope>,
    /// Stand in front of exactly one configured server: its tools and prompts keep their own
    /// names (no `mcp__SERVER__` prefix); policy, validation and resilience stay on the path.
    /// Refused when more than one server is configured.
    #[arg(long, conflicts_with = "names")]
    passthrough: bool,
    /// How tools and prompts are named: `full` (`mcp__SERVER__TOOL`) or `short`
    /// (`SERVER__TOOL`, for clients that add a prefix of their own, as Claude Code's
    /// `mcp__mcpmux__`), a long one fitted to --max-name-len with a hash suffix.
    #[arg(long, value_name = "full|short", value_enum, default_value_t = Names::Full)]
    names: Names,
    /// With --names short: the most characters a served tool name has. Default: 51, Claude
    /// Code's 64 less the `mcp__mcpmux__` it adds for an entry named `mcpmux` (an entry named
    /// otherwise: 64 less its name and 7).
    #[arg(long, value_name = "N", default_value_t = mcpmux_gateway::CLAUDE_CODE_SHORT_NAME_LEN as u32,
          value_parser = clap::value_parser!(u32).range(mcpmux::cli_support::naming::MIN_SHORT_NAME_LEN as i64..=64))]
    max_name_len: u32,
    /// Tool search: tools/list answers the pinned tools and `search_tools` (a query → the
    /// best matching tools) and `call_tool`; the tools a session finds join its tools/list.
    /// Also `search = true` under `[serve]` in mcpmux.toml.
    #[arg(long, conflicts_with = "passthrough")]
    search: bool,
    /// With --search, always list the tools matching this pattern (exposed or raw name, `*`
    /// and `?`), or every tool of a server with `SERVER:*` (repeatable; also `pin = [...]`
    /// under `[serve]`).
    #[arg(long, value_name = "PATTERN")]
    pin: Vec<String>,
    /// Reload the config on SIGHUP only, not when a config file changes.
    #[arg(long)]
    no_watch: bool,
    /// Items per page of tools/list, resources/list, resources/templates/list and
    /// prompts/list (clients follow `nextCursor` for the rest).
    #[arg(long, value_name = "N", default_value_t = GatewayOptions::default().page_size as u32,
          value_parser = clap::value_parser!(u32).range(1..))]
    page_size: u32,
    /// Threads serving requests: 1 runs everything on one thread, the least latency per
    /// call; more spread many busy sessions over cores.
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u16).range(1..=256))]
    threads: u16,
    /// Microseconds a stdio server's reader polls its pipe for a lone call's answer before
    /// it sleeps: a quick tool answers without a sleeping reader's wake-ups, for at most this
    /// much CPU a call; 0 (the default for a gateway) never polls.
    #[arg(long, value_name = "MICROS", default_value_t = SERVE_READ_SPIN_MICROS,
          value_parser = clap::value_parser!(u32).range(0..=1000))]
    read_spin: u32,
    /// Sends a streamable-HTTP server's calls through rmcp's transport worker instead of
    /// POSTing them from the calling task (to compare the two).
    #[arg(long, hide = true)]
    no_http_beside: bool,
}

/// `--read-spin`'s default: off. A gateway's CPU per call is what bounds how many clients it
/// serves, and its client already waits on a whole HTTP exchange: measured without the poll,
/// the latency phase's added p50 stays within its goal and the gateway spends 9–15 µs less
/// CPU a call (BENCHMARKS.md, "Side by side with the peer gateways"). The library's default
/// (`HubOptions::read_spin`) stays on: a harness's own calls are its latency.
const SERVE_READ_SPIN_MICROS: u32 = 0;

/// How access log lines are written.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum AccessLog {
    /// `tracing`'s text lines.
    Text,
    /// One JSON object a line.
    Json,
}

impl ServeArgs {
    /// The access log asked for, if any.
    pub fn access_log(&self) -> Option<AccessLog> {
        self.access_log
    }

    /// How long the hub's stdio readers poll for an answer (`--read-spin`).
    pub fn read_spin(&self) -> Duration {
        Duration::from_micros(u64::from(self.read_spin))
    }

    /// Whether HTTP calls are POSTed beside rmcp's worker (not `--no-http-beside`).
    pub fn http_beside(&self) -> bool {
        !self.no_http_beside
    }

    /// The threads asked to serve requests (`--threads`).
    pub fn threads(&self) -> usize {
        usize::from(self.threads)
    }
}

/// Who approves calls a policy `ask` rule matches while serving, when the calling client
/// cannot be asked (it declared no elicitation): everyone with `--yes`, nobody otherwise.
/// Never the terminal: in stdio mode stdin is the client's, and over HTTP no one is there to
/// answer for a remote client.
pub fn approver(yes: bool) -> std::sync::Arc<dyn mcpmux::Approver> {
    use mcpmux::policy::{ApproveAll, DenyAll};
    if yes {
        std::sync::Arc::new(ApproveAll)
    } else {
        std::sync::Arc::new(DenyAll)
    }
}

/// What serving needs to know of the config besides the hub.
#[derive(Default)]
pub struct Serving {
    /// The servers `/readyz` waits for (the `required` ones).
    required: Vec<String>,
    /// What a reload compares its reading with, and how it reads.
    reload: Option<(Baseline, ReadConfig)>,
    /// The host the hub is started with: the servers may ask the calling clients for roots,
    /// sampling and elicitation, and their notices reach the clients.
    pub host: Option<mcpmux::Host>,
    /// `--yes`: a policy `ask` is approved, not asked of the client.
    pub yes: bool,
    /// `[serve]` of the config read at startup: tool search and its pins.
    settings: mcpmux::config::ServeSettings,
}

/// Reads the config again, as startup did.
type ReadConfig = Box<dyn Fn() -> Loaded + Send + Sync>;

/// Readies the config read at startup for serving (see [`ready`]) and returns what serving
/// needs of it; a reload reads with `options`, which ask no question (no terminal is there
/// to answer while serving).
pub fn prepare(config: &mut mcpmux::ConfigSet, options: mcpmux::LoadOptions) -> Serving {
    let startup = ready(std::mem::take(config), &options, true);
    let baseline = startup.baseline();
    *config = startup.config;
    Serving {
        settings: config.serve.clone(),
        required: startup.required,
        host: Some(mcpmux::Host::relaying()),
        yes: false,
        reload: Some((
            baseline,
            Box::new(move || {
                let (config, _) = crate::demo::with_demo(mcpmux::config::load(&options));
                ready(config, &options, false)
            }),
        )),
    }
}

/// The config as served: an entry that runs `mcpmux serve` itself is dropped, with a word
/// on stderr at startup (`say`): the client's own config (`~/.claude.json`, `.mcp.json`) that
/// lists the gateway is read by the gateway too, and would start it again, and again. The
/// `required` servers are what readiness waits for (which servers `--scope` admits is the
/// hub's to say, from each server's own declaration). The files to watch are every file the
/// config is or would be read from.
fn ready(mut config: mcpmux::ConfigSet, options: &mcpmux::LoadOptions, say: bool) -> Loaded {
    let me = std::env::current_exe().ok();
    config.servers.retain(|spec| {
        let itself = runs_the_gateway(spec, me.as_deref());
        if itself && say {
            crate::output::say!(
                "mcpmux: not serving `{}`: it runs `mcpmux serve` itself",
                spec.name
            );
        }
        !itself
    });
    let required = config
        .servers
        .iter()
        .filter(|spec| spec.required)
        .map(|spec| spec.name.clone())
        .collect();
    let mut watch = mcpmux::config::sources(options);
    watch.extend(config.files.iter().cloned());
    Loaded::new(config, required, watch)
}

/// Whether `spec` starts `mcpmux … serve` (by name or as this very executable).
fn runs_the_gateway(spec: &mcpmux::ServerSpec, me: Option<&std::path::Path>) -> bool {
    let mcpmux::TransportSpec::Stdio { command, args, .. } = &spec.transport else {
        return false;
    };
    let program = std::path::Path::new(command);
    let is_mcpmux = program.file_name().is_some_and(|name| name == "mcpmux")
        || me.is_some_and(|me| program == me);
    is_mcpmux && args.iter().any(|arg| arg == "serve")
}

/// The bounds of connections the flags set.
fn connection_limits(args: &ServeArgs) -> anyhow::Result<ConnectionLimits> {
    let seconds = |value: f64, flag: &str| {
        Duration::try_from_secs_f64(value)
            .ok()
            .filter(|d| !d.is_zero())
            .with_context(|| format!("{flag} must be a number of seconds above 0"))
    };
    let mut limits = ConnectionLimits::default();
    limits.header_timeout = seconds(args.header_timeout, "--header-timeout")?;
    limits.body_timeout = seconds(args.body_timeout, "--body-timeout")?;
    limits.idle_timeout = seconds(args.idle_timeout, "--idle-timeout")?;
    limits.max_connections = args.max_connections as usize;
    limits.max_connections_per_peer = args.max_connections_per_peer as usize;
    limits.max_header_bytes = args.max_header_bytes as usize;
    Ok(limits)
}

/// Tool search as `--search` or `[serve] search = true` asks, with the pins of both.
fn search_options(
    args: &ServeArgs,
    settings: &mcpmux::config::ServeSettings,
) -> Option<mcpmux_gateway::SearchOptions> {
    let on = args.search || (settings.search && !args.passthrough);
    let search = on.then(mcpmux_gateway::SearchOptions::default)?;
    let pins = settings.pin.iter().chain(&args.pin);
    Some(pins.fold(search, |search, pattern| search.with_pin(pattern.as_str())))
}

/// Serves `hub` until the client leaves (stdio), or Ctrl-C / SIGTERM.
pub async fn run(hub: &mcpmux::Hub, args: &ServeArgs, serving: Serving) -> anyhow::Result<()> {
    let grace = Duration::try_from_secs_f64(args.grace)
        .ok()
        .context("--grace must be a number of seconds, 0 or more")?;
    if args.passthrough {
        let servers: Vec<String> = hub.servers().into_iter().map(|s| s.name).collect();
        mcpmux_gateway::check_one_server(&servers)?;
    }
    // Search answers and `call_tool` name tools as the hub does; short names are not mapped
    // through them yet, so the two are refused together rather than served inconsistently.
    if args.names == Names::Short && search_options(args, &serving.settings).is_some() {
        anyhow::bail!(
            "--names short cannot be combined with tool search (--search, or `search = true` under [serve]) yet: serve with --names full, or without search"
        );
    }
    let mut options = GatewayOptions::default()
        .with_scope(args.scope.clone())
        .with_required(serving.required)
        .with_page_size(args.page_size as usize)
        .with_ask_clients(!serving.yes)
        .with_ask(args.ask)
        .with_passthrough(args.passthrough)
        .with_short_names((args.names == Names::Short).then_some(args.max_name_len as usize))
        .with_search(search_options(args, &serving.settings));
    if let Some(host) = serving.host {
        options = options.with_host(host);
    }
    let gateway = Gateway::new(hub.clone(), options);
    // Reloads until serving ends, however it ends.
    let reloading = tokio_util::sync::CancellationToken::new();
    let _stop_reloading = reloading.clone().drop_guard();
    if let Some((baseline, read)) = serving.reload {
        let options = ReloadOptions::default().with_watch(!args.no_watch);
        let reloader = Reloader::new(gateway.clone(), baseline, read, options);
        reloader.spawn(reloading, |outcome| {
            crate::output::say!("mcpmux: {outcome}");
        });
    }
    let Some(addr) = args.http else {
        mcpmux_gateway::serve_stdio(gateway, crate::runtime::interrupted(), grace).await?;
        return Ok(());
    };
    let token = match (&args.token_file, std::env::var(TOKEN_ENV)) {
        (Some(path), _) => Some(Token::from_file(path)?),
        (None, Ok(text)) => Some(Token::new(&text).context(TOKEN_ENV)?),
        (None, Err(_)) => None,
    };
    let mut options = HttpOptions::new(addr);
    options.token = token;
    options.access = match &args.tokens_file {
        Some(path) => Some(std::sync::Arc::new(mcpmux_gateway::Access::from_file(
            path,
        )?)),
        None => None,
    };
    options.oauth = args.oauth_issuer.as_ref().map(|issuer| {
        let mut oauth = OAuthOptions::new(issuer.clone());
        oauth.resource = args.oauth_resource.clone();
        oauth.jwks_url = args.oauth_jwks_url.clone();
        oauth.required_scopes = args.oauth_scope.clone();
        oauth
    });
    options.rate_limit = args.rate_limit.map(|rate| {
        let mut limit = RateLimit::new(rate);
        limit.burst = args.rate_burst;
        limit
    });
    options.access_log = args.access_log.is_some();
    options.allowed_origins = args.allow_origin.clone();
    options.allowed_hosts = args.allow_host.clone();
    options.grace = grace;
    options.connections = connection_limits(args)?;
    // Each client connection and each upstream server's pipes take a descriptor.
    mcpmux_gateway::raise_open_file_limit();
    options.sessions.max_sessions = args.max_sessions as usize;
    options.sessions.max_per_client = args.max_sessions_per_client as usize;
    options.sse.max_per_client = args.max_sessions_per_client as usize;
    options.sessions.idle = Duration::from_secs(args.session_idle.max(1));
    options.sessions.park_after =
        (args.session_park_after > 0).then(|| Duration::from_secs(args.session_park_after.into()));
    let server = HttpServer::bind(gateway, options).await?;
    {
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "listening on http://{}/mcp", server.local_addr())
            .and_then(|()| stdout.flush())
            .context("writing to stdout")?;
    }
    server.serve(crate::runtime::interrupted()).await?;
    Ok(())
}
