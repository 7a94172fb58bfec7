//! The JSON field readers of a scenario, one set for every key (the
//! scenario's, `solver`'s, `loss`'s, `fit`'s, and the values the Python
//! package passes): one rule for a count ([`count`]: an integer of at least
//! 1, a whole-valued float like `1e4` included), one error for a value that
//! is not finite ([`finite`]: kind `invalid_option`), one for a value of the
//! wrong type (kind `invalid_scenario`).

use crate::error::ScenarioError;
use ia_core::HybridError;
use serde::de::{DeserializeSeed, Error as _, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// A count of at least 1 for the key `key` (`example` in the message): an
/// integer, or a whole-valued float like `1000.0` or `1e4`.
pub fn count(v: &Value, key: &str, example: &str) -> Result<usize, ScenarioError> {
    match (v.as_u64(), v.as_f64()) {
        (Some(n), _) if n >= 1 => Ok(usize::try_from(n).unwrap_or(usize::MAX)),
        (None, Some(x)) if x >= 1.0 && x.fract() == 0.0 => Ok(if x >= usize::MAX as f64 {
            usize::MAX
        } else {
            x as usize
        }),
        _ => Err(HybridError::invalid(
            key,
            v,
            format!("must be an integer of at least 1, like {example}"),
        )
        .into()),
    }
}

/// Marks the error of a duplicated key (a serde custom error carries only
/// text).
const DUPLICATE_KEY: &str = "duplicate key ";

/// Parses JSON text into a [`Value`], refusing a key that appears twice in
/// one object at any depth (serde_json would keep the last silently).
pub fn parse_json(text: &str, source: &str) -> Result<Value, ScenarioError> {
    let mut de = serde_json::Deserializer::from_str(text);
    let value = Checked {
        path: String::new(),
    }
    .deserialize(&mut de)
    .and_then(|v| de.end().map(|()| v))
    .map_err(|e| malformed(&e, source))?;
    Ok(value)
}

/// A [`Value`] seed that refuses duplicated keys; `path` is where it sits
/// (`""` at the top, `params`, `solver`...).
struct Checked {
    path: String,
}

impl<'de> DeserializeSeed<'de> for Checked {
    type Value = Value;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Checked {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(v) = seq.next_element_seed(Checked {
            path: format!("{}[{}]", self.path, items.len()),
        })? {
            items.push(v);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut obj = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let path = if self.path.is_empty() {
                key.clone()
            } else {
                format!("{}.{key}", self.path)
            };
            if obj.contains_key(&key) {
                let place = if self.path.is_empty() {
                    "the scenario".to_string()
                } else {
                    format!("'{}'", self.path)
                };
                return Err(A::Error::custom(format!(
                    "{DUPLICATE_KEY}'{path}': '{key}' appears twice in {place}; give each key once"
                )));
            }
            let value = map.next_value_seed(Checked { path })?;
            obj.insert(key, value);
        }
        Ok(Value::Object(obj))
    }
}

/// The error of JSON that does not parse (or a duplicated key).
fn malformed(e: &serde_json::Error, source: &str) -> ScenarioError {
    let text = e.to_string();
    if text.starts_with(DUPLICATE_KEY) {
        return ScenarioError::InvalidScenario(format!("{text} in {source}"));
    }
    if text.starts_with("number out of range") {
        ScenarioError::MalformedJson(format!(
            "{text} in {source}: a number overflows a 64-bit float to infinity; \
             every number must be finite (below about 1.8e308 in magnitude)"
        ))
    } else {
        ScenarioError::MalformedJson(format!("malformed JSON in {source}: {text}"))
    }
}

/// An error of kind `invalid_scenario` with `message`.
pub fn invalid(message: String) -> ScenarioError {
    ScenarioError::InvalidScenario(message)
}

/// The error of the required `key` missing from `context`.
pub fn missing(key: &str, context: &str) -> ScenarioError {
    invalid(format!("{context} has no '{key}': it is required"))
}

/// Refuses a key of `obj` not in `valid`, naming it and the valid keys
/// (`context` says where, like `the scenario`).
pub fn check_keys(
    obj: &Map<String, Value>,
    valid: &[&str],
    context: &str,
) -> Result<(), ScenarioError> {
    match obj.keys().find(|k| !valid.contains(&k.as_str())) {
        None => Ok(()),
        Some(key) => Err(invalid(format!(
            "unknown key '{key}' in {context}; valid keys: {}",
            valid.join(", ")
        ))),
    }
}

/// `value` as an object of names and values (the key `key`).
pub fn object<'v>(value: &'v Value, key: &str) -> Result<&'v Map<String, Value>, ScenarioError> {
    value.as_object().ok_or_else(|| {
        invalid(format!(
            "'{key}' must be an object of names and values, got {}",
            type_name(value)
        ))
    })
}

/// A finite number (the key `key`): [`finite`], or kind `invalid_scenario`
/// for a value that is not a number.
pub fn number(value: &Value, key: &str) -> Result<f64, ScenarioError> {
    match value.as_f64() {
        Some(x) => finite(x, key),
        None => Err(invalid(format!(
            "'{key}' must be a number, got {}",
            type_name(value)
        ))),
    }
}

/// How a JSON value reads in a message (`the string \"x\"`, `an array`).
pub fn type_name(value: &Value) -> String {
    match value {
        Value::Null => "null".into(),
        Value::Bool(b) => format!("the boolean {b}"),
        Value::Number(n) => format!("the number {n}"),
        Value::String(s) => format!("the string {s:?}"),
        Value::Array(_) => "an array".into(),
        Value::Object(_) => "an object".into(),
    }
}

/// `x` if it is finite; otherwise the error (kind `invalid_option`) every
/// reader and typed constructor gives for a non-finite value of `key`.
pub fn finite(x: f64, key: &str) -> Result<f64, ScenarioError> {
    if x.is_finite() {
        Ok(x)
    } else {
        Err(HybridError::invalid_num(key, x, "every number must be finite").into())
    }
}

/// `n` if it is at least 1: the rule of [`count`] for a count already an
/// integer (`example` in the message).
pub fn at_least_one(n: usize, key: &str, example: &str) -> Result<usize, ScenarioError> {
    if n >= 1 {
        Ok(n)
    } else {
        Err(HybridError::invalid(
            key,
            n,
            format!("must be an integer of at least 1, like {example}"),
        )
        .into())
    }
}
