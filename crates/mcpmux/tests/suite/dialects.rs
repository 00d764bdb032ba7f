//! Other tools' config files read as their owners write them: Codex, Cursor, VS Code, Gemini
//! CLI and Windsurf files shaped exactly as their documentation shows, each field mapped to
//! mcpmux's options, their variables and inputs resolved, and every field mcpmux cannot honour
//! reported as a warning, never dropped silently. (Import, precedence, approval and started
//! servers: `dialects_import.rs`.)
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::path::Path;
use std::time::Duration;

use mcpmux::config::Dialect;
use support::{Dirs, dialect, messages, names, remote, server, stdio, unhonoured_fields};

// ----- the owners' own examples, made realistic -----

/// `~/.codex/config.toml` as Codex's config reference writes it, with Codex's other settings.
const CODEX: &str = r#"
model = "o3"
approval_policy = "on-request"

[mcp_servers.docs]
command = "npx"
args = ["-y", "@upstash/context7-mcp"]
cwd = "/srv/docs"
env_vars = ["DOCS_TOKEN", "NOT_SET_ANYWHERE"]
startup_timeout_sec = 20
tool_timeout_sec = 45.5
enabled_tools = ["resolve-library-id", "get-library-docs"]

[mcp_servers.docs.env]
DEBUG = "mcp:*"

[mcp_servers.figma]
url = "https://mcp.figma.com/mcp"
bearer_token_env_var = "FIGMA_OAUTH_TOKEN"
http_headers = { "X-Figma-Region" = "us-east-1" }
env_http_headers = { "X-Team" = "FIGMA_TEAM", "X-Absent" = "NOT_SET_ANYWHERE" }
startup_timeout_ms = 1500
disabled_tools = ["delete_file"]
oauth_resource = "https://mcp.figma.com"

[mcp_servers.old]
command = "old-mcp"
enabled = false
"#;

#[test]
fn codex_config_is_read_as_codex_writes_it() {
    let mut dirs = Dirs::new();
    dirs.write(dirs.home.join(".codex/config.toml"), CODEX);
    dirs.set("DOCS_TOKEN", "d0cs");
    dirs.set("FIGMA_OAUTH_TOKEN", "f1gma");
    dirs.set("FIGMA_TEAM", "design");
    let set = dirs.load(&dirs.options().with_import(vec![Dialect::Codex]));

    assert_eq!(names(&set), ["docs", "figma", "old"], "{set:#?}");
    let docs = server(&set, "docs");
    assert_eq!(dialect(docs), Dialect::Codex);
    let (command, args, env, cwd) = stdio(docs);
    assert_eq!(command, "npx");
    assert_eq!(args, ["-y", "@upstash/context7-mcp"]);
    assert_eq!(cwd, Some(Path::new("/srv/docs")));
    assert_eq!(env.get("DEBUG").map(String::as_str), Some("mcp:*"));
    assert_eq!(env.get("DOCS_TOKEN").map(String::as_str), Some("d0cs"));
    assert!(!env.contains_key("NOT_SET_ANYWHERE"), "{env:?}");
    assert_eq!(docs.startup_timeout, Duration::from_secs(20));
    assert_eq!(docs.call_timeout, Duration::from_millis(45_500));
    assert_eq!(
        docs.options.tools.allow,
        ["resolve-library-id", "get-library-docs"]
    );

    let figma = server(&set, "figma");
    let (kind, url, headers) = remote(figma);
    assert_eq!((kind, url), ("http", "https://mcp.figma.com/mcp"));
    assert_eq!(headers["Authorization"], "Bearer f1gma");
    assert_eq!(headers["X-Figma-Region"], "us-east-1");
    assert_eq!(headers["X-Team"], "design");
    assert!(!headers.contains_key("X-Absent"));
    assert_eq!(figma.startup_timeout, Duration::from_millis(1500));
    assert_eq!(figma.options.tools.deny, ["delete_file"]);
    assert_eq!(unhonoured_fields(&set, "figma"), ["oauth_resource"]);

    assert!(!server(&set, "old").enabled);
    assert_eq!(
        set.problems.iter().filter(|p| !p.is_warning()).count(),
        0,
        "{:#?}",
        messages(&set)
    );
}

