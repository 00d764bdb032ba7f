//! What an approval shows: a project entry as the person must see it before saying yes.
//!
//! Everything that decides what runs and where it sends things: the whole command line (or the
//! URL and its host), `cwd`, every `env` key, every `${VAR}` and `${secret:…}` the entry would
//! read (by name, never a value: nothing is expanded here), header names, the options that
//! widen what the server may do, and a warning line for environment keys that change what a
//! command runs and for credentials sent to a destination the project chose. Text is escaped
//! for the terminal; anything cut says so. Knows nothing of approvals or hashes (`trust.rs`).

use std::fmt;
use std::path::PathBuf;

use serde_json::{Map, Value};

use super::Dialect;

/// The hashed keys that decide what a running server may do rather than what runs: an
/// `mcpmux.toml` table setting one of them on a server another project file defines needs
/// approval like a definition.
pub(crate) const OPTION_KEYS: &[&str] = &[
    "tools",
    "stages",
    "agents",
    "side_effects",
    "enabled_tools",
    "disabled_tools",
    "includeTools",
    "excludeTools",
    "disabledTools",
];

/// Longest command line or URL shown whole. A real one is a few hundred characters; a hostile
/// file must not flood the terminal, and past this the text says how much was left out.
const MAX_TARGET_CHARS: usize = 4096;

/// Longest single name or option value shown (an env key, a header name, a `tools` list).
const MAX_ITEM_CHARS: usize = 300;

/// Most names listed per line; past this the line says how many more there are.
const MAX_ITEMS: usize = 100;

/// Environment keys that change which code a command runs (preloaded libraries, interpreter
/// start-up files and options, the search path, the package registry `npx` fetches from).
const RUN_CHANGING_ENV: &[&str] = &[
    "PATH",
    "LD_PRELOAD",
    "LD_LIBRARY_PATH",
    "LD_AUDIT",
    "NODE_OPTIONS",
    "NODE_PATH",
    "PYTHONPATH",
    "PYTHONSTARTUP",
    "PYTHONHOME",
    "PYTHONUSERBASE",
    "BASH_ENV",
    "ENV",
    "SHELLOPTS",
    "PROMPT_COMMAND",
    "PS4",
    "IFS",
    "PERL5OPT",
    "PERL5LIB",
    "PERLLIB",
    "RUBYOPT",
    "RUBYLIB",
    "JAVA_TOOL_OPTIONS",
    "_JAVA_OPTIONS",
    "JDK_JAVA_OPTIONS",
    "CLASSPATH",
    "DOTNET_STARTUP_HOOKS",
    "GCONV_PATH",
    "GIT_SSH",
    "GIT_SSH_COMMAND",
    "GIT_EXEC_PATH",
    "GIT_CONFIG_GLOBAL",
    "ELECTRON_RUN_AS_NODE",
    "UV_INDEX_URL",
    "PIP_INDEX_URL",
    "PIP_EXTRA_INDEX_URL",
];

/// Prefixes of environment keys that change what runs (`DYLD_INSERT_LIBRARIES`,
/// `npm_config_registry`), compared without case.
const RUN_CHANGING_PREFIXES: &[&str] = &["DYLD_", "LD_", "NPM_CONFIG_", "BUN_CONFIG_"];

/// Words that make a variable's name look like a credential (`GITHUB_TOKEN`, `OPENAI_API_KEY`),
/// matched against the name's `_`-separated words, without case.
const CREDENTIAL_WORDS: &[&str] = &[
    "TOKEN",
    "TOKENS",
    "SECRET",
    "SECRETS",
    "PASSWORD",
    "PASSWD",
    "PASS",
    "KEY",
    "APIKEY",
    "CREDENTIAL",
    "CREDENTIALS",
    "CREDS",
    "AUTH",
    "COOKIE",
    "SESSION",
    "PAT",
    "BEARER",
    "JWT",
    "PRIVATE",
];

