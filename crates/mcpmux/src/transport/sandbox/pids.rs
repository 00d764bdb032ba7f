//! A process limit that holds for root too: a `pids` cgroup of the server's own (v1's `pids`
//! hierarchy or a cgroup v2 subtree with the `pids` controller), made beside ours with
//! `pids.max` set, entered by the child before exec, emptied and removed once the server is
//! gone. `RLIMIT_NPROC` cannot do this: the kernel ignores it for root and counts it per user.
//!
//! The cgroup is made under the one we run in, so it only works where that one is ours to
//! write (root, or a delegated subtree); elsewhere `create` says why and the caller falls back.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The prefix of the cgroups we make: `mcpmux-<our pid>-<n>-<server>`.
const PREFIX: &str = "mcpmux-";

/// How often a cgroup whose killed members are not yet reaped is tried again for removal, and
/// how long apart: the kernel frees it once init has reaped them, within milliseconds.
const REMOVE_TRIES: u32 = 50;
const REMOVE_EVERY: std::time::Duration = std::time::Duration::from_millis(20);

/// A server's own `pids` cgroup, removed (with anything left in it killed) on drop.
pub(crate) struct PidsGroup {
    dir: PathBuf,
}

/// What the child writes to enter its cgroup: the `cgroup.procs` path.
pub(crate) struct Enter {
    procs: CString,
}

impl PidsGroup {
    /// A cgroup allowing `max` tasks (processes and threads) for `server`, or why none could
    /// be made here.
    pub(crate) fn create(server: &str, max: u64) -> Result<(Self, Enter), String> {
        let base = base().ok_or_else(|| "no pids cgroup is mounted here".to_owned())?;
        sweep(&base);
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let dir = base.join(format!(
            "{PREFIX}{}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed),
            super::safe_name(server)
        ));
        std::fs::create_dir(&dir).map_err(|e| {
            format!(
                "cannot make a pids cgroup in {} ({e}): it is not delegated to this user",
                base.display()
            )
        })?;
        let group = Self { dir };
        if !group.dir.join("pids.max").exists() {
            return Err(format!(
                "the cgroup {} has no pids controller enabled for its children",
                base.display()
            ));
        }
        std::fs::write(group.dir.join("pids.max"), max.to_string())
            .map_err(|e| format!("cannot set pids.max: {e}"))?;
        let procs = CString::new(group.dir.join("cgroup.procs").as_os_str().as_bytes())
            .map_err(|_| "the cgroup path has a NUL byte".to_owned())?;
        Ok((group, Enter { procs }))
    }

    /// The cgroup's directory.
    #[cfg(test)]
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Enter {
    /// In the child, before exec: moves the calling process into the cgroup. Async-signal-safe.
    pub(crate) fn enter(&self) -> std::io::Result<()> {
        super::linux::write_file(&self.procs, b"0\n")
    }
}

impl Drop for PidsGroup {
    fn drop(&mut self) {
        kill_all(&self.dir);
        if std::fs::remove_dir(&self.dir).is_ok() {
            return;
        }
        // Killed members not yet reaped keep it busy for a moment.
        let dir = std::mem::take(&mut self.dir);
        let _ = std::thread::Builder::new()
            .name("mcpmux-cgroup-rm".into())
            .spawn(move || {
                for _ in 0..REMOVE_TRIES {
                    kill_all(&dir);
                    if std::fs::remove_dir(&dir).is_ok() || !dir.exists() {
                        return;
                    }
                    std::thread::sleep(REMOVE_EVERY);
                }
                tracing::warn!(cgroup = %dir.display(), "could not remove a server's pids cgroup");
            });
    }
}

/// SIGKILL to every process left in the cgroup at `dir` (`cgroup.kill` where the kernel has
/// it): what a server started and moved out of its process group goes with it.
fn kill_all(dir: &Path) {
    if std::fs::write(dir.join("cgroup.kill"), "1").is_ok() {
        return;
    }
    // A fork between reading and killing adds a member: read again until none is left.
    for _ in 0..REMOVE_TRIES {
        let Ok(text) = std::fs::read_to_string(dir.join("cgroup.procs")) else {
            return;
        };
        let pids: Vec<i32> = text.lines().filter_map(|l| l.trim().parse().ok()).collect();
        if pids.is_empty() {
            return;
        }
        for pid in pids {
            // SAFETY: kill has no memory-safety preconditions.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
        }
    }
}

/// The directory of the cgroup we run in, in the hierarchy that has the pids controller:
/// cgroup v1's `pids` hierarchy when mounted, else cgroup v2's unified one.
fn base() -> Option<PathBuf> {
    let ours = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let v1 = ours.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        controllers.split(',').any(|c| c == "pids").then(|| {
            (
                path,
                mount(&mounts, |fstype, options| {
                    fstype == "cgroup" && options.split(',').any(|o| o == "pids")
                }),
            )
        })
    });
    let (path, mounted) = match v1 {
        Some((path, Some(mounted))) => (path, mounted),
        _ => {
            let path = ours.lines().find_map(|line| line.strip_prefix("0::"))?;
            (path, mount(&mounts, |fstype, _| fstype == "cgroup2")?)
        }
    };
    let (root, point) = mounted;
    let inside = path.strip_prefix(root.as_str()).unwrap_or(path);
    Some(point.join(inside.trim_start_matches('/')))
}

