//! What only `mcpmux.toml` can say: the per-server [`ServerOptions`] (retries, result size,
//! backoff, breaker, shutdown grace, tool filters, stages, agents, side effects) and the global
//! `[policy]` rules.
//!
//! Read strictly, like the rest of that dialect: a wrong type, a value out of range or an
//! unknown key is an error naming the file, the server and the field. Options are read into an
//! [`OptionsOverlay`] whose every field is optional, so a definition and an overlay share one
//! reader; applying it is where the values meet the server's earlier ones: tables merge key by
//! key, arrays and single values replace. Knows nothing of which files exist or their order.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Map, Value};

use super::fields::Context;
use super::value::{kind_name, nearest};
use super::{ConfigError, Dialect, PolicyRules, ServerOptions};

/// Keys of `backoff = { ... }`.
const BACKOFF_KEYS: &[&str] = &["initial", "max", "give_up"];

/// Keys of `breaker = { ... }`.
const BREAKER_KEYS: &[&str] = &["threshold", "cool_down"];

/// Keys of `tools = { ... }`.
const TOOLS_KEYS: &[&str] = &["allow", "deny"];

/// Keys of `[policy]`.
const POLICY_KEYS: &[&str] = &["allow", "ask", "deny"];

/// The side-effect classes a tool can be declared to have, and `effect:<class>` can name.
pub(crate) const EFFECT_CLASSES: &[&str] = &["read", "mutate", "destructive", "network"];

/// Most retries accepted. Each retry repeats a call that just failed; more than ten means a
/// server that needs fixing or a typo, and would hold a caller for minutes.
const MAX_RETRIES_LIMIT: u32 = 10;

/// A value that cannot be applied to the server it adjusts (`backoff.initial` above the
/// server's `backoff.max`); the caller adds the file and the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Invalid {
    /// The field, as written in the file (`backoff`).
    pub field: String,
    /// What is wrong and what to write instead.
    pub message: String,
}

/// The option fields of a `[servers.NAME]` table as written, before any check.
#[derive(Debug, Default)]
pub(crate) struct RawOptions {
    max_retries: Option<Value>,
    max_result_bytes: Option<Value>,
    shutdown_grace: Option<Value>,
    backoff: Option<Value>,
    breaker: Option<Value>,
    tools: Option<Value>,
    stages: Option<Value>,
    agents: Option<Value>,
    side_effects: Option<Value>,
    lazy: Option<Value>,
    sandbox: Option<Value>,
}

impl RawOptions {
    /// Moves the option fields out of `map`, leaving the rest. `null` (a NaN in TOML) is absent.
    pub fn take(map: &mut Map<String, Value>) -> Self {
        let mut take = |key: &str| map.remove(key).filter(|value| !value.is_null());
        RawOptions {
            max_retries: take("max_retries"),
            max_result_bytes: take("max_result_bytes"),
            shutdown_grace: take("shutdown_grace"),
            backoff: take("backoff"),
            breaker: take("breaker"),
            tools: take("tools"),
            stages: take("stages"),
            agents: take("agents"),
            side_effects: take("side_effects"),
            lazy: take("lazy"),
            sandbox: take("sandbox"),
        }
    }
}

/// The options one table sets; `None` (or an empty map) leaves the server's value as it is.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct OptionsOverlay {
    /// `max_retries`.
    pub max_retries: Option<u32>,
    /// `max_result_bytes`.
    pub max_result_bytes: Option<usize>,
    /// `shutdown_grace`.
    pub shutdown_grace: Option<Duration>,
    /// `backoff.initial`.
    pub backoff_initial: Option<Duration>,
    /// `backoff.max`.
    pub backoff_max: Option<Duration>,
    /// `backoff.give_up`.
    pub backoff_give_up: Option<Duration>,
    /// `breaker.threshold`.
    pub breaker_threshold: Option<u32>,
    /// `breaker.cool_down`.
    pub breaker_cool_down: Option<Duration>,
    /// `tools.allow`.
    pub tools_allow: Option<Vec<String>>,
    /// `tools.deny`.
    pub tools_deny: Option<Vec<String>>,
    /// `stages`.
    pub stages: Option<Vec<String>>,
    /// `agents`.
    pub agents: Option<Vec<String>>,
    /// `side_effects`, merged into the server's by tool name.
    pub side_effects: BTreeMap<String, Vec<String>>,
    /// `lazy`.
    pub lazy: Option<bool>,
    /// `sandbox`, replacing the server's whole.
    pub sandbox: Option<super::sandbox::Sandbox>,
}

