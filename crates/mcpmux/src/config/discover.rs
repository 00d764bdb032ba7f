//! Which files are read, in which order, in which dialect.
//!
//! The order is the merge order (later wins per server name): user files, then project files,
//! then `--config` files. Only paths are decided here; nothing is read.

use std::path::{Path, PathBuf};

use super::claude::Shape;
use super::{Dialect, LoadOptions};

/// One file that may be read.
#[derive(Debug, Clone)]
pub(crate) struct Candidate {
    /// Where it is.
    pub path: PathBuf,
    /// How to read it.
    pub dialect: Dialect,
    /// Which Claude shapes to accept (ignored for `mcpmux.toml`).
    pub shape: Shape,
    /// A required file that is missing is a problem; an optional one is skipped.
    pub required: bool,
    /// Whose file it is: a project's own entries need approval.
    pub scope: FileScope,
}

/// Whose file a config file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FileScope {
    /// The person's own (home, user config folder): trusted as it is.
    User,
    /// The project directory's: someone else's until approved.
    Project,
    /// Named with `--config`: the person asked for it, trusted as it is.
    CommandLine,
}

/// Which other tools' files to read, and at which scope.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Imports {
    /// Asked for by the person (`--import`, their own `config.toml`, a `--config` file): both
    /// their own files of these tools and the project's.
    pub user: Vec<Dialect>,
    /// Asked for by the project's `mcpmux.toml`: only the project's own files of these tools
    /// (which need approval like any project file), never the person's.
    pub project: Vec<Dialect>,
}

/// The imports `options` and the `import` lists of the `mcpmux.toml` files ask for.
pub(crate) fn imports(options: &LoadOptions, config_home: Option<&Path>) -> Imports {
    let mut user = options.import.clone();
    let mut own: Vec<PathBuf> = config_home
        .map(|dir| dir.join("mcpmux").join("config.toml"))
        .into_iter()
        .collect();
    own.extend(
        options
            .extra_files
            .iter()
            .filter(|path| dialect_of(path) == Dialect::Mcpmux)
            .cloned(),
    );
    for path in own {
        user.extend(requested(&path));
    }
    let project = requested(&options.project_dir.join("mcpmux.toml"));
    let ordered = |wanted: &[Dialect]| -> Vec<Dialect> {
        Dialect::IMPORTABLE
            .iter()
            .copied()
            .filter(|dialect| wanted.contains(dialect))
            .collect()
    };
    let project = project
        .into_iter()
        .chain(user.iter().copied())
        .collect::<Vec<_>>();
    Imports {
        user: ordered(&user),
        project: ordered(&project),
    }
}

/// Every file to try, in merge order: imported user files, user files, imported project
/// files, project files, `--config` files. An imported file ranks below mcpmux's and Claude's
/// files of its scope, so the person's own entry wins a name clash.
pub(crate) fn candidates(
    options: &LoadOptions,
    env: &dyn Fn(&str) -> Option<String>,
    imports: &Imports,
) -> Vec<Candidate> {
    let mut list = Vec::new();
    let optional = |path: PathBuf, dialect: Dialect, shape: Shape, scope: FileScope| Candidate {
        path,
        dialect,
        shape,
        required: false,
        scope,
    };

    for dialect in &imports.user {
        if let Some(path) = super::dialects::user_file(*dialect, options.home.as_deref(), env) {
            list.push(optional(path, *dialect, Shape::default(), FileScope::User));
        }
    }
    if let Some(home) = &options.home {
        // Claude Code keeps user-scope servers at the top of ~/.claude.json and local-scope ones
        // (this project only) under projects["<dir>"]; the local ones are more specific.
        list.push(optional(
            home.join(".claude.json"),
            Dialect::Claude,
            Shape {
                flat: false,
                project_dir: Some(options.project_dir.clone()),
            },
            FileScope::User,
        ));
        list.push(optional(
            home.join(".claude").join("settings.json"),
            Dialect::Claude,
            Shape::default(),
            FileScope::User,
        ));
    }
    if let Some(config_home) = config_home(options.home.as_deref(), env) {
        list.push(optional(
            config_home.join("mcpmux").join("config.toml"),
            Dialect::Mcpmux,
            Shape::default(),
            FileScope::User,
        ));
    }

    let project = &options.project_dir;
    let imported = imports.project.iter().filter_map(|dialect| {
        super::dialects::project_file(*dialect, project)
            .map(|path| (path, *dialect, Shape::default()))
    });
    let project_files = imported.chain([
        (
            project.join(".claude").join("settings.json"),
            Dialect::Claude,
            Shape::default(),
        ),
        (
            project.join(".mcp.json"),
            Dialect::Claude,
            Shape {
                flat: true,
                project_dir: None,
            },
        ),
        (
            project.join("mcpmux.toml"),
            Dialect::Mcpmux,
            Shape::default(),
        ),
    ]);
    // Each path is looked up once: comparing every pair with `canonicalize` resolved the same
    // paths over and over (about 170 `readlink` calls a call, strace 2026-11-28).
    let mut ids: Vec<Option<FileId>> = list.iter().map(|c| file_id(&c.path)).collect();
    for (path, dialect, shape) in project_files {
        // Run from the home folder, the project's `.claude/settings.json` is the user's own:
        // read it once, as the user's.
        let id = file_id(&path);
        let known = list
            .iter()
            .zip(&ids)
            .any(|(c, known)| c.path == path || (id.is_some() && *known == id));
        if known {
            continue;
        }
        ids.push(id);
        list.push(optional(path, dialect, shape, FileScope::Project));
    }

    for path in &options.extra_files {
        list.push(Candidate {
            path: path.clone(),
            dialect: dialect_of(path),
            shape: Shape {
                flat: true,
                project_dir: None,
            },
            required: true,
            scope: FileScope::CommandLine,
        });
    }
    list
}

