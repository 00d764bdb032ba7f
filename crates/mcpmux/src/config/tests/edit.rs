//! `config::edit`: what `mcpmux add` / `remove` write, read back through `load`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use super::super::{LoadOptions, ServerSpec, TransportSpec, load_with_env};
use super::*;

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

/// The servers `load` finds with `file` given as `--config` (trusted, no home).
fn loaded(file: &Path) -> Vec<ServerSpec> {
    let dir = file.parent().unwrap();
    let options =
        LoadOptions::new(None, dir.join("no-project")).with_extra_files(vec![file.to_path_buf()]);
    let set = load_with_env(&options, &|_| None);
    assert!(set.problems.is_empty(), "{:?}", set.problems);
    set.servers
}

const COMMENTED: &str = "# my servers\n\n[policy]\nask = [\"effect:destructive\"] # keep asking\n\n[servers.zeta]\ncommand = \"z\" # the z one\n\n# the a server\n[servers.alpha]\nurl = \"https://a.test/mcp\"\n";

#[test]
fn a_stdio_server_added_to_toml_loads_back_as_written_and_comments_stay() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("config.toml");
    std::fs::write(&file, COMMENTED).unwrap();
    let server = NewServer::stdio(
        "fs",
        &strings(&["npx", "-y", "server-fs", "${NOTES:-/tmp/notes}"]),
        &strings(&["TOKEN=a=b", "MODE=ro"]),
        &[],
    )
    .unwrap();
    assert_eq!(add(&file, &server, false).unwrap(), Added::New);
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.starts_with(COMMENTED), "{text}");
    assert!(text.contains("[servers.fs]"), "{text}");

    let servers = loaded(&file);
    let fs = servers.iter().find(|s| s.name == "fs").unwrap();
    let TransportSpec::Stdio {
        command, args, env, ..
    } = &fs.transport
    else {
        panic!("{fs:?}")
    };
    assert_eq!(command, "npx");
    // Written as given: the reference is expanded at load (unset here, so its default).
    assert_eq!(*args, strings(&["-y", "server-fs", "/tmp/notes"]));
    assert!(
        std::fs::read_to_string(&file)
            .unwrap()
            .contains("${NOTES:-/tmp/notes}")
    );
    assert_eq!(env.get("TOKEN").map(String::as_str), Some("a=b"));
    assert_eq!(env.get("MODE").map(String::as_str), Some("ro"));
}

#[test]
fn a_name_already_there_is_refused_unless_forced() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("config.toml");
    std::fs::write(&file, COMMENTED).unwrap();
    let server = NewServer::remote(
        "zeta",
        "wss://z.test/mcp",
        None,
        &[],
        &strings(&["X-Key: v"]),
    )
    .unwrap();
    let error = add(&file, &server, false).unwrap_err();
    assert!(matches!(error, EditError::Exists { .. }), "{error}");
    assert!(error.to_string().contains("--force"), "{error}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), COMMENTED);

    assert_eq!(add(&file, &server, true).unwrap(), Added::Replaced);
    let zeta = loaded(&file)
        .into_iter()
        .find(|s| s.name == "zeta")
        .unwrap();
    assert!(
        matches!(zeta.transport, TransportSpec::Ws { ref url, .. } if url == "wss://z.test/mcp")
    );
    assert!(
        std::fs::read_to_string(&file)
            .unwrap()
            .contains("# the a server")
    );
}

#[test]
fn removing_from_toml_keeps_the_other_entries_and_their_comments() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("config.toml");
    std::fs::write(&file, COMMENTED).unwrap();
    assert!(remove(&file, "zeta").unwrap());
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(!text.contains("zeta"), "{text}");
    assert!(
        text.contains("# my servers")
            && text.contains("# keep asking")
            && text.contains("# the a server"),
        "{text}"
    );
    assert_eq!(
        loaded(&file)
            .iter()
            .map(|s| s.name.as_str())
            .collect::<Vec<_>>(),
        ["alpha"]
    );
    assert!(!remove(&file, "zeta").unwrap());
}

#[test]
fn json_keeps_other_keys_in_their_order_and_loads_back() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join(".mcp.json");
    let original = r#"{"zz": 1, "mcpServers": {"b": {"command": "b", "extra": true}, "a": {"url": "https://a.test"}}, "aa": [2]}"#;
    std::fs::write(&file, original).unwrap();
    let server = NewServer::remote(
        "m",
        "https://m.test/mcp",
        Some("sse"),
        &[],
        &strings(&["Authorization: Bearer ${secret:m}"]),
    )
    .unwrap();
    add(&file, &server, false).unwrap();
    let text = std::fs::read_to_string(&file).unwrap();
    let order: Vec<usize> = [
        "\"zz\"",
        "\"mcpServers\"",
        "\"b\"",
        "\"extra\"",
        "\"a\"",
        "\"m\"",
        "\"aa\"",
    ]
    .iter()
    .map(|k| text.find(k).unwrap())
    .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{text}");
    assert!(text.contains("Bearer ${secret:m}"), "{text}");
    assert!(remove(&file, "b").unwrap());
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        !text.contains("\"extra\"") && text.contains("\"zz\"") && text.contains("\"aa\""),
        "{text}"
    );
}

#[test]
fn a_new_json_file_gets_mcp_servers_and_claude_s_stdio_shape() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join(".mcp.json");
    let server = NewServer::stdio("t", &strings(&["srv", "--x"]), &[], &[]).unwrap();
    add(&file, &server, false).unwrap();
    let value: serde_json::Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    assert_eq!(
        value,
        serde_json::json!({"mcpServers": {"t": {"type": "stdio", "command": "srv", "args": ["--x"]}}})
    );
    assert_eq!(
        loaded(&file)[0].transport,
        ServerSpec::stdio("t", "srv", ["--x"]).transport
    );
}

