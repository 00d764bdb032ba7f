//! Bounds on the work one tool schema may cost before anything compiles, validates or exports
//! it. A server's schema is hostile input: a `$ref` that leads back to itself without
//! descending into the value (`{"allOf": [{"$ref": "#"}]}`) makes every recursive walker —
//! jsonschema's validator, our provider export — recurse until the stack overflows, and a
//! chain of definitions that each refer to the next twice expands to 2^n subschemas. This
//! module finds both with a memoised, bounded walk and says why in words; what it admits is
//! safe for the recursive code after it. Knows nothing of tools, servers or providers.

use std::collections::HashMap;

use serde_json::Value;

/// Deepest JSON nesting of one schema document: serde_json's own recursion limit, so any
/// schema that arrived over the wire fits; only a schema built in-process can be deeper.
pub const MAX_SCHEMA_DEPTH: usize = 128;

/// Most JSON values in one schema document (the largest real tool schemas seen have a few
/// thousand; this leaves room while keeping every walk over it cheap).
pub const MAX_SCHEMA_NODES: usize = 200_000;

/// Most subschemas applied to one value once `$ref`, `allOf`, `anyOf`, `oneOf`, `not`,
/// `if`/`then`/`else` and `dependentSchemas` are unfolded (real schemas stay in the tens).
pub const MAX_IN_PLACE: u64 = 10_000;

/// Most unfolded subschemas over the whole schema (every schema position counted with its
/// in-place unfolding): bounds compile time and the provider exports.
pub const MAX_UNFOLDED: u64 = 200_000;

/// Longest chain of in-place references (`$ref` → `allOf` → `$ref` …) on one value: every
/// link is a stack frame in the validator.
pub const MAX_IN_PLACE_CHAIN: usize = 64;

/// Keywords whose subschemas apply to the same value (no descent into the instance).
const IN_PLACE_ONE: &[&str] = &["not", "if", "then", "else"];
const IN_PLACE_MANY: &[&str] = &["allOf", "anyOf", "oneOf"];
const IN_PLACE_MAP: &[&str] = &["dependentSchemas", "dependencies"];
const REFS: &[&str] = &["$ref", "$dynamicRef", "$recursiveRef"];

/// Keywords whose subschemas apply to parts of the value (or are definitions).
const DESCEND_ONE: &[&str] = &[
    "additionalProperties",
    "additionalItems",
    "items",
    "contains",
    "propertyNames",
    "unevaluatedProperties",
    "unevaluatedItems",
    "contentSchema",
];
const DESCEND_MANY: &[&str] = &["prefixItems", "items"];
const DESCEND_MAP: &[&str] = &["properties", "patternProperties", "$defs", "definitions"];

/// Why a schema cannot be used, in words that name the place.
pub type Reason = String;

/// Checks that `schema` stays within every bound above; the reason when it does not.
pub fn check(schema: &Value) -> Result<(), Reason> {
    let index = Index::build(schema)?;
    let mut walk = Walk {
        index: &index,
        root: schema,
        cost: HashMap::new(),
        visiting: Vec::new(),
        total: 0,
    };
    walk.positions(schema, 0)
}

/// Every anchor and `$id` of a document, and where each object sits (for messages).
struct Index<'a> {
    anchors: HashMap<&'a str, &'a Value>,
    ids: HashMap<&'a str, &'a Value>,
    pointers: HashMap<usize, String>,
}

fn address(value: &Value) -> usize {
    std::ptr::from_ref(value) as usize
}

impl<'a> Index<'a> {
    /// One iterative pass: depth and size bounds, anchors, ids and pointers.
    fn build(schema: &'a Value) -> Result<Self, Reason> {
        let mut index = Index {
            anchors: HashMap::new(),
            ids: HashMap::new(),
            pointers: HashMap::new(),
        };
        let mut nodes = 0usize;
        let mut stack: Vec<(&Value, String, usize)> = vec![(schema, String::new(), 1)];
        while let Some((value, pointer, depth)) = stack.pop() {
            nodes += 1;
            if nodes > MAX_SCHEMA_NODES {
                return Err(format!(
                    "the schema has more than {MAX_SCHEMA_NODES} JSON values"
                ));
            }
            if depth > MAX_SCHEMA_DEPTH {
                return Err(format!(
                    "the schema is nested deeper than {MAX_SCHEMA_DEPTH} levels (at `{}`)",
                    shorten(&pointer)
                ));
            }
            match value {
                Value::Object(map) => {
                    for key in ["$anchor", "$dynamicAnchor"] {
                        if let Some(Value::String(name)) = map.get(key) {
                            index.anchors.insert(name.as_str(), value);
                        }
                    }
                    for key in ["$id", "id"] {
                        if let Some(Value::String(id)) = map.get(key) {
                            index.ids.insert(id.trim_end_matches('#'), value);
                        }
                    }
                    for (k, v) in map {
                        if v.is_object() || v.is_array() {
                            stack.push((v, format!("{pointer}/{}", escape(k)), depth + 1));
                        } else {
                            nodes += 1;
                        }
                    }
                    index.pointers.insert(address(value), pointer);
                }
                Value::Array(items) => {
                    for (i, v) in items.iter().enumerate() {
                        if v.is_object() || v.is_array() {
                            stack.push((v, format!("{pointer}/{i}"), depth + 1));
                        } else {
                            nodes += 1;
                        }
                    }
                }
                _ => {}
            }
        }
        Ok(index)
    }