#[test]
fn codex_home_moves_the_codex_file_and_an_unset_bearer_variable_is_named() {
    let mut dirs = Dirs::new();
    let codex_home = dirs.home.join("elsewhere");
    dirs.write(
        dirs.home.join(".codex/config.toml"),
        "[mcp_servers.ignored]\ncommand = \"x\"\n",
    );
    dirs.write(
        codex_home.join("config.toml"),
        "[mcp_servers.remote]\nurl = \"https://example.com/mcp\"\nbearer_token_env_var = \"MISSING_TOKEN\"\n\n[mcp_servers.local]\ncommand = \"local-mcp\"\n",
    );
    dirs.set("CODEX_HOME", codex_home.to_str().unwrap());
    let set = dirs.load(&dirs.options().with_import(vec![Dialect::Codex]));
    assert_eq!(names(&set), ["local"], "{set:#?}");
    let problem = set
        .problems
        .iter()
        .find(|p| p.server.as_deref() == Some("remote"))
        .unwrap();
    let text = problem.error.to_string();
    assert!(
        text.contains("MISSING_TOKEN") && text.contains("bearer_token_env_var"),
        "{text}"
    );
}

/// `~/.cursor/mcp.json` as Cursor's MCP docs write it.
const CURSOR_USER: &str = r#"{
  "mcpServers": {
    "github": {
      "url": "https://api.githubcopilot.com/mcp/",
      "headers": { "Authorization": "Bearer ${env:GITHUB_TOKEN}" }
    },
    "events": {
      "type": "sse",
      "url": "https://events.example.com/sse"
    },
    "linear": {
      "url": "https://mcp.linear.app/mcp",
      "auth": { "CLIENT_ID": "abc", "scopes": ["read"] }
    }
  }
}"#;

/// A project's `.cursor/mcp.json`, with an env file beside it.
const CURSOR_PROJECT: &str = r#"{
  "mcpServers": {
    "db": {
      "command": "${workspaceFolder}/bin/db-mcp",
      "args": ["--home", "${userHome}", "--project", "${workspaceFolderBasename}"],
      "env": { "DB_MODE": "read-only", "SHARED": "from-env" },
      "envFile": "${workspaceFolder}/.env.mcp"
    }
  }
}"#;

#[test]
fn cursor_files_are_read_with_cursors_variables_and_env_file() {
    let mut dirs = Dirs::new();
    dirs.write(dirs.home.join(".cursor/mcp.json"), CURSOR_USER);
    dirs.write(dirs.project.join(".cursor/mcp.json"), CURSOR_PROJECT);
    dirs.write(
        dirs.project.join(".env.mcp"),
        "# secrets\nDB_PASSWORD=\"pa ss\"\nSHARED=from-file\n",
    );
    dirs.set("GITHUB_TOKEN", "ghp_1");
    let set = dirs.load(&dirs.importing_all());

    assert_eq!(
        names(&set),
        ["db", "events", "github", "linear"],
        "{set:#?}"
    );
    let (kind, _, headers) = remote(server(&set, "github"));
    assert_eq!(kind, "http");
    assert_eq!(headers["Authorization"], "Bearer ghp_1");
    assert_eq!(remote(server(&set, "events")).0, "sse");
    // Cursor's `auth` is its static OAuth client: read as ours, nothing left unhonoured.
    assert!(unhonoured_fields(&set, "linear").is_empty(), "{set:#?}");
    let oauth = &server(&set, "linear").auth.oauth;
    assert_eq!(oauth.client_id.as_deref(), Some("abc"));
    assert_eq!(oauth.scopes, ["read"]);

    let db = server(&set, "db");
    assert_eq!(dialect(db), Dialect::Cursor);
    let (command, args, env, _) = stdio(db);
    let project = std::path::absolute(&dirs.project).unwrap();
    assert_eq!(command, format!("{}/bin/db-mcp", project.display()));
    assert_eq!(args[1], dirs.home.display().to_string());
    assert_eq!(args[3], "project");
    assert_eq!(env["DB_PASSWORD"], "pa ss");
    assert_eq!(env["SHARED"], "from-env", "env wins over envFile");
    assert_eq!(env["DB_MODE"], "read-only");
}

#[test]
fn an_unset_cursor_variable_is_a_problem_of_that_server_only() {
    let dirs = Dirs::new();
    dirs.write(dirs.home.join(".cursor/mcp.json"), CURSOR_USER);
    let set = dirs.load(&dirs.options().with_import(vec![Dialect::Cursor]));
    assert_eq!(names(&set), ["events", "linear"]);
    let problem = set
        .problems
        .iter()
        .find(|p| p.server.as_deref() == Some("github"))
        .unwrap();
    assert!(
        problem.error.to_string().contains("${env:GITHUB_TOKEN}"),
        "{}",
        problem.error
    );
}

