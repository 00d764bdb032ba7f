//! Loading whole directories: discovery, merge order, and what users read when something is
//! wrong. Each test builds a temporary home and project and passes its own environment.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tempfile::TempDir;

use super::*;
use crate::defaults;

/// A temporary home and project directory, with an environment of our own.
struct Fixture {
    home: TempDir,
    project: TempDir,
    env: BTreeMap<String, String>,
    extra: Vec<PathBuf>,
}

impl Fixture {
    fn new() -> Self {
        Fixture {
            home: TempDir::new().unwrap(),
            project: TempDir::new().unwrap(),
            env: BTreeMap::new(),
            extra: Vec::new(),
        }
    }

    fn write(path: PathBuf, text: &str) -> PathBuf {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }

    fn home_file(&self, relative: &str, text: &str) -> PathBuf {
        Self::write(self.home.path().join(relative), text)
    }

    fn project_file(&self, relative: &str, text: &str) -> PathBuf {
        Self::write(self.project.path().join(relative), text)
    }

    fn set_env(&mut self, name: &str, value: &str) {
        self.env.insert(name.to_owned(), value.to_owned());
    }

    fn options(&self) -> LoadOptions {
        LoadOptions {
            home: Some(self.home.path().to_path_buf()),
            project_dir: self.project.path().to_path_buf(),
            extra_files: self.extra.clone(),
            // These tests are about reading files: the project is approved (trust has its own).
            approve: Some(std::sync::Arc::new(|_: &ProjectEntry| true)),
        }
    }

    fn load(&self) -> ConfigSet {
        let env = |name: &str| self.env.get(name).cloned();
        load_with_env(&self.options(), &env)
    }
}

fn names(set: &ConfigSet) -> Vec<&str> {
    set.servers.iter().map(|s| s.name.as_str()).collect()
}

fn server<'a>(set: &'a ConfigSet, name: &str) -> &'a ServerSpec {
    set.servers
        .iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no server {name}; problems: {:#?}", messages(set)))
}

fn messages(set: &ConfigSet) -> Vec<String> {
    set.problems.iter().map(|p| p.error.to_string()).collect()
}

/// The only problem, as text; fails if there is not exactly one.
fn only_message(set: &ConfigSet) -> String {
    let all = messages(set);
    assert_eq!(all.len(), 1, "{all:#?}");
    all.into_iter().next().unwrap()
}

fn command(spec: &ServerSpec) -> &str {
    match &spec.transport {
        TransportSpec::Stdio { command, .. } => command,
        other => panic!("not stdio: {other:?}"),
    }
}

fn stdio_parts(spec: &ServerSpec) -> (&[String], &BTreeMap<String, String>, Option<&Path>) {
    match &spec.transport {
        TransportSpec::Stdio { args, env, cwd, .. } => (args, env, cwd.as_deref()),
        other => panic!("not stdio: {other:?}"),
    }
}

fn remote(spec: &ServerSpec) -> (&'static str, &str, &BTreeMap<String, String>) {
    match &spec.transport {
        TransportSpec::Http { url, headers } => ("http", url, headers),
        TransportSpec::Sse { url, headers } => ("sse", url, headers),
        TransportSpec::Ws { url, headers } => ("ws", url, headers),
        other => panic!("not remote: {other:?}"),
    }
}

/// Claude JSON `{"name": {"command": label}, ...}` for the given names.
fn json_servers(names: &[String], label: &str) -> serde_json::Value {
    names
        .iter()
        .map(|name| (name.clone(), serde_json::json!({ "command": label })))
        .collect::<serde_json::Map<_, _>>()
        .into()
}

fn toml_servers(names: &[String], label: &str) -> String {
    names
        .iter()
        .map(|name| format!("[servers.{name}]\ncommand = \"{label}\"\n"))
        .collect()
}

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

#[test]
fn missing_command_says_what_to_do() {
    let fx = Fixture::new();
    let path = fx.project_file(
        ".mcp.json",
        r#"{"mcpServers": {"github": {"args": ["x"]}}}"#,
    );
    assert_eq!(
        only_message(&fx.load()),
        format!(
            "{}: server \"github\": field \"command\" is missing: a stdio server needs a command (or set \"type\": \"http\" with a \"url\")",
            path.display()
        )
    );
}

#[test]
fn missing_url_says_what_to_do() {
    let fx = Fixture::new();
    let path = fx.project_file("mcpmux.toml", "[servers.remote]\ntype = \"sse\"\n");
    assert_eq!(
        only_message(&fx.load()),
        format!(
            "{}: server \"remote\": field \"url\" is missing: an sse server needs a url, like \"https://example.com/mcp\"",
            path.display()
        )
    );
}

#[test]
fn unknown_key_in_mcpmux_toml_suggests_the_nearest() {
    let fx = Fixture::new();
    let path = fx.project_file("mcpmux.toml", "[servers.fs]\ncomand = \"npx\"\n");
    let set = fx.load();
    assert!(set.servers.is_empty());
    assert_eq!(
        only_message(&set),
        format!(
            "{}: server \"fs\": unknown key \"comand\": did you mean \"command\"?",
            path.display()
        )
    );
}

#[test]
fn unknown_key_without_a_near_one_lists_the_valid_keys() {
    let fx = Fixture::new();
    fx.project_file(
        "mcpmux.toml",
        "[servers.fs]\ncommand = \"npx\"\nwhatever = 1\n",
    );
    let message = only_message(&fx.load());
    assert!(
        message.contains("unknown key \"whatever\": valid keys are type, command, args"),
        "{message}"
    );
}

