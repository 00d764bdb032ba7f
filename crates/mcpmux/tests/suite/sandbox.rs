//! Sandboxed stdio servers (Linux): real servers (a Python `mcp` SDK server whose tools try
//! what a sandbox forbids, and the Node filesystem server) under each profile, against real
//! files, sockets and limits.
#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::path::{Path, PathBuf};

use mcpmux::config::{Limits, Network, Profile, Sandbox};
use mcpmux::{Hub, ServerSpec, TransportSpec};
use serde_json::json;

/// The server the tests start, written into each test's project.
const SERVER: &str = include_str!("support/sandbox_server.py");

/// A temporary home with a planted SSH key, and a project beside it.
struct World {
    home: tempfile::TempDir,
    project: tempfile::TempDir,
}

impl World {
    fn new() -> Self {
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir(home.path().join(".ssh")).unwrap();
        std::fs::write(home.path().join(".ssh/id_ed25519"), "PRIVATE KEY\n").unwrap();
        let project = tempfile::tempdir().unwrap();
        std::fs::write(project.path().join("notes.txt"), "project notes\n").unwrap();
        std::fs::write(project.path().join("server.py"), SERVER).unwrap();
        Self { home, project }
    }

    fn key(&self) -> PathBuf {
        self.home.path().join(".ssh/id_ed25519")
    }

    fn project(&self) -> &Path {
        self.project.path()
    }

    /// The Python server, in the project, with `HOME` the temporary home, under `sandbox`
    /// (which is also given the test venv and the Python it points at: they live outside the
    /// home the server sees).
    fn python(&self, name: &str, sandbox: Option<Sandbox>) -> ServerSpec {
        let python = support::venv_bin("python");
        let venv = support::workspace()
            .join("test-deps/.venv")
            .canonicalize()
            .unwrap();
        let interpreter = python.canonicalize().unwrap();
        let python_home = interpreter.parent().unwrap().parent().unwrap();
        let mut spec = ServerSpec::stdio(
            name,
            python.to_string_lossy(),
            [self
                .project()
                .join("server.py")
                .to_string_lossy()
                .to_string()],
        )
        .with_env("HOME", self.home.path().to_string_lossy())
        // The SDK's imports take seconds; several servers at once on a loaded machine more.
        .with_startup_timeout(std::time::Duration::from_secs(120));
        if let TransportSpec::Stdio { cwd, .. } = &mut spec.transport {
            *cwd = Some(self.project().to_path_buf());
        }
        spec.options.sandbox = sandbox.map(|sandbox| {
            sandbox.with_read([
                venv.to_string_lossy().to_string(),
                python_home.to_string_lossy().to_string(),
            ])
        });
        spec
    }
}

async fn call(hub: &Hub, tool: &str, args: serde_json::Value) -> String {
    let result = hub.call(tool, args).await.unwrap();
    result.to_text()
}

#[tokio::test]
async fn under_project_a_planted_ssh_key_is_denied_and_the_project_is_read_and_written() {
    let world = World::new();
    let hub = support::started(vec![
        world.python("open", None),
        world.python("boxed", Some(Sandbox::profile(Profile::Project))),
    ])
    .await;
    let key = json!({"path": world.key()});
    let shown = |name: &str| {
        hub.servers()
            .into_iter()
            .find(|s| s.name == name)
            .unwrap()
            .sandbox
    };
    assert_eq!(shown("boxed").as_deref(), Some("project +read 2"));
    assert_eq!(
        shown("open"),
        None,
        "no sandbox shown for an unsandboxed server"
    );

    let open = call(&hub, "mcp__open__read", key.clone()).await;
    assert_eq!(open, "ok: PRIVATE KEY\n", "unsandboxed, the key is read");
    let boxed = call(&hub, "mcp__boxed__read", key).await;
    assert!(boxed.contains("errno 13"), "EACCES expected: {boxed}");

    let notes = call(
        &hub,
        "mcp__boxed__read",
        json!({"path": world.project().join("notes.txt")}),
    )
    .await;
    assert_eq!(notes, "ok: project notes\n");
    let wrote = call(
        &hub,
        "mcp__boxed__write",
        json!({"path": world.project().join("out.txt"), "text": "hi"}),
    )
    .await;
    assert_eq!(wrote, "ok");
    assert_eq!(
        std::fs::read_to_string(world.project().join("out.txt")).unwrap(),
        "hi"
    );
    hub.shutdown().await;
}