/// One server a project-level file defines (or, for an `mcpmux.toml` table without a command or
/// URL, the options it sets on a server an earlier file defines), as written: never expanded.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ProjectEntry {
    /// The server's name.
    pub name: String,
    /// The project file that defines it.
    pub file: PathBuf,
    /// What it runs or reaches, as written: the whole command line (arguments quoted when they
    /// hold spaces or quotes) or the URL; control characters escaped; a cut says so.
    pub target: String,
    /// Its `headersHelper` command, as written, when it has one.
    pub headers_helper: Option<String>,
    /// The secrets (`${secret:NAME}`) it would receive once approved, by name.
    pub secrets: Vec<String>,
    /// The hash of the raw entry that an approval names.
    pub hash: String,
    /// Whether it is approved (stored, by a user-level Claude setting, or by the callback).
    pub approved: bool,
    /// An `mcpmux.toml` table that sets only options (`tools`, `stages`, `agents`,
    /// `side_effects`) on a server an earlier file defines.
    pub options_only: bool,
    /// Its `cwd`, as written.
    pub cwd: Option<String>,
    /// The keys of its `env` (never the values).
    pub env: Vec<String>,
    /// The environment variables it would read (`${VAR}`, `${env:VAR}`, Codex's `env_vars`,
    /// `bearer_token_env_var`, `env_http_headers`), by name.
    pub variables: Vec<String>,
    /// The names of the headers it would send (never the values).
    pub headers: Vec<String>,
    /// The host (and port) of its URL; `None` for a command.
    pub host: Option<String>,
    /// The options that decide what it may do (`tools`, `stages`, `agents`, `side_effects`),
    /// as `key = value`.
    pub limits: Vec<String>,
    /// What the person should look at twice: environment that changes what runs, credentials
    /// sent to a destination the project chose.
    pub warnings: Vec<String>,
}

impl ProjectEntry {
    /// The entry for server `name` in `file`, from its raw fields; `hash` is what an approval
    /// stores. Not approved yet.
    pub(crate) fn new(
        name: &str,
        file: PathBuf,
        map: &Map<String, Value>,
        options_only: bool,
        hash: String,
        dialect: Dialect,
    ) -> Self {
        let mut entry = ProjectEntry {
            name: name.to_owned(),
            file,
            target: target(map, options_only),
            headers_helper: map
                .get("headersHelper")
                .or_else(|| map.get("headers_helper"))
                .map(|helper| shown(helper, MAX_TARGET_CHARS)),
            secrets: Vec::new(),
            hash,
            approved: false,
            options_only,
            cwd: map.get("cwd").map(|cwd| shown(cwd, MAX_ITEM_CHARS)),
            env: keys(map.get("env")),
            variables: Vec::new(),
            headers: Vec::new(),
            host: None,
            limits: Vec::new(),
            warnings: Vec::new(),
        };
        let mut variables = Vec::new();
        let mut secrets = Vec::new();
        // Gemini CLI also expands a bare `$NAME`.
        let bare = dialect == Dialect::Gemini;
        for value in map.values() {
            references(value, bare, &mut variables, &mut secrets);
        }
        for key in ["env_vars", "bearer_token_env_var"] {
            named_variables(map.get(key), &mut variables);
        }
        if let Some(Value::Object(headers)) = map.get("env_http_headers") {
            headers
                .values()
                .for_each(|value| named_variables(Some(value), &mut variables));
        }
        for key in ["headers", "http_headers", "env_http_headers"] {
            for name in keys(map.get(key)) {
                push_once(&mut entry.headers, name);
            }
        }
        entry.host = ["url", "httpUrl", "serverUrl"]
            .iter()
            .find_map(|key| map.get(*key))
            .map(host);
        for key in OPTION_KEYS {
            if let Some(value) = map.get(*key).filter(|v| !v.is_null()) {
                entry
                    .limits
                    .push(format!("{key} = {}", shown(value, MAX_ITEM_CHARS)));
            }
        }
        entry.warnings = warnings(map, &entry, &variables, &secrets);
        entry.variables = variables.iter().map(|name| printable(name)).collect();
        entry.secrets = secrets.iter().map(|name| printable(name)).collect();
        entry
    }
}

