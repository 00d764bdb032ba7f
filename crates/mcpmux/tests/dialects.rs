//! Other tools' config files through the public face: Codex, Cursor, VS Code, Gemini CLI and
//! Windsurf files written exactly as their owners document them are read only when imported,
//! rank below the person's own files, need approval at project level, and start real servers
//! whose tools answer. Fields mcpmux cannot honour are warnings, never dropped silently.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use mcpmux::config::{self, ConfigError, ConfigSet, Dialect, LoadOptions, Origin, TransportSpec};
use mcpmux::{Hub, HubOptions, ServerSpec};
use support::{echo, testserver, testserver_http};

struct Dirs {
    _root: tempfile::TempDir,
    home: PathBuf,
    project: PathBuf,
    env: BTreeMap<String, String>,
}

impl Dirs {
    fn new() -> Self {
        let root = tempfile::tempdir().unwrap();
        let home = root.path().join("home");
        let project = root.path().join("project");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&project).unwrap();
        Dirs {
            _root: root,
            home,
            project,
            env: BTreeMap::new(),
        }
    }

    fn write(&self, path: PathBuf, text: &str) -> PathBuf {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }

    fn set(&mut self, name: &str, value: &str) {
        self.env.insert(name.to_owned(), value.to_owned());
    }

    fn options(&self) -> LoadOptions {
        LoadOptions::new(Some(self.home.clone()), &self.project)
    }

    /// Every import, the project approved: these tests are about reading the files.
    fn importing_all(&self) -> LoadOptions {
        self.options()
            .with_import(Dialect::IMPORTABLE.to_vec())
            .with_approver(|_| true)
    }

    fn load(&self, options: &LoadOptions) -> ConfigSet {
        config::load_with_env(options, &|name| self.env.get(name).cloned())
    }
}

fn names(set: &ConfigSet) -> Vec<&str> {
    set.servers.iter().map(|s| s.name.as_str()).collect()
}

fn server<'a>(set: &'a ConfigSet, name: &str) -> &'a ServerSpec {
    set.servers
        .iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no server {name}: {set:#?}"))
}

fn dialect(spec: &ServerSpec) -> Dialect {
    match &spec.origin {
        Origin::File { dialect, .. } => *dialect,
        other => panic!("not from a file: {other:?}"),
    }
}

fn stdio(spec: &ServerSpec) -> (&str, &[String], &BTreeMap<String, String>, Option<&Path>) {
    match &spec.transport {
        TransportSpec::Stdio {
            command,
            args,
            env,
            cwd,
        } => (command, args, env, cwd.as_deref()),
        other => panic!("not stdio: {other:?}"),
    }
}

fn remote(spec: &ServerSpec) -> (&'static str, &str, &BTreeMap<String, String>) {
    match &spec.transport {
        TransportSpec::Http { url, headers } => ("http", url, headers),
        TransportSpec::Sse { url, headers } => ("sse", url, headers),
        other => panic!("not remote: {other:?}"),
    }
}

/// Every problem's message, warnings included.
fn messages(set: &ConfigSet) -> Vec<String> {
    set.problems.iter().map(|p| p.error.to_string()).collect()
}

fn warnings_of<'a>(set: &'a ConfigSet, server: &str) -> Vec<&'a ConfigError> {
    set.problems
        .iter()
        .filter(|p| p.is_warning() && p.server.as_deref() == Some(server))
        .map(|p| &p.error)
        .collect()
}

fn unhonoured_fields(set: &ConfigSet, server: &str) -> Vec<String> {
    warnings_of(set, server)
        .into_iter()
        .map(|error| match error {
            ConfigError::Unhonoured { field, .. } => field.clone(),
            other => panic!("not an unhonoured field: {other}"),
        })
        .collect()
}

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
    assert_eq!(unhonoured_fields(&set, "linear"), ["auth"]);

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
            "sh -c touch pwned",
            "https://${env:SECRET}.example.com/mcp",
            "https://g.example.com/mcp"
        ],
        "shown as written, never expanded before approval"
    );

    config::approve(
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
