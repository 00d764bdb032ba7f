//! Resources, resource templates and prompts, served from the hub's listings over every
//! server, in pages: URIs are kept as the servers give them (a read goes to the server that
//! lists the URI), prompts are named `mcp__SERVER__PROMPT` as tools are (one naming function,
//! the library's; the server's own in pass-through mode), and a `prompts/get` is routed by the table of the last listing, as is a
//! `completion/complete` of a prompt's argument (one of a template's goes to the server that
//! lists the template). Servers outside the scope are left out. Knows nothing of sessions or
//! transports.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

use rmcp::model::{
    CompleteRequestParams, CompleteResult, ErrorData, GetPromptResult, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ReadResourceResult, Reference,
};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use crate::access::Rule;
use crate::paging::Pager;
use crate::passthrough::Naming;

/// The pager and the cursor of one list request.
pub type PageOf<'a> = (&'a Pager, Option<&'a str>);

/// The servers whose resources, prompts and notices are not served (those outside the
/// scope). Cheap to clone: the catalog, the subscriptions and the notices share one list, and
/// a reload replaces it for all of them.
#[derive(Clone, Default)]
pub struct Hidden(Arc<RwLock<Vec<String>>>);

impl Hidden {
    /// Hides the servers of `hidden`.
    pub fn new(hidden: Vec<String>) -> Self {
        Self(Arc::new(RwLock::new(hidden)))
    }

    /// Whether `server`'s resources, prompts and notices are served.
    pub fn shown(&self, server: &str) -> bool {
        let hidden = match self.0.read() {
            Ok(hidden) => hidden,
            Err(poisoned) => poisoned.into_inner(),
        };
        !hidden.iter().any(|h| h == server)
    }

    /// Hides the servers of `hidden` from now on; returns those hidden until now.
    pub fn replace(&self, hidden: Vec<String>) -> Vec<String> {
        match self.0.write() {
            Ok(mut old) => std::mem::replace(&mut *old, hidden),
            Err(poisoned) => std::mem::replace(&mut *poisoned.into_inner(), hidden),
        }
    }
}

/// The hub's resources and prompts as one server serves them.
pub struct Catalog {
    /// Servers whose resources and prompts are not served (outside the scope).
    hidden: Hidden,
    /// Exposed prompt name → (server, the server's own name), from the last listing.
    prompts: Mutex<HashMap<String, (String, String)>>,
    /// Prompts under the hub's names, or the server's own in pass-through mode.
    naming: Naming,
}

impl Catalog {
    /// Serves every server's resources and prompts but those `hidden` holds, prompts named
    /// by `naming`.
    pub fn new(hidden: Hidden, naming: Naming) -> Self {
        Self {
            hidden,
            prompts: Mutex::new(HashMap::new()),
            naming,
        }
    }

