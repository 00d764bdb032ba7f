//! Permission rules: allow / ask / deny entries matched against a tool's exposed name (glob,
//! Claude-style `mcp__github__*`) or one of its side-effect classes (`effect:mutate`).
//! Deny beats ask beats allow; a call no entry matches gets the policy's default (allow).

use std::fmt;

use crate::catalog::filter::Glob;
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
    Name(Glob),
    Effect(SideEffect),
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
            None => Matcher::Name(Glob::new(text)),
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

    /// Does it match a tool exposed as `name` with `effects`?
    pub fn matches(&self, name: &str, effects: SideEffects) -> bool {
        match &self.matcher {
            Matcher::Name(glob) => glob.matches(name),
            Matcher::Effect(effect) => effects.contains(*effect),
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
    /// default.
    pub fn decide(&self, name: &str, effects: SideEffects) -> Decision {
        let first = |rules: &[Rule]| {
            rules
                .iter()
                .find(|r| r.matches(name, effects))
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
}
