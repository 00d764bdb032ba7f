//! `mcpmux tools`: the table, a provider's export, and the JSON list streamed server by
//! server, with what is said on stderr after each.

use mcpmux::Hub;

use crate::failure::Failure;
use crate::output;

/// Prints `tools` as a table (for `provider`, as its definitions in JSON) with what could
/// not be listed or called, and which lists came from the cache.
pub fn table(
    hub: &Hub,
    tools: &[&mcpmux::Tool],
    provider: Option<mcpmux::schema::ExportFormat>,
) -> Result<(), Failure> {
    if let Some(provider) = provider {
        let owned: Vec<mcpmux::Tool> = tools.iter().copied().cloned().collect();
        let export = mcpmux::schema::export(&owned, provider);
        output::print_json(&export.definitions())?;
        output::warn_unusable(
            export
                .unusable
                .iter()
                .map(|u| (u.tool.as_str(), u.reason.as_str())),
        );
    } else {
        output::print_tools(tools)?;
        output::warn_unusable(
            tools
                .iter()
                .filter_map(|t| Some((t.name.as_str(), t.unusable.as_deref()?))),
        );
    }
    let servers = hub.servers();
    output::warn_unavailable(&servers);
    output::note_cached(tools, &servers);
    Ok(())
}

/// `mcpmux tools --json`: streamed server by server as the hub reads each server's list,
/// never the whole list at once (with 100 servers of 53 tools, it held every schema twice).
pub fn json(hub: &Hub, scope: Option<&mcpmux::Scope>, server: Option<&str>) -> Result<(), Failure> {
    let mut unusable: Vec<(String, String)> = Vec::new();
    let notes = output::print_json_list(|write| {
        hub.stream_tools(scope, server, |tool| {
            if let Some(reason) = &tool.unusable {
                unusable.push((tool.name.clone(), reason.clone()));
            }
            write(tool)
        })
    })?;
    output::warn_unusable(unusable.iter().map(|(t, r)| (t.as_str(), r.as_str())));
    output::warn_unavailable(&hub.servers_as_read());
    if let Some(notes) = notes {
        let from_cache: Vec<(&str, std::time::SystemTime)> = notes
            .from_cache
            .iter()
            .map(|(name, at)| (name.as_str(), *at))
            .collect();
        output::note_from_cache(&from_cache);
    }
    Ok(())
}