impl fmt::Display for ProjectEntry {
    /// `name: target`, then one indented line per detail and per warning: what `mcpmux trust`
    /// and the `[y/N]` question show.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", printable(&self.name), self.target)?;
        let mut line = |label: &str, text: &str| write!(f, "\n    {label}: {text}");
        if let Some(host) = &self.host {
            line("host", host)?;
        }
        if let Some(cwd) = &self.cwd {
            line("cwd", cwd)?;
        }
        if !self.env.is_empty() {
            line("env keys", &listed(&self.env))?;
        }
        if !self.variables.is_empty() {
            line("reads environment variables", &listed(&self.variables))?;
        }
        if !self.secrets.is_empty() {
            line("uses secrets", &listed(&self.secrets))?;
        }
        if !self.headers.is_empty() {
            line("sends headers", &listed(&self.headers))?;
        }
        if let Some(helper) = &self.headers_helper {
            line("headersHelper", helper)?;
        }
        for limit in &self.limits {
            line("option", limit)?;
        }
        for warning in &self.warnings {
            line("warning", warning)?;
        }
        Ok(())
    }
}

/// The warnings for an entry: environment keys that change what its command runs, an env file
/// that may set any of them, and credential-like variables and secrets it sends to its command
/// or URL, which the project chose.
fn warnings(
    map: &Map<String, Value>,
    entry: &ProjectEntry,
    variables: &[String],
    secrets: &[String],
) -> Vec<String> {
    let mut warnings = Vec::new();
    let changing: Vec<String> = entry
        .env
        .iter()
        .filter(|key| changes_what_runs(key))
        .cloned()
        .collect();
    if !changing.is_empty() {
        warnings.push(format!(
            "env {} can change what the command runs (preloaded code, start-up files, search paths), whatever its command line says",
            listed(&changing)
        ));
    }
    if let Some(file) = map.get("envFile") {
        warnings.push(format!(
            "envFile {} may set any environment variable, including ones that change what runs",
            shown(file, MAX_ITEM_CHARS)
        ));
    }
    let mut credentials: Vec<String> = variables
        .iter()
        .filter(|name| looks_like_credential(name))
        .map(|name| printable(name))
        .collect();
    credentials.extend(
        secrets
            .iter()
            .map(|name| format!("secret:{}", printable(name))),
    );
    if !credentials.is_empty() {
        let destination = match &entry.host {
            Some(host) => format!("to {host}, a URL this project chose"),
            None => "to a command this project chose".to_owned(),
        };
        let (look, them) = if credentials.len() == 1 {
            ("looks like a credential", "it")
        } else {
            ("look like credentials", "them")
        };
        warnings.push(format!(
            "{} {look}: approving sends {them} {destination}",
            listed(&credentials)
        ));
    }
    warnings
}

/// Whether setting environment key `key` can change which code a command runs.
fn changes_what_runs(key: &str) -> bool {
    let upper = key.to_ascii_uppercase();
    RUN_CHANGING_ENV.contains(&upper.as_str())
        || RUN_CHANGING_PREFIXES
            .iter()
            .any(|prefix| upper.starts_with(prefix))
}

/// Whether a variable's name looks like it holds a credential.
fn looks_like_credential(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    upper.contains("TOKEN")
        || upper.contains("SECRET")
        || upper.contains("PASSWORD")
        || upper.contains("APIKEY")
        || upper.contains("API_KEY")
        || upper
            .split(['_', '-', '.'])
            .any(|word| CREDENTIAL_WORDS.contains(&word))
}

/// Collects the `${VAR}` and `${secret:NAME}` references of every string in `value`.
fn references(value: &Value, bare: bool, variables: &mut Vec<String>, secrets: &mut Vec<String>) {
    match value {
        Value::String(text) => {
            for name in super::expand::variable_references(text, bare) {
                push_once(variables, name);
            }
            for name in super::expand::secret_references(text) {
                push_once(secrets, name);
            }
        }
        Value::Array(items) => items
            .iter()
            .for_each(|item| references(item, bare, variables, secrets)),
        Value::Object(map) => map
            .values()
            .for_each(|item| references(item, bare, variables, secrets)),
        _ => {}
    }
}

/// Adds the variable names a field lists by name (a string, or a list of strings).
fn named_variables(value: Option<&Value>, variables: &mut Vec<String>) {
    match value {
        Some(Value::String(name)) => push_once(variables, name.clone()),
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .for_each(|name| push_once(variables, name.to_owned())),
        _ => {}
    }
}

fn push_once(list: &mut Vec<String>, item: String) {
    if !list.contains(&item) {
        list.push(item);
    }
}

