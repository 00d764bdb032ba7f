//! `mcpmux`: the command line over the library. It parses arguments, calls the library and
//! prints; every behaviour a harness could want lives in the library.

mod agent;
mod arguments;
mod auth;
mod completions;
mod console;
mod demo;
mod edit;
mod failure;
mod form;
mod get;
mod listing;
mod logging;
mod output;
mod progress;
mod prompts;
mod resources;
mod runtime;
mod sampling;
mod secret;
mod serve;
mod spinner;
mod telemetry;
mod trust;

use std::io::{IsTerminal, Write};

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::{CommandFactory, Parser, Subcommand};
use mcpmux::{CallOptions, Hub, HubOptions, LoadOptions};

use demo::with_demo;
use failure::{Failure, exit_code};
use runtime::interrupted;
use spinner::startup;

/// Many MCP servers, one tool set.
#[derive(Parser)]
// `--version`: the version and the commit built (build.rs), so a report names the exact code.
#[command(
    name = "mcpmux",
    version = concat!(env!("CARGO_PKG_VERSION"), " (commit ", env!("MCPMUX_COMMIT"), ")"),
    about,
    long_about = None
)]
struct Cli {
    /// Extra config file, read after every discovered one (repeatable; later wins).
    #[arg(long = "config", short = 'c', global = true, value_name = "FILE")]
    config: Vec<PathBuf>,

