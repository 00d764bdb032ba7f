//! Other tools' config files through the public face: read only when imported, ranked below the
//! person's own files, approved like any project file, bounded and quiet about secrets when
//! hostile, and starting real servers whose tools answer.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::time::Duration;

use mcpmux::config::{ConfigError, Dialect};
use mcpmux::{Hub, HubOptions};
use support::{Dirs, dialect, echo, messages, names, server, stdio, testserver, testserver_http};

// ----- opt-in, precedence, approval -----

fn every_tools_files(dirs: &Dirs) {
    dirs.write(
        dirs.home.join(".codex/config.toml"),
        "[mcp_servers.codex_one]\ncommand = \"a\"\n",
    );
    dirs.write(
        dirs.home.join(".cursor/mcp.json"),
        r#"{"mcpServers": {"cursor_one": {"command": "b"}}}"#,
    );
    dirs.write(
        dirs.project.join(".vscode/mcp.json"),
        r#"{"servers": {"vscode_one": {"type": "stdio", "command": "c"}}}"#,
    );
    dirs.write(
        dirs.home.join(".gemini/settings.json"),
        r#"{"mcpServers": {"gemini_one": {"command": "d"}}}"#,
    );
    dirs.write(
        dirs.home.join(".codeium/windsurf/mcp_config.json"),
        r#"{"mcpServers": {"windsurf_one": {"command": "e"}}}"#,
    );
}

#[test]
fn no_other_tools_servers_appear_without_an_import() {
    let dirs = Dirs::new();
    every_tools_files(&dirs);
    let set = dirs.load(&dirs.options().with_approver(|_| true));
    assert!(set.servers.is_empty(), "{set:#?}");
    assert!(
        set.files.is_empty(),
        "no file of another tool is even read: {:?}",
        set.files
    );

    let set = dirs.load(&dirs.importing_all());
    assert_eq!(
        names(&set),
        [
            "codex_one",
            "cursor_one",
            "gemini_one",
            "vscode_one",
            "windsurf_one"
        ]
    );
}

#[test]
fn import_in_the_users_mcpmux_toml_reads_the_named_tools_and_an_unknown_name_is_reported() {
    let dirs = Dirs::new();
    every_tools_files(&dirs);
    let own = dirs.write(
        dirs.home.join(".config/mcpmux/config.toml"),
        "import = [\"codex\", \"windsurf\", \"cursr\"]\n",
    );
    let set = dirs.load(&dirs.options());
    assert!(
        names(&set).is_empty(),
        "a bad list imports nothing: {set:#?}"
    );
    let text = messages(&set).join("\n");
    assert!(
        text.contains("\"cursr\"") && text.contains("\"vscode\"") && text.contains("\"all\""),
        "{text}"
    );

    std::fs::write(&own, "import = [\"codex\", \"windsurf\"]\n").unwrap();
    let set = dirs.load(&dirs.options());
    assert_eq!(
        names(&set),
        ["codex_one", "windsurf_one"],
        "{:#?}",
        messages(&set)
    );
}

#[test]
fn a_projects_import_reads_only_the_projects_files_never_the_persons_own() {
    let dirs = Dirs::new();
    every_tools_files(&dirs);
    dirs.write(dirs.project.join("mcpmux.toml"), "import = [\"all\"]\n");
    let set = dirs.load(&dirs.options().with_approver(|_| true));
    assert_eq!(names(&set), ["vscode_one"], "{set:#?}");
}

#[test]
fn the_persons_own_entry_wins_a_name_clash_with_an_imported_one() {
    let dirs = Dirs::new();
    dirs.write(
        dirs.home.join(".cursor/mcp.json"),
        r#"{"mcpServers": {"same": {"command": "from-cursor"}, "tuned": {"command": "tuned-mcp"}}}"#,
    );
    dirs.write(
        dirs.home.join(".claude.json"),
        r#"{"mcpServers": {"same": {"command": "from-claude"}}}"#,
    );
    dirs.write(
        dirs.project.join(".cursor/mcp.json"),
        r#"{"mcpServers": {"proj": {"command": "from-project-cursor"}}}"#,
    );
    dirs.write(
        dirs.project.join(".mcp.json"),
        r#"{"mcpServers": {"proj": {"command": "from-mcp-json"}}}"#,
    );
    // An overlay in the person's mcpmux.toml adjusts an imported server, as it would a Claude one.
    dirs.write(
        dirs.home.join(".config/mcpmux/config.toml"),
        "import = [\"cursor\"]\n[servers.tuned]\ncall_timeout = \"7s\"\n",
    );
    let set = dirs.load(&dirs.options().with_approver(|_| true));
    assert_eq!(stdio(server(&set, "same")).0, "from-claude");
    assert_eq!(stdio(server(&set, "proj")).0, "from-mcp-json");
    let tuned = server(&set, "tuned");
    assert_eq!(tuned.call_timeout, Duration::from_secs(7));
    assert_eq!(
        dialect(tuned),
        Dialect::Cursor,
        "the definition's source stays visible"
    );
}