/// The root within its hierarchy and the mount point of the first mount `matches` accepts
/// (by file system type and super options), from `/proc/self/mountinfo`.
fn mount(mountinfo: &str, matches: impl Fn(&str, &str) -> bool) -> Option<(String, PathBuf)> {
    mountinfo.lines().find_map(|line| {
        let (head, tail) = line.split_once(" - ")?;
        let mut head = head.split(' ');
        let (root, point) = (head.nth(3)?, head.next()?);
        let mut tail = tail.split(' ');
        let (fstype, _source, options) = (tail.next()?, tail.next()?, tail.next()?);
        matches(fstype, options).then(|| (unescape(root), PathBuf::from(unescape(point))))
    })
}

/// mountinfo's octal escapes (`\040` for a space) undone.
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes
            .get(i + 1..i + 4)
            .filter(|digits| bytes[i] == b'\\' && digits.iter().all(|d| (b'0'..=b'7').contains(d)))
            .and_then(|d| {
                let value = d.iter().fold(0u16, |n, d| n * 8 + u16::from(d - b'0'));
                u8::try_from(value).ok()
            });
        match octal {
            Some(code) => {
                out.push(code);
                i += 4;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Removes the cgroups of mcpmux processes that are gone (killed before they cleaned up),
/// with whatever was left running in them.
fn sweep(base: &Path) {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let Ok(entries) = std::fs::read_dir(base) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(owner) = name
                .to_str()
                .and_then(|n| n.strip_prefix(PREFIX))
                .and_then(|rest| rest.split('-').next())
                .and_then(|pid| pid.parse::<i32>().ok())
            else {
                continue;
            };
            // SAFETY: kill with signal 0 only asks whether the process exists.
            let gone = unsafe { libc::kill(owner, 0) } != 0
                && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
            if gone {
                kill_all(&entry.path());
                let _ = std::fs::remove_dir(entry.path());
            }
        }
    });
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn mountinfo_lines_give_the_hierarchy_root_and_mount_point() {
        let info = "\
35 25 0:30 / /sys/fs/cgroup/cpu rw,relatime shared:9 - cgroup cgroup rw,cpu
41 25 0:36 /ctr /sys/fs/cgroup/pids rw,relatime shared:15 - cgroup cgroup rw,pids
43 25 0:38 / /sys/fs/cgroup/my\\040unified rw,relatime shared:17 - cgroup2 cgroup2 rw";
        let pids = mount(info, |t, o| {
            t == "cgroup" && o.split(',').any(|o| o == "pids")
        });
        assert_eq!(
            pids,
            Some(("/ctr".to_owned(), PathBuf::from("/sys/fs/cgroup/pids")))
        );
        let v2 = mount(info, |t, _| t == "cgroup2");
        assert_eq!(
            v2,
            Some(("/".to_owned(), PathBuf::from("/sys/fs/cgroup/my unified")))
        );
        assert_eq!(mount(info, |t, _| t == "nfs"), None);
    }

    #[test]
    fn what_is_left_in_a_servers_cgroup_is_killed_when_it_is_dropped() {
        use std::os::unix::process::{CommandExt, ExitStatusExt};
        let (group, enter) = match PidsGroup::create("unit", 8) {
            Ok(made) => made,
            Err(why) => {
                eprintln!("skipped: no pids cgroup here ({why})");
                return;
            }
        };
        let mut cmd = std::process::Command::new("sleep");
        cmd.arg("60");
        // SAFETY: `enter` only opens, writes and closes.
        unsafe {
            cmd.pre_exec(move || enter.enter());
        }
        let mut child = cmd.spawn().unwrap();
        let procs = std::fs::read_to_string(group.dir().join("cgroup.procs")).unwrap();
        assert_eq!(procs.trim(), child.id().to_string());
        let max = std::fs::read_to_string(group.dir().join("pids.max")).unwrap();
        assert_eq!(max.trim(), "8");
        let dir = group.dir().to_path_buf();
        drop(group);
        assert_eq!(child.wait().unwrap().signal(), Some(libc::SIGKILL));
        // Removed once the member is reaped (by the drop's retry).
        for _ in 0..REMOVE_TRIES * 2 {
            if !dir.exists() {
                return;
            }
            std::thread::sleep(REMOVE_EVERY);
        }
        panic!("{} was not removed", dir.display());
    }
}
