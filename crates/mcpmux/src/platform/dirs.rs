//! Where the person's home, settings and caches are, on each system, from the environment the
//! caller passes (so tests can ask about any system): `$HOME` (Windows: `%USERPROFILE%`), the
//! XDG folders where set (an absolute value only, as the XDG spec says), else `~/.config` and
//! `~/.cache` on Unix (macOS included: what command-line tools such as mcpmux use there) and
//! `%APPDATA%` and `%LOCALAPPDATA%` on Windows. The settings folder of a desktop application
//! (Electron's `appData`: Claude Desktop, VS Code) is [`app_data`].

use std::path::{Path, PathBuf};

/// The system whose conventions a path follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Os {
    /// Linux and the other Unixes that follow XDG.
    Linux,
    /// macOS.
    Mac,
    /// Windows.
    Windows,
}

impl Os {
    /// The system this build runs on.
    pub(crate) const CURRENT: Os = if cfg!(target_os = "macos") {
        Os::Mac
    } else if cfg!(windows) {
        Os::Windows
    } else {
        Os::Linux
    };
}

/// An environment variable as a path, when set and not empty.
fn var(env: &dyn Fn(&str) -> Option<String>, name: &str) -> Option<PathBuf> {
    env(name)
        .filter(|value| !value.is_empty())
        .map(PathBuf::from)
}

/// An XDG variable as a path, when set to an absolute path (a relative one is ignored).
fn xdg(env: &dyn Fn(&str) -> Option<String>, name: &str) -> Option<PathBuf> {
    var(env, name).filter(|dir| dir.is_absolute())
}

/// The person's home: `$HOME`, or on Windows `%USERPROFILE%` when `HOME` is not set.
pub(crate) fn home(os: Os, env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    var(env, "HOME").or_else(|| match os {
        Os::Windows => var(env, "USERPROFILE"),
        Os::Linux | Os::Mac => None,
    })
}

/// This process's home, as [`home`] finds it.
pub(crate) fn home_from_env() -> Option<PathBuf> {
    home(Os::CURRENT, &|name| std::env::var(name).ok())
}

/// The folder mcpmux's own settings folder (`mcpmux/`) goes in: `$XDG_CONFIG_HOME`, else
/// `%APPDATA%` on Windows and `~/.config` elsewhere.
pub(crate) fn config_home(
    os: Os,
    home: Option<&Path>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Option<PathBuf> {
    xdg(env, "XDG_CONFIG_HOME").or_else(|| match os {
        Os::Windows => var(env, "APPDATA"),
        Os::Linux | Os::Mac => home.map(|home| home.join(".config")),
    })
}

/// The folder mcpmux's caches (`mcpmux/`) go in: `$XDG_CACHE_HOME`, else `%LOCALAPPDATA%` on
/// Windows and `~/.cache` elsewhere.
pub(crate) fn cache_home(
    os: Os,
    home: Option<&Path>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Option<PathBuf> {
    xdg(env, "XDG_CACHE_HOME").or_else(|| match os {
        Os::Windows => var(env, "LOCALAPPDATA"),
        Os::Linux | Os::Mac => home.map(|home| home.join(".cache")),
    })
}

/// [`cache_home`] for this process.
pub(crate) fn cache_home_from_env() -> Option<PathBuf> {
    let env = |name: &str| std::env::var(name).ok();
    cache_home(Os::CURRENT, home_from_env().as_deref(), &env)
}

/// Where desktop applications keep their settings (Electron's `appData`):
/// `~/Library/Application Support` on macOS, `%APPDATA%` on Windows, `$XDG_CONFIG_HOME` or
/// `~/.config` on Linux.
pub(crate) fn app_data(
    os: Os,
    home: Option<&Path>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Option<PathBuf> {
    match os {
        Os::Mac => home.map(|home| home.join("Library").join("Application Support")),
        Os::Windows => var(env, "APPDATA"),
        Os::Linux => xdg(env, "XDG_CONFIG_HOME").or_else(|| home.map(|home| home.join(".config"))),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn windows_env(name: &str) -> Option<String> {
        match name {
            "USERPROFILE" => Some(r"C:\Users\ada".into()),
            "APPDATA" => Some(r"C:\Users\ada\AppData\Roaming".into()),
            "LOCALAPPDATA" => Some(r"C:\Users\ada\AppData\Local".into()),
            _ => None,
        }
    }

    #[test]
    fn windows_finds_home_in_userprofile_and_settings_in_appdata() {
        let profile = home(Os::Windows, &windows_env).unwrap();
        assert_eq!(profile, PathBuf::from(r"C:\Users\ada"));
        assert_eq!(
            config_home(Os::Windows, Some(&profile), &windows_env),
            Some(PathBuf::from(r"C:\Users\ada\AppData\Roaming"))
        );
        assert_eq!(
            cache_home(Os::Windows, Some(&profile), &windows_env),
            Some(PathBuf::from(r"C:\Users\ada\AppData\Local"))
        );
        assert_eq!(
            app_data(Os::Windows, Some(&profile), &windows_env),
            Some(PathBuf::from(r"C:\Users\ada\AppData\Roaming"))
        );
    }

    #[test]
    fn unix_uses_xdg_when_absolute_and_dot_folders_otherwise() {
        let ada = Path::new("/home/ada");
        let none = |_: &str| None;
        let xdg = |name: &str| (name == "XDG_CONFIG_HOME").then(|| "/xdg".to_owned());
        let relative = |name: &str| (name == "XDG_CACHE_HOME").then(|| "rel".to_owned());
        for os in [Os::Linux, Os::Mac] {
            assert_eq!(home(os, &windows_env), None);
            assert_eq!(config_home(os, Some(ada), &none), Some(ada.join(".config")));
            assert_eq!(config_home(os, Some(ada), &xdg), Some("/xdg".into()));
            assert_eq!(
                cache_home(os, Some(ada), &relative),
                Some(ada.join(".cache"))
            );
        }
        assert_eq!(app_data(Os::Linux, Some(ada), &xdg), Some("/xdg".into()));
        assert_eq!(
            app_data(Os::Mac, Some(ada), &xdg),
            Some(ada.join("Library/Application Support"))
        );
    }
}
