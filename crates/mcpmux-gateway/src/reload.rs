//! Hot reload of the served config: on SIGHUP, and when a file the config was read from (or
//! would be, once it exists) changes, the config is read again by the caller's own loader
//! (the way startup read it) and applied to the running hub with
//! [`Gateway::reconfigure`]: sessions are kept, and the tool set's change reaches clients as
//! `notifications/tools/list_changed`. A read that brings a problem the running config did
//! not have (a file that does not parse, an entry with an unknown key, a missing variable)
//! is refused whole, and the servers running are kept.
//!
//! Owns the triggers: the signal, a watch of the files' folders (`notify`; a poll of the
//! files when the platform cannot watch), the debounce of a burst of writes, and the
//! fingerprints that tell a real change of a watched file from a neighbour's. Knows nothing
//! of where config files are or how they are read.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use notify::Watcher;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::handler::Gateway;

/// How long writes must have stopped before a reload: an editor's save (write, rename,
/// chmod) or a Kubernetes ConfigMap swap is one burst of events.
pub const DEFAULT_DEBOUNCE: Duration = Duration::from_millis(200);

/// How often the files are looked at when the platform cannot watch them.
pub const DEFAULT_POLL: Duration = Duration::from_secs(2);

/// The longest a burst may put a reload off: a file written without pause is still read.
const MAX_DEBOUNCE: Duration = Duration::from_secs(2);

/// One reading of the config, as serving it needs.
#[derive(Debug)]
#[non_exhaustive]
pub struct Loaded {
    /// The servers, problems and policy read.
    pub config: mcpmux::ConfigSet,
    /// The servers readiness waits for.
    pub required: Vec<String>,
    /// The files whose change calls for a reload, present or not.
    pub watch: Vec<PathBuf>,
}

impl Loaded {
    /// A reading of `config` with what serving adds to it.
    pub fn new(config: mcpmux::ConfigSet, required: Vec<String>, watch: Vec<PathBuf>) -> Self {
        Self {
            config,
            required,
            watch,
        }
    }
}

/// What a reload compares a new reading with: the problems of the config running, and the
/// files to watch (from the startup reading, until a reload reads them again).
#[derive(Debug, Clone)]
pub struct Baseline {
    problems: BTreeSet<String>,
    watch: Vec<PathBuf>,
}

impl Loaded {
    /// What a reload compares a later reading with.
    pub fn baseline(&self) -> Baseline {
        Baseline {
            problems: problems(&self.config),
            watch: self.watch.clone(),
        }
    }
}

/// What made a reload happen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Trigger {
    /// SIGHUP.
    Signal,
    /// A watched file changed.
    FileChange,
}

impl std::fmt::Display for Trigger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Trigger::Signal => "SIGHUP",
            Trigger::FileChange => "a config file changed",
        })
    }
}

/// What one reload did.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Outcome {
    /// The config was applied.
    Applied {
        /// Why it was read.
        trigger: Trigger,
        /// What changed.
        reload: mcpmux::Reload,
    },
    /// The config was not applied: the servers running are kept.
    Refused {
        /// Why it was read.
        trigger: Trigger,
        /// Why it was refused, naming the file and the fix.
        reason: String,
    },
}

impl Outcome {
    /// Whether a person would want to hear of it: a change, a refusal, or an answer to their
    /// own SIGHUP (a file touched, or a neighbour of a config file written, is not news).
    pub fn is_news(&self) -> bool {
        match self {
            Outcome::Applied { trigger, reload } => {
                !reload.is_empty() || *trigger == Trigger::Signal
            }
            Outcome::Refused { .. } => true,
        }
    }
}

/// One line: `reloaded the config (SIGHUP): added x; 2 unchanged`, or why it was refused.
impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Outcome::Applied { trigger, reload } => {
                write!(f, "reloaded the config ({trigger}): {reload}")
            }
            Outcome::Refused { trigger, reason } => write!(
                f,
                "config reload ({trigger}) refused, the servers running are kept: {reason}"
            ),
        }
    }
}

/// How reloads are triggered.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ReloadOptions {
    /// Reload on SIGHUP (Unix).
    pub signal: bool,
    /// Reload when a watched file changes.
    pub watch: bool,
    /// How long writes must have stopped before a reload.
    pub debounce: Duration,
    /// Look at the files this often instead of watching them (`None`: watch, and poll only
    /// where watching is not possible, every 2 s).
    pub poll: Option<Duration>,
}

impl Default for ReloadOptions {
    fn default() -> Self {
        Self {
            signal: true,
            watch: true,
            debounce: DEFAULT_DEBOUNCE,
            poll: None,
        }
    }
}

impl ReloadOptions {
    /// Builder-style: whether a changed file reloads (SIGHUP always does).
    pub fn with_watch(mut self, watch: bool) -> Self {
        self.watch = watch;
        self
    }

