//! What a session may see and use of the hub: the one place every route asks (tools/list and
//! tools/call, resources/list, resources/templates/list, resources/read, resources/subscribe,
//! prompts/list, prompts/get, completion/complete, and the notices and capabilities passed
//! on), so that what is listed nowhere cannot be read, got, completed or subscribed to either.
//! A view holds the scope (`--scope`) and the access rule of the session's identity
//! (`access`: the servers and tools it may use, its own scope). Which servers a scope admits
//! is the library's to say (`Hub::in_scope`, from the configuration running now, so a reload
//! needs nothing of the view), and a tool call's scope the library's to apply
//! (`Hub::call_with` refuses a tool outside it): the view asks and hands on rather than
//! deciding again. Knows nothing of transports or sessions' other state.

use std::sync::Arc;

use rmcp::model::ErrorData;

use crate::access::Rule;
use crate::failures::failure;

/// What one session may see and use. Cheap to clone.
#[derive(Clone)]
pub struct View {
    scope: Option<mcpmux::Scope>,
    /// The hub the scope is asked of.
    hub: mcpmux::Hub,
    /// What the session's identity may use (the whole authority unless a rule narrows it).
    rule: Arc<Rule>,
}

impl View {
    /// Everything of `hub` in `scope` (`None`: every server).
    pub fn new(scope: Option<mcpmux::Scope>, hub: mcpmux::Hub) -> Self {
        View {
            scope,
            hub,
            rule: Arc::default(),
        }
    }

    /// The same view, narrowed to what `rule` lets its identity use.
    pub fn with_rule(&self, rule: Arc<Rule>) -> Self {
        View {
            rule,
            ..self.clone()
        }
    }

    /// The access rule of the session's identity.
    pub fn rule(&self) -> &Rule {
        &self.rule
    }

    /// Whether `server` is seen at all: its resources, templates, prompts, completions,
    /// notices and capabilities.
    pub fn server_shown(&self, server: &str) -> bool {
        let in_scope = match &self.scope {
            Some(scope) => self.hub.in_scope(server, scope),
            None => true,
        };
        in_scope && self.rule.allows_server(server)
    }

    /// The tools served: the hub's usable ones, in the scope, that the rule allows.
    pub fn tools(&self, hub: &mcpmux::Hub) -> Vec<mcpmux::Tool> {
        let tools = match &self.scope {
            Some(scope) => hub.tools_for(scope),
            None => hub.tools(),
        };
        let tools = tools.into_iter().filter(|t| t.unusable.is_none()).collect();
        crate::access::tools_for(hub, &self.rule, tools)
    }

    /// Whether the rule lets this session call the hub's tool `name` (the scope is the
    /// library's to apply: [`View::call_options`]).
    pub fn call_allowed(&self, hub: &mcpmux::Hub, name: &str) -> bool {
        crate::access::allows_call(hub, &self.rule, name)
    }

    /// `options` for a call of a tool: the library refuses a tool outside the scope
    /// (`Error::OutOfScope`), as `tools/list` leaves it out.
    pub fn call_options(&self, options: mcpmux::CallOptions) -> mcpmux::CallOptions {
        match &self.scope {
            Some(scope) => options.with_scope(scope.clone()),
            None => options,
        }
    }

    /// The server a read of (or a subscription to) `uri` goes to, if this view shows it (or
    /// else a server in view that lists `uri` too); else "resource not found", as for a URI no
    /// server lists (a hidden server's resource is not said to exist).
    pub async fn resource_server(&self, hub: &mcpmux::Hub, uri: &str) -> Result<String, ErrorData> {
        let server = hub.resource_owner(uri).await.map_err(|e| failure(&e))?;
        if self.server_shown(&server) {
            return Ok(server);
        }
        // The hub's choice is hidden; a server in view that lists the URI itself serves it.
        let listing = hub.resources(None).await.map_err(|e| failure(&e))?;
        let shown = listing
            .items
            .into_iter()
            .find(|r| r.uri == uri && self.server_shown(&r.server));
        match shown {
            Some(resource) => Ok(resource.server),
            None => {
                tracing::debug!(%server, uri, "a resource of a server outside the view was asked for");
                Err(not_found(uri))
            }
        }
    }

    /// Refuses a prompt of `server` (routed by name from a listing that may predate a
    /// reload) or a completion it would answer, unless this view shows `server`.
    pub fn prompt_server(&self, server: &str, name: &str) -> Result<(), ErrorData> {
        if self.server_shown(server) {
            return Ok(());
        }
        Err(ErrorData::invalid_params(
            format!("no prompt named `{name}` (prompts/list names the prompts served)"),
            None,
        ))
    }
}

/// A URI no server in the view has.
fn not_found(uri: &str) -> ErrorData {
    ErrorData::resource_not_found(format!("no server in scope has the resource `{uri}`"), None)
}
