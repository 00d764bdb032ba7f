//! The hub's resources and prompts: one server's by name, or every server's at once (a
//! listing collects what each answers and the error of each that could not), the names
//! prompts are served under beside the tools and the routing of such a name back to its
//! server, which servers a scope sees, the subscriptions a harness makes, completions of
//! prompt and template arguments, and the level of the logs servers send. Each request itself
//! is the connection's (`connection::requests`, `connection::subscriptions`); this file only
//! chooses the servers. A read, a prompt and a completion are calls: they cross the seam
//! (`Hub::carry`).

use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::Hub;
use super::call::Work;
use crate::call_options::CallOptions;
use crate::catalog::naming;
use crate::catalog::scope::Scope;
use crate::connection::{Connection, ListKind};
use crate::error::{Error, Result};
use crate::host::LogLevel;
use crate::listings::{
    Completion, CompletionRef, Listing, Named, Page, Prompt, PromptMessages, Resource,
    ResourceContents, ResourceTemplate,
};

impl Hub {
    /// One page of `server`'s resources, from `cursor` (`None`: the first page).
    pub async fn list_resources_page(
        &self,
        server: &str,
        cursor: Option<String>,
    ) -> Result<Page<Resource>> {
        let connection = self.connection_named(server)?;
        connection.list_page(ListKind::Resources, cursor).await
    }

    /// Every resource of `server`, or of every server offering resources (`None`).
    pub async fn resources(&self, server: Option<&str>) -> Result<Listing<Resource>> {
        self.list_all(server, ListKind::Resources).await
    }

    /// Every resource template of `server`, or of every server offering resources (`None`).
    pub async fn resource_templates(
        &self,
        server: Option<&str>,
    ) -> Result<Listing<ResourceTemplate>> {
        self.list_all(server, ListKind::Templates).await
    }

    /// Every prompt of `server`, or of every server offering prompts (`None`), each with the
    /// name it is served under beside the tools ([`Prompt::exposed_name`]: `mcp__SERVER__PROMPT`
    /// fitted and kept apart by the tools' rule, over the prompts listed together).
    pub async fn prompts(&self, server: Option<&str>) -> Result<Listing<Prompt>> {
        let mut listing: Listing<Prompt> = self.list_all(server, ListKind::Prompts).await?;
        let keys: Vec<(&str, &str)> = listing
            .items
            .iter()
            .map(|p| (p.server.as_str(), p.name.as_str()))
            .collect();
        let names = naming::assign(&keys);
        for (prompt, name) in listing.items.iter_mut().zip(names) {
            prompt.exposed_name = name;
        }
        Ok(listing)
    }

    /// The prompt served under `exposed` ([`Prompt::exposed_name`]), routed by a listing of
    /// every server made now (a name is never parsed back into its server); `None` when no
    /// server lists a prompt under that name.
    pub async fn prompt_named(&self, exposed: &str) -> Result<Option<Prompt>> {
        let listing = self.prompts(None).await?;
        Ok(listing
            .items
            .into_iter()
            .find(|p| p.exposed_name == exposed))
    }

    /// Whether `server` is in `scope`: its `stages` and `agents` admit it, so a harness in
    /// that scope sees its tools ([`Hub::tools_for`]) and its resources, templates, prompts
    /// and notices. The servers of the configuration running now decide (a reload's new
    /// server is judged by its own declaration from the moment it is there); a server the hub
    /// does not have is in no scope.
    pub fn in_scope(&self, server: &str, scope: &Scope) -> bool {
        self.inner
            .table()
            .server(server)
            .is_some_and(|s| scope.admits_server(&s.spec.options))
    }

    /// Reads `uri` from `server`; without a server, from the one that lists `uri`, else the one
    /// whose resource template matches it, else the only server offering resources.
    pub async fn read_resource(
        &self,
        server: Option<&str>,
        uri: &str,
    ) -> Result<Vec<ResourceContents>> {
        self.read_resource_with(server, uri, CallOptions::default())
            .await
    }

