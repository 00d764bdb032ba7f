//! Servers plugins bring: Claude Code's enabled plugins and `plugins/*/mcp.json`, marked as
//! plugin servers, read safely, and yielding to the person's own.

use super::*;
use crate::config::deduplicate;

fn source(spec: &ServerSpec) -> &str {
    match &spec.origin {
        Origin::Plugin { source } => source,
        other => panic!("not a plugin server: {other:?}"),
    }
}

impl Fixture {
    /// Installs Claude Code plugin `id` at `~/.claude/plugins/cache/<id>`, enabled or not.
    fn claude_plugin(&self, id: &str, enabled: bool) -> PathBuf {
        let root = self.home.path().join(".claude/plugins/cache").join(id);
        std::fs::create_dir_all(&root).unwrap();
        let registry = self
            .home
            .path()
            .join(".claude/plugins/installed_plugins.json");
        let mut value: serde_json::Value = std::fs::read_to_string(&registry)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or(serde_json::json!({"version": 2, "plugins": {}}));
        value["plugins"][id] = serde_json::json!([{"scope": "user", "installPath": root}]);
        Self::write(registry, &value.to_string());
        let settings = self.home.path().join(".claude/settings.json");
        let mut value: serde_json::Value = std::fs::read_to_string(&settings)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or(serde_json::json!({"enabledPlugins": {}}));
        value["enabledPlugins"][id] = serde_json::Value::Bool(enabled);
        Self::write(settings, &value.to_string());
        root
    }
}

#[test]
fn an_enabled_claude_plugin_s_servers_load_as_plugin_servers_with_their_root() {
    let f = Fixture::new();
    let root = f.claude_plugin("db@market", true);
    Fixture::write(
        root.join(".mcp.json"),
        r#"{"db": {"command": "${CLAUDE_PLUGIN_ROOT}/bin/db", "args": ["--config", "${CLAUDE_PLUGIN_ROOT}/c.json"]}}"#,
    );
    let manifest_root = f.claude_plugin("api@market", true);
    Fixture::write(
        manifest_root.join(".claude-plugin/plugin.json"),
        r#"{"name": "api", "mcpServers": {"api": {"url": "https://api.test/mcp"}}}"#,
    );
    let off = f.claude_plugin("off@market", false);
    Fixture::write(off.join(".mcp.json"), r#"{"off": {"command": "x"}}"#);

    let set = f.load();
    assert!(set.problems.is_empty(), "{:#?}", messages(&set));
    assert_eq!(names(&set), ["api", "db"]);
    let db = server(&set, "db");
    assert_eq!(command(db), format!("{}/bin/db", root.display()));
    assert_eq!(stdio_parts(db).0[1], format!("{}/c.json", root.display()));
    assert_eq!(source(db), "plugin db@market (Claude Code)");
    assert_eq!(
        source(server(&set, "api")),
        "plugin api@market (Claude Code)"
    );
}

#[test]
fn a_manifest_may_point_at_a_server_file_inside_the_plugin_but_not_outside() {
    let f = Fixture::new();
    let root = f.claude_plugin("p@m", true);
    Fixture::write(
        root.join(".claude-plugin/plugin.json"),
        r#"{"mcpServers": ["./servers.json", "../../../../.claude.json"]}"#,
    );
    Fixture::write(
        root.join("servers.json"),
        r#"{"mcpServers": {"inner": {"command": "i"}}}"#,
    );
    let set = f.load();
    assert_eq!(names(&set), ["inner"]);
    let text = only_message(&set);
    assert!(text.contains("outside the plugin's folder"), "{text}");
}

// A FIFO among the plugins: Unix only.
#[cfg(unix)]
#[test]
fn a_bad_plugin_is_one_problem_and_the_others_still_load() {
    let f = Fixture::new();
    let plugins = f.home.path().join(".config/mcpmux/plugins");
    Fixture::write(
        plugins.join("a-good/mcp.json"),
        r#"{"mcpServers": {"good": {"command": "g"}}}"#,
    );
    Fixture::write(plugins.join("b-broken/mcp.json"), r#"{"mcpServers": {"#);
    Fixture::write(
        plugins.join("c-huge/mcp.json"),
        &format!("{{\"x\": \"{}\"}}", "y".repeat(2 * 1024 * 1024)),
    );
    std::fs::create_dir_all(plugins.join("d-fifo")).unwrap();
    let fifo = plugins.join("d-fifo/mcp.json");
    let c_path = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
    Fixture::write(
        plugins.join("e-last/mcp.json"),
        r#"{"last": {"command": "l"}}"#,
    );

    let set = f.load();
    assert_eq!(names(&set), ["good", "last"]);
    assert_eq!(
        source(server(&set, "good")),
        format!("plugin a-good ({})", plugins.join("a-good").display())
    );
    let all = messages(&set);
    assert_eq!(all.len(), 3, "{all:#?}");
    assert!(
        all[0].contains("b-broken") && all[0].contains("not valid JSON"),
        "{all:#?}"
    );
    assert!(
        all[1].contains("c-huge") && all[1].contains("larger than"),
        "{all:#?}"
    );
    assert!(
        all[2].contains("d-fifo") && all[2].contains("not a regular file"),
        "{all:#?}"
    );
}

#[test]
fn hand_written_servers_win_by_name_and_by_signature() {
    let mut f = Fixture::new();
    f.set_env(
        "XDG_CONFIG_HOME",
        &f.home.path().join("xdg").display().to_string(),
    );
    let plugins = f.home.path().join("xdg/mcpmux/plugins");
    Fixture::write(
        plugins.join("one/mcp.json"),
        r#"{"mine": {"command": "plugin-version"}, "gh-plugin": {"command": "npx", "args": ["server-github"]}, "first": {"url": "https://x.test/mcp"}}"#,
    );
    Fixture::write(
        plugins.join("two/mcp.json"),
        r#"{"second": {"url": "https://x.test/mcp"}}"#,
    );
    f.home_file(
        ".claude.json",
        r#"{"mcpServers": {"mine": {"command": "my-version"}, "github": {"command": "npx", "args": ["server-github"], "env": {"T": "x"}}}}"#,
    );
    let set = f.load();
    assert_eq!(command(server(&set, "mine")), "my-version");
    let (unique, dropped) = deduplicate(set.servers);
    let unique: Vec<&str> = unique.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(unique, ["first", "github", "mine"]);
    let dropped: Vec<(&str, &str)> = dropped
        .iter()
        .map(|(s, kept)| (s.name.as_str(), kept.as_str()))
        .collect();
    assert_eq!(dropped, [("gh-plugin", "github"), ("second", "first")]);
}

#[test]
fn a_broken_plugin_registry_is_one_problem_and_a_broken_settings_file_is_reported_once() {
    let f = Fixture::new();
    f.home_file(
        ".claude/settings.json",
        r#"{"enabledPlugins": {"a@m": true}"#,
    );
    f.home_file(".claude/plugins/installed_plugins.json", "{");
    let text = only_message(&f.load());
    assert!(
        text.contains("settings.json") && text.contains("not valid JSON"),
        "{text}"
    );

    f.home_file(
        ".claude/settings.json",
        r#"{"enabledPlugins": {"a@m": true}}"#,
    );
    let text = only_message(&f.load());
    assert!(
        text.contains("installed_plugins.json")
            && text.contains("none of Claude Code's plugins' servers are used"),
        "{text}"
    );
}
