//! Where the CLI's `tracing` events go: stderr, filtered by `--verbose` (or `MCPMUX_LOG`);
//! and with `mcpmux serve --access-log`, the gateway's access log lines too, whatever that
//! filter says, as text or as one JSON object a line.

use std::io::IsTerminal;

use mcpmux_gateway::ACCESS_LOG_TARGET;
use tracing_subscriber::filter::{EnvFilter, LevelFilter, Targets};
use tracing_subscriber::layer::{Layer, SubscriberExt};
use tracing_subscriber::util::SubscriberInitExt;

use crate::serve::AccessLog;

/// Installs the subscriber: the `filter` for everything, `access_log` for the access lines.
pub fn init(filter: Option<&str>, access_log: Option<AccessLog>) {
    let mut filter = EnvFilter::try_new(filter.unwrap_or("mcpmux=error"))
        .unwrap_or_else(|_| EnvFilter::new("mcpmux=error"));
    // The access lines are the second layer's alone: not twice with `-v info`.
    if access_log.is_some()
        && let Ok(off) = format!("{ACCESS_LOG_TARGET}=off").parse()
    {
        filter = filter.add_directive(off);
    }
    let access = access_log.map(|format| {
        // Colours only for a person at a terminal: a log collector reads plain text.
        let lines = tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_ansi(std::io::stderr().is_terminal());
        let lines = match format {
            AccessLog::Text => lines.boxed(),
            AccessLog::Json => lines
                .json()
                .flatten_event(true)
                .with_current_span(false)
                .with_span_list(false)
                .boxed(),
        };
        lines.with_filter(Targets::new().with_target(ACCESS_LOG_TARGET, LevelFilter::INFO))
    });
    let main = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_target(false)
        .with_filter(filter);
    tracing_subscriber::registry()
        .with(main)
        .with(access)
        .init();
}
