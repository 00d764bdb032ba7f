//! Access rules: what one identity may use of the gateway's upstream authority. The tokens
//! file (TOML, mode 600) names static tokens and the rules of identities: each rule allows
//! and denies servers and tools with the globs of `tools.allow` / `tools.deny` (the library's
//! [`mcpmux::cli_support::naming::NameFilter`]), may narrow the stage/agent scope, set a rate limit of its own, and
//! route a policy `ask` (to the client, or refused). A static token names its rule; an OAuth
//! identity gets the rule of the first `[[oauth]]` entry whose claims (`sub`, `client_id`, a
//! scope, a group) it holds, and none when entries exist but none matches (refused). An
//! identity without a rule has the gateway's whole authority. Also the checks the handler
//! makes with a rule against the hub: the tools listed, a call, a resource. Knows nothing of
//! HTTP.
//!
//! ```toml
//! [rules.reader]
//! servers = ["docs", "search-*"]   # allowed servers (none listed: every server)
//! deny_tools = ["*delete*"]        # tools (raw or exposed names) never listed nor called
//! rate_limit = "10/s"
//! ask = "deny"
//!
//! [[tokens]]
//! name = "ci"
//! token = "…"                      # 16 to 4096 visible ASCII characters
//! rule = "reader"
//!
//! [[oauth]]
//! scope = "mcp:admin"              # holders of this scope: the whole authority
//! [[oauth]]
//! rule = "reader"                  # everyone else
//! ```

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use mcpmux::cli_support::naming::NameFilter;
use sha2::{Digest, Sha256};

use crate::guard::Client;
use crate::rate_limit::{Limiter, Rate, RateLimit};

/// Largest tokens file read.
const MAX_FILE_BYTES: u64 = 1024 * 1024;
/// Shortest named token accepted: a guessable token is no lock.
const MIN_TOKEN_CHARS: usize = 16;
/// Longest token accepted.
const MAX_TOKEN_CHARS: usize = 4096;

/// Where a policy `ask` goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AskRoute {
    /// Put to the calling client as an elicitation (when it can answer one).
    Client,
    /// Refused: the client never approves its own call.
    Deny,
}

impl std::str::FromStr for AskRoute {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.trim().to_ascii_lowercase().as_str() {
            "client" => Ok(AskRoute::Client),
            "deny" => Ok(AskRoute::Deny),
            _ => Err(format!("ask route {text:?}: write `client` or `deny`")),
        }
    }
}

/// Why the tokens file cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("tokens file {path}: {message}")]
pub struct AccessError {
    path: String,
    message: String,
}

/// What one identity may use.
#[derive(Default)]
pub(crate) struct Rule {
    /// The rule's name in the tokens file (`None`: the whole authority).
    pub name: Option<Box<str>>,
    servers: NameFilter,
    tools: NameFilter,
    /// The stage/agent scope the identity is held to, besides the gateway's.
    pub scope: Option<mcpmux::Scope>,
    /// Its own rate limit, a bucket per identity.
    pub limiter: Option<Limiter<Client>>,
    /// Where a policy `ask` of its calls goes (`None`: the gateway's default).
    pub ask: Option<AskRoute>,
}

impl std::fmt::Debug for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rule").field("name", &self.name).finish()
    }
}

impl Rule {
    /// Whether the rule narrows nothing: every server and tool.
    pub fn is_everything(&self) -> bool {
        self.servers == NameFilter::default()
            && self.tools == NameFilter::default()
            && self.scope.is_none()
    }

    /// Whether the identity may use server `server` at all (its resources, prompts, tools).
    pub fn allows_server(&self, server: &str) -> bool {
        self.servers.allows(server, server)
    }

    /// Whether the identity may list and call the tool `raw` of `server`, exposed as
    /// `exposed` (the scope is checked apart: it needs the hub's server options).
    pub fn allows_tool(&self, server: &str, raw: &str, exposed: &str) -> bool {
        self.allows_server(server) && self.tools.allows(raw, exposed)
    }
}

/// The tokens file, read.
#[derive(Default)]
pub struct Access {
    /// Named tokens as digests, each with its name and rule.
    tokens: Vec<([u8; 32], Box<str>, Arc<Rule>)>,
    /// OAuth matches in file order.
    oauth: Vec<(Match, Arc<Rule>)>,
}

