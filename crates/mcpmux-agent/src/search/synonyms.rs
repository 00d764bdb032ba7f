//! Words a request to a tool uses where the tool's own text says it another way: `find` for
//! `search`, `folder` for `directory`, `PR` for `pull request`. A query term brings in the other
//! words of its group at a lower weight, so the word the model used still counts most. The
//! groups are the everyday vocabulary of asking software to act (verbs of reading, writing,
//! finding, removing; the common names of files, messages, releases), not any catalog's or
//! query set's words. Knows nothing of tools or scoring.

use std::collections::HashMap;
use std::sync::LazyLock;

use super::tokens::terms;

/// How much a word brought in by a synonym counts, against the word the query used.
pub const SYNONYM_WEIGHT: f32 = 0.5;

/// Words that mean the same to a tool, as a request would say them. A member may be a phrase
/// (`look up`, `pull request`): each of its terms is brought in.
const GROUPS: &[&[&str]] = &[
    // Verbs: what to do.
    &["search", "find", "look up", "lookup", "seek"],
    &["get", "fetch", "retrieve", "obtain"],
    &["show", "display", "view"],
    &["create", "make", "new", "add"],
    &[
        "delete", "remove", "erase", "drop", "destroy", "discard", "forget",
    ],
    &["update", "change", "modify", "edit", "alter"],
    &["list", "enumerate", "browse"],
    &["send", "post", "deliver", "submit"],
    &["cancel", "stop", "abort", "halt", "terminate"],
    &["start", "begin", "launch", "trigger", "kick off"],
    &["run", "execute"],
    &["reply", "respond", "answer"],
    &["save", "store", "persist", "remember"],
    &["rename", "move"],
    &["copy", "duplicate"],
    &["compress", "zip", "gzip"],
    &["deploy", "release", "ship", "publish"],
    // Things: what to do it to.
    &["directory", "folder", "dir"],
    &["image", "picture", "photo", "pic", "screenshot"],
    &["web", "internet", "online", "website"],
    &["size", "big", "large", "bytes"],
    &["repository", "repo"],
    &["pull request", "pr", "merge request", "mr"],
    &["configuration", "config", "settings"],
    &["error", "failure", "exception", "crash"],
    &["bug", "issue", "defect"],
    &["meeting", "event", "appointment"],
    &["alert", "warning", "alarm"],
    &["information", "info", "metadata", "details"],
    &["permission", "access", "rights"],
    &["environment", "env"],
    &["coordinates", "latitude", "longitude"],
    &["timezone", "time zone", "tz"],
    &["directions", "route", "navigate"],
    &["money", "payment", "funds", "cash"],
    &["price", "cost"],
    &["message", "msg"],
    &["document", "doc"],
    &["database", "db"],
    &["email", "mail", "e-mail"],
    &["recent", "latest", "newest"],
    &["task", "todo"],
    &["note", "memo", "jot"],
    &["customer", "client"],
    &["metrics", "statistics", "stats"],
];

/// What brings in what: a one-word member by itself, a phrase when all its words are in the
/// query (`look something up`).
#[derive(Default)]
struct Expansions {
    words: HashMap<String, Vec<String>>,
    phrases: Vec<(Vec<String>, Vec<String>)>,
}

static EXPANSIONS: LazyLock<Expansions> = LazyLock::new(|| {
    let mut expansions = Expansions::default();
    for group in GROUPS {
        let members: Vec<Vec<String>> = group.iter().map(|m| terms(m, 4)).collect();
        for (i, member) in members.iter().enumerate() {
            let mut others: Vec<String> = Vec::new();
            for (j, other) in members.iter().enumerate() {
                for term in other {
                    if i != j && !member.contains(term) && !others.contains(term) {
                        others.push(term.clone());
                    }
                }
            }
            match member.as_slice() {
                [] => {}
                [word] => expansions
                    .words
                    .entry(word.clone())
                    .or_default()
                    .extend(others),
                _ => expansions.phrases.push((member.clone(), others)),
            }
        }
    }
    expansions
});

/// The query's terms with their weights: its own at 1, the ones its synonyms bring in at
/// [`SYNONYM_WEIGHT`] (a term both used and brought in counts as used). Sorted by term.
pub fn expand(words: &[String]) -> Vec<(String, f32)> {
    let mut weighted: HashMap<&str, f32> = words.iter().map(|w| (w.as_str(), 1.0)).collect();
    let phrases = EXPANSIONS
        .phrases
        .iter()
        .filter(|(phrase, _)| phrase.iter().all(|p| words.contains(p)))
        .map(|(_, others)| others);
    let brought = words
        .iter()
        .filter_map(|w| EXPANSIONS.words.get(w))
        .chain(phrases);
    for term in brought.flatten() {
        let weight = weighted.entry(term.as_str()).or_insert(0.0);
        *weight = weight.max(SYNONYM_WEIGHT);
    }
    let mut out: Vec<(String, f32)> = weighted
        .into_iter()
        .map(|(term, weight)| (term.to_string(), weight))
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn weights(query: &str) -> HashMap<String, f32> {
        expand(&terms(query, 64)).into_iter().collect()
    }

    #[test]
    fn a_word_brings_in_its_synonyms_at_a_lower_weight() {
        let w = weights("find a folder");
        assert_eq!(w["find"], 1.0);
        assert_eq!(w["search"], SYNONYM_WEIGHT);
        assert_eq!(w[&terms("directory", 1)[0]], SYNONYM_WEIGHT);
        assert!(!w.contains_key("image"));
    }

    #[test]
    fn an_abbreviation_brings_in_every_word_of_its_phrase() {
        let w = weights("comment on a PR");
        assert_eq!(w["pull"], SYNONYM_WEIGHT);
        assert_eq!(w[&terms("request", 1)[0]], SYNONYM_WEIGHT);
    }

    #[test]
    fn a_word_used_keeps_its_full_weight_when_a_synonym_also_brings_it_in() {
        let w = weights("search and find");
        assert_eq!(w["search"], 1.0);
        assert_eq!(w["find"], 1.0);
    }

    #[test]
    fn a_phrase_brings_in_its_group_when_all_its_words_are_in_the_query() {
        let w = weights("look something up on the internet");
        assert_eq!(w["search"], SYNONYM_WEIGHT);
        assert_eq!(w["web"], SYNONYM_WEIGHT);
    }

    #[test]
    fn a_word_of_a_phrase_alone_brings_nothing_in() {
        let w = weights("look");
        assert_eq!(w.len(), 1);
        let w = weights("pull");
        assert_eq!(w.len(), 1);
    }
}
