//! `mcpmux prompts get NAME --arg KEY=VALUE`: one prompt filled in and printed, from the server
//! that lists it (or `--server`). The listing itself is `mcpmux prompts` (main.rs).

use clap::Subcommand;
use mcpmux::Hub;

use crate::output;

/// What `mcpmux prompts` does besides listing.
#[derive(Subcommand)]
pub enum PromptsCommand {
    /// Fill in a prompt and print its messages: `mcpmux prompts get greet --arg name=Ada`.
    Get {
        /// The prompt's name (see `mcpmux prompts`).
        name: String,
        /// One argument of the prompt (repeatable); prompt arguments are strings.
        #[arg(long = "arg", value_name = "KEY=VALUE", value_parser = crate::arguments::key_value)]
        arguments: Vec<(String, String)>,
        /// The server to ask (default: the one that lists the prompt).
        #[arg(long, short = 's')]
        server: Option<String>,
        /// Print the messages as JSON (description, messages with role and content block).
        #[arg(long)]
        json: bool,
    },
}

/// Runs `prompts get`.
pub async fn run(hub: &Hub, command: &PromptsCommand) -> anyhow::Result<()> {
    let PromptsCommand::Get {
        name,
        arguments,
        server,
        json,
    } = command;
    let server = match server {
        Some(server) => server.clone(),
        None => owner(hub, name).await?,
    };
    let arguments = arguments
        .iter()
        .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
        .collect();
    let prompt = hub.get_prompt(&server, name, arguments).await?;
    if *json {
        return output::print_json(&prompt);
    }
    let mut text = String::new();
    for message in &prompt.messages {
        text.push_str(&format!(
            "[{}]\n{}\n",
            message.role,
            block_text(&message.content)
        ));
    }
    output::print_text(text.trim_end())
}

/// The one server whose listing has a prompt `name`; an error names the choices otherwise.
async fn owner(hub: &Hub, name: &str) -> anyhow::Result<String> {
    let listing = hub.prompts(None).await?;
    let servers: Vec<&str> = listing
        .items
        .iter()
        .filter(|p| p.name == name)
        .map(|p| p.server.as_str())
        .collect();
    match servers.as_slice() {
        [server] => Ok(server.to_string()),
        [] => {
            let mut message =
                format!("no server lists a prompt `{name}`; `mcpmux prompts` lists them");
            for error in &listing.errors {
                message.push_str(&format!("\n  {error}"));
            }
            Err(anyhow::anyhow!(message))
        }
        many => Err(anyhow::anyhow!(
            "the prompt `{name}` is offered by {}: choose one with --server",
            many.join(", ")
        )),
    }
}

/// A content block as text: its text, an embedded resource's text, or what it is.
fn block_text(block: &serde_json::Value) -> String {
    let kind = block
        .get("type")
        .and_then(|t| t.as_str())
        .unwrap_or("unknown");
    let text = match kind {
        "text" => block.get("text"),
        "resource" => block.get("resource").and_then(|r| r.get("text")),
        _ => None,
    };
    match text.and_then(|t| t.as_str()) {
        Some(text) => text.to_string(),
        None => {
            let mime = block.get("mimeType").and_then(|m| m.as_str());
            format!(
                "[{kind}{} content; --json prints it]",
                mime.map(|m| format!(" {m}")).unwrap_or_default()
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_without_text_are_named_not_dumped() {
        assert_eq!(
            block_text(&serde_json::json!({"type": "text", "text": "hi"})),
            "hi"
        );
        assert_eq!(
            block_text(
                &serde_json::json!({"type": "image", "mimeType": "image/png", "data": "AAAA"})
            ),
            "[image image/png content; --json prints it]"
        );
        assert_eq!(
            block_text(
                &serde_json::json!({"type": "resource", "resource": {"uri": "a:b", "text": "body"}})
            ),
            "body"
        );
    }
}
