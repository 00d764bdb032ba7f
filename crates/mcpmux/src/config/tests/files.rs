//! Whole directories: which files are read, in which order they win, the shapes of each
//! dialect, `${VAR}` expansion, and the position named in a parse error.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;

#[test]
fn merge_precedence_across_every_file() {
    // Source k (1-based) defines servers s<k>..s<N>, all with command = its label, so server
    // s<N> must come from source N, the last that defines it.
    let mut fx = Fixture::new();
    let labels = [
        "claude-json-user",
        "claude-json-local",
        "home-settings",
        "xdg-config",
        "project-settings",
        "mcp-json",
        "mcpmux-toml",
        "extra-json",
        "extra-toml",
    ];
    let n = labels.len();
    let defined_by = |k: usize| -> Vec<String> { (k..=n).map(|i| format!("s{i}")).collect() };

    let project_key = fx.project.path().to_string_lossy().into_owned();
    let claude_json = serde_json::json!({
        "mcpServers": json_servers(&defined_by(1), labels[0]),
        "projects": {
            "/some/other/project": { "mcpServers": { "s1": { "command": "other-project" } } },
            project_key: { "mcpServers": json_servers(&defined_by(2), labels[1]), "allowedTools": [] },
        },
        "numStartups": 12,
    });
    let mut files = vec![fx.home_file(".claude.json", &claude_json.to_string())];
    files.push(fx.home_file(
        ".claude/settings.json",
        &serde_json::json!({ "mcpServers": json_servers(&defined_by(3), labels[2]) }).to_string(),
    ));
    fx.set_env(
        "XDG_CONFIG_HOME",
        &fx.home.path().join("xdg").to_string_lossy(),
    );
    // Shadowed by XDG_CONFIG_HOME: must not be read.
    fx.home_file(
        ".config/mcpmux/config.toml",
        &toml_servers(&defined_by(1), "decoy"),
    );
    files.push(fx.home_file(
        "xdg/mcpmux/config.toml",
        &toml_servers(&defined_by(4), labels[3]),
    ));
    files.push(fx.project_file(
        ".claude/settings.json",
        &serde_json::json!({ "mcpServers": json_servers(&defined_by(5), labels[4]) }).to_string(),
    ));
    files.push(fx.project_file(
        ".mcp.json",
        &serde_json::json!({ "mcpServers": json_servers(&defined_by(6), labels[5]) }).to_string(),
    ));
    files.push(fx.project_file("mcpmux.toml", &toml_servers(&defined_by(7), labels[6])));
    let extra_json = fx.project_file(
        "extra/one.json",
        &json_servers(&defined_by(8), labels[7]).to_string(),
    );
    let extra_toml = fx.project_file("extra/two.toml", &toml_servers(&defined_by(9), labels[8]));
    fx.extra = vec![extra_json.clone(), extra_toml.clone()];
    files.push(extra_json);
    files.push(extra_toml);

    let set = fx.load();
    assert!(set.problems.is_empty(), "{:#?}", messages(&set));
    assert_eq!(set.files, files);
    assert_eq!(
        names(&set),
        (1..=n).map(|i| format!("s{i}")).collect::<Vec<_>>()
    );
    for (i, label) in labels.iter().enumerate() {
        let spec = server(&set, &format!("s{}", i + 1));
        assert_eq!(command(spec), *label, "{spec:?}");
    }
    let Origin::File { path, dialect } = &server(&set, "s9").origin else {
        panic!("no file origin");
    };
    assert_eq!(
        (path.as_path(), *dialect),
        (files[7].as_path(), Dialect::Mcpmux)
    );
}

#[test]
fn config_dir_defaults_to_dot_config_without_xdg() {
    let fx = Fixture::new();
    fx.home_file(
        ".config/mcpmux/config.toml",
        "[servers.a]\ncommand = \"a\"\n",
    );
    let set = fx.load();
    assert_eq!(names(&set), ["a"]);
}

#[test]
fn servers_are_sorted_by_name() {
    let fx = Fixture::new();
    fx.project_file(
        ".mcp.json",
        r#"{"mcpServers": {"zeta": {"command": "z"}, "alpha": {"command": "a"}, "Mid": {"command": "m"}}}"#,
    );
    assert_eq!(names(&fx.load()), ["Mid", "alpha", "zeta"]);
}

#[test]
fn mcp_json_wrapped_shape() {
    let fx = Fixture::new();
    fx.project_file(
        ".mcp.json",
        r#"{"mcpServers": {"fs": {"command": "npx", "args": ["-y", "server-fs", "/tmp"]}}}"#,
    );
    let set = fx.load();
    let (args, _, _) = stdio_parts(server(&set, "fs"));
    assert_eq!(args, ["-y", "server-fs", "/tmp"]);
}

