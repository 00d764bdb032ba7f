//! `mcpmux auth`: log in to remote servers with OAuth, log out, and show what is stored.
//!
//! The flow, the token file and its permission checks are the library's (`mcpmux::auth`); this
//! module only picks the server from the loaded config, chooses the authorizer and prints.
//! It starts no server: logging in to one must not spawn every stdio server in the config.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::Subcommand;
use mcpmux::auth::{Authorizer, HeadlessAuthorizer, LoopbackAuthorizer, TokenStore};
use mcpmux::{ConfigSet, ServerSpec, TransportSpec};
use serde::Serialize;

use crate::output;

#[derive(Subcommand)]
pub enum AuthCommand {
    /// Authorize mcpmux at a remote server (OAuth) and store its tokens for every later run.
    ///
    /// Prints the authorization URL and opens a browser when there is a display; the
    /// authorization server sends the browser back to a listener on 127.0.0.1.
    Login {
        /// The server's name in the config (see `mcpmux auth status`).
        server: String,
        /// Only print the URL; never launch a browser.
        #[arg(long)]
        no_browser: bool,
        /// How long to wait for the authorization to be completed, in seconds (default 300).
        #[arg(long, value_name = "SECS")]
        timeout: Option<f64>,
        /// For authorization servers that approve without a person (CI): request the
        /// authorization URL directly and take the code from its redirect, with no browser and
        /// no listener. Also `MCPMUX_AUTH_HEADLESS=1`.
        #[arg(
            long,
            hide = true,
            env = "MCPMUX_AUTH_HEADLESS",
            value_parser = clap::builder::BoolishValueParser::new()
        )]
        headless: bool,
    },
    /// Forget the stored tokens of a server.
    Logout {
        /// The server's name (as configured, or as stored).
        server: String,
    },
    /// Show, for each remote server, whether tokens are stored and when they were received.
    Status {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
}

/// Runs an `mcpmux auth` subcommand against `config`.
pub async fn run(config: &ConfigSet, command: &AuthCommand) -> anyhow::Result<()> {
    let store = TokenStore::user_default();
    match command {
        AuthCommand::Login {
            server,
            no_browser,
            timeout,
            headless,
        } => {
            let timeout = timeout
                .map(|secs| {
                    Duration::try_from_secs_f64(secs)
                        .ok()
                        .filter(|t| !t.is_zero())
                        .context("--timeout must be a positive number of seconds")
                })
                .transpose()?;
            login(config, &store, server, *no_browser, timeout, *headless).await
        }
        AuthCommand::Logout { server } => logout(config, &store, server),
        AuthCommand::Status { json } => status(config, &store, *json),
    }
}

async fn login(
    config: &ConfigSet,
    store: &TokenStore,
    name: &str,
    no_browser: bool,
    timeout: Option<Duration>,
    headless: bool,
) -> anyhow::Result<()> {
    let spec = remote_server(config, name)?;
    let path = token_file(store)?;
    // Refuse an exposed or unreadable token file before anyone is sent to a browser.
    store.servers()?;
    if let TransportSpec::Http { headers, .. } = &spec.transport
        && headers
            .keys()
            .any(|header| header.eq_ignore_ascii_case("authorization"))
    {
        output::say!(
            "mcpmux: note: `{name}` sends an Authorization header from its config, which is used instead of OAuth tokens; remove it from `headers` for the login to take effect"
        );
    }
    let authorizer: Arc<dyn Authorizer> = if headless {
        Arc::new(HeadlessAuthorizer::new().map_err(|e| anyhow::anyhow!("{e}"))?)
    } else {
        let mut loopback = LoopbackAuthorizer::new();
        if no_browser {
            loopback = loopback.without_browser();
        }
        if let Some(timeout) = timeout {
            loopback = loopback.with_timeout(timeout);
        }
        Arc::new(loopback)
    };
    let flow = mcpmux::auth::login(spec, store, authorizer);
    match (headless, timeout) {
        // The loopback authorizer keeps its own deadline for the person; a headless flow has
        // no person, so the deadline covers all of it.
        (true, Some(timeout)) => tokio::time::timeout(timeout, flow)
            .await
            .map_err(|_| {
                anyhow::anyhow!(
                    "server `{name}`: the authorization did not finish within {} s; run the command again",
                    timeout.as_secs_f64()
                )
            })??,
        _ => flow.await?,
    }
    output::print_text(&format!(
        "logged in to {name} (tokens in {})",
        path.display()
    ))
}

