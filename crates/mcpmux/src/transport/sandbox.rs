//! Runs a local server (or a `headersHelper`) inside its sandbox: the grants of its
//! [`Sandbox`] turned into a Landlock ruleset, rlimits, `no_new_privs` and, for `none` and
//! `loopback` networks, a user and network namespace of its own, applied in the child between
//! fork and exec.
//!
//! Everything that allocates or opens paths (the ruleset and its path fds, the uid map text)
//! is built in the parent before the fork; the child only makes raw system calls, as a
//! `pre_exec` closure must. Linux only: elsewhere a sandbox is reported unsupported and the
//! server either runs without it (with a warning) or, with `required = true`, does not start.
//! ARCHITECTURE.md sketches the macOS and Windows counterparts this seam is shaped for.

use std::collections::BTreeMap;
use std::path::Path;

use tokio::process::Command;

use crate::config::Sandbox;
use crate::error::Error;

#[cfg(target_os = "linux")]
mod pids;

/// A sandbox ready to install on a command, and what must live as long as the server.
pub(crate) struct Prepared {
    /// The private temp dir (`${TMP}`, `TMPDIR`), removed when the server is gone.
    tmp: tempfile::TempDir,
    #[cfg(target_os = "linux")]
    child: linux::ChildSetup,
    /// Its own pids cgroup, when its process limit is kept that way.
    #[cfg(target_os = "linux")]
    pids: Option<pids::PidsGroup>,
}

/// What stays alive until the server exits: its private temp dir, and its pids cgroup (whose
/// drop kills whatever the server left running in it).
pub(crate) struct Keep {
    _tmp: tempfile::TempDir,
    #[cfg(target_os = "linux")]
    _pids: Option<pids::PidsGroup>,
}

/// Prepares `sandbox` for a server started in `cwd` (the project directory when absent) with
/// `env` on top of ours. `Ok(None)`: run it unsandboxed (no sandbox, the `none` profile, or a
/// kernel without support where the sandbox is not `required`, which is logged as a warning).
pub(crate) fn prepare(
    server: &str,
    command: &str,
    sandbox: Option<&Sandbox>,
    env: &BTreeMap<String, String>,
    cwd: Option<&Path>,
) -> Result<Option<Prepared>, Error> {
    let Some(sandbox) = sandbox.filter(|sandbox| !sandbox.is_off()) else {
        return Ok(None);
    };
    let refused = |message: String| Error::Connect {
        server: server.to_owned(),
        message,
        stderr_tail: Vec::new(),
        source: None,
    };
    let unsupported = |why: String| {
        if sandbox.required {
            Err(refused(format!(
                "its sandbox is required but {why}; run it elsewhere or set sandbox.required = false"
            )))
        } else {
            tracing::warn!(server = %server, "running WITHOUT its sandbox: {why}");
            Ok(None)
        }
    };
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (command, env, cwd);
        unsupported("sandbox not supported on this platform".to_owned())
    }
    #[cfg(target_os = "linux")]
    {
        if let Some(why) = linux::unsupported() {
            return unsupported(why);
        }
        let tmp = tempfile::Builder::new()
            .prefix(&format!("mcpmux-{}-", safe_name(server)))
            .tempdir()
            .map_err(|e| {
                refused(format!("cannot create its private temp dir: {e}")).caused_by(e)
            })?;
        let project = match cwd {
            Some(dir) => dir.to_path_buf(),
            None => std::env::current_dir().map_err(|e| {
                refused(format!("cannot tell the project directory: {e}")).caused_by(e)
            })?,
        };
        let Some(grants) = sandbox.server_grants(command, env, &project, tmp.path()) else {
            return Ok(None);
        };
        if !sandbox.hosts.is_empty() && matches!(grants.network, crate::config::Network::Ports(_)) {
            tracing::warn!(
                server = %server,
                "its sandbox.network names hosts ({}): the kernel enforces only their ports, so it may connect to any host on those ports",
                sandbox.hosts.join(", ")
            );
        }
        let (child, pids) = match linux::ChildSetup::new(server, &grants) {
            Ok(child) => child,
            Err(linux::Unavailable(why)) => return unsupported(why),
        };
        tracing::debug!(server = %server, sandbox = %sandbox.summary(), network = %grants.network, "server sandboxed");
        Ok(Some(Prepared { tmp, child, pids }))
    }
}