    /// Also read these tools' MCP server files (comma-separated): codex, cursor, vscode,
    /// gemini, windsurf, claude-desktop, or all. Without it (or `import = [...]` in mcpmux.toml) no other
    /// tool's servers are read.
    #[arg(
        long = "import",
        global = true,
        value_name = "TOOLS",
        value_delimiter = ',',
        value_parser = import_name
    )]
    import: Vec<Import>,

    /// Say more on stderr: `-v` warnings and progress, `-vv` debug, `-vvv` everything
    /// (other crates too).
    #[arg(long, short = 'v', global = true, action = clap::ArgAction::Count)]
    verbose: u8,

    /// Log filter instead of `-v` (e.g. `debug`, `mcpmux=trace,rmcp=debug`); also `MCPMUX_LOG`.
    #[arg(
        long = "log",
        global = true,
        env = "MCPMUX_LOG",
        value_name = "FILTER",
        value_parser = logging::parse_filter
    )]
    log: Option<String>,

    /// Write every JSON-RPC message to and from each server to FILE, one JSON object a line
    /// (time, server, direction, message), credentials and configured secrets redacted;
    /// rotated to FILE.1 past 64 MiB. Also `MCPMUX_WIRE_LOG`.
    #[arg(
        long = "wire-log",
        global = true,
        env = "MCPMUX_WIRE_LOG",
        value_name = "FILE"
    )]
    wire_log: Option<PathBuf>,

    /// Do not read or write the caches (protocol eras, tool lists): ask every server afresh.
    #[arg(long, global = true)]
    no_cache: bool,

    /// Approve every call a policy `ask` rule would ask about (without a terminal, such calls
    /// are refused unless this is given).
    #[arg(long, short = 'y', global = true)]
    yes: bool,

    /// Write servers' text as it is, control characters included. Without it, control
    /// characters other than newline and tab are shown escaped (`\x1b`) on a terminal; a
    /// pipe always gets the bytes as they are.
    #[arg(long, global = true)]
    raw: bool,

    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// List the configured servers with their transport, protocol era, state and tool count.
    Servers {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Show one server's entry as resolved (command or URL, env and header names, source,
    /// approval, lazy/required, timeouts) with its state and tool count; values never shown.
    Get {
        /// The server's name (see `mcpmux servers`).
        name: String,
        /// Print JSON instead of `key: value` lines.
        #[arg(long)]
        json: bool,
    },
    /// List the tools of every connected server.
    Tools {
        /// Only this server's tools.
        #[arg(long, short = 's')]
        server: Option<String>,
        /// Print JSON (name, server, description, schemas) instead of a table.
        #[arg(long)]
        json: bool,
        /// Print the tool set as a model provider wants it: anthropic, openai, openai-strict,
        /// gemini.
        #[arg(long, value_name = "PROVIDER")]
        format: Option<String>,
        /// Only the tools a stage and agent may use (servers' `stages` / `agents`): `plan/coder`,
        /// `plan`, `*/coder`.
        #[arg(long, value_name = "STAGE/AGENT")]
        scope: Option<mcpmux::Scope>,
    },
    /// Call a tool: `mcpmux call mcp__demo__echo '{"text":"hi"}'`.
    Call {
        /// The tool's exposed name (see `mcpmux tools`).
        name: String,
        /// Arguments as a JSON object (default `{}`); `-` reads them from stdin.
        arguments: Option<String>,
        /// One argument, typed from the tool's input schema: a number, a boolean, JSON for an
        /// object or array, a string otherwise (repeatable; wins over the JSON's key).
        #[arg(long = "arg", value_name = "KEY=VALUE", value_parser = arguments::key_value)]
        pairs: Vec<(String, String)>,
        /// Deadline in seconds (default: the server's call timeout).
        #[arg(long)]
        timeout: Option<f64>,
        /// Print the result as JSON (content blocks, structuredContent, isError).
        #[arg(long)]
        json: bool,
        /// Call as this stage and agent: a tool outside the scope is refused (`plan/coder`).
        #[arg(long, value_name = "STAGE/AGENT")]
        scope: Option<mcpmux::Scope>,
    },
    /// `resources`, `prompts`, `read`: what servers offer beside tools.
    #[command(flatten)]
    Resource(resources::ResourceCommand),
    /// Log in to remote servers with OAuth, log out, and show the stored logins.
    Auth {
        #[command(subcommand)]
        command: auth::AuthCommand,
    },
    /// Approve the current project's own servers (.mcp.json, .claude/settings.json,
    /// mcpmux.toml, and the imported .cursor/mcp.json, .vscode/mcp.json, .gemini/settings.json)
    /// as they are now; until then they are listed as `untrusted` and not started.
    Trust {
        /// Withdraw the project's approval instead.
        #[arg(long)]
        revoke: bool,
    },
    /// Add a server to your config (or the project's .mcp.json):
    /// `mcpmux add fs -- npx -y @modelcontextprotocol/server-filesystem ~/notes`,
    /// `mcpmux add api --url https://api.example.com/mcp --header "Authorization: Bearer ${secret:api}"`.
    Add(edit::AddArgs),
    /// Remove a server from your config or the project's .mcp.json.
    Remove(edit::RemoveArgs),
    /// Store, list and remove the secrets `${secret:NAME}` reads (values from stdin only).
    Secret {
        #[command(subcommand)]
        command: secret::SecretCommand,
    },
    /// Ask a model, with every server's tools: `mcpmux run "PROMPT" --model openai:MODEL`
    /// (or anthropic:MODEL). The answer streams to stdout, tool calls show on stderr; exits
    /// 0 on a final answer, 3 when a limit or a refusal stopped the run, 2 on errors.
    Run(agent::RunArgs),
    /// Serve every configured server's tools as one MCP server: over stdio for a client that
    /// spawns `mcpmux serve`, or over streamable HTTP with `--http 127.0.0.1:PORT`.
    Serve(Box<serve::ServeArgs>),
    /// Print a shell completion script: `mcpmux completions bash > ~/.local/share/bash-completion/completions/mcpmux`.
    Completions {
        /// bash, zsh, fish, powershell or elvish.
        shell: clap_complete::Shell,
    },
    /// Print the man page as roff: `mcpmux man | man -l -`.
    Man,
}

/// One `--import` name: the dialects it stands for.
#[derive(Clone, Debug)]
struct Import(Vec<mcpmux::config::Dialect>);

