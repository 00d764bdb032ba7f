//! `mcpmux resources`, `mcpmux prompts` and `mcpmux read`: what servers offer beside tools,
//! listed as tables or JSON, a prompt filled in (`prompts.rs`), a resource read. Their
//! subcommands are flattened into the top-level ones.

use clap::Subcommand;
use mcpmux::Hub;

use crate::failure::Failure;
use crate::{output, prompts, spinner};

/// The commands about resources, templates and prompts.
#[derive(Subcommand)]
pub enum ResourceCommand {
    /// List the resources of every connected server that offers them.
    Resources {
        /// Only this server's resources.
        #[arg(long, short = 's')]
        server: Option<String>,
        /// List the resource templates (URI patterns) instead.
        #[arg(long)]
        templates: bool,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// List the prompts of every connected server that offers them; `prompts get NAME --arg
    /// KEY=VALUE` fills one in.
    Prompts {
        #[command(subcommand)]
        command: Option<prompts::PromptsCommand>,
        /// Only this server's prompts.
        #[arg(long, short = 's')]
        server: Option<String>,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Read a resource: `mcpmux read file:///notes/todo.md`.
    Read {
        /// The resource's URI (see `mcpmux resources`).
        uri: String,
        /// The server to read it from (default: the one that lists it).
        #[arg(long, short = 's')]
        server: Option<String>,
        /// Print the contents as JSON (text, or base64 `blob` for binary).
        #[arg(long)]
        json: bool,
    },
}

/// Runs `mcpmux resources`, `mcpmux prompts` or `mcpmux read`.
pub async fn run(hub: &Hub, command: &ResourceCommand) -> Result<(), Failure> {
    spinner::startup(hub).await?;
    match command {
        ResourceCommand::Resources {
            server,
            templates: false,
            json,
        } => {
            let listing = hub.resources(server.as_deref()).await?;
            if *json {
                output::print_json(&listing.items)?;
            } else {
                let rows = listing
                    .items
                    .iter()
                    .map(|r| {
                        let about = r.title.as_deref().or(r.description.as_deref());
                        [
                            r.server.as_str(),
                            r.uri.as_str(),
                            r.mime_type.as_deref().unwrap_or("-"),
                            about.unwrap_or(&r.name),
                        ]
                    })
                    .collect::<Vec<_>>();
                output::print_rows(["SERVER", "URI", "TYPE", "NAME"], &rows, "no resources")?;
            }
            warn_listing_errors(hub, &listing.errors);
        }
        ResourceCommand::Resources {
            server, json: true, ..
        } => {
            let listing = hub.resource_templates(server.as_deref()).await?;
            output::print_json(&listing.items)?;
            warn_listing_errors(hub, &listing.errors);
        }
        ResourceCommand::Resources { server, .. } => {
            let listing = hub.resource_templates(server.as_deref()).await?;
            let rows = listing
                .items
                .iter()
                .map(|t| {
                    let about = t.title.as_deref().or(t.description.as_deref());
                    [
                        t.server.as_str(),
                        t.uri_template.as_str(),
                        t.mime_type.as_deref().unwrap_or("-"),
                        about.unwrap_or(&t.name),
                    ]
                })
                .collect::<Vec<_>>();
            output::print_rows(
                ["SERVER", "URI TEMPLATE", "TYPE", "NAME"],
                &rows,
                "no resource templates",
            )?;
            warn_listing_errors(hub, &listing.errors);
        }
        ResourceCommand::Prompts {
            command: Some(get), ..
        } => prompts::run(hub, get).await?,
        ResourceCommand::Prompts { server, json, .. } => {
            let listing = hub.prompts(server.as_deref()).await?;
            if *json {
                output::print_json(&listing.items)?;
            } else {
                let arguments: Vec<String> = listing
                    .items
                    .iter()
                    .map(|p| {
                        p.arguments
                            .iter()
                            .map(|a| {
                                if a.required {
                                    a.name.clone()
                                } else {
                                    format!("[{}]", a.name)
                                }
                            })
                            .collect::<Vec<_>>()
                            .join(" ")
                    })
                    .collect();
                let rows = listing
                    .items
                    .iter()
                    .zip(&arguments)
                    .map(|(p, args)| {
                        let about = p.title.as_deref().or(p.description.as_deref());
                        [
                            p.server.as_str(),
                            p.name.as_str(),
                            args.as_str(),
                            about.unwrap_or(""),
                        ]
                    })
                    .collect::<Vec<_>>();
                output::print_rows(
                    ["SERVER", "PROMPT", "ARGUMENTS", "DESCRIPTION"],
                    &rows,
                    "no prompts",
                )?;
            }
            warn_listing_errors(hub, &listing.errors);
        }
        ResourceCommand::Read { uri, server, json } => {
            let contents = hub.read_resource(server.as_deref(), uri).await?;
            if *json {
                output::print_json(&contents)?;
            } else {
                for part in &contents {
                    match part {
                        mcpmux::ResourceContents::Text { text, .. } => output::print_text(text)?,
                        mcpmux::ResourceContents::Blob {
                            uri,
                            mime_type,
                            blob,
                            ..
                        } => output::print_text(&format!(
                            "[binary {} from {uri}: {} bytes of base64; --json prints it]",
                            mime_type.as_deref().unwrap_or("data"),
                            blob.len()
                        ))?,
                        _ => {}
                    }
                }
            }
        }
    }
    Ok(())
}

/// Says on stderr which servers could not list, and which are not connected.
fn warn_listing_errors(hub: &Hub, errors: &[mcpmux::Error]) {
    for error in errors {
        output::say!("mcpmux: {error}");
    }
    output::warn_unavailable(&hub.servers());
}