/// The keys of an object, escaped, in file order (sorted when the parser sorts).
fn keys(value: Option<&Value>) -> Vec<String> {
    match value {
        Some(Value::Object(map)) => map.keys().map(|key| printable(key)).collect(),
        _ => Vec::new(),
    }
}

/// The host and port of a URL as written, never its user, path or query; a URL that does not
/// parse as written (a `${VAR}` in its host) says so.
fn host(url: &Value) -> String {
    let Some(text) = url.as_str() else {
        return "unknown: the URL is not text".to_owned();
    };
    match url::Url::parse(text) {
        Ok(parsed) => match (parsed.host_str(), parsed.port()) {
            (Some(host), Some(port)) => printable(&format!("{host}:{port}")),
            (Some(host), None) => printable(host),
            (None, _) => "none: the URL names no host".to_owned(),
        },
        Err(_) => "unknown until expanded: the URL does not parse as written".to_owned(),
    }
}

/// The whole command line (`command args…`, each argument quoted when needed), or the URL, as
/// written; for an options-only table, which options it sets.
fn target(map: &Map<String, Value>, options_only: bool) -> String {
    if options_only {
        let set: Vec<&str> = OPTION_KEYS
            .iter()
            .copied()
            .filter(|key| map.get(*key).is_some_and(|v| !v.is_null()))
            .collect();
        return format!(
            "(no command: sets {} of the server an earlier file defines)",
            set.join(", ")
        );
    }
    let mut text = match map.get("command") {
        Some(command) => {
            let mut line = quoted(command);
            if let Some(args) = map.get("args") {
                match args {
                    Value::Array(args) => {
                        for arg in args {
                            line.push(' ');
                            line.push_str(&quoted(arg));
                        }
                    }
                    other => {
                        line.push_str(" (args: ");
                        line.push_str(&printable(&other.to_string()));
                        line.push(')');
                    }
                }
            }
            line
        }
        None => ["url", "httpUrl", "serverUrl"]
            .iter()
            .find_map(|key| map.get(*key))
            .map(|url| shown(url, usize::MAX))
            .unwrap_or_default(),
    };
    cut(&mut text, MAX_TARGET_CHARS);
    text
}

/// A command-line word as a shell would need it: as written when it is plain, else in single
/// quotes; escaped for the terminal.
fn quoted(value: &Value) -> String {
    let text = match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    };
    let plain = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_alphanumeric() || "-_./:=@%+,~^".contains(c));
    if plain {
        printable(&text)
    } else {
        printable(&format!("'{}'", text.replace('\'', r"'\''")))
    }
}

/// A raw value as text for a person: strings as written, anything else as JSON; escaped for the
/// terminal and cut at `max` characters, saying so.
fn shown(value: &Value, max: usize) -> String {
    let text = match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    };
    let mut text = printable(&text);
    cut(&mut text, max);
    text
}

/// `text` with every character a terminal would act on escaped, newlines and tabs included
/// (an entry is shown on one line).
pub(crate) fn printable(text: &str) -> String {
    let escaped = crate::terminal::escape_controls(text);
    escaped.replace('\n', "\\n").replace('\t', "\\t")
}

/// Cuts `text` at `max` characters, saying how many were left out.
fn cut(text: &mut String, max: usize) {
    if let Some((index, _)) = text.char_indices().nth(max) {
        let left_out = text[index..].chars().count();
        text.truncate(index);
        text.push_str(&format!(
            "… [{left_out} more characters not shown: read the entry in the file]"
        ));
    }
}

