//! What a session may see and use of the hub: the one place every route asks (tools/list and
//! tools/call, resources/list, resources/templates/list, resources/read, resources/subscribe,
//! prompts/list, prompts/get, completion/complete, and the notices and capabilities passed
//! on), so that what is listed nowhere cannot be read, got, completed or subscribed to either.
//! A view holds the scope (`--scope`), the servers outside it (`Hidden`, replaced by a
//! reload) and the access rule of the session's identity (`access`: the servers and tools it
//! may use, its own scope). A tool call's scope is the
//! library's to apply (`Hub::call_with` refuses a tool outside it): the view hands it the
//! scope rather than deciding again. Knows nothing of transports or sessions' other state.

use std::sync::{Arc, RwLock};

use rmcp::model::ErrorData;

use crate::access::Rule;
use crate::failures::failure;

/// The servers whose resources, prompts and notices are not served (those outside the
/// scope). Cheap to clone: every view shares one list, and a reload replaces it for all.
#[derive(Clone, Default)]
pub struct Hidden(Arc<RwLock<Vec<String>>>);

impl Hidden {
    /// Hides the servers of `hidden`.
    pub fn new(hidden: Vec<String>) -> Self {
        Self(Arc::new(RwLock::new(hidden)))
    }

    /// Whether `server`'s resources, prompts and notices are served.
    fn shown(&self, server: &str) -> bool {
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

/// What one session may see and use. Cheap to clone.
#[derive(Clone, Default)]
pub struct View {
    scope: Option<mcpmux::Scope>,
    hidden: Hidden,
    /// What the session's identity may use (the whole authority unless a rule narrows it).
    rule: Arc<Rule>,
}

impl View {
    /// Everything in `scope` (`None`: every server), but the servers `hidden` holds.
    pub fn new(scope: Option<mcpmux::Scope>, hidden: Hidden) -> Self {
        View {
            scope,
            hidden,
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
        self.hidden.shown(server) && self.rule.allows_server(server)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reload_hides_a_server_from_every_view_sharing_the_list() {
        let hidden = Hidden::new(vec!["secret".into()]);
        let view = View::new(None, hidden.clone());
        let other = view.clone();
        assert!(!view.server_shown("secret") && view.server_shown("open"));
        assert!(view.prompt_server("secret", "mcp__secret__p").is_err());
        hidden.replace(vec!["open".into()]);
        assert!(other.server_shown("secret") && !other.server_shown("open"));
    }
}