impl std::fmt::Debug for Access {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Access")
            .field("tokens", &self.tokens.len())
            .field("oauth", &self.oauth.len())
            .finish()
    }
}

/// The claims an OAuth entry asks for (all of those given).
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Match {
    sub: Option<String>,
    client_id: Option<String>,
    scope: Option<String>,
    group: Option<String>,
}

/// What a verified OAuth token says of its holder.
#[derive(Debug, Default)]
pub(crate) struct Claims<'a> {
    pub sub: Option<&'a str>,
    pub client_id: Option<&'a str>,
    pub scopes: &'a [String],
    pub groups: &'a [String],
}

impl Match {
    fn matches(&self, claims: &Claims<'_>) -> bool {
        let equal = |want: &Option<String>, have: Option<&str>| {
            want.as_deref().is_none_or(|want| have == Some(want))
        };
        let held = |want: &Option<String>, have: &[String]| {
            want.as_deref()
                .is_none_or(|want| have.iter().any(|h| h == want))
        };
        equal(&self.sub, claims.sub)
            && equal(&self.client_id, claims.client_id)
            && held(&self.scope, claims.scopes)
            && held(&self.group, claims.groups)
    }
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct FileSpec {
    #[serde(default)]
    rules: BTreeMap<String, RuleSpec>,
    #[serde(default)]
    tokens: Vec<TokenSpec>,
    #[serde(default)]
    oauth: Vec<OAuthSpec>,
}

#[derive(serde::Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RuleSpec {
    #[serde(default)]
    servers: Vec<String>,
    #[serde(default)]
    deny_servers: Vec<String>,
    #[serde(default)]
    tools: Vec<String>,
    #[serde(default)]
    deny_tools: Vec<String>,
    scope: Option<String>,
    rate_limit: Option<String>,
    rate_burst: Option<u32>,
    ask: Option<AskRoute>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct TokenSpec {
    name: String,
    token: String,
    rule: Option<String>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct OAuthSpec {
    #[serde(flatten)]
    matching: Match,
    rule: Option<String>,
}

impl Access {
    /// Reads a tokens file, refusing one that group or others may read.
    pub fn from_file(path: &Path) -> Result<Self, AccessError> {
        let fail = |message: String| AccessError {
            path: path.display().to_string(),
            message,
        };
        let metadata = std::fs::metadata(path).map_err(|e| fail(e.to_string()))?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = metadata.permissions().mode() & 0o777;
            if mode & 0o077 != 0 {
                return Err(fail(format!(
                    "group or others may read it (mode {mode:o}): run `chmod 600 {}`",
                    path.display()
                )));
            }
        }
        if metadata.len() > MAX_FILE_BYTES {
            return Err(fail("is larger than 1 MiB".into()));
        }
        let text = std::fs::read_to_string(path).map_err(|e| fail(e.to_string()))?;
        Self::parse(&text).map_err(fail)
    }

    /// Reads the text of a tokens file.
    pub fn parse(text: &str) -> Result<Self, String> {
        // toml's errors quote the line they are about, and a token may be on it: say where
        // only.
        let spec: FileSpec = toml::from_str(text).map_err(|error| {
            let at = error
                .span()
                .map(|span| text[..span.start.min(text.len())].lines().count().max(1));
            match at {
                Some(line) => format!("line {line}: {}", error.message()),
                None => error.message().to_string(),
            }
        })?;
        let mut rules = BTreeMap::new();
        for (name, rule) in spec.rules {
            let compiled = compile(&name, rule)?;
            rules.insert(name, Arc::new(compiled));
        }
        let rule_of = |name: &Option<String>, whose: &str| -> Result<Arc<Rule>, String> {
            match name {
                None => Ok(Arc::new(Rule::default())),
                Some(name) => rules.get(name).cloned().ok_or_else(|| {
                    format!("{whose} names rule `{name}`, which no [rules.{name}] defines")
                }),
            }
        };
        let mut access = Access::default();
        for token in spec.tokens {
            let name = token.name.trim();
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_graphic()) {
                return Err(format!(
                    "token name {:?}: one word of visible ASCII",
                    token.name
                ));
            }
            let secret = token.token.trim();
            if secret.len() < MIN_TOKEN_CHARS
                || secret.len() > MAX_TOKEN_CHARS
                || !secret.bytes().all(|b| b.is_ascii_graphic())
            {
                return Err(format!(
                    "token `{name}`: the token must be {MIN_TOKEN_CHARS} to {MAX_TOKEN_CHARS} \
                     visible ASCII characters"
                ));
            }
            let digest: [u8; 32] = Sha256::digest(secret.as_bytes()).into();
            if access
                .tokens
                .iter()
                .any(|(d, n, _)| *d == digest || **n == *name)
            {
                return Err(format!("token `{name}`: its name or token is given twice"));
            }
            let rule = rule_of(&token.rule, &format!("token `{name}`"))?;
            access.tokens.push((digest, name.into(), rule));
        }
        for (index, entry) in spec.oauth.into_iter().enumerate() {
            let rule = rule_of(&entry.rule, &format!("[[oauth]] entry {}", index + 1))?;
            access.oauth.push((entry.matching, rule));
        }
        Ok(access)
    }

