//! Byte sizes as people write them in `mcpmux.toml`: `102400`, `"100KiB"`, `"2MiB"`, `"500KB"`.
//!
//! Decimal (`KB`, `MB`, `GB`: powers of 1000) and binary (`KiB`, `MiB`, `GiB`: powers of 1024)
//! units, any case, and `B`; a bare integer is bytes. A text without a unit is refused, as a
//! duration's is: `"100"` in quotes is more likely a slip than a byte count.
//!
//! Hand-written rather than `bytesize`, on purpose: bytesize reads `"100"` as 100 bytes (the
//! slip refused here) and more units than these, so the unit check, the 1 GiB cap and the
//! message saying what to write would all stay around it; what it would replace is the
//! seven-row unit table.

use serde_json::Value;

use super::Dialect;
use super::value::kind_name;

/// What a size must look like, appended to every refusal.
const EXPECTED: &str = "write a whole number of bytes like 102400, or a number with a unit, like \"100KiB\", \"2MiB\" or \"500KB\"";

/// Largest size accepted: 1 GiB. A tool result is read into memory whole before it is cut, and a
/// stdio frame is capped at 64 MiB anyway; more than this is a typo, not a wish.
pub(crate) const MAX: usize = 1 << 30;

/// Reads a byte size (a TOML value, already turned into JSON); the error says what to write.
pub(crate) fn parse(value: &Value) -> Result<usize, String> {
    let bytes = match value {
        Value::Number(number) => match number.as_u64() {
            Some(bytes) => bytes,
            None if number.is_f64() => {
                return Err(format!(
                    "{number} is not a whole number of bytes: {EXPECTED}"
                ));
            }
            None => return Err(format!("{number} is negative: {EXPECTED}")),
        },
        Value::String(text) => parse_str(text)?,
        other => {
            return Err(format!(
                "expected a size, found {}: {EXPECTED}",
                kind_name(other, Dialect::Mcpmux)
            ));
        }
    };
    if bytes == 0 {
        return Err(format!(
            "{value} leaves no room for any result: give at least 1 byte; {EXPECTED}"
        ));
    }
    match usize::try_from(bytes) {
        Ok(bytes) if bytes <= MAX => Ok(bytes),
        _ => Err(format!(
            "{value} is larger than 1GiB: give at most \"1GiB\" (1073741824 bytes)"
        )),
    }
}

/// Reads `"<number><unit>"`; the number may have a fractional part (`"1.5MiB"`), rounded to
/// the nearest byte.
fn parse_str(text: &str) -> Result<u64, String> {
    let trimmed = text.trim();
    let split = trimmed
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(split);
    let scale: u64 = match unit.trim_start().to_ascii_lowercase().as_str() {
        "b" => 1,
        "kb" => 1000,
        "kib" => 1 << 10,
        "mb" => 1000 * 1000,
        "mib" => 1 << 20,
        "gb" => 1000 * 1000 * 1000,
        "gib" => 1 << 30,
        "" => return Err(format!("\"{text}\" has no unit: {EXPECTED}")),
        _ => return Err(format!("\"{text}\" is not a size: {EXPECTED}")),
    };
    let amount: f64 = number
        .parse()
        .map_err(|_| format!("\"{text}\" is not a size: {EXPECTED}"))?;
    // Whole amounts stay exact; only a fraction goes through floating point.
    if let Ok(whole) = number.parse::<u64>() {
        return Ok(whole.saturating_mul(scale));
    }
    let bytes = (amount * scale as f64).round();
    if bytes.is_finite() && bytes < u64::MAX as f64 {
        // In range and whole, checked just above.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        Ok(bytes as u64)
    } else {
        Ok(u64::MAX)
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
        assert_eq!(parse(&Value::from(102_400)), Ok(102_400));
        assert_eq!(parse(&s("100KiB")), Ok(102_400));
        assert_eq!(parse(&s("2MiB")), Ok(2 * 1024 * 1024));
        assert_eq!(parse(&s("500KB")), Ok(500_000));
        assert_eq!(parse(&s("1MB")), Ok(1_000_000));
        assert_eq!(parse(&s("1GiB")), Ok(MAX));
        assert_eq!(parse(&s("64 kib")), Ok(65_536));
        assert_eq!(parse(&s("1.5MiB")), Ok(1_572_864));
        assert_eq!(parse(&s("0.1KB")), Ok(100));
        assert_eq!(parse(&s("512B")), Ok(512));
    }

    #[test]
    fn refusals_say_what_to_write() {
        for bad in [
            "100", "100 KiBs", "big", "", "1.2.3KB", "-5KB", "KB", "10Kb/s",
        ] {
            let err = parse(&s(bad)).err().unwrap_or_default();
            assert!(err.contains("\"100KiB\""), "{bad:?}: {err}");
        }
        let err = parse(&Value::from(-1)).err().unwrap_or_default();
        assert!(err.starts_with("-1 is negative"), "{err}");
        let err = parse(&Value::from(1.5)).err().unwrap_or_default();
        assert!(
            err.starts_with("1.5 is not a whole number of bytes"),
            "{err}"
        );
        let err = parse(&Value::Bool(true)).err().unwrap_or_default();
        assert!(err.contains("found a boolean"), "{err}");
        let err = parse(&s("0KiB")).err().unwrap_or_default();
        assert!(err.contains("leaves no room"), "{err}");
        assert!(parse(&Value::from(0)).is_err());
    }

    #[test]
    fn absurd_numbers_do_not_panic() {
        for big in [
            "2GiB",
            "1e400KB",
            "99999999999999999999999999GiB",
            "18446744073709551615GiB",
        ] {
            let err = parse(&s(big)).err().unwrap_or_default();
            assert!(
                err.contains("larger than 1GiB") || err.contains("not a size"),
                "{big}: {err}"
            );
        }
        assert!(parse(&Value::from(u64::MAX)).is_err());
        assert_eq!(parse(&Value::from(MAX as u64)), Ok(MAX));
        assert!(parse(&Value::from(MAX as u64 + 1)).is_err());
    }
}