    fn pointer(&self, value: &Value) -> String {
        match self.pointers.get(&address(value)) {
            Some(p) if p.is_empty() => "the root".to_string(),
            Some(p) => format!("`{}`", shorten(p)),
            None => "a subschema".to_string(),
        }
    }
}

fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// A pointer cut to a readable length (a deep one would flood the message).
fn shorten(pointer: &str) -> String {
    const MAX: usize = 120;
    // Keys are the server's: no control character reaches a terminal through a message.
    let pointer: String = pointer
        .chars()
        .flat_map(|c| {
            let escaped: Vec<char> = if c.is_control() {
                c.escape_unicode().collect()
            } else {
                vec![c]
            };
            escaped
        })
        .collect();
    let pointer = pointer.as_str();
    if pointer.chars().count() <= MAX {
        pointer.to_string()
    } else {
        let tail: String = pointer
            .chars()
            .rev()
            .take(MAX)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        format!("…{tail}")
    }
}

/// The schema a reference points at, when it is inside this document.
fn resolve<'a>(root: &'a Value, index: &Index<'a>, reference: &str) -> Option<&'a Value> {
    let (base, fragment) = match reference.split_once('#') {
        Some((base, fragment)) => (base, fragment),
        None => (reference, ""),
    };
    let document = if base.is_empty() {
        root
    } else {
        index.ids.get(base).copied()?
    };
    if fragment.is_empty() {
        return Some(document);
    }
    if fragment.starts_with('/') {
        return document.pointer(&percent_decode(fragment));
    }
    index
        .anchors
        .get(percent_decode(fragment).as_str())
        .copied()
}

struct Walk<'a, 'i> {
    index: &'i Index<'a>,
    root: &'a Value,
    /// In-place cost of each schema object already measured.
    cost: HashMap<usize, u64>,
    /// The in-place chain being measured now (a schema met again on it is a cycle).
    visiting: Vec<&'a Value>,
    total: u64,
}

impl<'a> Walk<'a, '_> {
    /// Measures every schema position of the document (depth bounded by `Index::build`).
    fn positions(&mut self, schema: &'a Value, depth: usize) -> Result<(), Reason> {
        let Value::Object(map) = schema else {
            return Ok(());
        };
        if depth > MAX_SCHEMA_DEPTH {
            return Ok(());
        }
        let cost = self.in_place(schema)?;
        self.total = self.total.saturating_add(cost);
        if self.total > MAX_UNFOLDED {
            return Err(format!(
                "the schema unfolds to more than {MAX_UNFOLDED} subschemas once its `$ref`s \
                 are followed"
            ));
        }
        for key in IN_PLACE_ONE.iter().chain(DESCEND_ONE) {
            if let Some(sub) = map.get(*key) {
                self.positions(sub, depth + 1)?;
            }
        }
        for key in IN_PLACE_MANY.iter().chain(DESCEND_MANY) {
            if let Some(Value::Array(subs)) = map.get(*key) {
                for sub in subs {
                    self.positions(sub, depth + 1)?;
                }
            }
        }
        for key in IN_PLACE_MAP.iter().chain(DESCEND_MAP) {
            if let Some(Value::Object(subs)) = map.get(*key) {
                for sub in subs.values() {
                    self.positions(sub, depth + 1)?;
                }
            }
        }
        Ok(())
    }

    /// How many subschemas apply to one value at `schema` once unfolded (memoised).
    fn in_place(&mut self, schema: &'a Value) -> Result<u64, Reason> {
        let Value::Object(map) = schema else {
            return Ok(1);
        };
        if let Some(cost) = self.cost.get(&address(schema)) {
            return Ok(*cost);
        }
        if self.visiting.iter().any(|v| std::ptr::eq(*v, schema)) {
            let from = self.visiting.last().copied().unwrap_or(schema);
            return Err(format!(
                "{} refers back to {} without descending into the value (a `$ref` cycle \
                 through `allOf`/`anyOf`/`oneOf`/`not`/`if`): validating it would never end",
                self.index.pointer(from),
                self.index.pointer(schema),
            ));
        }
        if self.visiting.len() >= MAX_IN_PLACE_CHAIN {
            return Err(format!(
                "{} is reached through more than {MAX_IN_PLACE_CHAIN} nested `$ref`s or \
                 combinators applying to the same value",
                self.index.pointer(schema)
            ));
        }
        self.visiting.push(schema);
        let result = self.children_cost(map);
        self.visiting.pop();
        let cost = result?.saturating_add(1);
        if cost > MAX_IN_PLACE {
            return Err(format!(
                "{} expands to more than {MAX_IN_PLACE} subschemas applying to one value once \
                 its `$ref`s are followed (definitions that refer to each other several times \
                 grow exponentially)",
                self.index.pointer(schema)
            ));
        }
        self.cost.insert(address(schema), cost);
        Ok(cost)
    }

    fn children_cost(&mut self, map: &'a serde_json::Map<String, Value>) -> Result<u64, Reason> {
        let mut sum = 0u64;
        let mut add = |walk: &mut Self, sub: &'a Value| -> Result<(), Reason> {
            sum = sum.saturating_add(walk.in_place(sub)?);
            if sum > MAX_IN_PLACE {
                // Stop early: the caller reports the place.
                sum = MAX_IN_PLACE + 1;
            }
            Ok(())
        };
        for key in REFS {
            if let Some(Value::String(reference)) = map.get(*key)
                && let Some(target) = resolve(self.root, self.index, reference)
            {
                add(self, target)?;
            }
        }
        for key in IN_PLACE_ONE {
            if let Some(sub) = map.get(*key) {
                add(self, sub)?;
            }
        }
        for key in IN_PLACE_MANY {
            if let Some(Value::Array(subs)) = map.get(*key) {
                for sub in subs {
                    add(self, sub)?;
                }
            }
        }
        for key in IN_PLACE_MAP {
            if let Some(Value::Object(subs)) = map.get(*key) {
                for sub in subs.values().filter(|v| v.is_object()) {
                    add(self, sub)?;
                }
            }
        }
        Ok(sum)
    }
}