impl Prepared {
    /// Installs the sandbox on `cmd`, to be applied in the child; what must outlive the server
    /// comes back.
    pub(crate) fn install(self, cmd: &mut Command) -> Keep {
        cmd.env("TMPDIR", self.tmp.path());
        #[cfg(target_os = "linux")]
        {
            let setup = self.child;
            // SAFETY: `ChildSetup::apply` makes only async-signal-safe system calls on memory
            // prepared before the fork; it allocates nothing.
            unsafe {
                cmd.pre_exec(move || setup.apply());
            }
        }
        Keep {
            _tmp: self.tmp,
            #[cfg(target_os = "linux")]
            _pids: self.pids,
        }
    }
}

/// What to grant, when a sandboxed server's stderr says something was denied: the path it
/// names (`fs denied: /home/u/.npmrc — add it to sandbox.read …`), or where to look.
pub(crate) fn denial(sandbox: Option<&Sandbox>, stderr: &[String]) -> Option<String> {
    let sandbox = sandbox.filter(|sandbox| !sandbox.is_off())?;
    const SAID: &[&str] = &[
        "permission denied",
        "eacces",
        "operation not permitted",
        "eperm",
    ];
    let line = stderr.iter().rev().find(|line| {
        let lower = line.to_ascii_lowercase();
        SAID.iter().any(|said| lower.contains(said))
    })?;
    let profile = sandbox.profile.name();
    let path = line
        .split_whitespace()
        .map(|word| word.trim_matches(|c: char| "'\"`:,;()[]".contains(c)))
        .find(|word| word.starts_with('/') && word.len() > 1);
    Some(match path {
        Some(path) => format!(
            "fs denied: {path} — add it (or its folder) to this server's sandbox.read, or sandbox.write if it must change it; it runs in the `{profile}` sandbox"
        ),
        None => format!(
            "it runs in the `{profile}` sandbox and was denied something (see its stderr): grant the path in sandbox.read or sandbox.write, or the port in sandbox.network"
        ),
    })
}

/// The server's name as a temp dir prefix: letters, digits, `-`, `_`; the rest becomes `_`.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn safe_name(server: &str) -> String {
    server
        .chars()
        .take(32)
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(target_os = "linux")]
mod linux {
    //! The Linux sandbox: Landlock, rlimits, `no_new_privs`, namespaces.

    use std::os::fd::{AsRawFd, OwnedFd};
    use std::sync::OnceLock;

    use landlock::{
        ABI, Access, AccessFs, AccessNet, NetPort, Ruleset, RulesetAttr, RulesetCreatedAttr, Scope,
        path_beneath_rules,
    };

    use super::pids::{Enter, PidsGroup};
    use crate::config::{Grants, Network};

    /// The newest Landlock ABI we ask for; older kernels get what they support (best effort),
    /// and `unsupported` refuses kernels with none.
    const WANTED: ABI = ABI::V6;

    /// Why a sandbox cannot be applied here.
    pub(super) struct Unavailable(pub String);

    /// The kernel's Landlock ABI version, 0 when it has none.
    fn landlock_abi() -> i64 {
        static ABI_VERSION: OnceLock<i64> = OnceLock::new();
        *ABI_VERSION.get_or_init(|| {
            // SAFETY: landlock_create_ruleset with a null attribute and the VERSION flag only
            // returns a number.
            let version = unsafe {
                libc::syscall(
                    libc::SYS_landlock_create_ruleset,
                    std::ptr::null::<u8>(),
                    0usize,
                    1u32,
                )
            };
            version.max(0)
        })
    }

    /// Whether unprivileged user namespaces (hence a private network namespace) are allowed.
    fn user_namespaces() -> bool {
        let read = |path: &str| std::fs::read_to_string(path).ok();
        let max = read("/proc/sys/user/max_user_namespaces")
            .and_then(|text| text.trim().parse::<u64>().ok())
            .unwrap_or(0);
        // Debian's switch, and Ubuntu's AppArmor restriction.
        let debian_off =
            read("/proc/sys/kernel/unprivileged_userns_clone").as_deref() == Some("0\n");
        let apparmor_on = read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns").as_deref()
            == Some("1\n");
        max > 0 && !debian_off && !apparmor_on
    }