/// The `import` list of the `mcpmux.toml` at `path`, read ahead of the files it names. Lenient:
/// a problem with the file or the list is reported when the file itself is read.
fn requested(path: &Path) -> Vec<Dialect> {
    // A file others could edit is refused when it is read; its list is not followed either.
    if super::perms::check_not_writable_by_others(path).is_err() {
        return Vec::new();
    }
    let Ok(text) = super::dialects::read_bounded(path) else {
        return Vec::new();
    };
    // A file that never spells `import` (a key may also be written with `\u` escapes) holds
    // no list, whether it parses or not: not parsed here at all. The parse below was 1.4M of
    // a call's 17.5M instructions with 100 servers configured (callgrind, 2026-11-28).
    if !text.contains("import") && !text.contains("\\u") && !text.contains("\\U") {
        return Vec::new();
    }
    // Only `import` is built: a whole table of a 100-server file cost a call among 100
    // servers about as much as the file's real read after (callgrind: 2.1M of 9.7M
    // instructions), for one key. The text is still checked whole, as before.
    let Ok(Head {
        import: Some(value),
    }) = toml::from_str::<Head>(&text)
    else {
        return Vec::new();
    };
    super::dialects::import_list(&super::toml_json::to_json(value)).unwrap_or_default()
}

/// The one key of a `mcpmux.toml` read ahead of the rest (`requested`); every other key is
/// skipped, not built.
#[derive(serde::Deserialize)]
struct Head {
    import: Option<toml::Value>,
}

/// What two paths to one existing file have in common: its device and inode.
#[cfg(unix)]
type FileId = (u64, u64);
/// What two paths to one existing file have in common: its resolved path.
#[cfg(not(unix))]
type FileId = PathBuf;

/// The file at `path`, if it exists: one `stat`, where `canonicalize` reads each component's
/// link.
#[cfg(unix)]
fn file_id(path: &Path) -> Option<FileId> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path)
        .ok()
        .map(|meta| (meta.dev(), meta.ino()))
}

/// The file at `path`, if it exists.
#[cfg(not(unix))]
fn file_id(path: &Path) -> Option<FileId> {
    std::fs::canonicalize(path).ok()
}

