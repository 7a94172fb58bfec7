//! The scenario's `fit` key: the free variables, bounds and data of a fit
//! (`impact-adjoint fit`, [`crate::Scenario::fit_result`]).
//!
//! The scenario gains a `fit` object:
//!
//! ```json
//! "fit": {"free": ["param.g", "param.e"],
//!         "bounds": {"param.e": [0, 1]},
//!         "data": [{"time": 0.2, "state": {"h": 0.804}}, {"time": 0.6, "state": {"h": 0.61}}]}
//! ```
//!
//! | key | required | meaning |
//! |---|---|---|
//! | `free` | yes | the variables fitted, by name: `param.<name>`, `initial.<state>`; the scenario's values are the start |
//! | `bounds` | no | `{name: [low, high]}` for free variables; `null` for an open side (`[0, null]`); the start must lie strictly inside |
//! | `data` | yes | observations: `{"time": t, "state": {"<state>": value, ...}}`, `t` in `(0, t_end]` |
//! | `max_iterations` | no | the most L-BFGS iterations, an integer of at least 1 (a whole-valued number like `1e4` counts, as for every count of a scenario; default 200) |
//! | `gradient_tolerance` | no | stop when the gradient norm (in the optimiser's coordinates) falls below it, `>= 0` (default 1e-12) |
//! | `loss_tolerance` | no | stop when the relative change of the loss falls below it, `>= 0` (default 1e-16) |
//! | `memory` | no | the L-BFGS memory, an integer of at least 1 (default 7) |
//!
//! Each data value is one residual `x_s(t) - y`; the loss is the sum of
//! their squares (the `loss` terms `observation.<k>.<s>` with targets).
//! There must be more data values than free variables. L-BFGS (argmin)
//! minimises it, the gradient by the adjoint; a bounded variable is
//! optimised through a logistic (or exponential, for one side) transform,
//! so the bounds are open ([`ia_fit`] has the formulas). The output is
//!
//! ```json
//! {"model": "ball1d", "values": {"param.g": 9.81, "param.e": 0.8},
//!  "standard_errors": {"param.g": 0.01, "param.e": 0.002},
//!  "loss": 1.2e-4, "gradient_norm": 3e-9, "iterations": 14, "data": 24,
//!  "termination": "Solver converged"}
//! ```
//!
//! `standard_errors` are the Gauss-Newton ones, `sqrt(diag(sigma^2 (J^T J)^-1))`
//! with `sigma^2 = SSR / (m - p)` and `J` the residuals' forward Jacobian;
//! `gradient_norm` is `|dL/dtheta|` at the fit; `termination` is argmin's
//! reason. Errors: kinds `invalid_scenario` (the form of `fit`),
//! `unknown_name` (a free, bounded or data state name, listing the valid
//! ones), `invalid_option` (a count below 1 or not whole, a negative
//! tolerance, a time outside `(0, t_end]`, bounds not containing the
//! start, too few data; every value is read by the scenario's readers,
//! [`crate::read`]), `optimizer`, `not_identifiable`
//! (the data do not determine the free variables), or a failure of a run.

use crate::error::ScenarioError;
use crate::read::{count, invalid, missing, number};
use ia_core::{name_index, short_num, HybridError, HybridSystem};
use ia_fit::{Datum, FitOptions};
use serde_json::Value;

/// The `fit` key of a scenario, checked against the model.
#[derive(Clone, Debug, PartialEq)]
pub struct FitSpec {
    /// The free variables' names.
    pub free: Vec<String>,
    /// Bounds by name: `(name, low, high)`.
    pub bounds: Vec<(String, Option<f64>, Option<f64>)>,
    /// One datum per value.
    pub data: Vec<Datum>,
    /// The optimiser's options (the scenario's `max_iterations`,
    /// `gradient_tolerance`, `loss_tolerance` and `memory`, defaults
    /// otherwise).
    pub options: FitOptions,
}

