//! `[serve]` in `mcpmux.toml`: how `mcpmux serve` serves when its flags do not say — tool
//! search (`search = true`) and the tools it always lists (`pin = [...]`, the patterns of
//! `--pin`). Strict like the rest of the file: an unknown key, a wrong type or an oversized
//! list is refused with what to write instead.

use serde_json::Value;

/// Most patterns `pin` may hold, and most bytes of one: a pin names a tool or a server, and a
/// list past this is a mistake, or a hostile file making every listing slow.
const MAX_PINS: usize = 256;
const MAX_PIN_BYTES: usize = 256;

/// Keys of `[serve]`.
const KEYS: &[&str] = &["search", "pin"];

/// `[serve]`: how `mcpmux serve` serves by default.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServeSettings {
    /// Serve tool search (`mcpmux serve --search`).
    pub search: bool,
    /// Tools always listed under search (`--pin`): exposed or raw names with `*` and `?`, or
    /// `SERVER:*`.
    pub pin: Vec<String>,
}

/// Reads a `[serve]` table.
pub(crate) fn settings(value: Value) -> Result<ServeSettings, String> {
    let Value::Object(mut table) = value else {
        return Err("expected a table: write [serve] with search = true".to_owned());
    };
    if let Some(key) = table.keys().find(|key| !KEYS.contains(&key.as_str())) {
        return Err(format!("unknown key `{key}`: valid keys are search, pin"));
    }
    let mut settings = ServeSettings::default();
    match table.remove("search") {
        None => {}
        Some(Value::Bool(search)) => settings.search = search,
        Some(_) => return Err("search: expected true or false".to_owned()),
    }
    match table.remove("pin") {
        None => {}
        Some(Value::Array(pins)) if pins.len() <= MAX_PINS => {
            for pin in pins {
                match pin {
                    Value::String(pin) if !pin.is_empty() && pin.len() <= MAX_PIN_BYTES => {
                        settings.pin.push(pin);
                    }
                    _ => {
                        return Err(format!(
                            "pin: each entry is a tool name pattern or SERVER:* (a string of 1 \
                             to {MAX_PIN_BYTES} bytes)"
                        ));
                    }
                }
            }
        }
        Some(Value::Array(_)) => return Err(format!("pin: at most {MAX_PINS} patterns")),
        Some(_) => {
            return Err(
                "pin: expected a list, as in pin = [\"mcp__github__*\", \"time:*\"]".to_owned(),
            );
        }
    }
    Ok(settings)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn search_and_pins_are_read() {
        let read = settings(json!({"search": true, "pin": ["time:*", "mcp__a__*"]})).unwrap();
        assert!(read.search);
        assert_eq!(read.pin, ["time:*", "mcp__a__*"]);
    }

    #[test]
    fn an_unknown_key_a_wrong_type_or_too_many_pins_is_refused() {
        assert!(
            settings(json!({"serach": true}))
                .unwrap_err()
                .contains("unknown key `serach`")
        );
        assert!(
            settings(json!({"search": "yes"}))
                .unwrap_err()
                .contains("true or false")
        );
        assert!(
            settings(json!({"pin": "time:*"}))
                .unwrap_err()
                .contains("expected a list")
        );
        assert!(
            settings(json!({"pin": [1]}))
                .unwrap_err()
                .contains("pattern")
        );
        let many: Vec<String> = (0..=MAX_PINS).map(|i| format!("t{i}")).collect();
        assert!(
            settings(json!({"pin": many}))
                .unwrap_err()
                .contains("at most")
        );
    }
}
