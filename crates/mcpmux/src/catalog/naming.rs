//! Tool names, fitted once for everyone. The catalog's exposed names: `mcp__<server>__<tool>`,
//! restricted to `[A-Za-z0-9_-]` and 64 characters (what every model provider accepts), with a
//! short stable hash suffix only where two tools would otherwise share a name or a name is too
//! long. The name of a tool depends only on its own server and raw name unless it collides, so
//! prompt caches stay warm across runs. Provider exports fit names with the same pieces, under
//! the rule of their provider ([`NameRule`]), and MCP's own tool-name rule says which names a
//! server's tools may be served under as they are ([`is_mcp_tool_name`]). Knows nothing of
//! schemas or exports.

use std::collections::{HashMap, HashSet};

use sha2::{Digest, Sha256};

use crate::defaults::MAX_TOOL_NAME_LEN;

/// Length of the hash suffix, `_` plus hex digits.
const HASH_HEX: usize = 6;

/// Longest hash suffix tried when lengthening one to get past a clash.
const MAX_HASH_HEX: usize = 40;

/// A function-name rule: a provider's, where providers differ, or MCP's. All cap the length at
/// [`MAX_TOOL_NAME_LEN`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameRule {
    /// Anthropic and OpenAI: `^[a-zA-Z0-9_-]{1,64}$` (also what the exposed names keep to).
    AnthropicOpenAi,
    /// Gemini: starts with a letter or `_`; may contain `.` and `:` as well.
    Gemini,
    /// MCP's tool names (SEP-986, in the spec since 2025-11-25): letters, digits, `_`, `-` and
    /// `.`. The spec allows up to 128 characters; kept to the 64 of the providers, which the
    /// models behind MCP clients answer to.
    Mcp,
}

impl NameRule {
    /// May `c` appear in a name?
    fn allows(self, c: char) -> bool {
        c.is_ascii_alphanumeric()
            || c == '_'
            || c == '-'
            || (self == NameRule::Gemini && (c == '.' || c == ':'))
            || (self == NameRule::Mcp && c == '.')
    }

    /// May a name start with `c` (beyond [`NameRule::allows`])?
    fn allows_first(self, c: char) -> bool {
        match self {
            NameRule::Gemini => c.is_ascii_alphabetic() || c == '_',
            NameRule::AnthropicOpenAi | NameRule::Mcp => true,
        }
    }
}

/// Replaces every character outside `[A-Za-z0-9_-]` with `_`.
pub fn sanitize(part: &str) -> String {
    sanitize_for(part, NameRule::AnthropicOpenAi)
}

/// Replaces every character `rule` does not allow with `_`.
fn sanitize_for(part: &str, rule: NameRule) -> String {
    part.chars()
        .map(|c| if rule.allows(c) { c } else { '_' })
        .collect()
}

