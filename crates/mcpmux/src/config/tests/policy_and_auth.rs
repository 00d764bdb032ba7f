//! `[policy]` across files, and the auth blocks: OAuth, machine grants, headersHelper.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;

#[test]
fn policy_from_mcpmux_toml() {
    let fx = Fixture::new();
    // The user's own file: a project's allow entries are ignored (see below).
    fx.home_file(
        ".config/mcpmux/config.toml",
        r#"
[policy]
allow = ["mcp__fs__read_*"]
ask = ["effect:mutate"]
deny = ["mcp__github__delete_*", "effect:destructive"]

[servers.fs]
command = "fs"
"#,
    );
    let set = fx.load();
    assert!(set.problems.is_empty(), "{:#?}", messages(&set));
    assert_eq!(names(&set), ["fs"]);
    assert_eq!(set.policy.allow, ["mcp__fs__read_*"]);
    assert_eq!(set.policy.ask, ["effect:mutate"]);
    assert_eq!(
        set.policy.deny,
        ["mcp__github__delete_*", "effect:destructive"]
    );
}

#[test]
fn policy_lists_concatenate_across_files() {
    let mut fx = Fixture::new();
    let user = fx.home_file(
        ".config/mcpmux/config.toml",
        "[policy]\nallow = [\"user_allow\"]\ndeny = [\"effect:destructive\"]\n",
    );
    let project = fx.project_file(
        "mcpmux.toml",
        "[policy]\nallow = [\"project_allow\"]\nask = [\"effect:mutate\"]\n",
    );
    // A Claude file in between contributes nothing to the policy.
    fx.project_file(".mcp.json", r#"{"a": {"command": "a"}}"#);
    let extra = fx.project_file(
        "extra.toml",
        "[policy]\nallow = [\"extra_allow\", \"effect:read\"]\ndeny = [\"mcp__x__*\"]\n",
    );
    fx.extra = vec![extra.clone()];
    let set = fx.load();
    assert!(set.problems.is_empty(), "{:#?}", messages(&set));
    assert!(
        set.files.contains(&user) && set.files.contains(&project) && set.files.contains(&extra)
    );
    // A project file's allow entries are ignored: it may only add asks and denials.
    assert_eq!(
        set.policy.allow,
        ["user_allow", "extra_allow", "effect:read"]
    );
    assert_eq!(set.policy.ask, ["effect:mutate"]);
    assert_eq!(set.policy.deny, ["effect:destructive", "mcp__x__*"]);
}

#[test]
fn bad_policy_entries_are_problems_and_the_rest_is_kept() {
    let fx = Fixture::new();
    let path = fx.project_file(
        "mcpmux.toml",
        r#"
[policy]
allow = "mcp__fs__*"
ask = ["effect:mutating", "ok_*"]
deny = ["effects:destructive", "mcp__x__*", "", 3, "effect:network"]
alow = ["x"]
default = "deny"

[servers.a]
command = "a"
"#,
    );
    let set = fx.load();
    assert_eq!(names(&set), ["a"]);
    assert_eq!(set.policy.allow, Vec::<String>::new());
    assert_eq!(set.policy.ask, ["ok_*"]);
    assert_eq!(set.policy.deny, ["mcp__x__*", "effect:network"]);
    let file = path.display();
    let mut expected = vec![
        format!(
            r#"{file}: field "policy.allow": expected an array of strings, found a string: write it in brackets, as ["mcp__fs__*"]"#
        ),
        format!(r#"{file}: unknown key "policy.alow": did you mean "policy.allow"?"#),
        format!(
            r#"{file}: field "policy.ask[0]": "effect:mutating" is not a side-effect class: use one of effect:read, effect:mutate, effect:destructive, effect:network"#
        ),
        format!(r#"{file}: unknown key "policy.default": valid keys are allow, ask, deny"#),
        format!(
            r#"{file}: field "policy.deny[0]": "effects:destructive" is not a tool name or glob: tool names have no ":": give a tool name or glob like "mcp__github__get_*""#
        ),
        format!(
            r#"{file}: field "policy.deny[2]": is empty: remove it, or give a tool-name glob like "mcp__github__*" or "effect:mutate""#
        ),
        format!(r#"{file}: field "policy.deny[3]": expected a string, found an integer"#),
    ];
    let mut all = messages(&set);
    all.sort();
    expected.sort();
    assert_eq!(all, expected);
    assert!(
        set.problems
            .iter()
            .all(|p| p.server.is_none() && p.file == path)
    );
}

#[test]
fn policy_that_is_not_a_table_is_a_problem() {
    let fx = Fixture::new();
    let path = fx.project_file("mcpmux.toml", "policy = [\"deny\"]\n");
    let set = fx.load();
    assert_eq!(set.policy, PolicyRules::default());
    assert_eq!(
        only_message(&set),
        format!(
            "{}: field \"policy\": expected a table, found an array: write it as [policy]",
            path.display()
        )
    );
}

#[test]
fn claude_oauth_block_and_headers_helper_are_read_unchanged() {
    let mut fx = Fixture::new();
    fx.set_env("API_SECRET", "s3cret");
    fx.project_file(
        ".mcp.json",
        r#"{"mcpServers": {
            "api": {"type": "http", "url": "https://api.example/mcp",
                    "oauth": {"clientId": "abc", "clientSecret": "${API_SECRET}", "callbackPort": 8765,
                              "scope": "read write"},
                    "headersHelper": "/usr/local/bin/get-headers"},
            "plain": {"type": "http", "url": "https://plain.example/mcp"},
            "local": {"command": "x", "headersHelper": "ignored for stdio"}
        }}"#,
    );
    let set = fx.load();
    assert!(messages(&set).is_empty(), "{:#?}", messages(&set));
    let api = &server(&set, "api").auth;
    assert_eq!(
        api.headers_helper.as_deref(),
        Some("/usr/local/bin/get-headers")
    );
    assert_eq!(api.oauth.client_id.as_deref(), Some("abc"));
    assert_eq!(api.oauth.client_secret.as_deref(), Some("s3cret"));
    assert_eq!(api.oauth.callback_port, Some(8765));
    assert_eq!(api.oauth.scopes, ["read", "write"]);
    assert_eq!(api.oauth.grant, OAuthGrant::AuthorizationCode);
    // The secret never shows in a printed spec.
    assert!(!format!("{:?}", server(&set, "api")).contains("s3cret"));
    assert_eq!(server(&set, "plain").auth, AuthSpec::default());
    assert_eq!(server(&set, "local").auth, AuthSpec::default());
}

#[test]
fn mcpmux_toml_machine_grants() {
    let fx = Fixture::new();
    let key = fx.project_file(
        "keys/client.pem",
        "-----BEGIN EC PRIVATE KEY-----\nx\n-----END EC PRIVATE KEY-----\n",
    );
    fx.project_file(
        "mcpmux.toml",
        &format!(
            r#"
[servers.robot]
url = "https://robot.example/mcp"
oauth = {{ client_id = "bot", grant = "client_credentials", private_key_file = "{}" }}

[servers.workload]
url = "https://w.example/mcp"
oauth = {{ grant = "jwt_bearer", assertion_file = "token.jwt" }}

[servers.corp]
url = "https://corp.example/mcp"
[servers.corp.oauth]
grant = "enterprise"
client_id = "corp-client"
id_token_file = "/run/id_token"
idp = {{ issuer = "https://idp.example", token_endpoint = "https://idp.example/token", client_id = "idp-client" }}
"#,
            key.display()
        ),
    );
    let set = fx.load();
    assert!(messages(&set).is_empty(), "{:#?}", messages(&set));
    let OAuthGrant::ClientCredentials {
        private_key: Some(key),
    } = &server(&set, "robot").auth.oauth.grant
    else {
        panic!("{:?}", server(&set, "robot").auth);
    };
    assert_eq!(key.algorithm, "ES256", "EC keys default to ES256");
    let OAuthGrant::JwtBearer {
        assertion: TokenSource::File(path),
    } = &server(&set, "workload").auth.oauth.grant
    else {
        panic!("{:?}", server(&set, "workload").auth);
    };
    assert_eq!(path, &fx.project.path().join("token.jwt"));
    let OAuthGrant::Enterprise { idp, id_token } = &server(&set, "corp").auth.oauth.grant else {
        panic!("{:?}", server(&set, "corp").auth);
    };
    assert_eq!(idp.client_id, "idp-client");
    assert_eq!(id_token, &TokenSource::File(PathBuf::from("/run/id_token")));
}

#[test]
fn oauth_mistakes_name_the_field_and_the_fix() {
    for (oauth, field, words) in [
        (
            r#"{ grant = "device_code" }"#,
            "oauth.grant",
            "client_credentials",
        ),
        (
            r#"{ grant = "client_credentials" }"#,
            "oauth.clientId",
            "client id",
        ),
        (
            r#"{ grant = "client_credentials", client_id = "x" }"#,
            "oauth.clientSecret",
            "privateKeyFile",
        ),
        (
            r#"{ callback_port = 70000 }"#,
            "oauth.callbackPort",
            "1 to 65535",
        ),
        (
            r#"{ client_metadata_url = "http://x/c.json" }"#,
            "oauth.clientMetadataUrl",
            "https://",
        ),
        (
            r#"{ client_secret = "s" }"#,
            "oauth.clientSecret",
            "clientId",
        ),
        (r#"{ colour = "blue" }"#, "oauth.colour", "unknown key"),
        (
            r#"{ issuer = "http://auth.example" }"#,
            "oauth.issuer",
            "https://",
        ),
        (
            r#"{ grant = "enterprise", client_id = "c" }"#,
            "oauth.idp",
            "issuer",
        ),
    ] {
        let fx = Fixture::new();
        fx.project_file(
            "mcpmux.toml",
            &format!("[servers.s]\nurl = \"https://s.example/mcp\"\noauth = {oauth}\n"),
        );
        let message = only_message(&fx.load());
        assert!(
            message.contains(field) && message.contains(words),
            "{oauth}: {message}"
        );
    }
    let fx = Fixture::new();
    fx.project_file(
        "mcpmux.toml",
        "[servers.s]\ncommand = \"x\"\nheaders_helper = \"y\"\n",
    );
    let message = only_message(&fx.load());
    assert!(message.contains("stdio"), "{message}");
}

#[test]
fn oauth_issuer_pins_the_authorization_server_in_both_spellings() {
    let fx = Fixture::new();
    fx.project_file(
        ".mcp.json",
        r#"{"mcpServers": {"api": {"type": "http", "url": "https://api.example/mcp",
                    "oauth": {"issuer": "https://auth.example"}}}}"#,
    );
    fx.project_file(
        "mcpmux.toml",
        "[servers.local]\nurl = \"http://127.0.0.1:9/mcp\"\noauth = { issuer = \"http://127.0.0.1:9\" }\n",
    );
    let set = fx.load();
    assert_eq!(
        server(&set, "api").auth.oauth.issuer.as_deref(),
        Some("https://auth.example")
    );
    // Plain http is for loopback only.
    assert_eq!(
        server(&set, "local").auth.oauth.issuer.as_deref(),
        Some("http://127.0.0.1:9")
    );
}
