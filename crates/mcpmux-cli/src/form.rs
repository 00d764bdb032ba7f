//! A server's elicitation (`elicitation/create`, form mode) answered at the terminal: each
//! field of the requested schema asked by its title, typed (a number re-asked until it is one,
//! an enum as a numbered choice, a boolean as y/n), defaults shown and taken on Enter, required
//! fields insisted on, a secret read with echo off. Without a terminal the request is declined
//! with a word on stderr saying how to answer. The server's words (its message, titles,
//! descriptions, choices) are shown escaped like any server text.
//!
//! MCP names no marker for a secret field (servers must not ask for secrets in a form, which
//! some do anyway): `format: "password"` (the OpenAPI and VS Code convention) and JSON
//! Schema's `writeOnly: true` are both taken as one, and so is a field whose name or title
//! says password, passphrase, secret, token or API key — rmcp's client (3.9) drops
//! `writeOnly` and refuses `format: "password"`, so over a handshake-era session the name is
//! all that arrives. Hiding a field that was not secret costs nothing; showing one that was
//! cannot be undone.

use mcpmux::host::{ElicitationKind, ElicitationReply, ElicitationRequest, Elicitor};
use serde_json::{Map, Number, Value};

use crate::console::{self, Question};
use crate::output;

/// The most fields a form may have: a longer one is a server's mistake or a flood.
const MAX_FIELDS: usize = 64;

/// The elicitor of `call` and `run`: the person at the terminal, or a clean refusal.
pub fn elicitor() -> impl Elicitor + 'static {
    |request: ElicitationRequest| async move { answer(request).await }
}

/// What one field holds.
#[derive(Debug, Clone, PartialEq)]
enum Kind {
    Text {
        min: Option<u64>,
        max: Option<u64>,
    },
    Integer {
        min: Option<f64>,
        max: Option<f64>,
    },
    Number {
        min: Option<f64>,
        max: Option<f64>,
    },
    Boolean,
    /// Values with what to show for each.
    Choice(Vec<(Value, String)>),
}

/// One field of a form.
#[derive(Debug, Clone, PartialEq)]
struct Field {
    name: String,
    title: String,
    description: Option<String>,
    kind: Kind,
    default: Option<Value>,
    required: bool,
    secret: bool,
}

/// The fields of a requested schema, or why a terminal cannot fill it. In the order of their
/// names: the schema arrives as a JSON object, which keeps no other.
fn fields(schema: &Value) -> Result<Vec<Field>, String> {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Ok(Vec::new());
    };
    if properties.len() > MAX_FIELDS {
        return Err(format!(
            "the form has {} fields; at most {MAX_FIELDS} are asked",
            properties.len()
        ));
    }
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    properties
        .iter()
        .map(|(name, property)| field(name, property, required.contains(&name.as_str())))
        .collect()
}

