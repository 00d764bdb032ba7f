//! The conformance suite's resources, resource template, prompts and completions, as its
//! reference server serves them: `test://static-text`, `test://static-binary`,
//! `test://watched-resource`, the template `test://template/{id}/data`, and the prompts
//! `test_simple_prompt`, `test_prompt_with_arguments`, `test_prompt_with_embedded_resource`,
//! `test_prompt_with_image`. Knows nothing of tools or sessions.

use rmcp::{
    ErrorData,
    model::{
        CacheScope, CompleteRequestParams, CompleteResult, CompletionInfo, GetPromptRequestParams,
        GetPromptResponse, GetPromptResult, Prompt, PromptMessage, ReadResourceResult, Resource,
        ResourceContents, ResourceTemplate,
    },
};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::tools::PNG_BASE64;

/// The template's URIs: `test://template/{id}/data`.
const TEMPLATE_PREFIX: &str = "test://template/";
const TEMPLATE_SUFFIX: &str = "/data";

/// The longest `id` a template URI may carry, and the longest argument a prompt echoes.
const MAX_PART_BYTES: usize = 1024;

/// Values offered for completing any prompt argument, filtered by what was typed.
const COMPLETIONS: [&str; 4] = ["paris", "park", "parrot", "python"];

/// Items of a literal JSON list (they parse; a slip is logged, never a panic).
fn literal<T: DeserializeOwned>(what: &str, value: Value) -> Vec<T> {
    serde_json::from_value(value).unwrap_or_else(|error| {
        tracing::error!(%error, "the conformance {what} do not parse");
        Vec::new()
    })
}

/// `resources/list`.
pub fn resources() -> Vec<Resource> {
    literal(
        "resources",
        json!([
            {"uri": "test://static-text", "name": "static-text", "title": "Static Text Resource",
             "description": "A static text resource for testing", "mimeType": "text/plain"},
            {"uri": "test://static-binary", "name": "static-binary", "title": "Static Binary Resource",
             "description": "A static binary resource (image) for testing", "mimeType": "image/png"},
            {"uri": "test://watched-resource", "name": "watched-resource", "title": "Watched Resource",
             "description": "A resource that can be subscribed to", "mimeType": "text/plain"}
        ]),
    )
}

/// `resources/templates/list`.
pub fn templates() -> Vec<ResourceTemplate> {
    literal(
        "templates",
        json!([{
            "uriTemplate": "test://template/{id}/data",
            "name": "template",
            "title": "Resource Template",
            "description": "A resource template with parameter substitution",
            "mimeType": "application/json"
        }]),
    )
}

/// `resources/read`: a listed resource or a URI of the template; anything else is invalid
/// params (-32602, what SEP-2164 asks for a resource that does not exist).
pub fn read(uri: &str) -> Result<ReadResourceResult, ErrorData> {
    let contents = match uri {
        "test://static-text" => {
            ResourceContents::text("This is the content of the static text resource.", uri)
                .with_mime_type("text/plain")
        }
        "test://static-binary" => {
            ResourceContents::blob(PNG_BASE64, uri).with_mime_type("image/png")
        }
        "test://watched-resource" => {
            ResourceContents::text("Watched resource content", uri).with_mime_type("text/plain")
        }
        _ => match template_id(uri) {
            Some(id) => ResourceContents::text(
                json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")})
                    .to_string(),
                uri,
            )
            .with_mime_type("application/json"),
            None => {
                return Err(ErrorData::invalid_params(
                    format!("Resource not found: {uri}"),
                    Some(json!({"uri": uri})),
                ));
            }
        },
    };
    let mut result = ReadResourceResult::new(vec![contents]);
    result.ttl_ms = Some(super::CACHE_TTL_MS);
    result.cache_scope = Some(CacheScope::Public);
    Ok(result)
}

/// The `{id}` of a template URI: one non-empty path segment, bounded.
fn template_id(uri: &str) -> Option<&str> {
    let id = uri
        .strip_prefix(TEMPLATE_PREFIX)?
        .strip_suffix(TEMPLATE_SUFFIX)?;
    (!id.is_empty() && id.len() <= MAX_PART_BYTES && !id.contains('/')).then_some(id)
}

