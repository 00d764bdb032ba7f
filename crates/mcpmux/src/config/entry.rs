//! What one server entry becomes, whatever dialect it was written in: a whole server, an
//! overlay of options for a server another file defines, or a project entry left unread until
//! approved; and the entries of one file, in file order.
//!
//! The dialects read fields through `fields.rs` and build these values; `mod.rs` merges them.
//! Knows nothing of which files exist or how entries are merged.

use std::time::Duration;

use serde_json::Value;

use super::fields::Context;
use super::options::{Invalid, OptionsOverlay};
use super::trust::ProjectEntry;
use super::{ConfigError, PolicyRules, ServerSpec};

impl Context<'_> {
    /// Whether the raw entry `value` of `name` may be read (expanded, validated, started). An
    /// unapproved project entry is recorded as [`Entry::Untrusted`] instead, untouched.
    pub fn admit(&self, name: &str, value: &Value, file: &mut FileEntries) -> bool {
        let Some(gate) = self.gate else {
            return true;
        };
        let Some(entry) = gate.decide(name, self.file, self.dialect, value) else {
            return true;
        };
        file.project.push(entry.clone());
        if entry.approved {
            return true;
        }
        file.entries
            .push((name.to_owned(), Ok(Entry::Untrusted(entry))));
        false
    }
}

/// What a dialect found in one file, in file order.
#[derive(Default)]
pub(crate) struct FileEntries {
    /// Each entry under its name, usable or not.
    pub entries: Vec<(String, Result<Entry, ConfigError>)>,
    /// Problems outside any named entry (unknown top-level key, empty name, a bad `[policy]`
    /// entry); the file still loads.
    pub problems: Vec<ConfigError>,
    /// The file's `[policy]` rules (`mcpmux.toml` only), its bad entries left out.
    pub policy: PolicyRules,
    /// The server entries of a project-level file, approved or not.
    pub project: Vec<ProjectEntry>,
    /// The file's top-level `[sandbox]` defaults (`mcpmux.toml` only).
    pub sandbox: Option<super::sandbox::Defaults>,
    /// The file's `[serve]` settings (`mcpmux.toml` only).
    pub serve: Option<super::serve::ServeSettings>,
}

/// One usable entry.
// A config holds a handful of entries, each moved once: boxing would buy nothing.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Entry {
    /// A whole server: replaces any earlier entry of that name.
    Define(ServerSpec),
    /// Options only (`mcpmux.toml`): adjusts the server an earlier file defines.
    Adjust(Overlay),
    /// A project-level server not approved: not read further, listed as `untrusted`.
    Untrusted(ProjectEntry),
}

/// Per-server options that can be set on a definition or adjusted by an overlay.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct Overlay {
    /// `enabled`.
    pub enabled: Option<bool>,
    /// `required`.
    pub required: Option<bool>,
    /// `startup_timeout`.
    pub startup_timeout: Option<Duration>,
    /// `call_timeout`.
    pub call_timeout: Option<Duration>,
    /// `probe_timeout`.
    pub probe_timeout: Option<Duration>,
    /// `max_retries`, `backoff`, `tools` and the rest of [`ServerSpec::options`].
    pub options: OptionsOverlay,
}

impl Overlay {
    /// Sets on `spec` every option this overlay holds, leaving the others as they are. An
    /// overlay that does not fit the server (`backoff.initial` above its `backoff.max`) is
    /// refused whole and changes nothing.
    pub fn apply(self, spec: &mut ServerSpec) -> Result<(), Invalid> {
        let Overlay {
            enabled,
            required,
            startup_timeout,
            call_timeout,
            probe_timeout,
            options,
        } = self;
        options.apply(&mut spec.options)?;
        if let Some(enabled) = enabled {
            spec.enabled = enabled;
        }
        if let Some(required) = required {
            spec.required = required;
        }
        if let Some(timeout) = startup_timeout {
            spec.startup_timeout = timeout;
        }
        if let Some(timeout) = call_timeout {
            spec.call_timeout = timeout;
        }
        if let Some(timeout) = probe_timeout {
            spec.probe_timeout = timeout;
        }
        Ok(())
    }
}
