//! One server entry: its type and fields, what a wrong one says, overlays, and shapes a
//! hostile or careless file may have.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;

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
fn a_missing_config_files_not_found_is_the_cause_under_the_librarys_error() {
    let mut fx = Fixture::new();
    fx.extra = vec![fx.project.path().join("nope.toml")];
    let set = fx.load();
    let Some(problem) = set.problems.into_iter().next() else {
        panic!("no problem for a missing file");
    };
    let error = crate::Error::from(problem.error);
    let io = std::iter::successors(std::error::Error::source(&error), |cause| cause.source())
        .find_map(|cause| cause.downcast_ref::<std::io::Error>())
        .unwrap_or_else(|| panic!("no io::Error under {error}"));
    assert_eq!(io.kind(), std::io::ErrorKind::NotFound);
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
fn always_load_in_claude_json_keeps_a_server_eager() {
    let fx = Fixture::new();
    fx.project_file(
        ".mcp.json",
        r#"{"a": {"command": "a", "alwaysLoad": true}, "b": {"command": "b", "alwaysLoad": false}, "c": {"command": "c", "alwaysLoad": "true"}}"#,
    );
    let set = fx.load();
    assert_eq!(server(&set, "a").options.lazy, Some(false));
    assert_eq!(server(&set, "b").options.lazy, None, "the hub's default");
    assert!(
        messages(&set)
            .iter()
            .any(|m| m.contains("server \"c\": field \"alwaysLoad\": expected true or false")),
        "{:#?}",
        messages(&set)
    );
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