#[tokio::test]
async fn a_server_that_dies_of_a_denial_mid_session_fails_the_call_naming_the_grant() {
    let world = World::new();
    let hub = support::started(vec![
        world.python("dies", Some(Sandbox::profile(Profile::Project))),
    ])
    .await;
    let error = hub
        .call("mcp__dies__read_or_die", json!({"path": world.key()}))
        .await
        .unwrap_err()
        .to_string();
    assert!(error.contains("connection lost"), "{error}");
    assert!(
        error.contains(&format!(
            "fs denied: {} — add it (or its folder) to this server's sandbox.read",
            world.key().display()
        )),
        "{error}"
    );
    hub.shutdown().await;
}

#[tokio::test]
async fn writes_outside_the_write_list_fail_and_inside_succeed() {
    let world = World::new();
    let elsewhere = tempfile::tempdir().unwrap();
    let granted = tempfile::tempdir().unwrap();
    let sandbox = Sandbox::profile(Profile::Readonly)
        .with_write([granted.path().to_string_lossy().to_string()]);
    let hub = support::started(vec![world.python("ro", Some(sandbox))]).await;

    for denied in [
        elsewhere.path().join("x.txt"),
        world.project().join("x.txt"),
    ] {
        let answer = call(
            &hub,
            "mcp__ro__write",
            json!({"path": denied, "text": "no"}),
        )
        .await;
        assert!(
            answer.contains("errno 13"),
            "{}: {answer}",
            denied.display()
        );
        assert!(!denied.exists());
    }
    let inside = granted.path().join("x.txt");
    let answer = call(
        &hub,
        "mcp__ro__write",
        json!({"path": inside, "text": "yes"}),
    )
    .await;
    assert_eq!(answer, "ok");
    // The private temp dir is writable, and read-only does not stop reading the project.
    let tmp = call(&hub, "mcp__ro__tmpdir", json!({})).await;
    assert!(tmp.contains("mcpmux-ro-"), "{tmp}");
    let answer = call(
        &hub,
        "mcp__ro__write",
        json!({"path": Path::new(&tmp).join("scratch"), "text": "t"}),
    )
    .await;
    assert_eq!(answer, "ok");
    let notes = call(
        &hub,
        "mcp__ro__read",
        json!({"path": world.project().join("notes.txt")}),
    )
    .await;
    assert_eq!(notes, "ok: project notes\n");
    hub.shutdown().await;
    // Removed with the server.
    assert!(!Path::new(&tmp).exists(), "{tmp} outlived its server");
}

#[tokio::test]
async fn offline_reaches_nothing_loopback_only_itself_and_a_port_list_only_its_ports() {
    let world = World::new();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let other = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let other_port = other.local_addr().unwrap().port();
    let hub = support::started(vec![
        world.python("open", None),
        world.python("offline", Some(Sandbox::profile(Profile::Offline))),
        world.python(
            "loop",
            Some(Sandbox::profile(Profile::Project).with_network(Network::Loopback)),
        ),
        world.python(
            "ports",
            Some(Sandbox::profile(Profile::Project).with_network(Network::Ports(vec![port]))),
        ),
        world.python(
            "host",
            Some(from_config(&format!(
                "{{ network = [\"127.0.0.1:{port}\"] }}"
            ))),
        ),
    ])
    .await;
    let to = |port: u16| json!({"port": port});

    assert_eq!(
        call(&hub, "mcp__open__connect", to(port)).await,
        "connected"
    );
    let offline = call(&hub, "mcp__offline__connect", to(port)).await;
    assert!(offline.starts_with("error"), "offline connected: {offline}");
    let own = call(&hub, "mcp__offline__own_loopback", json!({})).await;
    assert!(own.starts_with("error"), "offline has no loopback: {own}");

    // Its own loopback, not the host's.
    assert_eq!(
        call(&hub, "mcp__loop__own_loopback", json!({})).await,
        "connected"
    );
    let host = call(&hub, "mcp__loop__connect", to(port)).await;
    assert!(host.starts_with("error"), "reached the host: {host}");

    assert_eq!(
        call(&hub, "mcp__ports__connect", to(port)).await,
        "connected"
    );
    let denied = call(&hub, "mcp__ports__connect", to(other_port)).await;
    assert!(denied.contains("errno 13"), "{denied}");

    // A `host:port` entry: its port is enforced, and the server says its host is not.
    assert_eq!(
        call(&hub, "mcp__host__connect", to(port)).await,
        "connected"
    );
    let denied = call(&hub, "mcp__host__connect", to(other_port)).await;
    assert!(denied.contains("errno 13"), "{denied}");
    let shown = hub
        .servers()
        .into_iter()
        .find(|s| s.name == "host")
        .unwrap();
    assert!(
        shown
            .sandbox
            .as_deref()
            .is_some_and(|s| s.ends_with("(hosts not enforced)")),
        "{:?}",
        shown.sandbox
    );
    hub.shutdown().await;
}

