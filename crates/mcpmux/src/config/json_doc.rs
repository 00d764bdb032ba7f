//! A JSON document that keeps its keys in file order, for editing another tool's file.
//!
//! serde_json's `Map` sorts keys unless its `preserve_order` feature is on, and that feature
//! is workspace-wide: it would change the order of every map the library and rmcp build (and
//! the pinned export snapshots). Editing `.mcp.json` only needs order kept in the one file
//! being rewritten, so this small tree does it. A leaf of `config/`.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};

/// One JSON value; objects keep their keys in the order they were written.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Doc {
    Null,
    Bool(bool),
    Number(serde_json::Number),
    String(String),
    Array(Vec<Doc>),
    Object(Vec<(String, Doc)>),
}

impl Doc {
    /// The value under `key` of an object (the last one, as JSON parsers read duplicates).
    pub fn get_mut(&mut self, key: &str) -> Option<&mut Doc> {
        match self {
            Doc::Object(entries) => entries
                .iter_mut()
                .rev()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v),
            _ => None,
        }
    }

    /// Whether an object has `key`.
    pub fn contains(&self, key: &str) -> bool {
        matches!(self, Doc::Object(entries) if entries.iter().any(|(k, _)| k == key))
    }
}

impl From<serde_json::Value> for Doc {
    fn from(value: serde_json::Value) -> Self {
        match value {
            serde_json::Value::Null => Doc::Null,
            serde_json::Value::Bool(b) => Doc::Bool(b),
            serde_json::Value::Number(n) => Doc::Number(n),
            serde_json::Value::String(s) => Doc::String(s),
            serde_json::Value::Array(items) => {
                Doc::Array(items.into_iter().map(Doc::from).collect())
            }
            serde_json::Value::Object(map) => {
                Doc::Object(map.into_iter().map(|(k, v)| (k, Doc::from(v))).collect())
            }
        }
    }
}

impl Serialize for Doc {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Doc::Null => serializer.serialize_unit(),
            Doc::Bool(b) => serializer.serialize_bool(*b),
            Doc::Number(n) => n.serialize(serializer),
            Doc::String(s) => serializer.serialize_str(s),
            Doc::Array(items) => {
                let mut seq = serializer.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
            Doc::Object(entries) => {
                let mut map = serializer.serialize_map(Some(entries.len()))?;
                for (key, value) in entries {
                    map.serialize_entry(key, value)?;
                }
                map.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for Doc {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(DocVisitor)
    }
}

struct DocVisitor;

impl<'de> Visitor<'de> for DocVisitor {
    type Value = Doc;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E: de::Error>(self) -> Result<Doc, E> {
        Ok(Doc::Null)
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Doc, E> {
        Ok(Doc::Bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Doc, E> {
        Ok(Doc::Number(v.into()))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Doc, E> {
        Ok(Doc::Number(v.into()))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Doc, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Doc::Null, Doc::Number))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Doc, E> {
        Ok(Doc::String(v.to_owned()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Doc, E> {
        Ok(Doc::String(v))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Doc, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Doc::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Doc, A::Error> {
        let mut entries = Vec::new();
        while let Some((key, value)) = map.next_entry::<String, Doc>()? {
            entries.push((key, value));
        }
        Ok(Doc::Object(entries))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn keys_keep_their_file_order_through_a_round_trip() {
        let text = r#"{"zeta":1,"alpha":{"y":true,"b":[1.5,"x",null]},"mid":"m"}"#;
        let doc: Doc = serde_json::from_str(text).unwrap();
        assert_eq!(serde_json::to_string(&doc).unwrap(), text);
    }
}
