//! `mcpmux secret set|list|rm`: the secrets file `${secret:NAME}` reads. The value is read from
//! standard input only (an argument would land in shell history and the process list), without
//! echo on a terminal; only names are ever printed. The file and its checks are the library's.

use std::io::{IsTerminal, Read};

use anyhow::Context;
use clap::Subcommand;
use mcpmux::LoadOptions;
use mcpmux::cli_support::secrets;

/// What `mcpmux secret` does.
#[derive(Subcommand)]
pub enum SecretCommand {
    /// Store a secret; the value is read from standard input (typed without echo on a
    /// terminal, or piped), a trailing newline dropped: `mcpmux secret set github < token.txt`.
    Set {
        /// The secret's name, as used in `${secret:NAME}`.
        name: String,
    },
    /// List the names of the stored secrets (never their values).
    List,
    /// Remove a secret.
    #[command(alias = "remove")]
    Rm {
        /// The secret's name.
        name: String,
    },
}

/// Longest value read: secrets are tokens and keys, not files.
const MAX_VALUE: u64 = 64 * 1024;

/// Runs one `secret` command.
pub fn run(command: &SecretCommand, options: &LoadOptions) -> anyhow::Result<()> {
    let file = secrets::secrets_file(options.home.as_deref(), &|name| std::env::var(name).ok())
        .ok_or(secrets::SecretsError::NoHome)?;
    match command {
        SecretCommand::Set { name } => {
            if !secrets::valid_secret_name(name) {
                // Checked before asking for the value, so nothing typed is wasted.
                secrets::set_secret(&file, name, "")?;
            }
            let value = read_value(name)?;
            secrets::set_secret(&file, name, &value)?;
            crate::output::out!(
                "stored secret `{name}` in {}; use it as ${{secret:{name}}} in env or headers values or an oauth clientSecret",
                file.display()
            )?;
        }
        SecretCommand::List => {
            let names = secrets::secret_names(&file)?;
            if names.is_empty() {
                crate::output::out!(
                    "no secrets in {}; `mcpmux secret set NAME` stores one",
                    file.display()
                )?;
            }
            for name in names {
                crate::output::out!("{name}")?;
            }
        }
        SecretCommand::Rm { name } => {
            secrets::remove_secret(&file, name)?;
            crate::output::out!("removed secret `{name}` from {}", file.display())?;
        }
    }
    Ok(())
}

/// The value from standard input, one trailing newline (`\n` or `\r\n`) removed.
fn read_value(name: &str) -> anyhow::Result<String> {
    let stdin = std::io::stdin();
    let terminal = stdin.is_terminal();
    let mut bytes = Vec::new();
    if terminal {
        bytes = hidden_line(&format!(
            "value of secret `{name}` (not shown; Enter ends it): "
        ))
        .context("cannot read the value")?
        .into_bytes();
    } else {
        stdin
            .lock()
            .take(MAX_VALUE + 1)
            .read_to_end(&mut bytes)
            .context("cannot read the value from standard input")?;
        anyhow::ensure!(
            bytes.len() as u64 <= MAX_VALUE,
            "the value is longer than {} KiB: a secret is a token or key, not a file",
            MAX_VALUE / 1024
        );
    }
    let mut value = String::from_utf8(bytes).context("the value is not UTF-8 text")?;
    if value.ends_with('\n') {
        value.pop();
        if value.ends_with('\r') {
            value.pop();
        }
    }
    anyhow::ensure!(!value.is_empty(), "the value is empty: nothing was stored");
    anyhow::ensure!(
        !value.contains('\0'),
        "the value holds a NUL byte, which no environment variable or header can carry"
    );
    Ok(value)
}

/// A line typed at the terminal after `prompt`, not echoed: on Unix through [`echo::EchoOff`],
/// which also restores the terminal when Ctrl-C, SIGTERM or SIGHUP ends us mid-line
/// (`rpassword` raises SIGINT before restoring it); on Windows through `rpassword`, which
/// turns the console's echo off and back on.
#[cfg(unix)]
fn hidden_line(prompt: &str) -> std::io::Result<String> {
    // Echo goes off before the prompt: whatever is typed once the prompt shows is hidden.
    let _echo = echo::EchoOff::new();
    eprint!("{prompt}");
    let _ = std::io::Write::flush(&mut std::io::stderr());
    let mut line = String::new();
    std::io::stdin().read_line(&mut line)?;
    eprintln!();
    Ok(line)
}

#[cfg(not(unix))]
fn hidden_line(prompt: &str) -> std::io::Result<String> {
    rpassword::prompt_password(prompt)
}

#[cfg(unix)]
mod echo {
    //! Terminal echo off and on again, through termios.

    /// Terminal echo off while it lives (restored on drop, also on an error or a panic, and by
    /// Ctrl-C or SIGTERM, which would otherwise leave the person's terminal without echo).
    pub(super) struct EchoOff {
        saved: Option<libc::termios>,
    }

    /// The settings to restore from a signal handler (set once, before echo goes off).
    static SAVED: std::sync::OnceLock<libc::termios> = std::sync::OnceLock::new();

    /// Restores the terminal, then dies of the signal as it would have.
    extern "C" fn restore_and_die(signal: libc::c_int) {
        // SAFETY: tcsetattr, signal and raise are async-signal-safe; SAVED is only read, and was
        // written before this handler was installed.
        unsafe {
            if let Some(saved) = SAVED.get() {
                libc::tcsetattr(0, libc::TCSANOW, saved);
            }
            libc::signal(signal, libc::SIG_DFL);
            libc::raise(signal);
        }
    }

    impl EchoOff {
        pub(super) fn new() -> Self {
            // SAFETY: termios is plain data; tcgetattr fills it or fails, and only a filled one is
            // used. fd 0 is our standard input, a terminal (checked by the caller). The handler
            // only runs async-signal-safe calls.
            unsafe {
                let mut term: libc::termios = std::mem::zeroed();
                if libc::tcgetattr(0, &mut term) != 0 {
                    return EchoOff { saved: None };
                }
                let saved = term;
                let _ = SAVED.set(saved);
                let handler = restore_and_die as extern "C" fn(libc::c_int) as libc::sighandler_t;
                libc::signal(libc::SIGINT, handler);
                libc::signal(libc::SIGTERM, handler);
                libc::signal(libc::SIGHUP, handler);
                term.c_lflag &= !libc::ECHO;
                if libc::tcsetattr(0, libc::TCSANOW, &term) != 0 {
                    return EchoOff { saved: None };
                }
                EchoOff { saved: Some(saved) }
            }
        }
    }

    impl Drop for EchoOff {
        fn drop(&mut self) {
            if let Some(saved) = &self.saved {
                // SAFETY: restores the settings tcgetattr returned for the same descriptor.
                unsafe {
                    libc::tcsetattr(0, libc::TCSANOW, saved);
                }
            }
        }
    }
}
