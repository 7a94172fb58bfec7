//! The document's shape, checked by key: a value of the wrong type is named
//! by where it sits (`mode "m", flow.x`, `transitions[1]`), where serde
//! alone names only what it expected.

use crate::error::EquationError;
use crate::form::{EquationsForm, ModeForm, Ordered, States, TransitionForm};
use serde::Deserialize;
use serde_json::Value;

/// The form in the JSON text `text`, in document order (a key given twice
/// is kept, for the checks to report). A value where an expression string
/// belongs is named by its key; any other error is serde's, with the line
/// and column.
pub(crate) fn form_of_text(text: &str) -> Result<EquationsForm, EquationError> {
    serde_json::from_str(text).map_err(|e| {
        serde_json::from_str::<Value>(text)
            .ok()
            .and_then(|value| expressions_are_strings(&value).err())
            .unwrap_or_else(|| EquationError::Json(e.to_string()))
    })
}

/// The form in `value`; a value of the wrong shape is named by its key
/// (`transitions[1]: missing field \`guard\``, `mode "m", flow.x: an
/// expression is a string...`).
pub(crate) fn form_of_value(value: &Value) -> Result<EquationsForm, EquationError> {
    fn shape<'a, T: Deserialize<'a>>(place: &str, v: &'a Value) -> Result<(), EquationError> {
        T::deserialize(v)
            .map(drop)
            .map_err(|e| EquationError::structure(place, e.to_string()))
    }
    if let Some(object) = value.as_object() {
        for (key, v) in object {
            match key.as_str() {
                "states" => shape::<States>(key, v)?,
                "params" => shape::<Ordered<f64>>(key, v)?,
                "let" => {
                    let_expressions(v)?;
                    shape::<Ordered<String>>(key, v)?;
                }
                "modes" => match v.as_object() {
                    Some(modes) => {
                        for (mode, m) in modes {
                            flow_expressions(mode, m)?;
                            shape::<ModeForm>(&format!("modes.{mode}"), m)?;
                        }
                    }
                    None => shape::<Ordered<ModeForm>>(key, v)?,
                },
                "transitions" => match v.as_array() {
                    Some(list) => {
                        for (i, t) in list.iter().enumerate() {
                            transition_expressions(i, t)?;
                            shape::<TransitionForm>(&format!("transitions[{i}]"), t)?;
                        }
                    }
                    None => shape::<Vec<TransitionForm>>(key, v).map_err(|e| match e {
                        EquationError::Structure { place, message } => EquationError::Structure {
                            place,
                            message: format!(
                                "{message} (a list of transitions, each {{\"name\": .., \"from\": .., \"to\": .., \"guard\": .., \"direction\": .., \"reset\": {{..}}}})"
                            ),
                        },
                        other => other,
                    })?,
                },
                _ => {}
            }
        }
    }
    Deserialize::deserialize(value).map_err(|e| EquationError::Json(e.to_string()))
}

/// That every expression of the document (`let`, flows, guards, resets)
/// is a string, the first that is not named by its key.
fn expressions_are_strings(value: &Value) -> Result<(), EquationError> {
    if let Some(lets) = value.get("let") {
        let_expressions(lets)?;
    }
    if let Some(modes) = value.get("modes").and_then(Value::as_object) {
        for (mode, m) in modes {
            flow_expressions(mode, m)?;
        }
    }
    if let Some(list) = value.get("transitions").and_then(Value::as_array) {
        for (i, t) in list.iter().enumerate() {
            transition_expressions(i, t)?;
        }
    }
    Ok(())
}

fn let_expressions(lets: &Value) -> Result<(), EquationError> {
    for (name, e) in lets.as_object().into_iter().flatten() {
        expression(|| format!("let \"{name}\""), e)?;
    }
    Ok(())
}

fn flow_expressions(mode: &str, body: &Value) -> Result<(), EquationError> {
    let flow = body.get("flow").and_then(Value::as_object);
    for (state, e) in flow.into_iter().flatten() {
        expression(|| format!("mode \"{mode}\", flow.{state}"), e)?;
    }
    Ok(())
}

fn transition_expressions(index: usize, t: &Value) -> Result<(), EquationError> {
    let label = match t.get("name").and_then(Value::as_str) {
        Some(name) => format!("transition \"{name}\""),
        None => format!("transitions[{index}]"),
    };
    if let Some(guard) = t.get("guard") {
        expression(|| format!("{label}, guard"), guard)?;
    }
    let reset = t.get("reset").and_then(Value::as_object);
    for (state, e) in reset.into_iter().flatten() {
        expression(|| format!("{label}, reset.{state}"), e)?;
    }
    Ok(())
}

/// That `e`, at the key `place` names, is an expression string.
fn expression(place: impl FnOnce() -> String, e: &Value) -> Result<(), EquationError> {
    let message = match e {
        Value::String(_) => return Ok(()),
        Value::Number(n) => {
            format!("an expression is a string: write \"{n}\" in quotes, not the number {n}")
        }
        Value::Null => "an expression is a string, like \"-g * y\"; got null".to_string(),
        Value::Bool(b) => format!("an expression is a string, like \"-g * y\"; got {b}"),
        Value::Array(_) => "an expression is a string, like \"-g * y\"; got an array".to_string(),
        Value::Object(_) => "an expression is a string, like \"-g * y\"; got an object".to_string(),
    };
    Err(EquationError::structure(place(), message))
}
