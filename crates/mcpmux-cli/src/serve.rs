//! `mcpmux serve`: the hub served as one MCP server, over stdio (for a client that spawns
//! it) or streamable HTTP with `--http ADDR`. Parses the flags, reads the token, prints where
//! it listens; serving is `mcpmux-gateway`'s. In stdio mode nothing but MCP goes to stdout.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use mcpmux_gateway::{Gateway, GatewayOptions, HttpOptions, HttpServer, Token};

/// The variable a bearer token may come from instead of `--token-file`.
const TOKEN_ENV: &str = "MCPMUX_GATEWAY_TOKEN";

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
    /// HTTP: also let in browser requests from ORIGIN (`https://app.example.com`);
    /// loopback origins always are, others get 403 (repeatable).
    #[arg(long = "allow-origin", value_name = "ORIGIN", requires = "http")]
    allow_origin: Vec<String>,
    /// HTTP: also accept this `Host` header (`mcp.example.com`, `host:port`) besides loopback
    /// names (repeatable).
    #[arg(long = "allow-host", value_name = "HOST", requires = "http")]
    allow_host: Vec<String>,
    /// Seconds calls in flight may take to finish on Ctrl-C or SIGTERM before they are
    /// cancelled.
    #[arg(long, value_name = "SECS", default_value_t = 10.0)]
    grace: f64,
    /// Serve only the tools this stage and agent may use (`plan/coder`).
    #[arg(long, value_name = "STAGE/AGENT")]
    scope: Option<mcpmux::Scope>,
    /// Items per page of tools/list, resources/list, resources/templates/list and
    /// prompts/list (clients follow `nextCursor` for the rest).
    #[arg(long, value_name = "N", default_value_t = mcpmux_gateway::DEFAULT_PAGE_SIZE as u32,
          value_parser = clap::value_parser!(u32).range(1..))]
    page_size: u32,
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
#[derive(Debug, Default)]
pub struct Serving {
    /// The servers `/readyz` waits for (the `required` ones).
    required: Vec<String>,
    /// The servers outside `--scope`: their resources and prompts are not served.
    hidden: Vec<String>,
    /// The host the hub is started with: the servers may ask the calling clients for roots,
    /// sampling and elicitation, and their notices reach the clients.
    pub host: Option<mcpmux::Host>,
    /// `--yes`: a policy `ask` is approved, not asked of the client.
    pub yes: bool,
}

/// Readies the config for serving and returns what serving needs of it. An entry that runs
/// `mcpmux serve` itself is dropped, with a word on stderr: the client's own config
/// (`~/.claude.json`, `.mcp.json`) that lists the gateway is read by the gateway too, and
/// would start it again, and again.
pub fn prepare(config: &mut mcpmux::ConfigSet, args: &ServeArgs) -> Serving {
    let me = std::env::current_exe().ok();
    config.servers.retain(|spec| {
        let itself = runs_the_gateway(spec, me.as_deref());
        if itself {
            crate::output::say!(
                "mcpmux: not serving `{}`: it runs `mcpmux serve` itself",
                spec.name
            );
        }
        !itself
    });
    let names = |keep: &dyn Fn(&mcpmux::ServerSpec) -> bool| -> Vec<String> {
        config
            .servers
            .iter()
            .filter(|spec| keep(spec))
            .map(|spec| spec.name.clone())
            .collect()
    };
    Serving {
        host: Some(mcpmux::Host::relaying()),
        yes: false,
        required: names(&|spec| spec.required),
        hidden: names(&|spec| {
            args.scope
                .as_ref()
                .is_some_and(|scope| !scope.admits_server(&spec.options))
        }),
    }
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

/// Serves `hub` until the client leaves (stdio), or Ctrl-C / SIGTERM.
pub async fn run(hub: &mcpmux::Hub, args: &ServeArgs, serving: Serving) -> anyhow::Result<()> {
    let grace = Duration::try_from_secs_f64(args.grace)
        .ok()
        .context("--grace must be a number of seconds, 0 or more")?;
    let mut options = GatewayOptions::default()
        .with_scope(args.scope.clone())
        .with_required(serving.required)
        .with_hidden(serving.hidden)
        .with_page_size(args.page_size as usize)
        .with_ask_clients(!serving.yes);
    if let Some(host) = serving.host {
        options = options.with_host(host);
    }
    let gateway = Gateway::new(hub.clone(), options);
    let Some(addr) = args.http else {
        mcpmux_gateway::serve_stdio(gateway, crate::interrupted(), grace).await?;
        return Ok(());
    };
    let token = match (&args.token_file, std::env::var(TOKEN_ENV)) {
        (Some(path), _) => Some(Token::from_file(path)?),
        (None, Ok(text)) => Some(Token::new(&text).context(TOKEN_ENV)?),
        (None, Err(_)) => None,
    };
    let mut options = HttpOptions::new(addr);
    options.token = token;
    options.allowed_origins = args.allow_origin.clone();
    options.allowed_hosts = args.allow_host.clone();
    options.grace = grace;
    let server = HttpServer::bind(gateway, options).await?;
    {
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "listening on http://{}/mcp", server.local_addr())
            .and_then(|()| stdout.flush())
            .context("writing to stdout")?;
    }
    server.serve(crate::interrupted()).await?;
    Ok(())
}
