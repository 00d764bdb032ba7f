//! What a local server may touch: the `sandbox` of a server in `mcpmux.toml` (a named profile
//! or a table), the profiles' meaning, and their expansion into concrete grants once the
//! home, project and private temp directories are known.
//!
//! Only the policy lives here; `transport::sandbox` applies it to a child process.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Map, Value};

/// A named starting point: what most servers need, so nobody writes system paths by hand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Profile {
    /// Read and write the project, read toolchains and system files, network allowed.
    Project,
    /// `Project` with no network at all, loopback included.
    Offline,
    /// Read the project only, write nothing but the private temp dir, no network.
    Readonly,
    /// No sandbox: the server runs with all of the user's rights.
    None,
}

impl Profile {
    /// Every profile, as written in the config.
    pub const NAMES: &'static [&'static str] = &["project", "offline", "readonly", "none"];

    /// The profile written `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "project" => Some(Self::Project),
            "offline" => Some(Self::Offline),
            "readonly" => Some(Self::Readonly),
            "none" => Some(Self::None),
            _ => None,
        }
    }

    /// Its name as written in the config.
    pub fn name(self) -> &'static str {
        match self {
            Self::Project => "project",
            Self::Offline => "offline",
            Self::Readonly => "readonly",
            Self::None => "none",
        }
    }
}

/// Which connections a sandboxed server may make.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Network {
    /// No network at all: a network namespace of its own without interfaces.
    None,
    /// Only its own loopback (a private network namespace with `lo` up): it can talk to
    /// processes it started, not to services on the host's 127.0.0.1.
    Loopback,
    /// Any host, any port.
    Any,
    /// TCP connections to these ports only, on any host (Landlock restricts by port);
    /// UDP is not restricted. A `host:port` entry in the config gives its port here and its
    /// host to [`Sandbox::hosts`].
    Ports(Vec<u16>),
}

impl std::fmt::Display for Network {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::None => f.write_str("none"),
            Self::Loopback => f.write_str("loopback"),
            Self::Any => f.write_str("any"),
            Self::Ports(ports) => {
                let ports: Vec<String> = ports.iter().map(u16::to_string).collect();
                write!(f, "tcp ports {}", ports.join(","))
            }
        }
    }
}

/// Resource limits (rlimits) of a sandboxed server and everything it starts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// Largest data segment (heap) of each process, in bytes (`RLIMIT_DATA`).
    pub memory: Option<u64>,
    /// CPU time of each process (`RLIMIT_CPU`), whole seconds.
    pub cpu_time: Option<Duration>,
    /// Processes the user may have (`RLIMIT_NPROC`; counted per user, not per server).
    pub processes: Option<u64>,
    /// Open files of each process (`RLIMIT_NOFILE`).
    pub open_files: Option<u64>,
}

/// A server's sandbox as configured: a profile and what the table adds to it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Sandbox {
    /// The starting point.
    pub profile: Profile,
    /// More paths it may read (`${HOME}`, `${PROJECT}`, `${TMP}` expanded at start).
    pub read: Vec<String>,
    /// More paths it may read and write.
    pub write: Vec<String>,
    /// Replaces the profile's network when set.
    pub network: Option<Network>,
    /// The `host:port` entries of `network`, as written: the kernel enforces only their
    /// ports (any host on them is reachable), which is warned about and shown with them.
    pub hosts: Vec<String>,
    /// Resource limits.
    pub limits: Limits,
    /// Refuse to start the server where the kernel cannot sandbox it, instead of running it
    /// unsandboxed with a warning.
    pub required: bool,
}

impl Sandbox {
    /// The profile alone, nothing added.
    pub fn profile(profile: Profile) -> Self {
        Self {
            profile,
            read: Vec::new(),
            write: Vec::new(),
            network: None,
            hosts: Vec::new(),
            limits: Limits::default(),
            required: false,
        }
    }

