//! Tool search for the framework adapters: the agent crate's BM25F index over a hub's tools
//! (the one `mcpmux run` defers behind), with the pinned tools kept out of it, so an adapter
//! hands a framework the search tool and the pinned tools instead of every tool. Built from
//! the tools of one moment: an adapter makes a new one when the tool list changes.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use serde_json::json;

use mcpmux::schema::ExportFormat;
use mcpmux_agent::search::{DeferralOptions, Discovered, ToolPlan, plan};

use crate::convert;
use crate::hub::NativeHub;

/// The tools of a scope split into pinned (always offered) and searchable.
#[pyclass(frozen, module = "mcpmux._mcpmux")]
pub(crate) struct ToolSearch {
    plan: ToolPlan,
}

#[pymethods]
impl ToolSearch {
    /// Splits `hub`'s tools (of `scope`) by `pinned` patterns (exposed or raw names, `*`, `?`;
    /// `SERVER:*` pins a server's tools).
    #[new]
    #[pyo3(signature = (hub, pinned = Vec::new(), scope = None))]
    fn new(hub: &NativeHub, pinned: Vec<String>, scope: Option<&str>) -> PyResult<Self> {
        let hub = hub.hub()?;
        let tools = match convert::scope(scope)? {
            Some(scope) => hub.tools_for(&scope),
            None => hub.tools(),
        };
        let mut options = DeferralOptions::default()
            .without_token_limit()
            .with_max_tools(0);
        for pattern in pinned {
            options = match pattern.strip_suffix(":*") {
                Some(server) => options.with_always_load(server),
                None => options.with_pinned(pattern),
            };
        }
        Ok(ToolSearch {
            plan: plan(&tools, &options, ExportFormat::Anthropic),
        })
    }

    /// Exposed names of the pinned tools.
    fn pinned(&self) -> Vec<String> {
        let search = self.plan.search_tool.as_ref().map(|t| t.name.as_str());
        self.plan
            .sent
            .iter()
            .filter(|t| Some(t.name.as_str()) != search)
            .map(|t| t.name.clone())
            .collect()
    }

    /// Exposed names of the tools reachable only by search.
    fn deferred(&self) -> Vec<String> {
        self.plan.deferred.iter().map(|t| t.name.clone()).collect()
    }

    /// Exposed names of the best matches for `query`, best first (`limit`: 1 to 20, default 5).
    /// A `ValueError` says how to call it when the arguments are wrong.
    #[pyo3(signature = (query, limit = None))]
    fn search(
        &self,
        query: &Bound<'_, PyAny>,
        limit: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Vec<String>> {
        let mut arguments = json!({ "query": convert::to_json(query)? });
        if let Some(limit) = limit {
            arguments["limit"] = convert::to_json(limit)?;
        }
        let answer = self
            .plan
            .search(&arguments, &mut Discovered::default())
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        Ok(answer.tools)
    }
}
