//! Gemini CLI's `settings.json` (`~/.gemini/settings.json`, a project's
//! `.gemini/settings.json`): `mcpServers`, and the `mcp.allowed` / `mcp.excluded` name lists.
//!
//! Fields from Gemini CLI's MCP docs (geminicli.com/docs/tools/mcp-server, "Configuration
//! properties"): `command`, `args`, `env`, `cwd` for a stdio server; `url` (SSE) or `httpUrl`
//! (streamable HTTP) with `headers` for a remote one; `timeout` (milliseconds, per request),
//! `trust`, `includeTools`, `excludeTools`, `description`; `$NAME` / `${NAME}` in values, an
//! unset variable kept as written (geminicli.com/docs/cli/configuration).
//!
//! `oauth` (Gemini CLI's `MCPOAuthConfig`): `clientId`, `clientSecret` and `scopes` are the same
//! keys of mcpmux's `oauth`; a `redirectUri` that is mcpmux's own loopback URI gives its
//! `callbackPort`; `enabled: true` is what mcpmux does anyway. The fixed endpoints
//! (`authorizationUrl`, `tokenUrl`, `registrationUrl`), `audiences` and `tokenParamName` are
//! reported: mcpmux discovers the endpoints and sends the token in a header.

use serde_json::{Map, Value};

use super::oauth::{self, Key};
use super::{Keys, Reader, duration, string_list, take};
use crate::config::entry::{Entry, FileEntries};
use crate::config::fields::{Fields, RawTransport};
use crate::config::{AuthSpec, ConfigError, ServerSpec, TransportSpec};

/// How mcpmux reads one Gemini CLI `settings.json`: its `mcpServers`, enabled as its `mcp` lists say.
pub(crate) const READER: Reader = Reader {
    field: "mcpServers",
    keys: Keys {
        silent: &["description", "extensionName"],
        unhonoured: &[
            (
                "authProviderType",
                "mcpmux authenticates with OAuth discovery (\"dynamic_discovery\") or headers; see [servers.NAME.oauth] in mcpmux.toml",
            ),
            (
                "targetAudience",
                "mcpmux has no Google service-account authentication; send a token in \"headers\"",
            ),
            (
                "targetServiceAccount",
                "mcpmux has no Google service-account authentication; send a token in \"headers\"",
            ),
        ],
    },
    read: server,
};

/// Why a fixed endpoint is not honoured.
const ENDPOINT: &str = "mcpmux finds the authorization server's endpoints by discovery (RFC 9728, RFC 8414); to pin the authorization server, set [servers.NAME.oauth] issuer = \"...\" in mcpmux.toml";

/// The keys of Gemini CLI's `oauth` object, as mcpmux's `oauth` names them (`enabled` and
/// `redirectUri` are read first, in [`auth`]).
const OAUTH_KEYS: &[(&str, Key)] = &[
    ("clientId", Key::Ours("clientId")),
    ("clientSecret", Key::Ours("clientSecret")),
    ("scopes", Key::Ours("scopes")),
    ("redirectUri", Key::Ours("callbackPort")),
    ("authorizationUrl", Key::Unhonoured(ENDPOINT)),
    ("tokenUrl", Key::Unhonoured(ENDPOINT)),
    ("registrationUrl", Key::Unhonoured(ENDPOINT)),
    (
        "audiences",
        Key::Unhonoured(
            "mcpmux sends no audience parameter; its tokens are for the server's own URL (RFC 8707 resource)",
        ),
    ),
    (
        "tokenParamName",
        Key::Unhonoured("mcpmux sends the token in the Authorization header, never in the URL"),
    ),
];

/// mcpmux's redirect URI is `http://127.0.0.1:PORT/callback`.
const REDIRECT: &str = "mcpmux's redirect URI is http://127.0.0.1:PORT/callback: register that with the authorization server and set [servers.NAME.oauth] callback_port = PORT in mcpmux.toml";