impl OptionsOverlay {
    /// Sets on `options` every value this overlay holds. Checks that need the server's other
    /// values (`backoff.initial` ≤ `backoff.max`) are made first: a refused overlay changes
    /// nothing.
    pub fn apply(self, options: &mut ServerOptions) -> Result<(), Invalid> {
        let OptionsOverlay {
            max_retries,
            max_result_bytes,
            shutdown_grace,
            backoff_initial,
            backoff_max,
            backoff_give_up,
            breaker_threshold,
            breaker_cool_down,
            tools_allow,
            tools_deny,
            stages,
            agents,
            side_effects,
            lazy,
            sandbox,
        } = self;

        let initial = backoff_initial.unwrap_or(options.backoff.initial);
        let max = backoff_max.unwrap_or(options.backoff.max);
        if initial > max {
            let unset = |set: Option<Duration>| if set.is_none() { ", not set here" } else { "" };
            return Err(Invalid {
                field: "backoff".to_owned(),
                message: format!(
                    "initial ({initial:?}{}) is longer than max ({max:?}{}): the first reconnect delay cannot exceed the longest; lower initial or raise max",
                    unset(backoff_initial),
                    unset(backoff_max),
                ),
            });
        }

        // Exhaustive, so that a new option cannot be forgotten here.
        let ServerOptions {
            max_retries: to_max_retries,
            max_result_bytes: to_max_result_bytes,
            backoff: to_backoff,
            breaker: to_breaker,
            shutdown_grace: to_shutdown_grace,
            tools: to_tools,
            stages: to_stages,
            agents: to_agents,
            side_effects: to_side_effects,
            lazy: to_lazy,
            sandbox: to_sandbox,
        } = options;
        set(to_max_retries, max_retries);
        set(to_max_result_bytes, max_result_bytes);
        set(to_shutdown_grace, shutdown_grace);
        to_backoff.initial = initial;
        to_backoff.max = max;
        set(&mut to_backoff.give_up, backoff_give_up);
        set(&mut to_breaker.threshold, breaker_threshold);
        set(&mut to_breaker.cool_down, breaker_cool_down);
        set(&mut to_tools.allow, tools_allow);
        set(&mut to_tools.deny, tools_deny);
        if stages.is_some() {
            *to_stages = stages;
        }
        if agents.is_some() {
            *to_agents = agents;
        }
        to_side_effects.extend(side_effects);
        if lazy.is_some() {
            *to_lazy = lazy;
        }
        if sandbox.is_some() {
            *to_sandbox = sandbox;
        }
        Ok(())
    }
}

fn set<T>(slot: &mut T, value: Option<T>) {
    if let Some(value) = value {
        *slot = value;
    }
}

