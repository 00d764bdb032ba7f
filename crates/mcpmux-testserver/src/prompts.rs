//! With `--prompts`: one prompt (`greet`, whose `name` argument completes from a fixed list),
//! one resource template (`test://item/{id}`, whose `id` completes likewise, each item
//! readable), and the completions of both. What a client of prompts, templates and
//! `completion/complete` needs to see served; knows nothing of transports.

use rmcp::model::{
    CompleteRequestParams, CompleteResult, CompletionInfo, ErrorData, GetPromptRequestParams,
    GetPromptResult, Prompt, PromptArgument, PromptMessage, Reference, ResourceContents,
    ResourceTemplate, Role,
};

/// The prompt.
pub const PROMPT: &str = "greet";
/// The resource template.
pub const TEMPLATE: &str = "test://item/{id}";
/// What `greet`'s `name` completes from.
const NAMES: &[&str] = &["Ada", "Alan", "Grace", "Guido"];
/// What the template's `id` completes from.
const IDS: &[&str] = &["1", "2", "3", "42"];

/// The prompts listed.
pub fn prompts() -> Vec<Prompt> {
    vec![Prompt::new(
        PROMPT,
        Some("Greet someone by name."),
        Some(vec![
            PromptArgument::new("name")
                .with_description("Who to greet")
                .with_required(true),
        ]),
    )]
}

/// `prompts/get`.
pub fn get(request: &GetPromptRequestParams) -> Result<GetPromptResult, ErrorData> {
    if request.name != PROMPT {
        return Err(ErrorData::invalid_params(
            format!("no prompt `{}`", request.name),
            None,
        ));
    }
    let name = request
        .arguments
        .as_ref()
        .and_then(|a| a.get("name"))
        .and_then(|n| n.as_str())
        .ok_or_else(|| ErrorData::invalid_params("`name` is required", None))?;
    Ok(GetPromptResult::new(vec![PromptMessage::new_text(
        Role::User,
        format!("Say hello to {name}."),
    )]))
}

/// The resource templates listed.
pub fn templates() -> Vec<ResourceTemplate> {
    vec![ResourceTemplate::new(TEMPLATE, "item").with_description("One numbered item.")]
}

/// The item at `uri`, if it is one.
pub fn read_item(uri: &str) -> Option<ResourceContents> {
    let id = uri.strip_prefix("test://item/")?;
    (!id.is_empty() && !id.contains('/')).then(|| ResourceContents::text(format!("item {id}"), uri))
}

/// `completion/complete` of `greet`'s `name` or the template's `id`: the values starting
/// with what was typed.
pub fn complete(request: &CompleteRequestParams) -> Result<CompleteResult, ErrorData> {
    let choices = match (&request.r#ref, request.argument.name.as_str()) {
        (Reference::Prompt(prompt), "name") if prompt.name == PROMPT => NAMES,
        (Reference::Resource(template), "id") if template.uri == TEMPLATE => IDS,
        _ => {
            return Err(ErrorData::invalid_params(
                format!("nothing to complete for `{}`", request.argument.name),
                None,
            ));
        }
    };
    let typed = request.argument.value.as_str();
    let values: Vec<String> = choices
        .iter()
        .filter(|c| c.starts_with(typed))
        .map(|c| c.to_string())
        .collect();
    let info = CompletionInfo::new(values).map_err(|e| ErrorData::internal_error(e, None))?;
    Ok(CompleteResult::new(info))
}
