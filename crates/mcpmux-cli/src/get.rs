//! `mcpmux get NAME`: one server's entry as resolved (command or URL, env keys, header names,
//! where it was read, whether it is approved, lazy/required, timeouts, its sandbox's grants)
//! beside its state and tool count. Secrets are never printed: env and header values, a `headersHelper` command
//! and a URL's query and userinfo are left out.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use mcpmux::config::{Limits, Network, Origin, ProjectEntry, Sandbox, ServerSpec, TransportSpec};
use mcpmux::{Hub, ServerStatus};
use serde_json::{Value, json};

use crate::output;

/// What `get` needs of the config, kept before the hub takes it.
pub struct Entries {
    /// The servers as resolved.
    pub servers: Vec<ServerSpec>,
    /// The project's own entries, with their approval.
    pub project: Vec<ProjectEntry>,
}

/// Prints the server `name` (`json`: as one object).
pub fn run(
    hub: &Hub,
    entries: &Entries,
    name: &str,
    json: bool,
) -> Result<(), crate::failure::Failure> {
    let status = hub
        .servers()
        .into_iter()
        .find(|s| s.name == name)
        .ok_or_else(|| mcpmux::Error::UnknownServer { name: name.into() })?;
    let spec = entries.servers.iter().find(|s| s.name == name);
    let value = describe(&status, spec, &entries.project);
    if json {
        output::print_json(&value)?;
    } else {
        output::print_text(&text(&value))?;
    }
    Ok(())
}

/// The entry as one JSON object: only names of env variables and headers.
fn describe(status: &ServerStatus, spec: Option<&ServerSpec>, project: &[ProjectEntry]) -> Value {
    let mut value = json!({
        "name": status.name,
        "transport": status.transport,
        "state": status.state.label(),
        "tools": status.tools,
        "source": status.source,
        "dialect": status.dialect,
    });
    if let Some(error) = status.error() {
        value["error"] = error.into();
    }
    if let (Some(era), Some(version)) = (&status.era, &status.version) {
        value["protocol"] = format!("{era}/{version}").into();
    }
    if !status.warnings.is_empty() {
        value["warnings"] = status.warnings.clone().into();
    }
    let approval = project
        .iter()
        .rev()
        .find(|e| e.name == status.name && status.source.as_deref() == e.file.to_str());
    value["trust"] = match approval {
        Some(entry) if entry.approved => "approved for this project",
        Some(_) => "not approved: `mcpmux trust` approves the project's servers",
        None => "not needed (your own config)",
    }
    .into();
    let Some(spec) = spec else {
        return value;
    };
    if let TransportSpec::Http { url, .. }
    | TransportSpec::Sse { url, .. }
    | TransportSpec::Ws { url, .. } = &spec.transport
    {
        // A connection error may quote the URL whole (reqwest's "error sending request for
        // url (…)"): its query and userinfo are left out there too.
        for key in ["error", "warnings"] {
            if let Ok(text) = serde_json::to_string(&value[key])
                && let Ok(scrubbed) = serde_json::from_str(&scrub(&text, url))
            {
                value[key] = scrubbed;
            }
        }
    }
    match &spec.transport {
        TransportSpec::Stdio {
            command,
            args,
            env,
            cwd,
        } => {
            value["command"] = command.clone().into();
            value["args"] = args.clone().into();
            value["env"] = env.keys().cloned().collect::<Vec<_>>().into();
            if let Some(cwd) = cwd {
                value["cwd"] = cwd.display().to_string().into();
            }
        }
        TransportSpec::Http { url, headers }
        | TransportSpec::Sse { url, headers }
        | TransportSpec::Ws { url, headers } => {
            value["url"] = shown_url(url).into();
            value["headers"] = headers.keys().cloned().collect::<Vec<_>>().into();
        }
        other => value["target"] = other.to_string().into(),
    }
    if spec.auth.headers_helper.is_some() {
        value["headers_helper"] = "set (its command is not shown)".into();
    }
    if let Origin::Plugin { source } = &spec.origin {
        value["plugin"] = source.clone().into();
    }
    value["enabled"] = spec.enabled.into();
    value["required"] = spec.required.into();
    value["lazy"] = match spec.options.lazy {
        Some(lazy) => lazy.into(),
        None => "default".into(),
    };
    value["startup_timeout"] = secs(spec.startup_timeout).into();
    value["call_timeout"] = secs(spec.call_timeout).into();
    value["probe_timeout"] = secs(spec.probe_timeout).into();
    // A sandbox confines what mcpmux runs: a local server, or a remote one's headersHelper.
    let runs =
        matches!(spec.transport, TransportSpec::Stdio { .. }) || spec.auth.headers_helper.is_some();
    if let Some(sandbox) = spec
        .options
        .sandbox
        .as_ref()
        .filter(|s| runs && !s.is_off())
    {
        grants(&mut value, sandbox, &spec.transport);
    }
    value
}

