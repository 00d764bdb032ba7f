//! Permission rules: allow / ask / deny entries matched against a tool's identity (glob,
//! Claude-style `mcp__github__*`) or one of its side-effect classes (`effect:mutate`).
//! Deny beats ask beats allow; a call no entry matches gets the policy's default (allow).
//!
//! An `mcp__<server>__<tool>` entry names a server and a tool, not a string: it is matched
//! against the tool's server and raw name, so it still holds when the exposed name got a hash
//! suffix (a collision, a long name), and `mcp__docs__*` never reaches a server named
//! `docs__admin`.

use std::fmt;

use crate::catalog::Tool;
use crate::catalog::filter::Glob;
use crate::catalog::naming::sanitize;
use crate::config::PolicyRules;

use super::PolicyError;
use super::effects::{SideEffect, SideEffects};

/// What a rule entry does when it matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Action {
    /// Let the call through.
    Allow,
    /// Ask the harness's approver first.
    Ask,
    /// Refuse the call.
    Deny,
}

impl Action {
    /// The config word: `allow`, `ask`, `deny`.
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Allow => "allow",
            Action::Ask => "ask",
            Action::Deny => "deny",
        }
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The outcome of a policy check, naming the entry that decided it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// The call may go ahead.
    Allow,
    /// The call needs approval because of `rule`.
    Ask {
        /// The entry that matched, as written (`effect:mutate`), or `default`.
        rule: String,
    },
    /// The call is refused because of `rule`.
    Deny {
        /// The entry that matched, as written (`mcp__github__delete_*`), or `default`.
        rule: String,
    },
}

/// What a rule entry matches.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Matcher {
    /// A glob over the exposed name: `*`, a local tool's name, `mcp__docs*`.
    Name(Glob),
    /// `mcp__<server>__<tool>`: the entry as an exposed-name glob, and every way to cut it at a
    /// `__` into a server glob and a tool glob (a server name may itself contain `__`).
    Identity {
        exposed: Glob,
        splits: Vec<(Glob, Glob)>,
    },
    Effect(SideEffect),
}

impl Matcher {
    fn name(text: &str) -> Self {
        let Some(rest) = text.strip_prefix(MCP_PREFIX) else {
            return Matcher::Name(Glob::new(text));
        };
        let splits: Vec<(Glob, Glob)> = rest
            .match_indices("__")
            .map(|(at, _)| (Glob::new(&rest[..at]), Glob::new(&rest[at + 2..])))
            .filter(|(server, _)| !server.as_str().is_empty())
            .collect();
        if splits.is_empty() {
            // `mcp__docs*` names no tool part: it stays a glob over the exposed name.
            return Matcher::Name(Glob::new(text));
        }
        Matcher::Identity {
            exposed: Glob::new(text),
            splits,
        }
    }
}

/// The namespace prefix of MCP tools' exposed names.
const MCP_PREFIX: &str = "mcp__";

/// A glob against a name as the server spells it or as it appears in the exposed name.
fn either(glob: &Glob, name: &str) -> bool {
    glob.matches(name) || glob.matches(&sanitize(name))
}

/// One parsed rule entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    text: String,
    matcher: Matcher,
}

impl Rule {
    /// Parses an entry: a tool-name glob, or `effect:<class>`.
    pub fn parse(entry: &str) -> Result<Self, PolicyError> {
        let text = entry.trim();
        if text.is_empty() {
            return Err(PolicyError::EmptyRule);
        }
        let matcher = match text.strip_prefix("effect:") {
            Some(class) => Matcher::Effect(class.parse()?),
            None => Matcher::name(text),
        };
        Ok(Rule {
            text: text.to_string(),
            matcher,
        })
    }

    /// The entry as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Does it match a tool exposed as `name` with `effects`? Knowing only the name, an
    /// `mcp__server__tool` entry is a glob over it; [`Rule::matches_tool`] knows better.
    pub fn matches(&self, name: &str, effects: SideEffects) -> bool {
        match &self.matcher {
            Matcher::Name(glob) | Matcher::Identity { exposed: glob, .. } => glob.matches(name),
            Matcher::Effect(effect) => effects.contains(*effect),
        }
    }

