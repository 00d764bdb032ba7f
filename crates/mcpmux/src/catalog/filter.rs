//! Glob matching of tool names and the per-server `tools.allow` / `tools.deny` filter.
//!
//! A glob matches a whole name: `*` any run of characters (`_` included), `?` one character,
//! `[abc]` / `[a-z]` / `[!a-z]` one character of (or not of) a class, `\x` the character `x`.
//! An unclosed `[` is an ordinary character, so every pattern is valid. Patterns are matched
//! against the raw name (`create_issue`) and the exposed name (`mcp__github__create_issue`).
//! Knows nothing of servers, connections or policy.
//!
//! Hand-written rather than `globset`, on purpose: globset refuses an unclosed `[` (a config
//! that loads today would stop loading) and gives `{a,b}` and `**` meanings a tool name never
//! asked for, and it compiles each pattern to a regex where this matcher is a token walk.

use std::fmt;

use crate::config::ToolFilter;

/// One compiled glob pattern.
#[derive(Clone, PartialEq, Eq)]
pub struct Glob {
    pattern: String,
    tokens: Vec<Token>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Literal(char),
    AnyOne,
    AnyRun,
    Class {
        negated: bool,
        items: Vec<ClassItem>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ClassItem {
    One(char),
    Range(char, char),
}

impl Glob {
    /// Compiles `pattern`; never fails (an unclosed `[` matches itself).
    pub fn new(pattern: &str) -> Self {
        let chars: Vec<char> = pattern.chars().collect();
        let mut tokens = Vec::new();
        let mut i = 0;
        while i < chars.len() {
            match chars[i] {
                '*' => {
                    // `**` means the same as `*`.
                    if tokens.last() != Some(&Token::AnyRun) {
                        tokens.push(Token::AnyRun);
                    }
                    i += 1;
                }
                '?' => {
                    tokens.push(Token::AnyOne);
                    i += 1;
                }
                '\\' if i + 1 < chars.len() => {
                    tokens.push(Token::Literal(chars[i + 1]));
                    i += 2;
                }
                '[' => match parse_class(&chars, i) {
                    Some((token, next)) => {
                        tokens.push(token);
                        i = next;
                    }
                    None => {
                        tokens.push(Token::Literal('['));
                        i += 1;
                    }
                },
                c => {
                    tokens.push(Token::Literal(c));
                    i += 1;
                }
            }
        }
        Glob {
            pattern: pattern.to_string(),
            tokens,
        }
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.pattern
    }

    /// True when the pattern has no wildcard: it matches exactly one name.
    pub fn is_literal(&self) -> bool {
        self.tokens.iter().all(|t| matches!(t, Token::Literal(_)))
    }

    /// Does the whole of `text` match?
    pub fn matches(&self, text: &str) -> bool {
        let text: Vec<char> = text.chars().collect();
        let (mut t, mut p) = (0usize, 0usize);
        // Where to resume after the last `*`: (pattern index after it, text index it took up to).
        let mut backtrack: Option<(usize, usize)> = None;
        while t < text.len() {
            let step = match self.tokens.get(p) {
                Some(Token::AnyRun) => {
                    backtrack = Some((p + 1, t));
                    p += 1;
                    continue;
                }
                Some(token) => token_matches(token, text[t]),
                None => false,
            };
            if step {
                p += 1;
                t += 1;
            } else if let Some((bp, bt)) = backtrack {
                p = bp;
                t = bt + 1;
                backtrack = Some((bp, bt + 1));
            } else {
                return false;
            }
        }
        self.tokens[p..].iter().all(|t| *t == Token::AnyRun)
    }
}

impl fmt::Debug for Glob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Glob({:?})", self.pattern)
    }
}

impl fmt::Display for Glob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.pattern)
    }
}

fn token_matches(token: &Token, c: char) -> bool {
    match token {
        Token::Literal(l) => *l == c,
        Token::AnyOne => true,
        Token::AnyRun => true,
        Token::Class { negated, items } => {
            let hit = items.iter().any(|item| match *item {
                ClassItem::One(x) => x == c,
                ClassItem::Range(lo, hi) => lo <= c && c <= hi,
            });
            hit != *negated
        }
    }
}

/// Parses `[...]` starting at `start`; `None` when it is not closed.
fn parse_class(chars: &[char], start: usize) -> Option<(Token, usize)> {
    let mut i = start + 1;
    let negated = matches!(chars.get(i), Some('!') | Some('^'));
    if negated {
        i += 1;
    }
    let mut items = Vec::new();
    let mut first = true;
    while i < chars.len() {
        let c = chars[i];
        if c == ']' && !first {
            return Some((Token::Class { negated, items }, i + 1));
        }
        first = false;
        let c = if c == '\\' && i + 1 < chars.len() {
            i += 1;
            chars[i]
        } else {
            c
        };
        if chars.get(i + 1) == Some(&'-') && chars.get(i + 2).is_some_and(|n| *n != ']') {
            let hi = chars[i + 2];
            items.push(ClassItem::Range(c.min(hi), c.max(hi)));
            i += 3;
        } else {
            items.push(ClassItem::One(c));
            i += 1;
        }
    }
    None
}

/// Whether a tool passes a filter, and if not, which entry hid it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FilterVerdict {
    /// Exposed and callable.
    Allowed,
    /// Matched this `tools.deny` pattern.
    Denied {
        /// The pattern that matched.
        pattern: String,
    },
    /// `tools.allow` is not empty and no pattern in it matched.
    NotAllowed,
}

impl FilterVerdict {
    /// True for [`FilterVerdict::Allowed`].
    pub fn is_allowed(&self) -> bool {
        matches!(self, FilterVerdict::Allowed)
    }
}