    /// [`Hub::read_resource`] made as `options` says: its deadline, cancellation, progress,
    /// and who answers what a 2026-07-28 server asks before it answers (`input_required`
    /// rounds: the options' relay, else the hub's [`Host`](crate::Host)).
    pub async fn read_resource_with(
        &self,
        server: Option<&str>,
        uri: &str,
        options: CallOptions,
    ) -> Result<Vec<ResourceContents>> {
        self.carry(Work::Read(uri), |mut site| async move {
            let result = async {
                let connection = match server {
                    Some(name) => self.connection_named(name)?,
                    None => self.owner_of(uri).await?,
                };
                site.spec = Some(connection.spec.clone());
                connection
                    .read_resource(uri, &options, &mut site.trip)
                    .await
            }
            .await;
            (result, site)
        })
        .await
    }

    /// The prompt `name` of `server` filled in with `arguments`.
    pub async fn get_prompt(
        &self,
        server: &str,
        name: &str,
        arguments: Map<String, Value>,
    ) -> Result<PromptMessages> {
        self.get_prompt_with(server, name, arguments, CallOptions::default())
            .await
    }

    /// [`Hub::get_prompt`] made as `options` says: its deadline, cancellation, progress, and
    /// who answers what a 2026-07-28 server asks before it fills the prompt in
    /// (`input_required` rounds: the options' relay, else the hub's [`Host`](crate::Host)).
    pub async fn get_prompt_with(
        &self,
        server: &str,
        name: &str,
        arguments: Map<String, Value>,
        options: CallOptions,
    ) -> Result<PromptMessages> {
        self.carry(Work::Prompt(name), |mut site| async move {
            let result = async {
                let connection = self.connection_named(server)?;
                site.spec = Some(connection.spec.clone());
                connection
                    .get_prompt(name, arguments, &options, &mut site.trip)
                    .await
            }
            .await;
            (result, site)
        })
        .await
    }

    /// The server a read of `uri` goes to (see [`Hub::read_resource`]): the one that lists
    /// it, else the one whose template matches it, else the only server offering resources.
    pub async fn resource_owner(&self, uri: &str) -> Result<String> {
        Ok(self.owner_of(uri).await?.spec.name.clone())
    }

    /// `server`'s suggestions for the value `value` of the argument `argument` of
    /// `reference` (a prompt or a resource template of that server), given the arguments
    /// already filled in (`context`).
    pub async fn complete(
        &self,
        server: &str,
        reference: &CompletionRef,
        argument: &str,
        value: &str,
        context: std::collections::HashMap<String, String>,
    ) -> Result<Completion> {
        self.carry(Work::Complete(argument), |mut site| async move {
            let result = async {
                let connection = self.connection_named(server)?;
                site.spec = Some(connection.spec.clone());
                connection
                    .complete(reference, (argument, value), context, &mut site.trip)
                    .await
            }
            .await;
            (result, site)
        })
        .await
    }

    /// Asks every connected server that sends log messages to send those of `level` and
    /// above (`logging/setLevel`; they arrive on [`Host::logs`](crate::host::Host::logs)).
    /// Returns why each server that could not be told was not. A server that connects
    /// later, or reconnects, sends what it sends by default.
    pub async fn set_log_level(&self, level: LogLevel) -> Vec<Error> {
        let connections: Vec<Arc<Connection>> = self
            .inner
            .table()
            .connections()
            .filter(|c| c.offers_logging())
            .cloned()
            .collect();
        let asked = connections.iter().map(|c| c.set_log_level(level));
        futures::future::join_all(asked)
            .await
            .into_iter()
            .filter_map(Result::err)
            .collect()
    }

