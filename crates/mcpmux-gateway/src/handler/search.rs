//! `--search` on a session: its `tools/list` (the meta-tools, then the pinned tools and the
//! tools it found, of those it may use) and its calls of the meta-tools — `search_tools` asks
//! the shared index for what this session may use and tells the session its list changed when
//! it found something new; `call_tool` becomes the `tools/call` of the tool it names, on the
//! same path as a direct call (validation, policy, scope, access rule, untrusted wrapping). A
//! direct call of a tool never listed needs nothing here: `tools/call` takes any tool the
//! session may use. Knows nothing of HTTP or stdio.

use rmcp::{
    ErrorData, RoleServer,
    model::{CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Tool},
    service::RequestContext,
};

use super::Gateway;
use crate::failures;
use crate::search::{CALL_TOOL, Catalog, answer, call_target, is_meta, meta_tools};

impl Gateway {
    /// What `tools/list` answers under `--search`: the meta-tools, then the pinned tools and
    /// the tools this session found, of those it may use now.
    pub(super) fn listed(&self, catalog: &Catalog) -> Vec<mcpmux::Tool> {
        let (shown, behind): (Vec<mcpmux::Tool>, Vec<mcpmux::Tool>) = self
            .served()
            .into_iter()
            .partition(|tool| catalog.pinned(tool) || self.found.contains(&tool.name));
        let mut listed = meta_tools(behind.len()).to_vec();
        listed.extend(shown);
        listed
    }

    /// A meta-tool's definition, when searching (rmcp's header check asks by name).
    pub(super) fn meta_tool(&self, name: &str) -> Option<Tool> {
        let catalog = self.inner.search.as_ref()?;
        if !is_meta(name) {
            return None;
        }
        let listed = self.listed(catalog);
        let meta = listed.iter().find(|tool| tool.name == name)?;
        Some(mcpmux::rmcp_model::tool(meta, meta.name.clone()))
    }

    /// A `tools/call` of `search_tools` or `call_tool`.
    pub(super) async fn meta_call(
        &self,
        catalog: &Catalog,
        mut request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name == CALL_TOOL {
            return match call_target(request.arguments.as_ref()) {
                Ok((name, arguments)) => {
                    request.name = name.into();
                    request.arguments = arguments;
                    self.call(request, context).await
                }
                Err(message) => Ok(failures::refusal(message).into()),
            };
        }
        self.wait_for_startup().await;
        let arguments = request
            .arguments
            .take()
            .map_or(serde_json::Value::Null, serde_json::Value::Object);
        // The index is the gateway's whole view; what this session may use filters its hits.
        let all = self.inner.view.tools(&self.inner.hub);
        let found = match catalog.search(all, &self.served(), &arguments) {
            Ok(found) => found,
            Err(message) => return Ok(failures::refusal(message).into()),
        };
        if self.found.add(found.iter().map(|tool| tool.name.as_str())) {
            self.session.keep();
            // A client that lists again now sees them; one that does not calls through
            // `call_tool` or by name. A session that cannot be told is no failure of the search.
            if let Err(error) = context.peer.notify_tool_list_changed().await {
                tracing::debug!(session = self.session.id, %error, "a search's list change was not delivered");
            }
        }
        let served: Vec<_> = self
            .naming()
            .named(found)
            .into_iter()
            .map(|(tool, name)| mcpmux::rmcp_model::tool(&tool, name))
            .collect();
        Ok(CallToolResult::success(vec![ContentBlock::text(answer(&served))]).into())
    }
}