fn import_name(name: &str) -> Result<Import, String> {
    mcpmux::config::Dialect::import_name(name)
        .map(Import)
        .ok_or_else(|| {
            format!(
                "not a tool mcpmux imports: valid names are {}",
                mcpmux::config::Dialect::import_names()
            )
        })
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    output::init(cli.raw);
    // Written from the argument definitions alone: no config, no runtime.
    match cli.command {
        Command::Completions { shell } => {
            return exit_code(
                completions::completions(shell, Cli::command()).map_err(Failure::Other),
            );
        }
        Command::Man => return exit_code(completions::man(Cli::command()).map_err(Failure::Other)),
        _ => {}
    }
    let access_log = match &cli.command {
        Command::Serve(args) => args.access_log(),
        _ => None,
    };
    // A call is one request to one server: a second worker (and reading the CPU count to
    // size the pool) is start-up cost with nothing to run on it.
    let threads = match &cli.command {
        Command::Serve(args) => args.threads(),
        Command::Call { .. } => 1,
        _ => 2,
    };
    let runtime = match runtime::build(threads) {
        Ok(runtime) => runtime,
        Err(e) => {
            output::say!("mcpmux: cannot start the async runtime: {e}");
            return ExitCode::from(2);
        }
    };
    // The export (`OTEL_*`) is built inside the runtime: a gRPC exporter needs one.
    let (telemetry, export) = {
        let _inside = runtime.enter();
        match telemetry::start() {
            Ok(Some((telemetry, layer))) => {
                (Some(telemetry), Some(Box::new(layer) as logging::Export))
            }
            Ok(None) => (None, None),
            Err(e) => {
                output::say!("mcpmux: {e}; going on without exporting traces");
                (None, None)
            }
        }
    };
    logging::init(
        &logging::filter(cli.log.as_deref(), cli.verbose),
        access_log,
        export,
    );
    let code = runtime.block_on(async {
        let code = run(cli).await;
        if let Some(telemetry) = telemetry {
            telemetry.shutdown().await;
        }
        code
    });
    // Servers are reaped inside `run`; do not wait for stray blocking tasks.
    runtime.shutdown_timeout(Duration::from_millis(100));
    code
}