    pub(crate) fn connection_named(&self, server: &str) -> Result<Arc<Connection>> {
        self.inner
            .table()
            .server(server)
            .map(|s| s.connection.clone())
            .ok_or_else(|| Error::UnknownServer {
                name: server.to_string(),
            })
    }

    async fn list_all<T: DeserializeOwned + Named>(
        &self,
        server: Option<&str>,
        kind: ListKind,
    ) -> Result<Listing<T>> {
        if let Some(name) = server {
            let connection = self.connection_named(name)?;
            return Ok(Listing {
                items: connection.list_every_page(kind).await?,
                errors: Vec::new(),
            });
        }
        let connections: Vec<Arc<Connection>> = self.inner.table().connections().cloned().collect();
        let listings = connections.iter().map(|connection| async move {
            if connection.offers_when_settled(kind).await {
                Some(connection.list_every_page::<T>(kind).await)
            } else {
                None
            }
        });
        let mut listing = Listing {
            items: Vec::new(),
            errors: Vec::new(),
        };
        for result in futures::future::join_all(listings)
            .await
            .into_iter()
            .flatten()
        {
            match result {
                Ok(mut items) => listing.items.append(&mut items),
                Err(e) => listing.errors.push(e),
            }
        }
        Ok(listing)
    }

    /// The server to read `uri` from: the one that lists it, else the one (only) whose
    /// template matches it, else the only one with resources.
    pub(super) async fn owner_of(&self, uri: &str) -> Result<Arc<Connection>> {
        let listing: Listing<Resource> = self.list_all(None, ListKind::Resources).await?;
        if let Some(resource) = listing.items.iter().find(|r| r.uri == uri) {
            return self.connection_named(&resource.server);
        }
        let templates: Listing<ResourceTemplate> = self.list_all(None, ListKind::Templates).await?;
        let mut matching: Vec<&str> = templates
            .items
            .iter()
            .filter(|t| t.matches(uri))
            .map(|t| t.server.as_str())
            .collect();
        matching.dedup();
        if let [server] = matching.as_slice() {
            return self.connection_named(server);
        }
        let offering: Vec<Arc<Connection>> = self
            .inner
            .table()
            .connections()
            .filter(|c| c.offers(ListKind::Resources))
            .cloned()
            .collect();
        match offering.as_slice() {
            [only] => Ok(only.clone()),
            _ => Err(Error::NoResourceServer {
                uri: uri.to_string(),
                offering: offering.iter().map(|c| c.spec.name.clone()).collect(),
            }),
        }
    }

    /// Asks `server` for `notifications/resources/updated` about `uri`; they arrive as
    /// [`ResourceEvent::Updated`](crate::host::ResourceEvent::Updated) on the hub's [`Host`](crate::Host).
    ///
    /// A handshake-era server is sent `resources/subscribe`. A 2026-07-28 server is sent a
    /// `subscriptions/listen` naming `uri`, which stays open and carries the updates until
    /// [`Hub::unsubscribe_resource`]; subscribing to the same URI again replaces it. It is an
    /// error if the server does not accept the subscription.
    ///
    /// The subscription lasts until it is unsubscribed: after a reconnect it is made again on
    /// the new session, and an `Updated` for `uri` follows (what changed meanwhile was not
    /// notified). If the new session refuses it, [`ResourceEvent::SubscriptionLost`](crate::host::ResourceEvent::SubscriptionLost) says so.
    pub async fn subscribe_resource(&self, server: &str, uri: &str) -> Result<()> {
        let connection = self.connection_named(server)?;
        connection.subscribe(uri).await
    }

    /// Stops the updates of `uri` from `server`: `resources/unsubscribe` to a handshake-era
    /// server; on a 2026-07-28 server, the listen of `uri` is cancelled (unsubscribing from a
    /// URI that has none does nothing). Either way it is no longer made again on reconnect.
    pub async fn unsubscribe_resource(&self, server: &str, uri: &str) -> Result<()> {
        self.connection_named(server)?.unsubscribe(uri).await
    }
}
