//! Permission policy: each tool's side effects (annotations + per-server overrides), allow /
//! ask / deny rules over tool names and side-effect classes, and the approval callback a
//! harness supplies for `ask`. Knows nothing of connections: the hub asks it before a call and
//! a refused call never reaches a server.

pub(crate) mod effects;
pub(crate) mod rules;

use std::fmt;
use std::future::Future;

use futures::future::BoxFuture;
use serde_json::Value;

use crate::catalog::Tool;

pub use effects::{EffectOverrides, SideEffect, SideEffects};
pub use rules::{Action, Decision, Policy, Rule};

/// A rule or an override that cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PolicyError {
    /// A side-effect class that does not exist.
    #[error("unknown side-effect class `{name}` (expected read, mutate, destructive or network)")]
    UnknownEffect {
        /// The name given.
        name: String,
    },
    /// An empty rule entry.
    #[error("empty rule entry (expected a tool-name glob or `effect:<class>`)")]
    EmptyRule,
    /// A rule entry that could not be parsed.
    #[error("policy {action} entry `{entry}`: {source}")]
    Rule {
        /// The list it was in.
        action: Action,
        /// The entry as written.
        entry: String,
        /// Why it was refused.
        #[source]
        source: Box<PolicyError>,
    },
    /// A `side_effects` override that could not be parsed.
    #[error("side_effects entry `{pattern}`: {source}")]
    Override {
        /// The tool name or glob.
        pattern: String,
        /// Why it was refused.
        #[source]
        source: Box<PolicyError>,
    },
}

/// What an approver is asked about: one call that matched an `ask` rule.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ApprovalRequest {
    /// The tool to be called.
    pub tool: Tool,
    /// The arguments it would get.
    pub arguments: Value,
    /// The rule entry that asked (`effect:mutate`, `mcp__github__*`, or `default`).
    pub rule: String,
    /// The tool's side effects.
    pub effects: SideEffects,
}

/// An approver's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Approval {
    /// Go ahead with this call.
    Approve,
    /// Refuse this call.
    Deny {
        /// Why, when the approver says (shown to the model).
        reason: Option<String>,
    },
}

/// The harness's approval callback for calls matching an `ask` rule (the CLI asks on the
/// terminal). Any `Fn(ApprovalRequest) -> impl Future<Output = Approval>` is one.
pub trait Approver: Send + Sync {
    /// Decides on one call.
    fn approve(&self, request: ApprovalRequest) -> BoxFuture<'_, Approval>;
}

impl<F, Fut> Approver for F
where
    F: Fn(ApprovalRequest) -> Fut + Send + Sync,
    Fut: Future<Output = Approval> + Send + 'static,
{
    fn approve(&self, request: ApprovalRequest) -> BoxFuture<'_, Approval> {
        Box::pin(self(request))
    }
}

/// Refuses every call that needs approval: for runs without a terminal or a human.
#[derive(Debug, Clone, Copy, Default)]
pub struct DenyAll;

impl Approver for DenyAll {
    fn approve(&self, _request: ApprovalRequest) -> BoxFuture<'_, Approval> {
        Box::pin(async {
            Approval::Deny {
                reason: Some("no one is there to approve it (non-interactive run)".into()),
            }
        })
    }
}

/// Approves every call that needs approval: what `--yes` means.
#[derive(Debug, Clone, Copy, Default)]
pub struct ApproveAll;

impl Approver for ApproveAll {
    fn approve(&self, _request: ApprovalRequest) -> BoxFuture<'_, Approval> {
        Box::pin(async { Approval::Approve })
    }
}

/// Why a call was refused by the policy: what the hub turns into `Error::Denied`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Refusal {
    /// The exposed tool name.
    pub tool: String,
    /// The rule entry that matched.
    pub rule: String,
    /// True when the rule asked and the approver said no; false for a `deny` rule.
    pub asked: bool,
    /// The approver's reason, if it gave one.
    pub reason: Option<String>,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.asked {
            write!(
                f,
                "call to `{}` needs approval (policy rule `{}`) and was not approved",
                self.tool, self.rule
            )?;
            if let Some(reason) = &self.reason {
                write!(f, ": {reason}")?;
            }
            Ok(())
        } else {
            write!(
                f,
                "call to `{}` is denied by policy rule `{}`",
                self.tool, self.rule
            )
        }
    }
}

impl std::error::Error for Refusal {}

