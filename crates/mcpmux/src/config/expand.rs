//! `${VAR}` expansion in config values: `${VAR}`, `${VAR:-default}` and `$$` for a literal `$`;
//! `${secret:NAME}` (and `${secret:NAME:-default}`) asks the caller's secret lookup instead of
//! the environment.
//!
//! The same syntax Claude Code and docker-compose use, so a `.mcp.json` written for Claude
//! means the same here. A `$` not followed by `{` or `$` is kept as written (`$HOME` is not
//! expanded: shells do that, config files do not). Knows nothing of files or servers: the
//! caller turns an [`ExpandError`] into a `ConfigError` naming the file, server and field.

/// Why a value could not be expanded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ExpandError {
    /// `${NAME}` with `NAME` unset and no default.
    Unset(String),
    /// `${` without its closing `}`.
    Unterminated,
    /// `${...}` whose name is not a variable name (`${}`, `${A B}`, `${A-b}`).
    BadName(String),
    /// `${secret:NAME}` with no such secret and no default.
    MissingSecret(String),
    /// `${secret:NAME}` that cannot be answered (the store is refused, or secrets are not
    /// allowed in this field): the caller's reason.
    SecretUnavailable {
        /// The secret's name.
        name: String,
        /// Why, naming the file or the field; never a value.
        reason: String,
    },
}

/// What a secret lookup answers: `Ok(None)` when the name has no value.
pub(crate) type SecretFn<'a> = &'a dyn Fn(&str) -> Result<Option<String>, String>;

/// The prefix of a secret reference's body.
pub(crate) const SECRET_PREFIX: &str = "secret:";

