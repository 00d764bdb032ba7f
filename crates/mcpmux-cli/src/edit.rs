//! `mcpmux add` and `mcpmux remove`: parse the arguments, call
//! `mcpmux::cli_support::edit::{add, remove}` and say which file changed. The checks and the
//! file editing are the library's.

use anyhow::Context;
use clap::Args;
use mcpmux::LoadOptions;
use mcpmux::cli_support::edit::{self, Added, EditScope, NewServer};
use mcpmux::cli_support::trust;
use mcpmux::config;

/// `mcpmux add NAME [options] -- COMMAND ARGS…` or `mcpmux add NAME --url URL`.
#[derive(Args)]
pub struct AddArgs {
    /// The server's name (letters, digits, - and _).
    name: String,
    /// Where to write it: user (your ~/.config/mcpmux/config.toml, the default) or project
    /// (this project's .mcp.json, shared with the repository and read by Claude Code too).
    #[arg(long, short = 's', default_value = "user", value_name = "user|project")]
    scope: EditScope,
    /// An environment variable for a command's process, KEY=value (repeatable). Values are
    /// written as given: `${VAR}` and `${secret:NAME}` stay references.
    #[arg(long, short = 'e', value_name = "KEY=VALUE")]
    env: Vec<String>,
    /// A header for a remote server, "Name: value" (repeatable).
    #[arg(long = "header", short = 'H', value_name = "NAME: VALUE")]
    headers: Vec<String>,
    /// A remote server's URL, instead of a command.
    #[arg(long, conflicts_with = "command")]
    url: Option<String>,
    /// The remote transport: http (the default; legacy SSE is tried when it fails), sse or ws.
    #[arg(long, short = 't', requires = "url", value_name = "http|sse|ws")]
    transport: Option<String>,
    /// Replace a server of that name already in the file.
    #[arg(long, short = 'f')]
    force: bool,
    /// The command and its arguments, after `--`.
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "COMMAND"
    )]
    command: Vec<String>,
}

/// `mcpmux remove NAME [--scope user|project]`.
#[derive(Args)]
pub struct RemoveArgs {
    /// The server's name.
    name: String,
    /// The file to remove it from; without it, whichever of the user config and the project's
    /// .mcp.json holds it.
    #[arg(long, short = 's', value_name = "user|project")]
    scope: Option<EditScope>,
}

/// Writes the server and says where; a project entry the person adds is approved too (they
/// wrote it themselves).
pub fn add(args: &AddArgs, options: &LoadOptions) -> anyhow::Result<()> {
    let server = match &args.url {
        Some(url) => NewServer::remote(
            &args.name,
            url,
            args.transport.as_deref(),
            &args.env,
            &args.headers,
        )?,
        None => NewServer::stdio(&args.name, &args.command, &args.env, &args.headers)?,
    };
    let file = edit::scope_file(args.scope, options)?;
    let added = edit::add(&file, &server, args.force)?;
    let verb = match added {
        Added::Replaced => "replaced",
        _ => "added",
    };
    crate::output::out!("{verb} server `{}` in {}", server.name, file.display())?;
    if args.scope == EditScope::Project {
        approve_own_entry(&server.name, options)?;
    }
    if let Some(other) = defined_in(&server.name, options).filter(|other| *other != file) {
        eprintln!(
            "mcpmux: note: {} also defines `{}` and is read later, so its entry is the one used",
            other.display(),
            server.name
        );
    }
    Ok(())
}

/// The file whose entry for `name` is used after merging (a server, or the problem of an
/// entry that is not usable yet, such as an unapproved project entry), when it is a file.
fn defined_in(name: &str, options: &LoadOptions) -> Option<std::path::PathBuf> {
    let set = config::load(options);
    if let Some(spec) = set.servers.iter().find(|spec| spec.name == name) {
        return match &spec.origin {
            config::Origin::File { path, .. } => Some(path.clone()),
            _ => None,
        };
    }
    set.problems
        .iter()
        .rev()
        .find(|problem| problem.server.as_deref() == Some(name))
        .map(|problem| problem.file.clone())
}

/// The entry just written to `.mcp.json` is the person's own decision: store its approval, so
/// it runs here without `mcpmux trust` (anyone else who clones the project is still asked).
fn approve_own_entry(name: &str, options: &LoadOptions) -> anyhow::Result<()> {
    let set = config::load(options);
    let Some(store) = set.trust_file.as_deref() else {
        crate::output::out!(
            "not approved (no home folder to keep approvals in): it will be listed as untrusted"
        )?;
        return Ok(());
    };
    let file = options.project_dir.join(".mcp.json");
    if let Some(entry) = set
        .project
        .iter()
        .rev()
        .find(|entry| entry.name == name && entry.file == file)
    {
        trust::approve_one(store, &options.project_dir, entry).context(
            "the server was written but its approval was not stored: run `mcpmux trust`",
        )?;
        crate::output::out!("approved it for this project (others who clone it are asked)")?;
    }
    Ok(())
}

/// Removes the server and says from where.
pub fn remove(args: &RemoveArgs, options: &LoadOptions) -> anyhow::Result<()> {
    let file = match edit::remove_in_scope(options, args.scope, &args.name) {
        Ok(file) => file,
        Err(error @ edit::EditError::NotFound { .. }) => {
            // Say where it does come from: another tool's file is edited with that tool.
            return Err(match defined_in(&args.name, options) {
                Some(other) => anyhow::anyhow!(
                    "{error}; `{}` is defined in {}: edit that file (for Claude Code's own files, `claude mcp remove {}`)",
                    args.name,
                    other.display(),
                    args.name
                ),
                None => error.into(),
            });
        }
        Err(error) => return Err(error.into()),
    };
    crate::output::out!("removed server `{}` from {}", args.name, file.display())?;
    Ok(())
}