    /// Does it match `tool` with `effects`? An `mcp__server__tool` entry matches an MCP tool by
    /// its server and raw name (or, written without a wildcard, by its exact exposed name, hash
    /// suffix included); any other name entry matches the exposed name or, for an MCP tool, the
    /// name it has when nothing collides.
    pub fn matches_tool(&self, tool: &Tool, effects: SideEffects) -> bool {
        // A local tool is exposed under its own name; an MCP tool's name adds the namespace.
        let mcp = tool.name != tool.raw_name;
        match &self.matcher {
            Matcher::Effect(effect) => effects.contains(*effect),
            Matcher::Name(glob) => {
                glob.matches(&tool.name)
                    || (mcp
                        && glob.matches(&crate::catalog::naming::base_name(
                            &tool.server,
                            &tool.raw_name,
                        )))
            }
            Matcher::Identity { exposed, splits } => {
                if !mcp {
                    return exposed.matches(&tool.name);
                }
                (exposed.is_literal() && exposed.matches(&tool.name))
                    || splits.iter().any(|(server, raw)| {
                        either(server, &tool.server) && either(raw, &tool.raw_name)
                    })
            }
        }
    }
}

/// A set of permission rules. [`Policy::default`] allows everything.
#[derive(Debug, Clone)]
pub struct Policy {
    allow: Vec<Rule>,
    ask: Vec<Rule>,
    deny: Vec<Rule>,
    default: Action,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            allow: Vec::new(),
            ask: Vec::new(),
            deny: Vec::new(),
            default: Action::Allow,
        }
    }
}

impl Policy {
    /// A policy with no rules: everything is allowed.
    pub fn allow_all() -> Self {
        Self::default()
    }

    /// Compiles the `[policy]` rules of a config; a bad entry is an error naming it.
    pub fn from_rules(rules: &PolicyRules) -> Result<Self, PolicyError> {
        let mut policy = Policy::default();
        policy.extend(rules)?;
        Ok(policy)
    }

    /// Adds every entry of `rules` (config rules, or more a harness wants).
    pub fn extend(&mut self, rules: &PolicyRules) -> Result<(), PolicyError> {
        for (action, entries) in [
            (Action::Allow, &rules.allow),
            (Action::Ask, &rules.ask),
            (Action::Deny, &rules.deny),
        ] {
            for entry in entries {
                self.add(action, entry)?;
            }
        }
        Ok(())
    }

    /// Adds one entry in code.
    pub fn add(&mut self, action: Action, entry: &str) -> Result<(), PolicyError> {
        let rule = Rule::parse(entry).map_err(|e| PolicyError::Rule {
            action,
            entry: entry.to_string(),
            source: Box::new(e),
        })?;
        match action {
            Action::Allow => self.allow.push(rule),
            Action::Ask => self.ask.push(rule),
            Action::Deny => self.deny.push(rule),
        }
        Ok(())
    }

    /// Builder-style [`Policy::add`].
    pub fn with(mut self, action: Action, entry: &str) -> Result<Self, PolicyError> {
        self.add(action, entry)?;
        Ok(self)
    }

    /// Builder-style: what a call that no entry matches gets (`Allow` unless changed; a harness
    /// that wants ask-by-default sets `Ask` and lists what it allows).
    pub fn with_default(mut self, action: Action) -> Self {
        self.default = action;
        self
    }

    /// True when there is no rule and the default is allow: every check is a no-op.
    pub fn is_allow_all(&self) -> bool {
        self.allow.is_empty()
            && self.ask.is_empty()
            && self.deny.is_empty()
            && self.default == Action::Allow
    }

    /// Decides on a call to the tool exposed as `name` with `effects`: deny > ask > allow >
    /// default. Knowing the [`Tool`], [`Policy::decide_tool`] matches its identity.
    pub fn decide(&self, name: &str, effects: SideEffects) -> Decision {
        self.decide_by(|rule| rule.matches(name, effects))
    }

    /// Decides on a call to `tool` with `effects`, matching entries against its server and raw
    /// name ([`Rule::matches_tool`]): deny > ask > allow > default.
    pub fn decide_tool(&self, tool: &Tool, effects: SideEffects) -> Decision {
        self.decide_by(|rule| rule.matches_tool(tool, effects))
    }