    /// Builder-style: how long writes must have stopped before a reload.
    pub fn with_debounce(mut self, debounce: Duration) -> Self {
        self.debounce = debounce;
        self
    }

    /// Builder-style: poll the files at this interval instead of watching them.
    pub fn with_poll(mut self, poll: Option<Duration>) -> Self {
        self.poll = poll;
        self
    }
}

/// Reads the config.
type Load = Arc<dyn Fn() -> Loaded + Send + Sync>;

/// Reloads a gateway's config: on demand ([`Reloader::reload`]) or on its triggers
/// (SIGHUP, a watched file's change).
pub struct Reloader {
    gateway: Gateway,
    load: Load,
    options: ReloadOptions,
    /// The problems of the config running (see [`problems`]).
    problems: BTreeSet<String>,
    /// The files to watch, from the last reading.
    watch: Vec<PathBuf>,
}

impl Reloader {
    /// Reloads `gateway` with what `load` reads; `startup` is the baseline of the reading
    /// it was started with ([`Loaded::baseline`]).
    pub fn new(
        gateway: Gateway,
        startup: Baseline,
        load: impl Fn() -> Loaded + Send + Sync + 'static,
        options: ReloadOptions,
    ) -> Self {
        Self {
            gateway,
            load: Arc::new(load),
            options,
            problems: startup.problems,
            watch: startup.watch,
        }
    }

    /// Reads the config now and applies it, unless it has problems the running one has not.
    pub async fn reload(&mut self, trigger: Trigger) -> Outcome {
        let load = self.load.clone();
        let loaded = match tokio::task::spawn_blocking(move || load()).await {
            Ok(loaded) => loaded,
            Err(error) => {
                return Outcome::Refused {
                    trigger,
                    reason: format!("reading the config failed: {error}"),
                };
            }
        };
        self.watch = loaded.watch.clone();
        let found = problems(&loaded.config);
        let new: Vec<&String> = found.difference(&self.problems).collect();
        if let Some(first) = new.first() {
            let more = match new.len() {
                1 => String::new(),
                n => format!(" (and {} more)", n - 1),
            };
            return Outcome::Refused {
                trigger,
                reason: format!("{first}{more}"),
            };
        }
        match self
            .gateway
            .reconfigure(loaded.config, loaded.required)
            .await
        {
            Ok(reload) => {
                self.problems = found;
                Outcome::Applied { trigger, reload }
            }
            Err(error) => Outcome::Refused {
                trigger,
                reason: error.to_string(),
            },
        }
    }

    /// Reloads on every trigger until `stop`, telling `report` each outcome that is news
    /// ([`Outcome::is_news`]). The signal is caught and the files watched before this returns,
    /// so a change made after it is never missed; the reloads run on a task of their own.
    pub fn spawn(
        self,
        stop: CancellationToken,
        report: impl FnMut(&Outcome) + Send + 'static,
    ) -> tokio::task::JoinHandle<()> {
        let hangups = hangups(self.options.signal);
        let (changed_tx, changed) = mpsc::channel::<()>(1);
        let files = self
            .options
            .watch
            .then(|| Files::watch(&self.watch, self.options.poll, changed_tx));
        tokio::spawn(self.run(hangups, files, changed, stop, report))
    }

    async fn run(
        mut self,
        mut hangups: Hangups,
        mut files: Option<Files>,
        mut changed: mpsc::Receiver<()>,
        stop: CancellationToken,
        mut report: impl FnMut(&Outcome) + Send,
    ) {
        loop {
            let trigger = tokio::select! {
                () = stop.cancelled() => return,
                Some(()) = next_hangup(&mut hangups) => Trigger::Signal,
                Some(()) = changed.recv() => {
                    // A burst of writes is one change: wait for quiet (bounded).
                    let deadline = tokio::time::Instant::now() + MAX_DEBOUNCE;
                    loop {
                        let quiet = tokio::time::Instant::now() + self.options.debounce;
                        tokio::select! {
                            () = stop.cancelled() => return,
                            () = tokio::time::sleep_until(quiet.min(deadline)) => break,
                            Some(()) = changed.recv() => {}
                        }
                    }
                    if !files.as_mut().is_some_and(Files::changed) {
                        continue;
                    }
                    Trigger::FileChange
                }
            };
            let outcome = self.reload(trigger).await;
            if let Some(files) = files.as_mut() {
                files.follow(&self.watch);
            }
            match &outcome {
                Outcome::Applied { .. } => tracing::info!("{outcome}"),
                Outcome::Refused { .. } => tracing::warn!("{outcome}"),
            }
            if outcome.is_news() {
                report(&outcome);
            }
        }
    }
}

