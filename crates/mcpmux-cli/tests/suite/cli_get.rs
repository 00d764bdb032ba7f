//! `mcpmux get NAME`: one server's entry as resolved, with its state, and never a secret.

use serde_json::json;

use crate::support::*;

#[test]
fn get_shows_the_resolved_entry_with_names_of_env_and_headers_but_no_values() {
    let sandbox = Sandbox::with_user_servers(json!({
        "t": {
            "command": testserver(),
            "args": ["--prompts"],
            "env": {"API_TOKEN": "s3cr3t-env"},
        },
        "remote": {
            "type": "http",
            "url": "https://user:s3cr3t-pw@127.0.0.1:9/mcp?key=s3cr3t-query",
            "headers": {"Authorization": "Bearer s3cr3t-header"},
        },
    }));
    let run = sandbox.run(&["get", "t"]);
    assert_code(&run, 0);
    assert!(
        run.stdout
            .starts_with("name: t\ntransport: stdio\ncommand: "),
        "{run:#?}"
    );
    for line in [
        "name: t",
        "transport: stdio",
        "args: --prompts",
        "env: API_TOKEN",
        "lazy: default",
        "required: false",
        "trust: not needed (your own config)",
        "dialect: claude",
    ] {
        assert!(
            run.stdout.lines().any(|l| l == line),
            "`{line}` missing: {run:#?}"
        );
    }
    assert!(run.stdout.contains("command: "), "{run:#?}");
    assert!(run.stdout.contains("source: "), "{run:#?}");
    assert!(run.stdout.contains("call_timeout: "), "{run:#?}");

    let run = sandbox.run(&["get", "remote", "--json"]);
    assert_code(&run, 0);
    let entry = json(&run);
    assert_eq!(entry["url"], "https://127.0.0.1:9/mcp", "{run:#?}");
    assert_eq!(entry["headers"], json!(["Authorization"]), "{run:#?}");
    assert_eq!(entry["transport"], "http", "{run:#?}");
    assert!(entry["state"].is_string(), "{run:#?}");

    for name in ["t", "remote"] {
        for json_flag in [&[][..], &["--json"][..]] {
            let run = sandbox.run(&[&["get", name][..], json_flag].concat());
            assert!(
                !run.stdout.contains("s3cr3t") && !run.stderr.contains("s3cr3t"),
                "a secret was shown: {run:#?}"
            );
        }
    }
}

#[test]
fn get_with_json_has_the_state_and_tool_count_of_a_started_server() {
    let sandbox = Sandbox::with_user_servers(json!({
        "t": { "command": testserver(), "args": [] },
    }));
    let run = sandbox.run(&["get", "t", "--json"]);
    assert_code(&run, 0);
    let entry = json(&run);
    assert_eq!(entry["state"], "connected", "{run:#?}");
    assert!(entry["tools"].as_u64().unwrap() >= 10, "{run:#?}");
    assert_eq!(entry["enabled"], true, "{run:#?}");
    assert_eq!(entry["lazy"], "default", "{run:#?}");
}

#[test]
fn get_of_a_project_server_says_whether_it_is_approved() {
    let sandbox = Sandbox::new();
    sandbox.write_file(
        &sandbox.project.join(".mcp.json"),
        &json!({"mcpServers": {"p": {"command": testserver()}}}).to_string(),
    );
    let run = sandbox.run(&["get", "p"]);
    assert_code(&run, 0);
    assert!(run.stdout.contains("trust: not approved"), "{run:#?}");
    assert!(run.stdout.contains("state: untrusted"), "{run:#?}");

    let run = sandbox.run(&["trust"]);
    assert_code(&run, 0);
    let run = sandbox.run(&["get", "p"]);
    assert_code(&run, 0);
    assert!(
        run.stdout.contains("trust: approved for this project"),
        "{run:#?}"
    );
    assert!(run.stdout.contains("state: connected"), "{run:#?}");
}

#[test]
fn get_of_an_unknown_server_says_which_command_lists_them() {
    let sandbox = Sandbox::with_user_servers(json!({
        "t": { "command": testserver(), "args": [] },
    }));
    let run = sandbox.run(&["get", "nope"]);
    assert_code(&run, 2);
    assert!(
        run.stderr.contains("`mcpmux servers` lists the servers"),
        "{run:#?}"
    );
}

