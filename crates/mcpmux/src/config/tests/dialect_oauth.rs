//! Cursor's `auth` and Gemini CLI's `oauth` objects read into mcpmux's OAuth settings: the keys
//! with a meaning in ours mapped, the others reported, bad values named as written, and a
//! project file's OAuth client covered by its approval like one in mcpmux's own files.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use crate::config::trust::approve;

/// Loads with `import` and the environment `fx` sets, every project entry approved.
fn load_importing(fx: &Fixture, import: Dialect) -> ConfigSet {
    let mut options = fx.options();
    options.import = vec![import];
    let env = |name: &str| fx.env.get(name).cloned();
    load_with_env(&options, &env)
}

/// The fields of the `Unhonoured` warnings for `name`, sorted.
fn unhonoured(set: &ConfigSet, name: &str) -> Vec<String> {
    let mut fields: Vec<String> = set
        .problems
        .iter()
        .filter_map(|problem| match &problem.error {
            ConfigError::Unhonoured { server, field, .. } if server == name => Some(field.clone()),
            _ => None,
        })
        .collect();
    fields.sort();
    fields
}

#[test]
fn cursor_auth_is_read_as_the_oauth_client_and_its_unknown_keys_are_reported() {
    let mut fx = Fixture::new();
    fx.set_env("CID", "cursor-client");
    fx.set_env("CSECRET", "cursor-s3cret");
    fx.home_file(
        ".cursor/mcp.json",
        r#"{"mcpServers": {
            "api": {"url": "https://api.example/mcp",
                    "auth": {"CLIENT_ID": "${env:CID}", "CLIENT_SECRET": "${env:CSECRET}",
                             "scopes": ["read", "write"], "REDIRECT": "x"}},
            "open": {"url": "https://open.example/mcp", "auth": {"CLIENT_ID": "public"}},
            "local": {"command": "run", "auth": {"CLIENT_ID": "x"}}
        }}"#,
    );
    let set = load_importing(&fx, Dialect::Cursor);
    let api = &server(&set, "api").auth.oauth;
    assert_eq!(api.client_id.as_deref(), Some("cursor-client"));
    assert_eq!(api.client_secret.as_deref(), Some("cursor-s3cret"));
    assert_eq!(api.scopes, ["read", "write"]);
    assert_eq!(api.grant, OAuthGrant::AuthorizationCode);
    assert!(!format!("{:?}", server(&set, "api")).contains("cursor-s3cret"));
    assert_eq!(unhonoured(&set, "api"), ["auth.REDIRECT"]);

    let open = &server(&set, "open").auth.oauth;
    assert_eq!(open.client_id.as_deref(), Some("public"));
    assert_eq!(open.client_secret, None);
    assert!(unhonoured(&set, "open").is_empty(), "{:#?}", messages(&set));

    // A stdio server has no OAuth: said, not dropped silently.
    assert_eq!(server(&set, "local").auth, AuthSpec::default());
    assert_eq!(unhonoured(&set, "local"), ["auth"]);
}

#[test]
fn a_bad_value_in_cursor_auth_is_named_as_cursor_writes_it() {
    let fx = Fixture::new();
    fx.home_file(
        ".cursor/mcp.json",
        r#"{"mcpServers": {
            "num": {"url": "https://a.example/mcp", "auth": {"CLIENT_ID": 5}},
            "list": {"url": "https://b.example/mcp", "auth": {"scopes": ["a", 1]}},
            "unset": {"url": "https://c.example/mcp", "auth": {"CLIENT_SECRET": "${env:NOT_SET_HERE}"}},
            "flat": {"url": "https://d.example/mcp", "auth": "client"}
        }}"#,
    );
    let set = load_importing(&fx, Dialect::Cursor);
    assert!(names(&set).is_empty(), "{:?}", names(&set));
    let all = messages(&set).join("\n");
    for expected in [
        "field \"auth.CLIENT_ID\"",
        "field \"auth.scopes[1]\"",
        "field \"auth.CLIENT_SECRET\"",
        "field \"auth\"",
    ] {
        assert!(all.contains(expected), "{expected}: {all}");
    }
    assert!(!all.contains("oauth."), "{all}");
}