/// `prompts/list`.
pub fn prompts() -> Vec<Prompt> {
    let mut prompts: Vec<Prompt> = literal(
        "prompts",
        json!([
            {"name": "test_simple_prompt", "title": "Simple Test Prompt",
             "description": "A simple prompt without arguments"},
            {"name": "test_prompt_with_arguments", "title": "Prompt With Arguments",
             "description": "A prompt with required arguments", "arguments": [
                {"name": "arg1", "description": "First test argument", "required": true},
                {"name": "arg2", "description": "Second test argument", "required": true}
            ]},
            {"name": "test_prompt_with_embedded_resource", "title": "Prompt With Embedded Resource",
             "description": "A prompt that includes an embedded resource", "arguments": [
                {"name": "resourceUri", "description": "URI of the resource to embed", "required": true}
            ]},
            {"name": "test_prompt_with_image", "title": "Prompt With Image",
             "description": "A prompt that includes image content"},
            {"name": super::input::PROMPT, "title": "Prompt Asking For Input",
             "description": "SEP-2322: asks for a context through an InputRequiredResult"}
        ]),
    );
    if super::changes::dynamic(super::changes::List::Prompts) {
        prompts.extend(literal(
            "prompts",
            json!([{"name": "test_dynamic_prompt",
                    "description": "Listed after test_trigger_prompt_change added it"}]),
        ));
    }
    prompts
}

/// `prompts/get`.
pub fn get_prompt(request: &GetPromptRequestParams) -> Result<GetPromptResponse, ErrorData> {
    let argument = |name: &str| -> Result<String, ErrorData> {
        let value = request
            .arguments
            .as_ref()
            .and_then(|arguments| arguments.get(name))
            .and_then(Value::as_str)
            .ok_or_else(|| {
                ErrorData::invalid_params(format!("argument `{name}` is required"), None)
            })?;
        if value.len() > MAX_PART_BYTES {
            return Err(ErrorData::invalid_params(
                format!("argument `{name}` is longer than {MAX_PART_BYTES} bytes"),
                None,
            ));
        }
        Ok(value.to_owned())
    };
    let messages = match request.name.as_str() {
        "test_simple_prompt" => json!([
            {"role": "user", "content": {"type": "text", "text": "This is a simple prompt for testing."}}
        ]),
        "test_prompt_with_arguments" => {
            let (arg1, arg2) = (argument("arg1")?, argument("arg2")?);
            json!([{"role": "user", "content": {"type": "text",
                "text": format!("Prompt with arguments: arg1='{arg1}', arg2='{arg2}'")}}])
        }
        "test_prompt_with_embedded_resource" => {
            let uri = argument("resourceUri")?;
            json!([
                {"role": "user", "content": {"type": "resource", "resource": {
                    "uri": uri, "mimeType": "text/plain", "text": "Embedded resource content for testing."
                }}},
                {"role": "user", "content": {"type": "text", "text": "Please process the embedded resource above."}}
            ])
        }
        "test_dynamic_prompt" if super::changes::dynamic(super::changes::List::Prompts) => json!([
            {"role": "user", "content": {"type": "text", "text": "A prompt that comes and goes."}}
        ]),
        "test_prompt_with_image" => json!([
            {"role": "user", "content": {"type": "image", "data": PNG_BASE64, "mimeType": "image/png"}},
            {"role": "user", "content": {"type": "text", "text": "Please analyze the image above."}}
        ]),
        super::input::PROMPT => return super::input::prompt(request),
        other => {
            return Err(ErrorData::invalid_params(
                format!("no prompt named `{other}`"),
                None,
            ));
        }
    };
    let messages: Vec<PromptMessage> = serde_json::from_value(messages)
        .map_err(|error| ErrorData::internal_error(format!("prompt messages: {error}"), None))?;
    Ok(GetPromptResult::new(messages).into())
}

/// `completion/complete`: for any prompt argument, the fixed values that start with what
/// was typed.
pub fn complete(request: &CompleteRequestParams) -> CompleteResult {
    let typed = request.argument.value.as_str();
    let values: Vec<String> = COMPLETIONS
        .iter()
        .filter(|value| value.starts_with(typed))
        .map(|value| (*value).to_owned())
        .collect();
    // At most four values: always within the protocol's limit of 100.
    let completion = CompletionInfo::with_all_values(values).unwrap_or_default();
    CompleteResult::new(completion)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_literal_parses() {
        assert_eq!(resources().len(), 3);
        assert_eq!(templates().len(), 1);
        assert_eq!(prompts().len(), 5);
    }

    #[test]
    fn template_uris_carry_one_bounded_id() {
        assert_eq!(template_id("test://template/123/data"), Some("123"));
        assert_eq!(template_id("test://template//data"), None);
        assert_eq!(template_id("test://template/a/b/data"), None);
        assert!(read("test://nowhere").is_err());
    }
}