/// reqwest words a failed request "error sending request for url (URL)", the query whole: the
/// connection error `mcpmux servers` shows must not carry a key put in the URL (the `target`
/// column is the configured URL as written).
#[test]
fn a_remote_servers_connection_error_does_not_quote_its_urls_query() {
    let sandbox = Sandbox::with_user_servers(json!({
        "remote": { "type": "http", "url": "http://127.0.0.1:9/mcp?key=s3cr3t-query" },
    }));
    let run = sandbox.run(&["servers", "--json"]);
    let servers = json(&run);
    let error = servers[0]["error"].as_str().unwrap_or_default();
    assert!(!error.is_empty(), "the server should have failed: {run:#?}");
    assert!(!error.contains("s3cr3t"), "{run:#?}");
    assert!(!run.stderr.contains("s3cr3t"), "{run:#?}");
}

#[test]
fn get_lists_a_sandboxed_servers_grants_expanded_with_network_and_limits() {
    let sandbox = Sandbox::new();
    std::fs::create_dir_all(sandbox.home.join("data")).unwrap();
    std::fs::create_dir_all(sandbox.project.join("out")).unwrap();
    sandbox.write_file(
        &sandbox.home.join(".config/mcpmux/config.toml"),
        &format!(
            "[servers.boxed]\ncommand = {:?}\nsandbox = {{ profile = \"readonly\", read = [\"${{HOME}}/data\"], write = [\"${{PROJECT}}/out\"], network = [443, \"api.example.com:8443\"], memory = \"512MiB\", processes = 64 }}\n",
            testserver()
        ),
    );
    let home = sandbox.home.canonicalize().unwrap();
    let project = sandbox.project.canonicalize().unwrap();
    let run = sandbox.run(&["get", "boxed"]);
    assert_code(&run, 0);
    let line = |key: &str| {
        run.stdout
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{key}: ")))
            .unwrap_or_else(|| panic!("no {key}: {run:#?}"))
            .to_owned()
    };
    assert_eq!(
        line("sandbox"),
        "readonly +read 1 +write 1 net=tcp ports 443,8443 (hosts not enforced) +limits"
    );
    assert!(line("sandbox_read").contains("/usr"), "{run:#?}");
    assert_eq!(line("sandbox_limits"), "memory 512 MiB, processes 64");

    let run = sandbox.run(&["get", "boxed", "--json"]);
    assert_code(&run, 0);
    let entry = json(&run);
    let list = |key: &str| -> Vec<String> {
        entry[key]
            .as_array()
            .unwrap_or_else(|| panic!("no {key}: {run:#?}"))
            .iter()
            .map(|p| p.as_str().unwrap().to_owned())
            .collect()
    };
    let read = list("sandbox_read");
    let write = list("sandbox_write");
    let under = |paths: &[String], path: &std::path::Path| {
        paths
            .iter()
            .any(|p| std::path::Path::new(p).canonicalize().ok().as_deref() == Some(path))
    };
    assert!(under(&read, &home.join("data")), "{read:?}");
    assert!(
        under(&read, &project),
        "readonly reads the project: {read:?}"
    );
    assert!(!under(&write, &project), "{write:?}");
    assert!(under(&write, &project.join("out")), "{write:?}");
    assert!(write.contains(&"${TMP}".to_owned()), "{write:?}");
    assert!(
        !read
            .iter()
            .chain(&write)
            .any(|p| std::path::Path::new(p) == home),
        "the home itself is not granted: {read:?}"
    );
    // The test server's own directory: the program is readable wherever it is installed.
    let program = std::path::Path::new(&testserver()).canonicalize().unwrap();
    assert!(under(&read, program.parent().unwrap()), "{read:?}");
    let network = entry["sandbox_network"].as_str().unwrap();
    assert!(
        network.starts_with("tcp ports 443,8443")
            && network.contains("api.example.com:8443")
            && network.contains("only their ports are enforced"),
        "{network}"
    );
    assert_eq!(
        entry["sandbox_limits"],
        json!(["memory 512 MiB", "processes 64"])
    );
    assert_eq!(entry["sandbox_required"], false);
}

#[test]
fn get_of_an_unsandboxed_server_lists_no_grants() {
    let sandbox = Sandbox::with_user_servers(json!({
        "t": { "command": testserver(), "args": [] },
    }));
    let entry = json(&sandbox.run(&["get", "t", "--json"]));
    assert!(entry.get("sandbox").is_none(), "{entry}");
    assert!(entry.get("sandbox_read").is_none(), "{entry}");
}
