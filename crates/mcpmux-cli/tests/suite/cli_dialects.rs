//! Other tools' config files from the command line: `--import` reads them (and nothing reads
//! them without it), `mcpmux servers` shows where each server comes from and in which
//! dialect, and fields mcpmux cannot honour are printed as warnings under the table.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use serde_json::json;
use support::{Run, Sandbox, assert_code, table_row};

fn testserver() -> String {
    support::testserver().display().to_string()
}

/// The sandbox's own Codex folder, whatever `CODEX_HOME` this machine has.
fn run(sandbox: &Sandbox, args: &[&str]) -> Run {
    let codex = sandbox.home.join(".codex");
    sandbox.run_with_env(args, &[("CODEX_HOME", codex.to_str().unwrap())])
}

fn cursor_file(sandbox: &Sandbox) {
    sandbox.write_file(
        &sandbox.home.join(".cursor").join("mcp.json"),
        &json!({ "mcpServers": { "ts": { "command": testserver(), "args": ["--page-size", "50"] } } })
            .to_string(),
    );
}

#[test]
fn another_tools_server_is_listed_only_once_imported() {
    let sandbox = Sandbox::new();
    cursor_file(&sandbox);
    let names = |run: &Run| -> Vec<String> {
        support::json(run)
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let listed = run(&sandbox, &["servers", "--json"]);
    assert_code(&listed, 0);
    assert!(!names(&listed).contains(&"ts".to_owned()), "{listed:#?}");
    let imported = run(&sandbox, &["--import", "all", "servers", "--json"]);
    assert_eq!(names(&imported), ["ts"], "{imported:#?}");
}

#[test]
fn import_flag_reads_cursors_file_and_the_servers_table_shows_its_source_and_dialect() {
    let sandbox = Sandbox::new();
    cursor_file(&sandbox);
    let listed = run(&sandbox, &["--import", "cursor", "servers"]);
    assert_code(&listed, 0);
    let header: Vec<&str> = listed
        .stdout
        .lines()
        .next()
        .unwrap()
        .split_whitespace()
        .collect();
    assert_eq!(header[5], "SOURCE", "{listed:#?}");
    let row: Vec<&str> = table_row(&listed.stdout, "ts").split_whitespace().collect();
    assert_eq!(row[3], "connected", "{listed:#?}");
    assert_eq!(row[5], "~/.cursor/mcp.json", "{listed:#?}");
    assert_eq!(row[6], "(cursor)", "{listed:#?}");

    let json = run(&sandbox, &["--import", "cursor", "servers", "--json"]);
    let servers = support::json(&json);
    let ts = &servers[0];
    assert_eq!(ts["name"], "ts", "{json:#?}");
    assert_eq!(ts["dialect"], "cursor");
    assert!(
        ts["source"]
            .as_str()
            .unwrap()
            .ends_with("/.cursor/mcp.json")
    );
    assert_eq!(ts["warnings"], json!([]));
}

#[test]
fn import_takes_a_comma_separated_list_and_a_codex_server_answers_a_call() {
    let sandbox = Sandbox::new();
    sandbox.write_file(
        &sandbox.home.join(".codex").join("config.toml"),
        &format!(
            "model = \"o3\"\n\n[mcp_servers.codex_ts]\ncommand = \"{}\"\nargs = [\"--page-size\", \"51\"]\ntool_timeout_sec = 20\n",
            testserver().replace('\\', "\\\\").replace('"', "\\\"")
        ),
    );
    let called = run(
        &sandbox,
        &[
            "--import",
            "windsurf,codex",
            "call",
            "mcp__codex_ts__echo",
            r#"{"text":"from codex"}"#,
        ],
    );
    assert_code(&called, 0);
    assert_eq!(called.stdout.trim(), "from codex", "{called:#?}");
}

#[test]
fn an_unknown_import_name_is_refused_with_the_valid_names() {
    let sandbox = Sandbox::new();
    let refused = run(&sandbox, &["--import", "codex,cursr", "servers"]);
    assert_code(&refused, 2);
    assert!(refused.stderr.contains("cursr"), "{refused:#?}");
    for name in [
        "codex",
        "cursor",
        "vscode",
        "gemini",
        "windsurf",
        "claude-desktop",
        "all",
    ] {
        assert!(refused.stderr.contains(name), "{name}: {refused:#?}");
    }
}

#[test]
fn unhonoured_fields_are_warnings_under_the_table_and_in_json() {
    let sandbox = Sandbox::new();
    sandbox.write_file(
        &sandbox.home.join(".gemini").join("settings.json"),
        &json!({ "mcpServers": { "gem": {
            "command": testserver(), "args": ["--page-size", "52"], "trust": true, "timeout": 20000
        } } })
        .to_string(),
    );
    let listed = run(&sandbox, &["--import", "gemini", "servers"]);
    assert_code(&listed, 0);
    let row: Vec<&str> = table_row(&listed.stdout, "gem")
        .split_whitespace()
        .collect();
    assert_eq!(
        row[3], "connected",
        "a warning does not stop the server: {listed:#?}"
    );
    let warning = listed
        .stdout
        .lines()
        .find(|line| line.starts_with("warning:"))
        .unwrap_or_else(|| panic!("no warning line: {listed:#?}"));
    assert!(
        warning.contains("settings.json")
            && warning.contains("\"gem\"")
            && warning.contains("\"trust\""),
        "{warning}"
    );

    let json = run(&sandbox, &["--import", "gemini", "servers", "--json"]);
    let servers = support::json(&json);
    assert_eq!(servers.as_array().unwrap().len(), 1, "{json:#?}");
    assert!(
        servers[0]["warnings"][0]
            .as_str()
            .unwrap()
            .contains("\"trust\"")
    );
}

#[test]
fn import_in_mcpmux_toml_works_like_the_flag_and_a_vscode_input_comes_from_its_variable() {
    let sandbox = Sandbox::new();
    sandbox.write_file(
        &sandbox
            .home
            .join(".config")
            .join("mcpmux")
            .join("config.toml"),
        &format!(
            "import = [\"vscode\"]\n{}",
            support::sandbox_reads_testserver()
        ),
    );
    sandbox.write_file(
        &sandbox.project.join(".vscode").join("mcp.json"),
        &json!({
            "inputs": [{ "type": "promptString", "id": "api-key", "password": true }],
            "servers": { "vs": {
                "type": "stdio",
                "command": "sh",
                "args": ["-c", "test \"$KEY\" = s3cr3t && exec \"$0\" --page-size 53", testserver()],
                "env": { "KEY": "${input:api-key}" }
            } }
        })
        .to_string(),
    );
    // A project's server: approved first, as with any project file.
    let trusted = run(&sandbox, &["trust"]);
    assert_code(&trusted, 0);
    assert!(trusted.stdout.contains("vs:"), "{trusted:#?}");

    let unanswered = run(&sandbox, &["servers"]);
    assert!(
        unanswered.stdout.contains("MCPMUX_INPUT_API_KEY"),
        "{unanswered:#?}"
    );

    let mut cmd = sandbox.command(&["call", "mcp__vs__echo", r#"{"text":"vs"}"#]);
    cmd.env("MCPMUX_INPUT_API_KEY", "s3cr3t")
        .env("CODEX_HOME", sandbox.home.join(".codex"));
    let called = support::run_command(cmd, None);
    assert_code(&called, 0);
    assert_eq!(called.stdout.trim(), "vs", "{called:#?}");
    assert!(!called.stderr.contains("s3cr3t"), "{called:#?}");
}

/// VS Code, Cursor and Windsurf write JSONC: comments and trailing commas are read as their
/// owners read them (the whole file was refused with "key must be a string").
#[test]
fn vscode_cursor_and_windsurf_files_with_comments_and_trailing_commas_are_read() {
    let sandbox = Sandbox::new();
    let ts = serde_json::to_string(&testserver()).unwrap();
    sandbox.write_file(
        &sandbox.project.join(".vscode").join("mcp.json"),
        &format!(
            "// VS Code's own comment\n{{\n  \"servers\": {{\n    /* a block comment */\n    \"vs\": {{ \"type\": \"stdio\", \"command\": {ts}, \"args\": [\"--page-size\", \"51\",], }},\n  }},\n}}\n"
        ),
    );
    sandbox.write_file(
        &sandbox.home.join(".cursor").join("mcp.json"),
        &format!("{{ \"mcpServers\": {{ \"cu\": {{ \"command\": {ts} }}, }} // mine\n}}"),
    );
    sandbox.write_file(
        &sandbox
            .home
            .join(".codeium")
            .join("windsurf")
            .join("mcp_config.json"),
        &format!(
            "{{\n  // windsurf\n  \"mcpServers\": {{ \"ws\": {{ \"command\": {ts}, }} }},\n}}"
        ),
    );
    let trusted = run(&sandbox, &["--import", "vscode", "trust"]);
    assert_code(&trusted, 0);
    let listed = run(&sandbox, &["--import", "vscode,cursor,windsurf", "servers"]);
    assert_code(&listed, 0);
    for name in ["vs", "cu", "ws"] {
        let row: Vec<&str> = table_row(&listed.stdout, name).split_whitespace().collect();
        assert_eq!(row[3], "connected", "{name}: {listed:#?}");
    }
    let called = run(
        &sandbox,
        &[
            "--import",
            "vscode",
            "call",
            "mcp__vs__echo",
            r#"{"text":"jsonc"}"#,
        ],
    );
    assert_code(&called, 0);
    assert_eq!(called.stdout, "jsonc\n", "{called:#?}");
}

/// JSONC is for the editors' files only: Claude Code reads `.mcp.json` as strict JSON, and
/// a broken JSONC file says where it broke.
#[test]
fn claude_files_stay_strict_json_and_a_broken_jsonc_file_says_where() {
    let sandbox = Sandbox::new();
    let ts = serde_json::to_string(&testserver()).unwrap();
    sandbox.write_file(
        &sandbox.home.join(".claude.json"),
        &format!("{{ \"mcpServers\": {{ \"cl\": {{ \"command\": {ts} }} }} // no\n}}"),
    );
    sandbox.write_file(
        &sandbox.home.join(".cursor").join("mcp.json"),
        "{\n  \"mcpServers\": {\n    'single': {}\n  }\n}",
    );
    let listed = run(&sandbox, &["--import", "cursor", "servers"]);
    assert!(listed.stdout.contains("not valid JSON"), "{listed:#?}");
    assert!(listed.stdout.contains(".claude.json"), "{listed:#?}");
    assert!(listed.stdout.contains("mcp.json:3:5"), "{listed:#?}");
}

/// Claude Desktop's `claude_desktop_config.json`, as its quickstart writes it (beside its own
/// preferences), is read with `--import claude-desktop` and with `all`, and not without.
#[test]
fn claude_desktop_config_is_read_when_imported_and_with_all() {
    let sandbox = Sandbox::new();
    sandbox.write_file(
        &sandbox
            .home
            .join(".config")
            .join("Claude")
            .join("claude_desktop_config.json"),
        &json!({
            "globalShortcut": "Ctrl+Space",
            "mcpServers": { "desk": {
                "command": testserver(),
                "args": ["--page-size", "52"],
                "env": { "NOT_EXPANDED": "${HOME}" }
            } }
        })
        .to_string(),
    );
    let unasked = run(&sandbox, &["servers", "--json"]);
    assert!(!unasked.stdout.contains("desk"), "{unasked:#?}");
    for import in ["claude-desktop", "all"] {
        let listed = run(&sandbox, &["--import", import, "servers", "--json"]);
        assert_code(&listed, 0);
        let servers = support::json(&listed);
        let desk = servers
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == "desk")
            .unwrap_or_else(|| panic!("{import}: {listed:#?}"));
        assert_eq!(desk["dialect"], "claude-desktop", "{listed:#?}");
        assert_eq!(desk["state"], "connected", "{listed:#?}");
        assert_eq!(desk["warnings"], json!([]), "{listed:#?}");
    }
    let called = run(
        &sandbox,
        &[
            "--import",
            "claude-desktop",
            "call",
            "mcp__desk__echo",
            r#"{"text":"desk"}"#,
        ],
    );
    assert_code(&called, 0);
    assert_eq!(called.stdout, "desk\n", "{called:#?}");
}