#[test]
fn unknown_top_level_key_is_a_problem_but_servers_still_load() {
    let fx = Fixture::new();
    let path = fx.project_file("mcpmux.toml", "[sever]\n[servers.a]\ncommand = \"a\"\n");
    let set = fx.load();
    assert_eq!(names(&set), ["a"]);
    assert_eq!(
        only_message(&set),
        format!(
            "{}: unknown key \"sever\": did you mean \"servers\"?",
            path.display()
        )
    );
    assert_eq!(set.problems[0].server, None);
}

#[test]
fn unknown_keys_in_claude_files_are_tolerated() {
    let fx = Fixture::new();
    fx.project_file(
        ".mcp.json",
        r#"{"mcpServers": {"a": {"command": "a", "alwaysAllow": ["x"], "timeout": 5, "description": "d"}}, "other": true}"#,
    );
    let set = fx.load();
    assert!(set.problems.is_empty(), "{:#?}", messages(&set));
    assert_eq!(names(&set), ["a"]);
}

#[test]
fn bad_duration_says_how_to_write_one() {
    let fx = Fixture::new();
    let path = fx.project_file(
        "mcpmux.toml",
        "[servers.a]\ncommand = \"a\"\nstartup_timeout = \"30 sec\"\n",
    );
    assert_eq!(
        only_message(&fx.load()),
        format!(
            "{}: server \"a\": field \"startup_timeout\": \"30 sec\" is not a duration: write a positive number with a unit, like \"500ms\", \"30s\" or \"2m\", or a whole number of seconds like 120",
            path.display()
        )
    );
}

#[test]
fn durations_and_options_from_mcpmux_toml() {
    let fx = Fixture::new();
    fx.project_file(
        "mcpmux.toml",
        r#"
[servers.github]
type = "http"
url = "https://api.example/mcp"
headers = { Authorization = "Bearer ${GITHUB_TOKEN:-none}" }
enabled = true
required = true
startup_timeout = "45s"
call_timeout = 300
probe_timeout = "500ms"

[servers.plain]
command = "x"
"#,
    );
    let set = fx.load();
    assert!(set.problems.is_empty(), "{:#?}", messages(&set));
    let github = server(&set, "github");
    assert!(github.enabled && github.required);
    assert_eq!(github.startup_timeout, Duration::from_secs(45));
    assert_eq!(github.call_timeout, Duration::from_secs(300));
    assert_eq!(github.probe_timeout, Duration::from_millis(500));
    let plain = server(&set, "plain");
    assert!(plain.enabled && !plain.required);
    assert_eq!(plain.startup_timeout, defaults::STARTUP_TIMEOUT);
    assert_eq!(plain.call_timeout, defaults::CALL_TIMEOUT);
    assert_eq!(plain.probe_timeout, defaults::PROBE_TIMEOUT);
}

#[test]
fn http_servers_get_the_longer_probe_deadline_unless_configured() {
    let fx = Fixture::new();
    fx.project_file(
        "mcpmux.toml",
        r#"
[servers.remote]
type = "http"
url = "https://api.example/mcp"

[servers.quick]
type = "http"
url = "https://other.example/mcp"
probe_timeout = "1s"
"#,
    );
    let set = fx.load();
    assert!(set.problems.is_empty(), "{:#?}", messages(&set));
    assert_eq!(
        server(&set, "remote").probe_timeout,
        defaults::HTTP_PROBE_TIMEOUT
    );
    assert_eq!(server(&set, "quick").probe_timeout, Duration::from_secs(1));
}

#[test]
fn wrong_value_types_name_the_field() {
    let fx = Fixture::new();
    fx.project_file(
        ".mcp.json",
        r#"{"mcpServers": {
            "a": {"command": "x", "args": ["--port", 8080]},
            "b": {"command": "x", "env": {"DEBUG": true}},
            "c": {"command": ["x"]},
            "d": {"command": "x", "disabled": "yes"},
            "e": {"url": 5},
            "f": {"command": "x", "args": "--flag"},
            "g": "npx server"
        }}"#,
    );
    let set = fx.load();
    assert!(set.servers.is_empty());
    let all = messages(&set);
    let expect = [
        "server \"a\": field \"args[1]\": expected a string, found a number: write it in quotes, as \"8080\"",
        "server \"b\": field \"env.DEBUG\": expected a string, found a boolean: write it in quotes, as \"true\"",
        "server \"c\": field \"command\": expected a string, found an array",
        "server \"d\": field \"disabled\": expected true or false, found a string",
        "server \"e\": field \"url\": expected a string, found a number",
        "server \"f\": field \"args\": expected an array of strings, found a string",
        "server \"g\": the entry is a string, not an object",
    ];
    assert_eq!(all.len(), expect.len(), "{all:#?}");
    for (message, expected) in all.iter().zip(expect) {
        assert!(
            message.contains(expected),
            "{message}\n  expected: {expected}"
        );
    }
}