    /// Builder-style: more readable paths.
    pub fn with_read<I: IntoIterator<Item = S>, S: Into<String>>(mut self, paths: I) -> Self {
        self.read.extend(paths.into_iter().map(Into::into));
        self
    }

    /// Builder-style: more writable paths.
    pub fn with_write<I: IntoIterator<Item = S>, S: Into<String>>(mut self, paths: I) -> Self {
        self.write.extend(paths.into_iter().map(Into::into));
        self
    }

    /// Builder-style: the network it may use.
    pub fn with_network(mut self, network: Network) -> Self {
        self.network = Some(network);
        self
    }

    /// Builder-style: resource limits.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Builder-style: refuse to run unsandboxed.
    pub fn with_required(mut self, required: bool) -> Self {
        self.required = required;
        self
    }

    /// Whether it restricts anything.
    pub fn is_off(&self) -> bool {
        self.profile == Profile::None
    }

    /// A one-line summary for `mcpmux servers`: `project`, `offline +read 2 net=any`.
    pub fn summary(&self) -> String {
        let mut out = self.profile.name().to_owned();
        if self.is_off() {
            return out;
        }
        if !self.read.is_empty() {
            out.push_str(&format!(" +read {}", self.read.len()));
        }
        if !self.write.is_empty() {
            out.push_str(&format!(" +write {}", self.write.len()));
        }
        if let Some(network) = &self.network {
            out.push_str(&format!(" net={network}"));
        }
        if !self.hosts.is_empty() {
            out.push_str(" (hosts not enforced)");
        }
        if self.limits != Limits::default() {
            out.push_str(" +limits");
        }
        if self.required {
            out.push_str(" required");
        }
        out
    }

    /// The concrete grants for a server whose home is `home`, project `project` and private
    /// temp dir `tmp`; `None` for the `none` profile.
    pub(crate) fn grants(&self, home: Option<&Path>, project: &Path, tmp: &Path) -> Option<Grants> {
        let (project_write, network) = match self.profile {
            Profile::None => return None,
            Profile::Project => (true, Network::Any),
            Profile::Offline => (true, Network::None),
            Profile::Readonly => (false, Network::None),
        };
        let expand = |text: &str| -> PathBuf {
            let mut out = text.replace("${PROJECT}", &project.to_string_lossy());
            out = out.replace("${TMP}", &tmp.to_string_lossy());
            if let Some(home) = home {
                out = out.replace("${HOME}", &home.to_string_lossy());
            }
            PathBuf::from(out)
        };
        let mut read: Vec<PathBuf> = SYSTEM_READ.iter().map(PathBuf::from).collect();
        let mut write: Vec<PathBuf> = SYSTEM_WRITE.iter().map(PathBuf::from).collect();
        write.push(tmp.to_path_buf());
        if let Some(home) = home {
            read.extend(HOME_TOOLCHAINS.iter().map(|dir| home.join(dir)));
            // npx and uvx install into their caches on first use.
            write.extend(HOME_CACHES.iter().map(|dir| home.join(dir)));
        }
        if project_write {
            write.push(project.to_path_buf());
        } else {
            read.push(project.to_path_buf());
        }
        read.extend(self.read.iter().map(|path| expand(path)));
        write.extend(self.write.iter().map(|path| expand(path)));
        Some(Grants {
            read,
            write,
            network: self.network.clone().unwrap_or(network),
            limits: self.limits,
            required: self.required,
        })
    }