#[test]
fn gemini_oauth_maps_client_scopes_and_mcpmuxs_own_redirect_uri_and_reports_the_rest() {
    let mut fx = Fixture::new();
    fx.set_env("GSECRET", "gemini-s3cret");
    fx.home_file(
        ".gemini/settings.json",
        r#"{"mcpServers": {
            "api": {"httpUrl": "https://api.example/mcp",
                    "oauth": {"enabled": true, "clientId": "gem", "clientSecret": "$GSECRET",
                              "scopes": ["mcp"], "redirectUri": "http://127.0.0.1:7777/callback",
                              "authorizationUrl": "https://as.example/authorize",
                              "tokenUrl": "https://as.example/token",
                              "audiences": ["x"], "tokenParamName": "t"},
                    "authProviderType": "dynamic_discovery"},
            "other": {"httpUrl": "https://other.example/mcp",
                      "oauth": {"enabled": false, "clientId": "o",
                                "redirectUri": "http://localhost:7777/oauth/callback"},
                      "authProviderType": "google_credentials"}
        }}"#,
    );
    let set = load_importing(&fx, Dialect::Gemini);
    let api = &server(&set, "api").auth.oauth;
    assert_eq!(api.client_id.as_deref(), Some("gem"));
    assert_eq!(api.client_secret.as_deref(), Some("gemini-s3cret"));
    assert_eq!(api.scopes, ["mcp"]);
    assert_eq!(api.callback_port, Some(7777));
    assert_eq!(
        unhonoured(&set, "api"),
        [
            "oauth.audiences",
            "oauth.authorizationUrl",
            "oauth.tokenParamName",
            "oauth.tokenUrl"
        ]
    );

    // Another redirect URI would not match the one mcpmux sends: reported, no port taken.
    let other = &server(&set, "other").auth.oauth;
    assert_eq!(other.client_id.as_deref(), Some("o"));
    assert_eq!(other.callback_port, None);
    assert_eq!(
        unhonoured(&set, "other"),
        ["authProviderType", "oauth.enabled", "oauth.redirectUri"]
    );
}

#[test]
fn loopback_redirect_uris_map_only_when_they_are_mcpmuxs_own() {
    use crate::config::dialects::gemini::loopback_port;
    assert_eq!(loopback_port("http://127.0.0.1:8080/callback"), Some(8080));
    for other in [
        "http://localhost:8080/callback",
        "http://127.0.0.1/callback",
        "http://127.0.0.1:0/callback",
        "https://127.0.0.1:8080/callback",
        "http://127.0.0.1:8080/oauth/callback",
        "http://127.0.0.1:8080/callback?x=1",
        "http://u:p@127.0.0.1:8080/callback",
        "not a url",
    ] {
        assert_eq!(loopback_port(other), None, "{other}");
    }
}

/// Loads with the stored approvals only, importing `dialect`.
fn load_stored(fx: &Fixture, dialect: Dialect) -> ConfigSet {
    let mut options = LoadOptions::new(Some(fx.home.path().to_path_buf()), fx.project.path());
    options.import = vec![dialect];
    load_with_env(&options, &|_| None)
}

fn untrusted(set: &ConfigSet, name: &str) -> bool {
    set.problems.iter().any(
        |problem| matches!(&problem.error, ConfigError::Untrusted { server, .. } if server == name),
    )
}

#[test]
fn a_project_files_mapped_oauth_client_is_covered_by_its_approval() {
    for (dialect, file, field, key) in [
        (Dialect::Cursor, ".cursor/mcp.json", "auth", "CLIENT_ID"),
        (
            Dialect::Gemini,
            ".gemini/settings.json",
            "oauth",
            "clientId",
        ),
    ] {
        let fx = Fixture::new();
        let write = |client: &str| {
            fx.project_file(
                file,
                &serde_json::json!({"mcpServers": {"api": {
                    "url": "https://api.example/mcp", field: {key: client}
                }}})
                .to_string(),
            );
        };
        write("first");
        let set = load_stored(&fx, dialect);
        assert!(untrusted(&set, "api"), "{dialect:?}: {:#?}", messages(&set));

        approve(
            &set.trust_file.clone().unwrap(),
            fx.project.path(),
            &set.project,
        )
        .unwrap();
        let set = load_stored(&fx, dialect);
        assert_eq!(
            server(&set, "api").auth.oauth.client_id.as_deref(),
            Some("first")
        );

        // Another client (where a login's tokens would go) is someone else's again.
        write("second");
        let set = load_stored(&fx, dialect);
        assert!(names(&set).is_empty(), "{dialect:?}: {:?}", names(&set));
        assert!(untrusted(&set, "api"), "{dialect:?}: {:#?}", messages(&set));
    }
}
