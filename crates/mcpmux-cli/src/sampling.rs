//! A server's `sampling/createMessage` in `mcpmux run`, answered by the run's own model once
//! the person said yes (the server, a summary of its messages, the tokens it asks for), or at
//! once with `--yes`; refused without a terminal and without `--yes`. The server's words are
//! shown escaped; the model's error is told on stderr, and the server only hears that the model
//! request failed (an endpoint's address is not its business).
//!
//! The request's `maxTokens` is shown, not enforced: the run's provider has one output limit
//! for every turn.

use std::sync::Arc;

use mcpmux::host::{HostError, Sampler, SamplingMessage, SamplingReply, SamplingRequest};
use mcpmux_agent::provider::{ModelRequest, ModelStop, Provider};
use mcpmux_agent::{Block, Message};

use crate::console::{self, Question};
use crate::output;

/// The sampler of `run`: `model` answers, after asking the person unless `yes`.
pub fn sampler(model: Arc<dyn Provider>, yes: bool) -> impl Sampler + 'static {
    move |request: SamplingRequest| {
        let model = model.clone();
        async move { answer(model, yes, request).await }
    }
}

async fn answer(
    model: Arc<dyn Provider>,
    yes: bool,
    request: SamplingRequest,
) -> Result<SamplingReply, HostError> {
    let server = request.server.clone();
    let summary = summary(&request);
    if !yes {
        if !console::available() {
            output::say!(
                "mcpmux: server `{server}` asked the model for a completion ({summary}); refused: \
                 there is no terminal to ask on (run on a terminal, or pass --yes to allow it)"
            );
            return Err(HostError::rejected(
                "sampling was not approved: no one to ask (the user can pass --yes)",
            ));
        }
        if !approved(&server, &summary, model.model()).await {
            return Err(HostError::rejected(
                "the user declined the sampling request",
            ));
        }
    } else {
        output::say!("mcpmux: server `{server}` asks the model for a completion ({summary})");
    }
    let messages: Vec<Message> = request.messages.iter().filter_map(message).collect();
    if messages.is_empty() {
        return Err(HostError::new(-32602, "the request holds no text message"));
    }
    let turn = model
        .complete(
            ModelRequest {
                system: request.system_prompt.as_deref(),
                messages: &messages,
                tools: &[],
            },
            &|_| {},
        )
        .await;
    let turn = match turn {
        Ok(turn) => turn,
        Err(e) => {
            output::say!("mcpmux: the model failed to answer `{server}`: {e}");
            return Err(HostError::failed("the model request failed"));
        }
    };
    let text: String = turn
        .content
        .iter()
        .filter_map(|block| match block {
            Block::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    let mut reply = SamplingReply::text(model.model(), text);
    reply.stop_reason = Some(
        match turn.stop {
            ModelStop::MaxTokens => "maxTokens",
            ModelStop::ToolUse => "toolUse",
            _ => "endTurn",
        }
        .into(),
    );
    Ok(reply)
}

/// Asks at the terminal; only `y`/`yes` approves.
async fn approved(server: &str, summary: &str, model: &str) -> bool {
    let question = Question::open().await;
    let prompt = format!(
        "mcpmux: server `{server}` asks the model ({model}) for a completion ({summary}). \
         Allow? [y/N] "
    );
    let answer = question.line(&prompt, false).await;
    let yes = matches!(
        answer.as_deref().map(str::trim),
        Some("y" | "Y" | "yes" | "Yes")
    );
    if answer.is_none() && question.was_ended() {
        output::say!("mcpmux: sampling for `{server}` refused (Ctrl-C again ends mcpmux)");
    }
    yes
}

/// How many messages, the tokens asked for, and the last user text cut short.
fn summary(request: &SamplingRequest) -> String {
    let count = request.messages.len();
    let last = request
        .last_user_text()
        .map(|text| format!(", last: \"{}\"", cut(&text, 120)))
        .unwrap_or_default();
    format!(
        "{count} message{}, at most {} tokens{last}",
        if count == 1 { "" } else { "s" },
        request.max_tokens
    )
}

/// A sampling message as the provider's: its text blocks (images and audio are left out:
/// the run's conversation carries text only).
fn message(message: &SamplingMessage) -> Option<Message> {
    let text: Vec<&str> = message
        .content
        .iter()
        .filter_map(|block| block.get("text").and_then(|t| t.as_str()))
        .collect();
    if text.is_empty() {
        return None;
    }
    let text = text.join("\n");
    Some(match message.role.as_str() {
        "assistant" => Message::assistant(text),
        _ => Message::user(text),
    })
}

/// `text` on one line, at most `max` characters.
fn cut(text: &str, max: usize) -> String {
    let flat = text.replace(['\n', '\r'], " ");
    let mut out: String = flat.chars().take(max).collect();
    if flat.chars().count() > max {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn messages_keep_their_role_and_text_and_the_summary_counts_them() {
        let user =
            SamplingMessage::new("user", vec![json!({"type": "text", "text": "Say\nhello"})]);
        let image =
            SamplingMessage::new("assistant", vec![json!({"type": "image", "data": "AA=="})]);
        assert_eq!(message(&user), Some(Message::user("Say\nhello")));
        assert_eq!(message(&image), None);
        assert_eq!(cut("Say\nhello", 120), "Say hello");
        assert_eq!(cut("abcdef", 3), "abc…");
    }
}