    /// The named token `presented` is, if any: its name and rule. Every digest is compared,
    /// in constant time each.
    pub(crate) fn token(&self, presented: &[u8]) -> Option<(Box<str>, Arc<Rule>)> {
        let digest: [u8; 32] = Sha256::digest(presented).into();
        let mut found = None;
        for (known, name, rule) in &self.tokens {
            let same = known
                .iter()
                .zip(digest.iter())
                .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                == 0;
            if same {
                found = Some((name.clone(), rule.clone()));
            }
        }
        found
    }

    /// Whether the file names any static token.
    pub fn has_tokens(&self) -> bool {
        !self.tokens.is_empty()
    }

    /// The rule of an OAuth identity: the first entry it matches; the whole authority when
    /// the file has no entries; `None` (refused) when it matches none.
    pub(crate) fn oauth_rule(&self, claims: &Claims<'_>) -> Option<Arc<Rule>> {
        if self.oauth.is_empty() {
            return Some(Arc::new(Rule::default()));
        }
        self.oauth
            .iter()
            .find(|(matching, _)| matching.matches(claims))
            .map(|(_, rule)| rule.clone())
    }
}

/// The tools of `tools` that `rule` lets its identity list and call.
pub(crate) fn tools_for(
    hub: &mcpmux::Hub,
    rule: &Rule,
    mut tools: Vec<mcpmux::Tool>,
) -> Vec<mcpmux::Tool> {
    if rule.is_everything() {
        return tools;
    }
    tools.retain(|t| rule.allows_tool(&t.server, &t.raw_name, &t.name));
    if let Some(scope) = &rule.scope {
        let within: std::collections::HashSet<String> =
            hub.tools_for(scope).into_iter().map(|t| t.name).collect();
        tools.retain(|t| within.contains(&t.name));
    }
    tools
}

/// Whether `rule` lets its identity call the hub's tool `name`.
pub(crate) fn allows_call(hub: &mcpmux::Hub, rule: &Rule, name: &str) -> bool {
    if rule.is_everything() {
        return true;
    }
    let Some(tool) = hub.tool(name) else {
        // Unknown to the hub too: the hub says so.
        return true;
    };
    if !rule.allows_tool(&tool.server, &tool.raw_name, &tool.name) {
        return false;
    }
    rule.scope
        .as_ref()
        .is_none_or(|scope| hub.tools_for(scope).iter().any(|t| t.name == name))
}

/// Refuses, as not found, a resource whose server `rule` does not let its identity use
/// (or whose server cannot be told, for a rule that narrows anything).
pub(crate) async fn check_resource(
    hub: &mcpmux::Hub,
    rule: &Rule,
    uri: &str,
) -> Result<(), rmcp::ErrorData> {
    if rule.servers == NameFilter::default() {
        return Ok(());
    }
    match hub.resource_owner(uri).await {
        Ok(server) if rule.allows_server(&server) => Ok(()),
        _ => Err(rmcp::ErrorData::new(
            rmcp::model::ErrorCode::RESOURCE_NOT_FOUND,
            format!("no resource `{uri}` (resources/list names those served)"),
            Some(serde_json::json!({ "uri": uri })),
        )),
    }
}

