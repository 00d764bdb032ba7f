//! Which file a server's `command` names. On Unix the kernel's `execvp` search is right as it is.
//! On Windows `CreateProcess` finds only `.exe` files, but what people configure — `npx`,
//! `uvx` from a pip install, `pnpm` — are `.cmd` and `.bat` shims, so `"command": "npx"` would
//! fail there as "program not found" where Claude Code and VS Code start it. There the name is
//! looked up the way `cmd.exe` does (`PATH` × `PATHEXT`, by the `which` crate) before spawning.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::Path;

/// The program to spawn for `command`, given the environment the child gets (`env` over ours)
/// and its working folder: `command` itself unless Windows needs its shim's full path.
pub(crate) fn resolve(
    command: &str,
    env: &BTreeMap<String, String>,
    cwd: Option<&Path>,
) -> OsString {
    #[cfg(windows)]
    {
        if let Some(found) = windows::shim(command, env, cwd) {
            return found;
        }
    }
    #[cfg(not(windows))]
    let _ = (env, cwd);
    OsString::from(command)
}

#[cfg(windows)]
mod windows {
    use std::collections::BTreeMap;
    use std::ffi::OsString;
    use std::path::Path;

    /// The full path of a bare name (no folder, no extension) found on the child's `PATH`;
    /// `None` leaves the name to `CreateProcess` (and its error, if it is nowhere).
    pub(super) fn shim(
        command: &str,
        env: &BTreeMap<String, String>,
        cwd: Option<&Path>,
    ) -> Option<OsString> {
        let bare = Path::new(command);
        if bare.components().count() != 1 || bare.extension().is_some() {
            return None;
        }
        let path = env
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case("PATH"))
            .map(|(_, value)| OsString::from(value))
            .or_else(|| std::env::var_os("PATH"))?;
        let here = match cwd {
            Some(cwd) => cwd.to_path_buf(),
            None => std::env::current_dir().ok()?,
        };
        which::which_in(command, Some(path), here)
            .ok()
            .map(|found| found.into_os_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn a_command_is_spawned_by_its_own_name_on_unix_where_execvp_searches_the_path() {
        let env = BTreeMap::from([("PATH".to_string(), "/nowhere".to_string())]);
        assert_eq!(resolve("npx", &env, None), OsString::from("npx"));
        assert_eq!(
            resolve("./server.sh", &env, None),
            OsString::from("./server.sh")
        );
    }
}