/// Expands every reference in `input`, looking variables up with `env`; a secret reference is
/// an error (no secrets are read).
// The dialects expand through `Fields`, which reads secrets; this stays for callers without.
#[cfg_attr(not(test), allow(dead_code))]
///
/// Like the shell, `${VAR:-default}` uses the default when `VAR` is unset *or* empty.
pub(crate) fn expand(
    input: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<String, ExpandError> {
    expand_with(input, env, &|name| {
        Err(format!(
            "no secrets are read here (${{{SECRET_PREFIX}{name}}})"
        ))
    })
}

/// [`expand`] with `${secret:NAME}` answered by `secret`.
pub(crate) fn expand_with(
    input: &str,
    env: &dyn Fn(&str) -> Option<String>,
    secret: SecretFn<'_>,
) -> Result<String, ExpandError> {
    // Fast path: most values have no `$` at all.
    if !input.contains('$') {
        return Ok(input.to_owned());
    }
    let mut out = String::with_capacity(input.len());
    let mut rest = input;
    while let Some(dollar) = rest.find('$') {
        out.push_str(&rest[..dollar]);
        let after = &rest[dollar + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
        } else if let Some(body_and_tail) = after.strip_prefix('{') {
            let close = body_and_tail.find('}').ok_or(ExpandError::Unterminated)?;
            let body = &body_and_tail[..close];
            out.push_str(&resolve(body, env, secret)?);
            rest = &body_and_tail[close + 1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// The value of one `${...}` body: `NAME` or `NAME:-default`.
fn resolve(
    body: &str,
    env: &dyn Fn(&str) -> Option<String>,
    secret: SecretFn<'_>,
) -> Result<String, ExpandError> {
    let (name, default) = match body.split_once(":-") {
        Some((name, default)) => (name, Some(default)),
        None => (body, None),
    };
    if let Some(name) = name.strip_prefix(SECRET_PREFIX) {
        if !is_secret_name(name) {
            return Err(ExpandError::BadName(body.to_owned()));
        }
        return match (secret(name), default) {
            (Ok(Some(value)), _) => Ok(value),
            (Ok(None), Some(default)) => Ok(default.to_owned()),
            (Ok(None), None) => Err(ExpandError::MissingSecret(name.to_owned())),
            (Err(reason), _) => Err(ExpandError::SecretUnavailable {
                name: name.to_owned(),
                reason,
            }),
        };
    }
    if !is_variable_name(name) {
        return Err(ExpandError::BadName(body.to_owned()));
    }
    match (env(name), default) {
        (Some(value), Some(default)) if value.is_empty() => Ok(default.to_owned()),
        (Some(value), _) => Ok(value),
        (None, Some(default)) => Ok(default.to_owned()),
        (None, None) => Err(ExpandError::Unset(name.to_owned())),
    }
}

/// Longest secret name: a name is a label, not data.
const MAX_SECRET_NAME: usize = 128;

/// Whether `name` can name a secret (what `mcpmux secret set` accepts): letters, digits, `-`,
/// `_` and `.`, at most 128.
pub fn valid_secret_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_SECRET_NAME
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

fn is_secret_name(name: &str) -> bool {
    valid_secret_name(name)
}

/// The secret names `text` refers to (`${secret:NAME}` and `${secret:NAME:-default}`), in
/// order; `$${secret:X}` is literal text, not a reference.
pub(crate) fn secret_references(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = text;
    while let Some(dollar) = rest.find('$') {
        let after = &rest[dollar + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            rest = tail;
        } else if let Some(body) = after.strip_prefix('{') {
            let Some(close) = body.find('}') else { break };
            let inner = &body[..close];
            let name = inner.split_once(":-").map_or(inner, |(name, _)| name);
            if let Some(name) = name.strip_prefix(SECRET_PREFIX)
                && is_secret_name(name)
            {
                names.push(name.to_owned());
            }
            rest = &body[close + 1..];
        } else {
            rest = after;
        }
    }
    names
}

/// The environment variables `text` reads, in order: `${NAME}`, `${NAME:-default}`, the
/// editors' `${env:NAME}`, and with `bare` (Gemini CLI) `$NAME`; secrets, `$${X}` (literal
/// text) and other `${…}` forms are left out.
pub(crate) fn variable_references(text: &str, bare: bool) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = text;
    while let Some(dollar) = rest.find('$') {
        let after = &rest[dollar + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            rest = tail;
        } else if let Some(body) = after.strip_prefix('{') {
            let Some(close) = body.find('}') else { break };
            let inner = &body[..close];
            let name = inner.split_once(":-").map_or(inner, |(name, _)| name);
            let name = name.strip_prefix("env:").unwrap_or(name);
            if is_variable_name(name) {
                names.push(name.to_owned());
            }
            rest = &body[close + 1..];
        } else {
            let end = after
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            if bare && is_variable_name(&after[..end]) {
                names.push(after[..end].to_owned());
            }
            rest = after;
        }
    }
    names
}

/// A POSIX-style name: a letter or `_`, then letters, digits or `_`.
fn is_variable_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "TOKEN" => Some("s3cr3t".into()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    #[test]
    fn expands_set_variables_and_keeps_plain_text() {
        assert_eq!(expand("Bearer ${TOKEN}", &env), Ok("Bearer s3cr3t".into()));
        assert_eq!(expand("${TOKEN}${TOKEN}", &env), Ok("s3cr3ts3cr3t".into()));
        assert_eq!(expand("no refs", &env), Ok("no refs".into()));
        assert_eq!(expand("${EMPTY}", &env), Ok(String::new()));
    }

    #[test]
    fn defaults_apply_when_unset_or_empty() {
        assert_eq!(expand("${NOPE:-fallback}", &env), Ok("fallback".into()));
        assert_eq!(expand("${EMPTY:-fallback}", &env), Ok("fallback".into()));
        assert_eq!(expand("${TOKEN:-fallback}", &env), Ok("s3cr3t".into()));
        assert_eq!(expand("x${NOPE:-}y", &env), Ok("xy".into()));
        assert_eq!(expand("${NOPE:-a:-b}", &env), Ok("a:-b".into()));
    }

    #[test]
    fn double_dollar_is_a_literal_dollar() {
        assert_eq!(expand("$${TOKEN}", &env), Ok("${TOKEN}".into()));
        assert_eq!(expand("price: 5$$", &env), Ok("price: 5$".into()));
        assert_eq!(expand("$HOME and $", &env), Ok("$HOME and $".into()));
    }

    #[test]
    fn unset_unterminated_and_bad_names_are_errors() {
        assert_eq!(
            expand("${NOPE}", &env),
            Err(ExpandError::Unset("NOPE".into()))
        );
        assert_eq!(expand("abc ${TOKEN", &env), Err(ExpandError::Unterminated));
        assert_eq!(
            expand("${}", &env),
            Err(ExpandError::BadName(String::new()))
        );
        assert_eq!(
            expand("${A B}", &env),
            Err(ExpandError::BadName("A B".into()))
        );
        assert_eq!(
            expand("${1X}", &env),
            Err(ExpandError::BadName("1X".into()))
        );
    }

    #[test]
    fn variable_references_name_every_variable_a_text_reads() {
        let text = "${A} ${B:-x} ${env:C} $${D} ${secret:e} $F ${1x}";
        assert_eq!(variable_references(text, false), ["A", "B", "C"]);
        assert_eq!(variable_references(text, true), ["A", "B", "C", "F"]);
    }

    #[test]
    fn secret_references_ask_the_secret_lookup_never_the_environment() {
        let secret = |name: &str| match name {
            "gh" => Ok(Some("tok".to_owned())),
            "broken" => Err("refused".to_owned()),
            _ => Ok(None),
        };
        let env = |name: &str| (name == "secret:gh").then(|| "from-env".to_owned());
        assert_eq!(
            expand_with("Bearer ${secret:gh}", &env, &secret),
            Ok("Bearer tok".into())
        );
        assert_eq!(
            expand_with("${secret:none:-d}", &env, &secret),
            Ok("d".into())
        );
        assert_eq!(
            expand_with("${secret:none}", &env, &secret),
            Err(ExpandError::MissingSecret("none".into()))
        );
        assert!(matches!(
            expand_with("${secret:broken:-d}", &env, &secret),
            Err(ExpandError::SecretUnavailable { .. })
        ));
        assert_eq!(
            expand_with("$${secret:gh}", &env, &secret),
            Ok("${secret:gh}".into())
        );
        assert!(matches!(
            expand("${secret:gh}", &env),
            Err(ExpandError::SecretUnavailable { .. })
        ));
        assert_eq!(
            secret_references("a ${secret:x} $${secret:no} ${secret:y:-d} ${Z}"),
            ["x", "y"]
        );
    }

    #[test]
    fn multibyte_text_around_references_survives() {
        assert_eq!(expand("é${TOKEN}ü$$ß", &env), Ok("és3cr3tü$ß".into()));
    }
}
