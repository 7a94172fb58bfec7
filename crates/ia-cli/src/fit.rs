//! `impact-adjoint fit`: fitting free variables of a scenario to data.
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
//! | `max_iterations` | no | the most L-BFGS iterations, a positive integer (default 200) |
//! | `gradient_tolerance` | no | stop when the gradient norm (in the optimiser's coordinates) falls below it, `>= 0` (default 1e-12) |
//! | `loss_tolerance` | no | stop when the relative change of the loss falls below it, `>= 0` (default 1e-16) |
//! | `memory` | no | the L-BFGS memory, a positive integer (default 7) |
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
//! ones), `invalid_option` (a time outside `(0, t_end]`, bounds not
//! containing the start, too few data), `optimizer`, `not_identifiable`
//! (the data do not determine the free variables), or a failure of a run.

use crate::report::Json;
use crate::scenario::Scenario;
use crate::CliError;
use ia_core::{short_num, HybridError, HybridSystem};
use ia_fit::{Datum, FitOptions, FitProblem};
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

fn invalid(message: String) -> CliError {
    CliError::InvalidScenario(message)
}

fn finite(v: &Value, key: &str) -> Result<f64, CliError> {
    match v.as_f64() {
        Some(x) if x.is_finite() => Ok(x),
        _ => Err(invalid(format!("'{key}' must be a finite number, got {v}"))),
    }
}

impl FitSpec {
    /// Checks `value` (the scenario's `fit`) against `system` and `t_end`.
    pub fn from_value(value: &Value, system: &HybridSystem, t_end: f64) -> Result<Self, CliError> {
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
                    if !wrt.iter().any(|w| w == name) {
                        return Err(HybridError::UnknownName {
                            kind: "free variable in fit.free".into(),
                            name: name.into(),
                            valid: wrt.to_vec(),
                        }
                        .into());
                    }
                    Ok(name.to_string())
                })
                .collect::<Result<_, CliError>>()?,
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
                if !free.contains(name) {
                    return Err(HybridError::UnknownName {
                        kind: "bounded variable in fit.bounds (bounds apply to fit.free)".into(),
                        name: name.clone(),
                        valid: free.clone(),
                    }
                    .into());
                }
                let key = format!("fit.bounds.{name}");
                let side = |v: &Value| match v {
                    Value::Null => Ok(None),
                    v => finite(v, &key).map(Some),
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
            let time = finite(
                p.get("time").unwrap_or(&Value::Null),
                &format!("{key}.time"),
            )?;
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
                if !states.iter().any(|s| s == state) {
                    return Err(HybridError::UnknownName {
                        kind: format!("state in {key}.state"),
                        name: state.clone(),
                        valid: states.to_vec(),
                    }
                    .into());
                }
                data.push(Datum::new(
                    time,
                    state,
                    finite(v, &format!("{key}.state.{state}"))?,
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

/// A library check of the fit's data or bounds, named by the scenario key
/// `key` (the library says `data`, `bounds of <name>`); the library's
/// other invalid options (the data's times) already name the scenario's
/// keys, since the command checks those first.
fn in_scenario_words(error: HybridError, key: &str) -> HybridError {
    match error {
        HybridError::InvalidOption { name, value, valid }
            if name == "data" || name.starts_with("bounds of ") =>
        {
            HybridError::InvalidOption {
                name: key.to_string(),
                value,
                valid,
            }
        }
        other => other,
    }
}

/// The optimiser's options from the `fit` object's keys, defaults where
/// absent.
fn fit_options(obj: &serde_json::Map<String, Value>) -> Result<FitOptions, CliError> {
    let mut options = FitOptions::default();
    let count = |key: &str| -> Result<Option<u64>, CliError> {
        obj.get(key)
            .map(|v| match v.as_u64() {
                Some(k) if k >= 1 => Ok(k),
                _ => Err(invalid(format!(
                    "'fit.{key}' must be a positive integer, got {v}"
                ))),
            })
            .transpose()
    };
    let tolerance = |key: &str| -> Result<Option<f64>, CliError> {
        obj.get(key)
            .map(|v| match v.as_f64() {
                Some(x) if x.is_finite() && x >= 0.0 => Ok(x),
                _ => Err(invalid(format!(
                    "'fit.{key}' must be a finite number >= 0, got {v}"
                ))),
            })
            .transpose()
    };
    if let Some(k) = count("max_iterations")? {
        options.max_iters = k;
    }
    if let Some(m) = count("memory")? {
        options.memory = usize::try_from(m).unwrap_or(usize::MAX);
    }
    if let Some(g) = tolerance("gradient_tolerance")? {
        options.tolerance_grad = g;
    }
    if let Some(c) = tolerance("loss_tolerance")? {
        options.tolerance_cost = c;
    }
    Ok(options)
}

/// `impact-adjoint fit`: the JSON document of the fit the scenario in
/// `text` describes (`source` names it in error messages).
///
/// ```
/// let scenario = r#"{"model": "ball1d", "t_end": 0.4, "params": {"g": 9},
///   "fit": {"free": ["param.g"], "data": [
///     {"time": 0.1, "state": {"h": 0.95095}}, {"time": 0.3, "state": {"h": 0.55855}}]}}"#;
/// let out = ia_cli::fit(scenario, "example").unwrap();
/// let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
/// // h(t) = 1 - g t^2 / 2 before the impact: the data were made with g = 9.81.
/// assert!((doc["values"]["param.g"].as_f64().unwrap() - 9.81).abs() < 1e-6);
/// ```
pub fn fit(text: &str, source: &str) -> Result<String, CliError> {
    let scenario = Scenario::parse(text, source)?;
    let spec = scenario.fit.as_ref().ok_or_else(|| {
        invalid(format!(
            "the scenario in {source} has no 'fit': the fit command needs {{\"free\": [...], \"data\": [...]}}"
        ))
    })?;
    let problem = scenario.problem()?;
    let free: Vec<&str> = spec.free.iter().map(String::as_str).collect();
    let mut fit = FitProblem::new(problem, &free, spec.data.clone())
        .map_err(|e| in_scenario_words(e, "fit.data"))?;
    for (name, low, high) in &spec.bounds {
        fit = fit
            .with_bounds(name, *low, *high)
            .map_err(|e| in_scenario_words(e, &format!("fit.bounds.{name}")))?;
    }
    let result = fit.fit(&spec.options).map_err(CliError::Fit)?;
    let named = |values: &[f64]| {
        Json::Obj(
            result
                .names
                .iter()
                .zip(values)
                .map(|(n, &v)| (n.clone(), Json::Num(v)))
                .collect(),
        )
    };
    Ok(Json::Obj(vec![
        ("model".into(), Json::Str(scenario.spec.name.clone())),
        ("values".into(), named(&result.values)),
        ("standard_errors".into(), named(&result.standard_errors)),
        ("loss".into(), Json::Num(result.loss)),
        ("gradient_norm".into(), Json::Num(result.gradient_norm)),
        ("iterations".into(), Json::Int(result.iterations)),
        ("data".into(), Json::Int(spec.data.len() as u64)),
        ("termination".into(), Json::Str(result.termination)),
    ])
    .to_pretty_string())
}
