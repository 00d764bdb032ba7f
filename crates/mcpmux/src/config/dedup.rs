//! Which servers are the same server: plugin definitions that repeat one the person already has.
//!
//! Servers a person configured by hand are never merged: two entries with one command and
//! different `env` (`github-work`, `github-personal`) are two accounts, and both run. Only
//! definitions that arrive from plugins or imported tool configs ([`Origin::Plugin`]) are
//! dropped when their signature (transport, command, args, url — not env or headers) matches a
//! hand-written server, else an earlier plugin one. Knows nothing of connections.

use std::collections::HashMap;

use super::ServerSpec;

/// Splits `specs` into the servers to start, in their order, and the plugin duplicates left
/// out, each with the name of the server that kept its signature.
pub fn deduplicate(specs: Vec<ServerSpec>) -> (Vec<ServerSpec>, Vec<(ServerSpec, String)>) {
    // Hand-written servers claim their signatures first, wherever they are in the list, so a
    // plugin loaded before the person's own entry still yields to it.
    let mut kept_by: HashMap<String, String> = HashMap::new();
    for spec in &specs {
        if spec.enabled && spec.origin.is_hand_written() {
            kept_by
                .entry(spec.signature())
                .or_insert_with(|| spec.name.clone());
        }
    }
    let mut unique = Vec::with_capacity(specs.len());
    let mut duplicates = Vec::new();
    for spec in specs {
        if !spec.enabled || spec.origin.is_hand_written() {
            unique.push(spec);
            continue;
        }
        match kept_by.get(&spec.signature()) {
            Some(kept) => {
                tracing::info!(server = %spec.name, kept = %kept, source = ?spec.origin, "plugin server repeats a configured one; starting it once");
                duplicates.push((spec, kept.clone()));
            }
            None => {
                kept_by.insert(spec.signature(), spec.name.clone());
                unique.push(spec);
            }
        }
    }
    (unique, duplicates)
}

#[cfg(test)]
mod tests {
    use super::super::Origin;
    use super::*;

    fn plugin(spec: ServerSpec, source: &str) -> ServerSpec {
        let mut spec = spec;
        spec.origin = Origin::Plugin {
            source: source.to_owned(),
        };
        spec
    }

    fn names(specs: &[ServerSpec]) -> Vec<&str> {
        specs.iter().map(|s| s.name.as_str()).collect()
    }

    #[test]
    fn hand_written_servers_with_one_command_and_different_env_are_all_started() {
        let work = ServerSpec::stdio("github-work", "npx", ["server-github"])
            .with_env("GITHUB_TOKEN", "w");
        let personal = ServerSpec::stdio("github-personal", "npx", ["server-github"])
            .with_env("GITHUB_TOKEN", "p");
        let same = ServerSpec::stdio("github-again", "npx", ["server-github"]);
        let (unique, duplicates) = deduplicate(vec![work, personal, same]);
        assert_eq!(
            names(&unique),
            ["github-work", "github-personal", "github-again"]
        );
        assert!(duplicates.is_empty());
    }

    #[test]
    fn a_plugin_server_repeating_a_hand_written_one_is_dropped_even_when_loaded_first() {
        let from_plugin = plugin(
            ServerSpec::stdio("gh-plugin", "npx", ["server-github"]).with_env("T", "other"),
            "plugin github",
        );
        let mine = ServerSpec::stdio("github", "npx", ["server-github"]);
        let (unique, duplicates) = deduplicate(vec![from_plugin, mine]);
        assert_eq!(names(&unique), ["github"]);
        assert_eq!(duplicates.len(), 1);
        assert_eq!(duplicates[0].0.name, "gh-plugin");
        assert_eq!(duplicates[0].1, "github");
    }

    #[test]
    fn among_plugin_servers_the_first_loaded_wins_and_urls_compare_without_headers() {
        let a = plugin(ServerSpec::http("a", "https://x.test/mcp"), "one");
        let mut b = plugin(ServerSpec::http("b", "https://x.test/mcp"), "two");
        if let super::super::TransportSpec::Http { headers, .. } = &mut b.transport {
            headers.insert("Authorization".into(), "Bearer other".into());
        }
        let c = plugin(ServerSpec::http("c", "https://y.test/mcp"), "two");
        let (unique, duplicates) = deduplicate(vec![a, b, c]);
        assert_eq!(names(&unique), ["a", "c"]);
        assert_eq!(duplicates[0].1, "a");
    }

    #[test]
    fn disabled_servers_neither_keep_a_signature_nor_are_dropped() {
        let mut off = ServerSpec::stdio("off", "srv", ["x"]);
        off.enabled = false;
        let p = plugin(ServerSpec::stdio("p", "srv", ["x"]), "plugin");
        let (unique, duplicates) = deduplicate(vec![off, p]);
        assert_eq!(names(&unique), ["off", "p"]);
        assert!(duplicates.is_empty());
    }
}