/// The entry's `oauth` object read into mcpmux's OAuth settings.
fn auth(
    fields: &Fields<'_>,
    mut value: Value,
    transport: &TransportSpec,
    warnings: &mut Vec<ConfigError>,
) -> Result<AuthSpec, ConfigError> {
    if let Value::Object(map) = &mut value {
        if let Some(enabled) = take(map, "enabled")
            && !fields.boolean("oauth.enabled", enabled)?
        {
            warnings.push(fields.unhonoured(
                "oauth.enabled",
                "mcpmux answers a server's 401 with OAuth whatever this says; to send a token instead, set it in \"headers\"",
            ));
        }
        if let Some(uri) = take(map, "redirectUri") {
            // Only mcpmux's own redirect URI maps: another one registered with the
            // authorization server would not match the one mcpmux sends.
            match uri.as_str().and_then(loopback_port) {
                Some(port) => {
                    map.insert("redirectUri".to_owned(), Value::from(port));
                }
                None => warnings.push(fields.unhonoured("oauth.redirectUri", REDIRECT)),
            }
        }
    }
    oauth::read(fields, "oauth", value, OAUTH_KEYS, transport, warnings)
}

/// The port of `http://127.0.0.1:PORT/callback`, mcpmux's loopback redirect URI.
pub(crate) fn loopback_port(uri: &str) -> Option<u16> {
    let url = url::Url::parse(uri).ok()?;
    let plain = url.scheme() == "http"
        && url.host_str() == Some("127.0.0.1")
        && url.path() == "/callback"
        && url.query().is_none()
        && url.fragment().is_none()
        && url.username().is_empty()
        && url.password().is_none();
    url.port().filter(|port| plain && *port != 0)
}

/// Disables the servers Gemini CLI's `mcp.allowed` / `mcp.excluded` lists leave out.
pub(crate) fn apply_lists(root: &Map<String, Value>, file: &mut FileEntries) {
    // `mcp.allowed` / `mcp.excluded` name which servers Gemini CLI connects to: the others stay
    // listed, disabled.
    let lists = root.get("mcp").and_then(Value::as_object);
    let names = |key: &str| -> Option<Vec<String>> {
        lists?.get(key)?.as_array().map(|items| {
            items
                .iter()
                .filter_map(|item| item.as_str().map(str::to_owned))
                .collect()
        })
    };
    let (allowed, excluded) = (names("allowed"), names("excluded"));
    for (name, entry) in &mut file.entries {
        if let Ok(Entry::Define(spec)) = entry {
            let left_out = allowed.as_ref().is_some_and(|list| !list.contains(name))
                || excluded.as_ref().is_some_and(|list| list.contains(name));
            if left_out {
                spec.enabled = false;
            }
        }
    }
}

fn server(
    fields: &Fields<'_>,
    map: &mut Map<String, Value>,
    warnings: &mut Vec<ConfigError>,
) -> Result<ServerSpec, ConfigError> {
    let http_url = take(map, "httpUrl");
    let mut raw = RawTransport::take(map);
    match (http_url, &raw.url) {
        (Some(_), Some(_)) => {
            return Err(fields.invalid(
                Some("httpUrl"),
                "both \"httpUrl\" (streamable HTTP) and \"url\" (SSE) are set: keep the one the server speaks",
            ));
        }
        (Some(url), None) => {
            raw.url = Some(url);
            raw.kind.get_or_insert(Value::from("http"));
        }
        // Gemini CLI's `url` is the legacy SSE endpoint.
        (None, Some(_)) => {
            raw.kind.get_or_insert(Value::from("sse"));
        }
        (None, None) => {}
    }
    let transport = fields.transport(raw)?;
    let auth = match take(map, "oauth") {
        Some(value) => auth(fields, value, &transport, warnings)?,
        None => AuthSpec::default(),
    };
    // The default provider type is what mcpmux does; the Google ones are reported.
    if let Some(kind) = map.remove("authProviderType")
        && kind.as_str() != Some("dynamic_discovery")
    {
        map.insert("authProviderType".to_owned(), kind);
    }
    let mut spec = ServerSpec::new(fields.server(), transport).with_auth(auth);
    if let Some(ms) = take(map, "timeout") {
        spec.call_timeout = duration(fields, "timeout", &ms, 1000.0)?;
    }
    if let Some(tools) = take(map, "includeTools") {
        spec.options.tools.allow = string_list(fields, "includeTools", tools)?;
    }
    if let Some(tools) = take(map, "excludeTools") {
        spec.options.tools.deny = string_list(fields, "excludeTools", tools)?;
    }
    if let Some(trust) = take(map, "trust") {
        // `trust: false` is what mcpmux does anyway: calls go through its policy.
        if fields.boolean("trust", trust)? {
            warnings.push(fields.unhonoured(
                "trust",
                "mcpmux does not skip its call policy for a whole server; allow its tools with [policy] allow = [\"mcp__NAME__*\"] in mcpmux.toml",
            ));
        }
    }
    Ok(spec)
}