/// The first `len` hex digits of `key`'s SHA-256.
fn hash_hex(key: &str, len: usize) -> String {
    let digest = Sha256::digest(key.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    hex[..len.min(hex.len())].to_string()
}

/// `fitted` (ASCII) cut so that `_` and a `hex`-digit hash of `key` fit the length limit, with
/// that suffix appended.
fn with_hash(fitted: &str, key: &str, hex: usize) -> String {
    with_hash_within(fitted, key, hex, MAX_TOOL_NAME_LEN)
}

/// [`with_hash`] under a limit of `max_len` characters; the hash never takes more than all of
/// it but the `_`.
fn with_hash_within(fitted: &str, key: &str, hex: usize, max_len: usize) -> String {
    let suffix = hash_hex(key, hex.min(max_len.saturating_sub(1)));
    let keep = max_len.saturating_sub(1 + suffix.len());
    // ASCII after sanitising, so byte slicing is safe.
    let prefix = &fitted[..fitted.len().min(keep)];
    format!("{prefix}_{suffix}")
}

/// Does `name` satisfy `rule`?
pub fn is_valid(name: &str, rule: NameRule) -> bool {
    !name.is_empty()
        && name.len() <= MAX_TOOL_NAME_LEN
        && name.chars().next().is_some_and(|c| rule.allows_first(c))
        && name.chars().all(|c| rule.allows(c))
}

/// Is `name` a valid MCP tool name (`NameRule::Mcp`): one a client may be handed as it is?
/// NUL, newlines, bidi overrides, emoji, `/` and names over 64 characters are not.
pub fn is_mcp_tool_name(name: &str) -> bool {
    is_valid(name, NameRule::Mcp)
}

/// `name` made to fit `rule`: unchanged when it fits; otherwise characters outside the rule
/// become `_`, and a stable 6-hex suffix of the original name keeps it distinct.
pub fn fit(name: &str, rule: NameRule) -> String {
    if is_valid(name, rule) {
        return name.to_string();
    }
    fit_hashed(name, rule, HASH_HEX)
}

/// `name` fitted to `rule` with a `hex`-digit hash suffix, whether or not it fits already.
fn fit_hashed(name: &str, rule: NameRule, hex: usize) -> String {
    let mut fitted = sanitize_for(name, rule);
    if !fitted.chars().next().is_some_and(|c| rule.allows_first(c)) {
        fitted.insert(0, '_');
    }
    with_hash(&fitted, name, hex)
}

/// [`fit`], kept apart from every name in `used` by lengthening the hash suffix; the result
/// is added to `used`.
pub fn fit_unique(name: &str, rule: NameRule, used: &mut HashSet<String>) -> String {
    let mut fitted = fit(name, rule);
    let mut hex = HASH_HEX;
    while used.contains(&fitted) && hex < MAX_HASH_HEX {
        hex += 2;
        fitted = fit_hashed(name, rule, hex);
    }
    used.insert(fitted.clone());
    fitted
}

/// The name a tool gets when nothing collides and it fits.
pub fn base_name(server: &str, tool: &str) -> String {
    format!("mcp__{}__{}", sanitize(server), sanitize(tool))
}

/// Whether a tool exposed as `name` may be one of `server`'s, whatever else is configured:
/// `name` starts with the server's `mcp__<server>__`, or, cut to 64 characters with a hash
/// (a long or shared name), with as much of it as the cut kept. Every name [`assign`] gives a
/// server's tool passes; so does every tool's whose name it could share, which is how a
/// program making one call (`mcpmux call`) reads only the servers its tool's name admits and
/// still names that tool as a hub of every server would.
pub fn may_own(name: &str, server: &str) -> bool {
    let prefix = base_name(server, "");
    if name.starts_with(&prefix) {
        return true;
    }
    if name.len() != MAX_TOOL_NAME_LEN {
        return false;
    }
    // Cut: the base's first `keep` characters, `_`, and a hash of `HASH_HEX..=MAX_HASH_HEX`
    // hex digits (`with_hash`).
    let bytes = name.as_bytes();
    (HASH_HEX..=MAX_HASH_HEX).any(|hex| {
        let keep = MAX_TOOL_NAME_LEN - 1 - hex;
        bytes[keep] == b'_'
            && bytes[keep + 1..].iter().all(u8::is_ascii_hexdigit)
            && prefix.len() > keep
            && prefix.as_bytes()[..keep] == bytes[..keep]
    })
}

/// Assigns an exposed name to each `(server, raw tool name)`, in the same order.
pub fn assign(tools: &[(&str, &str)]) -> Vec<String> {
    let bases: Vec<String> = tools.iter().map(|(s, t)| base_name(s, t)).collect();
    let keys: Vec<String> = tools.iter().map(|(s, t)| format!("{s}\0{t}")).collect();
    distinct(&bases, &keys, MAX_TOOL_NAME_LEN)
}

/// Shortest limit [`short_names`] fits to: room for a few characters of the name beside its
/// 6-hex suffix.
pub const MIN_SHORT_NAME_LEN: usize = 16;

/// The names a gateway serves for clients that add a prefix of their own (Claude Code's
/// `mcp__<entry>__`): each exposed name without its `mcp__` (`server__tool`), fitted to
/// `max_len` characters (clamped to [`MIN_SHORT_NAME_LEN`]..=64) with a stable hash of the
/// exposed name where it is too long or two would be equal, in the same order. Depends only
/// on a tool's own exposed name unless it collides, so a client's names stay put across runs.
pub fn short_names(exposed: &[&str], max_len: usize) -> Vec<String> {
    let max_len = max_len.clamp(MIN_SHORT_NAME_LEN, MAX_TOOL_NAME_LEN);
    let bases: Vec<String> = exposed
        .iter()
        .map(|name| name.strip_prefix("mcp__").unwrap_or(name).to_owned())
        .collect();
    let keys: Vec<String> = exposed.iter().map(|name| (*name).to_owned()).collect();
    distinct(&bases, &keys, max_len)
}

/// `bases` made distinct and fitted to `max_len`: a base that is too long or shared gets a
/// hash of its key, lengthened until it clashes with no other name.
fn distinct(bases: &[String], keys: &[String], max_len: usize) -> Vec<String> {
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for base in bases {
        *counts.entry(base.as_str()).or_default() += 1;
    }
    let mut names: Vec<String> = bases
        .iter()
        .zip(keys)
        .map(|(base, key)| {
            if base.len() > max_len || counts.get(base.as_str()).copied() > Some(1) {
                with_hash_within(base, key, HASH_HEX, max_len)
            } else {
                base.clone()
            }
        })
        .collect();
    // A hashed name could, in theory, equal another tool's name: lengthen its hash.
    let mut hex = HASH_HEX;
    loop {
        let mut seen: HashMap<&str, usize> = HashMap::new();
        let mut clash = None;
        for (i, name) in names.iter().enumerate() {
            if let Some(&j) = seen.get(name.as_str()) {
                clash = Some(if names[i] != bases[i] { i } else { j });
                break;
            }
            seen.insert(name, i);
        }
        let Some(i) = clash else { break };
        hex += 2;
        names[i] = with_hash_within(&bases[i], &keys[i], hex, max_len);
        if hex > MAX_HASH_HEX {
            break;
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_names_drop_the_mcp_prefix_and_keep_names_that_fit() {
        assert_eq!(
            short_names(&["mcp__github__create_issue", "builtin_tool"], 51),
            vec!["github__create_issue", "builtin_tool"]
        );
    }

    #[test]
    fn short_names_are_fitted_with_a_stable_hash_and_stay_distinct() {
        let long_a = format!("mcp__server__{}a", "x".repeat(60));
        let long_b = format!("mcp__server__{}b", "x".repeat(60));
        let names = short_names(&[&long_a, &long_b], 51);
        assert!(names.iter().all(|n| n.len() <= 51), "{names:?}");
        assert_ne!(names[0], names[1]);
        assert!(names[0].starts_with("server__xxx"), "{names:?}");
        // The same name, alone or beside others, in any order: the same short name.
        assert_eq!(short_names(&[&long_a], 51)[0], names[0]);
        assert_eq!(short_names(&[&long_b, &long_a], 51)[1], names[0]);
    }

    #[test]
    fn a_short_name_equal_to_another_tool_s_name_is_hashed_apart() {
        // A built-in named as an MCP tool's short name.
        let names = short_names(&["mcp__a__b", "a__b"], 51);
        assert_ne!(names[0], names[1]);
        assert!(names.iter().all(|n| n.starts_with("a__b_")), "{names:?}");
    }

    #[test]
    fn a_short_name_limit_below_the_minimum_is_raised_to_it() {
        let names = short_names(&[&format!("mcp__s__{}", "y".repeat(80))], 3);
        assert_eq!(names[0].len(), MIN_SHORT_NAME_LEN);
        assert!(is_mcp_tool_name(&names[0]), "{names:?}");
    }

    #[test]
    fn every_assigned_name_may_be_its_server_s_and_not_an_unrelated_one() {
        let long = "s".repeat(70);
        let servers = ["gh", "gh__x", "a.b", "a_b", long.as_str(), "tools"];
        let raw = ["x__y", "y", "create_issue", &"t".repeat(80), "x"];
        let tools: Vec<(&str, &str)> = servers
            .iter()
            .flat_map(|s| raw.iter().map(move |t| (*s, *t)))
            .collect();
        let names = assign(&tools);
        for ((server, tool), name) in tools.iter().zip(&names) {
            assert!(may_own(name, server), "{name} of {server}/{tool}");
        }
        assert!(!may_own("mcp__gh__y", "tools"));
        assert!(!may_own("mcp__ghx__y", "gh"));
        assert!(!may_own("echo", "gh"));
        // Cut within a long server's prefix: owned by it, not by a short unrelated one.
        let cut = &names[tools.iter().position(|t| t.0 == long).unwrap_or_default()];
        assert_eq!(cut.len(), 64, "{cut}");
        assert!(may_own(cut, &long));
        assert!(!may_own(cut, "gh"));
    }

    #[test]
    fn plain_names_are_predictable() {
        assert_eq!(
            assign(&[("github", "create_issue")]),
            vec!["mcp__github__create_issue"]
        );
    }

    #[test]
    fn odd_characters_become_underscores() {
        assert_eq!(
            base_name("my.server", "get file!"),
            "mcp__my_server__get_file_"
        );
        assert_eq!(sanitize("ä-b c"), "_-b_c");
    }

    #[test]
    fn collisions_get_distinct_stable_suffixes() {
        let names = assign(&[("a.b", "x"), ("a_b", "x"), ("other", "y")]);
        assert_ne!(names[0], names[1]);
        assert!(names[0].starts_with("mcp__a_b__x_"), "{}", names[0]);
        assert_eq!(names[0].len(), "mcp__a_b__x_".len() + HASH_HEX);
        assert_eq!(names[2], "mcp__other__y");
        // Stable: the same input gives the same names, whatever the order.
        let again = assign(&[("other", "y"), ("a_b", "x"), ("a.b", "x")]);
        assert_eq!(again[2], names[0]);
        assert_eq!(again[1], names[1]);
    }

    #[test]
    fn long_names_are_cut_to_64_with_a_hash() {
        let long_tool = "t".repeat(80);
        let names = assign(&[("srv", &long_tool), ("srv", &format!("{long_tool}2"))]);
        for name in &names {
            assert_eq!(name.len(), MAX_TOOL_NAME_LEN);
            assert!(
                name.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            );
        }
        assert_ne!(names[0], names[1]);
    }

    #[test]
    fn mcp_tool_names_keep_to_the_spec_s_characters_and_64() {
        for good in ["getUser", "DATA_EXPORT_v2", "admin.tools.list", "a-b", "x"] {
            assert!(is_mcp_tool_name(good), "{good}");
        }
        let long = "t".repeat(MAX_TOOL_NAME_LEN + 1);
        let emoji = "\u{1f600}".repeat(300);
        for bad in [
            "",
            "a\0b",
            "line\nbreak",
            "evil\u{202e}txt",
            "../../etc/passwd",
            "has space",
            "ä",
            long.as_str(),
            emoji.as_str(),
        ] {
            assert!(!is_mcp_tool_name(bad), "{bad:?}");
        }
        assert!(is_mcp_tool_name(&"t".repeat(MAX_TOOL_NAME_LEN)));
    }

    #[test]
    fn a_name_of_exactly_64_is_kept() {
        let tool = "t".repeat(MAX_TOOL_NAME_LEN - "mcp__s__".len());
        assert_eq!(assign(&[("s", &tool)])[0], format!("mcp__s__{tool}"));
    }
}
