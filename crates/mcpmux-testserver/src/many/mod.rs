//! `--many-tools N`: N more tools of a realistic, varied catalog (issues and pull requests,
//! calendar, email, databases, cloud storage, tickets, CRM, payments, web search, files,
//! weather, translation, maps, chat, CI, monitoring, notes), for tool-search and catalog-size
//! tests and benches. Deterministic: the same N gives the same tools in the same order. Each
//! answers with its name and arguments; none does what it says. Knows nothing of transports.

use std::sync::Arc;

use rmcp::{
    handler::server::router::tool::{ToolRoute, ToolRouter},
    model::{CallToolResult, ContentBlock, JsonObject, Tool},
};
use serde_json::{Map, Value, json};

use crate::server::TestServer;

mod domains_a;
mod domains_b;

/// A parameter: name, JSON type (`string`, `integer`, `boolean`, `array` of strings), what it
/// is, whether it is required.
type Param = (&'static str, &'static str, &'static str, bool);

/// A thing a service keeps, with the usual create/get/list/update/delete/search tools.
struct Entity {
    name: &'static str,
    plural: &'static str,
    /// What one is, for descriptions ("an issue (a bug report or task) in a repository").
    what: &'static str,
    /// Parameters every tool of the entity takes (the repository, the calendar …).
    scope: &'static [Param],
    /// Its fields, for create and update.
    fields: &'static [Param],
    /// What a list can be filtered by.
    filters: &'static [Param],
}

/// A tool that is not one of the six entity verbs.
struct Extra {
    name: &'static str,
    description: &'static str,
    params: &'static [Param],
}

struct Domain {
    service: &'static str,
    product: &'static str,
    entities: &'static [Entity],
    extras: &'static [Extra],
}

pub(crate) const REPO: Param = ("repo", "string", "Repository as owner/name", true);
pub(crate) const LIMIT: Param = ("limit", "integer", "Most results to return (1-100)", false);

/// Every tool of the catalog, domain by domain: `(name, description, input schema)`.
fn catalog() -> Vec<(String, String, Value)> {
    let mut tools = Vec::new();
    for domain in domains_a::DOMAINS.iter().chain(domains_b::DOMAINS) {
        let mut own = Vec::new();
        for extra in domain.extras {
            own.push((
                extra.name.to_string(),
                extra.description.to_string(),
                schema(extra.params),
            ));
        }
        for entity in domain.entities {
            own.extend(entity_tools(domain, entity));
        }
        tools.push(own);
    }
    // Round-robin over the domains, so any N is a varied catalog.
    let mut out = Vec::new();
    let longest = tools.iter().map(Vec::len).max().unwrap_or(0);
    for i in 0..longest {
        for own in &tools {
            if let Some(tool) = own.get(i) {
                out.push(tool.clone());
            }
        }
    }
    out
}

fn entity_tools(domain: &Domain, e: &Entity) -> Vec<(String, String, Value)> {
    let (service, product) = (domain.service, domain.product);
    let id = [(
        "id",
        "string",
        "Its id, as returned when it was created or listed",
        true,
    )];
    let optional: Vec<Param> = e
        .fields
        .iter()
        .map(|&(n, t, d, _)| (n, t, d, false))
        .collect();
    let cat = |parts: &[&[Param]]| -> Vec<Param> { parts.concat() };
    vec![
        (
            format!("{service}_create_{}", e.name),
            format!("Create {} in {product}.", e.what),
            schema(&cat(&[e.scope, e.fields])),
        ),
        (
            format!("{service}_get_{}", e.name),
            format!(
                "Get one {} from {product} by its id, with all its fields.",
                e.name.replace('_', " ")
            ),
            schema(&cat(&[e.scope, &id])),
        ),
        (
            format!("{service}_list_{}", plural_name(e)),
            format!(
                "List the {} in {product}, newest first, one page at a time.",
                e.plural
            ),
            schema(&cat(&[
                e.scope,
                e.filters,
                &[
                    LIMIT,
                    (
                        "cursor",
                        "string",
                        "Page cursor from the previous answer",
                        false,
                    ),
                ],
            ])),
        ),
        (
            format!("{service}_update_{}", e.name),
            format!(
                "Change fields of an existing {} in {product}; fields not given stay as they are.",
                e.name.replace('_', " ")
            ),
            schema(&cat(&[e.scope, &id, &optional])),
        ),
        (
            format!("{service}_delete_{}", e.name),
            format!("Delete {} from {product} permanently.", e.what),
            schema(&cat(&[e.scope, &id])),
        ),
        (
            format!("{service}_search_{}", plural_name(e)),
            format!("Search {} in {product} by words they contain.", e.plural),
            schema(&cat(&[
                e.scope,
                &[("query", "string", "Words to look for", true), LIMIT],
            ])),
        ),
    ]
}

fn plural_name(e: &Entity) -> String {
    e.plural.replace(' ', "_")
}

fn schema(params: &[Param]) -> Value {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for &(name, kind, description, needed) in params {
        let property = if kind == "array" {
            json!({"type": "array", "items": {"type": "string"}, "description": description})
        } else {
            json!({"type": kind, "description": description})
        };
        properties.insert(name.to_string(), property);
        if needed && !required.contains(&name) {
            required.push(name);
        }
    }
    json!({"type": "object", "properties": properties, "required": required})
}

/// Workspaces the catalog is repeated for when N is larger than it.
const TENANTS: &[&str] = &["acme", "globex", "initech", "umbrella", "hooli", "stark"];

/// The first `count` tools: the catalog, then again per tenant (`acme_github_create_issue`),
/// then numbered rounds.
pub fn tools(count: usize) -> Vec<Tool> {
    let base = catalog();
    let mut out = Vec::with_capacity(count);
    let mut round = 0usize;
    while out.len() < count && !base.is_empty() {
        for (name, description, schema) in &base {
            if out.len() == count {
                break;
            }
            let (name, description) = match round {
                0 => (name.clone(), description.clone()),
                r => {
                    let tenant = match TENANTS.get(r - 1) {
                        Some(t) => t.to_string(),
                        None => format!("tenant{r}"),
                    };
                    (
                        format!("{tenant}_{name}"),
                        format!("{description} (In the {tenant} workspace.)"),
                    )
                }
            };
            let schema = match schema {
                Value::Object(map) => map.clone(),
                _ => JsonObject::new(),
            };
            out.push(Tool::new(name, description, Arc::new(schema)));
        }
        round += 1;
    }
    out
}

/// Adds the first `count` catalog tools to `router`.
pub fn add_tools(router: &mut ToolRouter<TestServer>, count: usize) {
    for tool in tools(count) {
        let name = tool.name.to_string();
        router.add_route(ToolRoute::new_dyn(tool, move |context| {
            let answer = json!({"tool": name, "arguments": context.arguments.clone()});
            Box::pin(async move {
                Ok(CallToolResult::success(vec![ContentBlock::text(answer.to_string())]).into())
            })
        }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn any_count_gives_that_many_distinct_tools_deterministically() {
        let base = catalog().len();
        assert!(base >= 150, "{base}");
        for count in [0, 1, 17, base, base + 1, 5 * base] {
            let tools = tools(count);
            assert_eq!(tools.len(), count);
            let names: HashSet<_> = tools.iter().map(|t| t.name.to_string()).collect();
            assert_eq!(names.len(), count, "names repeat at {count}");
            assert_eq!(tools, super::tools(count));
        }
    }

    #[test]
    fn a_small_catalog_spans_many_domains_and_every_tool_has_an_object_schema() {
        let services: HashSet<_> = tools(17)
            .iter()
            .map(|t| t.name.split('_').next().unwrap_or_default().to_string())
            .collect();
        assert_eq!(services.len(), 17);
        for tool in tools(400) {
            assert_eq!(
                tool.input_schema.get("type"),
                Some(&json!("object")),
                "{}",
                tool.name
            );
            assert!(tool.description.as_deref().is_some_and(|d| d.len() > 20));
        }
    }
}