    /// The grants of a server started as `command` with `env` (set on top of ours: its `HOME`
    /// wins) in `project`, with private temp dir `tmp`: `Sandbox::grants` plus, read only,
    /// the directory of the program the person approved, wherever it is installed (a
    /// binary's data files, a script's modules beside it).
    pub fn server_grants(
        &self,
        command: &str,
        env: &BTreeMap<String, String>,
        project: &Path,
        tmp: &Path,
    ) -> Option<Grants> {
        let home = env
            .get("HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(PathBuf::from));
        let mut grants = self.grants(home.as_deref(), project, tmp)?;
        if let Some(dir) = program_dir(command, env, project) {
            grants.read.push(dir);
        }
        Some(grants)
    }
}

/// The directory of the program `command` runs (after symbolic links), found like `exec` finds
/// it: a path with a slash from `project`, else on `PATH`.
fn program_dir(command: &str, env: &BTreeMap<String, String>, project: &Path) -> Option<PathBuf> {
    let found = if command.contains('/') {
        Some(project.join(command))
    } else {
        let path = env
            .get("PATH")
            .cloned()
            .or_else(|| std::env::var("PATH").ok())?;
        std::env::split_paths(&path)
            .map(|dir| dir.join(command))
            .find(|candidate| candidate.is_file())
    }?;
    Some(found.canonicalize().ok()?.parent()?.to_path_buf())
}

/// System paths every runtime reads: binaries, libraries, configuration, `/proc` (Landlock
/// keeps a sandboxed process from reading other processes' private `/proc` files).
const SYSTEM_READ: &[&str] = &[
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/etc",
    "/opt",
    "/nix",
    "/proc",
    "/sys",
    "/dev/urandom",
    "/dev/random",
    "/dev/full",
    "/run/current-system",
];

/// Device files runtimes write: the null sink, terminals, shared memory.
const SYSTEM_WRITE: &[&str] = &["/dev/null", "/dev/zero", "/dev/tty", "/dev/pts", "/dev/shm"];

/// Toolchains installed in the home directory, read-only: version managers, language homes,
/// per-user tool installs.
const HOME_TOOLCHAINS: &[&str] = &[
    ".cargo",
    ".rustup",
    ".pyenv",
    ".nvm",
    ".volta",
    ".fnm",
    ".asdf",
    ".local/bin",
    ".local/lib",
    ".local/share/uv",
    ".local/share/pnpm",
    ".local/share/mise",
    ".bun",
    ".deno",
    ".nix-profile",
    ".gitconfig",
    ".npmrc",
];

/// Package caches the runtimes write when they install on first use (`npx`, `uvx`, `pip`).
const HOME_CACHES: &[&str] = &[".npm", ".cache/uv", ".cache/pip", ".cache/node"];

/// A sandbox expanded for one start: the paths and network it grants.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Grants {
    /// Paths readable (and executable), with everything beneath.
    pub read: Vec<PathBuf>,
    /// Paths readable and writable, with everything beneath.
    pub write: Vec<PathBuf>,
    /// The network it may use.
    pub network: Network,
    /// Resource limits.
    pub limits: Limits,
    /// Refuse to start without a sandbox.
    pub required: bool,
}

/// The sandbox of servers whose entry names none (the user's top-level `[sandbox]`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Defaults {
    /// For servers the person wrote (`servers = "none"` unless changed).
    pub servers: Sandbox,
    /// For servers the person did not write: approved project files, plugins, imported
    /// tool configs (`others = "project"` unless changed).
    pub others: Sandbox,
}

impl Default for Defaults {
    fn default() -> Self {
        Self {
            servers: Sandbox::profile(Profile::None),
            others: Sandbox::profile(Profile::Project),
        }
    }
}

/// Keys of the top-level `[sandbox]`.
const DEFAULTS_KEYS: &[&str] = &["servers", "others"];

/// Reads the top-level `[sandbox]` table: `servers` and `others`, each like a server's.
pub(crate) fn defaults(value: Value) -> Result<Defaults, String> {
    let Value::Object(mut table) = value else {
        return Err(
            "expected a table: write [sandbox] with servers = \"none\" and others = \"project\""
                .to_owned(),
        );
    };
    if let Some(key) = table
        .keys()
        .find(|key| !DEFAULTS_KEYS.contains(&key.as_str()))
    {
        return Err(format!(
            "unknown key `{key}`: valid keys are servers, others"
        ));
    }
    let mut defaults = Defaults::default();
    if let Some(value) = table.remove("servers") {
        defaults.servers = parse(value).map_err(|e| format!("servers: {e}"))?;
    }
    if let Some(value) = table.remove("others") {
        defaults.others = parse(value).map_err(|e| format!("others: {e}"))?;
    }
    Ok(defaults)
}