impl fmt::Display for FilterVerdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FilterVerdict::Allowed => f.write_str("allowed"),
            FilterVerdict::Denied { pattern } => write!(f, "hidden by tools.deny `{pattern}`"),
            FilterVerdict::NotAllowed => f.write_str("not matched by tools.allow"),
        }
    }
}

/// A compiled [`ToolFilter`]: empty `allow` admits every tool; `deny` wins over `allow`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NameFilter {
    allow: Vec<Glob>,
    deny: Vec<Glob>,
}

impl NameFilter {
    /// Compiles a server's `tools.allow` / `tools.deny` lists.
    pub fn new(filter: &ToolFilter) -> Self {
        Self::from_lists(&filter.allow, &filter.deny)
    }

    /// Compiles explicit allow and deny pattern lists.
    pub fn from_lists<S: AsRef<str>>(allow: &[S], deny: &[S]) -> Self {
        NameFilter {
            allow: allow.iter().map(|p| Glob::new(p.as_ref())).collect(),
            deny: deny.iter().map(|p| Glob::new(p.as_ref())).collect(),
        }
    }

    /// Decides on a tool known by `raw` and `exposed` names.
    pub fn verdict(&self, raw: &str, exposed: &str) -> FilterVerdict {
        let hit = |g: &Glob| g.matches(raw) || g.matches(exposed);
        if let Some(g) = self.deny.iter().find(|g| hit(g)) {
            return FilterVerdict::Denied {
                pattern: g.as_str().to_string(),
            };
        }
        if self.allow.is_empty() || self.allow.iter().any(hit) {
            FilterVerdict::Allowed
        } else {
            FilterVerdict::NotAllowed
        }
    }

    /// Shorthand for `verdict(raw, exposed).is_allowed()`.
    pub fn allows(&self, raw: &str, exposed: &str) -> bool {
        self.verdict(raw, exposed).is_allowed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stars_questions_and_classes() {
        let cases = [
            ("mcp__github__*", "mcp__github__create_issue", true),
            ("mcp__github__*", "mcp__gitlab__create_issue", false),
            ("*", "", true),
            ("*", "anything", true),
            ("", "", true),
            ("", "x", false),
            ("read_*", "read_", true),
            ("*_file", "read_text_file", true),
            ("*_file", "read_text_files", false),
            ("a*b*c", "aXbYc", true),
            ("a*b*c", "abcab", false),
            ("a*b*c", "abcbc", true),
            ("get-?", "get-a", true),
            ("get-?", "get-", false),
            ("get-?", "get-ab", false),
            ("[rw]*", "read", true),
            ("[rw]*", "write", true),
            ("[rw]*", "delete", false),
            ("[!rw]*", "delete", true),
            ("[a-c]x", "bx", true),
            ("[a-c]x", "dx", false),
            ("[]]", "]", true),
            ("[abc", "[abc", true),
            ("\\*", "*", true),
            ("\\*", "x", false),
            ("**", "abc", true),
            ("é*", "éclair", true),
        ];
        for (pattern, text, expected) in cases {
            assert_eq!(
                Glob::new(pattern).matches(text),
                expected,
                "{pattern:?} vs {text:?}"
            );
        }
    }

    #[test]
    fn literal_patterns_are_recognised() {
        assert!(Glob::new("echo").is_literal());
        assert!(!Glob::new("ech?").is_literal());
        assert!(!Glob::new("e*").is_literal());
    }

    #[test]
    fn pathological_patterns_stay_linear() {
        let text = "a".repeat(5000);
        let pattern = format!("{}b", "a*".repeat(50));
        assert!(!Glob::new(&pattern).matches(&text));
    }

    fn filter(allow: &[&str], deny: &[&str]) -> NameFilter {
        NameFilter::from_lists(allow, deny)
    }

    #[test]
    fn empty_allow_admits_everything_and_deny_wins() {
        let f = filter(&[], &[]);
        assert!(f.allows("anything", "mcp__s__anything"));

        let f = filter(&[], &["delete_*"]);
        assert!(f.allows("read_file", "mcp__fs__read_file"));
        assert_eq!(
            f.verdict("delete_file", "mcp__fs__delete_file"),
            FilterVerdict::Denied {
                pattern: "delete_*".into()
            }
        );

        let f = filter(&["read_*", "mcp__fs__list_*"], &["read_secret*"]);
        assert!(f.allows("read_file", "mcp__fs__read_file"));
        assert!(f.allows("list_directory", "mcp__fs__list_directory"));
        assert_eq!(
            f.verdict("write_file", "mcp__fs__write_file"),
            FilterVerdict::NotAllowed
        );
        assert!(!f.allows("read_secrets", "mcp__fs__read_secrets"));
    }

    #[test]
    fn patterns_match_raw_or_exposed_names() {
        let f = filter(&["mcp__github__*"], &[]);
        assert!(f.allows("create_issue", "mcp__github__create_issue"));
        let f = filter(&[], &["mcp__github__create_*"]);
        assert!(!f.allows("create_issue", "mcp__github__create_issue"));
        let f = filter(&["create_issue"], &[]);
        assert!(f.allows("create_issue", "mcp__github__create_issue"));
        assert!(!f.allows("close_issue", "mcp__github__close_issue"));
    }

    #[test]
    fn verdicts_explain_themselves() {
        assert_eq!(
            FilterVerdict::Denied {
                pattern: "x*".into()
            }
            .to_string(),
            "hidden by tools.deny `x*`"
        );
        assert_eq!(
            FilterVerdict::NotAllowed.to_string(),
            "not matched by tools.allow"
        );
    }
}