    fn routes(&self) -> MutexGuard<'_, HashMap<String, (String, String)>> {
        match self.prompts.lock() {
            Ok(routes) => routes,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// Whether `server`'s resources and prompts are served.
    pub fn shown(&self, server: &str) -> bool {
        self.hidden.shown(server)
    }

    /// `resources/list`: every server's resources (a server that cannot list is logged and
    /// left out).
    pub async fn resources(
        &self,
        hub: &mcpmux::Hub,
        (pager, cursor): PageOf<'_>,
        rule: &Rule,
    ) -> Result<ListResourcesResult, ErrorData> {
        let listing = hub.resources(None).await.map_err(|e| failure(&e))?;
        log_errors("resources/list", &listing.errors);
        let shown: Vec<_> = listing
            .items
            .into_iter()
            // access rule (identity)
            .filter(|r| self.shown(&r.server) && rule.allows_server(&r.server))
            .collect();
        let (page, next) = pager.page("resources/list", shown, cursor)?;
        let items = page.iter().filter_map(|r| record(r, &r.uri)).collect();
        let mut result = ListResourcesResult::with_all_items(items);
        result.next_cursor = next;
        Ok(result)
    }

    /// `resources/templates/list`: every server's templates.
    pub async fn templates(
        &self,
        hub: &mcpmux::Hub,
        (pager, cursor): PageOf<'_>,
        rule: &Rule,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let mut shown = self.shown_templates(hub).await?;
        // access rule (identity)
        shown.retain(|t| rule.allows_server(&t.server));
        let (page, next) = pager.page("resources/templates/list", shown, cursor)?;
        let items = page
            .iter()
            .filter_map(|t| record(t, &t.uri_template))
            .collect();
        let mut result = ListResourceTemplatesResult::with_all_items(items);
        result.next_cursor = next;
        Ok(result)
    }

    async fn shown_templates(
        &self,
        hub: &mcpmux::Hub,
    ) -> Result<Vec<mcpmux::ResourceTemplate>, ErrorData> {
        let listing = hub
            .resource_templates(None)
            .await
            .map_err(|e| failure(&e))?;
        log_errors("resources/templates/list", &listing.errors);
        Ok(listing
            .items
            .into_iter()
            .filter(|t| self.shown(&t.server))
            .collect())
    }

    /// `resources/read`: from the server that lists `uri` (or the only one with resources).
    pub async fn read(
        &self,
        hub: &mcpmux::Hub,
        uri: &str,
        options: mcpmux::CallOptions,
        rule: &Rule,
    ) -> Result<ReadResourceResult, ErrorData> {
        // access rule (identity)
        crate::access::check_resource(hub, rule, uri).await?;
        let contents = hub
            .read_resource_with(None, uri, options)
            .await
            .map_err(|e| naming_uri(failure(&e), uri))?;
        let contents = contents
            .iter()
            .map(|part| convert(part, uri))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(ReadResourceResult::new(contents))
    }

    /// `prompts/list`: every server's prompts under their exposed names; the routing table
    /// `prompts/get` uses is this listing's.
    pub async fn prompts(
        &self,
        hub: &mcpmux::Hub,
        (pager, cursor): PageOf<'_>,
        rule: &Rule,
    ) -> Result<ListPromptsResult, ErrorData> {
        // access rule (identity): the routing table keeps every prompt; the listing only
        // those of servers the identity may use.
        let items: Vec<_> = self
            .list_prompts(hub)
            .await?
            .into_iter()
            .filter(|(server, _)| rule.allows_server(server))
            .map(|(_, prompt)| prompt)
            .collect();
        let (page, next) = pager.page("prompts/list", items, cursor)?;
        let mut result = ListPromptsResult::with_all_items(page);
        result.next_cursor = next;
        Ok(result)
    }

    async fn list_prompts(
        &self,
        hub: &mcpmux::Hub,
    ) -> Result<Vec<(String, rmcp::model::Prompt)>, ErrorData> {
        let listing = hub.prompts(None).await.map_err(|e| failure(&e))?;
        log_errors("prompts/list", &listing.errors);
        let prompts: Vec<&mcpmux::Prompt> = listing
            .items
            .iter()
            .filter(|p| self.shown(&p.server))
            .collect();
        let keys: Vec<(&str, &str)> = prompts
            .iter()
            .map(|p| (p.server.as_str(), p.name.as_str()))
            .collect();
        let names = self.naming.prompts(&keys);
        let mut routes = HashMap::new();
        let mut items = Vec::new();
        for (prompt, name) in prompts.iter().zip(names) {
            let mut value = serde_json::to_value(prompt).unwrap_or(Value::Null);
            if let Some(fields) = value.as_object_mut() {
                fields.remove("server");
                fields.insert("name".into(), Value::String(name.clone()));
            }
            match serde_json::from_value(value) {
                Ok(item) => {
                    items.push((prompt.server.clone(), item));
                    routes.insert(name, (prompt.server.clone(), prompt.name.clone()));
                }
                Err(error) => {
                    tracing::warn!(server = %prompt.server, prompt = %prompt.name, %error, "prompt not listed downstream");
                }
            }
        }
        *self.routes() = routes;
        Ok(items)
    }

    /// The server and the server's own name of the prompt listed as `name`. A name not in
    /// the last listing is looked up in a fresh one (a client may get without listing first).
    async fn prompt_route(
        &self,
        hub: &mcpmux::Hub,
        name: &str,
    ) -> Result<(String, String), ErrorData> {
        let mut route = self.routes().get(name).cloned();
        if route.is_none() {
            self.list_prompts(hub).await?;
            route = self.routes().get(name).cloned();
        }
        route.ok_or_else(|| {
            ErrorData::invalid_params(
                format!("no prompt named `{name}` (prompts/list names the prompts served)"),
                None,
            )
        })
    }

    /// `completion/complete`: a prompt's argument by the server of the prompt listed under
    /// that name, a resource template's by the server that lists the template.
    pub async fn complete(
        &self,
        hub: &mcpmux::Hub,
        request: CompleteRequestParams,
        rule: &Rule,
    ) -> Result<CompleteResult, ErrorData> {
        let (server, reference) = match &request.r#ref {
            Reference::Prompt(prompt) => {
                let (server, name) = self.prompt_route(hub, &prompt.name).await?;
                (server, mcpmux::CompletionRef::Prompt { name })
            }
            Reference::Resource(template) => {
                let owner = self
                    .shown_templates(hub)
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
        // access rule (identity)
        if !rule.allows_server(&server) {
            return Err(ErrorData::invalid_params(
                "no such prompt or resource template (prompts/list and resources/templates/list \
                 name them)",
                None,
            ));
        }
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
        hub: &mcpmux::Hub,
        name: &str,
        arguments: Map<String, Value>,
        options: mcpmux::CallOptions,
        rule: &Rule,
    ) -> Result<GetPromptResult, ErrorData> {
        let (server, prompt) = self.prompt_route(hub, name).await?;
        // access rule (identity): a prompt of a server it may not use is unknown to it.
        if !rule.allows_server(&server) {
            return Err(ErrorData::invalid_params(
                format!("no prompt named `{name}` (prompts/list names the prompts served)"),
                None,
            ));
        }
        let filled = hub
            .get_prompt_with(&server, &prompt, arguments, options)
            .await
            .map_err(|e| failure(&e))?;
        let messages = serde_json::to_value(&filled.messages)
            .and_then(serde_json::from_value)
            .map_err(|e| invalid_answer(&server, &e))?;
        // Built by rmcp's constructor: it carries the `resultType` 2026-07-28 requires.
        let mut result = GetPromptResult::new(messages);
        result.description = filled.description;
        Ok(result)
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

/// A hub record as rmcp's: its JSON without the `server` field the hub adds.
fn record<T: DeserializeOwned>(item: &impl serde::Serialize, what: &str) -> Option<T> {
    let mut value = serde_json::to_value(item).ok()?;
    if let Some(fields) = value.as_object_mut() {
        fields.remove("server");
    }
    match serde_json::from_value(value) {
        Ok(record) => Some(record),
        Err(error) => {
            tracing::warn!(%what, %error, "not listed downstream");
            None
        }
    }
}

/// One part of a read as rmcp's.
fn convert(
    part: &mcpmux::ResourceContents,
    uri: &str,
) -> Result<rmcp::model::ResourceContents, ErrorData> {
    serde_json::to_value(part)
        .and_then(serde_json::from_value)
        .map_err(|e| {
            ErrorData::internal_error(
                format!("reading `{uri}` gave contents that are not MCP: {e}"),
                None,
            )
        })
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

/// A failed read, get or listing as the downstream client is told: what the upstream server
/// answered keeps its code (a missing resource, bad prompt arguments); a URI no server lists
/// is -32002 (resource not found); anything else (a server down, a timeout) is an internal
/// error whose text names the server and what became of it.
pub fn failure(error: &mcpmux::Error) -> ErrorData {
    match error {
        // The client's own declaration fell short: it is told what the server needs.
        mcpmux::Error::MissingCapability { .. } => crate::convert::protocol_error(error),
        mcpmux::Error::Server { code, message, .. } => ErrorData::new(
            rmcp::model::ErrorCode(*code),
            format!("{error}"),
            Some(Value::String(message.clone())),
        ),
        mcpmux::Error::NoResourceServer { .. } | mcpmux::Error::UnknownServer { .. } => {
            ErrorData::resource_not_found(error.to_string(), None)
        }
        _ => ErrorData::internal_error(error.to_string(), None),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn an_upstream_error_keeps_its_code_and_a_down_server_is_named() {
        let missing = mcpmux::Error::Server {
            server: "e".into(),
            code: -32002,
            message: "Resource not found".into(),
            data: None,
        };
        let told = failure(&missing);
        assert_eq!(told.code.0, -32002);
        assert!(told.message.contains("server `e`"), "{}", told.message);
        let down = mcpmux::Error::Unavailable {
            server: "files".into(),
            state: mcpmux::ServerState::Stopped,
            reason: "shut down".into(),
        };
        let told = failure(&down);
        assert_eq!(told.code, rmcp::model::ErrorCode::INTERNAL_ERROR);
        assert!(
            told.message.contains("server `files` is stopped"),
            "{}",
            told.message
        );
    }

    #[test]
    fn records_lose_the_hub_s_server_field() {
        let resource: mcpmux::Resource = serde_json::from_value(serde_json::json!({
            "server": "e", "uri": "demo://1", "name": "one", "mimeType": "text/plain"
        }))
        .unwrap();
        let served: rmcp::model::Resource = record(&resource, "demo://1").unwrap();
        let json = serde_json::to_value(&served).unwrap();
        assert_eq!(json["uri"], "demo://1");
        assert_eq!(json["mimeType"], "text/plain");
        assert!(json.get("server").is_none(), "{json}");
    }
}