/// A project's `.vscode/mcp.json` as VS Code's MCP configuration reference writes it.
const VSCODE: &str = r#"{
  "inputs": [
    { "type": "promptString", "id": "perplexity-key", "description": "Perplexity API Key", "password": true },
    { "type": "promptString", "id": "region", "description": "Region" }
  ],
  "servers": {
    "perplexity": {
      "type": "stdio",
      "command": "npx",
      "args": ["-y", "server-perplexity-ask"],
      "env": { "PERPLEXITY_API_KEY": "${input:perplexity-key}", "MISSING": "[${env:NOT_SET}]" },
      "envFile": ".env",
      "dev": { "watch": "src/**/*.ts", "debug": { "type": "node" } }
    },
    "fetch": {
      "type": "http",
      "url": "https://api.example.com/${input:region}/mcp",
      "headers": { "X-Key": "${input:perplexity-key}" }
    },
    "legacy": { "type": "sse", "url": "https://legacy.example.com/sse", "sandboxEnabled": true }
  }
}"#;

#[test]
fn vscode_inputs_come_from_variables_or_are_asked_once_and_dev_is_ignored_silently() {
    let mut dirs = Dirs::new();
    dirs.write(dirs.project.join(".vscode/mcp.json"), VSCODE);
    dirs.write(dirs.project.join(".vscode/.env"), "FROM_FILE=1\n");
    dirs.set("MCPMUX_INPUT_REGION", "eu");
    let asked = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = asked.clone();
    let options = dirs.importing_all().with_input_prompt(move |request| {
        seen.lock().unwrap().push((
            request.id.clone(),
            request.password,
            request.description.clone(),
        ));
        Some("pplx-secret".to_owned())
    });
    let set = dirs.load(&options);

    assert_eq!(
        names(&set),
        ["fetch", "legacy", "perplexity"],
        "{:#?}",
        messages(&set)
    );
    assert_eq!(
        *asked.lock().unwrap(),
        [(
            "perplexity-key".to_owned(),
            true,
            "Perplexity API Key".to_owned()
        )],
        "asked once, for the input no variable answers"
    );
    let perplexity = server(&set, "perplexity");
    assert_eq!(dialect(perplexity), Dialect::VsCode);
    let (_, _, env, _) = stdio(perplexity);
    assert_eq!(env["PERPLEXITY_API_KEY"], "pplx-secret");
    assert_eq!(
        env["MISSING"], "[]",
        "VS Code resolves an unset variable to nothing"
    );
    assert_eq!(
        env["FROM_FILE"], "1",
        "envFile is relative to the config file's folder"
    );
    let (kind, url, headers) = remote(server(&set, "fetch"));
    assert_eq!((kind, url), ("http", "https://api.example.com/eu/mcp"));
    assert_eq!(headers["X-Key"], "pplx-secret");
    assert!(
        unhonoured_fields(&set, "perplexity").is_empty(),
        "dev is debugging-only"
    );
    assert_eq!(unhonoured_fields(&set, "legacy"), ["sandboxEnabled"]);
    // The answer is nowhere in what a person or a log sees.
    assert!(!format!("{set:?}").contains("pplx-secret"));
}

#[test]
fn a_vscode_input_without_an_answer_names_the_variable_to_set() {
    let dirs = Dirs::new();
    dirs.write(dirs.project.join(".vscode/mcp.json"), VSCODE);
    dirs.write(dirs.project.join(".vscode/.env"), "A=1\n");
    let set = dirs.load(&dirs.importing_all());
    assert_eq!(names(&set), ["legacy"], "{set:#?}");
    let text = messages(&set).join("\n");
    assert!(text.contains("MCPMUX_INPUT_PERPLEXITY_KEY"), "{text}");
    assert!(text.contains("MCPMUX_INPUT_REGION"), "{text}");
}