fn compile(name: &str, spec: RuleSpec) -> Result<Rule, String> {
    let scope = spec
        .scope
        .as_deref()
        .map(|text| {
            text.parse::<mcpmux::Scope>()
                .map_err(|e| format!("rule `{name}`: scope: {e}"))
        })
        .transpose()?;
    let limiter = match spec.rate_limit.as_deref() {
        None => None,
        Some(text) => {
            let rate: Rate = text
                .parse()
                .map_err(|e| format!("rule `{name}`: rate_limit: {e}"))?;
            let mut limit = RateLimit::new(rate);
            limit.burst = spec.rate_burst.and_then(std::num::NonZeroU32::new);
            Some(Limiter::new(&limit))
        }
    };
    Ok(Rule {
        name: Some(name.into()),
        servers: NameFilter::from_lists(&spec.servers, &spec.deny_servers),
        tools: NameFilter::from_lists(&spec.tools, &spec.deny_tools),
        scope,
        limiter,
        ask: spec.ask,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    const FILE: &str = r#"
[rules.reader]
servers = ["docs", "search-*"]
deny_tools = ["*delete*"]
rate_limit = "10/s"
ask = "client"

[rules.echo-only]
tools = ["mcp__t__echo"]

[[tokens]]
name = "ci"
token = "ci-token-0123456789"
rule = "reader"

[[tokens]]
name = "admin"
token = "admin-token-0123456789"

[[oauth]]
scope = "mcp:admin"

[[oauth]]
group = "readers"
rule = "reader"
"#;

    #[test]
    fn named_tokens_get_their_rules_and_others_none() {
        let access = Access::parse(FILE).unwrap();
        let (name, rule) = access.token(b"ci-token-0123456789").unwrap();
        assert_eq!(&*name, "ci");
        assert!(rule.allows_tool("docs", "read", "mcp__docs__read"));
        assert!(rule.allows_server("search-web"));
        assert!(!rule.allows_server("shell"));
        assert!(!rule.allows_tool("docs", "delete_page", "mcp__docs__delete_page"));
        assert_eq!(rule.ask, Some(AskRoute::Client));
        assert!(rule.limiter.is_some());
        let (_, admin) = access.token(b"admin-token-0123456789").unwrap();
        assert!(admin.is_everything());
        assert!(access.token(b"ci-token-012345678").is_none());
        assert!(format!("{access:?}").contains("tokens: 2"));
    }

    #[test]
    fn an_oauth_identity_gets_the_first_entry_it_matches_or_none() {
        let access = Access::parse(FILE).unwrap();
        let scopes = ["mcp:admin".to_string()];
        let admin = Claims {
            scopes: &scopes,
            ..Claims::default()
        };
        assert!(access.oauth_rule(&admin).unwrap().is_everything());
        let groups = ["readers".to_string()];
        let reader = Claims {
            sub: Some("bob"),
            groups: &groups,
            ..Claims::default()
        };
        let rule = access.oauth_rule(&reader).unwrap();
        assert_eq!(rule.name.as_deref(), Some("reader"));
        assert!(access.oauth_rule(&Claims::default()).is_none());
        // No entries: the whole authority, as without a file.
        let open = Access::parse("").unwrap();
        assert!(open.oauth_rule(&Claims::default()).unwrap().is_everything());
    }

    #[test]
    fn a_bad_file_is_refused_with_where_and_never_the_token() {
        for (bad, said) in [
            (
                "[[tokens]]\nname = \"a\"\ntoken = \"short\"\n",
                "16 to 4096",
            ),
            (
                "[[tokens]]\nname = \"a\"\ntoken = \"0123456789abcdef\"\nrule = \"x\"\n",
                "no [rules.x]",
            ),
            ("[rules.a]\nservers = 5\n", "line 2"),
            ("[rules.a]\nask = \"maybe\"\n", "line 2"),
            ("[rules.a]\nrate_limit = \"fast\"\n", "rate_limit"),
            ("[rules.a]\nscope = \"a/b/c\"\n", "scope"),
            ("[whatever]\n", "unknown field"),
            (
                "[[tokens]]\nname = \"a\"\ntoken = \"0123456789abcdef\"\n\
                 [[tokens]]\nname = \"b\"\ntoken = \"0123456789abcdef\"\n",
                "twice",
            ),
        ] {
            let error = Access::parse(bad).err().unwrap();
            assert!(error.contains(said), "{bad}: {error}");
            assert!(!error.contains("0123456789abcdef"), "{error}");
        }
    }

    #[test]
    fn a_tokens_file_others_may_read_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokens.toml");
        std::fs::write(&path, FILE).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        let error = Access::from_file(&path).unwrap_err().to_string();
        assert!(error.contains("chmod 600"), "{error}");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(Access::from_file(&path).unwrap().has_tokens());
    }
}