impl FitSpec {
    /// Checks `value` (the scenario's `fit`) against `system` and `t_end`.
    pub fn from_value(
        value: &Value,
        system: &HybridSystem,
        t_end: f64,
    ) -> Result<Self, ScenarioError> {
        const KEYS: [&str; 7] = [
            "free",
            "bounds",
            "data",
            "max_iterations",
            "gradient_tolerance",
            "loss_tolerance",
            "memory",
        ];
        let obj = value.as_object().ok_or_else(|| {
            invalid(format!(
                "'fit' must be an object with {}, got {value}",
                KEYS.join(", ")
            ))
        })?;
        if let Some(k) = obj.keys().find(|k| !KEYS.contains(&k.as_str())) {
            return Err(invalid(format!(
                "unknown key '{k}' in fit; valid keys: {}",
                KEYS.join(", ")
            )));
        }
        let wrt = system.wrt_names();
        let free: Vec<String> = match obj.get("free") {
            Some(Value::Array(names)) if !names.is_empty() => names
                .iter()
                .map(|n| {
                    let name = n.as_str().ok_or_else(|| {
                        invalid(format!(
                            "'fit.free' must list names like \"param.g\", got {n}"
                        ))
                    })?;
                    name_index("free variable in fit.free", wrt, name)?;
                    Ok(name.to_string())
                })
                .collect::<Result<_, ScenarioError>>()?,
            _ => {
                return Err(invalid(format!(
                    "'fit.free' is required: a non-empty array of names among {}",
                    wrt.join(", ")
                )))
            }
        };
        let mut bounds = Vec::new();
        if let Some(b) = obj.get("bounds") {
            let b = b.as_object().ok_or_else(|| {
                invalid(format!(
                    "'fit.bounds' must be an object like {{\"param.e\": [0, 1]}}, got {b}"
                ))
            })?;
            for (name, pair) in b {
                name_index(
                    "bounded variable in fit.bounds (bounds apply to fit.free)",
                    &free,
                    name,
                )?;
                let key = format!("fit.bounds.{name}");
                let side = |v: &Value| match v {
                    Value::Null => Ok(None),
                    v => number(v, &key).map(Some),
                };
                match pair.as_array().map(Vec::as_slice) {
                    Some([low, high]) => bounds.push((name.clone(), side(low)?, side(high)?)),
                    _ => {
                        return Err(invalid(format!(
                            "'{key}' must be [low, high] (null for an open side), got {pair}"
                        )))
                    }
                }
            }
        }
        let states = system.state_names();
        let mut data = Vec::new();
        let Some(Value::Array(points)) = obj.get("data") else {
            return Err(invalid(
                "'fit.data' is required: an array of {\"time\": t, \"state\": {\"<state>\": value}}".into(),
            ));
        };
        for (i, point) in points.iter().enumerate() {
            let key = format!("fit.data[{i}]");
            let p = point.as_object().ok_or_else(|| {
                invalid(format!(
                    "'{key}' must be {{\"time\": t, \"state\": {{...}}}}, got {point}"
                ))
            })?;
            if let Some(k) = p.keys().find(|k| !["time", "state"].contains(&k.as_str())) {
                return Err(invalid(format!(
                    "unknown key '{k}' in {key}; valid keys: time, state"
                )));
            }
            let time = match p.get("time") {
                None => return Err(missing("time", &format!("'{key}'"))),
                Some(v) => number(v, &format!("{key}.time"))?,
            };
            if !(time > 0.0 && time <= t_end) {
                return Err(HybridError::invalid_num(
                    format!("{key}.time"),
                    time,
                    format!("must lie in (0, t_end] = (0, {}]", short_num(t_end)),
                )
                .into());
            }
            let values = p.get("state").and_then(Value::as_object).ok_or_else(|| {
                invalid(format!(
                    "'{key}.state' is required: an object of state names and values"
                ))
            })?;
            for (state, v) in values {
                name_index(&format!("state in {key}.state"), states, state)?;
                data.push(Datum::new(
                    time,
                    state,
                    number(v, &format!("{key}.state.{state}"))?,
                ));
            }
        }
        let options = fit_options(obj)?;
        Ok(Self {
            free,
            bounds,
            data,
            options,
        })
    }
}

