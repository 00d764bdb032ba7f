//! `mcpmux-testserver`: a real MCP server (rmcp server side) with fault knobs, used by mcpmux's
//! integration tests and benchmarks. Run `mcpmux-testserver --help` for every flag.
//!
//! This file wires the pieces: flags (`cli`) → startup faults (`faults`) → the handler
//! (`server`, `tools`) on a transport (`stdio`, `http` or `ws`), with the raw-message `gate` in
//! front and, over HTTP with `--oauth`, the authorization server of `oauth`. With
//! `--conformance`, HTTP (or stdio) serves `conformance`'s handler instead of the test tools.

mod asking;
mod cli;
mod conformance;
mod dpop;
mod faults;
mod gate;
mod hostile;
mod http;
mod many;
mod oauth;
mod prompts;
mod server;
mod stdio;
mod tools;
mod ws;

use std::{
    process::ExitCode,
    sync::{Arc, atomic::AtomicBool},
    time::Duration,
};

use clap::Parser;
use rmcp::{ServiceExt, service::ServerInitializeError};
use tracing_subscriber::EnvFilter;

use crate::{
    cli::Cli,
    faults::{CallFaults, CallLog, HttpFailure},
    gate::Gate,
    server::{Shared, TestServer},
    stdio::{StdioOptions, StdioTransport},
};

/// Environment variable with a `tracing` filter for the logs on stderr (default: errors only,
/// so stderr stays predictable for capture tests).
const LOG_ENV: &str = "MCPMUX_TESTSERVER_LOG";

fn main() -> ExitCode {
    let cli = Cli::parse();
    if cli.ignore_sigterm
        && let Err(error) = faults::ignore_sigterm()
    {
        eprintln!("testserver: {error:#}");
        return ExitCode::FAILURE;
    }
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_env_filter(
            EnvFilter::try_from_env(LOG_ENV).unwrap_or_else(|_| EnvFilter::new("error")),
        )
        .init();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("testserver: cannot start the tokio runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    let code = match runtime.block_on(run(cli)) {
        Ok(()) => 0,
        Err(error) => {
            eprintln!("testserver: {error:#}");
            1
        }
    };
    // Exit without dropping the runtime: a blocking stdin read (when stdin is a terminal)
    // would otherwise hold the process until the next line.
    std::process::exit(code)
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    if let Some(text) = &cli.stderr_text {
        eprintln!("{text}");
    }
    if let Some((name, value)) = &cli.require_env
        && std::env::var(name).ok().as_deref() != Some(value.as_str())
    {
        eprintln!("testserver: {name} does not hold the expected value");
        std::process::exit(4);
    }
    if let Some((a, b)) = &cli.require_env_equal {
        let value = std::env::var(a).ok();
        if value.is_none() || value != std::env::var(b).ok() {
            eprintln!("testserver: {a} does not hold the expected value");
            std::process::exit(4);
        }
    }
    faults::run_startup(cli.stderr_lines, cli.startup_delay_ms, cli.exit_at_startup).await;

    let call_log = cli.call_log.as_deref().map(CallLog::open).transpose()?;
    let shared = Arc::new(Shared {
        era: cli.era,
        protocol_version: cli.protocol_version,
        page_size: cli.page_size.map(|size| size as usize),
        repeat_cursor: cli.repeat_cursor,
        call_log,
        faults: CallFaults::new(cli.crash_after, cli.crash_on, cli.slow_ms),
        extra_enabled: AtomicBool::new(false),
        prompts: cli.prompts,
        router: {
            let mut router = TestServer::tool_router();
            hostile::add_tools(&mut router, &cli.tool_schema, cli.deep_result);
            if cli.hostile_names {
                hostile::add_named_tools(&mut router);
            }
            if cli.huge_result {
                hostile::add_huge_result(&mut router);
            }
            many::add_tools(&mut router, cli.many_tools.unwrap_or(0) as usize);
            tools::describe(router, &cli.descriptions)
        },
    });
    let gate = Gate {
        era: cli.era,
        ignore_unknown: cli.ignore_unknown,
        never_answer: cli.never_answer_initialize,
    };

    if let Some(addr) = cli.http {
        let failure = HttpFailure {
            status: cli.http_fail,
            pass_before_failing: cli.http_fail_after,
            remaining: None,
        };
        return http::serve(
            shared,
            http::HttpOptions {
                addr,
                allow_remote: cli.allow_remote,
                stateless: cli.stateless_http,
                conformance: cli.conformance,
                json_response: cli.json_response,
                gate,
                failure,
                unknown_session: cli.unknown_session,
                fail_json: cli.http_fail_json,
                oauth: cli.oauth.then(|| oauth::OAuthOptions {
                    token_ttl: Duration::from_secs(cli.token_ttl),
                    clients: cli.oauth_clients,
                    dpop: cli.dpop || cli.dpop_nonce,
                    dpop_nonce: cli.dpop_nonce,
                }),
            },
        )
        .await;
    }

    if let Some(addr) = cli.ws {
        return ws::serve(shared, ws::WsOptions { addr, gate }).await;
    }
    if cli.conformance {
        let transport = rmcp::transport::stdio();
        return match conformance::ConformanceServer::new_session()
            .serve(transport)
            .await
        {
            Ok(running) => {
                let reason = running.waiting().await;
                tracing::info!(?reason, "session ended");
                Ok(())
            }
            Err(ServerInitializeError::ConnectionClosed(_)) => Ok(()),
            Err(error) => Err(anyhow::Error::from(error).context("serving stdio")),
        };
    }

    let transport = StdioTransport::start(StdioOptions {
        gate,
        garbage: cli.garbage,
        unknown_id: cli.unknown_id,
        ignore_eof: cli.ignore_stdin_eof,
        deep_result: cli.deep_result,
        padded_tools_list: cli.padded_tools_list,
        huge_result: cli.huge_result,
    })
    .await?;
    match TestServer::new_session(shared).serve(transport).await {
        Ok(running) => {
            let reason = running.waiting().await;
            tracing::info!(?reason, "session ended");
            Ok(())
        }
        // The client went away before choosing a lifecycle: a normal end for a server.
        Err(ServerInitializeError::ConnectionClosed(_)) => Ok(()),
        Err(error) => Err(anyhow::Error::from(error).context("serving stdio")),
    }
}