    fn decide_by(&self, matches: impl Fn(&Rule) -> bool) -> Decision {
        let first = |rules: &[Rule]| {
            rules
                .iter()
                .find(|r| matches(r))
                .map(|r| r.as_str().to_string())
        };
        if let Some(rule) = first(&self.deny) {
            return Decision::Deny { rule };
        }
        if let Some(rule) = first(&self.ask) {
            return Decision::Ask { rule };
        }
        if first(&self.allow).is_some() {
            return Decision::Allow;
        }
        let rule = "default".to_string();
        match self.default {
            Action::Allow => Decision::Allow,
            Action::Ask => Decision::Ask { rule },
            Action::Deny => Decision::Deny { rule },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(allow: &[&str], ask: &[&str], deny: &[&str]) -> Policy {
        let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let rules = PolicyRules {
            allow: strings(allow),
            ask: strings(ask),
            deny: strings(deny),
        };
        Policy::from_rules(&rules).unwrap_or_else(|e| panic!("{e}"))
    }

    fn fx(names: &[&str]) -> SideEffects {
        SideEffects::parse(names).unwrap_or_default()
    }

    #[test]
    fn no_rules_allow_everything() {
        let policy = Policy::default();
        assert!(policy.is_allow_all());
        assert_eq!(
            policy.decide("mcp__fs__delete", fx(&["destructive"])),
            Decision::Allow
        );
    }

    #[test]
    fn deny_beats_ask_beats_allow() {
        let policy = rules(
            &["mcp__github__*"],
            &["effect:mutate"],
            &["mcp__github__delete_*"],
        );
        assert_eq!(
            policy.decide("mcp__github__delete_repo", fx(&["mutate"])),
            Decision::Deny {
                rule: "mcp__github__delete_*".into()
            }
        );
        assert_eq!(
            policy.decide("mcp__github__create_issue", fx(&["mutate", "network"])),
            Decision::Ask {
                rule: "effect:mutate".into()
            }
        );
        assert_eq!(
            policy.decide("mcp__github__get_issue", fx(&["read", "network"])),
            Decision::Allow
        );
        assert_eq!(
            policy.decide("mcp__fs__read_file", fx(&["read"])),
            Decision::Allow
        );
    }

    #[test]
    fn effect_entries_match_classes() {
        let policy = rules(&[], &["effect:network"], &["effect:destructive"]);
        assert_eq!(
            policy.decide("t", fx(&["mutate", "destructive", "network"])),
            Decision::Deny {
                rule: "effect:destructive".into()
            }
        );
        assert_eq!(
            policy.decide("t", fx(&["read", "network"])),
            Decision::Ask {
                rule: "effect:network".into()
            }
        );
        assert_eq!(policy.decide("t", fx(&["read"])), Decision::Allow);
    }

    #[test]
    fn the_first_matching_entry_is_named() {
        let policy = rules(&[], &[], &["mcp__x__*", "*"]);
        assert_eq!(
            policy.decide("mcp__x__a", SideEffects::NONE),
            Decision::Deny {
                rule: "mcp__x__*".into()
            }
        );
        assert_eq!(
            policy.decide("other", SideEffects::NONE),
            Decision::Deny { rule: "*".into() }
        );
    }

    #[test]
    fn ask_by_default_lets_allow_entries_through() {
        let policy = Policy::default()
            .with_default(Action::Ask)
            .with(Action::Allow, "effect:read")
            .unwrap_or_default();
        assert!(!policy.is_allow_all());
        assert_eq!(policy.decide("a", fx(&["read"])), Decision::Allow);
        assert_eq!(
            policy.decide("a", fx(&["mutate"])),
            Decision::Ask {
                rule: "default".into()
            }
        );
    }

    #[test]
    fn bad_entries_are_errors_naming_them() {
        let rules = PolicyRules {
            deny: vec!["effect:explode".into()],
            ..PolicyRules::default()
        };
        let text = Policy::from_rules(&rules)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(text.contains("deny"), "{text}");
        assert!(text.contains("effect:explode"), "{text}");
        assert!(matches!(Rule::parse("  "), Err(PolicyError::EmptyRule)));
        assert!(Rule::parse("effect:READ").is_ok());
    }

    /// An MCP tool of `server` called `raw`, exposed as `exposed`.
    fn mcp_tool(server: &str, raw: &str, exposed: &str) -> Tool {
        let mut tool = Tool::local(exposed, serde_json::json!({"type": "object"}));
        tool.server = server.to_string();
        tool.raw_name = raw.to_string();
        tool
    }

    #[test]
    fn a_plain_name_entry_still_matches_when_the_exposed_name_got_a_hash() {
        let policy = rules(&[], &[], &["mcp__fs__write_file"]);
        let hashed = mcp_tool("fs", "write_file", "mcp__fs__write_file_3fa9c2");
        assert_eq!(
            policy.decide_tool(&hashed, SideEffects::NONE),
            Decision::Deny {
                rule: "mcp__fs__write_file".into()
            }
        );
        // The same tool name on another server is another tool.
        let other = mcp_tool("fs2", "write_file", "mcp__fs2__write_file");
        assert_eq!(
            policy.decide_tool(&other, SideEffects::NONE),
            Decision::Allow
        );
        // Globs over the tool part hold too, and the hashed name itself may be written.
        let glob = rules(&[], &[], &["mcp__fs__write_*"]);
        assert!(matches!(
            glob.decide_tool(&hashed, SideEffects::NONE),
            Decision::Deny { .. }
        ));
        let exact = rules(&[], &[], &["mcp__fs__write_file_3fa9c2"]);
        assert!(matches!(
            exact.decide_tool(&hashed, SideEffects::NONE),
            Decision::Deny { .. }
        ));
    }

    #[test]
    fn a_server_glob_does_not_reach_a_server_whose_name_extends_it_with_underscores() {
        let policy = rules(&[], &[], &["mcp__docs__*"]);
        let admin = mcp_tool("docs__admin", "read", "mcp__docs__admin__read");
        let docs = mcp_tool("docs", "read", "mcp__docs__read");
        assert_eq!(
            policy.decide_tool(&admin, SideEffects::NONE),
            Decision::Allow
        );
        assert!(matches!(
            policy.decide_tool(&docs, SideEffects::NONE),
            Decision::Deny { .. }
        ));
        // Naming the server with `__` in it reaches it, and a server wildcard reaches both.
        let named = rules(&[], &[], &["mcp__docs__admin__*"]);
        assert!(matches!(
            named.decide_tool(&admin, SideEffects::NONE),
            Decision::Deny { .. }
        ));
        let any = rules(&[], &[], &["mcp__*__read"]);
        for tool in [&admin, &docs] {
            assert!(matches!(
                any.decide_tool(tool, SideEffects::NONE),
                Decision::Deny { .. }
            ));
        }
    }

    #[test]
    fn identity_entries_read_server_names_as_written_or_as_exposed() {
        let tool = mcp_tool("my.docs", "get page", "mcp__my_docs__get_page");
        for entry in ["mcp__my.docs__get page", "mcp__my_docs__get_page"] {
            let policy = rules(&[], &[], &[entry]);
            assert!(
                matches!(
                    policy.decide_tool(&tool, SideEffects::NONE),
                    Decision::Deny { .. }
                ),
                "{entry}"
            );
        }
    }

    #[test]
    fn other_name_entries_match_the_exposed_or_unhashed_name_and_spare_local_tools() {
        let hashed = mcp_tool("github", "delete_repo", "mcp__github__delete_repo_77aa01");
        let prefix = rules(&[], &[], &["mcp__git*"]);
        assert!(matches!(
            prefix.decide_tool(&hashed, SideEffects::NONE),
            Decision::Deny { .. }
        ));
        let suffix = rules(&[], &[], &["*__delete_repo"]);
        assert!(matches!(
            suffix.decide_tool(&hashed, SideEffects::NONE),
            Decision::Deny { .. }
        ));
        // A local tool is not an MCP server's: `mcp__builtin__*` is not its name.
        let local = Tool::local("read_file", serde_json::json!({"type": "object"}));
        let mcp_only = rules(&[], &[], &["mcp__*__read_file"]);
        assert_eq!(
            mcp_only.decide_tool(&local, SideEffects::NONE),
            Decision::Allow
        );
        let plain = rules(&[], &[], &["read_*"]);
        assert!(matches!(
            plain.decide_tool(&local, SideEffects::NONE),
            Decision::Deny { .. }
        ));
    }
}