#[test]
fn wrong_value_types_in_toml_use_toml_words() {
    let fx = Fixture::new();
    fx.project_file(
        "mcpmux.toml",
        "[servers.a]\ncommand = \"x\"\nenv = \"FOO=1\"\n[servers.b]\ncommand = \"x\"\nrequired = \"yes\"\n[servers.c]\ncommand = \"x\"\ncall_timeout = 1.5\n",
    );
    let all = messages(&fx.load()).join("\n");
    assert!(
        all.contains("field \"env\": expected a table of strings, found a string"),
        "{all}"
    );
    assert!(
        all.contains("field \"required\": expected true or false, found a string"),
        "{all}"
    );
    assert!(
        all.contains("field \"call_timeout\": 1.5 is not a usable duration"),
        "{all}"
    );
}

#[test]
fn fields_for_another_transport_are_errors_only_in_mcpmux_toml() {
    let fx = Fixture::new();
    fx.project_file(
        ".mcp.json",
        r#"{"a": {"type": "http", "url": "https://x/mcp", "command": "leftover"}}"#,
    );
    fx.project_file(
        "mcpmux.toml",
        "[servers.b]\ntype = \"http\"\nurl = \"https://x/mcp\"\ncommand = \"x\"\n",
    );
    let set = fx.load();
    assert_eq!(names(&set), ["a"]);
    let message = only_message(&set);
    assert!(
        message.contains("server \"b\": field \"command\": does not apply to an http server"),
        "{message}"
    );
}

#[test]
fn url_schemes_are_checked() {
    let fx = Fixture::new();
    fx.project_file(
        ".mcp.json",
        r#"{"mcpServers": {
            "ftp": {"url": "ftp://example.test/mcp"},
            "ws-as-http": {"type": "http", "url": "wss://example.test/mcp"},
            "http-as-ws": {"type": "ws", "url": "https://example.test/mcp"},
            "no-host": {"url": "https://"},
            "fine": {"type": "sse", "url": "HTTP://127.0.0.1:3000/sse"}
        }}"#,
    );
    let set = fx.load();
    assert_eq!(names(&set), ["fine"]);
    let all = messages(&set).join("\n");
    assert!(all.contains("server \"ftp\": field \"url\": \"ftp://example.test/mcp\" is not a URL an http server can use: it must start with http:// or https://"), "{all}");
    assert!(
        all.contains("(or set type to \"ws\" for a WebSocket server)"),
        "{all}"
    );
    assert!(all.contains("server \"http-as-ws\": field \"url\": \"https://example.test/mcp\" is not a URL a ws server can use: it must start with ws:// or wss://"), "{all}");
    assert!(
        all.contains("server \"no-host\": field \"url\": \"https://\" has no host"),
        "{all}"
    );
}

#[test]
fn overlay_without_a_base_is_a_problem() {
    let fx = Fixture::new();
    let path = fx.project_file("mcpmux.toml", "[servers.ghost]\nenabled = false\n");
    let set = fx.load();
    assert!(set.servers.is_empty());
    assert_eq!(
        only_message(&set),
        format!(
            "{}: server \"ghost\": nothing to adjust: no earlier file defines server \"ghost\": define it here with `command` or `url`, or fix the name",
            path.display()
        )
    );
    assert_eq!(set.problems[0].server.as_deref(), Some("ghost"));
}

#[test]
fn overlay_disables_a_server_from_mcp_json() {
    let fx = Fixture::new();
    let mcp_json = fx.project_file(
        ".mcp.json",
        r#"{"mcpServers": {"fs": {"command": "npx", "args": ["fs"]}, "other": {"command": "o"}}}"#,
    );
    fx.project_file(
        "mcpmux.toml",
        "[servers.fs]\nenabled = false\nrequired = true\ncall_timeout = \"2m\"\ntools = { deny = [\"write\"] }\n",
    );
    let set = fx.load();
    assert!(set.problems.is_empty(), "{:#?}", messages(&set));
    let fs = server(&set, "fs");
    assert!(!fs.enabled && fs.required);
    assert_eq!(fs.options.tools.deny, ["write"]);
    assert_eq!(fs.call_timeout, Duration::from_secs(120));
    assert_eq!(fs.startup_timeout, defaults::STARTUP_TIMEOUT);
    assert_eq!(command(fs), "npx");
    assert_eq!(
        fs.origin,
        Origin::File {
            path: mcp_json,
            dialect: Dialect::Claude
        }
    );
    assert!(server(&set, "other").enabled);
}