impl Policy {
    /// Decides on a call and, for `ask`, consults `approver`: `Ok` means the call may go on.
    pub async fn enforce(
        &self,
        tool: &Tool,
        effects: SideEffects,
        arguments: &serde_json::Map<String, Value>,
        approver: &dyn Approver,
    ) -> Result<(), Refusal> {
        match self.decide_tool(tool, effects) {
            Decision::Allow => Ok(()),
            Decision::Deny { rule } => Err(Refusal {
                tool: tool.name.clone(),
                rule,
                asked: false,
                reason: None,
            }),
            Decision::Ask { rule } => {
                let request = ApprovalRequest {
                    tool: tool.clone(),
                    arguments: Value::Object(arguments.clone()),
                    rule: rule.clone(),
                    effects,
                };
                match approver.approve(request).await {
                    Approval::Approve => Ok(()),
                    Approval::Deny { reason } => Err(Refusal {
                        tool: tool.name.clone(),
                        rule,
                        asked: true,
                        reason,
                    }),
                }
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::catalog::ToolAnnotations;
    use serde_json::json;

    fn tool(name: &str) -> Tool {
        Tool::local(name, json!({"type": "object"}))
    }

    fn policy() -> Policy {
        Policy::default()
            .with(Action::Ask, "effect:mutate")
            .and_then(|p| p.with(Action::Deny, "mcp__gh__delete_*"))
            .unwrap_or_default()
    }

    #[tokio::test]
    async fn deny_never_asks_and_allow_never_asks() {
        let asked = Arc::new(AtomicUsize::new(0));
        let counter = asked.clone();
        let approver = move |_req: ApprovalRequest| {
            counter.fetch_add(1, Ordering::SeqCst);
            async { Approval::Approve }
        };
        let policy = policy();
        let refused = policy
            .enforce(
                &tool("mcp__gh__delete_repo"),
                SideEffects::only(SideEffect::Mutate),
                json!({}).as_object().unwrap(),
                &approver,
            )
            .await;
        let refusal = refused.err().unwrap_or_else(|| panic!("not refused"));
        assert!(!refusal.asked);
        assert_eq!(refusal.rule, "mcp__gh__delete_*");
        assert_eq!(
            refusal.to_string(),
            "call to `mcp__gh__delete_repo` is denied by policy rule `mcp__gh__delete_*`"
        );
        let read = policy
            .enforce(
                &tool("mcp__gh__get"),
                SideEffects::only(SideEffect::Read),
                json!({}).as_object().unwrap(),
                &approver,
            )
            .await;
        assert!(read.is_ok());
        assert_eq!(asked.load(Ordering::SeqCst), 0);
    }

    #[tokio::test]
    async fn ask_consults_the_approver_with_the_rule_and_arguments() {
        let seen = Arc::new(std::sync::Mutex::new(None));
        let store = seen.clone();
        let approver = move |req: ApprovalRequest| {
            let answer = if req.arguments["ok"] == json!(true) {
                Approval::Approve
            } else {
                Approval::Deny {
                    reason: Some("user said no".into()),
                }
            };
            if let Ok(mut s) = store.lock() {
                *s = Some((req.tool.name.clone(), req.rule.clone(), req.effects));
            }
            async move { answer }
        };
        let policy = policy();
        let annotations = ToolAnnotations {
            read_only_hint: Some(false),
            ..ToolAnnotations::default()
        };
        let t = tool("mcp__gh__create_issue").with_annotations(annotations);
        let effects = SideEffects::from_annotations(&t.annotations);
        assert!(
            policy
                .enforce(
                    &t,
                    effects,
                    json!({"ok": true}).as_object().unwrap(),
                    &approver
                )
                .await
                .is_ok()
        );
        let refusal = policy
            .enforce(
                &t,
                effects,
                json!({"ok": false}).as_object().unwrap(),
                &approver,
            )
            .await
            .err()
            .unwrap_or_else(|| panic!("not refused"));
        assert!(refusal.asked);
        assert_eq!(
            refusal.to_string(),
            "call to `mcp__gh__create_issue` needs approval (policy rule `effect:mutate`) \
             and was not approved: user said no"
        );
        let seen = seen.lock().map(|s| s.clone()).unwrap_or(None);
        assert_eq!(
            seen,
            Some((
                "mcp__gh__create_issue".to_string(),
                "effect:mutate".to_string(),
                effects
            ))
        );
    }

    #[tokio::test]
    async fn deny_all_and_approve_all() {
        let policy = policy();
        let t = tool("mcp__gh__create_issue");
        let effects = SideEffects::only(SideEffect::Mutate);
        let denied = policy
            .enforce(&t, effects, json!({}).as_object().unwrap(), &DenyAll)
            .await;
        assert!(matches!(denied, Err(Refusal { asked: true, .. })));
        let approved = policy
            .enforce(&t, effects, json!({}).as_object().unwrap(), &ApproveAll)
            .await;
        assert!(approved.is_ok());
    }
}