#[test]
fn imported_project_files_need_approval_and_mcpmux_trust_covers_them() {
    let dirs = Dirs::new();
    dirs.write(
        dirs.project.join(".cursor/mcp.json"),
        r#"{"mcpServers": {"c": {"command": "sh", "args": ["-c", "touch pwned"]}}}"#,
    );
    dirs.write(
        dirs.project.join(".vscode/mcp.json"),
        r#"{"servers": {"v": {"type": "http", "url": "https://${env:SECRET}.example.com/mcp"}}}"#,
    );
    dirs.write(
        dirs.project.join(".gemini/settings.json"),
        r#"{"mcpServers": {"g": {"httpUrl": "https://g.example.com/mcp"}}}"#,
    );
    dirs.write(
        dirs.project.join(".codex/config.toml"),
        "[mcp_servers.x]\ncommand = \"codex-project-mcp\"\n",
    );
    let options = dirs.options().with_import(Dialect::IMPORTABLE.to_vec());
    let set = dirs.load(&options);
    assert!(set.servers.is_empty(), "{set:#?}");
    let untrusted: Vec<_> = set
        .problems
        .iter()
        .filter(|p| matches!(p.error, ConfigError::Untrusted { .. }))
        .map(|p| p.server.as_deref().unwrap())
        .collect();
    assert_eq!(untrusted, ["x", "c", "v", "g"]);
    let targets: Vec<_> = set.project.iter().map(|e| e.target.as_str()).collect();
    assert_eq!(
        targets,
        [
            "codex-project-mcp",
            "sh -c 'touch pwned'",
            "https://${env:SECRET}.example.com/mcp",
            "https://g.example.com/mcp"
        ],
        "shown as written, never expanded before approval"
    );

    mcpmux::cli_support::trust::approve(
        set.trust_file.as_deref().unwrap(),
        &dirs.project,
        &set.project,
    )
    .unwrap();
    let set = dirs.load(&options);
    assert_eq!(names(&set), ["c", "g", "v", "x"], "{:#?}", messages(&set));

    // A changed entry needs approval again.
    dirs.write(
        dirs.project.join(".gemini/settings.json"),
        r#"{"mcpServers": {"g": {"httpUrl": "https://elsewhere.example.com/mcp"}}}"#,
    );
    let set = dirs.load(&options);
    assert_eq!(names(&set), ["c", "v", "x"]);
}

// ----- hostile files -----

#[test]
fn a_bad_entry_is_one_problem_and_the_others_load() {
    let dirs = Dirs::new();
    dirs.write(
        dirs.home.join(".cursor/mcp.json"),
        r#"{"mcpServers": {"ok": {"command": "ok-mcp"}, "bad": {"command": 5}, "worse": [1], "": {}}}"#,
    );
    dirs.write(dirs.home.join(".gemini/settings.json"), "{ not json");
    dirs.write(
        dirs.home.join(".codeium/windsurf/mcp_config.json"),
        r#"{"mcpServers": {"two": {"serverUrl": "https://a.example.com", "url": "https://b.example.com"}}}"#,
    );
    let set = dirs.load(&dirs.importing_all());
    assert_eq!(names(&set), ["ok"]);
    let servers: Vec<_> = set.problems.iter().map(|p| p.server.clone()).collect();
    assert_eq!(set.problems.len(), 5, "{:#?}", messages(&set));
    for name in ["bad", "worse", "two"] {
        assert!(
            servers.contains(&Some(name.to_owned())),
            "{name}: {:#?}",
            messages(&set)
        );
    }
}

#[test]
fn an_env_files_values_never_appear_in_an_error() {
    let dirs = Dirs::new();
    dirs.write(
        dirs.home.join(".cursor/mcp.json"),
        r#"{"mcpServers": {"db": {"command": "db-mcp", "envFile": "secrets.env"}}}"#,
    );
    dirs.write(
        dirs.home.join(".cursor/secrets.env"),
        "GOOD=1\nhunter2-password-line\n",
    );
    let set = dirs.load(&dirs.options().with_import(vec![Dialect::Cursor]));
    assert!(set.servers.is_empty());
    let text = messages(&set).join("\n");
    assert!(text.contains("secrets.env:2"), "{text}");
    assert!(!text.contains("hunter2"), "{text}");
}

// ----- real servers -----

/// `sh -c 'test … && exec testserver …'`: the server starts only if the environment arrived.
fn guarded(check: &str, page_size: &str) -> Vec<String> {
    vec![
        "-c".to_owned(),
        format!("{check} && exec \"$0\" --page-size {page_size}"),
        testserver().display().to_string(),
    ]
}

