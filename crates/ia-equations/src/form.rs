//! The model as data: the serde form of the JSON document.

use ia_core::Direction;
use serde::de::{MapAccess, SeqAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// A JSON object read in document order, keeping repeated keys (so that the
/// checks can report a state given twice instead of keeping the last).
///
/// Read from text, the order is the document's; read from a
/// `serde_json::Value`, it is the value's (the document's, as the workspace
/// builds serde_json with `preserve_order`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Ordered<V>(pub Vec<(String, V)>);

impl<V: Serialize> Serialize for Ordered<V> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

impl<'de, V: Deserialize<'de>> Deserialize<'de> for Ordered<V> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Entries<V>(std::marker::PhantomData<V>);
        impl<'de, V: Deserialize<'de>> Visitor<'de> for Entries<V> {
            type Value = Ordered<V>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut entries = Vec::new();
                while let Some(entry) = map.next_entry()? {
                    entries.push(entry);
                }
                Ok(Ordered(entries))
            }
        }
        deserializer.deserialize_map(Entries(std::marker::PhantomData))
    }
}

/// The state entries: a list of names (default initial value 0) or an
/// object of names and default initial values.
#[derive(Clone, Debug, PartialEq)]
pub struct States(pub Vec<(String, f64)>);

impl Serialize for States {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        Ordered(self.0.clone()).serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for States {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Either;
        impl<'de> Visitor<'de> for Either {
            type Value = States;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a list of state names, or an object of state names and initial values")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<States, A::Error> {
                let mut names = Vec::new();
                while let Some(name) = seq.next_element::<String>()? {
                    names.push((name, 0.0));
                }
                Ok(States(names))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<States, A::Error> {
                let mut entries = Vec::new();
                while let Some(entry) = map.next_entry()? {
                    entries.push(entry);
                }
                Ok(States(entries))
            }
        }
        deserializer.deserialize_any(Either)
    }
}

/// One mode: its flow, one expression per state.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModeForm {
    /// `x_i' =` expression, for every state `x_i`.
    pub flow: Ordered<String>,
}

/// One transition.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TransitionForm {
    /// Its name (unique).
    pub name: String,
    /// The mode it leaves.
    pub from: String,
    /// The mode it enters.
    pub to: String,
    /// The guard expression; the transition fires when it crosses zero.
    pub guard: String,
    /// Which crossings fire it.
    pub direction: Direction,
    /// New values of the states that change (the others carry over).
    #[serde(default)]
    pub reset: Ordered<String>,
}

/// A hybrid model as data, as read from JSON.
///
/// ```
/// let form: ia_equations::EquationsForm = serde_json::from_str(r#"{
///     "states": ["y", "vy"], "params": {"g": 9.81},
///     "modes": {"flight": {"flow": {"y": "vy", "vy": "-g"}}}}"#).unwrap();
/// assert_eq!(form.params.0[0], ("g".to_string(), 9.81));
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EquationsForm {
    /// A name for the model (default `equations`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// One line on what the model is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// State names, with default initial values.
    pub states: States,
    /// Parameter names and default values.
    #[serde(default)]
    pub params: Ordered<f64>,
    /// Named intermediate expressions, usable in every other expression
    /// (and in each other, without cycles).
    #[serde(default, rename = "let")]
    pub lets: Ordered<String>,
    /// The modes, each with its flow.
    pub modes: Ordered<ModeForm>,
    /// The transitions.
    #[serde(default)]
    pub transitions: Vec<TransitionForm>,
    /// The mode a run starts in (default: the first mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initial_mode: Option<String>,
    /// The default run length (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub t_end: Option<f64>,
}
