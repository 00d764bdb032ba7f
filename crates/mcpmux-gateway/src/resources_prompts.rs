//! Resources, resource templates, prompts and completions, served from the hub's listings over
//! every server, in pages: URIs are kept as the servers give them (a read goes to the server
//! that lists the URI), prompts are served under the names the hub gives them beside the tools
//! (`Prompt::exposed_name`; the server's own in pass-through mode), and a `prompts/get` is
//! routed by the hub (`Hub::prompt_named`), as is a `completion/complete` of a prompt's
//! argument (one of a template's goes to the server that lists the template). What a session
//! may see and use is its `View`'s to say: every list, read, get and completion asks it.
//! Knows nothing of sessions or transports.

use rmcp::model::{
    CompleteRequestParams, CompleteResult, ErrorData, GetPromptResult, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ReadResourceResult, Reference,
};
use serde_json::{Map, Value, json};

use mcpmux::rmcp_model;

use crate::failures::failure;
use crate::paging::Pager;
use crate::passthrough::Naming;
use crate::view::View;

/// The pager and the cursor of one list request.
pub type PageOf<'a> = (&'a Pager, Option<&'a str>);

/// The hub's resources, templates, prompts and completions as one server serves them.
pub struct ResourcesAndPrompts {
    /// Prompts under the hub's names, or the server's own in pass-through mode.
    naming: Naming,
}

impl ResourcesAndPrompts {
    /// Serves the resources and prompts a view shows, prompts named by `naming`.
    pub fn new(naming: Naming) -> Self {
        Self { naming }
    }

    /// `resources/list`: every server's resources (a server that cannot list is logged and
    /// left out).
    pub async fn resources(
        &self,
        (hub, view): (&mcpmux::Hub, &View),
        (pager, cursor): PageOf<'_>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let listing = hub.resources(None).await.map_err(|e| failure(&e))?;
        log_errors("resources/list", &listing.errors);
        let shown: Vec<_> = listing
            .items
            .into_iter()
            .filter(|r| view.server_shown(&r.server))
            .collect();
        let (page, next) = pager.page("resources/list", shown, cursor)?;
        let items = page.into_iter().map(rmcp_model::resource).collect();
        let mut result = ListResourcesResult::with_all_items(items);
        result.next_cursor = next;
        Ok(result)
    }

    /// `resources/templates/list`: every server's templates.
    pub async fn templates(
        &self,
        (hub, view): (&mcpmux::Hub, &View),
        (pager, cursor): PageOf<'_>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let shown = self.shown_templates(hub, view).await?;
        let (page, next) = pager.page("resources/templates/list", shown, cursor)?;
        let items = page
            .into_iter()
            .map(rmcp_model::resource_template)
            .collect();
        let mut result = ListResourceTemplatesResult::with_all_items(items);
        result.next_cursor = next;
        Ok(result)
    }

    async fn shown_templates(
        &self,
        hub: &mcpmux::Hub,
        view: &View,
    ) -> Result<Vec<mcpmux::ResourceTemplate>, ErrorData> {
        let listing = hub
            .resource_templates(None)
            .await
            .map_err(|e| failure(&e))?;
        log_errors("resources/templates/list", &listing.errors);
        Ok(listing
            .items
            .into_iter()
            .filter(|t| view.server_shown(&t.server))
            .collect())
    }

    /// `resources/read`: from the server that lists `uri` (or the only one with resources),
    /// if the view shows it.
    pub async fn read(
        &self,
        (hub, view): (&mcpmux::Hub, &View),
        uri: &str,
        options: mcpmux::CallOptions,
    ) -> Result<ReadResourceResult, ErrorData> {
        let server = view.resource_server(hub, uri).await?;
        let contents = hub
            .read_resource_with(Some(&server), uri, options)
            .await
            .map_err(|e| naming_uri(failure(&e), uri))?;
        let contents = contents
            .into_iter()
            .map(rmcp_model::resource_contents)
            .collect();
        Ok(ReadResourceResult::new(contents))
    }

    /// `prompts/list`: every server's prompts in view, under the names they are served by.
    pub async fn prompts(
        &self,
        (hub, view): (&mcpmux::Hub, &View),
        (pager, cursor): PageOf<'_>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let listing = hub.prompts(None).await.map_err(|e| failure(&e))?;
        log_errors("prompts/list", &listing.errors);
        let shown: Vec<mcpmux::Prompt> = listing
            .items
            .into_iter()
            .filter(|p| view.server_shown(&p.server))
            .collect();
        let (page, next) = pager.page("prompts/list", shown, cursor)?;
        let items = page
            .into_iter()
            .map(|prompt| {
                let name = self.naming.prompt_name(&prompt).to_owned();
                rmcp_model::prompt(prompt, name)
            })
            .collect();
        let mut result = ListPromptsResult::with_all_items(items);
        result.next_cursor = next;
        Ok(result)
    }

