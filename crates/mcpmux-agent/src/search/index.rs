//! [`ToolIndex`]: BM25F over a tool set, built once, searched per query. Each term's posting
//! list holds the term's saturated weight in each tool (fields weighted and length-normalised
//! at build time), so a query only adds up `idf × weight` along its terms' lists; the words its
//! synonyms bring in (`synonyms`) count at a lower weight. Knows nothing of providers, deferral
//! or the hub.
//!
//! Why not a crate: the small BM25 crates score one text per document; tool search needs
//! fields of different weight (a match in a name counts more than one in a description), which
//! is the few lines of BM25F below.

use std::collections::HashMap;

use mcpmux::Tool;

use super::fields::{Field, tool_terms};
use super::synonyms::expand;
use super::tokens::terms;

/// BM25's term-frequency saturation (the usual 1.2).
const K1: f32 = 1.2;
/// Most characters of a query read; most terms of a query used.
const MAX_QUERY_CHARS: usize = 1024;
const MAX_QUERY_TERMS: usize = 64;

/// Length normalisation per field: names and parameter lists are short and all alike; a long
/// description says more words about the same thing, so it is normalised the usual 0.75.
fn length_norm(field: Field) -> f32 {
    match field {
        Field::Text => 0.75,
        Field::Name | Field::Title | Field::Params => 0.5,
    }
}

/// One tool found by [`ToolIndex::search`].
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    /// The tool's exposed name.
    pub name: String,
    /// Its BM25F score (higher is better; comparable within one query only).
    pub score: f32,
}

#[derive(Debug, Clone)]
struct Term {
    idf: f32,
    /// `(tool, saturated weight)`, by tool.
    postings: Vec<(u32, f32)>,
}

/// A search index over a tool set: names, titles, parameter names and descriptions.
#[derive(Debug, Clone, Default)]
pub struct ToolIndex {
    /// Exposed names, by tool number.
    names: Vec<String>,
    terms: HashMap<String, Term>,
    /// Lowercased exposed and raw names → tools: a query that is a tool's name finds it first.
    exact: HashMap<String, Vec<u32>>,
}

impl ToolIndex {
    /// Indexes `tools`. Bounded work per tool whatever its schema (see `fields`).
    pub fn new(tools: &[Tool]) -> ToolIndex {
        let docs: Vec<[Vec<String>; 4]> = tools.iter().map(tool_terms).collect();
        let count = docs.len().max(1) as f32;
        let mut average = [0f32; 4];
        for doc in &docs {
            for field in Field::ALL {
                average[field.index()] += doc[field.index()].len() as f32 / count;
            }
        }
        // term → tool → pseudo term frequency (BM25F: weighted, length-normalised per field).
        let mut frequencies: HashMap<&str, Vec<(u32, f32)>> = HashMap::new();
        for (number, doc) in docs.iter().enumerate() {
            let mut own: HashMap<&str, f32> = HashMap::new();
            for field in Field::ALL {
                let words = &doc[field.index()];
                let b = length_norm(field);
                let avg = average[field.index()].max(1.0);
                let norm = 1.0 - b + b * words.len() as f32 / avg;
                for word in words {
                    *own.entry(word.as_str()).or_default() += field.weight() / norm;
                }
            }
            for (word, tf) in own {
                frequencies
                    .entry(word)
                    .or_default()
                    .push((number as u32, tf));
            }
        }
        let terms = frequencies
            .into_iter()
            .map(|(word, mut postings)| {
                let n = postings.len() as f32;
                let idf = (1.0 + (count - n + 0.5) / (n + 0.5)).ln();
                for (_, tf) in &mut postings {
                    *tf /= K1 + *tf;
                }
                postings.sort_by_key(|(tool, _)| *tool);
                (word.to_string(), Term { idf, postings })
            })
            .collect();
        let mut exact: HashMap<String, Vec<u32>> = HashMap::new();
        for (number, tool) in tools.iter().enumerate() {
            for name in [&tool.name, &tool.raw_name] {
                let list = exact.entry(name.to_lowercase()).or_default();
                if !list.contains(&(number as u32)) {
                    list.push(number as u32);
                }
            }
        }
        ToolIndex {
            names: tools.iter().map(|t| t.name.clone()).collect(),
            terms,
            exact,
        }
    }

