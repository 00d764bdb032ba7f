//! Where the CLI's `tracing` events go: stderr, filtered by `--log FILTER` (or `MCPMUX_LOG`),
//! else by how many `-v` were given;
//! and with `mcpmux serve --access-log`, the gateway's access log lines too, whatever that
//! filter says, as text or as one JSON object a line. Every line is written with the URLs in
//! it redacted (`mcpmux::redact`): a dependency's log (rmcp's, hyper's) cannot print a URL's
//! query or userinfo either.

use std::io::IsTerminal;

use mcpmux_gateway::ACCESS_LOG_TARGET;
use tracing_subscriber::filter::{EnvFilter, LevelFilter, Targets};
use tracing_subscriber::layer::{Layer, SubscriberExt};
use tracing_subscriber::util::SubscriberInitExt;

use crate::serve::AccessLog;

/// What is logged without `-v` or `--log`: mcpmux's own errors.
const QUIET: &str = "mcpmux=error";

/// The filter to log with: `log` (`--log` / `MCPMUX_LOG`) when given, else one for `verbose`
/// (the count of `-v`): warnings and progress, then debug, then every crate's trace.
pub fn filter(log: Option<&str>, verbose: u8) -> String {
    match (log, verbose) {
        (Some(log), _) => log.to_string(),
        (None, 0) => QUIET.into(),
        (None, 1) => "mcpmux=info".into(),
        (None, 2) => "mcpmux=debug".into(),
        (None, _) => "trace".into(),
    }
}

/// Checks a `--log` / `MCPMUX_LOG` filter when the arguments are parsed, so that a typo is
/// said rather than silently logging nothing.
pub fn parse_filter(text: &str) -> Result<String, String> {
    EnvFilter::try_new(text)
        .map(|_| text.to_string())
        .map_err(|e| format!("not a log filter ({e}); e.g. `debug` or `mcpmux=trace,rmcp=warn`"))
}

/// A layer under the others: the OpenTelemetry export (`telemetry.rs`), filtered on its own.
pub type Export = Box<dyn Layer<tracing_subscriber::Registry> + Send + Sync>;

/// Installs the subscriber: the `filter` for everything, `access_log` for the access lines,
/// `export` for the spans exported.
pub fn init(filter: &str, access_log: Option<AccessLog>, export: Option<Export>) {
    let mut filter = EnvFilter::try_new(filter).unwrap_or_else(|_| EnvFilter::new(QUIET));
    // The access lines are the second layer's alone: not twice with `-v`.
    if access_log.is_some()
        && let Ok(off) = format!("{ACCESS_LOG_TARGET}=off").parse()
    {
        filter = filter.add_directive(off);
    }
    let access = access_log.map(|format| {
        // Colours only for a person at a terminal: a log collector reads plain text.
        let lines = tracing_subscriber::fmt::layer()
            .with_writer(redacted_stderr)
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
        .with_writer(redacted_stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_target(false)
        .with_filter(filter);
    tracing_subscriber::registry()
        .with(export)
        .with(main)
        .with(access)
        .init();
}

/// Stderr for one event: `fmt` writes an event's whole line in one `write_all`, redacted here.
fn redacted_stderr() -> Redacted<std::io::Stderr> {
    Redacted(std::io::stderr())
}

/// A writer that writes each buffer with the URLs in it redacted.
struct Redacted<W>(W);

impl<W: std::io::Write> std::io::Write for Redacted<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match std::str::from_utf8(buf) {
            Ok(text) => {
                self.0
                    .write_all(mcpmux::cli_support::redact::redact_text(text).as_bytes())?;
                Ok(buf.len())
            }
            Err(_) => self.0.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_log_line_is_written_with_its_urls_redacted() {
        let mut out = super::Redacted(Vec::new());
        out.write_all(b"GET http://u:S2@h:1/p?api_key=S1 failed\n")
            .unwrap();
        assert_eq!(
            String::from_utf8(out.0).unwrap(),
            "GET http://h:1/p?… failed\n"
        );
    }

    #[test]
    fn a_log_filter_wins_over_the_count_of_v() {
        assert_eq!(filter(Some("rmcp=debug"), 2), "rmcp=debug");
        assert_eq!(filter(None, 0), QUIET);
        assert_eq!(filter(None, 1), "mcpmux=info");
        assert_eq!(filter(None, 2), "mcpmux=debug");
        assert_eq!(filter(None, 7), "trace");
    }

    #[test]
    fn a_malformed_log_filter_is_refused() {
        assert!(parse_filter("mcpmux=loud").is_err());
        assert!(parse_filter("mcpmux=debug,info").is_ok());
    }
}
