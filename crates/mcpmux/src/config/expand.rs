//! `${VAR}` expansion in config values: `${VAR}`, `${VAR:-default}` and `$$` for a literal `$`.
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
}

/// Expands every reference in `input`, looking variables up with `env`.
///
/// Like the shell, `${VAR:-default}` uses the default when `VAR` is unset *or* empty.
pub(crate) fn expand(
    input: &str,
    env: &dyn Fn(&str) -> Option<String>,
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
            out.push_str(&resolve(body, env)?);
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
fn resolve(body: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<String, ExpandError> {
    let (name, default) = match body.split_once(":-") {
        Some((name, default)) => (name, Some(default)),
        None => (body, None),
    };
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
    fn multibyte_text_around_references_survives() {
        assert_eq!(expand("é${TOKEN}ü$$ß", &env), Ok("és3cr3tü$ß".into()));
    }
}
