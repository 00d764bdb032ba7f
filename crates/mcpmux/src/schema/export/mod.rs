//! Provider export: the tool set rendered for a model provider's API.
//!
//! - Anthropic Messages: `{name, description, input_schema}`; the schema as the server gave it,
//!   with a root `$ref`, `allOf`, `anyOf` or `oneOf` folded into one object (Anthropic refuses
//!   them at the top level).
//! - OpenAI chat function tools: `{"type": "function", "function": {name, description,
//!   parameters}}`, descriptions cut to 1024 characters, arrays given `items`.
//! - OpenAI strict: the same with `strict: true` and the schema rewritten to the documented
//!   Structured Outputs subset: every property required (optional ones made nullable), every
//!   object `additionalProperties: false`, only supported keywords and formats, `$ref` only to
//!   `#` or `#/$defs/…`. A schema that cannot be expressed that way (a free-form map, a value of
//!   any type) is exported non-strict, with a note saying why.
//! - Gemini function declarations: the OpenAPI subset Gemini accepts: `$ref` inlined (recursion
//!   cut to a permissive object at a depth limit), `allOf` merged, `oneOf` as `anyOf`, type
//!   arrays and `null` as `nullable`, non-string enums and `const` moved into the description,
//!   every other keyword removed; every schema has a `type` or an `anyOf`.
//!
//! Names are made to fit each provider's rule (`^[a-zA-Z0-9_-]{1,64}$`; Gemini: starts with a
//! letter or `_`, may contain `.` and `:`); a name that had to change gets a stable hash suffix
//! and the export maps it back. Knows nothing of servers: it renders [`Tool`] records.
//!
//! This module holds the entry point, the [`Export`] type and the names; each provider's
//! rendering is in its own file (`anthropic`, `openai`, `gemini`) over the shared schema walks
//! of `refs`.

mod anthropic;
mod gemini;
mod openai;
pub(super) mod refs;

use std::collections::HashSet;
use std::fmt;
use std::str::FromStr;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::catalog::Tool;
use crate::catalog::naming::{self, NameRule};

/// A model provider's tool format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ExportFormat {
    /// Anthropic Messages API tools.
    Anthropic,
    /// OpenAI chat completions function tools.
    OpenAi,
    /// OpenAI function tools with `strict: true`.
    OpenAiStrict,
    /// Gemini function declarations.
    Gemini,
}

impl ExportFormat {
    /// Every provider format.
    pub const ALL: [ExportFormat; 4] = [
        ExportFormat::Anthropic,
        ExportFormat::OpenAi,
        ExportFormat::OpenAiStrict,
        ExportFormat::Gemini,
    ];

    /// The name used on the command line: `anthropic`, `openai`, `openai-strict`, `gemini`.
    pub fn as_str(self) -> &'static str {
        match self {
            ExportFormat::Anthropic => "anthropic",
            ExportFormat::OpenAi => "openai",
            ExportFormat::OpenAiStrict => "openai-strict",
            ExportFormat::Gemini => "gemini",
        }
    }
}

impl fmt::Display for ExportFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An unknown export format name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown format `{0}` (expected anthropic, openai, openai-strict or gemini)")]
pub struct UnknownExportFormat(pub String);

impl FromStr for ExportFormat {
    type Err = UnknownExportFormat;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ExportFormat::ALL
            .into_iter()
            .find(|p| p.as_str().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| UnknownExportFormat(s.to_string()))
    }
}

impl ExportFormat {
    /// The function-name rule of this provider.
    fn name_rule(self) -> NameRule {
        match self {
            ExportFormat::Gemini => NameRule::Gemini,
            ExportFormat::Anthropic | ExportFormat::OpenAi | ExportFormat::OpenAiStrict => {
                NameRule::AnthropicOpenAi
            }
        }
    }
}