/// Keys of `sandbox = { ... }`.
pub(crate) const KEYS: &[&str] = &[
    "profile",
    "read",
    "write",
    "network",
    "memory",
    "cpu_time",
    "processes",
    "open_files",
    "required",
];

/// Reads `sandbox = "project"` or `sandbox = { profile = "offline", read = [...], ... }`; the
/// error says what to write instead. A table without `profile` starts from `project`.
pub(crate) fn parse(value: Value) -> Result<Sandbox, String> {
    let mut table = match value {
        Value::String(name) => return profile(&name).map(Sandbox::profile),
        Value::Object(table) => table,
        other => {
            return Err(format!(
                "expected a profile name ({}) or a table, found {}",
                Profile::NAMES.join(", "),
                super::value::kind_name(&other, super::Dialect::Mcpmux)
            ));
        }
    };
    if let Some(key) = table.keys().find(|key| !KEYS.contains(&key.as_str())) {
        return Err(format!(
            "unknown key `{key}`: valid keys are {}",
            KEYS.join(", ")
        ));
    }
    let mut sandbox = Sandbox::profile(match table.remove("profile") {
        Some(Value::String(name)) => profile(&name)?,
        Some(other) => return Err(format!("profile: expected a name, found {other}")),
        None => Profile::Project,
    });
    sandbox.read = paths(&mut table, "read")?;
    sandbox.write = paths(&mut table, "write")?;
    if let Some(value) = table.remove("network") {
        let (network, hosts) = network(value)?;
        sandbox.network = Some(network);
        sandbox.hosts = hosts;
    }
    if let Some(value) = table.remove("memory") {
        sandbox.limits.memory = Some(bytes(&value)?);
    }
    if let Some(value) = table.remove("cpu_time") {
        let time = super::duration::parse(&value).map_err(|e| format!("cpu_time: {e}"))?;
        sandbox.limits.cpu_time = Some(time.max(Duration::from_secs(1)));
    }
    sandbox.limits.processes = count(&mut table, "processes")?;
    sandbox.limits.open_files = count(&mut table, "open_files")?;
    match table.remove("required") {
        Some(Value::Bool(required)) => sandbox.required = required,
        Some(other) => return Err(format!("required: expected true or false, found {other}")),
        None => {}
    }
    Ok(sandbox)
}

/// The profile written `name`.
pub(crate) fn profile(name: &str) -> Result<Profile, String> {
    Profile::from_name(name).ok_or_else(|| {
        format!(
            "unknown sandbox profile `{name}`: write one of {}",
            Profile::NAMES.join(", ")
        )
    })
}

fn paths(table: &mut Map<String, Value>, key: &str) -> Result<Vec<String>, String> {
    let Some(value) = table.remove(key) else {
        return Ok(Vec::new());
    };
    let Value::Array(items) = value else {
        return Err(format!(
            "{key}: expected a list of paths, like [\"${{PROJECT}}/data\"]"
        ));
    };
    items
        .into_iter()
        .map(|item| match item {
            Value::String(path) if path.starts_with('/') || path.starts_with("${") => Ok(path),
            Value::String(path) => Err(format!(
                "{key}: `{path}` is not absolute: start it with /, ${{HOME}}, ${{PROJECT}} or ${{TMP}}"
            )),
            other => Err(format!("{key}: expected a path, found {other}")),
        })
        .collect()
}