async fn run(cli: Cli) -> ExitCode {
    let mut load_options = LoadOptions::from_env(cli.config.clone()).with_import(
        cli.import
            .iter()
            .flat_map(|i| i.0.iter().copied())
            .collect(),
    );
    // Edit a file and start nothing.
    match &cli.command {
        Command::Add(args) => {
            return exit_code(edit::add(args, &load_options).map_err(Failure::Other));
        }
        Command::Remove(args) => {
            return exit_code(edit::remove(args, &load_options).map_err(Failure::Other));
        }
        Command::Secret { command } => {
            return exit_code(secret::run(command, &load_options).map_err(Failure::Other));
        }
        _ => {}
    }
    if let Command::Trust { revoke } = &cli.command {
        // Lists the project's entries as they are; starts and expands nothing.
        let config = mcpmux::config::load(&load_options);
        return exit_code(
            trust::run(&config, &load_options.project_dir, *revoke).map_err(Failure::Other),
        );
    }
    // A config reload while serving asks nothing: no one is at a terminal to answer.
    let reload_options = load_options.clone();
    // VS Code inputs are asked only when servers are to be used, not while approving them.
    if let Some(ask) = trust::input_prompt() {
        load_options = load_options.with_input_prompt(ask);
    }
    let answers = trust::Answers::default();
    if let Some(ask) = trust::asker(&answers) {
        load_options = load_options.with_approver(ask);
    }
    // A call reads only the entries of the servers its tool's name may belong to: expanding and
    // recording every other one was most of what a call paid for many configured servers.
    let focus = match &cli.command {
        Command::Call { name, .. } => Some(name.as_str()),
        _ => None,
    };
    let (config, focused) = load_config(&load_options, focus);
    trust::remember(&config, &load_options.project_dir, &answers);
    // A focused call's failure also names the other entries that could not be used, as a
    // call over every entry does: read whole then, asking no one anything.
    let others = focused.then(|| reload_options.clone());
    if let Command::Auth { command } = &cli.command {
        // Starts no server: only the config and the token file are needed.
        let outcome = tokio::select! {
            outcome = auth::run(&config, command) => outcome.map_err(Failure::Other),
            () = interrupted() => {
                output::say!("mcpmux: interrupted");
                Err(Failure::Interrupted)
            }
        };
        return exit_code(outcome);
    }
    // A model that cannot be reached is said before any server starts.
    let model = match &cli.command {
        Command::Run(args) => match agent::provider(args) {
            Ok(provider) => Some(provider),
            Err(e) => {
                output::say!("mcpmux: {}", failure::story(&e));
                return ExitCode::from(2);
            }
        },
        _ => None,
    };
    let (mut config, used_demo) = with_demo(config);
    // `tools -s NAME` lists one server: the others' cached lists are not read, nor an
    // uncached one started. Its tools are named as in a call, from that server alone.
    if let Command::Tools {
        server: Some(name), ..
    } = &cli.command
    {
        config.servers.retain(|spec| &spec.name == name);
    }
    // `get` shows the entry as resolved: kept before the hub takes the config.
    let entries = get::Entries {
        servers: match cli.command {
            Command::Get { .. } => config.servers.clone(),
            _ => Vec::new(),
        },
        project: config.project.clone(),
    };
    // `call` prints the path of a cut result's full output and exits: the file must outlive
    // the process (files older than a day go at the next start, the folder is capped).
    // A call starts only the server it goes to; a listing answers from the tool cache where
    // it can. `servers` and the resource commands start everything: they report on it all.
    let mut options = HubOptions::default()
        .with_approver(match &cli.command {
            Command::Serve(_) => serve::approver(cli.yes),
            _ => approver(cli.yes),
        })
        .with_keep_spills(matches!(cli.command, Command::Call { .. }))
        .with_lazy(matches!(
            cli.command,
            Command::Call { .. } | Command::Tools { .. }
        ));
    if cli.no_cache {
        options = options.with_era_cache(None).with_tool_cache(None);
    }
    if let Command::Serve(args) = &cli.command {
        options = options
            .with_read_spin(args.read_spin())
            .with_http_beside(args.http_beside());
    }
    if let Some(path) = &cli.wire_log {
        let env = |name: &str| std::env::var(name).ok();
        let secrets_file =
            mcpmux::cli_support::secrets::secrets_file(load_options.home.as_deref(), &env);
        match mcpmux::telemetry::wire::WireLog::open(
            path,
            mcpmux::telemetry::wire::DEFAULT_MAX_BYTES,
        ) {
            Ok(log) => {
                let secrets = mcpmux::telemetry::wire::config_secrets(
                    &config.servers,
                    secrets_file.as_deref(),
                );
                options = options.with_wire_log(log.with_secrets(secrets));
            }
            Err(e) => {
                output::say!("mcpmux: cannot write the wire log {}: {e}", path.display());
                return ExitCode::from(2);
            }
        }
    }
    // A token file others can read is refused for every remote server; say so once, plainly,
    // rather than only inside each server's connection error.
    if let Err(e) = options.token_store.servers() {
        output::say!("mcpmux: {e}");
    }
    let serving = match &cli.command {
        Command::Serve(_) => serve::prepare(&mut config, reload_options),
        _ => serve::Serving::default(),
    };
    let mut serving = serving;
    serving.yes = cli.yes;
    if let Some(host) = &serving.host {
        options = options.with_host(host.clone());
    }
    // A server's questions during `call` and `run` go to the person at the terminal; `run`'s
    // model answers a server's sampling requests once allowed.
    match (&cli.command, &model) {
        (Command::Call { .. }, _) => {
            options = options.with_host(mcpmux::Host::new().with_elicitor(form::elicitor()));
        }
        (Command::Run(_), Some(model)) => {
            options = options.with_host(
                mcpmux::Host::new()
                    .with_elicitor(form::elicitor())
                    .with_sampler(sampling::sampler(model.clone(), cli.yes)),
            );
        }
        _ => {}
    }
    let hub = match Hub::from_config(config, options) {
        Ok(hub) => hub,
        Err(e) => {
            output::say!("mcpmux: {e}");
            return ExitCode::from(2);
        }
    };
    if used_demo && !matches!(cli.command, Command::Call { .. }) {
        output::say!(
            "mcpmux: no MCP servers configured (.mcp.json, ~/.claude.json, mcpmux.toml, --config; \
             other tools' files with --import); showing the built-in demo server"
        );
    }

    if let (Command::Run(args), Some(model)) = (&cli.command, model) {
        let outcome = run_agent(&hub, model, args).await;
        let _ = std::io::stdout().flush();
        hub.shutdown().await;
        return outcome;
    }

    if let Command::Serve(args) = &cli.command {
        // Serving ends on Ctrl-C or SIGTERM by itself, gracefully.
        let outcome = serve::run(&hub, args, serving).await;
        hub.shutdown().await;
        return exit_code(outcome.map_err(Failure::Other));
    }

    // Ctrl-C or SIGTERM: stop what we are doing, close every server, exit 130.
    let outcome = tokio::select! {
        outcome = command(&hub, &cli.command, &entries, others.as_ref()) => outcome,
        () = interrupted() => {
            output::say!("mcpmux: interrupted; closing servers");
            Err(Failure::Interrupted)
        }
    };
    let _ = std::io::stdout().flush();
    hub.shutdown().await;
    exit_code(outcome)
}