/// One tool rendered for a provider.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExportedTool {
    /// The name the provider sees (and the model calls).
    pub name: String,
    /// The exposed name of the tool it stands for (what `Hub::call` takes).
    pub tool: String,
    /// The provider's tool definition.
    pub definition: Value,
    /// What had to change to fit the provider, in words.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// A tool set rendered for one provider.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Export {
    /// The format.
    pub provider: ExportFormat,
    /// One entry per tool, in the order given.
    pub tools: Vec<ExportedTool>,
    /// Tools left out because their input schema cannot be used (beyond
    /// the bounds `budget.rs` keeps), each with the reason: a model must not be offered them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unusable: Vec<UnusableTool>,
}

/// A tool left out of an export, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UnusableTool {
    /// The exposed tool name.
    pub tool: String,
    /// Why its schema cannot be used, naming the place.
    pub reason: String,
}

impl Export {
    /// The definitions as the provider's `tools` array (Gemini: the `functionDeclarations`).
    pub fn definitions(&self) -> Value {
        Value::Array(self.tools.iter().map(|t| t.definition.clone()).collect())
    }

    /// The exposed tool name a provider-side name stands for (to route the model's call).
    pub fn tool_name(&self, provider_name: &str) -> Option<&str> {
        self.tools
            .iter()
            .find(|t| t.name == provider_name)
            .map(|t| t.tool.as_str())
    }
}

/// Renders `tools` for `provider`. Never fails: what a provider cannot express is rewritten or
/// dropped, and said in the tool's notes; a tool whose schema cannot be used at all (a `$ref`
/// cycle, an exponential expansion) is left out and listed in [`Export::unusable`].
pub fn export(tools: &[Tool], provider: ExportFormat) -> Export {
    let mut used: HashSet<String> = HashSet::new();
    let mut unusable = Vec::new();
    let tools = tools
        .iter()
        .filter(|tool| {
            // Every walk below is recursive: only schemas within the bounds reach them.
            let reason = tool.unusable.clone().or_else(|| {
                super::budget::check(&tool.input_schema)
                    .err()
                    .map(|e| format!("its input schema cannot be used: {e}"))
            });
            match reason {
                Some(reason) => {
                    unusable.push(UnusableTool {
                        tool: tool.name.clone(),
                        reason,
                    });
                    false
                }
                None => true,
            }
        })
        .map(|tool| {
            let mut notes = Vec::new();
            let name = naming::fit_unique(&tool.name, provider.name_rule(), &mut used);
            if name != tool.name {
                notes.push(format!(
                    "name `{}` does not fit {provider}'s rules; exported as `{name}`",
                    tool.name
                ));
            }
            let definition = match provider {
                ExportFormat::Anthropic => anthropic::anthropic(tool, &name, &mut notes),
                ExportFormat::OpenAi => openai::openai(tool, &name, &mut notes),
                ExportFormat::OpenAiStrict => openai::openai_strict(tool, &name, &mut notes),
                ExportFormat::Gemini => gemini::gemini(tool, &name, &mut notes),
            };
            ExportedTool {
                name,
                tool: tool.name.clone(),
                definition,
                notes,
            }
        })
        .collect();
    Export {
        provider,
        tools,
        unusable,
    }
}

/// The tool's description for a provider: its description, else its title; none when blank.
fn description(tool: &Tool) -> Option<String> {
    tool.description
        .clone()
        .or_else(|| tool.title.clone())
        .filter(|d| !d.trim().is_empty())
}