/// Reads the options of server `server` in the file `cx` describes.
pub(crate) fn read(
    raw: RawOptions,
    cx: &Context<'_>,
    server: &str,
) -> Result<OptionsOverlay, ConfigError> {
    let at = At {
        cx,
        server: Some(server),
    };
    let RawOptions {
        max_retries,
        max_result_bytes,
        shutdown_grace,
        backoff,
        breaker,
        tools,
        stages,
        agents,
        side_effects,
        lazy,
        sandbox,
    } = raw;
    let mut overlay = OptionsOverlay::default();

    if let Some(value) = max_retries {
        overlay.max_retries = Some(at.retries("max_retries", value)?);
    }
    if let Some(value) = max_result_bytes {
        let bytes = super::size::parse(&value)
            .map_err(|message| at.invalid("max_result_bytes", message))?;
        overlay.max_result_bytes = Some(bytes);
    }
    if let Some(value) = shutdown_grace {
        overlay.shutdown_grace = Some(at.duration("shutdown_grace", &value)?);
    }
    if let Some(value) = backoff {
        let mut table = at.table("backoff", value, BACKOFF_KEYS, "{ initial = \"1s\" }")?;
        let mut duration = |key: &str| {
            table
                .remove(key)
                .map(|value| at.duration(&format!("backoff.{key}"), &value))
                .transpose()
        };
        overlay.backoff_initial = duration("initial")?;
        overlay.backoff_max = duration("max")?;
        overlay.backoff_give_up = duration("give_up")?;
    }
    if let Some(value) = breaker {
        let mut table = at.table("breaker", value, BREAKER_KEYS, "{ threshold = 3 }")?;
        if let Some(value) = table.remove("threshold") {
            overlay.breaker_threshold = Some(at.threshold("breaker.threshold", value)?);
        }
        if let Some(value) = table.remove("cool_down") {
            overlay.breaker_cool_down = Some(at.duration("breaker.cool_down", &value)?);
        }
    }
    if let Some(value) = tools {
        let mut table = at.table("tools", value, TOOLS_KEYS, "{ allow = [\"read_*\"] }")?;
        if let Some(value) = table.remove("allow") {
            overlay.tools_allow = Some(at.tool_globs("tools.allow", value)?);
        }
        if let Some(value) = table.remove("deny") {
            overlay.tools_deny = Some(at.tool_globs("tools.deny", value)?);
        }
    }
    if let Some(value) = stages {
        overlay.stages = Some(at.scope("stages", "stage", value)?);
    }
    if let Some(value) = agents {
        overlay.agents = Some(at.scope("agents", "agent", value)?);
    }
    if let Some(value) = side_effects {
        overlay.side_effects = at.side_effects(value)?;
    }
    if let Some(value) = lazy {
        overlay.lazy = Some(at.boolean("lazy", value)?);
    }
    if let Some(value) = sandbox {
        let sandbox =
            super::sandbox::parse(value).map_err(|message| at.invalid("sandbox", message))?;
        overlay.sandbox = Some(sandbox);
    }
    Ok(overlay)
}

/// Reads a `[policy]` table: the valid entries, and a problem for each bad key or entry. One
/// bad entry does not drop the others: a `deny` list losing all its rules to a typo in one
/// would be the worse failure.
pub(crate) fn policy(
    table: Map<String, Value>,
    cx: &Context<'_>,
) -> (PolicyRules, Vec<ConfigError>) {
    let at = At { cx, server: None };
    let mut rules = PolicyRules::default();
    let mut problems = Vec::new();
    for (key, value) in table {
        let list = match key.as_str() {
            "allow" => &mut rules.allow,
            "ask" => &mut rules.ask,
            "deny" => &mut rules.deny,
            _ => {
                problems.push(at.unknown_key("policy", &key, POLICY_KEYS));
                continue;
            }
        };
        if value.is_null() {
            continue;
        }
        let field = format!("policy.{key}");
        let items = match at.array(&field, value, "[\"mcp__github__get_*\", \"effect:read\"]") {
            Ok(items) => items,
            Err(error) => {
                problems.push(error);
                continue;
            }
        };
        for (index, item) in items.into_iter().enumerate() {
            match at.policy_entry(&format!("{field}[{index}]"), item) {
                Ok(entry) => list.push(entry),
                Err(error) => problems.push(error),
            }
        }
    }
    (rules, problems)
}

/// Where values are read: the file, and the server (none under `[policy]`).
struct At<'a> {
    cx: &'a Context<'a>,
    server: Option<&'a str>,
}

