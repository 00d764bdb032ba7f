//! Reading helpers every dialect shares, over raw values only: the name of a value's type in
//! the file's own terms, the nearest valid key for a typo, and the project object Claude Code
//! keeps in `~/.claude.json`.
//!
//! The bottom of `config/`: knows nothing of entries, fields or the files being read beyond
//! the value it is given, so every other config file may use it.

use std::path::Path;

use serde_json::{Map, Value};

use super::Dialect;

/// The name of a value's type in the file's own terms (`a table` in TOML, `an object` in JSON).
pub(crate) fn kind_name(value: &Value, dialect: Dialect) -> &'static str {
    match (value, dialect) {
        (Value::Null, _) => "null",
        (Value::Bool(_), _) => "a boolean",
        (Value::Number(n), Dialect::Mcpmux | Dialect::Codex) if n.is_f64() => "a float",
        (Value::Number(_), Dialect::Mcpmux | Dialect::Codex) => "an integer",
        (Value::Number(_), _) => "a number",
        (Value::String(_), _) => "a string",
        (Value::Array(_), _) => "an array",
        (Value::Object(_), Dialect::Mcpmux | Dialect::Codex) => "a table",
        (Value::Object(_), _) => "an object",
    }
}

/// The valid key closest to `key`, when it is close enough to be a typo. Case, `-` and `_` are
/// ignored first, so `startupTimeout` and `startup-timeout` find `startup_timeout`.
pub(crate) fn nearest(key: &str, valid: &[&'static str]) -> Option<&'static str> {
    let wanted = normalise(key);
    // Two edits catch most typos; long keys allow a third of their length, rounded up so that
    // `max_retry` finds `max_retries`, and a one-letter key gets one edit so that it does not
    // match everything short.
    let length = wanted.chars().count();
    let limit = length
        .div_ceil(3)
        .max(2)
        .min(length.saturating_sub(1))
        .max(1);
    valid
        .iter()
        .map(|candidate| (distance(&wanted, &normalise(candidate)), *candidate))
        .filter(|(distance, _)| *distance <= limit)
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, candidate)| candidate)
}

fn normalise(key: &str) -> String {
    key.chars()
        .filter(|c| *c != '_' && *c != '-')
        .flat_map(char::to_lowercase)
        .collect()
}

/// Edit distance counting a swap of neighbours as one edit (`tyep` → `type` is 1).
fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    // rows[i][j]: distance between a[..i] and b[..j]; three rows are all the swap rule needs.
    let mut before: Vec<usize> = Vec::new();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for i in 1..=a.len() {
        let mut current = vec![i; b.len() + 1];
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (previous[j] + 1)
                .min(current[j - 1] + 1)
                .min(previous[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(before[j - 2] + 1);
            }
            current[j] = best;
        }
        before = std::mem::replace(&mut previous, current);
    }
    previous[b.len()]
}

/// `projects[<dir>]` of `~/.claude.json`, where Claude Code keeps this project's settings
/// (the approval keys `trust.rs` reads).
pub(crate) fn project_object<'a>(
    root: &'a Map<String, Value>,
    dir: &Path,
) -> Option<&'a Map<String, Value>> {
    let Some(Value::Object(projects)) = root.get("projects") else {
        return None;
    };
    let key = project_key(projects, dir)?;
    projects.get(&key)?.as_object()
}

/// The key of `projects` naming `dir`, as given or resolved.
pub(crate) fn project_key(projects: &Map<String, Value>, dir: &Path) -> Option<String> {
    let mut wanted = Vec::new();
    if let Ok(absolute) = std::path::absolute(dir) {
        wanted.push(absolute);
    }
    if let Ok(canonical) = std::fs::canonicalize(dir) {
        wanted.push(canonical);
    }
    projects
        .keys()
        .find(|key| wanted.iter().any(|dir| Path::new(key.as_str()) == dir))
        .cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_distance() {
        assert_eq!(distance("", ""), 0);
        assert_eq!(distance("comand", "command"), 1);
        assert_eq!(distance("tyep", "type"), 1);
        assert_eq!(distance("kitten", "sitting"), 3);
        assert_eq!(distance("", "abc"), 3);
    }
}
