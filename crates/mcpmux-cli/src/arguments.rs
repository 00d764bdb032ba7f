//! The arguments `mcpmux call` is given: a JSON object on the command line, `-` to read it from
//! stdin, none for `{}`; and `--arg KEY=VALUE` pairs, typed from the tool's input schema (a
//! number, a boolean, JSON for an object or array, a string otherwise). Anything else is refused
//! with an example of the right shape.

use anyhow::Context;

/// The call's arguments read from `text` (or stdin for `-`); an error says what shape is wanted.
/// Stdin is read on a blocking thread: `call` runs on a one-thread runtime, whose servers must
/// go on starting while the arguments are still being typed or piped.
pub async fn parse(text: Option<&str>) -> anyhow::Result<serde_json::Value> {
    let text = match text {
        None => return Ok(serde_json::json!({})),
        Some("-") => tokio::task::spawn_blocking(|| {
            let mut buf = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin(), &mut buf).map(|_| buf)
        })
        .await
        .context("cannot read arguments from stdin")?
        .context("cannot read arguments from stdin")?,
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

/// `arguments` with each `--arg` pair set in it (a pair wins over the JSON's key), its value
/// typed as `schema` (the tool's input schema, when known) says that property is.
pub fn with_pairs(
    mut arguments: serde_json::Value,
    pairs: &[(String, String)],
    schema: Option<&serde_json::Value>,
) -> anyhow::Result<serde_json::Value> {
    let properties = schema.and_then(|s| s.get("properties"));
    for (key, text) in pairs {
        let property = properties.and_then(|p| p.get(key));
        let value = typed(property, text).with_context(|| {
            format!(
                "--arg {key}={text}: the tool's schema says `{key}` is {}",
                expected(property)
            )
        })?;
        if let Some(object) = arguments.as_object_mut() {
            object.insert(key.clone(), value);
        }
    }
    Ok(arguments)
}

/// The JSON types `property` admits (its `type`, one or a list); none when it says none.
fn types(property: Option<&serde_json::Value>) -> Vec<&str> {
    match property.and_then(|p| p.get("type")) {
        Some(serde_json::Value::String(t)) => vec![t.as_str()],
        Some(serde_json::Value::Array(list)) => list.iter().filter_map(|t| t.as_str()).collect(),
        _ => Vec::new(),
    }
}

/// What the schema wants, for an error: `a number`, `one of boolean, null`.
fn expected(property: Option<&serde_json::Value>) -> String {
    match types(property).as_slice() {
        [one] => format!("a JSON {one}"),
        many => format!("one of {}", many.join(", ")),
    }
}

/// `text` as the first type `property` admits that it parses as; a string when the schema
/// admits strings or says nothing; none when it admits nothing `text` is.
fn typed(property: Option<&serde_json::Value>, text: &str) -> Option<serde_json::Value> {
    let types = types(property);
    if types.is_empty() {
        return Some(serde_json::Value::String(text.to_string()));
    }
    for kind in &types {
        let value = match *kind {
            "integer" => text
                .parse::<i64>()
                .ok()
                .map(serde_json::Value::from)
                .or_else(|| text.parse::<u64>().ok().map(serde_json::Value::from)),
            "number" => serde_json::from_str::<serde_json::Value>(text)
                .ok()
                .filter(serde_json::Value::is_number),
            "boolean" => match text {
                "true" => Some(serde_json::Value::Bool(true)),
                "false" => Some(serde_json::Value::Bool(false)),
                _ => None,
            },
            "null" => (text == "null").then_some(serde_json::Value::Null),
            "object" => serde_json::from_str::<serde_json::Value>(text)
                .ok()
                .filter(serde_json::Value::is_object),
            "array" => serde_json::from_str::<serde_json::Value>(text)
                .ok()
                .filter(serde_json::Value::is_array),
            _ => None,
        };
        if value.is_some() {
            return value;
        }
    }
    types
        .contains(&"string")
        .then(|| serde_json::Value::String(text.to_string()))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn arg_values_are_typed_from_the_schema() {
        let schema = json!({"properties": {
            "n": {"type": "integer"}, "x": {"type": "number"}, "b": {"type": "boolean"},
            "o": {"type": "object"}, "a": {"type": "array"}, "s": {"type": "string"},
            "maybe": {"type": ["integer", "null"]}, "either": {"type": ["integer", "string"]},
        }});
        let got = with_pairs(
            json!({"s": "from json", "kept": 1}),
            &pairs(&[
                ("n", "-3"),
                ("x", "2.5"),
                ("b", "true"),
                ("o", r#"{"k":[1]}"#),
                ("a", "[1,2]"),
                ("s", "42"),
                ("maybe", "null"),
                ("either", "abc"),
                ("free", "true"),
            ]),
            Some(&schema),
        )
        .unwrap();
        assert_eq!(
            got,
            json!({"n": -3, "x": 2.5, "b": true, "o": {"k": [1]}, "a": [1, 2], "s": "42",
                   "maybe": null, "either": "abc", "free": "true", "kept": 1})
        );
    }

    #[test]
    fn a_value_the_schema_does_not_admit_is_refused_with_what_it_wants() {
        let schema = json!({"properties": {"n": {"type": "integer"}, "b": {"type": "boolean"},
                                          "o": {"type": "object"}}});
        for (key, text, wanted) in [
            ("n", "2.5", "a JSON integer"),
            ("b", "yes", "a JSON boolean"),
            ("o", "[1]", "a JSON object"),
        ] {
            let error = with_pairs(json!({}), &pairs(&[(key, text)]), Some(&schema)).unwrap_err();
            assert!(format!("{error:#}").contains(wanted), "{error:#}");
        }
    }

    #[test]
    fn without_a_schema_every_value_is_a_string() {
        let got = with_pairs(json!({}), &pairs(&[("n", "1"), ("j", "{}")]), None).unwrap();
        assert_eq!(got, json!({"n": "1", "j": "{}"}));
    }

    #[test]
    fn key_value_keeps_later_equals_signs_and_refuses_no_key() {
        assert_eq!(key_value("a=b=c").unwrap(), ("a".into(), "b=c".into()));
        assert!(key_value("=x").is_err());
        assert!(key_value("plain").is_err());
    }
}
