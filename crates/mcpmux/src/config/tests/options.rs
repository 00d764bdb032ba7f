//! Per-server options from `mcpmux.toml` and overlays: defaults, merging, and what a wrong
//! value says.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;

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
lazy = true

[servers.bytes]
command = "x"
max_result_bytes = 102400
max_retries = 10
lazy = false

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
        lazy,
        sandbox,
    } = options;
    assert_eq!(*lazy, Some(true));
    // A project file's server: the person did not write it.
    assert_eq!(
        sandbox.as_ref().map(|s| s.profile),
        Some(crate::config::Profile::Project)
    );
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
    assert_eq!(bytes.lazy, Some(false), "an eager server beside lazy ones");
    let decimal = &server(&set, "decimal").options;
    assert_eq!(decimal.max_result_bytes, 500_000);
    assert_eq!(
        (decimal.backoff.initial, decimal.backoff.max),
        (Duration::from_secs(1), Duration::from_secs(1))
    );
    assert_eq!(decimal.backoff.give_up, defaults::BACKOFF_GIVE_UP);
    // Project files' servers get the `project` sandbox; nothing else differs.
    assert_eq!(server(&set, "plain").options, project_defaults());
}

/// The options of a project file's server that sets none.
fn project_defaults() -> ServerOptions {
    ServerOptions {
        sandbox: Some(crate::config::Sandbox::profile(
            crate::config::Profile::Project,
        )),
        ..ServerOptions::default()
    }
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
        assert_eq!(options, &project_defaults(), "{name}");
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
fn sandboxes_come_from_the_entry_else_the_users_defaults_by_who_wrote_the_server() {
    use crate::config::{Network, Profile};
    let fx = Fixture::new();
    fx.home_file(
        ".config/mcpmux/config.toml",
        r#"
[sandbox]
servers = "readonly"

[servers.mine]
command = "m"

[servers.explicit]
command = "e"
sandbox = { profile = "offline", read = ["${HOME}/data"], network = [443], processes = 64 }

[servers.free]
command = "f"
sandbox = "none"
"#,
    );
    fx.project_file(
        "mcpmux.toml",
        "[sandbox]\nothers = \"none\"\n\n[servers.theirs]\ncommand = \"t\"\n",
    );
    let set = fx.load();
    assert!(set.problems.is_empty(), "{:#?}", messages(&set));
    let profile = |name: &str| {
        server(&set, name)
            .options
            .sandbox
            .as_ref()
            .map(|sandbox| sandbox.profile)
    };
    assert_eq!(
        profile("mine"),
        Some(Profile::Readonly),
        "the user's default"
    );
    assert_eq!(profile("free"), Some(Profile::None));
    // The project file's own [sandbox] cannot lift the default for its servers.
    assert_eq!(profile("theirs"), Some(Profile::Project));
    let explicit = server(&set, "explicit").options.sandbox.clone().unwrap();
    assert_eq!(explicit.profile, Profile::Offline);
    assert_eq!(explicit.read, ["${HOME}/data"]);
    assert_eq!(explicit.network, Some(Network::Ports(vec![443])));
    assert_eq!(explicit.limits.processes, Some(64));
}

#[test]
fn a_bad_sandbox_names_the_field_and_what_to_write() {
    let fx = Fixture::new();
    fx.project_file(
        "mcpmux.toml",
        "[servers.x]\ncommand = \"x\"\nsandbox = \"projet\"\n",
    );
    let message = only_message(&fx.load());
    assert!(message.contains("sandbox"), "{message}");
    assert!(
        message.contains("project, offline, readonly, none"),
        "{message}"
    );
}