impl At<'_> {
    fn boolean(&self, field: &str, value: Value) -> Result<bool, ConfigError> {
        match value {
            Value::Bool(flag) => Ok(flag),
            other => Err(self.invalid(
                field,
                format!(
                    "expected true or false, found {}",
                    kind_name(&other, self.cx.dialect)
                ),
            )),
        }
    }

    fn invalid(&self, field: &str, message: impl Into<String>) -> ConfigError {
        ConfigError::InvalidValue {
            file: self.cx.file.to_path_buf(),
            server: self.server.map(str::to_owned),
            field: Some(field.to_owned()),
            message: message.into(),
        }
    }

    /// An unknown key inside table `table`, named by its dotted path (`backoff.intial`).
    fn unknown_key(&self, table: &str, key: &str, valid: &'static [&'static str]) -> ConfigError {
        ConfigError::UnknownKey {
            file: self.cx.file.to_path_buf(),
            server: self.server.map(str::to_owned),
            key: format!("{table}.{key}"),
            suggestion: nearest(key, valid).map(|near| format!("{table}.{near}")),
            valid,
        }
    }

    fn found(value: &Value) -> &'static str {
        kind_name(value, Dialect::Mcpmux)
    }

    fn duration(&self, field: &str, value: &Value) -> Result<Duration, ConfigError> {
        super::duration::parse(value).map_err(|message| self.invalid(field, message))
    }

    /// An inline table with only `valid` keys; `null` members are dropped as absent.
    fn table(
        &self,
        field: &str,
        value: Value,
        valid: &'static [&'static str],
        example: &str,
    ) -> Result<Map<String, Value>, ConfigError> {
        let Value::Object(map) = value else {
            return Err(self.invalid(
                field,
                format!(
                    "expected a table, found {}: write {field} = {example}",
                    Self::found(&value)
                ),
            ));
        };
        if let Some(key) = map.keys().find(|key| !valid.contains(&key.as_str())) {
            return Err(self.unknown_key(field, key, valid));
        }
        Ok(map
            .into_iter()
            .filter(|(_, value)| !value.is_null())
            .collect())
    }

    /// A whole number; a quoted one is refused with the fix.
    fn integer(&self, field: &str, value: Value) -> Result<i64, ConfigError> {
        let problem = match &value {
            Value::Number(number) => match number.as_i64() {
                Some(number) => return Ok(number),
                None if number.is_f64() => {
                    format!("expected a whole number, found a float ({number})")
                }
                None => format!("{number} is far too large"),
            },
            Value::String(text) if text.trim().parse::<i64>().is_ok() => format!(
                "expected an integer, found a string: write it without quotes, as {}",
                text.trim()
            ),
            other => format!("expected an integer, found {}", Self::found(other)),
        };
        Err(self.invalid(field, problem))
    }

    fn retries(&self, field: &str, value: Value) -> Result<u32, ConfigError> {
        let number = self.integer(field, value)?;
        match u32::try_from(number) {
            Ok(retries) if retries <= MAX_RETRIES_LIMIT => Ok(retries),
            _ if number < 0 => Err(self.invalid(
                field,
                format!("{number} is negative: give 0 for no retries, or up to {MAX_RETRIES_LIMIT}"),
            )),
            _ => Err(self.invalid(
                field,
                format!(
                    "{number} retries is too many: give at most {MAX_RETRIES_LIMIT} (each retry repeats a call that just failed; the default is {})",
                    crate::defaults::MAX_RETRIES
                ),
            )),
        }
    }

    fn threshold(&self, field: &str, value: Value) -> Result<u32, ConfigError> {
        let number = self.integer(field, value)?;
        match u32::try_from(number) {
            Ok(0) => Err(self.invalid(
                field,
                format!(
                    "0 would open the breaker before any call failed: give 1 or more (the default is {})",
                    crate::defaults::BREAKER_THRESHOLD
                ),
            )),
            Ok(threshold) => Ok(threshold),
            Err(_) if number < 0 => Err(self.invalid(
                field,
                format!("{number} is negative: give the number of consecutive failures that opens the breaker, 1 or more"),
            )),
            Err(_) => Err(self.invalid(
                field,
                format!("{number} is too large: give at most {}", u32::MAX),
            )),
        }
    }

    /// An array; a lone string gets the fix of wrapping it in brackets.
    fn array(&self, field: &str, value: Value, example: &str) -> Result<Vec<Value>, ConfigError> {
        match value {
            Value::Array(items) => Ok(items),
            Value::String(text) => Err(self.invalid(
                field,
                format!(
                    "expected an array of strings, found a string: write it in brackets, as [{}]",
                    Value::String(text)
                ),
            )),
            other => Err(self.invalid(
                field,
                format!(
                    "expected an array of strings, found {}: write it like {example}",
                    Self::found(&other)
                ),
            )),
        }
    }

    /// A non-blank string inside an array; `what` is the fix for a blank one.
    fn item(&self, field: &str, value: Value, what: &str) -> Result<String, ConfigError> {
        match value {
            Value::String(text) if text.trim().is_empty() => {
                Err(self.invalid(field, format!("is empty: remove it, or give {what}")))
            }
            Value::String(text) => Ok(text),
            other => Err(self.invalid(
                field,
                format!("expected a string, found {}", Self::found(&other)),
            )),
        }
    }

    /// `tools.allow` / `tools.deny`: tool names or globs on them.
    fn tool_globs(&self, field: &str, value: Value) -> Result<Vec<String>, ConfigError> {
        let items = self.array(field, value, "[\"read_*\", \"mcp__github__get_*\"]")?;
        items
            .into_iter()
            .enumerate()
            .map(|(index, item)| {
                let field = format!("{field}[{index}]");
                let glob = self.item(&field, item, "a tool name or a glob like \"read_*\"")?;
                self.no_colon(&field, &glob, true)?;
                Ok(glob)
            })
            .collect()
    }

    /// Tool names never hold `:` (MCP allows letters, digits, `_`, `-` and `.`), so one in a
    /// glob is a typo, most likely an `effect:` rule in a place that takes none.
    fn no_colon(&self, field: &str, glob: &str, in_filter: bool) -> Result<(), ConfigError> {
        if !glob.contains(':') {
            return Ok(());
        }
        let fix = if in_filter && glob.starts_with("effect:") {
            format!(
                "tool filters take tool names or globs; to act on a side effect, put \"{glob}\" in [policy] allow, ask or deny"
            )
        } else {
            "tool names have no \":\": give a tool name or glob like \"mcp__github__get_*\""
                .to_owned()
        };
        Err(self.invalid(
            field,
            format!("\"{glob}\" is not a tool name or glob: {fix}"),
        ))
    }

    /// `stages` / `agents`: a non-empty array of names.
    fn scope(&self, field: &str, noun: &str, value: Value) -> Result<Vec<String>, ConfigError> {
        let items = self.array(field, value, &format!("[\"{noun}-name\"]"))?;
        if items.is_empty() {
            return Err(self.invalid(
                field,
                format!(
                    "is empty, which would leave the server in no {noun}: remove {field} to use it in every {noun}, or set enabled = false"
                ),
            ));
        }
        items
            .into_iter()
            .enumerate()
            .map(|(index, item)| {
                self.item(
                    &format!("{field}[{index}]"),
                    item,
                    &format!("a {noun} name"),
                )
            })
            .collect()
    }

    /// `side_effects`: tool name or glob → non-empty array of classes.
    fn side_effects(&self, value: Value) -> Result<BTreeMap<String, Vec<String>>, ConfigError> {
        let field = "side_effects";
        let Value::Object(map) = value else {
            return Err(self.invalid(
                field,
                format!(
                    "expected a table of tool → classes, found {}: write side_effects = {{ create_issue = [\"mutate\", \"network\"] }}",
                    Self::found(&value)
                ),
            ));
        };
        let mut declared = BTreeMap::new();
        for (tool, value) in map {
            if value.is_null() {
                continue;
            }
            let field = format!("{field}.{}", toml_key(&tool));
            if tool.trim().is_empty() {
                return Err(self.invalid(
                    &field,
                    "the tool name is empty: give a tool name or glob, like \"get_*\" = [\"read\"]",
                ));
            }
            self.no_colon(&field, &tool, false)?;
            let classes = match value {
                Value::String(text) => {
                    let fix = if EFFECT_CLASSES.contains(&text.as_str()) {
                        format!("write it in brackets, as [\"{text}\"]")
                    } else {
                        format!(
                            "write an array of classes from {}, like [\"mutate\", \"network\"]",
                            EFFECT_CLASSES.join(", ")
                        )
                    };
                    return Err(self.invalid(
                        &field,
                        format!("expected an array of classes, found a string: {fix}"),
                    ));
                }
                other => self.array(&field, other, "[\"mutate\", \"network\"]")?,
            };
            if classes.is_empty() {
                return Err(self.invalid(
                    &field,
                    format!(
                        "is empty: give at least one of {} (\"read\" for a tool without side effects)",
                        EFFECT_CLASSES.join(", ")
                    ),
                ));
            }
            let classes = classes
                .into_iter()
                .enumerate()
                .map(|(index, item)| {
                    let field = format!("{field}[{index}]");
                    let class = self.item(&field, item, "a side-effect class")?;
                    self.class(&field, &class, "")?;
                    Ok(class)
                })
                .collect::<Result<Vec<_>, ConfigError>>()?;
            declared.insert(tool, classes);
        }
        Ok(declared)
    }

    /// A side-effect class, checked against [`EFFECT_CLASSES`]; `prefix` is how the list is
    /// written back (`effect:` in policy entries).
    fn class(&self, field: &str, class: &str, prefix: &str) -> Result<(), ConfigError> {
        if EFFECT_CLASSES.contains(&class) {
            return Ok(());
        }
        let valid = EFFECT_CLASSES
            .iter()
            .map(|valid| format!("{prefix}{valid}"))
            .collect::<Vec<_>>()
            .join(", ");
        Err(self.invalid(
            field,
            format!("\"{prefix}{class}\" is not a side-effect class: use one of {valid}"),
        ))
    }

    /// A `[policy]` entry: `effect:<class>`, or a tool-name glob.
    fn policy_entry(&self, field: &str, value: Value) -> Result<String, ConfigError> {
        let entry = self.item(
            field,
            value,
            "a tool-name glob like \"mcp__github__*\" or \"effect:mutate\"",
        )?;
        match entry.strip_prefix("effect:") {
            Some(class) => self.class(field, class, "effect:")?,
            None => self.no_colon(field, &entry, false)?,
        }
        Ok(entry)
    }
}

