//! Another tool's OAuth object (Cursor's `auth`, Gemini CLI's `oauth`) read into mcpmux's own
//! OAuth settings: each key that means something in ours is renamed and read as ours is
//! (`${VAR}`s in the dialect's syntax, the same checks), every other one reported as not
//! honoured. Knows nothing of which tool wrote it; each dialect gives its table of keys.

use serde_json::{Map, Value};

use crate::config::auth::RawAuth;
use crate::config::fields::Fields;
use crate::config::{AuthSpec, ConfigError, TransportSpec};

/// Most keys of one OAuth object reported as not honoured.
const MAX_REPORTED: usize = 10;

/// What one key of another tool's OAuth object is in mcpmux.
pub(crate) enum Key {
    /// The key of mcpmux's `oauth` block with the same meaning.
    Ours(&'static str),
    /// Not honoured: why, and what to do instead.
    Unhonoured(&'static str),
}

/// The OAuth object `field` of one entry (already taken out of it), its keys renamed by `keys`.
/// A stdio server has no OAuth: the object is reported and ignored.
pub(crate) fn read(
    fields: &Fields<'_>,
    field: &str,
    value: Value,
    keys: &[(&str, Key)],
    transport: &TransportSpec,
    warnings: &mut Vec<ConfigError>,
) -> Result<AuthSpec, ConfigError> {
    let Value::Object(theirs) = value else {
        return Err(fields.invalid(
            Some(field),
            "expected an object of OAuth client settings (client id, secret, scopes)",
        ));
    };
    if matches!(transport, TransportSpec::Stdio { .. }) {
        warnings.push(fields.unhonoured(
            field,
            "OAuth applies to a remote server (\"url\"); this one runs a command",
        ));
        return Ok(AuthSpec::default());
    }
    let mut ours = Map::new();
    let mut renamed = Vec::new();
    let mut reported = 0;
    for (key, value) in theirs {
        if value.is_null() {
            continue;
        }
        let reason = match keys.iter().find(|(known, _)| *known == key) {
            Some((_, Key::Ours(name))) => {
                ours.insert((*name).to_owned(), value);
                renamed.push((*name, key));
                continue;
            }
            Some((_, Key::Unhonoured(reason))) => *reason,
            None => "mcpmux does not know this OAuth setting",
        };
        reported += 1;
        if reported <= MAX_REPORTED {
            let key: String = key
                .chars()
                .take(60)
                .flat_map(char::escape_default)
                .collect();
            warnings.push(fields.unhonoured(&format!("{field}.{key}"), reason));
        }
    }
    let raw = RawAuth {
        headers_helper: None,
        oauth: Some(Value::Object(ours)),
    };
    // A bad value is named as the person wrote it (`auth.CLIENT_ID`), not by our key.
    fields
        .auth(raw, false)
        .map_err(|error| theirs_named(error, field, &renamed))
}

/// `error` with a field of our `oauth` block named as the other tool's file names it.
fn theirs_named(error: ConfigError, field: &str, renamed: &[(&str, String)]) -> ConfigError {
    let rename = |ours: &str| -> Option<String> {
        let rest = ours.strip_prefix("oauth.")?;
        renamed.iter().find_map(|(name, theirs)| {
            let tail = rest.strip_prefix(name)?;
            (tail.is_empty() || tail.starts_with('[')).then(|| format!("{field}.{theirs}{tail}"))
        })
    };
    match error {
        ConfigError::InvalidValue {
            file,
            server,
            field: Some(ours),
            message,
        } => ConfigError::InvalidValue {
            file,
            server,
            field: Some(rename(&ours).unwrap_or(ours)),
            message,
        },
        ConfigError::UnsetVariable {
            file,
            server,
            field: ours,
            variable,
        } => ConfigError::UnsetVariable {
            file,
            server,
            field: rename(&ours).unwrap_or(ours),
            variable,
        },
        ConfigError::MissingSecret {
            file,
            server,
            field: ours,
            secret,
            store,
        } => ConfigError::MissingSecret {
            file,
            server,
            field: rename(&ours).unwrap_or(ours),
            secret,
            store,
        },
        other => other,
    }
}