/// Whether `value` nests arrays and objects more than `limit` levels deep (`[]` is one level,
/// a scalar none): an iterative walk that stops at the first level too deep, safe on any depth.
pub fn depth_exceeds(value: &Value, limit: usize) -> bool {
    let mut stack: Vec<(&Value, usize)> = vec![(value, 1)];
    while let Some((value, depth)) = stack.pop() {
        let children: Box<dyn Iterator<Item = &Value>> = match value {
            Value::Array(items) => Box::new(items.iter()),
            Value::Object(map) => Box::new(map.values()),
            _ => continue,
        };
        if depth > limit {
            return true;
        }
        stack.extend(children.map(|v| (v, depth + 1)));
    }
    false
}

/// Deepest `structuredContent` a result keeps: what serde_json decodes from the wire, so only
/// an in-process source can send more, and every recursive walk after (truncation,
/// serialisation, rendering) stays far from the stack's end.
pub const MAX_RESULT_DEPTH: usize = 128;

/// Drops `value` without recursion (serde_json's own `Drop` recurses once per level).
pub fn dispose(value: Value) {
    let mut stack = vec![value];
    while let Some(value) = stack.pop() {
        match value {
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => stack.extend(map.into_iter().map(|(_, v)| v)),
            _ => {}
        }
    }
}

