//! The config loader through the public face only, as the CLI and an embedding harness use it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mcpmux::config::{self, ConfigError, LoadOptions, TransportSpec};

#[test]
fn project_files_load_through_the_public_api() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    std::fs::write(
        project.path().join(".mcp.json"),
        r#"{"mcpServers": {"fs": {"command": "npx", "args": ["-y", "server-fs", "${ROOT:-/tmp}"]},
                           "gh": {"type": "http", "url": "https://api.example/mcp",
                                  "headers": {"Authorization": "Bearer ${GH_TOKEN}"}}}}"#,
    )
    .unwrap();
    std::fs::write(
        project.path().join("mcpmux.toml"),
        "[servers.fs]\nrequired = true\nstartup_timeout = \"10s\"\n",
    )
    .unwrap();
    let options =
        LoadOptions::new(Some(home.path().to_path_buf()), project.path()).with_approver(|_| true);

    let set = config::load_with_env(&options, &|_| None);

    assert_eq!(set.files.len(), 2);
    assert_eq!(set.servers.len(), 1);
    let fs = &set.servers[0];
    assert!(fs.required);
    assert_eq!(fs.startup_timeout, std::time::Duration::from_secs(10));
    let TransportSpec::Stdio { args, .. } = &fs.transport else {
        panic!("fs is not stdio: {fs:?}");
    };
    assert_eq!(args, &["-y", "server-fs", "/tmp"]);

    assert_eq!(set.problems.len(), 1);
    let problem = &set.problems[0];
    assert_eq!(problem.server.as_deref(), Some("gh"));
    assert!(matches!(problem.error, ConfigError::UnsetVariable { .. }));
    let error = mcpmux::Error::from(ConfigError::NothingToAdjust {
        file: problem.file.clone(),
        server: "x".into(),
    });
    assert!(
        error
            .to_string()
            .contains(".mcp.json: server \"x\": nothing to adjust")
    );
}