fn field(name: &str, property: &Value, required: bool) -> Result<Field, String> {
    let text = |key: &str| {
        property
            .get(key)
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let number = |key: &str| property.get(key).and_then(Value::as_f64);
    let count = |key: &str| property.get(key).and_then(Value::as_u64);
    let kind = if let Some(choices) = choices(property) {
        Kind::Choice(choices)
    } else {
        match property.get("type").and_then(Value::as_str) {
            Some("string") => Kind::Text {
                min: count("minLength"),
                max: count("maxLength"),
            },
            Some("integer") => Kind::Integer {
                min: number("minimum"),
                max: number("maximum"),
            },
            Some("number") => Kind::Number {
                min: number("minimum"),
                max: number("maximum"),
            },
            Some("boolean") => Kind::Boolean,
            other => {
                return Err(format!(
                    "the field `{name}` is of type {}, which a terminal form does not take",
                    other.unwrap_or("(none)")
                ));
            }
        }
    };
    let title = text("title");
    let secret = text("format").as_deref() == Some("password")
        || property.get("writeOnly").and_then(Value::as_bool) == Some(true)
        || sounds_secret(name)
        || title.as_deref().is_some_and(sounds_secret);
    Ok(Field {
        name: name.to_string(),
        title: title.unwrap_or_else(|| name.to_string()),
        description: text("description"),
        kind,
        default: property.get("default").cloned(),
        required,
        secret,
    })
}

/// Whether a field's name or title says it holds a secret.
fn sounds_secret(name: &str) -> bool {
    let name: String = name
        .to_ascii_lowercase()
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .collect();
    ["password", "passphrase", "secret", "token", "apikey"]
        .iter()
        .any(|word| name.contains(word))
}

/// The choices of an enum field: `oneOf`/`anyOf` of `{const, title}` (titled), or `enum`
/// with `enumNames` (the older form) or without.
fn choices(property: &Value) -> Option<Vec<(Value, String)>> {
    let titled = property
        .get("oneOf")
        .or_else(|| property.get("anyOf"))
        .and_then(Value::as_array);
    if let Some(options) = titled {
        let choices: Vec<(Value, String)> = options
            .iter()
            .filter_map(|option| {
                let value = option.get("const")?.clone();
                let title = option
                    .get("title")
                    .and_then(Value::as_str)
                    .map(str::to_string)
                    .unwrap_or_else(|| show(&value));
                Some((value, title))
            })
            .collect();
        return (!choices.is_empty()).then_some(choices);
    }
    let values = property.get("enum").and_then(Value::as_array)?;
    let names = property.get("enumNames").and_then(Value::as_array);
    Some(
        values
            .iter()
            .enumerate()
            .map(|(i, value)| {
                let name = names
                    .and_then(|names| names.get(i))
                    .and_then(Value::as_str)
                    .map(str::to_string)
                    .unwrap_or_else(|| show(value));
                (value.clone(), name)
            })
            .collect(),
    )
}

/// A value as a person reads it: strings without quotes.
fn show(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

impl Field {
    /// The prompt line: title, description, choices' range or y/n, and the default.
    fn prompt(&self) -> String {
        let mut prompt = format!("  {}", self.title);
        if let Some(description) = &self.description {
            prompt.push_str(&format!(" ({description})"));
        }
        match &self.kind {
            Kind::Choice(choices) => prompt.push_str(&format!(" [1-{}]", choices.len())),
            Kind::Boolean => prompt.push_str(" [y/n]"),
            _ => {}
        }
        if let Some(default) = &self.default {
            let default = match (&self.kind, default) {
                (_, _) if self.secret => "(hidden)".to_string(),
                (Kind::Boolean, Value::Bool(true)) => "y".to_string(),
                (Kind::Boolean, Value::Bool(false)) => "n".to_string(),
                (_, value) => show(value),
            };
            prompt.push_str(&format!(" (default {default})"));
        } else if !self.required {
            prompt.push_str(" (optional)");
        }
        if self.secret {
            prompt.push_str(" (not shown)");
        }
        prompt.push_str(": ");
        prompt
    }

    /// The value typed as `answer`: `Ok(None)` leaves the field out (empty, not required, no
    /// default); `Err` says what is wrong, to ask again.
    fn read(&self, answer: &str) -> Result<Option<Value>, String> {
        let answer = if self.secret { answer } else { answer.trim() };
        if answer.is_empty() {
            return match (&self.default, self.required) {
                (Some(default), _) => Ok(Some(default.clone())),
                (None, true) => Err("required: please give a value".into()),
                (None, false) => Ok(None),
            };
        }
        let value = match &self.kind {
            Kind::Text { min, max } => {
                let length = answer.chars().count() as u64;
                if min.is_some_and(|min| length < min) || max.is_some_and(|max| length > max) {
                    return Err(format!(
                        "give {} characters",
                        range(min.map(|m| m as f64), max.map(|m| m as f64))
                    ));
                }
                Value::String(answer.to_string())
            }
            Kind::Integer { min, max } => {
                let number: i64 = answer
                    .parse()
                    .map_err(|_| format!("`{answer}` is not a whole number"))?;
                within(number as f64, *min, *max)?;
                Value::Number(number.into())
            }
            Kind::Number { min, max } => {
                let number = answer
                    .parse::<f64>()
                    .ok()
                    .and_then(Number::from_f64)
                    .ok_or_else(|| format!("`{answer}` is not a number"))?;
                within(number.as_f64().unwrap_or_default(), *min, *max)?;
                Value::Number(number)
            }
            Kind::Boolean => match answer.to_ascii_lowercase().as_str() {
                "y" | "yes" | "true" => Value::Bool(true),
                "n" | "no" | "false" => Value::Bool(false),
                _ => return Err("answer y or n".into()),
            },
            Kind::Choice(choices) => {
                let picked = answer
                    .parse::<usize>()
                    .ok()
                    .and_then(|n| n.checked_sub(1))
                    .and_then(|i| choices.get(i))
                    .or_else(|| choices.iter().find(|(value, _)| show(value) == answer));
                match picked {
                    Some((value, _)) => value.clone(),
                    None => return Err(format!("give a number from 1 to {}", choices.len())),
                }
            }
        };
        Ok(Some(value))
    }
}

fn within(number: f64, min: Option<f64>, max: Option<f64>) -> Result<(), String> {
    if min.is_some_and(|min| number < min) || max.is_some_and(|max| number > max) {
        return Err(format!("give a number {}", range(min, max)));
    }
    Ok(())
}

fn range(min: Option<f64>, max: Option<f64>) -> String {
    match (min, max) {
        (Some(min), Some(max)) => format!("from {min} to {max}"),
        (Some(min), None) => format!("of at least {min}"),
        (None, Some(max)) => format!("of at most {max}"),
        (None, None) => String::new(),
    }
}

/// Asks the person, or declines when no one can be asked.
async fn answer(request: ElicitationRequest) -> ElicitationReply {
    let ElicitationKind::Form { schema } = &request.kind else {
        // URL mode is not advertised by this elicitor: the hub does not pass it here.
        return ElicitationReply::Decline;
    };
    let server = request.server.as_str();
    if !console::available() {
        output::say!(
            "mcpmux: server `{server}` asked for input ({}); declined: there is no terminal to \
             ask on (run mcpmux on a terminal to answer)",
            output::first_line(&request.message, 200)
        );
        return ElicitationReply::Decline;
    }
    let fields = match fields(schema) {
        Ok(fields) if fields.iter().any(|f| f.secret) && !console::can_hide() => {
            Err("it asks for a secret, which cannot be typed unseen here".to_string())
        }
        other => other,
    };
    let fields = match fields {
        Ok(fields) => fields,
        Err(why) => {
            output::say!("mcpmux: server `{server}` asked for input; declined: {why}");
            return ElicitationReply::Decline;
        }
    };
    let question = Question::open().await;
    let reply = fill(&question, &request, &fields).await;
    if reply == ElicitationReply::Cancel {
        let again = if question.was_ended() {
            " (Ctrl-C again ends mcpmux)"
        } else {
            ""
        };
        output::say!("mcpmux: input for `{server}` cancelled{again}");
    }
    reply
}

async fn fill(
    question: &Question,
    request: &ElicitationRequest,
    fields: &[Field],
) -> ElicitationReply {
    output::say!(
        "mcpmux: server `{}` asks for input:\n  {}",
        request.server,
        request.message.replace('\n', "\n  ")
    );
    loop {
        let Some(choice) = question
            .line("Answer? [Y]es, [n]o (decline), [c]ancel: ", false)
            .await
        else {
            return ElicitationReply::Cancel;
        };
        match choice.trim().to_ascii_lowercase().as_str() {
            "" | "y" | "yes" => break,
            "n" | "no" => return ElicitationReply::Decline,
            "c" | "cancel" => return ElicitationReply::Cancel,
            _ => output::say!("  answer y, n or c"),
        }
    }
    let mut content = Map::new();
    for field in fields {
        if let Kind::Choice(choices) = &field.kind {
            for (i, (_, name)) in choices.iter().enumerate() {
                output::say!("    {}) {name}", i + 1);
            }
        }
        let value = loop {
            let Some(answer) = question.line(&field.prompt(), field.secret).await else {
                return ElicitationReply::Cancel;
            };
            match field.read(&answer) {
                Ok(value) => break value,
                Err(why) => output::say!("  {why}"),
            }
        };
        if let Some(value) = value {
            content.insert(field.name.clone(), value);
        }
    }
    ElicitationReply::Accept(content)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use serde_json::json;

    fn form() -> Vec<Field> {
        fields(&json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "title": "Name", "maxLength": 5},
                "age": {"type": "integer", "minimum": 0, "maximum": 150},
                "ratio": {"type": "number"},
                "color": {"type": "string", "oneOf": [{"const": "r", "title": "Red"}, {"const": "g"}]},
                "size": {"type": "string", "enum": ["s", "m"], "enumNames": ["Small", "Medium"]},
                "ok": {"type": "boolean", "default": true},
                "pin": {"type": "string", "format": "password"},
                "key": {"type": "string", "writeOnly": true},
                "hint": {"type": "string", "title": "Your API key"},
                "access_token": {"type": "string"}
            },
            "required": ["name", "age"]
        }))
        .unwrap()
    }

    fn by_name(name: &str) -> Field {
        form().into_iter().find(|f| f.name == name).unwrap()
    }

    #[test]
    fn each_kind_is_read_and_checked() {
        assert_eq!(by_name("name").read(" Ann "), Ok(Some(json!("Ann"))));
        assert!(by_name("name").read("Annabel").is_err());
        assert!(by_name("name").read("").is_err(), "required");
        assert_eq!(by_name("age").read("41"), Ok(Some(json!(41))));
        assert!(by_name("age").read("forty").is_err());
        assert!(by_name("age").read("4.5").is_err());
        assert!(by_name("age").read("151").is_err());
        assert_eq!(by_name("ratio").read("0.5"), Ok(Some(json!(0.5))));
        assert!(by_name("ratio").read("NaN").is_err());
        assert_eq!(by_name("ratio").read(""), Ok(None), "optional, no default");
        assert_eq!(by_name("color").read("1"), Ok(Some(json!("r"))));
        assert_eq!(by_name("color").read("g"), Ok(Some(json!("g"))));
        assert!(by_name("color").read("3").is_err());
        assert!(by_name("color").read("0").is_err());
        assert_eq!(by_name("size").read("2"), Ok(Some(json!("m"))));
        assert_eq!(by_name("ok").read(""), Ok(Some(json!(true))), "default");
        assert_eq!(by_name("ok").read("N"), Ok(Some(json!(false))));
        assert!(by_name("ok").read("maybe").is_err());
        // A secret is taken as typed, spaces included.
        assert_eq!(by_name("pin").read(" 12 "), Ok(Some(json!(" 12 "))));
    }

    #[test]
    fn titles_choices_defaults_and_secrets_are_read_from_the_schema() {
        assert_eq!(by_name("name").title, "Name");
        assert_eq!(by_name("age").title, "age");
        assert_eq!(
            by_name("color").kind,
            Kind::Choice(vec![(json!("r"), "Red".into()), (json!("g"), "g".into())])
        );
        assert_eq!(
            by_name("size").kind,
            Kind::Choice(vec![
                (json!("s"), "Small".into()),
                (json!("m"), "Medium".into())
            ])
        );
        assert!(by_name("pin").secret && by_name("key").secret && !by_name("name").secret);
        assert!(by_name("hint").secret && by_name("access_token").secret);
        assert_eq!(by_name("ok").prompt(), "  ok [y/n] (default y): ");
        assert_eq!(by_name("pin").prompt(), "  pin (optional) (not shown): ");
        assert_eq!(by_name("color").prompt(), "  color [1-2] (optional): ");
    }

    #[test]
    fn forms_a_terminal_cannot_fill_are_refused_with_the_reason() {
        let nested = json!({"properties": {"a": {"type": "object"}}});
        assert!(
            fields(&nested)
                .unwrap_err()
                .contains("`a` is of type object")
        );
        let properties: Map<String, Value> = (0..=MAX_FIELDS)
            .map(|i| (format!("f{i}"), json!({"type": "string"})))
            .collect();
        let flood = json!({"properties": properties});
        assert!(fields(&flood).unwrap_err().contains("at most 64"));
        assert_eq!(fields(&json!({})).unwrap(), Vec::new());
    }
}