/// Copies the `keys` `from` has into `to`.
fn copy(from: &Map<String, Value>, to: &mut Map<String, Value>, keys: &[&str]) {
    for key in keys {
        if let Some(v) = from.get(*key) {
            to.insert((*key).to_string(), v.clone());
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    /// Does `name` satisfy `provider`'s function-name rule?
    fn name_is_valid(name: &str, provider: ExportFormat) -> bool {
        naming::is_valid(name, provider.name_rule())
    }

    /// `name` made to fit `provider`'s rule: unchanged when it fits; otherwise characters outside
    /// the rule become `_`, and a stable 6-hex suffix of the original name keeps it distinct.
    fn provider_name(name: &str, provider: ExportFormat) -> String {
        naming::fit(name, provider.name_rule())
    }
    use serde_json::json;

    /// The fixture tools shared with `tests/suite/provider_rules.rs`.
    pub(crate) fn fixtures() -> Vec<Tool> {
        let list: Vec<Value> =
            serde_json::from_str(include_str!("../testdata/fixtures.json")).unwrap();
        list.iter()
            .map(|t| {
                let mut tool = Tool::local(t["name"].as_str().unwrap(), t["inputSchema"].clone());
                if let Some(d) = t["description"].as_str() {
                    tool = tool.with_description(d);
                }
                tool
            })
            .collect()
    }

    fn snapshot(provider: ExportFormat) -> Export {
        export(&fixtures(), provider)
    }

    #[test]
    fn anthropic_golden() {
        insta::assert_json_snapshot!("anthropic", snapshot(ExportFormat::Anthropic));
    }

    #[test]
    fn openai_golden() {
        insta::assert_json_snapshot!("openai", snapshot(ExportFormat::OpenAi));
    }

    #[test]
    fn openai_strict_golden() {
        insta::assert_json_snapshot!("openai_strict", snapshot(ExportFormat::OpenAiStrict));
    }

    #[test]
    fn gemini_golden() {
        insta::assert_json_snapshot!("gemini", snapshot(ExportFormat::Gemini));
    }

    #[test]
    fn names_fit_each_provider() {
        assert!(name_is_valid(
            "mcp__github__create_issue",
            ExportFormat::OpenAi
        ));
        assert!(!name_is_valid("a.b", ExportFormat::OpenAi));
        assert!(name_is_valid("a.b:c", ExportFormat::Gemini));
        assert!(!name_is_valid("9lives", ExportFormat::Gemini));
        assert!(name_is_valid("9lives", ExportFormat::Anthropic));
        assert!(!name_is_valid("", ExportFormat::Anthropic));
        assert!(!name_is_valid(&"x".repeat(65), ExportFormat::Anthropic));
        assert!(name_is_valid(&"x".repeat(64), ExportFormat::Gemini));

        assert_eq!(
            provider_name("read_file", ExportFormat::OpenAi),
            "read_file"
        );
        let dotted = provider_name("fs.read", ExportFormat::OpenAi);
        assert!(dotted.starts_with("fs_read_"), "{dotted}");
        assert_eq!(provider_name("fs.read", ExportFormat::Gemini), "fs.read");
        let digit = provider_name("2fa", ExportFormat::Gemini);
        assert!(digit.starts_with("_2fa_"), "{digit}");
        let long = provider_name(&"ü".repeat(70), ExportFormat::Anthropic);
        assert_eq!(long.len(), crate::defaults::MAX_TOOL_NAME_LEN);
        for p in ExportFormat::ALL {
            for name in ["", "a b", "ä", &"y".repeat(200), "-x", ".x"] {
                let fitted = provider_name(name, p);
                assert!(name_is_valid(&fitted, p), "{p}: {name:?} → {fitted:?}");
            }
        }
        // Stable.
        assert_eq!(
            provider_name("fs.read", ExportFormat::OpenAi),
            provider_name("fs.read", ExportFormat::OpenAi)
        );
    }

    #[test]
    fn fitted_names_stay_unique_and_map_back() {
        let tools = vec![
            Tool::local("a.b", json!({"type": "object"})),
            Tool::local("a_b", json!({"type": "object"})),
            Tool::local("a:b", json!({"type": "object"})),
        ];
        for p in ExportFormat::ALL {
            let e = export(&tools, p);
            let names: HashSet<&str> = e.tools.iter().map(|t| t.name.as_str()).collect();
            assert_eq!(names.len(), 3, "{p}: {names:?}");
            for t in &e.tools {
                assert_eq!(e.tool_name(&t.name), Some(t.tool.as_str()));
            }
        }
        let e = export(&tools, ExportFormat::OpenAi);
        assert_eq!(e.tools[1].name, "a_b");
        assert!(
            e.tools[0].notes[0].contains("exported as"),
            "{:?}",
            e.tools[0].notes
        );
    }

    #[test]
    fn providers_parse_from_their_names() {
        for p in ExportFormat::ALL {
            assert_eq!(p.as_str().parse::<ExportFormat>(), Ok(p));
        }
        assert!("claude".parse::<ExportFormat>().is_err());
    }
}