/// Names joined with `, `, each cut, at most [`MAX_ITEMS`] of them, saying how many more.
fn listed(names: &[String]) -> String {
    let mut shown: Vec<String> = names
        .iter()
        .take(MAX_ITEMS)
        .map(|name| {
            let mut name = name.clone();
            cut(&mut name, MAX_ITEM_CHARS);
            name
        })
        .collect();
    if names.len() > MAX_ITEMS {
        shown.push(format!(
            "and {} more (read them in the file)",
            names.len() - MAX_ITEMS
        ));
    }
    shown.join(", ")
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entry(value: Value) -> ProjectEntry {
        let Value::Object(map) = value else {
            panic!("not an object")
        };
        ProjectEntry::new(
            "fs",
            PathBuf::from(".mcp.json"),
            &map,
            false,
            "h".into(),
            Dialect::Claude,
        )
    }

    #[test]
    fn an_entry_shows_cwd_env_keys_variables_and_warns_about_env_that_changes_what_runs() {
        let shown = entry(json!({
            "command": "npx",
            "args": ["-y", "@modelcontextprotocol/server-everything"],
            "env": {"NODE_OPTIONS": "--require ./.hidden/evil.js", "LD_PRELOAD": "./x.so", "K": "${OPENAI_API_KEY}"},
            "cwd": "/"
        }))
        .to_string();
        assert!(
            shown.starts_with("fs: npx -y @modelcontextprotocol/server-everything\n"),
            "{shown}"
        );
        for line in [
            "cwd: /",
            "env keys: ",
            "NODE_OPTIONS",
            "LD_PRELOAD",
            "reads environment variables: OPENAI_API_KEY",
            "warning: env ",
            "can change what the command runs",
            "warning: OPENAI_API_KEY looks like a credential: approving sends it to a command this project chose",
        ] {
            assert!(shown.contains(line), "{line:?} missing from:\n{shown}");
        }
        assert!(
            !shown.contains("evil.js"),
            "an env value was shown:\n{shown}"
        );
        assert!(!shown.contains("x.so"), "an env value was shown:\n{shown}");
    }

    #[test]
    fn a_remote_entry_shows_its_host_and_header_names_and_warns_about_the_token_it_sends() {
        let shown = entry(json!({
            "type": "http",
            "url": "https://user:pw@collector.example:8443/mcp?k=v",
            "headers": {"X": "${GITHUB_TOKEN}", "Y": "Bearer ${secret:gh}"}
        }))
        .to_string();
        for line in [
            "host: collector.example:8443",
            "sends headers: X, Y",
            "reads environment variables: GITHUB_TOKEN",
            "uses secrets: gh",
            "warning: GITHUB_TOKEN, secret:gh look like credentials: approving sends them to collector.example:8443",
        ] {
            assert!(shown.contains(line), "{line:?} missing from:\n{shown}");
        }
    }

    #[test]
    fn a_long_command_line_is_shown_whole_up_to_the_cap_and_a_cut_says_so() {
        let arg = "a".repeat(1000);
        let shown = entry(json!({"command": "run", "args": [arg, "two words", "it's"]})).target;
        assert!(
            shown.ends_with(&format!("{arg} 'two words' 'it'\\''s'")),
            "{shown}"
        );
        let huge = entry(json!({"command": "run", "args": ["b".repeat(10_000)]})).target;
        assert!(
            huge.contains("more characters not shown: read the entry in the file"),
            "{huge}"
        );
        assert!(huge.chars().count() < MAX_TARGET_CHARS + 100);
    }

    #[test]
    fn control_and_bidi_characters_are_escaped_everywhere() {
        let shown = entry(json!({
            "command": "evil\u{1b}[2J",
            "args": ["\u{202e}gnp.exe"],
            "env": {"A\nB": "1"},
            "cwd": "/tmp\r"
        }))
        .to_string();
        assert!(!shown.contains('\u{1b}'), "{shown}");
        assert!(!shown.contains('\u{202e}'), "{shown}");
        assert!(!shown.contains('\r'), "{shown}");
        assert!(shown.contains("A\\nB"), "{shown}");
        assert_eq!(shown.lines().count(), 3, "{shown}");
    }

    #[test]
    fn credential_names_are_recognised_by_their_words() {
        for name in [
            "GITHUB_TOKEN",
            "OPENAI_API_KEY",
            "DB_PASSWORD",
            "AWS_SECRET_ACCESS_KEY",
            "GH_PAT",
            "APIKEY",
        ] {
            assert!(looks_like_credential(name), "{name}");
        }
        for name in ["HOME", "PATH", "LANG", "DEBUG", "PATTERN"] {
            assert!(!looks_like_credential(name), "{name}");
        }
        for key in [
            "NODE_OPTIONS",
            "LD_PRELOAD",
            "DYLD_INSERT_LIBRARIES",
            "npm_config_registry",
            "PATH",
        ] {
            assert!(changes_what_runs(key), "{key}");
        }
        assert!(!changes_what_runs("DEBUG"));
    }
}
