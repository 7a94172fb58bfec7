//! The model a scenario runs: a ready model of `ia-models` by name (with
//! its `size` and `connections`), or a model written as equations.

use crate::error::ScenarioError;
use crate::keys::SCENARIO_KEYS;
use crate::read::{check_keys, count, invalid, missing, type_name};
use ia_core::HybridError;
use ia_equations::EquationModel;
use ia_models::{Model, Size};
use serde_json::{Map, Value};

/// The model a scenario names: its keys `model` (required), `size` and
/// `connections` (the scenario's other keys are checked for their names
/// only).
pub fn model_of(value: &Value) -> Result<Box<dyn Model>, ScenarioError> {
    Ok(match chosen_model(value)? {
        ChosenModel::Catalogue(model) => model,
        ChosenModel::Equations(model) => model,
    })
}

/// The model a scenario names: a catalogue model, or one written as
/// equations (kept as such: it names the expression behind a non-finite
/// value).
pub(crate) enum ChosenModel {
    /// A ready model.
    Catalogue(Box<dyn Model>),
    /// A model written as equations.
    Equations(Box<EquationModel>),
}

/// The model the scenario `value` chooses.
pub(crate) fn chosen_model(value: &Value) -> Result<ChosenModel, ScenarioError> {
    let obj = value.as_object().ok_or_else(|| {
        invalid(format!(
            "a scenario must be a JSON object, got {}",
            type_name(value)
        ))
    })?;
    check_keys(obj, &SCENARIO_KEYS, "the scenario")?;
    let size = obj.get("size").map(size_of).transpose()?;
    match obj.get("model") {
        None => Err(missing("model", "the scenario")),
        Some(Value::String(model_name)) => {
            let connections = obj.get("connections").map(connection_list).transpose()?;
            Ok(ChosenModel::Catalogue(catalogue_model(
                model_name,
                size,
                connections,
            )?))
        }
        Some(form @ Value::Object(_)) => {
            Ok(ChosenModel::Equations(Box::new(equation_model(obj, form)?)))
        }
        Some(other) => Err(invalid(format!(
            "'model' must be a string (a model name) or an object (a model written as \
             equations, see docs/equations.md), got {}",
            type_name(other)
        ))),
    }
}

/// `size`: a count (`lif-network`, `particle-chain`) or an array of counts
/// (`cuba-lif`'s `[n_in, n_hidden, n_out]`), each an integer of at least 1;
/// whether the model takes that form is checked by [`ia_models::sized`].
pub fn size_of(value: &Value) -> Result<Size, ScenarioError> {
    match value {
        Value::Array(items) if !items.is_empty() => items
            .iter()
            .enumerate()
            .map(|(k, v)| count(v, &format!("size[{k}]"), "3"))
            .collect::<Result<Vec<_>, _>>()
            .map(Size::Counts),
        Value::Array(_) => Err(HybridError::invalid(
            "size",
            value,
            "must be a count, like 3, or a list of counts, like [2, 3, 2]",
        )
        .into()),
        _ => count(value, "size", "3 (or a list of counts, like [2, 3, 2])").map(Size::Count),
    }
}

/// `connections`: an array of `[from, to]` neuron pairs.
pub fn connection_list(value: &Value) -> Result<Vec<(usize, usize)>, ScenarioError> {
    let Value::Array(items) = value else {
        return Err(invalid(format!(
            "'connections' must be an array of [from, to] neuron pairs, like [[0, 1], [1, 2]], got {}",
            type_name(value)
        )));
    };
    items
        .iter()
        .enumerate()
        .map(|(k, item)| {
            let pair = item.as_array().filter(|a| a.len() == 2);
            let index = |v: &Value| v.as_u64().and_then(|n| usize::try_from(n).ok());
            match pair.map(|a| (index(&a[0]), index(&a[1]))) {
                Some((Some(from), Some(to))) => Ok((from, to)),
                _ => Err(HybridError::invalid(
                    format!("connections[{k}]"),
                    item,
                    "a synapse is a pair [from, to] of neuron numbers from 0",
                )
                .into()),
            }
        })
        .collect()
}

/// The ready model `model_name`, with `size` elements for a sized model
/// (`lif-network`: neurons, `particle-chain`: balls, `cuba-lif`:
/// `[n_in, n_hidden, n_out]`) and, for `lif-network`, its synapses
/// `connections` as `(from, to)` pairs.
pub fn catalogue_model(
    model_name: &str,
    size: Option<Size>,
    connections: Option<Vec<(usize, usize)>>,
) -> Result<Box<dyn Model>, ScenarioError> {
    Ok(match connections {
        None => ia_models::sized(model_name, size)?,
        Some(connections) if model_name == "lif-network" => {
            let size = match size {
                None => ia_models::LifNetwork::default().size(),
                Some(Size::Count(n)) => n,
                Some(other) => {
                    return Err(HybridError::invalid(
                        "size",
                        &other,
                        "model 'lif-network' takes one count, like 3",
                    )
                    .into())
                }
            };
            Box::new(ia_models::LifNetwork::with_connections(size, connections)?)
        }
        Some(_) => {
            return Err(invalid(format!(
                "'connections' applies to the lif-network model only, not to '{model_name}'"
            )))
        }
    })
}

/// The model written as equations in the scenario's `model` object.
fn equation_model(
    obj: &Map<String, Value>,
    equations: &Value,
) -> Result<EquationModel, ScenarioError> {
    if let Some(key) = ["size", "connections"]
        .iter()
        .find(|k| obj.contains_key(**k))
    {
        return Err(invalid(format!(
            "'{key}' applies to the sized catalogue models, not to a model written as equations"
        )));
    }
    equations_model(equations, "'model' (equations)")
}

/// The model written as equations in `equations` (the form of
/// docs/equations.md, as JSON); `source` names them in messages (a
/// scenario's `'model' (equations)`, Python's `the equations`).
pub fn equations_model(equations: &Value, source: &str) -> Result<EquationModel, ScenarioError> {
    EquationModel::from_value(equations).map_err(|error| ScenarioError::Equations {
        place: source.to_string(),
        error,
    })
}