/// A `network` value, and the `host:port` entries of a list (whose hosts are not enforced).
fn network(value: Value) -> Result<(Network, Vec<String>), String> {
    match value {
        Value::String(name) => match name.as_str() {
            "none" => Ok((Network::None, Vec::new())),
            "loopback" => Ok((Network::Loopback, Vec::new())),
            "any" => Ok((Network::Any, Vec::new())),
            _ => Err(format!(
                "network: unknown `{name}`: write \"none\", \"loopback\", \"any\" or a list of TCP ports like [443, \"db.internal:5432\"]"
            )),
        },
        Value::Array(items) => {
            let mut ports = Vec::new();
            let mut hosts = Vec::new();
            for item in items {
                let (port, host) = endpoint(&item).ok_or_else(|| {
                    format!(
                        "network: `{item}` is not a TCP port (1-65535) or `host:port` (like \"api.example.com:443\" or \"[::1]:8080\")"
                    )
                })?;
                if !ports.contains(&port) {
                    ports.push(port);
                }
                if let Some(host) = host {
                    hosts.push(host);
                }
            }
            Ok((Network::Ports(ports), hosts))
        }
        other => Err(format!(
            "network: expected \"none\", \"loopback\", \"any\" or a list of ports, found {other}"
        )),
    }
}

/// One entry of a network list: a port (`443`, `"443"`), or `"host:port"` with the entry
/// back as written.
fn endpoint(item: &Value) -> Option<(u16, Option<String>)> {
    let port = |text: &str| text.parse::<u16>().ok().filter(|port| *port > 0);
    if let Some(n) = item.as_u64() {
        return u16::try_from(n)
            .ok()
            .filter(|port| *port > 0)
            .map(|p| (p, None));
    }
    let text = item.as_str()?.trim();
    if let Some(p) = port(text) {
        return Some((p, None));
    }
    let (host, p) = text.rsplit_once(':')?;
    let bare = host.strip_prefix('[').and_then(|h| h.strip_suffix(']'));
    let valid = match bare {
        Some(ip) => ip.parse::<std::net::Ipv6Addr>().is_ok(),
        None => {
            !host.is_empty()
                && host
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-' || c == '_')
        }
    };
    valid.then_some(())?;
    Some((port(p)?, Some(text.to_owned())))
}

fn count(table: &mut Map<String, Value>, key: &str) -> Result<Option<u64>, String> {
    match table.remove(key) {
        None => Ok(None),
        Some(value) => value
            .as_u64()
            .filter(|n| *n > 0)
            .map(Some)
            .ok_or_else(|| format!("{key}: expected a positive whole number, found {value}")),
    }
}