/// A JSON-pointer fragment of a `$ref` with its `%XX` escapes decoded (RFC 6901 §6).
pub(crate) fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(hex) = text.get(i + 1..i + 3)
            && let Ok(b) = u8::from_str_radix(hex, 16)
        {
            out.push(b);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    /// `d0 … d{n-1}`, each applying the next one twice to the same value.
    pub(crate) fn ref_bomb(levels: usize) -> Value {
        let mut defs = serde_json::Map::new();
        for i in 0..levels {
            let next = format!("#/$defs/d{}", i + 1);
            defs.insert(
                format!("d{i}"),
                json!({"allOf": [{"$ref": next}, {"$ref": next}]}),
            );
        }
        defs.insert(format!("d{levels}"), json!({"type": "string"}));
        json!({
            "type": "object",
            "properties": {"x": {"$ref": "#/$defs/d0"}},
            "$defs": defs
        })
    }

    #[test]
    fn a_self_reference_in_place_is_refused_with_the_places() {
        let schema = json!({"type": "object", "properties": {"x": {"type": "string"}}, "allOf": [{"$ref": "#"}]});
        let reason = check(&schema).unwrap_err();
        assert_eq!(
            reason,
            "`/allOf/0` refers back to the root without descending into the value (a `$ref` \
             cycle through `allOf`/`anyOf`/`oneOf`/`not`/`if`): validating it would never end"
        );
        let bare = json!({"$ref": "#"});
        assert!(
            check(&bare)
                .unwrap_err()
                .contains("refers back to the root")
        );
        let anchor = json!({"$defs": {"a": {"$anchor": "loop", "not": {"$ref": "#loop"}}}, "$ref": "#/$defs/a"});
        assert!(check(&anchor).is_err());
    }

    #[test]
    fn recursion_through_properties_and_items_is_fine() {
        let tree = json!({
            "type": "object",
            "$defs": {"node": {"type": "object", "properties": {
                "value": {"type": "string"},
                "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}
            }}},
            "properties": {"root": {"$ref": "#/$defs/node"}, "self": {"$ref": "#"}}
        });
        assert_eq!(check(&tree), Ok(()));
        assert_eq!(check(&json!(true)), Ok(()));
        assert_eq!(check(&json!({"$ref": "#/missing"})), Ok(()));
    }

    #[test]
    fn exponential_expansion_is_refused_quickly() {
        let started = std::time::Instant::now();
        let reason = check(&ref_bomb(20)).unwrap_err();
        assert!(
            reason.contains("expands to more than 10000 subschemas"),
            "{reason}"
        );
        let reason = check(&ref_bomb(40)).unwrap_err();
        assert!(reason.contains("more than 64 nested `$ref`s"), "{reason}");
        assert!(started.elapsed() < std::time::Duration::from_secs(1));
        // A few shared references are what real schemas do.
        assert_eq!(check(&ref_bomb(8)), Ok(()));
    }

    /// `d0 … d{n-1}`, each an object whose two properties are the next one.
    fn property_diamond(levels: usize) -> Value {
        let mut defs = serde_json::Map::new();
        for i in 0..levels {
            let next = format!("#/$defs/d{}", i + 1);
            defs.insert(
                format!("d{i}"),
                json!({"type": "object", "properties": {"a": {"$ref": next}, "b": {"$ref": next}}}),
            );
        }
        defs.insert(format!("d{levels}"), json!({"type": "string"}));
        json!({"type": "object", "properties": {"x": {"$ref": "#/$defs/d0"}}, "$defs": defs})
    }

    #[test]
    fn hostile_schemas_never_reach_the_recursive_walkers() {
        use crate::catalog::Tool;
        use crate::schema::{ExportFormat, Validator, export};
        let self_ref = json!({"type": "object", "properties": {"x": {"type": "string"}}, "allOf": [{"$ref": "#"}]});
        for schema in [self_ref, ref_bomb(40), ref_bomb(20)] {
            let error = Validator::compile(&schema).unwrap_err();
            assert!(error.unusable, "{error}");
            let mut args = json!({"x": null});
            crate::schema::arguments::drop_null_optionals(&schema, &mut args);
            let tools = [
                Tool::local("bad", schema.clone()),
                Tool::local("good", json!({"type": "object"})),
            ];
            for provider in ExportFormat::ALL {
                let e = export(&tools, provider);
                let names: Vec<&str> = e.tools.iter().map(|t| t.tool.as_str()).collect();
                assert_eq!(names, ["good"], "{provider}");
                assert_eq!(e.unusable.len(), 1, "{provider}");
                assert_eq!(e.unusable[0].tool, "bad");
                assert!(
                    e.unusable[0]
                        .reason
                        .starts_with("its input schema cannot be used: "),
                    "{}",
                    e.unusable[0].reason
                );
            }
        }
    }

    #[test]
    fn a_diamond_through_properties_compiles_validates_and_exports_quickly() {
        use crate::catalog::Tool;
        use crate::schema::{ExportFormat, Validator, export};
        let started = std::time::Instant::now();
        let schema = property_diamond(40);
        assert_eq!(check(&schema), Ok(()));
        let validator = Validator::compile(&schema).unwrap();
        assert!(validator.validate(&json!({"x": {"a": {"b": {}}}})).is_ok());
        let tools = [Tool::local("diamond", schema)];
        for provider in ExportFormat::ALL {
            assert_eq!(export(&tools, provider).tools.len(), 1, "{provider}");
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
    }

    #[test]
    fn depth_and_size_are_bounded_without_recursion() {
        let mut deep = json!({"type": "string"});
        for _ in 0..100_000 {
            let mut map = serde_json::Map::new();
            map.insert("items".into(), deep);
            deep = Value::Object(map);
        }
        let reason = check(&deep).unwrap_err();
        assert!(reason.contains("nested deeper than 128 levels"), "{reason}");
        assert!(depth_exceeds(&deep, 128));
        assert!(!depth_exceeds(&json!({"a": [1, {"b": 2}]}), 3));
        assert!(depth_exceeds(&json!({"a": [1, {"b": 2}]}), 2));
        dispose(deep);
    }
}