    /// How many tools are indexed.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// Whether no tool is indexed.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// The `k` tools that best match `query`, best first; ties by name. A query that is a
    /// tool's exposed or raw name puts that tool first. A query with no known term (empty,
    /// punctuation, words no tool uses) finds nothing.
    pub fn search(&self, query: &str, k: usize) -> Vec<Hit> {
        if k == 0 || self.names.is_empty() {
            return Vec::new();
        }
        let query: String = query.chars().take(MAX_QUERY_CHARS).collect();
        let mut words = terms(&query, MAX_QUERY_TERMS);
        words.sort();
        words.dedup();
        let mut scores = vec![0f32; self.names.len()];
        let mut touched: Vec<u32> = Vec::new();
        for (word, boost) in expand(&words) {
            let Some(term) = self.terms.get(&word) else {
                continue;
            };
            for &(tool, weight) in &term.postings {
                let score = &mut scores[tool as usize];
                if *score == 0.0 {
                    touched.push(tool);
                }
                *score += boost * term.idf * weight;
            }
        }
        let top = touched
            .iter()
            .map(|&tool| (tool, scores[tool as usize]))
            .fold(0f32, |best, (_, s)| best.max(s));
        if let Some(named) = self.exact.get(&query.trim().to_lowercase()) {
            for &tool in named {
                if scores[tool as usize] == 0.0 {
                    touched.push(tool);
                }
                scores[tool as usize] = top + 1.0;
            }
        }
        let by_rank = |a: &u32, b: &u32| {
            scores[*b as usize]
                .total_cmp(&scores[*a as usize])
                .then_with(|| self.names[*a as usize].cmp(&self.names[*b as usize]))
        };
        if touched.len() > k {
            touched.select_nth_unstable_by(k - 1, by_rank);
            touched.truncate(k);
        }
        touched.sort_unstable_by(by_rank);
        touched
            .into_iter()
            .filter(|&tool| scores[tool as usize] > 0.0)
            .map(|tool| Hit {
                name: self.names[tool as usize].clone(),
                score: scores[tool as usize],
            })
            .collect()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(server: &str, raw: &str, description: &str, params: &[&str]) -> Tool {
        let properties: serde_json::Map<String, serde_json::Value> = params
            .iter()
            .map(|p| (p.to_string(), json!({"type": "string"})))
            .collect();
        Tool::local(
            format!("mcp__{server}__{raw}"),
            json!({"type": "object", "properties": properties}),
        )
        .with_description(description)
        .with_source(server)
    }

    fn catalog() -> Vec<Tool> {
        vec![
            tool(
                "fs",
                "read_text_file",
                "Read the complete contents of a file as text.",
                &["path", "head", "tail"],
            ),
            tool(
                "fs",
                "write_file",
                "Create a new file or overwrite an existing file.",
                &["path", "content"],
            ),
            tool(
                "fs",
                "list_directory",
                "List all files and directories in a path.",
                &["path"],
            ),
            tool(
                "time",
                "get_current_time",
                "Get current time in a specific timezone.",
                &["timezone"],
            ),
            tool(
                "time",
                "convert_time",
                "Convert time between timezones.",
                &["source_timezone", "target_timezone", "time"],
            ),
            tool(
                "gh",
                "create_issue",
                "Open a new issue in a repository.",
                &["repo", "title", "body"],
            ),
            tool(
                "gh",
                "merge_pull_request",
                "Merge an open pull request.",
                &["repo", "number"],
            ),
        ]
    }

    fn names(hits: &[Hit]) -> Vec<&str> {
        hits.iter().map(|h| h.name.as_str()).collect()
    }

    #[test]
    fn a_paraphrased_request_finds_the_tool_that_does_it() {
        let index = ToolIndex::new(&catalog());
        let first = |q: &str| index.search(q, 3)[0].name.clone();
        assert_eq!(
            first("what is the current time in Tokyo"),
            "mcp__time__get_current_time"
        );
        assert_eq!(first("merge a pull request"), "mcp__gh__merge_pull_request");
        assert_eq!(
            first("show me the contents of a text file"),
            "mcp__fs__read_text_file"
        );
        assert_eq!(
            first("open an issue about the crash"),
            "mcp__gh__create_issue"
        );
        assert_eq!(
            first("convert 3pm from Berlin to New York"),
            "mcp__time__convert_time"
        );
    }

    #[test]
    fn a_request_in_other_words_finds_the_tool_through_synonyms() {
        let index = ToolIndex::new(&catalog());
        let first = |q: &str| index.search(q, 3)[0].name.clone();
        assert_eq!(first("show the folders"), "mcp__fs__list_directory");
        assert_eq!(first("combine a PR"), "mcp__gh__merge_pull_request");
        // The word used outweighs the synonym it brings in: `make` brings in `create`, yet
        // a tool that says `make` would rank above one that says `create`.
        let tools = vec![
            tool("a", "create_thing", "Create a thing.", &[]),
            tool("b", "make_thing", "Make a thing.", &[]),
        ];
        let hits = ToolIndex::new(&tools).search("make a thing", 2);
        assert_eq!(names(&hits), ["mcp__b__make_thing", "mcp__a__create_thing"]);
    }

    #[test]
    fn a_name_match_outweighs_the_same_word_in_a_description() {
        let tools = vec![
            tool(
                "a",
                "archive_mail",
                "Moves a file attachment of a mail to the archive folder.",
                &[],
            ),
            tool("b", "file_upload", "Uploads bytes.", &[]),
        ];
        let hits = ToolIndex::new(&tools).search("file", 2);
        assert_eq!(
            names(&hits),
            ["mcp__b__file_upload", "mcp__a__archive_mail"]
        );
    }

    #[test]
    fn a_query_that_is_a_tool_name_ranks_it_first() {
        let index = ToolIndex::new(&catalog());
        for name in [
            "mcp__fs__write_file",
            "write_file",
            "WRITE_FILE",
            "convert_time",
        ] {
            let hits = index.search(name, 5);
            assert!(
                hits[0].name.ends_with(&name.to_lowercase()),
                "{name}: {hits:?}"
            );
        }
        // `file` is in several tools; the exact name still wins over their scores.
        let hits = index.search("write_file", 5);
        assert_eq!(hits[0].name, "mcp__fs__write_file");
        assert!(hits[0].score > hits[1].score);
    }

    #[test]
    fn equal_scores_are_ordered_by_name_every_time() {
        let tools: Vec<Tool> = ["zeta", "alpha", "mid"]
            .iter()
            .map(|s| tool(s, "ping", "Check the service answers.", &[]))
            .collect();
        for _ in 0..5 {
            let hits = ToolIndex::new(&tools).search("check service", 3);
            assert_eq!(
                names(&hits),
                ["mcp__alpha__ping", "mcp__mid__ping", "mcp__zeta__ping"]
            );
            assert_eq!(hits[0].score, hits[2].score);
        }
        let top = ToolIndex::new(&tools).search("check service", 1);
        assert_eq!(names(&top), ["mcp__alpha__ping"]);
    }

    #[test]
    fn empty_garbage_or_unknown_queries_find_nothing() {
        let index = ToolIndex::new(&catalog());
        for query in [
            "",
            "   ",
            "!!!???",
            "the of and",
            "xyzzy plugh",
            &"é".repeat(100_000),
        ] {
            assert!(index.search(query, 5).is_empty(), "{query:.20}");
        }
        assert!(index.search("file", 0).is_empty());
        assert!(ToolIndex::new(&[]).search("file", 5).is_empty());
    }

    #[test]
    fn k_bounds_the_hits_and_only_matching_tools_are_returned() {
        let index = ToolIndex::new(&catalog());
        assert_eq!(index.search("file path", 2).len(), 2);
        let all = index.search("timezone", 50);
        assert_eq!(names(&all).len(), 2);
    }
}
