//! Scoping: which servers' tools a given stage and agent of a harness may see.
//!
//! A server lists the `stages` and `agents` it is for; an absent list means all of them. A
//! [`Scope`] names the current stage and agent; an absent one means "do not filter on it".
//! The two dimensions are AND-combined. A scope given to a call refuses a tool outside it
//! (the hub asks [`Scope::refuses`]), so a scope is a boundary, not only a listing filter.
//! Knows nothing of connections or tools' contents.

use std::fmt;
use std::str::FromStr;

use crate::config::ServerOptions;

/// The stage and agent a tool list is requested for: `tools_for(Scope { stage, agent })`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Scope {
    /// The harness's current stage (`plan`, `build`, ...); `None` does not filter on stages.
    pub stage: Option<String>,
    /// The agent asking (`coder`, `reviewer`, ...); `None` does not filter on agents.
    pub agent: Option<String>,
}

impl Scope {
    /// A scope that filters on nothing: every server's tools.
    pub fn all() -> Self {
        Self::default()
    }

    /// A scope for `stage`, any agent.
    pub fn stage(stage: impl Into<String>) -> Self {
        Scope {
            stage: Some(stage.into()),
            agent: None,
        }
    }

    /// A scope for `agent`, any stage.
    pub fn agent(agent: impl Into<String>) -> Self {
        Scope {
            stage: None,
            agent: Some(agent.into()),
        }
    }

    /// Builder-style: set the stage.
    pub fn with_stage(mut self, stage: impl Into<String>) -> Self {
        self.stage = Some(stage.into());
        self
    }

    /// Builder-style: set the agent.
    pub fn with_agent(mut self, agent: impl Into<String>) -> Self {
        self.agent = Some(agent.into());
        self
    }

    /// Does a server declared for `stages` and `agents` (absent = all) belong to this scope?
    pub fn admits(&self, stages: Option<&[String]>, agents: Option<&[String]>) -> bool {
        dimension(self.stage.as_deref(), stages) && dimension(self.agent.as_deref(), agents)
    }

    /// [`Scope::admits`] for a server's options.
    pub fn admits_server(&self, options: &ServerOptions) -> bool {
        self.admits(options.stages.as_deref(), options.agents.as_deref())
    }
}

/// `STAGE/AGENT` with `*` for a dimension not filtered on: what `--scope` takes and shows.
impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}/{}",
            self.stage.as_deref().unwrap_or("*"),
            self.agent.as_deref().unwrap_or("*")
        )
    }
}

/// A scope that cannot be read from text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid scope `{0}`: expected STAGE/AGENT (`plan/coder`, `plan/*`, `*/coder`) or STAGE")]
pub struct ScopeParseError(String);

/// Reads `STAGE/AGENT`, `STAGE` alone, or either side empty or `*` for "any".
impl FromStr for Scope {
    type Err = ScopeParseError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let (stage, agent) = text.split_once('/').unwrap_or((text, ""));
        let part = |p: &str| -> Result<Option<String>, ScopeParseError> {
            let p = p.trim();
            if p.contains('/') || p.chars().any(char::is_control) {
                return Err(ScopeParseError(text.to_string()));
            }
            Ok((!p.is_empty() && p != "*").then(|| p.to_string()))
        };
        Ok(Scope {
            stage: part(stage)?,
            agent: part(agent)?,
        })
    }
}

impl Scope {
    /// Why a server declared for `options` is outside this scope, or `None` when it is inside:
    /// which dimension does not admit it and what the server is declared for.
    pub fn refuses(&self, options: &ServerOptions) -> Option<String> {
        let mut reasons = Vec::new();
        for (label, wanted, declared) in [
            ("stage", &self.stage, &options.stages),
            ("agent", &self.agent, &options.agents),
        ] {
            if !dimension(wanted.as_deref(), declared.as_deref()) {
                let list = declared.as_deref().unwrap_or_default().join(", ");
                reasons.push(format!(
                    "{label} `{}` is not among its {label}s [{list}]",
                    wanted.as_deref().unwrap_or_default()
                ));
            }
        }
        (!reasons.is_empty()).then(|| reasons.join(" and "))
    }
}