/// The config a command runs with: for a call of `tool`, only the entries of the servers the
/// tool's name may belong to (`may_own`) when there are any (`true`); every entry otherwise,
/// as for every other command.
fn load_config(options: &LoadOptions, tool: Option<&str>) -> (mcpmux::config::ConfigSet, bool) {
    use mcpmux::cli_support::naming::may_own;
    if let Some(tool) = tool {
        let name = tool.to_owned();
        let focused = mcpmux::config::load(
            &options
                .clone()
                .with_only(move |server| may_own(&name, server)),
        );
        let found = !focused.servers.is_empty()
            || focused
                .problems
                .iter()
                .any(|p| p.server.as_deref().is_some_and(|s| may_own(tool, s)));
        if found {
            return (focused, true);
        }
    }
    (mcpmux::config::load(options), false)
}

/// The problems of the entries a focused call did not read (`whole`: the options to read
/// every entry with), as rows of a hub's status: what a call that read them would list.
fn others_unavailable(whole: &LoadOptions, tool: &str) -> Vec<mcpmux::ServerStatus> {
    use mcpmux::cli_support::naming::may_own;
    let problems = mcpmux::config::load(whole)
        .problems
        .into_iter()
        .filter(|p| p.server.as_deref().is_some_and(|s| !may_own(tool, s)))
        .collect();
    let config = mcpmux::config::ConfigSet {
        problems,
        ..Default::default()
    };
    // No server in it: a table of the problems, worded as every other status row.
    match Hub::from_config(config, HubOptions::ephemeral()) {
        Ok(hub) => hub.servers(),
        Err(_) => Vec::new(),
    }
}

/// `mcpmux run`: Ctrl-C cancels the run (its transcript is still written); the exit code says
/// how it stopped.
async fn run_agent(
    hub: &Hub,
    model: std::sync::Arc<dyn mcpmux_agent::Provider>,
    args: &agent::RunArgs,
) -> ExitCode {
    let cancel = tokio_util::sync::CancellationToken::new();
    let on_interrupt = {
        let cancel = cancel.clone();
        tokio::spawn(async move {
            interrupted().await;
            cancel.cancel();
        })
    };
    let outcome = tokio::select! {
        started = startup(hub) => match started {
            Ok(()) => agent::run(hub, model, args, &cancel).await.map_err(Failure::Other),
            Err(e) => Err(Failure::from(e)),
        },
        () = cancel.cancelled() => Ok(mcpmux_agent::StopReason::Cancelled),
    };
    on_interrupt.abort();
    match outcome {
        Ok(mcpmux_agent::StopReason::Final) => ExitCode::SUCCESS,
        Ok(mcpmux_agent::StopReason::Cancelled) => {
            output::say!("mcpmux: interrupted; closing servers");
            ExitCode::from(130)
        }
        Ok(stop @ mcpmux_agent::StopReason::Provider(_)) => {
            output::say!("mcpmux: {stop}");
            ExitCode::from(2)
        }
        Ok(stop) => {
            output::say!("mcpmux: stopped without a final answer: {stop}");
            ExitCode::from(3)
        }
        Err(failure) => exit_code(Err(failure)),
    }
}

/// Who approves calls a policy `ask` rule matches: everyone with `--yes`, the person at the
/// terminal when there is one, nobody otherwise.
fn approver(yes: bool) -> std::sync::Arc<dyn mcpmux::Approver> {
    use mcpmux::policy::{Approval, ApprovalRequest, ApproveAll, DenyAll};
    if yes {
        return std::sync::Arc::new(ApproveAll);
    }
    if !std::io::stdin().is_terminal() || !std::io::stderr().is_terminal() {
        return std::sync::Arc::new(DenyAll);
    }
    std::sync::Arc::new(|request: ApprovalRequest| async move {
        let question = format!(
            "mcpmux: call `{}` ({}; policy rule `{}`) with {}? [y/N] ",
            request.tool.name, request.effects, request.rule, request.arguments
        );
        let answer = tokio::task::spawn_blocking(move || {
            output::set_prompting(true);
            output::eprint_control("\r\x1b[2K");
            output::eprint_text(&question);
            let mut line = String::new();
            let answer = std::io::stdin().read_line(&mut line).map(|_| line);
            output::set_prompting(false);
            answer
        })
        .await;
        match answer {
            Ok(Ok(line)) if matches!(line.trim(), "y" | "Y" | "yes") => Approval::Approve,
            _ => Approval::Deny {
                reason: Some("not approved at the terminal".into()),
            },
        }
    })
}

