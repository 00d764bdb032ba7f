//! Side effects of a tool: what calling it may do to the world.
//!
//! Derived from the server's annotations, pessimistically when it says nothing (an MCP tool
//! without hints is assumed to mutate and reach the network), and overridden per tool by the
//! server's `side_effects` option (raw or exposed name, glob allowed).

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use crate::catalog::filter::Glob;
use crate::catalog::{Tool, ToolAnnotations};

use super::PolicyError;

/// One class of side effect, as written in config (`read`, `mutate`, `destructive`, `network`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SideEffect {
    /// Only reads its environment.
    Read,
    /// May change its environment.
    Mutate,
    /// May destroy or overwrite data.
    Destructive,
    /// Talks to the open world (the network, third parties).
    Network,
}

impl SideEffect {
    /// Every class, in display order.
    pub const ALL: [SideEffect; 4] = [
        SideEffect::Read,
        SideEffect::Mutate,
        SideEffect::Destructive,
        SideEffect::Network,
    ];

    /// The name used in config and rules.
    pub fn as_str(self) -> &'static str {
        match self {
            SideEffect::Read => "read",
            SideEffect::Mutate => "mutate",
            SideEffect::Destructive => "destructive",
            SideEffect::Network => "network",
        }
    }

    fn bit(self) -> u8 {
        match self {
            SideEffect::Read => 1,
            SideEffect::Mutate => 2,
            SideEffect::Destructive => 4,
            SideEffect::Network => 8,
        }
    }
}

impl fmt::Display for SideEffect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for SideEffect {
    type Err = PolicyError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        SideEffect::ALL
            .into_iter()
            .find(|e| e.as_str().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| PolicyError::UnknownEffect {
                name: s.to_string(),
            })
    }
}

/// A set of [`SideEffect`]s.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct SideEffects(u8);

impl SideEffects {
    /// No side effect at all.
    pub const NONE: SideEffects = SideEffects(0);

    /// The set holding one class.
    pub fn only(effect: SideEffect) -> Self {
        SideEffects(effect.bit())
    }

    /// Is `effect` in the set?
    pub fn contains(self, effect: SideEffect) -> bool {
        self.0 & effect.bit() != 0
    }

    /// Adds `effect`.
    pub fn insert(&mut self, effect: SideEffect) {
        self.0 |= effect.bit();
    }

    /// Removes `effect`.
    pub fn remove(&mut self, effect: SideEffect) {
        self.0 &= !effect.bit();
    }

    /// Builder-style: the set with `effect` added.
    pub fn with(mut self, effect: SideEffect) -> Self {
        self.insert(effect);
        self
    }

    /// True when empty.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The classes in the set, in display order.
    pub fn iter(self) -> impl Iterator<Item = SideEffect> {
        SideEffect::ALL
            .into_iter()
            .filter(move |e| self.contains(*e))
    }

    /// What the server's annotations say, with the pessimistic defaults for MCP tools:
    /// `readOnlyHint: true` → read; otherwise mutate (plus destructive when
    /// `destructiveHint: true`); network unless `openWorldHint: false` — a read-only tool
    /// reaches the network only when `openWorldHint: true`.
    pub fn from_annotations(annotations: &ToolAnnotations) -> Self {
        let mut set = SideEffects::NONE;
        if annotations.read_only_hint == Some(true) {
            set.insert(SideEffect::Read);
            if annotations.open_world_hint == Some(true) {
                set.insert(SideEffect::Network);
            }
            return set;
        }
        set.insert(SideEffect::Mutate);
        if annotations.destructive_hint == Some(true) {
            set.insert(SideEffect::Destructive);
        }
        if annotations.open_world_hint != Some(false) {
            set.insert(SideEffect::Network);
        }
        set
    }

    /// Parses config class names (`["read", "network"]`).
    pub fn parse<S: AsRef<str>>(names: &[S]) -> Result<Self, PolicyError> {
        names.iter().try_fold(SideEffects::NONE, |set, name| {
            Ok(set.with(name.as_ref().parse()?))
        })
    }
}

impl FromIterator<SideEffect> for SideEffects {
    fn from_iter<I: IntoIterator<Item = SideEffect>>(iter: I) -> Self {
        iter.into_iter().fold(SideEffects::NONE, SideEffects::with)
    }
}

impl fmt::Display for SideEffects {
    /// `read+network`, or `none`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_empty() {
            return f.write_str("none");
        }
        let names: Vec<&str> = self.iter().map(SideEffect::as_str).collect();
        f.write_str(&names.join("+"))
    }
}

impl fmt::Debug for SideEffects {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SideEffects({self})")
    }
}

impl serde::Serialize for SideEffects {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter().map(SideEffect::as_str))
    }
}

/// A server's `side_effects` option, compiled: name or glob → classes.
#[derive(Debug, Clone, Default)]
pub struct EffectOverrides {
    entries: Vec<(Glob, SideEffects)>,
}

