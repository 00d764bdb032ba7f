//! Durations as people write them in `mcpmux.toml` (timeouts, backoff delays, grace periods):
//! `"500ms"`, `"30s"`, `"10m"`, or whole seconds.
//!
//! Only the three units these need; anything else is refused with an example, because a
//! silently misread timeout (`"30"` as milliseconds?) is worse than an error.
//!
//! Hand-written rather than `humantime`, on purpose: humantime refuses fractions (`"1.5s"`,
//! written in configs and tested below) and accepts units a timeout should not take (`"1y"`,
//! `"2months"`), and its errors do not say what to write.

use std::time::Duration;

use serde_json::Value;

use super::Dialect;
use super::value::kind_name;

/// What a duration must look like, appended to every refusal.
const EXPECTED: &str = "write a positive number with a unit, like \"500ms\", \"30s\" or \"2m\", or a whole number of seconds like 120";

/// Longest duration accepted. A day is already absurd for a tool call; the cap keeps
/// `Instant + timeout` from overflowing wherever the value is used.
const MAX: Duration = Duration::from_secs(24 * 60 * 60);

/// Reads a duration (a TOML value, already turned into JSON); the error says what to write.
pub(crate) fn parse(value: &Value) -> Result<Duration, String> {
    let duration = parse_any(value)?;
    if duration > MAX {
        return Err(format!(
            "{value} is longer than a day: give at most \"1440m\" (86400 seconds)"
        ));
    }
    Ok(duration)
}

fn parse_any(value: &Value) -> Result<Duration, String> {
    match value {
        Value::Number(number) => match number.as_u64() {
            Some(0) | None => Err(format!("{number} is not a usable duration: {EXPECTED}")),
            Some(secs) => Ok(Duration::from_secs(secs)),
        },
        Value::String(text) => parse_str(text),
        other => Err(format!(
            "expected a duration, found {}: {EXPECTED}",
            kind_name(other, Dialect::Mcpmux)
        )),
    }
}

/// Reads `"<number><unit>"`; the number may have a fractional part (`"1.5s"`).
fn parse_str(text: &str) -> Result<Duration, String> {
    let trimmed = text.trim();
    let split = trimmed
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(split);
    let scale = match unit.trim_start() {
        "ms" => 0.001,
        "s" => 1.0,
        "m" => 60.0,
        "" => {
            return Err(format!("\"{text}\" has no unit: {EXPECTED}"));
        }
        _ => return Err(format!("\"{text}\" is not a duration: {EXPECTED}")),
    };
    let amount: f64 = number
        .parse()
        .map_err(|_| format!("\"{text}\" is not a duration: {EXPECTED}"))?;
    match Duration::try_from_secs_f64(amount * scale) {
        Ok(duration) if !duration.is_zero() => Ok(duration),
        _ => Err(format!("\"{text}\" is not a usable duration: {EXPECTED}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(text: &str) -> Value {
        Value::String(text.into())
    }

    #[test]
    fn units_and_integers() {
        assert_eq!(parse(&s("500ms")), Ok(Duration::from_millis(500)));
        assert_eq!(parse(&s("30s")), Ok(Duration::from_secs(30)));
        assert_eq!(parse(&s("2m")), Ok(Duration::from_secs(120)));
        assert_eq!(parse(&s("10m")), Ok(Duration::from_secs(600)));
        assert_eq!(parse(&s("1.5s")), Ok(Duration::from_millis(1500)));
        assert_eq!(parse(&s(" 3 s ")), Ok(Duration::from_secs(3)));
        assert_eq!(parse(&Value::from(120)), Ok(Duration::from_secs(120)));
    }

    #[test]
    fn refusals_say_what_to_write() {
        for bad in ["30", "30 sec", "fast", "", "0s", "-1s", "1.2.3s", "1h"] {
            let err = parse(&s(bad)).err().unwrap_or_default();
            assert!(err.contains("\"30s\""), "{bad:?}: {err}");
        }
        assert!(parse(&Value::from(0)).is_err());
        assert!(parse(&Value::from(-5)).is_err());
        let err = parse(&Value::Bool(true)).err().unwrap_or_default();
        assert!(err.contains("found a boolean"), "{err}");
        assert!(parse(&Value::from(1.5)).is_err());
    }

    #[test]
    fn absurd_numbers_do_not_panic() {
        assert!(parse(&Value::from(u64::MAX)).is_err());
        assert!(parse(&s("1441m")).is_err());
        assert_eq!(parse(&s("1440m")), Ok(Duration::from_secs(86400)));
        assert!(parse(&s("1e400s")).is_err());
        assert!(parse(&s("99999999999999999999999999999m")).is_err());
    }
}