/// The sandbox an entry's `sandbox = <toml>` in a `mcpmux.toml` gives, read by the loader.
fn from_config(toml: &str) -> Sandbox {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("mcpmux.toml"),
        format!("[servers.x]\ncommand = \"x\"\nsandbox = {toml}\n"),
    )
    .unwrap();
    let options = mcpmux::config::LoadOptions::new(None, home.path()).with_approver(|_| true);
    let set = mcpmux::config::load_with_env(&options, &|_| None);
    assert!(set.problems.is_empty(), "{:?}", set.problems);
    set.servers[0].options.sandbox.clone().unwrap()
}

#[tokio::test]
async fn a_memory_hog_is_stopped_by_its_limit_and_keeps_serving() {
    let world = World::new();
    let mut limits = Limits::default();
    limits.memory = Some(256 << 20);
    let hub = support::started(vec![world.python(
        "hog",
        Some(Sandbox::profile(Profile::Project).with_limits(limits)),
    )])
    .await;
    let hog = call(&hub, "mcp__hog__allocate", json!({"mib": 1024})).await;
    assert_eq!(hog, "error: out of memory");
    let small = call(&hub, "mcp__hog__allocate", json!({"mib": 16})).await;
    assert_eq!(small, "allocated 16 MiB");
    hub.shutdown().await;
}

#[tokio::test]
async fn server_filesystem_lists_and_reads_its_granted_project_under_project() {
    let world = World::new();
    let root = world.project().canonicalize().unwrap();
    let modules = support::workspace()
        .join("test-deps/node_modules")
        .canonicalize()
        .unwrap();
    let mut spec = ServerSpec::stdio(
        "fs",
        support::npm_bin("mcp-server-filesystem").to_string_lossy(),
        [root.to_string_lossy().to_string()],
    )
    .with_env("HOME", world.home.path().to_string_lossy());
    if let TransportSpec::Stdio { cwd, .. } = &mut spec.transport {
        *cwd = Some(root.clone());
    }
    spec.options.sandbox =
        Some(Sandbox::profile(Profile::Project).with_read([modules.to_string_lossy().to_string()]));
    let hub = support::started_with(
        vec![spec],
        support::hub_options().with_host(mcpmux::host::Host::default().with_project_dir(&root)),
    )
    .await;
    let listing = call(&hub, "mcp__fs__list_directory", json!({"path": root})).await;
    assert!(listing.contains("notes.txt"), "{listing}");
    let read = call(
        &hub,
        "mcp__fs__read_text_file",
        json!({"path": root.join("notes.txt")}),
    )
    .await;
    assert_eq!(read.trim(), "project notes");
    hub.shutdown().await;
}