    /// The prompt served as `name` (the hub routes it), if the view shows its server.
    async fn prompt_route(
        &self,
        (hub, view): (&mcpmux::Hub, &View),
        name: &str,
    ) -> Result<mcpmux::Prompt, ErrorData> {
        let prompt = self
            .naming
            .hub_prompt(hub, name)
            .await
            .map_err(|e| failure(&e))?
            .ok_or_else(|| {
                ErrorData::invalid_params(
                    format!("no prompt named `{name}` (prompts/list names the prompts served)"),
                    None,
                )
            })?;
        view.prompt_server(&prompt.server, name)?;
        Ok(prompt)
    }

    /// `completion/complete`: a prompt's argument by the server of the prompt listed under
    /// that name, a resource template's by the server that lists the template.
    pub async fn complete(
        &self,
        (hub, view): (&mcpmux::Hub, &View),
        request: CompleteRequestParams,
    ) -> Result<CompleteResult, ErrorData> {
        let (server, reference) = match &request.r#ref {
            Reference::Prompt(prompt) => {
                let prompt = self.prompt_route((hub, view), &prompt.name).await?;
                let name = prompt.name;
                (prompt.server, mcpmux::CompletionRef::Prompt { name })
            }
            Reference::Resource(template) => {
                let owner = self
                    .shown_templates(hub, view)
                    .await?
                    .into_iter()
                    .find(|t| t.uri_template == template.uri)
                    .ok_or_else(|| {
                        ErrorData::invalid_params(
                            format!(
                                "no resource template `{}` (resources/templates/list names them)",
                                template.uri
                            ),
                            None,
                        )
                    })?;
                let uri = template.uri.clone();
                (owner.server, mcpmux::CompletionRef::Resource { uri })
            }
            #[allow(unreachable_patterns)]
            _ => {
                return Err(ErrorData::invalid_params(
                    "completion/complete of something other than a prompt or a resource template",
                    None,
                ));
            }
        };
        let context = request
            .context
            .and_then(|c| c.arguments)
            .unwrap_or_default();
        let completion = hub
            .complete(
                &server,
                &reference,
                &request.argument.name,
                &request.argument.value,
                context,
            )
            .await
            .map_err(|e| failure(&e))?;
        // MCP allows 100 values; a server that sends more is cut, and says there are more.
        let more = completion.values.len() > MAX_COMPLETION_VALUES;
        let values: Vec<String> = completion
            .values
            .into_iter()
            .take(MAX_COMPLETION_VALUES)
            .collect();
        let mut info = json!({ "values": values });
        if let Some(total) = completion.total {
            info["total"] = json!(total);
        }
        if more || completion.has_more.is_some() {
            info["hasMore"] = json!(more || completion.has_more == Some(true));
        }
        let info = serde_json::from_value(info).map_err(|e| invalid_answer(&server, &e))?;
        Ok(CompleteResult::new(info))
    }

    /// `prompts/get`: the prompt listed as `name`, filled in by its server.
    pub async fn get_prompt(
        &self,
        (hub, view): (&mcpmux::Hub, &View),
        name: &str,
        arguments: Map<String, Value>,
        options: mcpmux::CallOptions,
    ) -> Result<GetPromptResult, ErrorData> {
        let mcpmux::Prompt {
            server, name: own, ..
        } = self.prompt_route((hub, view), name).await?;
        let filled = hub
            .get_prompt_with(&server, &own, arguments, options)
            .await
            .map_err(|e| failure(&e))?;
        rmcp_model::prompt_result(filled).map_err(|e| invalid_answer(&server, &e))
    }
}

/// A failed read's error with the URI in its data (`{"uri": …}`, as SEP-2164 asks of a
/// resource that does not exist), beside what the upstream server said.
fn naming_uri(mut error: ErrorData, uri: &str) -> ErrorData {
    let mut data = Map::new();
    data.insert("uri".into(), Value::String(uri.to_owned()));
    if let Some(said) = error.data.take() {
        data.insert("upstream".into(), said);
    }
    error.data = Some(Value::Object(data));
    error
}

fn invalid_answer(server: &str, error: &serde_json::Error) -> ErrorData {
    ErrorData::internal_error(
        format!("server `{server}` answered with something that is not MCP: {error}"),
        None,
    )
}

/// Most values one completion carries (MCP's limit).
const MAX_COMPLETION_VALUES: usize = 100;

fn log_errors(what: &str, errors: &[mcpmux::Error]) {
    for error in errors {
        tracing::warn!(%error, "{what}: a server could not answer; its items are left out");
    }
}