/// Runs `command` on `hub`; `others`, for a call that read only its own server's entries, the
/// options to read every entry with when it fails.
async fn command(
    hub: &Hub,
    command: &Command,
    entries: &get::Entries,
    others: Option<&LoadOptions>,
) -> Result<(), Failure> {
    match command {
        Command::Get { name, json } => {
            startup(hub).await?;
            get::run(hub, entries, name, *json)
        }
        Command::Resource(command) => resources::run(hub, command).await,
        // Run in `run` before any hub is built.
        Command::Auth { .. }
        | Command::Trust { .. }
        | Command::Add(_)
        | Command::Remove(_)
        | Command::Secret { .. }
        | Command::Run(_)
        | Command::Serve(_)
        | Command::Completions { .. }
        | Command::Man => Ok(()),
        Command::Servers { json } => {
            startup(hub).await?;
            let servers = hub.servers();
            if *json {
                output::print_servers_json(&servers)?;
            } else {
                output::print_servers(&servers)?;
            }
            Ok(())
        }
        Command::Tools {
            server,
            json,
            format,
            scope,
        } => {
            let provider = format
                .as_deref()
                .map(str::parse::<mcpmux::schema::ExportFormat>)
                .transpose()
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            // A JSON list is streamed: the hub keeps none of the cached lists it reads.
            let stream = *json && provider.is_none();
            if stream {
                spinner::startup_to_stream(hub).await?;
            } else {
                startup(hub).await?;
            }
            if let Some(s) = server
                && !hub.servers_as_read().iter().any(|status| &status.name == s)
            {
                return Err(mcpmux::Error::UnknownServer { name: s.clone() }.into());
            }
            if stream {
                return listing::json(hub, scope.as_ref(), server.as_deref());
            }
            // Printed from the hub's own list, not a copy of it: with 100 servers the copy
            // was a third of a listing's memory.
            hub.read_tools(scope.as_ref(), |tools| {
                let tools: Vec<&mcpmux::Tool> = tools
                    .iter()
                    .copied()
                    .filter(|t| server.as_ref().is_none_or(|s| &t.server == s))
                    .collect();
                listing::table(hub, &tools, provider)
            })
        }
        Command::Call {
            name,
            arguments,
            timeout,
            json,
            scope,
            pairs,
        } => {
            // The server starts while the arguments are read (from stdin, perhaps slowly).
            hub.prepare(name);
            let mut arguments = arguments::parse(arguments.as_deref()).await?;
            if !pairs.is_empty() {
                // The schema types the pairs: wait for the tool's server to list it.
                let tool = match hub.tool(name) {
                    Some(tool) => Some(tool),
                    None => {
                        startup(hub).await?;
                        hub.tool(name)
                    }
                };
                let schema = tool.as_ref().map(|t| &t.input_schema);
                arguments = arguments::with_pairs(arguments, pairs, schema)?;
            }
            let mut options = CallOptions::default();
            if let Some(scope) = scope {
                options = options.with_scope(scope.clone());
            }
            if let Some(secs) = timeout {
                let timeout = Duration::try_from_secs_f64(*secs)
                    .ok()
                    .filter(|t| !t.is_zero())
                    .context("--timeout must be a positive number of seconds")?;
                options = options.with_timeout(timeout);
            }
            let mut line = None;
            if let Some((send, started)) = progress::Line::start() {
                options = options.with_progress(send);
                line = Some(started);
            }
            let result = hub.call_with(name, arguments, options).await;
            if let Some(line) = line {
                line.finish();
            }
            let result = match result {
                Ok(result) => result,
                Err(e) => {
                    // The cause may be a server or a config file that could not be used.
                    let mut servers = hub.servers();
                    if let Some(whole) = others {
                        servers.extend(others_unavailable(whole, name));
                    }
                    output::warn_unavailable_besides(&servers, &e.to_string());
                    return Err(e.into());
                }
            };
            if *json {
                output::print_json(&result)?;
            } else {
                output::print_text(&output::call_result_text(
                    &result,
                    output::stdout_is_terminal(),
                ))?;
            }
            if result.is_error {
                output::say!("mcpmux: the tool `{name}` reported an error (isError: true)");
                return Err(Failure::ToolError);
            }
            Ok(())
        }
    }
}
