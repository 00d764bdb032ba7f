//! Text → search terms: identifiers split (`_`, `__`, `-`, camelCase, letters and digits),
//! lowercased, stop words dropped, a light suffix stemmer. The index and the query use the same
//! function, so the stemmer needs to be consistent rather than linguistically right. Knows
//! nothing of tools or scoring.

/// Longest term kept: a longer run of letters is noise (base64, a hash), not a word.
const MAX_TERM_CHARS: usize = 40;

/// Words that say nothing about what a tool does.
const STOP_WORDS: &[&str] = &[
    "a", "about", "all", "an", "and", "any", "are", "as", "at", "be", "been", "by", "can", "do",
    "does", "for", "from", "has", "have", "how", "i", "if", "in", "into", "is", "it", "its", "me",
    "my", "of", "on", "one", "or", "our", "should", "so", "some", "than", "that", "the", "their",
    "them", "then", "there", "these", "this", "those", "to", "too", "us", "via", "want", "was",
    "we", "what", "when", "where", "which", "while", "who", "will", "with", "would", "you", "your",
    "mcp", "please", "need", "tool",
];

/// The terms of `text`, in order, at most `limit` of them.
pub fn terms(text: &str, limit: usize) -> Vec<String> {
    let mut out = Vec::new();
    for word in words(text) {
        if out.len() >= limit {
            break;
        }
        if word.chars().count() > MAX_TERM_CHARS {
            continue;
        }
        let lower = word.to_lowercase();
        if STOP_WORDS.contains(&lower.as_str()) {
            continue;
        }
        out.push(stem(&lower));
    }
    out
}

/// Splits on every non-alphanumeric character, on a lower→upper case change (`readFile`), on
/// the end of an acronym (`HTTPServer` → `HTTP`, `Server`) and between letters and digits.
fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !c.is_alphanumeric())
        .flat_map(split_identifier)
        .filter(|w| !w.is_empty())
}

fn split_identifier(word: &str) -> Vec<&str> {
    let chars: Vec<(usize, char)> = word.char_indices().collect();
    let mut parts = Vec::new();
    let mut start = 0;
    for i in 1..chars.len() {
        let (at, c) = chars[i];
        let prev = chars[i - 1].1;
        let next_lower = chars.get(i + 1).is_some_and(|(_, n)| n.is_lowercase());
        let boundary = (prev.is_lowercase() && c.is_uppercase())
            || (prev.is_uppercase() && c.is_uppercase() && next_lower)
            || (prev.is_alphabetic() && c.is_numeric())
            || (prev.is_numeric() && c.is_alphabetic());
        if boundary {
            parts.push(&word[start..at]);
            start = at;
        }
    }
    parts.push(&word[start..]);
    parts
}

/// Strips the commonest English inflections: plurals, `-ing`, `-ed`, `-ies`. Short words are
/// left alone so `is`, `bus`, `red` survive.
pub fn stem(word: &str) -> String {
    let n = word.len();
    if !word.is_ascii() || n <= 3 {
        return word.to_string();
    }
    let cut = |suffix: usize| word[..n - suffix].to_string();
    if let Some(base) = word.strip_suffix("ies")
        && n > 4
    {
        return format!("{base}y");
    }
    if word.ends_with("sses") {
        return cut(2);
    }
    if (word.ends_with("ches") || word.ends_with("shes") || word.ends_with("xes")) && n > 4 {
        return cut(2);
    }
    if word.ends_with("ing") && n > 5 {
        return undouble(&word[..n - 3]);
    }
    if word.ends_with("ed") && n > 4 && !word.ends_with("eed") {
        let base = &word[..n - 2];
        // `created` → `creat` would not meet `create`: keep the `e` the verb had.
        if base.ends_with("at") || base.ends_with("iz") || base.ends_with("ov") {
            return format!("{base}e");
        }
        return undouble(base);
    }
    if word.ends_with('s')
        && !word.ends_with("ss")
        && !word.ends_with("us")
        && !word.ends_with("is")
    {
        return cut(1);
    }
    word.to_string()
}

/// `running` → `runn` → `run`; `listing` stays `list`.
fn undouble(base: &str) -> String {
    let b = base.as_bytes();
    let n = b.len();
    if n >= 3 && b[n - 1] == b[n - 2] && !matches!(b[n - 1], b'l' | b's' | b'z') {
        return base[..n - 1].to_string();
    }
    base.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(text: &str) -> Vec<String> {
        terms(text, 100)
    }

    #[test]
    fn identifiers_split_on_underscores_dashes_case_and_digits() {
        assert_eq!(t("mcp__fs__read_text_file"), ["fs", "read", "text", "file"]);
        assert_eq!(t("get-tiny-image"), ["get", "tiny", "image"]);
        assert_eq!(t("readMediaFile"), ["read", "media", "file"]);
        assert_eq!(t("HTTPServer2go"), ["http", "server", "2", "go"]);
        assert_eq!(t("s3Bucket"), ["s", "3", "bucket"]);
    }

    #[test]
    fn stop_words_go_and_inflections_meet_their_base() {
        assert_eq!(
            t("List the files in a directory"),
            ["list", "file", "directory"]
        );
        assert_eq!(stem("entities"), "entity");
        assert_eq!(stem("created"), stem("create"));
        assert_eq!(stem("listing"), "list");
        assert_eq!(stem("running"), "run");
        assert_eq!(stem("searches"), "search");
        assert_eq!(stem("status"), "status");
        assert_eq!(stem("address"), "address");
    }

    #[test]
    fn non_ascii_text_and_huge_runs_do_not_panic() {
        assert_eq!(
            t("Übersetze ÄÖÜ 東京 ñandú"),
            ["übersetze", "äöü", "東京", "ñandú"]
        );
        assert!(t(&"x".repeat(10_000)).is_empty());
        assert_eq!(terms("a b c d e f g h", 3), ["b", "c", "d"]);
        assert!(t("!!! ??? ---").is_empty());
    }
}