    /// Why this kernel cannot sandbox at all, if it cannot.
    pub(super) fn unsupported() -> Option<String> {
        (landlock_abi() < 1).then(|| {
            "this kernel has no Landlock (Linux 5.13 or later with Landlock enabled is needed)"
                .to_owned()
        })
    }

    /// What the child does between fork and exec, built in the parent.
    pub(super) struct ChildSetup {
        cgroup: Option<Enter>,
        ruleset: Option<OwnedFd>,
        namespace: Option<Namespace>,
        limits: Vec<(libc::__rlimit_resource_t, libc::rlim_t)>,
    }

    /// A user namespace of its own, its uid and gid mapped to ours, and with `net` a network
    /// namespace too.
    struct Namespace {
        uid_map: Vec<u8>,
        gid_map: Vec<u8>,
        net: bool,
        loopback: bool,
    }

    impl Namespace {
        fn new(net: bool, loopback: bool) -> Self {
            // SAFETY: getuid and getgid cannot fail.
            let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
            Self {
                uid_map: format!("{uid} {uid} 1\n").into_bytes(),
                gid_map: format!("{gid} {gid} 1\n").into_bytes(),
                net,
                loopback,
            }
        }
    }

    /// How a server's `processes` limit is kept.
    #[derive(Debug, PartialEq, Eq)]
    pub(super) enum ProcessCap {
        /// A pids cgroup of its own: for root too, counting only the server's tasks.
        Cgroup,
        /// `RLIMIT_NPROC` in a user namespace of its own, where the kernel counts the
        /// processes of that namespace only (not root: root is exempt).
        UserNamespace,
        /// `RLIMIT_NPROC` counted over all of the user's processes (warned).
        PerUser,
        /// Not kept: root without a pids cgroup (warned, or refused when required).
        None,
    }

    /// The way to keep a process limit for a user `root` or not, when a pids cgroup could not
    /// be made and user namespaces are (or not) available.
    pub(super) fn fallback_cap(root: bool, namespaces: bool) -> ProcessCap {
        match (root, namespaces) {
            (true, _) => ProcessCap::None,
            (false, true) => ProcessCap::UserNamespace,
            (false, false) => ProcessCap::PerUser,
        }
    }

