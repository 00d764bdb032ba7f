//! Where the CLI's `tracing` events go: stderr, filtered by `--verbose` (or `MCPMUX_LOG`);
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
                    .write_all(mcpmux::redact::redact_text(text).as_bytes())?;
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
}