/// `$XDG_CONFIG_HOME`, or `~/.config` (`%APPDATA%` on Windows). The XDG spec says a relative
/// value is to be ignored.
pub(crate) fn config_home(
    home: Option<&Path>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Option<PathBuf> {
    crate::platform::dirs::config_home(crate::platform::dirs::Os::CURRENT, home, env)
}

/// The secrets file `${secret:NAME}` reads, for a home and environment (`XDG_CONFIG_HOME`).
pub fn secrets_file(home: Option<&Path>, env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    config_home(home, env).map(|dir| dir.join("mcpmux").join(super::secrets::SECRETS_FILE))
}

/// `.toml` is mcpmux's dialect; anything else is read as Claude JSON.
fn dialect_of(path: &Path) -> Dialect {
    match path.extension() {
        Some(extension) if extension.eq_ignore_ascii_case("toml") => Dialect::Mcpmux,
        _ => Dialect::Claude,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn order_and_dialects() {
        let options = LoadOptions {
            home: Some(PathBuf::from("/h")),
            project_dir: PathBuf::from("/p"),
            extra_files: vec![PathBuf::from("x.TOML"), PathBuf::from("y.json")],
            ..LoadOptions::default()
        };
        let list = candidates(&options, &|_| None, &Imports::default());
        let seen: Vec<_> = list
            .iter()
            .map(|c| (c.path.to_string_lossy().into_owned(), c.dialect, c.required))
            .collect();
        assert_eq!(
            seen,
            [
                ("/h/.claude.json".to_owned(), Dialect::Claude, false),
                (
                    "/h/.claude/settings.json".to_owned(),
                    Dialect::Claude,
                    false
                ),
                (
                    "/h/.config/mcpmux/config.toml".to_owned(),
                    Dialect::Mcpmux,
                    false
                ),
                (
                    "/p/.claude/settings.json".to_owned(),
                    Dialect::Claude,
                    false
                ),
                ("/p/.mcp.json".to_owned(), Dialect::Claude, false),
                ("/p/mcpmux.toml".to_owned(), Dialect::Mcpmux, false),
                ("x.TOML".to_owned(), Dialect::Mcpmux, true),
                ("y.json".to_owned(), Dialect::Claude, true),
            ]
        );
    }

    #[test]
    fn project_file_that_is_a_user_file_listed_once() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        std::fs::create_dir_all(home.join(".claude")).unwrap();
        std::fs::write(home.join(".claude").join("settings.json"), "{}").unwrap();
        let project_of = |project_dir: PathBuf| LoadOptions {
            home: Some(home.clone()),
            project_dir,
            ..LoadOptions::default()
        };
        let settings = |options: &LoadOptions| -> Vec<FileScope> {
            candidates(options, &|_| None, &Imports::default())
                .iter()
                .filter(|c| c.path.ends_with(".claude/settings.json"))
                .map(|c| c.scope)
                .collect()
        };
        // Run from the home folder, by the same path and through a link to it.
        assert_eq!(settings(&project_of(home.clone())), [FileScope::User]);
        #[cfg(unix)]
        {
            let link = dir.path().join("link");
            std::os::unix::fs::symlink(&home, &link).unwrap();
            assert_eq!(settings(&project_of(link)), [FileScope::User]);
        }
        // Another folder with a file of its own: both read.
        let project = dir.path().join("project");
        std::fs::create_dir_all(project.join(".claude")).unwrap();
        std::fs::write(project.join(".claude").join("settings.json"), "{}").unwrap();
        assert_eq!(
            settings(&project_of(project)),
            [FileScope::User, FileScope::Project]
        );
    }

    #[test]
    fn xdg_config_home_wins_when_absolute() {
        let home = Some(Path::new("/h"));
        let xdg = |name: &str| (name == "XDG_CONFIG_HOME").then(|| "/xdg".to_owned());
        assert_eq!(config_home(home, &xdg), Some(PathBuf::from("/xdg")));
        let relative = |name: &str| (name == "XDG_CONFIG_HOME").then(|| "rel".to_owned());
        assert_eq!(
            config_home(home, &relative),
            Some(PathBuf::from("/h/.config"))
        );
        assert_eq!(config_home(None, &xdg), Some(PathBuf::from("/xdg")));
        assert_eq!(config_home(None, &|_| None), None);
    }

    #[test]
    fn import_list_read_ahead_of_servers() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mcpmux.toml");
        let servers: String = (0..50)
            .map(|i| format!("[servers.s{i}]\ncommand = \"x\"\nargs = [\"a\", \"{i}\"]\n\n"))
            .collect();
        std::fs::write(
            &path,
            format!("import = [\"codex\", \"cursor\"]\n\n{servers}"),
        )
        .unwrap();
        assert_eq!(requested(&path), [Dialect::Codex, Dialect::Cursor]);
        // The key spelled with an escape is still the key.
        std::fs::write(&path, "\"\\u0069mport\" = [\"codex\"]\n").unwrap();
        assert_eq!(requested(&path), [Dialect::Codex]);
        // No list, a list of the wrong shape, a file that is not TOML: nothing is imported.
        for text in [
            servers.clone(),
            "import = \"codex\"\n".to_owned(),
            "import = [\"codex\"\n[servers".to_owned(),
        ] {
            std::fs::write(&path, text).unwrap();
            assert_eq!(requested(&path), []);
        }
        assert_eq!(requested(&dir.path().join("absent.toml")), []);
    }
}