#[tokio::test]
async fn a_server_of_each_dialect_starts_with_its_environment_and_answers_a_tool_call() {
    let mut dirs = Dirs::new();
    let json_args = |check: &str, page: &str| serde_json::to_string(&guarded(check, page)).unwrap();
    let toml_args = |check: &str, page: &str| {
        let items: Vec<String> = guarded(check, page)
            .iter()
            .map(|a| toml::Value::String(a.clone()).to_string())
            .collect();
        format!("[{}]", items.join(", "))
    };
    dirs.write(
        dirs.home.join(".codex/config.toml"),
        &format!(
            "[mcp_servers.codex_ts]\ncommand = \"sh\"\nargs = {}\nenv_vars = [\"PASSED\"]\ntool_timeout_sec = 10\n",
            toml_args("test \"$PASSED\" = yes", "1001")
        ),
    );
    dirs.write(
        dirs.home.join(".cursor/mcp.json"),
        &format!(
            r#"{{"mcpServers": {{"cursor_ts": {{"command": "sh", "args": {}, "envFile": ".env"}}}}}}"#,
            json_args("test \"$FROM_FILE\" = 1", "1002")
        ),
    );
    dirs.write(dirs.home.join(".cursor/.env"), "FROM_FILE=1\n");
    dirs.write(
        dirs.project.join(".vscode/mcp.json"),
        &format!(
            r#"{{"inputs": [{{"type": "promptString", "id": "key", "password": true}}],
                "servers": {{"vscode_ts": {{"type": "stdio", "command": "sh", "args": {}, "env": {{"KEY": "${{input:key}}"}}}}}}}}"#,
            json_args("test \"$KEY\" = typed", "1003")
        ),
    );
    dirs.write(
        dirs.home.join(".gemini/settings.json"),
        &format!(
            r#"{{"mcpServers": {{"gemini_ts": {{"command": "sh", "args": {}, "env": {{"V": "$PASSED"}}, "timeout": 10000}}}}}}"#,
            json_args("test \"$V\" = yes", "1004")
        ),
    );
    dirs.write(
        dirs.home.join(".codeium/windsurf/mcp_config.json"),
        &format!(
            r#"{{"mcpServers": {{"windsurf_ts": {{"command": "sh", "args": {}, "env": {{"W": "${{env:PASSED}}"}}}}}}}}"#,
            json_args("test \"$W\" = yes", "1005")
        ),
    );
    // Imported servers run in the `project` sandbox; `sh -c` hides the test server from it.
    dirs.write(
        dirs.home.join(".config/mcpmux/config.toml"),
        &support::sandbox_reads_testserver(),
    );
    dirs.set("PASSED", "yes");
    let options = dirs
        .importing_all()
        .with_input_prompt(|_| Some("typed".to_owned()));
    let set = dirs.load(&options);
    assert!(set.problems.is_empty(), "{:#?}", messages(&set));

    let hub = Hub::from_config(set, HubOptions::ephemeral()).unwrap();
    hub.wait_ready().await.unwrap();
    for name in [
        "codex_ts",
        "cursor_ts",
        "vscode_ts",
        "gemini_ts",
        "windsurf_ts",
    ] {
        assert_eq!(echo(&hub, name, name).await.unwrap(), name, "{name}");
    }
    let servers = hub.servers();
    let dialects: Vec<_> = servers
        .iter()
        .map(|s| {
            (
                s.name.as_str(),
                s.dialect.as_deref().unwrap(),
                s.state.label(),
            )
        })
        .collect();
    assert_eq!(
        dialects,
        [
            ("codex_ts", "codex", "connected"),
            ("cursor_ts", "cursor", "connected"),
            ("gemini_ts", "gemini", "connected"),
            ("vscode_ts", "vscode", "connected"),
            ("windsurf_ts", "windsurf", "connected"),
        ]
    );
    assert!(
        servers[1]
            .source
            .as_deref()
            .unwrap()
            .ends_with(".cursor/mcp.json")
    );
    hub.shutdown().await;
}

#[tokio::test]
async fn remote_entries_reach_a_real_http_server_and_their_warnings_stay_with_them() {
    let http = testserver_http(&[]);
    let dirs = Dirs::new();
    dirs.write(
        dirs.home.join(".gemini/settings.json"),
        &format!(
            r#"{{"mcpServers": {{"remote": {{"httpUrl": "{}", "trust": true}}}}}}"#,
            http.url
        ),
    );
    let set = dirs.load(&dirs.options().with_import(vec![Dialect::Gemini]));
    let hub = Hub::from_config(set, HubOptions::ephemeral()).unwrap();
    hub.wait_ready().await.unwrap();
    assert_eq!(
        echo(&hub, "remote", "over http").await.unwrap(),
        "over http"
    );
    let servers = hub.servers();
    assert_eq!(
        servers.len(),
        1,
        "a warning is not a row of its own: {servers:#?}"
    );
    assert_eq!(servers[0].state.label(), "connected");
    assert_eq!(servers[0].warnings.len(), 1, "{servers:#?}");
    assert!(servers[0].warnings[0].contains("\"trust\""), "{servers:#?}");
    hub.shutdown().await;
}