    impl ChildSetup {
        /// The child's setup for `server` under `grants`, and its pids cgroup if it has one.
        pub(super) fn new(
            server: &str,
            grants: &Grants,
        ) -> Result<(Self, Option<PidsGroup>), Unavailable> {
            let abi = landlock_abi();
            let (mut namespace, tcp_rules) = match &grants.network {
                Network::Any => (None, None),
                Network::Ports(ports) => (None, Some(ports.clone())),
                Network::None | Network::Loopback if user_namespaces() => (
                    Some(Namespace::new(true, grants.network == Network::Loopback)),
                    None,
                ),
                Network::None | Network::Loopback if abi >= 4 => {
                    tracing::warn!(
                        server = %server,
                        "no user namespaces here: network `{}` is enforced for TCP only (no connections at all); UDP is not blocked",
                        grants.network
                    );
                    (None, Some(Vec::new()))
                }
                other => {
                    return Err(Unavailable(format!(
                        "network `{other}` needs user namespaces or Landlock 4 (Linux 6.7), and this kernel has neither"
                    )));
                }
            };
            if tcp_rules.is_some() && abi < 4 {
                return Err(Unavailable(
                    "a list of TCP ports needs Landlock 4 (Linux 6.7)".to_owned(),
                ));
            }
            let ruleset = build(grants, tcp_rules.as_deref()).map_err(|e| {
                Unavailable(format!("the Landlock ruleset could not be built: {e}"))
            })?;
            let mut limits = Vec::new();
            let mut cgroup = None;
            let mut pids = None;
            let l = &grants.limits;
            if let Some(n) = l.processes {
                let cap = match PidsGroup::create(server, n) {
                    Ok((group, enter)) => {
                        pids = Some(group);
                        cgroup = Some(enter);
                        ProcessCap::Cgroup
                    }
                    Err(why) => {
                        // SAFETY: geteuid cannot fail.
                        let root = unsafe { libc::geteuid() } == 0;
                        let cap = fallback_cap(root, user_namespaces());
                        tracing::debug!(server = %server, "no pids cgroup ({why}): processes kept by {cap:?}");
                        if cap == ProcessCap::None {
                            let why = format!(
                                "its `processes` limit cannot be kept: running as root, the kernel ignores RLIMIT_NPROC, and {why}"
                            );
                            if grants.required {
                                return Err(Unavailable(why));
                            }
                            tracing::warn!(server = %server, "{why}; it runs without a process limit");
                        }
                        cap
                    }
                };
                match cap {
                    ProcessCap::Cgroup | ProcessCap::None => {}
                    ProcessCap::UserNamespace => {
                        namespace.get_or_insert_with(|| Namespace::new(false, false));
                        limits.push((libc::RLIMIT_NPROC, n));
                    }
                    ProcessCap::PerUser => {
                        tracing::warn!(server = %server, "no pids cgroup and no user namespaces here: its `processes` limit counts all of this user's processes, not only its own");
                        limits.push((libc::RLIMIT_NPROC, n));
                    }
                }
            }
            if let Some(bytes) = l.memory {
                limits.push((libc::RLIMIT_DATA, bytes));
            }
            if let Some(time) = l.cpu_time {
                limits.push((libc::RLIMIT_CPU, time.as_secs()));
            }
            if let Some(n) = l.open_files {
                limits.push((libc::RLIMIT_NOFILE, n));
            }
            Ok((
                Self {
                    cgroup,
                    ruleset,
                    namespace,
                    limits,
                },
                pids,
            ))
        }