fn logout(config: &ConfigSet, store: &TokenStore, name: &str) -> anyhow::Result<()> {
    let path = token_file(store)?;
    let configured = config.servers.iter().any(|spec| spec.name == name);
    if store.remove(name)? {
        return output::print_text(&format!(
            "logged out of {name}: its tokens were removed from {}",
            path.display()
        ));
    }
    if !configured {
        anyhow::bail!(
            "no server named `{name}` in the config and no tokens stored for it in {}; {}",
            path.display(),
            known_remote(config)
        );
    }
    output::print_text(&format!(
        "{name} was not logged in: no tokens stored for it in {}",
        path.display()
    ))
}

/// One row of `mcpmux auth status`.
#[derive(Serialize)]
struct LoginStatus {
    name: String,
    /// The configured URL; `None` for tokens of a server no longer configured.
    url: Option<String>,
    logged_in: bool,
    /// When the stored token was received (Unix seconds).
    received_at: Option<u64>,
    /// The config sends an `Authorization` header, so OAuth is not used for this server.
    static_authorization: bool,
}

#[derive(Serialize)]
struct StatusReport {
    token_file: Option<String>,
    servers: Vec<LoginStatus>,
}

fn status(config: &ConfigSet, store: &TokenStore, json: bool) -> anyhow::Result<()> {
    let stored = store.servers()?;
    let mut rows: Vec<LoginStatus> = config
        .servers
        .iter()
        .filter_map(|spec| match &spec.transport {
            TransportSpec::Http { url, headers } => {
                let received = stored.iter().find(|(name, _)| name == &spec.name);
                Some(LoginStatus {
                    name: spec.name.clone(),
                    // Printed: no query or userinfo (`mcpmux::redact`).
                    url: Some(mcpmux::cli_support::redact::redact_url(url)),
                    logged_in: received.is_some(),
                    received_at: received.and_then(|(_, at)| *at),
                    static_authorization: headers
                        .keys()
                        .any(|header| header.eq_ignore_ascii_case("authorization")),
                })
            }
            _ => None,
        })
        .collect();
    // Tokens of servers no longer configured: shown so they can be logged out of.
    for (name, received_at) in &stored {
        if !rows.iter().any(|row| &row.name == name) {
            rows.push(LoginStatus {
                name: name.clone(),
                url: None,
                logged_in: true,
                received_at: *received_at,
                static_authorization: false,
            });
        }
    }
    let report = StatusReport {
        token_file: store.path().map(|path| path.display().to_string()),
        servers: rows,
    };
    if json {
        return output::print_json(&report);
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.as_secs());
    let mut table = vec![vec![
        "SERVER".to_string(),
        "URL".into(),
        "LOGGED IN".into(),
        "RECEIVED".into(),
    ]];
    for row in &report.servers {
        let logged_in = match (row.logged_in, row.static_authorization, &row.url) {
            (true, _, None) => "yes (not configured)",
            (true, true, _) => "yes (unused: Authorization header)",
            (true, false, _) => "yes",
            (false, true, _) => "no (Authorization header)",
            (false, false, _) => "no",
        };
        table.push(vec![
            row.name.clone(),
            row.url.clone().unwrap_or_else(|| "-".into()),
            logged_in.into(),
            row.received_at
                .map(|at| received(at, now))
                .unwrap_or_else(|| "-".into()),
        ]);
    }
    let mut text = String::new();
    if report.servers.is_empty() {
        text.push_str("no remote (http) servers configured and no tokens stored\n");
    } else {
        text.push_str(&output::table(&table));
    }
    text.push_str(&format!(
        "\ntoken file: {}\n",
        report
            .token_file
            .as_deref()
            .unwrap_or("(none: memory only)")
    ));
    if report.servers.iter().any(|row| !row.logged_in) {
        text.push_str("log in with `mcpmux auth login NAME`\n");
    }
    output::print_text(text.trim_end())
}