/// The problems of `config` a reload must not bring in, one line each: every error (a
/// warning is not one, nor a project server waiting for approval, which is how a project's
/// own entries always start).
fn problems(config: &mcpmux::ConfigSet) -> BTreeSet<String> {
    config
        .problems
        .iter()
        .filter(|problem| !problem.is_warning())
        .filter(|problem| !matches!(problem.error, mcpmux::config::ConfigError::Untrusted { .. }))
        .map(|problem| problem.error.to_string())
        .collect()
}

/// SIGHUPs, when asked for and the platform has them.
#[cfg(unix)]
type Hangups = Option<tokio::signal::unix::Signal>;
#[cfg(not(unix))]
type Hangups = Option<()>;

fn hangups(wanted: bool) -> Hangups {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        if !wanted {
            return None;
        }
        match signal(SignalKind::hangup()) {
            Ok(hangups) => Some(hangups),
            Err(error) => {
                tracing::warn!(%error, "SIGHUP cannot be caught: the config is not reloaded on it");
                None
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = wanted;
        None
    }
}

/// The next SIGHUP, or never.
async fn next_hangup(hangups: &mut Hangups) -> Option<()> {
    #[cfg(unix)]
    if let Some(hangups) = hangups {
        return hangups.recv().await;
    }
    let _ = hangups;
    std::future::pending().await
}

/// What a file looks like on disk, through symlinks: changes with every write, rename over
/// it, or swap of a link it is reached through (a Kubernetes ConfigMap).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Fingerprint {
    len: u64,
    modified: Option<SystemTime>,
    #[cfg(unix)]
    inode: (u64, u64),
    #[cfg(unix)]
    changed: (i64, i64),
}

fn fingerprint(path: &Path) -> Option<Fingerprint> {
    let meta = std::fs::metadata(path).ok()?;
    #[cfg(unix)]
    use std::os::unix::fs::MetadataExt;
    Some(Fingerprint {
        len: meta.len(),
        modified: meta.modified().ok(),
        #[cfg(unix)]
        inode: (meta.dev(), meta.ino()),
        #[cfg(unix)]
        changed: (meta.ctime(), meta.ctime_nsec()),
    })
}

/// The watched files: their fingerprints, and what tells of a change to one of their
/// folders (a watcher) or looks at them (a poller).
struct Files {
    seen: BTreeMap<PathBuf, Option<Fingerprint>>,
    watcher: Option<Box<dyn Watcher + Send>>,
    /// The folders watched now.
    folders: BTreeSet<PathBuf>,
}

impl Files {
    /// Starts watching the folders of `paths`: a platform watcher, or a poller (every `poll`,
    /// or [`DEFAULT_POLL`] where the platform cannot watch). Every event wakes `changed`.
    fn watch(paths: &[PathBuf], poll: Option<Duration>, changed: mpsc::Sender<()>) -> Self {
        let handler = move |event: notify::Result<notify::Event>| {
            if event.is_ok() {
                // Full: a wake-up is already on its way.
                let _ = changed.try_send(());
            }
        };
        let watcher: Option<Box<dyn Watcher + Send>> = match poll {
            Some(every) => poller(handler, every),
            None => match notify::recommended_watcher(handler.clone()) {
                Ok(watcher) => Some(Box::new(watcher)),
                Err(error) => {
                    tracing::warn!(%error, "config files cannot be watched here; polling them every {DEFAULT_POLL:?}");
                    poller(handler, DEFAULT_POLL)
                }
            },
        };
        let mut files = Files {
            seen: BTreeMap::new(),
            watcher,
            folders: BTreeSet::new(),
        };
        files.follow(paths);
        files
    }

    /// Watches `paths` from now on (the last reading's). A file already watched keeps the
    /// fingerprint it had when its change was noticed, before the reading: a write since is
    /// still a change. A new one's is taken now.
    fn follow(&mut self, paths: &[PathBuf]) {
        let mut before = std::mem::take(&mut self.seen);
        self.seen = paths
            .iter()
            .map(|path| {
                let seen = before.remove(path).unwrap_or_else(|| fingerprint(path));
                (path.clone(), seen)
            })
            .collect();
        // A file's folder, so that a file created, replaced by a rename, or reached through a
        // swapped link is seen; the folder itself must exist to be watched.
        let folders: BTreeSet<PathBuf> = paths
            .iter()
            .filter_map(|path| path.parent())
            .map(|dir| {
                if dir.as_os_str().is_empty() {
                    Path::new(".").to_path_buf()
                } else {
                    dir.to_path_buf()
                }
            })
            .filter(|dir| dir.is_dir())
            .collect();
        let Some(watcher) = self.watcher.as_mut() else {
            return;
        };
        for gone in self.folders.difference(&folders) {
            let _ = watcher.unwatch(gone);
        }
        for new in folders.difference(&self.folders) {
            if let Err(error) = watcher.watch(new, notify::RecursiveMode::NonRecursive) {
                tracing::debug!(folder = %new.display(), %error, "not watched");
            }
        }
        self.folders = folders;
    }