fn dimension(wanted: Option<&str>, declared: Option<&[String]>) -> bool {
    match (wanted, declared) {
        (None, _) | (_, None) => true,
        (Some(w), Some(list)) => list.iter().any(|d| d == w),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    /// (scope stage, scope agent, server stages, server agents, admitted)
    type Row<'a> = (
        Option<&'a str>,
        Option<&'a str>,
        Option<&'a [String]>,
        Option<&'a [String]>,
        bool,
    );

    #[test]
    fn truth_table() {
        let plan_build = list(&["plan", "build"]);
        let coder = list(&["coder"]);
        let empty: Vec<String> = Vec::new();
        let rows: [Row; 16] = [
            // Nothing declared: every scope sees it.
            (None, None, None, None, true),
            (Some("plan"), None, None, None, true),
            (None, Some("coder"), None, None, true),
            (Some("plan"), Some("coder"), None, None, true),
            // Stages declared.
            (Some("plan"), None, Some(&plan_build), None, true),
            (Some("review"), None, Some(&plan_build), None, false),
            (None, None, Some(&plan_build), None, true),
            (None, Some("coder"), Some(&plan_build), None, true),
            // Agents declared.
            (None, Some("coder"), None, Some(&coder), true),
            (None, Some("reviewer"), None, Some(&coder), false),
            // Both declared: AND.
            (
                Some("build"),
                Some("coder"),
                Some(&plan_build),
                Some(&coder),
                true,
            ),
            (
                Some("build"),
                Some("reviewer"),
                Some(&plan_build),
                Some(&coder),
                false,
            ),
            (
                Some("review"),
                Some("coder"),
                Some(&plan_build),
                Some(&coder),
                false,
            ),
            (None, None, Some(&plan_build), Some(&coder), true),
            // An empty list admits no named stage, but an unfiltered scope still sees it.
            (Some("plan"), None, Some(&empty), None, false),
            (None, None, Some(&empty), Some(&empty), true),
        ];
        for (stage, agent, stages, agents, expected) in rows {
            let scope = Scope {
                stage: stage.map(str::to_string),
                agent: agent.map(str::to_string),
            };
            assert_eq!(
                scope.admits(stages, agents),
                expected,
                "{scope:?} vs stages {stages:?} agents {agents:?}"
            );
        }
    }

    #[test]
    fn names_are_exact_and_case_sensitive() {
        let stages = list(&["plan"]);
        assert!(!Scope::stage("Plan").admits(Some(&stages), None));
        assert!(!Scope::stage("pla").admits(Some(&stages), None));
    }

    #[test]
    fn reads_and_shows_stage_slash_agent() {
        let parse = |t: &str| t.parse::<Scope>();
        assert_eq!(
            parse("plan/coder"),
            Ok(Scope::stage("plan").with_agent("coder"))
        );
        assert_eq!(parse("plan"), Ok(Scope::stage("plan")));
        assert_eq!(parse("plan/*"), Ok(Scope::stage("plan")));
        assert_eq!(parse("*/coder"), Ok(Scope::agent("coder")));
        assert_eq!(parse("/coder"), Ok(Scope::agent("coder")));
        assert_eq!(parse("*"), Ok(Scope::all()));
        assert!(parse("a/b/c").is_err());
        assert_eq!(
            Scope::stage("plan").with_agent("coder").to_string(),
            "plan/coder"
        );
        assert_eq!(Scope::agent("coder").to_string(), "*/coder");
    }

    #[test]
    fn a_refusal_names_the_dimension_and_what_the_server_is_for() {
        let options = ServerOptions {
            stages: Some(list(&["build", "ship"])),
            agents: Some(list(&["coder"])),
            ..ServerOptions::default()
        };
        assert_eq!(Scope::stage("build").refuses(&options), None);
        assert_eq!(
            Scope::stage("plan")
                .with_agent("reviewer")
                .refuses(&options),
            Some(
                "stage `plan` is not among its stages [build, ship] and agent `reviewer` is \
                 not among its agents [coder]"
                    .into()
            )
        );
    }

    #[test]
    fn reads_server_options() {
        let mut options = ServerOptions::default();
        assert!(Scope::stage("x").with_agent("y").admits_server(&options));
        options.stages = Some(list(&["plan"]));
        options.agents = Some(list(&["coder"]));
        assert!(
            Scope::stage("plan")
                .with_agent("coder")
                .admits_server(&options)
        );
        assert!(
            !Scope::stage("plan")
                .with_agent("other")
                .admits_server(&options)
        );
        assert!(Scope::all().admits_server(&options));
        assert!(Scope::agent("coder").admits_server(&options));
    }
}