#[test]
fn mcp_json_flat_shape() {
    let fx = Fixture::new();
    fx.project_file(
        ".mcp.json",
        r#"{"fs": {"command": "npx"}, "remote": {"url": "https://example.test/mcp"}, "events": {"type": "sse", "url": "http://127.0.0.1:9/sse"}}"#,
    );
    let set = fx.load();
    assert!(set.problems.is_empty(), "{:#?}", messages(&set));
    assert_eq!(names(&set), ["events", "fs", "remote"]);
    assert_eq!(remote(server(&set, "remote")).0, "http");
    assert_eq!(remote(server(&set, "events")).0, "sse");
}

#[test]
fn settings_json_is_never_read_as_a_flat_map() {
    // settings.json holds many other objects; only `mcpServers` in it names servers.
    let fx = Fixture::new();
    fx.project_file(
        ".claude/settings.json",
        r#"{"permissions": {"type": "allow"}}"#,
    );
    let set = fx.load();
    assert!(set.servers.is_empty() && set.problems.is_empty(), "{set:?}");
}

#[test]
fn expansion_with_and_without_default() {
    let mut fx = Fixture::new();
    fx.set_env("TOKEN", "s3cr3t");
    fx.set_env("HOST", "example.test");
    fx.set_env("BIN", "/opt/bin/tool");
    fx.project_file(
        ".mcp.json",
        r#"{"mcpServers": {
            "local": {"command": "${BIN}", "args": ["--port", "${PORT:-8080}", "cost: 5$$", "${EMPTY:-}x", "$HOME"],
                      "env": {"API_KEY": "${TOKEN}", "${NOT_A_KEY}": "literal key"}},
            "remote": {"type": "http", "url": "https://${HOST}/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}
        }}"#,
    );
    let set = fx.load();
    assert!(set.problems.is_empty(), "{:#?}", messages(&set));
    let local = server(&set, "local");
    assert_eq!(command(local), "/opt/bin/tool");
    let (args, env, _) = stdio_parts(local);
    assert_eq!(args, ["--port", "8080", "cost: 5$", "x", "$HOME"]);
    assert_eq!(env.get("API_KEY").map(String::as_str), Some("s3cr3t"));
    assert_eq!(
        env.get("${NOT_A_KEY}").map(String::as_str),
        Some("literal key")
    );
    let (_, url, headers) = remote(server(&set, "remote"));
    assert_eq!(url, "https://example.test/mcp");
    assert_eq!(
        headers.get("Authorization").map(String::as_str),
        Some("Bearer s3cr3t")
    );
}

#[test]
fn unset_variable_names_the_variable_and_the_field() {
    let fx = Fixture::new();
    let path = fx.project_file(
        ".mcp.json",
        r#"{"mcpServers": {
            "github": {"type": "http", "url": "https://api.example/mcp", "headers": {"Authorization": "Bearer ${GITHUB_TOKEN}"}},
            "fs": {"command": "npx"}
        }}"#,
    );
    let set = fx.load();
    assert_eq!(names(&set), ["fs"]);
    assert_eq!(
        only_message(&set),
        format!(
            "{}: server \"github\": field \"headers.Authorization\" uses ${{GITHUB_TOKEN}}, which is not set: set GITHUB_TOKEN in the environment, or give a default with ${{GITHUB_TOKEN:-default}}",
            path.display()
        )
    );
    let problem = &set.problems[0];
    assert_eq!(problem.server.as_deref(), Some("github"));
    assert_eq!(problem.file, path);
    assert!(
        matches!(&problem.error, ConfigError::UnsetVariable { variable, .. } if variable == "GITHUB_TOKEN")
    );
}

#[test]
fn unset_variable_in_args_and_env_fields() {
    let fx = Fixture::new();
    fx.project_file(
        "mcpmux.toml",
        "[servers.a]\ncommand = \"x\"\nargs = [\"ok\", \"${NOPE}\"]\n[servers.b]\ncommand = \"x\"\nenv = { KEY = \"${ALSO_NOPE}\" }\n",
    );
    let set = fx.load();
    let all = messages(&set).join("\n");
    assert!(
        all.contains("server \"a\": field \"args[1]\" uses ${NOPE}"),
        "{all}"
    );
    assert!(
        all.contains("server \"b\": field \"env.KEY\" uses ${ALSO_NOPE}"),
        "{all}"
    );
}

#[test]
fn unterminated_reference_is_invalid() {
    let fx = Fixture::new();
    fx.project_file(
        ".mcp.json",
        r#"{"a": {"command": "x", "args": ["${OOPS"]}}"#,
    );
    let message = only_message(&fx.load());
    assert!(
        message.contains("field \"args[0]\": \"${\" has no closing \"}\""),
        "{message}"
    );
}