#[test]
fn broken_files_are_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let server = NewServer::stdio("t", &strings(&["srv"]), &[], &[]).unwrap();
    for (name, text) in [
        ("c.toml", "[servers\n"),
        ("c.json", "{\"mcpServers\": "),
        ("d.json", "[1]"),
        ("e.toml", "servers = 3\n"),
    ] {
        let file = dir.path().join(name);
        std::fs::write(&file, text).unwrap();
        let error = add(&file, &server, false).unwrap_err();
        assert!(matches!(error, EditError::File { .. }), "{name}: {error}");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), text);
    }
}

#[test]
fn bad_names_urls_and_pairs_are_refused_with_what_to_write() {
    let cmd = strings(&["srv"]);
    for name in ["", "a b", "a.b", "é", &"x".repeat(65)] {
        assert!(
            matches!(
                NewServer::stdio(name, &cmd, &[], &[]),
                Err(EditError::InvalidName { .. })
            ),
            "{name:?}"
        );
    }
    let refused = |result: Result<NewServer, EditError>, flag: &str, fragment: &str| {
        let error = result.unwrap_err();
        let text = error.to_string();
        assert!(text.starts_with(flag) && text.contains(fragment), "{text}");
        // A value typed after = or : is never repeated back (it may be a secret).
        assert!(!text.contains("hunter2"), "{text}");
    };
    refused(
        NewServer::stdio("a", &cmd, &strings(&["NOEQUALS"]), &[]),
        "--env",
        "KEY=value",
    );
    refused(
        NewServer::stdio("a", &cmd, &strings(&["1X=hunter2"]), &[]),
        "--env",
        "variable name",
    );
    refused(
        NewServer::stdio("a", &cmd, &[], &strings(&["A: hunter2"])),
        "--header",
        "remote",
    );
    refused(NewServer::stdio("a", &[], &[], &[]), "the command", "--");
    refused(
        NewServer::remote("a", "not a url", None, &[], &[]),
        "--url",
        "https://example.com/mcp",
    );
    refused(
        NewServer::remote("a", "ftp://x.test", None, &[], &[]),
        "--url",
        "http",
    );
    refused(
        NewServer::remote("a", "https://x.test", Some("ws"), &[], &[]),
        "--url",
        "ws://",
    );
    refused(
        NewServer::remote("a", "https://x.test", Some("grpc"), &[], &[]),
        "--transport",
        "http, sse or ws",
    );
    refused(
        NewServer::remote(
            "a",
            "https://x.test",
            None,
            &[],
            &strings(&["Bad Name: hunter2"]),
        ),
        "--header",
        "header name",
    );
    refused(
        NewServer::remote(
            "a",
            "https://x.test",
            None,
            &[],
            &strings(&["A: hunter2\r\nX: y"]),
        ),
        "--header",
        "line break",
    );
    refused(
        NewServer::remote("a", "https://x.test", None, &[], &strings(&["hunter2"])),
        "--header",
        "colon",
    );
    refused(
        NewServer::remote("a", "https://x.test", None, &strings(&["A=hunter2"]), &[]),
        "--env",
        "--header",
    );
}

#[test]
fn remove_without_scope_names_every_file_looked_in() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("p");
    std::fs::create_dir_all(&project).unwrap();
    let options = LoadOptions::new(Some(dir.path().join("home")), &project);
    let env = |_: &str| None;
    let user = scope_file_with_env(EditScope::User, &options, &env).unwrap();
    assert!(user.ends_with(".config/mcpmux/config.toml"));
    let error = remove_in_scope(&options, None, "ghost").unwrap_err();
    let text = error.to_string();
    assert!(
        text.contains("config.toml") && text.contains(".mcp.json"),
        "{text}"
    );
}

/// Random entries through `add`, then `load`: 256 cases, each in one of the two dialects.
const ROUND_TRIP_CASES: u32 = 256;

mod round_trip {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::*;

    /// Text with anything but `$` (a reference, expanded at load by design) and NUL (refused).
    fn text() -> impl Strategy<Value = String> {
        "[^$\u{0}]{0,16}"
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(ROUND_TRIP_CASES))]

        #[test]
        fn any_written_stdio_entry_loads_back_as_the_same_server(
            name in "[A-Za-z0-9_-]{1,24}",
            command in "[a-z][a-z/._-]{0,12}",
            args in proptest::collection::vec(text(), 0..5),
            env in proptest::collection::vec(("[A-Za-z_][A-Za-z0-9_]{0,8}", text()), 0..4),
            toml in any::<bool>(),
        ) {
            let dir = tempfile::tempdir().unwrap();
            let file = dir.path().join(if toml { "config.toml" } else { ".mcp.json" });
            std::fs::write(&file, if toml { "# kept\n" } else { "{\"x\": 1}" }).unwrap();
            let line: Vec<String> = std::iter::once(command.clone()).chain(args.iter().cloned()).collect();
            let pairs: Vec<String> = env.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let server = NewServer::stdio(&name, &line, &pairs, &[]).unwrap();
            add(&file, &server, false).unwrap();
            let servers = loaded(&file);
            prop_assert_eq!(servers.len(), 1);
            let expected_env: BTreeMap<String, String> = env.into_iter().collect();
            let expected = TransportSpec::Stdio { command, args, env: expected_env, cwd: None };
            prop_assert_eq!(&servers[0].name, &name);
            prop_assert_eq!(&servers[0].transport, &expected);
            prop_assert!(remove(&file, &name).unwrap());
            let text = std::fs::read_to_string(&file).unwrap();
            prop_assert!(if toml { text.starts_with("# kept\n") } else { text.contains("\"x\": 1") }, "{}", text);
        }
    }
}
