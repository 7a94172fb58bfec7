//! Physical validity of parameter values, per model.
//!
//! The library accepts any finite parameter; some values make no physical
//! sense (a negative mass, a restitution above one) and only produce a
//! confusing failure later, or a silently meaningless answer. The command
//! line rejects them up front with this table, taken from the models'
//! documentation in `ia-models`. Parameters not listed accept any finite
//! value.
//!
//! | model | rules |
//! |---|---|
//! | `ball1d` | `g > 0`, `e` in `[0, 1]` |
//! | `ball2d-flat` | `g > 0`, `e` in `[0, 1]`, `mu` in `[0, 1]` |
//! | `ball2d-bowl` | `g > 0`, `e` in `[0, 1]` |
//! | `two-ball` | `r >= 0`, `m1 > 0`, `m2 > 0`, `e` in `[0, 1]` |
//! | `lif` | `tau > 0` |
//! | `lif-network` | `tau > 0` |
//! | `thermostat` | `a > 0` |
//! | `impact-pendulum` | `g > 0`, `l > 0`, `e` in `[0, 1]` |
//! | `rimless-wheel` | `g > 0`, `l > 0` |
//! | `slip-hopper` | `m > 0`, `k > 0`, `l0 > 0`, `g > 0` |

use ia_core::HybridError;

/// What a parameter's value must satisfy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    /// Strictly greater than zero.
    Positive,
    /// Zero or greater.
    NonNegative,
    /// In the closed interval `[0, 1]`.
    UnitInterval,
}

impl Rule {
    /// Whether `value` satisfies the rule.
    pub fn holds(self, value: f64) -> bool {
        match self {
            Rule::Positive => value > 0.0,
            Rule::NonNegative => value >= 0.0,
            Rule::UnitInterval => (0.0..=1.0).contains(&value),
        }
    }

    /// The rule in words, as printed in error messages.
    pub fn describe(self) -> &'static str {
        match self {
            Rule::Positive => "must be greater than 0",
            Rule::NonNegative => "must be 0 or greater",
            Rule::UnitInterval => "must lie in [0, 1]",
        }
    }
}

/// A parameter rule: `(parameter, rule, what the parameter is)`.
pub type ParamRule = (&'static str, Rule, &'static str);

const GRAVITY: ParamRule = ("g", Rule::Positive, "gravitational acceleration");
const RESTITUTION: ParamRule = ("e", Rule::UnitInterval, "coefficient of restitution");

/// The rules of every catalogue model, by model name.
pub const PARAM_RULES: &[(&str, &[ParamRule])] = &[
    ("ball1d", &[GRAVITY, RESTITUTION]),
    (
        "ball2d-flat",
        &[
            GRAVITY,
            RESTITUTION,
            (
                "mu",
                Rule::UnitInterval,
                "fraction of tangential velocity kept at impact",
            ),
        ],
    ),
    ("ball2d-bowl", &[GRAVITY, RESTITUTION]),
    (
        "two-ball",
        &[
            ("r", Rule::NonNegative, "ball radius"),
            ("m1", Rule::Positive, "mass"),
            ("m2", Rule::Positive, "mass"),
            RESTITUTION,
        ],
    ),
    ("lif", &[("tau", Rule::Positive, "membrane time constant")]),
    (
        "lif-network",
        &[("tau", Rule::Positive, "membrane time constant")],
    ),
    ("thermostat", &[("a", Rule::Positive, "cooling rate")]),
    (
        "impact-pendulum",
        &[
            GRAVITY,
            ("l", Rule::Positive, "pendulum length"),
            RESTITUTION,
        ],
    ),
    (
        "rimless-wheel",
        &[GRAVITY, ("l", Rule::Positive, "spoke length")],
    ),
    (
        "slip-hopper",
        &[
            ("m", Rule::Positive, "mass"),
            ("k", Rule::Positive, "leg stiffness"),
            ("l0", Rule::Positive, "leg rest length"),
            GRAVITY,
        ],
    ),
];

/// The rules of the model named `model` (empty for a model without any).
pub fn rules_for(model: &str) -> &'static [ParamRule] {
    PARAM_RULES
        .iter()
        .find(|(name, _)| *name == model)
        .map(|(_, rules)| *rules)
        .unwrap_or(&[])
}

/// Checks the parameter values `values` (named `names`) of `model` against
/// its rules; the first violation is an [`HybridError::InvalidOption`] that
/// names the parameter, its value and what is valid.
pub fn check_params(model: &str, names: &[String], values: &[f64]) -> Result<(), HybridError> {
    for &(param, rule, what) in rules_for(model) {
        let Some(i) = names.iter().position(|n| n == param) else {
            continue;
        };
        let Some(&value) = values.get(i) else {
            continue;
        };
        if !rule.holds(value) {
            return Err(HybridError::invalid(
                format!("parameter '{param}'"),
                value,
                format!("{} for model '{model}' ({what})", rule.describe()),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rule_names_a_parameter_of_its_model() {
        for (model, rules) in PARAM_RULES {
            let spec = ia_models::by_name(model)
                .unwrap_or_else(|e| panic!("{e}"))
                .spec();
            for (param, _, _) in *rules {
                assert!(
                    spec.param_names().iter().any(|p| p == param),
                    "{model} has no parameter {param}"
                );
            }
        }
    }

    #[test]
    fn every_model_default_satisfies_its_rules() {
        for model in ia_models::catalog() {
            let spec = model.spec();
            check_params(model.name(), &spec.param_names(), &spec.default_params())
                .unwrap_or_else(|e| panic!("{}: {e}", model.name()));
        }
    }

    #[test]
    fn violation_names_parameter_and_rule() {
        let names = vec!["g".to_string(), "e".to_string()];
        let err = check_params("ball1d", &names, &[9.81, 1.5]).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("'e'") && msg.contains("[0, 1]"), "{msg}");
    }
}