/// The optimiser's options from the `fit` object's keys, defaults where
/// absent.
fn fit_options(obj: &serde_json::Map<String, Value>) -> Result<FitOptions, ScenarioError> {
    let mut options = FitOptions::default();
    let count = |key: &str, example: &str| -> Result<Option<usize>, ScenarioError> {
        obj.get(key)
            .map(|v| count(v, &format!("fit.{key}"), example))
            .transpose()
    };
    let tolerance = |key: &str| -> Result<Option<f64>, ScenarioError> {
        obj.get(key)
            .map(|v| match number(v, &format!("fit.{key}"))? {
                x if x >= 0.0 => Ok(x),
                x => Err(
                    HybridError::invalid_num(format!("fit.{key}"), x, "must be at least 0").into(),
                ),
            })
            .transpose()
    };
    if let Some(k) = count("max_iterations", "200")? {
        options.max_iters = u64::try_from(k).unwrap_or(u64::MAX);
    }
    if let Some(m) = count("memory", "7")? {
        options.memory = m;
    }
    if let Some(g) = tolerance("gradient_tolerance")? {
        options.tolerance_grad = g;
    }
    if let Some(c) = tolerance("loss_tolerance")? {
        options.tolerance_cost = c;
    }
    Ok(options)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde_json::json;

    fn ball() -> HybridSystem {
        ia_models::by_name("ball1d").unwrap().system()
    }

    fn fit_with(key: &str, value: Value) -> Result<FitSpec, ScenarioError> {
        let mut fit = json!({"free": ["param.g"],
            "data": [{"time": 0.1, "state": {"h": 0.95}}, {"time": 0.2, "state": {"h": 0.8}}]});
        fit[key] = value;
        FitSpec::from_value(&fit, &ball(), 1.0)
    }

    /// One reader, one rule. Reference: the scenario's own reader of the
    /// same value, `max_events` for a count and `t_end` for a number (its
    /// acceptance, or the kind of its error), read through
    /// `Scenario::from_value`.
    #[rstest]
    #[case::count_as_float("max_iterations", json!(1e4), "max_events")]
    #[case::count_whole_float("memory", json!(5.0), "max_events")]
    #[case::count_zero("max_iterations", json!(0), "max_events")]
    #[case::count_fraction("memory", json!(2.5), "max_events")]
    #[case::count_string("memory", json!("7"), "max_events")]
    #[case::number_string("gradient_tolerance", json!("tiny"), "t_end")]
    #[case::number_negative("loss_tolerance", json!(-1), "t_end")]
    #[case::number_null("gradient_tolerance", Value::Null, "t_end")]
    fn fit_keys_follow_the_scenario_rules(
        #[case] key: &str,
        #[case] value: Value,
        #[case] scenario_key: &str,
    ) {
        let mut scenario = json!({"model": "ball1d", "t_end": 1});
        scenario[scenario_key] = value.clone();
        let reference = crate::Scenario::from_value(&scenario)
            .map(|_| ())
            .map_err(|e| e.kind());
        let fit = fit_with(key, value).map(|_| ()).map_err(|e| e.kind());
        assert_eq!(fit, reference, "fit.{key} against {scenario_key}");
    }

    /// A count written `1e4` sets the option (reference: the value
    /// written, 10000).
    #[test]
    fn a_count_written_as_a_float_is_read() {
        let spec = fit_with("max_iterations", json!(1e4)).unwrap();
        assert_eq!(spec.options.max_iters, 10_000);
        let spec = fit_with("memory", json!(12.0)).unwrap();
        assert_eq!(spec.options.memory, 12);
    }

    /// A value that is not finite is the one `invalid_option` error of every
    /// reader (JSON text cannot hold one, so the rule is checked where the
    /// readers and typed setters meet it, `read::finite`). Reference: the
    /// kind documented for an out-of-range value, `invalid_option`.
    #[test]
    fn a_non_finite_value_is_an_invalid_option() {
        for x in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            let err = crate::read::finite(x, "fit.gradient_tolerance").unwrap_err();
            assert_eq!(err.kind(), "invalid_option", "{err}");
        }
    }
}
