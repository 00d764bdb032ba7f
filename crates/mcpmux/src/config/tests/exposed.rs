//! Files others can write: the person's own config files, `--config` files and the approvals
//! file are refused, naming the `chmod` that fixes it, when another user could edit them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt;

use super::*;
use crate::config::trust::approve;

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[test]
fn a_config_file_anyone_can_write_is_refused_with_the_chmod_that_fixes_it() {
    let mut fx = Fixture::new();
    let file = fx.home_file("extra.toml", "[servers.s]\ncommand = \"run\"\n");
    fx.extra.push(file.clone());
    assert_eq!(names(&fx.load()), ["s"]);

    chmod(&file, 0o666);
    let set = fx.load();
    assert!(names(&set).is_empty(), "{:?}", names(&set));
    let text = only_message(&set);
    assert!(
        text.contains("refused") && text.contains("mode 0666"),
        "{text}"
    );
    assert!(
        text.contains(&format!("chmod go-w '{}'", file.display())),
        "{text}"
    );
}

#[test]
fn a_user_file_in_a_folder_its_group_can_write_is_refused() {
    let fx = Fixture::new();
    let file = fx.home_file(
        ".claude.json",
        r#"{"mcpServers": {"s": {"command": "run"}}}"#,
    );
    assert_eq!(names(&fx.load()), ["s"]);
    chmod(fx.home.path(), 0o770);
    let set = fx.load();
    chmod(fx.home.path(), 0o700);
    assert!(names(&set).is_empty());
    let text = only_message(&set);
    assert!(
        text.contains(&file.display().to_string())
            && text.contains("its group may write the folder"),
        "{text}"
    );
}

#[test]
fn approvals_others_can_write_approve_nothing() {
    let fx = Fixture::new();
    fx.project_file(".mcp.json", r#"{"mcpServers": {"p": {"command": "run"}}}"#);
    let options = LoadOptions::new(Some(fx.home.path().to_path_buf()), fx.project.path());
    let set = load_with_env(&options, &|_| None);
    let store = set.trust_file.clone().unwrap();
    approve(&store, fx.project.path(), &set.project).unwrap();
    assert_eq!(names(&load_with_env(&options, &|_| None)), ["p"]);

    chmod(&store, 0o666);
    let set = load_with_env(&options, &|_| None);
    assert!(names(&set).is_empty(), "{:?}", names(&set));
    let refused = approve(&store, fx.project.path(), &set.project).unwrap_err();
    assert!(refused.to_string().contains("chmod go-w"), "{refused}");
}