/// `2025-06-01 12:00 UTC (3 min ago)`, for Unix seconds `at` seen at `now`.
fn received(at: u64, now: u64) -> String {
    let ago = now.saturating_sub(at);
    let ago = match ago {
        ..60 => "just now".to_string(),
        60..3600 => format!("{} min ago", ago / 60),
        3600..86400 => format!("{} h ago", ago / 3600),
        _ => format!("{} days ago", ago / 86400),
    };
    format!("{} ({ago})", utc(at))
}

/// Unix seconds as `YYYY-MM-DD HH:MM UTC` (the proleptic Gregorian calendar; Howard Hinnant's
/// `civil_from_days`, which needs no time-zone data).
fn utc(secs: u64) -> String {
    let days = secs / 86_400;
    let (hour, minute) = ((secs % 86_400) / 3600, (secs % 3600) / 60);
    let z = days + 719_468;
    let era = z / 146_097;
    let day_of_era = z % 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let mp = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = year_of_era + era * 400 + u64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02} {hour:02}:{minute:02} UTC")
}

/// The configured streamable HTTP server `name`, or an error saying which ones there are.
fn remote_server<'a>(config: &'a ConfigSet, name: &str) -> anyhow::Result<&'a ServerSpec> {
    let Some(spec) = config.servers.iter().find(|spec| spec.name == name) else {
        if let Some(problem) = config
            .problems
            .iter()
            .find(|problem| problem.server.as_deref() == Some(name))
        {
            anyhow::bail!(
                "server `{name}` could not be loaded from the config: {}",
                problem.error
            );
        }
        anyhow::bail!(
            "no server named `{name}` in the config; {}",
            known_remote(config)
        );
    };
    match &spec.transport {
        TransportSpec::Http { .. } => Ok(spec),
        TransportSpec::Stdio { .. } => anyhow::bail!(
            "server `{name}` is a stdio server, which needs no login (give it credentials in its `env`); {}",
            known_remote(config)
        ),
        other => anyhow::bail!(
            "server `{name}` is a {} server: OAuth login applies to remote servers over streamable HTTP (give a token in its `headers` instead); {}",
            other.kind(),
            known_remote(config)
        ),
    }
}

/// "remote (http) servers: a, b" or "no remote (http) servers are configured".
fn known_remote(config: &ConfigSet) -> String {
    let names: Vec<&str> = config
        .servers
        .iter()
        .filter(|spec| matches!(spec.transport, TransportSpec::Http { .. }))
        .map(|spec| spec.name.as_str())
        .collect();
    if names.is_empty() {
        "no remote (http) servers are configured (.mcp.json, ~/.claude.json, mcpmux.toml, --config)"
            .into()
    } else {
        format!("remote (http) servers: {}", names.join(", "))
    }
}

/// The token file, or an error when there is nowhere to keep one.
fn token_file(store: &TokenStore) -> anyhow::Result<std::path::PathBuf> {
    store.path().map(ToOwned::to_owned).context(
        "there is no place for the token file: set HOME, XDG_CONFIG_HOME or MCPMUX_TOKEN_FILE",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn received_times_read_as_dates_and_ages() {
        assert_eq!(
            received(1_700_000_000, 1_700_000_000 + 300),
            "2023-11-14 22:13 UTC (5 min ago)"
        );
        assert_eq!(
            received(1_700_000_000, 1_700_000_010),
            "2023-11-14 22:13 UTC (just now)"
        );
        assert_eq!(utc(0), "1970-01-01 00:00 UTC");
        assert_eq!(utc(951_782_400), "2000-02-29 00:00 UTC");
        assert_eq!(utc(4_107_542_399), "2100-02-28 23:59 UTC");
    }
}