/// A table key as it would be written in a dotted TOML path: bare when it can be, else quoted.
fn toml_key(key: &str) -> String {
    let bare = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if bare {
        key.to_owned()
    } else {
        Value::String(key.to_owned()).to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::defaults;

    #[test]
    fn apply_merges_tables_by_key_and_replaces_lists() {
        let mut options = ServerOptions::default();
        options.tools.allow = vec!["a".into()];
        options.tools.deny = vec!["b".into()];
        options.side_effects.insert("x".into(), vec!["read".into()]);
        options.side_effects.insert("y".into(), vec!["read".into()]);
        let overlay = OptionsOverlay {
            backoff_max: Some(Duration::from_secs(60)),
            tools_deny: Some(vec!["c".into()]),
            side_effects: [("y".to_owned(), vec!["mutate".to_owned()])].into(),
            ..OptionsOverlay::default()
        };
        assert_eq!(overlay.apply(&mut options), Ok(()));
        assert_eq!(options.backoff.initial, defaults::BACKOFF_INITIAL);
        assert_eq!(options.backoff.max, Duration::from_secs(60));
        assert_eq!(options.tools.allow, ["a"]);
        assert_eq!(options.tools.deny, ["c"]);
        assert_eq!(options.side_effects["x"], ["read"]);
        assert_eq!(options.side_effects["y"], ["mutate"]);
    }

    #[test]
    fn refused_apply_changes_nothing() {
        let mut options = ServerOptions::default();
        let overlay = OptionsOverlay {
            max_retries: Some(5),
            backoff_initial: Some(Duration::from_secs(31)),
            ..OptionsOverlay::default()
        };
        let invalid = overlay
            .apply(&mut options)
            .err()
            .map(|invalid| invalid.message);
        assert_eq!(
            invalid.as_deref(),
            Some(
                "initial (31s) is longer than max (30s, not set here): the first reconnect delay cannot exceed the longest; lower initial or raise max"
            )
        );
        assert_eq!(options, ServerOptions::default());
    }

    #[test]
    fn raw_options_take_exactly_their_keys() {
        let keys = [
            "max_retries",
            "max_result_bytes",
            "shutdown_grace",
            "backoff",
            "breaker",
            "tools",
            "stages",
            "agents",
            "side_effects",
            "lazy",
            "sandbox",
        ];
        let mut map: Map<String, Value> = keys
            .iter()
            .chain(&["command", "other"])
            .map(|key| ((*key).to_owned(), Value::from(1)))
            .collect();
        let raw = RawOptions::take(&mut map);
        assert_eq!(map.keys().collect::<Vec<_>>(), ["command", "other"]);
        let RawOptions {
            max_retries,
            max_result_bytes,
            shutdown_grace,
            backoff,
            breaker,
            tools,
            stages,
            agents,
            side_effects,
            lazy,
            sandbox,
        } = raw;
        let taken = [
            max_retries,
            max_result_bytes,
            shutdown_grace,
            backoff,
            breaker,
            tools,
            stages,
            agents,
            side_effects,
            lazy,
            sandbox,
        ];
        assert!(taken.iter().all(Option::is_some));
    }

    #[test]
    fn toml_keys_are_quoted_when_they_must_be() {
        assert_eq!(toml_key("create_issue"), "create_issue");
        assert_eq!(toml_key("get_*"), "\"get_*\"");
        assert_eq!(toml_key(""), "\"\"");
    }
}