#[test]
fn bad_json_names_the_position_and_other_files_still_load() {
    let fx = Fixture::new();
    let path = fx.project_file(
        ".mcp.json",
        "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\",}\n  }\n}\n",
    );
    fx.project_file("mcpmux.toml", "[servers.b]\ncommand = \"b\"\n");
    let set = fx.load();
    assert_eq!(names(&set), ["b"]);
    assert!(set.files.contains(&path));
    let message = only_message(&set);
    assert!(
        message.starts_with(&format!("{}:3:", path.display())),
        "{message}"
    );
    assert!(
        message.contains("not valid JSON: trailing comma"),
        "{message}"
    );
    assert!(!message.contains(" at line "), "{message}");
    assert_eq!(set.problems[0].server, None);
    assert!(matches!(
        set.problems[0].error,
        ConfigError::Parse { line: Some(3), .. }
    ));
}

#[test]
fn top_level_json_that_is_not_an_object_is_a_parse_error() {
    let fx = Fixture::new();
    fx.project_file(".mcp.json", "[1, 2]");
    let message = only_message(&fx.load());
    assert!(
        message.contains("not valid JSON: the top level is an array, not an object"),
        "{message}"
    );
}

#[test]
fn bad_toml_names_the_position() {
    let fx = Fixture::new();
    let path = fx.project_file(
        "mcpmux.toml",
        "[servers.a]\ncommand = \"x\"\nargs = [\"unclosed\"\n",
    );
    let set = fx.load();
    let message = only_message(&set);
    assert!(
        message.starts_with(&format!("{}:", path.display())),
        "{message}"
    );
    assert!(message.contains("not valid TOML"), "{message}");
    assert!(
        matches!(set.problems[0].error, ConfigError::Parse { line: Some(l), column: Some(_), .. } if l >= 3),
        "{message}"
    );
}

#[test]
fn unknown_type_lists_the_valid_ones() {
    let fx = Fixture::new();
    let path = fx.project_file(
        ".mcp.json",
        r#"{"mcpServers": {"g": {"type": "grpc", "url": "https://x"}}}"#,
    );
    assert_eq!(
        only_message(&fx.load()),
        format!(
            "{}: server \"g\": field \"type\" is \"grpc\", which is not a transport: use one of \"stdio\" (the default), \"http\" (also \"streamable-http\"), \"sse\", \"ws\" (also \"websocket\")",
            path.display()
        )
    );
}

#[test]
fn type_aliases_are_accepted() {
    let fx = Fixture::new();
    fx.project_file(
        ".mcp.json",
        r#"{"mcpServers": {
            "a": {"type": "streamable-http", "url": "https://x/mcp"},
            "b": {"type": "streamableHttp", "url": "https://x/mcp"},
            "c": {"type": "streamable_http", "url": "https://x/mcp"},
            "d": {"type": "websocket", "url": "wss://x/mcp"},
            "e": {"type": "ws", "url": "ws://x/mcp"},
            "f": {"url": "wss://x/mcp"},
            "g": {"type": "stdio", "command": "x"}
        }}"#,
    );
    let set = fx.load();
    assert!(set.problems.is_empty(), "{:#?}", messages(&set));
    let kinds: Vec<_> = set.servers.iter().map(|s| s.transport.kind()).collect();
    assert_eq!(kinds, ["http", "http", "http", "ws", "ws", "ws", "stdio"]);
}

/// `only` reads the entries of the servers it admits and skips the rest unread: a broken
/// entry skipped is no problem, an admitted one keeps its overlay from a later file and its
/// own problem, and a file's own problems are found whatever it admits.
#[test]
fn only_the_admitted_entries_are_read() {
    let f = Fixture::new();
    f.project_file(
        ".mcp.json",
        r#"{"mcpServers": {"mine": {"command": "m"}, "broken": {"args": []}, "other": {"command": "${UNSET_HERE}"}}}"#,
    );
    f.project_file(
        "mcpmux.toml",
        "typo = 1\n[servers.mine]\ncall_timeout = \"7s\"\n[servers.bad_too]\ncomand = \"x\"\n",
    );
    let whole = f.load();
    assert_eq!(names(&whole), ["mine"]);
    assert_eq!(messages(&whole).len(), 4, "{:#?}", messages(&whole));

    let env = |_: &str| None;
    let only = f.options().with_only(|name| name == "mine");
    let set = load_with_env(&only, &env);
    assert_eq!(names(&set), ["mine"]);
    assert_eq!(server(&set, "mine").call_timeout, Duration::from_secs(7));
    let problems = messages(&set);
    assert_eq!(problems.len(), 1, "{problems:#?}");
    assert!(problems[0].contains("typo"), "{problems:#?}");

    let only = f.options().with_only(|name| name == "broken");
    let set = load_with_env(&only, &env);
    assert!(set.servers.is_empty());
    let problems: Vec<_> = set
        .problems
        .iter()
        .filter_map(|p| p.server.as_deref())
        .collect();
    assert_eq!(problems, ["broken"], "{:#?}", messages(&set));
}
