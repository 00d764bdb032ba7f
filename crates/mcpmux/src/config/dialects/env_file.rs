//! `envFile` (Cursor, VS Code): a dotenv file of `NAME=value` lines whose variables a stdio
//! server gets.
//!
//! The file may come from a repository: it is read with a size bound, and its values never
//! appear in a message or a log line (a bad line is named by its number only). Knows nothing of
//! servers or of where the path came from.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

/// Largest `envFile` read: a dotenv file is a few lines; more is a mistake or an attack.
pub(crate) const MAX_BYTES: u64 = 256 * 1024;

/// The variables of the dotenv file at `path`, or why it cannot be used (no value quoted).
pub(crate) fn read(path: &Path) -> Result<BTreeMap<String, String>, String> {
    let file = std::fs::File::open(path).map_err(|error| {
        format!(
            "cannot read {}: {}",
            path.display(),
            match error.kind() {
                std::io::ErrorKind::NotFound => "no such file: check the path".to_owned(),
                _ => error.to_string(),
            }
        )
    })?;
    let mut bytes = Vec::new();
    file.take(MAX_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|error| format!("cannot read {}: {error}", path.display()))?;
    if bytes.len() as u64 > MAX_BYTES {
        return Err(format!(
            "{} is larger than {} KiB: an env file holds a few NAME=value lines",
            path.display(),
            MAX_BYTES / 1024
        ));
    }
    let text =
        String::from_utf8(bytes).map_err(|_| format!("{} is not UTF-8 text", path.display()))?;
    parse(&text).map_err(|line| {
        format!(
            "{}:{line}: not a NAME=value line (the line is not shown: it may hold a secret)",
            path.display()
        )
    })
}

/// The variables of dotenv `text`; the 1-based number of the first line that is not one.
fn parse(text: &str) -> Result<BTreeMap<String, String>, usize> {
    let mut vars = BTreeMap::new();
    for (index, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line.strip_prefix("export ").unwrap_or(line);
        let Some((name, value)) = line.split_once('=') else {
            return Err(index + 1);
        };
        let name = name.trim();
        let mut chars = name.chars();
        let valid = matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '-');
        if !valid {
            return Err(index + 1);
        }
        vars.insert(name.to_owned(), value_of(value.trim()).ok_or(index + 1)?);
    }
    Ok(vars)
}

/// A value: `"…"` with `\n`, `\"` and `\\` escapes, `'…'` as written, or bare text up to a
/// ` #` comment.
fn value_of(raw: &str) -> Option<String> {
    if let Some(inner) = raw.strip_prefix('"') {
        let inner = inner.strip_suffix('"')?;
        let mut out = String::with_capacity(inner.len());
        let mut chars = inner.chars();
        while let Some(c) = chars.next() {
            if c != '\\' {
                out.push(c);
                continue;
            }
            match chars.next() {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some(other) => out.push(other),
                None => out.push('\\'),
            }
        }
        return Some(out);
    }
    if let Some(inner) = raw.strip_prefix('\'') {
        return inner.strip_suffix('\'').map(str::to_owned);
    }
    let value = match raw.find(" #") {
        Some(comment) => &raw[..comment],
        None => raw,
    };
    Some(value.trim_end().to_owned())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn dotenv_lines() {
        let vars =
            parse("# comment\n\nexport A=1\nB = \"two words\\n\" \nC='$raw'\nD=bare # note\nE=\n")
                .unwrap();
        assert_eq!(vars["A"], "1");
        assert_eq!(vars["B"], "two words\n");
        assert_eq!(vars["C"], "$raw");
        assert_eq!(vars["D"], "bare");
        assert_eq!(vars["E"], "");
        assert_eq!(parse("A=1\nsecret-without-equals\n"), Err(2));
        assert_eq!(parse("A=\"unclosed\n"), Err(1));
        assert_eq!(parse("1A=x"), Err(1));
    }

    #[test]
    fn a_bad_line_is_named_by_number_not_content() {
        let dir = std::env::temp_dir().join(format!("mcpmux-envfile-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(".env");
        std::fs::write(&path, "OK=1\nhunter2-secret\n").unwrap();
        let error = read(&path).unwrap_err();
        assert!(error.contains(":2:"), "{error}");
        assert!(!error.contains("hunter2"), "{error}");
        std::fs::write(&path, vec![b'A'; (MAX_BYTES + 10) as usize]).unwrap();
        assert!(read(&path).unwrap_err().contains("larger"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