        /// In the child: its cgroup (first, while it still has our credentials), namespaces
        /// (before the limits: a user namespace records the limits its creator had),
        /// limits, `no_new_privs`, then Landlock (last, so the namespace's `/proc/self` maps
        /// and the cgroup can still be written). Async-signal-safe.
        pub(super) fn apply(&self) -> std::io::Result<()> {
            if let Some(cgroup) = &self.cgroup {
                cgroup.enter()?;
            }
            if let Some(namespace) = &self.namespace {
                namespace.enter()?;
            }
            for (resource, value) in &self.limits {
                let limit = libc::rlimit {
                    rlim_cur: *value,
                    rlim_max: *value,
                };
                // SAFETY: setrlimit reads the struct on our stack.
                check(unsafe { libc::setrlimit(*resource, &limit) })?;
            }
            // SAFETY: prctl with integer arguments.
            check(unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) })?;
            // Changing credentials (the namespace) clears the parent-death signal: set again.
            // SAFETY: as above.
            check(unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) })?;
            if let Some(ruleset) = &self.ruleset {
                // SAFETY: landlock_restrict_self on a ruleset fd we own; no memory is passed.
                let done = unsafe {
                    libc::syscall(libc::SYS_landlock_restrict_self, ruleset.as_raw_fd(), 0u32)
                };
                if done != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        }
    }

    impl Namespace {
        fn enter(&self) -> std::io::Result<()> {
            let flags = if self.net {
                libc::CLONE_NEWUSER | libc::CLONE_NEWNET
            } else {
                libc::CLONE_NEWUSER
            };
            // SAFETY: unshare with flags; the child is single-threaded, as it requires.
            check(unsafe { libc::unshare(flags) })?;
            write_file(c"/proc/self/setgroups", b"deny\n")?;
            write_file(c"/proc/self/uid_map", &self.uid_map)?;
            write_file(c"/proc/self/gid_map", &self.gid_map)?;
            if self.loopback {
                loopback_up()?;
            }
            Ok(())
        }
    }

    fn check(result: libc::c_int) -> std::io::Result<()> {
        if result < 0 {
            Err(std::io::Error::last_os_error())
        } else {
            Ok(())
        }
    }

    pub(super) fn write_file(path: &std::ffi::CStr, bytes: &[u8]) -> std::io::Result<()> {
        // SAFETY: open, write and close on a NUL-terminated path and a slice we own.
        unsafe {
            let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
            check(fd)?;
            let written = libc::write(fd, bytes.as_ptr().cast(), bytes.len());
            let error = std::io::Error::last_os_error();
            libc::close(fd);
            if written != bytes.len() as isize {
                return Err(error);
            }
        }
        Ok(())
    }

    /// `ip link set lo up` in the new network namespace (we hold its capabilities until exec).
    fn loopback_up() -> std::io::Result<()> {
        // SAFETY: a socket, an ioctl on a zeroed `ifreq` on our stack, a close.
        unsafe {
            let fd = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
            check(fd)?;
            let mut request: libc::ifreq = std::mem::zeroed();
            request.ifr_name[0] = b'l' as libc::c_char;
            request.ifr_name[1] = b'o' as libc::c_char;
            request.ifr_ifru.ifru_flags =
                (libc::IFF_UP | libc::IFF_LOOPBACK | libc::IFF_RUNNING) as libc::c_short;
            let result = libc::ioctl(fd, libc::SIOCSIFFLAGS, &request);
            let error = std::io::Error::last_os_error();
            libc::close(fd);
            if result < 0 {
                return Err(error);
            }
        }
        Ok(())
    }

    /// The Landlock ruleset of `grants`: files beneath `read` readable, beneath `write`
    /// writable, nothing else; TCP connections only to `tcp_ports` when given; no signals to
    /// or abstract sockets of processes outside the sandbox.
    fn build(
        grants: &Grants,
        tcp_ports: Option<&[u16]>,
    ) -> Result<Option<OwnedFd>, landlock::RulesetError> {
        let mut ruleset = Ruleset::default()
            .handle_access(AccessFs::from_all(WANTED))?
            .scope(Scope::from_all(WANTED))?;
        if tcp_ports.is_some() {
            ruleset = ruleset.handle_access(AccessNet::ConnectTcp)?;
        }
        let existing = |paths: &[std::path::PathBuf]| -> Vec<std::path::PathBuf> {
            paths.iter().filter(|path| path.exists()).cloned().collect()
        };
        let mut created = ruleset
            .create()?
            .add_rules(path_beneath_rules(
                existing(&grants.read),
                AccessFs::from_read(WANTED),
            ))?
            .add_rules(path_beneath_rules(
                existing(&grants.write),
                AccessFs::from_all(WANTED),
            ))?;
        for port in tcp_ports.unwrap_or_default() {
            created = created.add_rule(NetPort::new(*port, AccessNet::ConnectTcp))?;
        }
        Ok(created.into())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_denial_on_stderr_names_the_path_to_grant() {
        let boxed = Sandbox::profile(crate::config::Profile::Project);
        let lines = |text: &[&str]| text.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        let python =
            lines(&["PermissionError: [Errno 13] Permission denied: '/home/u/.aws/config'"]);
        let hint = denial(Some(&boxed), &python).unwrap();
        assert!(
            hint.starts_with("fs denied: /home/u/.aws/config — add it"),
            "{hint}"
        );
        let node = lines(&[
            "Error: EACCES: permission denied, open '/home/u/.npmrc'",
            "at x",
        ]);
        assert!(
            denial(Some(&boxed), &node)
                .unwrap()
                .contains("/home/u/.npmrc")
        );
        let vague = lines(&["socket: Operation not permitted"]);
        assert!(
            denial(Some(&boxed), &vague)
                .unwrap()
                .contains("see its stderr")
        );
        assert_eq!(denial(Some(&boxed), &lines(&["fine"])), None);
        assert_eq!(denial(None, &python), None, "no sandbox, no hint");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn without_a_pids_cgroup_root_gets_no_process_limit_and_others_a_per_server_one() {
        use linux::{ProcessCap, fallback_cap};
        assert_eq!(fallback_cap(true, true), ProcessCap::None);
        assert_eq!(fallback_cap(false, true), ProcessCap::UserNamespace);
        assert_eq!(fallback_cap(false, false), ProcessCap::PerUser);
    }

    #[test]
    fn temp_dir_prefixes_keep_only_safe_characters() {
        assert_eq!(safe_name("git/hub ../x"), "git_hub____x");
    }
}