/// The sandbox's grants as the server (or its `headersHelper`) would get them at its next
/// start: paths expanded (only those that exist, as the kernel is given them), `${TMP}` for the
/// private temp dir made at each start, network, limits.
fn grants(value: &mut Value, sandbox: &Sandbox, transport: &TransportSpec) {
    value["sandbox"] = sandbox.summary().into();
    let empty = BTreeMap::new();
    // A remote server's sandbox is its `headersHelper`'s, run by `sh` in our directory.
    let (command, env, cwd) = match transport {
        TransportSpec::Stdio {
            command, env, cwd, ..
        } => (command.as_str(), env, cwd.clone()),
        _ => ("sh", &empty, None),
    };
    let Some(project) = cwd.or_else(|| std::env::current_dir().ok()) else {
        return;
    };
    let Some(grants) = sandbox.server_grants(command, env, &project, Path::new("${TMP}")) else {
        return;
    };
    let shown = |paths: &[std::path::PathBuf]| -> Vec<String> {
        let mut shown: Vec<String> = Vec::new();
        for path in paths {
            let text = path.display().to_string();
            if (path.exists() || text.starts_with("${TMP}")) && !shown.contains(&text) {
                shown.push(text);
            }
        }
        shown
    };
    value["sandbox_read"] = shown(&grants.read).into();
    value["sandbox_write"] = shown(&grants.write).into();
    value["sandbox_network"] = match (&grants.network, sandbox.hosts.is_empty()) {
        (Network::Ports(_), false) => format!(
            "{} (named hosts {}: only their ports are enforced, any host on them is reachable)",
            grants.network,
            sandbox.hosts.join(", ")
        ),
        (network, _) => network.to_string(),
    }
    .into();
    value["sandbox_limits"] = limits(&grants.limits).into();
    value["sandbox_required"] = grants.required.into();
}

/// `memory 512 MiB`, `cpu_time 30s`, `processes 64`, `open_files 1024`: the limits set.
fn limits(limits: &Limits) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(bytes) = limits.memory {
        out.push(if bytes % (1 << 20) == 0 {
            format!("memory {} MiB", bytes >> 20)
        } else {
            format!("memory {bytes} bytes")
        });
    }
    if let Some(time) = limits.cpu_time {
        out.push(format!("cpu_time {}", secs(time)));
    }
    if let Some(n) = limits.processes {
        out.push(format!("processes {n}"));
    }
    if let Some(n) = limits.open_files {
        out.push(format!("open_files {n}"));
    }
    out
}

/// `30s`, `1.5s`.
fn secs(duration: Duration) -> String {
    format!("{}s", duration.as_secs_f64())
}

/// `url` without its userinfo, query and fragment: where tokens are put.
fn shown_url(url: &str) -> String {
    let cut = url.find(['?', '#']).map_or(url, |end| &url[..end]);
    match cut.split_once("://") {
        Some((scheme, rest)) => {
            let host_end = rest.find('/').unwrap_or(rest.len());
            let rest = match rest[..host_end].rfind('@') {
                Some(at) => &rest[at + 1..],
                None => rest,
            };
            format!("{scheme}://{rest}")
        }
        None => cut.to_string(),
    }
}

/// The order of `get`'s lines: what it is, where it was read, how it runs, how it is now.
const ORDER: &[&str] = &[
    "name",
    "transport",
    "command",
    "args",
    "cwd",
    "env",
    "url",
    "headers",
    "headers_helper",
    "target",
    "source",
    "dialect",
    "plugin",
    "trust",
    "enabled",
    "required",
    "lazy",
    "startup_timeout",
    "call_timeout",
    "probe_timeout",
    "sandbox",
    "sandbox_read",
    "sandbox_write",
    "sandbox_network",
    "sandbox_limits",
    "sandbox_required",
    "state",
    "protocol",
    "tools",
    "error",
    "warnings",
];

/// `text` with `url`'s query and userinfo, wherever they appear, replaced by `<redacted>`.
fn scrub(text: &str, url: &str) -> String {
    let without_fragment = url.split('#').next().unwrap_or_default();
    let query = without_fragment.split_once('?').map(|(_, q)| q);
    let userinfo = url
        .split_once("://")
        .and_then(|(_, rest)| rest[..rest.find('/').unwrap_or(rest.len())].rsplit_once('@'))
        .map(|(info, _)| info);
    let mut text = text.to_string();
    for secret in [query, userinfo].into_iter().flatten() {
        if !secret.is_empty() {
            text = text.replace(secret, "<redacted>");
        }
    }
    text
}

/// The object as `key: value` lines in [`ORDER`], lists joined with commas.
fn text(value: &Value) -> String {
    let mut lines = Vec::new();
    if let Some(object) = value.as_object() {
        let mut keys: Vec<&String> = object.keys().collect();
        keys.sort_by_key(|key| ORDER.iter().position(|k| k == key).unwrap_or(ORDER.len()));
        for key in keys {
            let field = &object[key];
            let shown = match field {
                Value::Null => continue,
                Value::String(text) => text.clone(),
                Value::Array(items) if items.is_empty() => "-".into(),
                Value::Array(items) => items
                    .iter()
                    .map(|i| i.as_str().map_or_else(|| i.to_string(), str::to_string))
                    .collect::<Vec<_>>()
                    .join(", "),
                other => other.to_string(),
            };
            lines.push(format!("{key}: {shown}"));
        }
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_shown_without_userinfo_query_or_fragment() {
        assert_eq!(
            shown_url("https://user:pw@api.example.com/mcp?key=s3cr3t#x"),
            "https://api.example.com/mcp"
        );
        assert_eq!(
            shown_url("http://127.0.0.1:9/mcp"),
            "http://127.0.0.1:9/mcp"
        );
        assert_eq!(shown_url("https://h/p/a@b"), "https://h/p/a@b");
    }

    #[test]
    fn errors_quoting_the_url_lose_its_query_and_userinfo() {
        let url = "https://u:pw@h/mcp?key=s3cr3t#f";
        assert_eq!(
            scrub(
                "error sending request for url (https://h/mcp?key=s3cr3t)",
                url
            ),
            "error sending request for url (https://h/mcp?<redacted>)"
        );
        assert_eq!(scrub("at u:pw@h", url), "at <redacted>@h");
        assert_eq!(scrub("plain", "https://h/mcp"), "plain");
    }
}
