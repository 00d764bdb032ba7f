//! The arguments `mcpmux call` is given: a JSON object on the command line, `-` to read it from
//! stdin, none for `{}`; and `--arg KEY=VALUE` pairs. Anything else is refused with an example of
//! the right shape.

use anyhow::Context;

/// The call's arguments read from `text` (or stdin for `-`); an error says what shape is wanted.
pub fn parse(text: Option<&str>) -> anyhow::Result<serde_json::Value> {
    let text = match text {
        None => return Ok(serde_json::json!({})),
        Some("-") => {
            let mut buf = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin(), &mut buf)
                .context("cannot read arguments from stdin")?;
            buf
        }
        Some(text) => text.to_string(),
    };
    let value: serde_json::Value = serde_json::from_str(&text).with_context(|| {
        format!(
            "arguments are not valid JSON (expected an object like '{{\"text\":\"hi\"}}'): {text}"
        )
    })?;
    if !value.is_object() {
        anyhow::bail!("arguments must be a JSON object, like '{{\"text\":\"hi\"}}'");
    }
    Ok(value)
}

/// One `--arg KEY=VALUE` (the value may hold `=`; an empty key is refused).
pub fn key_value(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((key, value)) if !key.is_empty() => Ok((key.to_string(), value.to_string())),
        _ => Err(format!("expected KEY=VALUE, like `name=Ada`: {text}")),
    }
}