    /// Whether a watched file changed since its fingerprint was taken (a file created or
    /// deleted is a change); the new fingerprints are kept.
    fn changed(&mut self) -> bool {
        let mut changed = false;
        for (path, seen) in self.seen.iter_mut() {
            let now = fingerprint(path);
            if *seen != now {
                tracing::debug!(file = %path.display(), "config file changed");
                *seen = now;
                changed = true;
            }
        }
        changed
    }
}

/// A watcher that looks at the folders every `every`.
fn poller(handler: impl notify::EventHandler, every: Duration) -> Option<Box<dyn Watcher + Send>> {
    let config = notify::Config::default().with_poll_interval(every);
    match notify::PollWatcher::new(handler, config) {
        Ok(watcher) => Some(Box::new(watcher)),
        Err(error) => {
            tracing::warn!(%error, "config files cannot be watched or polled: only SIGHUP reloads");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn a_rewrite_of_a_watched_file_is_a_change_and_a_neighbour_s_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("mcpmux.toml");
        let neighbour = dir.path().join("notes.txt");
        std::fs::write(&config, "[servers]\n").unwrap();
        let (tx, _rx) = mpsc::channel(1);
        let mut files = Files::watch(std::slice::from_ref(&config), Some(DEFAULT_POLL), tx);
        assert!(!files.changed());
        std::fs::write(&neighbour, "hello").unwrap();
        assert!(!files.changed());
        // Replaced by a rename, as editors save: a new inode even at the same length.
        let temp = dir.path().join(".mcpmux.toml.tmp");
        std::fs::write(&temp, "[servers]\n").unwrap();
        std::fs::rename(&temp, &config).unwrap();
        assert!(files.changed());
        assert!(!files.changed(), "the new fingerprint is kept");
        std::fs::remove_file(&config).unwrap();
        assert!(files.changed(), "a deleted file is a change");
    }

    /// How Kubernetes updates a mounted ConfigMap: the file is a link through `..data`, a
    /// link to a folder of the version; a new version's folder is written and `..data`
    /// replaced by a rename.
    #[cfg(unix)]
    #[tokio::test]
    async fn a_configmap_style_swap_wakes_the_watcher_and_is_a_change() {
        use std::os::unix::fs::symlink;
        let dir = tempfile::tempdir().unwrap();
        let dir = dir.path();
        for (version, text) in [("..v1", "[servers]\n"), ("..v2", "[servers]\n# v2\n")] {
            std::fs::create_dir(dir.join(version)).unwrap();
            std::fs::write(dir.join(version).join("mcpmux.toml"), text).unwrap();
        }
        symlink("..v1", dir.join("..data")).unwrap();
        symlink("..data/mcpmux.toml", dir.join("mcpmux.toml")).unwrap();
        let (tx, mut rx) = mpsc::channel(1);
        let mut files = Files::watch(&[dir.join("mcpmux.toml")], None, tx);

        symlink("..v2", dir.join("..data_tmp")).unwrap();
        std::fs::rename(dir.join("..data_tmp"), dir.join("..data")).unwrap();
        let woken = tokio::time::timeout(Duration::from_secs(10), rx.recv()).await;
        assert!(matches!(woken, Ok(Some(()))), "the watcher never woke");
        assert!(files.changed());
    }

    #[test]
    fn a_file_that_does_not_exist_yet_is_a_change_once_created() {
        let dir = tempfile::tempdir().unwrap();
        let later = dir.path().join(".mcp.json");
        let (tx, _rx) = mpsc::channel(1);
        let mut files = Files::watch(std::slice::from_ref(&later), Some(DEFAULT_POLL), tx);
        assert!(!files.changed());
        std::fs::write(&later, "{}").unwrap();
        assert!(files.changed());
    }

    #[test]
    fn only_an_applied_change_a_refusal_or_a_signal_s_answer_is_news() {
        let quiet = Outcome::Applied {
            trigger: Trigger::FileChange,
            reload: mcpmux::Reload::default(),
        };
        assert!(!quiet.is_news());
        let asked = Outcome::Applied {
            trigger: Trigger::Signal,
            reload: mcpmux::Reload::default(),
        };
        assert!(asked.is_news());
        assert_eq!(
            asked.to_string(),
            "reloaded the config (SIGHUP): nothing changed; 0 unchanged"
        );
        let refused = Outcome::Refused {
            trigger: Trigger::FileChange,
            reason: "mcpmux.toml: not valid TOML".into(),
        };
        assert!(refused.is_news());
        assert!(refused.to_string().contains("the servers running are kept"));
    }
}