impl EffectOverrides {
    /// Compiles a server's `side_effects` map; an unknown class name is an error.
    pub fn new(map: &BTreeMap<String, Vec<String>>) -> Result<Self, PolicyError> {
        let mut entries = Vec::with_capacity(map.len());
        for (pattern, classes) in map {
            let effects = SideEffects::parse(classes).map_err(|e| PolicyError::Override {
                pattern: pattern.clone(),
                source: Box::new(e),
            })?;
            entries.push((Glob::new(pattern), effects));
        }
        // The most specific entry wins: exact names first, then longer patterns.
        entries.sort_by(|(a, _), (b, _)| {
            b.is_literal()
                .cmp(&a.is_literal())
                .then(b.as_str().len().cmp(&a.as_str().len()))
                .then(a.as_str().cmp(b.as_str()))
        });
        Ok(EffectOverrides { entries })
    }

    /// True when no override is configured.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The override for a tool known by `raw` and `exposed` names, if one matches.
    pub fn lookup(&self, raw: &str, exposed: &str) -> Option<SideEffects> {
        self.entries
            .iter()
            .find(|(g, _)| g.matches(raw) || g.matches(exposed))
            .map(|(_, e)| *e)
    }

    /// A tool's side effects: the matching override, else what its annotations say.
    pub fn effects_of(&self, tool: &Tool) -> SideEffects {
        self.lookup(&tool.raw_name, &tool.name)
            .unwrap_or_else(|| SideEffects::from_annotations(&tool.annotations))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hints(
        read_only: Option<bool>,
        destructive: Option<bool>,
        open_world: Option<bool>,
    ) -> ToolAnnotations {
        ToolAnnotations {
            read_only_hint: read_only,
            destructive_hint: destructive,
            idempotent_hint: None,
            open_world_hint: open_world,
        }
    }

    fn effects(a: ToolAnnotations) -> String {
        SideEffects::from_annotations(&a).to_string()
    }

    #[test]
    fn derivation_from_annotations() {
        // No hints at all: pessimistic.
        assert_eq!(effects(hints(None, None, None)), "mutate+network");
        // Read-only tools stay local unless they say they reach the open world.
        assert_eq!(effects(hints(Some(true), None, None)), "read");
        assert_eq!(effects(hints(Some(true), None, Some(true))), "read+network");
        assert_eq!(effects(hints(Some(true), None, Some(false))), "read");
        // destructiveHint only means something for tools that are not read-only.
        assert_eq!(effects(hints(Some(true), Some(true), None)), "read");
        assert_eq!(
            effects(hints(None, Some(true), None)),
            "mutate+destructive+network"
        );
        assert_eq!(
            effects(hints(Some(false), Some(true), Some(false))),
            "mutate+destructive"
        );
        assert_eq!(
            effects(hints(Some(false), Some(false), None)),
            "mutate+network"
        );
        assert_eq!(effects(hints(None, None, Some(false))), "mutate");
        assert_eq!(effects(hints(None, None, Some(true))), "mutate+network");
    }

    #[test]
    fn set_operations_and_parsing() {
        let mut set = SideEffects::parse(&["network", "READ"]).unwrap_or_default();
        assert_eq!(set.to_string(), "read+network");
        assert!(set.contains(SideEffect::Network));
        set.remove(SideEffect::Network);
        assert_eq!(set, SideEffects::only(SideEffect::Read));
        assert_eq!(SideEffects::NONE.to_string(), "none");
        let err = SideEffects::parse(&["read", "explode"]);
        assert!(
            matches!(&err, Err(PolicyError::UnknownEffect { name }) if name == "explode"),
            "{err:?}"
        );
        let collected: SideEffects = [SideEffect::Mutate, SideEffect::Read].into_iter().collect();
        assert_eq!(collected.to_string(), "read+mutate");
        assert_eq!(
            serde_json::to_value(collected).ok(),
            Some(serde_json::json!(["read", "mutate"]))
        );
    }

    fn map(entries: &[(&str, &[&str])]) -> BTreeMap<String, Vec<String>> {
        entries
            .iter()
            .map(|(k, v)| (k.to_string(), v.iter().map(|s| s.to_string()).collect()))
            .collect()
    }

    #[test]
    fn overrides_match_raw_or_exposed_and_the_most_specific_wins() {
        let overrides = EffectOverrides::new(&map(&[
            ("*", &["network"]),
            ("read_*", &["read"]),
            ("read_secret", &["read", "network"]),
            ("mcp__fs__write_*", &["mutate", "destructive"]),
        ]))
        .unwrap_or_default();
        let e = |raw: &str, exposed: &str| overrides.lookup(raw, exposed).map(|e| e.to_string());
        assert_eq!(
            e("read_file", "mcp__fs__read_file").as_deref(),
            Some("read")
        );
        assert_eq!(
            e("read_secret", "mcp__fs__read_secret").as_deref(),
            Some("read+network")
        );
        assert_eq!(
            e("write_file", "mcp__fs__write_file").as_deref(),
            Some("mutate+destructive")
        );
        assert_eq!(e("other", "mcp__fs__other").as_deref(), Some("network"));

        let none = EffectOverrides::default();
        assert!(none.is_empty());
        assert_eq!(none.lookup("x", "y"), None);
    }

    #[test]
    fn an_unknown_class_in_an_override_names_the_entry() {
        let err = EffectOverrides::new(&map(&[("write_*", &["writes"])]));
        let text = err.map(|_| String::new()).unwrap_or_else(|e| e.to_string());
        assert!(text.contains("write_*"), "{text}");
        assert!(text.contains("writes"), "{text}");
    }
}