/// `"512MiB"`, `"2GiB"`, `"100MB"` or a whole number of bytes.
fn bytes(value: &Value) -> Result<u64, String> {
    const EXPECTED: &str = "write a number of bytes or a size like \"512MiB\" or \"2GiB\"";
    if let Some(n) = value.as_u64() {
        return Ok(n);
    }
    let Some(text) = value.as_str() else {
        return Err(format!("memory: {EXPECTED}"));
    };
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: u64 = number
        .parse()
        .map_err(|_| format!("memory: `{text}`: {EXPECTED}"))?;
    let scale: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "kb" => 1_000,
        "kib" => 1 << 10,
        "mb" => 1_000_000,
        "mib" => 1 << 20,
        "gb" => 1_000_000_000,
        "gib" => 1 << 30,
        _ => return Err(format!("memory: `{text}`: {EXPECTED}")),
    };
    number
        .checked_mul(scale)
        .ok_or_else(|| format!("memory: `{text}` is too large"))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_program_directory_is_found_on_path_or_from_the_project() {
        let env = BTreeMap::from([("PATH".to_owned(), "/nonexistent:/bin".to_owned())]);
        let sh = program_dir("sh", &env, Path::new("/")).unwrap();
        assert!(sh.is_dir(), "{sh:?}");
        assert_eq!(
            program_dir("./bin/sh", &env, Path::new("/")),
            Some(sh.clone())
        );
        assert_eq!(
            program_dir("no-such-program-here", &env, Path::new("/")),
            None
        );
        let grants = Sandbox::profile(Profile::Project)
            .server_grants("sh", &env, Path::new("/p"), Path::new("/t"))
            .unwrap();
        assert_eq!(grants.read.last(), Some(&sh));
    }

    #[test]
    fn a_profile_name_or_a_table_is_read() {
        assert_eq!(
            parse(json!("offline")).unwrap(),
            Sandbox::profile(Profile::Offline)
        );
        let table = parse(json!({
            "profile": "readonly", "read": ["${HOME}/data"], "network": [443, 5432],
            "memory": "512MiB", "cpu_time": "30s", "processes": 64, "required": true
        }))
        .unwrap();
        assert_eq!(table.profile, Profile::Readonly);
        assert_eq!(table.read, vec!["${HOME}/data"]);
        assert_eq!(table.network, Some(Network::Ports(vec![443, 5432])));
        assert_eq!(table.limits.memory, Some(512 << 20));
        assert_eq!(table.limits.cpu_time, Some(Duration::from_secs(30)));
        assert!(table.required);
    }

    #[test]
    fn mistakes_are_refused_with_what_to_write() {
        assert!(parse(json!("projet")).unwrap_err().contains("project"));
        assert!(parse(json!({"reed": []})).unwrap_err().contains("read"));
        assert!(
            parse(json!({"read": ["data"]}))
                .unwrap_err()
                .contains("absolute")
        );
        for wrong in [
            "example.com:",
            ":443",
            "example.com:99999",
            "a b:1",
            "[zz]:1",
        ] {
            assert!(
                parse(json!({ "network": [wrong] }))
                    .unwrap_err()
                    .contains("host:port"),
                "{wrong}"
            );
        }
        assert!(
            parse(json!({"memory": "lots"}))
                .unwrap_err()
                .contains("512MiB")
        );
    }

    #[test]
    fn host_port_entries_enforce_their_port_and_are_kept_to_warn_about_the_host() {
        let sandbox = parse(json!({
            "network": [443, "8080", "api.example.com:443", "[::1]:5432"]
        }))
        .unwrap();
        assert_eq!(sandbox.network, Some(Network::Ports(vec![443, 8080, 5432])));
        assert_eq!(sandbox.hosts, vec!["api.example.com:443", "[::1]:5432"]);
        assert!(sandbox.summary().ends_with("(hosts not enforced)"));
        assert!(parse(json!({"network": [443]})).unwrap().hosts.is_empty());
    }

    #[test]
    fn the_project_profile_grants_the_project_and_no_other_home_files() {
        let home = Path::new("/home/u");
        let grants = Sandbox::profile(Profile::Project)
            .with_read(["${HOME}/notes"])
            .grants(Some(home), Path::new("/work/p"), Path::new("/tmp/x"))
            .unwrap();
        assert!(grants.write.contains(&PathBuf::from("/work/p")));
        assert!(grants.write.contains(&PathBuf::from("/tmp/x")));
        assert!(grants.read.contains(&PathBuf::from("/home/u/notes")));
        assert!(grants.read.contains(&PathBuf::from("/home/u/.cargo")));
        assert!(!grants.read.iter().chain(&grants.write).any(|p| p == home));
        assert!(!grants.read.iter().any(|p| p.starts_with("/home/u/.ssh")));
        assert_eq!(grants.network, Network::Any);
    }

    #[test]
    fn readonly_reads_the_project_and_has_no_network() {
        let grants = Sandbox::profile(Profile::Readonly)
            .grants(None, Path::new("/work/p"), Path::new("/tmp/x"))
            .unwrap();
        assert!(grants.read.contains(&PathBuf::from("/work/p")));
        assert!(!grants.write.contains(&PathBuf::from("/work/p")));
        assert_eq!(grants.network, Network::None);
        assert!(
            Sandbox::profile(Profile::None)
                .grants(None, Path::new("/"), Path::new("/tmp"))
                .is_none()
        );
    }
}