#[test]
fn overlay_cannot_change_transport_fields() {
    let fx = Fixture::new();
    fx.project_file(".mcp.json", r#"{"fs": {"command": "npx"}}"#);
    fx.project_file("mcpmux.toml", "[servers.fs]\nenv = { A = \"1\" }\n");
    let set = fx.load();
    // The bad overlay is what the user wrote last for "fs", so it hides the definition.
    assert!(set.servers.is_empty());
    let message = only_message(&set);
    assert!(
        message.contains("server \"fs\": field \"env\": this table has no type, command or url"),
        "{message}"
    );
}

#[test]
fn later_file_replaces_an_entry_wholly() {
    let fx = Fixture::new();
    fx.project_file(
        ".mcp.json",
        r#"{"fs": {"command": "npx", "args": ["a"], "env": {"A": "1"}}}"#,
    );
    fx.project_file("mcpmux.toml", "[servers.fs]\ncommand = \"other\"\n");
    let set = fx.load();
    let fs = server(&set, "fs");
    assert_eq!(command(fs), "other");
    let (args, env, _) = stdio_parts(fs);
    assert!(args.is_empty() && env.is_empty());
}

#[test]
fn later_bad_entry_replaces_an_earlier_good_one() {
    let fx = Fixture::new();
    fx.project_file(
        ".mcp.json",
        r#"{"fs": {"command": "npx"}, "keep": {"command": "k"}}"#,
    );
    let toml = fx.project_file("mcpmux.toml", "[servers.fs]\ncommand = \"${MISSING}\"\n");
    let set = fx.load();
    assert_eq!(names(&set), ["keep"]);
    assert_eq!(set.problems.len(), 1);
    assert_eq!(set.problems[0].file, toml);
}

#[test]
fn one_bad_entry_does_not_stop_another_in_the_same_file() {
    let fx = Fixture::new();
    fx.project_file(
        "mcpmux.toml",
        "[servers.bad]\ncommand = \"x\"\nprobe_timeout = \"soon\"\n\n[servers.good]\ncommand = \"y\"\n",
    );
    fx.project_file(
        ".mcp.json",
        r#"{"mcpServers": {"broken": {"type": "nope"}, "fine": {"command": "z"}}}"#,
    );
    let set = fx.load();
    assert_eq!(names(&set), ["fine", "good"]);
    assert_eq!(set.problems.len(), 2, "{:#?}", messages(&set));
    let servers: Vec<_> = set.problems.iter().map(|p| p.server.as_deref()).collect();
    assert_eq!(servers, [Some("broken"), Some("bad")]);
}

#[test]
fn missing_config_file_is_a_problem() {
    let mut fx = Fixture::new();
    let missing = fx.project.path().join("nope.toml");
    fx.extra = vec![missing.clone()];
    fx.project_file(".mcp.json", r#"{"a": {"command": "a"}}"#);
    let set = fx.load();
    assert_eq!(names(&set), ["a"]);
    assert_eq!(
        only_message(&set),
        format!(
            "{}: cannot read the file: no such file: check the path",
            missing.display()
        )
    );
    assert!(matches!(set.problems[0].error, ConfigError::Read { .. }));
    assert!(!set.files.contains(&missing));
}

#[test]
fn missing_optional_files_are_skipped_silently() {
    let fx = Fixture::new();
    let set = fx.load();
    assert!(set.servers.is_empty() && set.problems.is_empty() && set.files.is_empty());
}

#[test]
fn disabled_true_in_claude_json_disables() {
    let fx = Fixture::new();
    fx.project_file(
        ".mcp.json",
        r#"{"a": {"command": "a", "disabled": true}, "b": {"command": "b", "disabled": false}}"#,
    );
    let set = fx.load();
    assert!(!server(&set, "a").enabled);
    assert!(server(&set, "b").enabled);
}

#[test]
fn cwd_is_relative_to_the_file_and_expands_home() {
    let fx = Fixture::new();
    let file = fx.project_file(
        "conf/servers.json",
        r#"{"rel": {"command": "a", "cwd": "sub/dir"}, "home": {"command": "b", "cwd": "~/work"}, "abs": {"command": "c", "cwd": "/srv"}}"#,
    );
    let mut options = fx.options();
    options.extra_files = vec![file];
    let set = load_with_env(&options, &|_| None);
    assert!(set.problems.is_empty(), "{:#?}", messages(&set));
    let cwd = |name: &str| stdio_parts(server(&set, name)).2.map(Path::to_path_buf);
    assert_eq!(cwd("rel"), Some(fx.project.path().join("conf/sub/dir")));
    assert_eq!(cwd("home"), Some(fx.home.path().join("work")));
    assert_eq!(cwd("abs"), Some(PathBuf::from("/srv")));
}

#[test]
fn empty_names_and_empty_commands_are_problems() {
    let fx = Fixture::new();
    fx.project_file(
        ".mcp.json",
        r#"{"mcpServers": {"": {"command": "x"}, "blank": {"command": "  "}}}"#,
    );
    let all = messages(&fx.load()).join("\n");
    assert!(
        all.contains("a server has an empty name: give it a name"),
        "{all}"
    );
    assert!(
        all.contains("server \"blank\": field \"command\": is empty"),
        "{all}"
    );
}

#[test]
fn claude_local_scope_is_matched_by_project_path() {
    let fx = Fixture::new();
    let key = format!("{}/", fx.project.path().display());
    fx.home_file(
        ".claude.json",
        &serde_json::json!({
            "mcpServers": { "x": { "command": "user" } },
            "projects": { key: { "mcpServers": { "x": { "command": "local" }, "y": { "command": "y" } } } }
        })
        .to_string(),
    );
    let set = fx.load();
    assert_eq!(command(server(&set, "x")), "local");
    assert_eq!(names(&set), ["x", "y"]);
}

#[test]
fn non_utf8_file_is_a_parse_error_with_position() {
    let fx = Fixture::new();
    let path = fx.project.path().join(".mcp.json");
    std::fs::write(&path, b"{\n  \"a\xff\": 1}").unwrap();
    let message = only_message(&fx.load());
    assert!(
        message.starts_with(&format!(
            "{}:2:5: not valid JSON: the file is not UTF-8 text",
            path.display()
        )),
        "{message}"
    );
}

#[test]
fn byte_order_mark_is_ignored() {
    let fx = Fixture::new();
    fx.project_file(".mcp.json", "\u{feff}{\"a\": {\"command\": \"a\"}}");
    fx.project_file("mcpmux.toml", "\u{feff}[servers.b]\ncommand = \"b\"\n");
    let set = fx.load();
    assert!(set.problems.is_empty(), "{:#?}", messages(&set));
    assert_eq!(names(&set), ["a", "b"]);
}

#[test]
fn odd_shapes_are_problems_not_panics() {
    let inputs_json = [
        "",
        "null",
        "1",
        "\"x\"",
        "{\"mcpServers\": 1}",
        "{\"mcpServers\": null}",
        "{\"mcpServers\": {\"a\": null}}",
        "{\"mcpServers\": {\"a\": {\"type\": 1}}}",
        "{\"projects\": 1}",
        "{\"a\": {\"url\": \"https://\u{e9}\u{e9}\"}}",
        "{\"a\": {\"command\": \"x\", \"cwd\": 3}}",
        "{\"a\": {\"command\": \"${\"}}",
    ];
    for input in inputs_json {
        let fx = Fixture::new();
        fx.project_file(".mcp.json", input);
        fx.home_file(".claude.json", input);
        let _ = fx.load();
    }
    let inputs_toml = [
        "servers = 1",
        "servers = []",
        "[[servers]]\na = 1",
        "policy = 3",
        "[servers]\na = 1",
        "[servers.a]\ncommand = nan",
        "[servers.a]\ncommand = 1979-05-27",
        "[servers.a]\nstartup_timeout = -3",
        "[servers.a]\ncall_timeout = 99999999999999999",
        "[servers.\"\"]\ncommand = \"x\"",
        "[servers.a]\ncommand = \"x\"\nbackoff = { initial = nan }",
        "[servers.a]\ncommand = \"x\"\nmax_result_bytes = 1e300",
        "[servers.a]\ncommand = \"x\"\nmax_retries = 9223372036854775807",
        "[servers.a]\ncommand = \"x\"\nbreaker = { threshold = 99999999999 }",
        "[servers.a]\ncommand = \"x\"\nside_effects = { \"\" = [\"read\"] }",
        "[servers.a]\ncommand = \"x\"\nside_effects = [\"read\"]",
        "[servers.a]\ncommand = \"x\"\ntools = { allow = [[\"x\"]] }",
        "[policy]\ndeny = [[1], {}]",
        "[policy]\nallow = [\"effect:\", \":\", \"effect:read:x\"]",
    ];
    for input in inputs_toml {
        let fx = Fixture::new();
        fx.project_file("mcpmux.toml", input);
        let set = fx.load();
        assert!(set.servers.len() <= 1, "{input}: {set:?}");
    }
}

#[test]
fn from_env_uses_the_current_directory() {
    let options = LoadOptions::from_env(vec![PathBuf::from("x.toml")]);
    assert_eq!(options.project_dir, std::env::current_dir().unwrap());
    assert_eq!(options.extra_files, [PathBuf::from("x.toml")]);
}

#[test]
fn server_options_from_mcpmux_toml() {
    let fx = Fixture::new();
    fx.project_file(
        "mcpmux.toml",
        r#"
[servers.github]
url = "https://api.example/mcp"
max_retries = 0
max_result_bytes = "2MiB"
shutdown_grace = "500ms"
backoff = { initial = "2s", max = "1m", give_up = "15m" }
breaker = { threshold = 5, cool_down = "10s" }
tools = { allow = ["read_*", "mcp__github__get_*"], deny = ["delete_*"] }
stages = ["plan", "build"]
agents = ["coder"]
side_effects = { create_issue = ["mutate", "network"], "get_*" = ["read"] }

[servers.bytes]
command = "x"
max_result_bytes = 102400
max_retries = 10

[servers.decimal]
command = "x"
max_result_bytes = "500KB"
backoff = { max = "1s", initial = "1s" }

[servers.plain]
command = "x"
"#,
    );
    let set = fx.load();
    assert!(set.problems.is_empty(), "{:#?}", messages(&set));

    let options = &server(&set, "github").options;
    let ServerOptions {
        max_retries,
        max_result_bytes,
        backoff,
        breaker,
        shutdown_grace,
        tools,
        stages,
        agents,
        side_effects,
    } = options;
    assert_eq!(*max_retries, 0);
    assert_eq!(*max_result_bytes, 2 * 1024 * 1024);
    assert_eq!(*shutdown_grace, Duration::from_millis(500));
    assert_eq!(
        (backoff.initial, backoff.max, backoff.give_up),
        (
            Duration::from_secs(2),
            Duration::from_secs(60),
            Duration::from_secs(900)
        )
    );
    assert_eq!(
        (breaker.threshold, breaker.cool_down),
        (5, Duration::from_secs(10))
    );
    assert_eq!(tools.allow, ["read_*", "mcp__github__get_*"]);
    assert_eq!(tools.deny, ["delete_*"]);
    assert_eq!(
        stages.as_deref(),
        Some(&["plan".to_owned(), "build".to_owned()][..])
    );
    assert_eq!(agents.as_deref(), Some(&["coder".to_owned()][..]));
    assert_eq!(
        side_effects,
        &BTreeMap::from([
            (
                "create_issue".to_owned(),
                vec!["mutate".to_owned(), "network".to_owned()]
            ),
            ("get_*".to_owned(), vec!["read".to_owned()]),
        ])
    );

    let bytes = &server(&set, "bytes").options;
    assert_eq!((bytes.max_result_bytes, bytes.max_retries), (102_400, 10));
    let decimal = &server(&set, "decimal").options;
    assert_eq!(decimal.max_result_bytes, 500_000);
    assert_eq!(
        (decimal.backoff.initial, decimal.backoff.max),
        (Duration::from_secs(1), Duration::from_secs(1))
    );
    assert_eq!(decimal.backoff.give_up, defaults::BACKOFF_GIVE_UP);
    assert_eq!(server(&set, "plain").options, ServerOptions::default());
}

#[test]
fn options_are_the_defaults_when_absent() {
    let fx = Fixture::new();
    // Claude files never carry mcpmux options: such keys are tolerated and ignored.
    fx.project_file(
        ".mcp.json",
        r#"{"mcpServers": {"claude": {"command": "c", "max_retries": 99, "tools": 1}}, "policy": {"deny": ["x"]}}"#,
    );
    fx.project_file(
        ".claude/settings.json",
        r#"{"permissions": {"deny": ["mcp__claude__*"]}, "mcpServers": {}}"#,
    );
    fx.project_file("mcpmux.toml", "[servers.toml]\ncommand = \"t\"\n");
    let set = fx.load();
    assert!(set.problems.is_empty(), "{:#?}", messages(&set));
    for name in ["claude", "toml"] {
        let options = &server(&set, name).options;
        assert_eq!(options, &ServerOptions::default(), "{name}");
        assert_eq!(options.max_retries, defaults::MAX_RETRIES);
        assert_eq!(options.max_result_bytes, defaults::MAX_RESULT_BYTES);
        assert_eq!(options.shutdown_grace, defaults::SHUTDOWN_GRACE);
        assert_eq!(options.backoff.initial, defaults::BACKOFF_INITIAL);
        assert_eq!(options.backoff.max, defaults::BACKOFF_MAX);
        assert_eq!(options.backoff.give_up, defaults::BACKOFF_GIVE_UP);
        assert_eq!(options.breaker.threshold, defaults::BREAKER_THRESHOLD);
        assert_eq!(options.breaker.cool_down, defaults::BREAKER_COOL_DOWN);
        assert!(options.tools.allow.is_empty() && options.tools.deny.is_empty());
        assert_eq!((&options.stages, &options.agents), (&None, &None));
        assert!(options.side_effects.is_empty());
    }
    assert_eq!(set.policy, PolicyRules::default());
}

#[test]
fn overlay_sets_options_on_a_server_from_mcp_json() {
    let fx = Fixture::new();
    fx.project_file(
        ".mcp.json",
        r#"{"mcpServers": {"github": {"type": "http", "url": "https://api.example/mcp"}}}"#,
    );
    fx.project_file(
        "mcpmux.toml",
        r#"
[servers.github]
max_retries = 3
max_result_bytes = "1MB"
shutdown_grace = "5s"
backoff = { give_up = "10m", initial = "500ms" }
breaker = { cool_down = "1m" }
tools = { deny = ["delete_*"] }
stages = ["review"]
agents = ["reviewer", "coder"]
side_effects = { merge_pr = ["mutate", "destructive", "network"] }
"#,
    );
    let set = fx.load();
    assert!(set.problems.is_empty(), "{:#?}", messages(&set));
    let github = server(&set, "github");
    assert_eq!(remote(github).1, "https://api.example/mcp");
    let options = &github.options;
    assert_eq!(options.max_retries, 3);
    assert_eq!(options.max_result_bytes, 1_000_000);
    assert_eq!(options.shutdown_grace, Duration::from_secs(5));
    assert_eq!(options.backoff.initial, Duration::from_millis(500));
    assert_eq!(options.backoff.max, defaults::BACKOFF_MAX);
    assert_eq!(options.backoff.give_up, Duration::from_secs(600));
    assert_eq!(options.breaker.threshold, defaults::BREAKER_THRESHOLD);
    assert_eq!(options.breaker.cool_down, Duration::from_secs(60));
    assert!(options.tools.allow.is_empty());
    assert_eq!(options.tools.deny, ["delete_*"]);
    assert_eq!(options.stages, Some(vec!["review".to_owned()]));
    assert_eq!(
        options.agents,
        Some(vec!["reviewer".to_owned(), "coder".to_owned()])
    );
    assert_eq!(
        options.side_effects["merge_pr"],
        ["mutate", "destructive", "network"]
    );
}

#[test]
fn overlays_merge_tables_by_key_and_replace_values_and_lists() {
    let mut fx = Fixture::new();
    fx.project_file(
        "mcpmux.toml",
        r#"
[servers.fs]
command = "fs"
max_retries = 4
backoff = { max = "5m", give_up = "20m" }
tools = { allow = ["read_*"], deny = ["write_*"] }
stages = ["plan"]
side_effects = { read_file = ["read"], move_file = ["mutate"] }
"#,
    );
    let extra = fx.project_file(
        "extra.toml",
        r#"
[servers.fs]
backoff = { initial = "2m" }
tools = { deny = ["delete_*", "move_*"] }
stages = ["build", "test"]
side_effects = { move_file = ["destructive"], "list_*" = ["read"] }
"#,
    );
    fx.extra = vec![extra];
    let set = fx.load();
    assert!(set.problems.is_empty(), "{:#?}", messages(&set));
    let options = &server(&set, "fs").options;
    assert_eq!(options.max_retries, 4);
    // initial is checked against the max the earlier file set, not the default 30 s.
    assert_eq!(
        (
            options.backoff.initial,
            options.backoff.max,
            options.backoff.give_up
        ),
        (
            Duration::from_secs(120),
            Duration::from_secs(300),
            Duration::from_secs(1200)
        )
    );
    assert_eq!(options.tools.allow, ["read_*"]);
    assert_eq!(options.tools.deny, ["delete_*", "move_*"]);
    assert_eq!(
        options.stages,
        Some(vec!["build".to_owned(), "test".to_owned()])
    );
    assert_eq!(
        options.side_effects,
        BTreeMap::from([
            ("list_*".to_owned(), vec!["read".to_owned()]),
            ("move_file".to_owned(), vec!["destructive".to_owned()]),
            ("read_file".to_owned(), vec!["read".to_owned()]),
        ])
    );
}

#[test]
fn overlay_backoff_is_checked_against_the_server_it_adjusts() {
    let fx = Fixture::new();
    fx.project_file(
        ".mcp.json",
        r#"{"fs": {"command": "npx"}, "other": {"command": "o"}}"#,
    );
    let path = fx.project_file(
        "mcpmux.toml",
        "[servers.fs]\nbackoff = { initial = \"1m\" }\nmax_retries = 5\n",
    );
    let set = fx.load();
    // Refused whole, and it hides the definition as any bad latest entry does.
    assert_eq!(names(&set), ["other"]);
    assert_eq!(
        only_message(&set),
        format!(
            "{}: server \"fs\": field \"backoff\": initial (60s) is longer than max (30s, not set here): the first reconnect delay cannot exceed the longest; lower initial or raise max",
            path.display()
        )
    );
    assert_eq!(set.problems[0].server.as_deref(), Some("fs"));
    assert_eq!(set.problems[0].file, path);
}

#[test]
fn bad_option_values_say_what_to_write() {
    let fx = Fixture::new();
    let cases: &[(&str, &str, &str)] = &[
        (
            "size_text",
            r#"max_result_bytes = "100 kilobytes""#,
            r#"field "max_result_bytes": "100 kilobytes" is not a size: write a whole number of bytes like 102400, or a number with a unit, like "100KiB", "2MiB" or "500KB""#,
        ),
        (
            "size_unitless",
            r#"max_result_bytes = "4096""#,
            r#"field "max_result_bytes": "4096" has no unit: write a whole number of bytes"#,
        ),
        (
            "size_zero",
            "max_result_bytes = 0",
            r#"field "max_result_bytes": 0 leaves no room for any result: give at least 1 byte"#,
        ),
        (
            "size_huge",
            r#"max_result_bytes = "2GiB""#,
            r#"field "max_result_bytes": "2GiB" is larger than 1GiB: give at most "1GiB" (1073741824 bytes)"#,
        ),
        (
            "retries_negative",
            "max_retries = -1",
            r#"field "max_retries": -1 is negative: give 0 for no retries, or up to 10"#,
        ),
        (
            "retries_many",
            "max_retries = 11",
            r#"field "max_retries": 11 retries is too many: give at most 10 (each retry repeats a call that just failed; the default is 2)"#,
        ),
        (
            "retries_quoted",
            r#"max_retries = "2""#,
            r#"field "max_retries": expected an integer, found a string: write it without quotes, as 2"#,
        ),
        (
            "retries_float",
            "max_retries = 2.5",
            r#"field "max_retries": expected a whole number, found a float (2.5)"#,
        ),
        (
            "grace_zero",
            r#"shutdown_grace = "0s""#,
            r#"field "shutdown_grace": "0s" is not a usable duration"#,
        ),
        (
            "initial_above_max",
            r#"backoff = { initial = "1m", max = "30s" }"#,
            r#"field "backoff": initial (60s) is longer than max (30s): the first reconnect delay cannot exceed the longest; lower initial or raise max"#,
        ),
        (
            "initial_above_default_max",
            r#"backoff = { initial = "45s" }"#,
            r#"field "backoff": initial (45s) is longer than max (30s, not set here)"#,
        ),
        (
            "max_below_default_initial",
            r#"backoff = { max = "500ms" }"#,
            r#"field "backoff": initial (1s, not set here) is longer than max (500ms)"#,
        ),
        (
            "give_up_hours",
            r#"backoff = { give_up = "1h" }"#,
            r#"field "backoff.give_up": "1h" is not a duration"#,
        ),
        (
            "backoff_string",
            r#"backoff = "1s""#,
            r#"field "backoff": expected a table, found a string: write backoff = { initial = "1s" }"#,
        ),
        (
            "threshold_zero",
            "breaker = { threshold = 0 }",
            r#"field "breaker.threshold": 0 would open the breaker before any call failed: give 1 or more (the default is 3)"#,
        ),
        (
            "threshold_negative",
            "breaker = { threshold = -2 }",
            r#"field "breaker.threshold": -2 is negative"#,
        ),
        (
            "cool_down_bad",
            "breaker = { cool_down = true }",
            r#"field "breaker.cool_down": expected a duration, found a boolean"#,
        ),
        (
            "breaker_number",
            "breaker = 3",
            r#"field "breaker": expected a table, found an integer: write breaker = { threshold = 3 }"#,
        ),
        (
            "class_unknown",
            r#"side_effects = { create_issue = ["mutate", "write"] }"#,
            r#"field "side_effects.create_issue[1]": "write" is not a side-effect class: use one of read, mutate, destructive, network"#,
        ),
        (
            "class_string",
            r#"side_effects = { "get_*" = "read" }"#,
            r#"field "side_effects."get_*"": expected an array of classes, found a string: write it in brackets, as ["read"]"#,
        ),
        (
            "class_none",
            r#"side_effects = { read = "none" }"#,
            r#"field "side_effects.read": expected an array of classes, found a string: write an array of classes from read, mutate, destructive, network"#,
        ),
        (
            "class_empty",
            "side_effects = { ping = [] }",
            r#"field "side_effects.ping": is empty: give at least one of read, mutate, destructive, network ("read" for a tool without side effects)"#,
        ),
        (
            "side_effects_array",
            r#"side_effects = ["read"]"#,
            r#"field "side_effects": expected a table of tool → classes, found an array"#,
        ),
        (
            "allow_string",
            r#"tools = { allow = "read_*" }"#,
            r#"field "tools.allow": expected an array of strings, found a string: write it in brackets, as ["read_*"]"#,
        ),
        (
            "allow_table",
            "tools = { allow = { x = 1 } }",
            r#"field "tools.allow": expected an array of strings, found a table: write it like ["read_*", "mcp__github__get_*"]"#,
        ),
        (
            "deny_blank",
            r#"tools = { deny = ["ok", " "] }"#,
            r#"field "tools.deny[1]": is empty: remove it, or give a tool name or a glob like "read_*""#,
        ),
        (
            "deny_effect",
            r#"tools = { deny = ["effect:destructive"] }"#,
            r#"field "tools.deny[0]": "effect:destructive" is not a tool name or glob: tool filters take tool names or globs; to act on a side effect, put "effect:destructive" in [policy] allow, ask or deny"#,
        ),
        (
            "tools_array",
            r#"tools = ["read_*"]"#,
            r#"field "tools": expected a table, found an array: write tools = { allow = ["read_*"] }"#,
        ),
        (
            "stages_empty",
            "stages = []",
            r#"field "stages": is empty, which would leave the server in no stage: remove stages to use it in every stage, or set enabled = false"#,
        ),
        (
            "stages_string",
            r#"stages = "plan""#,
            r#"field "stages": expected an array of strings, found a string: write it in brackets, as ["plan"]"#,
        ),
        (
            "agents_number",
            r#"agents = ["coder", 7]"#,
            r#"field "agents[1]": expected a string, found an integer"#,
        ),
    ];
    let text: String = cases
        .iter()
        .map(|(name, line, _)| format!("[servers.{name}]\ncommand = \"x\"\n{line}\n\n"))
        .collect();
    let path = fx.project_file("mcpmux.toml", &text);
    let set = fx.load();
    assert!(set.servers.is_empty(), "{:?}", names(&set));
    assert_eq!(set.problems.len(), cases.len(), "{:#?}", messages(&set));
    for (name, _, expected) in cases {
        let problem = set
            .problems
            .iter()
            .find(|p| p.server.as_deref() == Some(*name))
            .unwrap_or_else(|| panic!("no problem for {name}"));
        let message = problem.error.to_string();
        let prefix = format!("{}: server \"{name}\": {expected}", path.display());
        assert!(
            message.starts_with(&prefix),
            "{message}\n  expected: {prefix}"
        );
        assert!(
            matches!(problem.error, ConfigError::InvalidValue { .. }),
            "{name}"
        );
    }
}

#[test]
fn unknown_option_sub_keys_suggest_the_nearest() {
    let fx = Fixture::new();
    let path = fx.project_file(
        "mcpmux.toml",
        r#"
[servers.a]
command = "x"
backoff = { intial = "1s" }

[servers.b]
command = "x"
breaker = { treshold = 3 }

[servers.c]
command = "x"
breaker = { coolDown = "1s" }

[servers.d]
command = "x"
tools = { alow = ["x"] }

[servers.e]
command = "x"
tools = { block = ["x"] }

[servers.f]
command = "x"
max_retry = 2

[servers.g]
command = "x"
backoff = { maximum = "1m" }
"#,
    );
    let set = fx.load();
    assert!(set.servers.is_empty());
    let at = |server: &str, rest: &str| format!("{}: server \"{server}\": {rest}", path.display());
    assert_eq!(
        messages(&set),
        [
            at(
                "a",
                r#"unknown key "backoff.intial": did you mean "backoff.initial"?"#
            ),
            at(
                "b",
                r#"unknown key "breaker.treshold": did you mean "breaker.threshold"?"#
            ),
            at(
                "c",
                r#"unknown key "breaker.coolDown": did you mean "breaker.cool_down"?"#
            ),
            at(
                "d",
                r#"unknown key "tools.alow": did you mean "tools.allow"?"#
            ),
            at(
                "e",
                r#"unknown key "tools.block": valid keys are allow, deny"#
            ),
            at(
                "f",
                r#"unknown key "max_retry": did you mean "max_retries"?"#
            ),
            at(
                "g",
                r#"unknown key "backoff.maximum": valid keys are initial, max, give_up"#
            ),
        ]
    );
    assert!(matches!(
        &set.problems[0].error,
        ConfigError::UnknownKey { suggestion: Some(s), .. } if s == "backoff.initial"
    ));
}

#[test]
fn policy_from_mcpmux_toml() {
    let fx = Fixture::new();
    fx.project_file(
        "mcpmux.toml",
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
    assert_eq!(
        set.policy.allow,
        ["user_allow", "project_allow", "extra_allow", "effect:read"]
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
