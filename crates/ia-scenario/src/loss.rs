//! The scenario's `loss`: a scalar loss whose gradient `gradient` computes.

use crate::error::ScenarioError;
use crate::read::{check_keys, invalid, missing, number, type_name};
use ia_adjoint::Term;
use serde_json::Value;

/// `loss`: an array of `{"of", "weight", "target"}` terms (checked against
/// a model by [`crate::Scenario::set_loss`]).
pub fn read_loss(value: &Value) -> Result<Vec<Term>, ScenarioError> {
    let Value::Array(items) = value else {
        return Err(invalid(format!(
            "'loss' must be an array of terms like {{\"of\": \"final.x\", \"weight\": 1.0}}, got {}",
            type_name(value)
        )));
    };
    let mut terms = Vec::with_capacity(items.len());
    for (k, item) in items.iter().enumerate() {
        let context = format!("loss[{k}]");
        let obj = item.as_object().ok_or_else(|| {
            invalid(format!(
                "'{context}' must be an object {{\"of\": ..., \"weight\": ..., \"target\": ...}}, got {}",
                type_name(item)
            ))
        })?;
        check_keys(obj, &["of", "weight", "target"], &format!("'{context}'"))?;
        let of = match obj.get("of") {
            None => return Err(missing("of", &format!("'{context}'"))),
            Some(Value::String(s)) => s.clone(),
            Some(other) => {
                return Err(invalid(format!(
                    "'{context}.of' must be a string ({}), got {}",
                    ia_adjoint::TERM_FORMS,
                    type_name(other)
                )))
            }
        };
        let weight = match obj.get("weight") {
            None => return Err(missing("weight", &format!("'{context}'"))),
            Some(v) => number(v, &format!("{context}.weight"))?,
        };
        let target = obj
            .get("target")
            .map(|v| number(v, &format!("{context}.target")))
            .transpose()?;
        terms.push(Term { of, weight, target });
    }
    Ok(terms)
}