#[tokio::test]
async fn a_server_denied_its_program_fails_naming_the_path_to_grant() {
    let world = World::new();
    let testserver = support::testserver().canonicalize().unwrap();
    // Behind `sh -c` the sandbox cannot see which program will run, so it is not granted.
    let mut spec = ServerSpec::stdio(
        "hidden",
        "sh",
        ["-c".to_owned(), format!("exec '{}'", testserver.display())],
    );
    if let TransportSpec::Stdio { cwd, .. } = &mut spec.transport {
        *cwd = Some(world.project().to_path_buf());
    }
    spec.options.sandbox = Some(Sandbox::profile(Profile::Project));
    let hub = Hub::start(vec![spec], support::hub_options()).unwrap();
    let _ = hub.wait_ready().await;
    let error = support::failed(support::state(&hub, "hidden"));
    assert!(
        error.contains(&format!("fs denied: {}", testserver.display())),
        "{error}"
    );
    assert!(error.contains("sandbox.read"), "{error}");
    hub.shutdown().await;
}

#[tokio::test]
async fn an_npx_started_server_answers_under_project() {
    // The project is the test dependencies' folder: npx finds the package installed there.
    let project = support::workspace()
        .join("test-deps")
        .canonicalize()
        .unwrap();
    let mut spec = ServerSpec::stdio(
        "npx",
        "npx",
        ["--no-install", "mcp-server-everything", "stdio"],
    );
    if let TransportSpec::Stdio { cwd, .. } = &mut spec.transport {
        *cwd = Some(project.clone());
    }
    spec.options.sandbox = Some(
        // node_modules is a link out of the project (to the main checkout's install).
        Sandbox::profile(Profile::Project).with_read([project
            .join("node_modules")
            .canonicalize()
            .unwrap()
            .to_string_lossy()
            .to_string()]),
    );
    let hub = support::started(vec![spec]).await;
    let echo = call(&hub, "mcp__npx__echo", json!({"message": "boxed"})).await;
    assert_eq!(echo, "Echo: boxed");
    hub.shutdown().await;
}

#[tokio::test]
async fn a_cpu_hog_is_killed_by_its_limit_and_the_hub_and_other_servers_carry_on() {
    let world = World::new();
    let mut limits = Limits::default();
    limits.cpu_time = Some(std::time::Duration::from_secs(3));
    let hub = support::started(vec![
        world.python(
            "hog",
            Some(Sandbox::profile(Profile::Project).with_limits(limits)),
        ),
        world.python("calm", Some(Sandbox::profile(Profile::Project))),
    ])
    .await;
    let spun = hub.call("mcp__hog__spin", json!({})).await;
    // At the limit the kernel kills it (soft and hard limits are one).
    let error = spun.unwrap_err().to_string();
    assert!(error.contains("killed by signal"), "{error}");
    let calm = call(
        &hub,
        "mcp__calm__read",
        json!({"path": world.project().join("notes.txt")}),
    )
    .await;
    assert_eq!(calm, "ok: project notes\n");
    hub.shutdown().await;
}

#[tokio::test]
async fn a_fork_bomb_is_stopped_by_its_process_limit_even_for_root_and_others_carry_on() {
    // Bounded: at most 200 children, each waiting on a pipe the tool closes before it
    // answers, and that closes when the server dies: nothing outlives the test.
    let world = World::new();
    let mut limits = Limits::default();
    limits.processes = Some(32);
    let hub = support::started(vec![
        world.python(
            "bomb",
            Some(Sandbox::profile(Profile::Project).with_limits(limits)),
        ),
        world.python("calm", Some(Sandbox::profile(Profile::Project))),
    ])
    .await;
    let bomb = call(&hub, "mcp__bomb__fork_bomb", json!({"tries": 200})).await;
    let started: usize = bomb
        .strip_prefix("started ")
        .and_then(|rest| rest.split(',').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{bomb}"));
    assert!(started < 32, "{bomb}");
    assert!(
        bomb.contains("errno 11"),
        "EAGAIN at the limit expected: {bomb}"
    );
    // Another server is unharmed and can fork as many as it needs.
    let calm = call(&hub, "mcp__calm__fork_bomb", json!({"tries": 40})).await;
    assert_eq!(calm, "started 40");
    // The bombed server keeps serving, its limit freed as its children exit.
    let again = call(&hub, "mcp__bomb__fork_bomb", json!({"tries": 4})).await;
    assert_eq!(again, "started 4");
    hub.shutdown().await;
}
