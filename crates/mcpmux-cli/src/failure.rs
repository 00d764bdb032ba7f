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
            output::say!("mcpmux: {e:#}");
            ExitCode::from(2)
        }
    }
}