/// `~/.gemini/settings.json` as Gemini CLI's MCP docs write it, with its other settings.
const GEMINI: &str = r#"{
  "theme": "Dracula",
  "mcp": { "excluded": ["experimental"] },
  "mcpServers": {
    "pythonTools": {
      "command": "python",
      "args": ["-m", "my_mcp_server", "--port", "8080"],
      "cwd": "./mcp-servers/python",
      "env": { "DATABASE_URL": "$DB_CONNECTION_STRING", "API_KEY": "${EXTERNAL_API_KEY}", "KEPT": "$NOT_SET" },
      "timeout": 15000,
      "includeTools": ["safe_tool", "file_reader"],
      "excludeTools": ["file_reader_admin"]
    },
    "httpServer": {
      "httpUrl": "https://api.example.com/mcp",
      "headers": { "Authorization": "Bearer $API_TOKEN" },
      "trust": true,
      "description": "The team's server"
    },
    "sseServer": { "url": "https://sse.example.com/sse" },
    "experimental": { "command": "exp-mcp" }
  }
}"#;

#[test]
fn gemini_settings_are_read_as_gemini_cli_reads_them() {
    let mut dirs = Dirs::new();
    dirs.write(dirs.home.join(".gemini/settings.json"), GEMINI);
    dirs.set("DB_CONNECTION_STRING", "postgres://db");
    dirs.set("EXTERNAL_API_KEY", "ext");
    dirs.set("API_TOKEN", "tok");
    let set = dirs.load(&dirs.options().with_import(vec![Dialect::Gemini]));

    assert_eq!(
        names(&set),
        ["experimental", "httpServer", "pythonTools", "sseServer"]
    );
    let python = server(&set, "pythonTools");
    assert_eq!(dialect(python), Dialect::Gemini);
    let (_, _, env, cwd) = stdio(python);
    assert_eq!(env["DATABASE_URL"], "postgres://db");
    assert_eq!(env["API_KEY"], "ext");
    assert_eq!(
        env["KEPT"], "$NOT_SET",
        "Gemini CLI keeps an unset variable as written"
    );
    assert_eq!(
        cwd,
        Some(dirs.project.join("./mcp-servers/python").as_path())
    );
    assert_eq!(python.call_timeout, Duration::from_secs(15));
    assert_eq!(python.options.tools.allow, ["safe_tool", "file_reader"]);
    assert_eq!(python.options.tools.deny, ["file_reader_admin"]);

    let (kind, _, headers) = remote(server(&set, "httpServer"));
    assert_eq!(kind, "http");
    assert_eq!(headers["Authorization"], "Bearer tok");
    assert_eq!(unhonoured_fields(&set, "httpServer"), ["trust"]);
    assert_eq!(remote(server(&set, "sseServer")).0, "sse");
    assert!(!server(&set, "experimental").enabled, "mcp.excluded");
}

/// `~/.codeium/windsurf/mcp_config.json` as Windsurf's MCP docs write it.
const WINDSURF: &str = r#"{
  "mcpServers": {
    "github": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-github"],
      "env": { "GITHUB_PERSONAL_ACCESS_TOKEN": "${env:GH_PAT}" },
      "disabledTools": ["delete_repository"]
    },
    "figma": {
      "serverUrl": "https://figma.example.com/mcp",
      "headers": { "X-Key": "${env:FIGMA_KEY}" }
    },
    "off": { "command": "off-mcp", "disabled": true }
  }
}"#;

#[test]
fn windsurf_config_is_read_with_server_url_and_disabled_tools() {
    let mut dirs = Dirs::new();
    dirs.write(
        dirs.home.join(".codeium/windsurf/mcp_config.json"),
        WINDSURF,
    );
    dirs.set("GH_PAT", "ghp");
    dirs.set("FIGMA_KEY", "fk");
    let set = dirs.load(&dirs.options().with_import(vec![Dialect::Windsurf]));
    assert_eq!(
        names(&set),
        ["figma", "github", "off"],
        "{:#?}",
        messages(&set)
    );
    let github = server(&set, "github");
    assert_eq!(dialect(github), Dialect::Windsurf);
    assert_eq!(stdio(github).2["GITHUB_PERSONAL_ACCESS_TOKEN"], "ghp");
    assert_eq!(github.options.tools.deny, ["delete_repository"]);
    let (kind, url, headers) = remote(server(&set, "figma"));
    assert_eq!((kind, url), ("http", "https://figma.example.com/mcp"));
    assert_eq!(headers["X-Key"], "fk");
    assert!(!server(&set, "off").enabled);
    assert!(set.problems.is_empty(), "{:#?}", messages(&set));
}
