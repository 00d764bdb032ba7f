//! Scoping: which servers' tools a given stage and agent of a harness may see.
//!
//! A server lists the `stages` and `agents` it is for; an absent list means all of them. A
//! [`Scope`] names the current stage and agent; an absent one means "do not filter on it".
//! The two dimensions are AND-combined. Knows nothing of connections or tools' contents.

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
