//! How a command failed, and the exit code that says so: 0 on success, 1 for a tool's own
//! error, 130 when interrupted, 2 for everything else. Library errors get the CLI's advice
//! (which command shows what the person needs) here.

use std::process::ExitCode;

use crate::output;

/// How a command failed.
pub enum Failure {
    /// The tool answered with `isError: true`; already printed.
    ToolError,
    Interrupted,
    Other(anyhow::Error),
}

impl From<anyhow::Error> for Failure {
    fn from(e: anyhow::Error) -> Self {
        Failure::Other(e)
    }
}

impl From<mcpmux::Error> for Failure {
    /// The library words errors for a harness and its model; a person at the terminal is
    /// also told which command shows what they need.
    fn from(e: mcpmux::Error) -> Self {
        let advice = match &e {
            mcpmux::Error::UnknownTool { .. } => Some("`mcpmux tools` lists the tools".into()),
            mcpmux::Error::UnknownServer { .. } => {
                Some("`mcpmux servers` lists the servers".into())
            }
            mcpmux::Error::NoResourceServer { .. } => {
                Some("`mcpmux resources` lists what each server offers".into())
            }
            mcpmux::Error::Unavailable {
                server,
                state: mcpmux::ServerState::NeedsAuth { login: true, .. },
                ..
            } => Some(output::login_advice(server)),
            _ => None,
        };
        match advice {
            Some(advice) => Failure::Other(anyhow::anyhow!("{e}\n  {advice}")),
            None => Failure::Other(e.into()),
        }
    }
}

/// 0 on success, 1 for a tool's own error, 130 when interrupted, 2 for everything else
/// (printed here).
pub fn exit_code(outcome: Result<(), Failure>) -> ExitCode {
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::ToolError) => ExitCode::from(1),
        Err(Failure::Interrupted) => ExitCode::from(130),
        Err(Failure::Other(e)) => {
            output::say!("mcpmux: {}", story(&e));
            ExitCode::from(2)
        }
    }
}

/// The error and each cause under it, `: `-joined as anyhow's `{:#}` does, leaving out a cause
/// whose words are already said: the library's messages carry their cause's text and keep the
/// cause as `source()` too (for a harness walking the chain), which would print it twice. Under
/// a library error nothing more is said: its message has its cause's words already, cut to what
/// a person needs (no parser position suffix, no transport type names).
pub fn story(error: &anyhow::Error) -> String {
    let mut text = error.to_string();
    let mut above: &(dyn std::error::Error + 'static) = error.as_ref();
    for cause in error.chain().skip(1) {
        if says_its_cause(above) {
            break;
        }
        let words = cause.to_string();
        if !text.contains(&words) {
            text.push_str(": ");
            text.push_str(&words);
        }
        above = cause;
    }
    text
}

/// Whether `error` is the library's, whose message says its cause in its own words.
fn says_its_cause(error: &(dyn std::error::Error + 'static)) -> bool {
    error.is::<mcpmux::Error>() || error.is::<mcpmux::config::ConfigError>()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An error that says its cause and keeps it, as the library's do.
    #[derive(Debug)]
    struct Says {
        source: std::io::Error,
    }

    impl std::fmt::Display for Says {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "cannot read it: {}", self.source)
        }
    }

    impl std::error::Error for Says {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.source)
        }
    }

    #[test]
    fn a_cause_already_in_the_message_is_printed_once_and_a_new_one_is_added() {
        let error = anyhow::Error::new(Says {
            source: std::io::Error::new(std::io::ErrorKind::NotFound, "gone"),
        });
        assert_eq!(story(&error), "cannot read it: gone");
        let error = error.context("loading the approvals");
        assert_eq!(story(&error), "loading the approvals: cannot read it: gone");
        let error = anyhow::anyhow!("outer").context("top");
        assert_eq!(story(&error), "top: outer");
    }

    #[test]
    fn a_library_error_says_its_cause_in_its_own_words_once() {
        // rmcp's wrapping of a transport's error: the library says only the innermost words.
        let io = std::io::Error::new(std::io::ErrorKind::BrokenPipe, "pipe closed");
        let error = mcpmux::Error::Protocol {
            server: "s".into(),
            message: "tools/list: pipe closed".into(),
            source: Some(Box::new(Says { source: io })),
        };
        let error = anyhow::Error::new(error).context("listing the tools");
        assert_eq!(
            story(&error),
            "listing the tools: server `s` violated the protocol: tools/list: pipe closed"
        );
    }
}
