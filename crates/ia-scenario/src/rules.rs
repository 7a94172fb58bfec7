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
//! | `ball1d` | `g > 0`, `e` in `(0, 1]` |
//! | `ball2d-flat` | `g > 0`, `e` in `(0, 1]`, `mu` in `[0, 1]` |
//! | `ball2d-bowl` | `g > 0`, `e` in `(0, 1]` |
//! | `two-ball` | `r >= 0`, `m1 > 0`, `m2 > 0`, `e` in `[0, 1]` |
//! | `lif` | `tau > 0`, `Vr < Vth` |
//! | `lif-network` | `tau > 0`, `Vr < Vth` |
//! | `thermostat` | `a > 0`, `Tlo < Thi` |
//! | `impact-pendulum` | `g > 0`, `l > 0`, `e` in `[0, 1]` |
//! | `rimless-wheel` | `g > 0`, `l > 0`, `alpha` in `(0, pi/2)` |
//! | `slip-hopper` | `m > 0`, `k > 0`, `l0 > 0`, `g > 0` |
//! | `particle-chain` | `L > 0`, `r >= 0`, `e` in `(0, 1]`, every `m<i> > 0` |
//!
//! The balls on a floor (`ball1d`, `ball2d-flat`, `ball2d-bowl`) refuse
//! `e = 0` (and `-0`): gravity holds the ball on the floor after a
//! perfectly plastic impact, a resting contact these bouncing models cannot
//! represent (the guard would sit at zero for the rest of the run). Use a
//! small positive `e` and end the run (`t_end`) before the bounces
//! accumulate. `two-ball` and `impact-pendulum` accept `e = 0`: after a
//! plastic impact the bodies separate again under their flow.
//!
//! `lif` needs the reset `Vr` below the threshold `Vth` (at `Vr = Vth` the
//! neuron is reset onto its threshold and would spike again at once);
//! `rimless-wheel` needs the spoke half-angle `alpha` in `(0, pi/2)` (at
//! `alpha = 0` the next spoke is the stance spoke, and the step repeats at
//! once).

use ia_core::{short_num, HybridError};

/// What a parameter's value must satisfy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    /// Strictly greater than zero.
    Positive,
    /// Zero or greater.
    NonNegative,
    /// In the closed interval `[0, 1]`.
    UnitInterval,
    /// In `(0, 1]`: a restitution that must not stop the body dead.
    PositiveUnit,
    /// An angle in the open interval `(0, pi/2)`.
    AcuteAngle,
}

impl Rule {
    /// Whether `value` satisfies the rule.
    pub fn holds(self, value: f64) -> bool {
        match self {
            Rule::Positive => value > 0.0,
            Rule::NonNegative => value >= 0.0,
            Rule::UnitInterval => (0.0..=1.0).contains(&value),
            Rule::PositiveUnit => value > 0.0 && value <= 1.0,
            Rule::AcuteAngle => value > 0.0 && value < std::f64::consts::FRAC_PI_2,
        }
    }

    /// The rule in words, as printed in error messages.
    pub fn describe(self) -> &'static str {
        match self {
            Rule::Positive => "must be greater than 0",
            Rule::NonNegative => "must be 0 or greater",
            Rule::UnitInterval => "must lie in [0, 1]",
            Rule::PositiveUnit => "must lie in (0, 1]",
            Rule::AcuteAngle => "must lie in (0, pi/2), pi/2 = 1.5707963267948966",
        }
    }
}

/// A parameter rule: `(parameter, rule, what the parameter is)`.
pub type ParamRule = (&'static str, Rule, &'static str);

const GRAVITY: ParamRule = ("g", Rule::Positive, "gravitational acceleration");
const RESTITUTION: ParamRule = ("e", Rule::UnitInterval, "coefficient of restitution");
/// The restitution of a ball that gravity presses onto a floor.
const FLOOR_RESTITUTION: ParamRule = ("e", Rule::PositiveUnit, "coefficient of restitution");

/// Why `e = 0` is refused where [`Rule::PositiveUnit`] applies.
const RESTING_CONTACT: &str = "e = 0 stops the ball dead at its first impact and gravity then holds it on the floor, a resting contact this bouncing model cannot represent; use a small positive e (like 0.1) and end the run (t_end) before the bounces accumulate";

/// A rule between two parameters: `(lower, upper, why)`, read
/// `lower < upper`.
pub type Relation = (&'static str, &'static str, &'static str);

/// The rules between parameters of every catalogue model, by model name.
pub const RELATION_RULES: &[(&str, &[Relation])] = &[
    ("lif", &[RESET_BELOW_THRESHOLD]),
    ("lif-network", &[RESET_BELOW_THRESHOLD]),
    (
        "thermostat",
        &[(
            "Tlo",
            "Thi",
            "the heater switches on below Tlo and off above Thi; with Tlo >= Thi each switch is due at once after the other and the run ends in a Zeno error",
        )],
    ),
];

const RESET_BELOW_THRESHOLD: Relation = (
    "Vr",
    "Vth",
    "the reset potential must lie below the threshold, or the neuron is reset onto its threshold and spikes again at once",
);

/// The rules between parameters of the model named `model`.
pub fn relations_for(model: &str) -> &'static [Relation] {
    RELATION_RULES
        .iter()
        .find(|(name, _)| *name == model)
        .map(|(_, rules)| *rules)
        .unwrap_or(&[])
}

/// The rules of every catalogue model, by model name.
pub const PARAM_RULES: &[(&str, &[ParamRule])] = &[
    ("ball1d", &[GRAVITY, FLOOR_RESTITUTION]),
    (
        "ball2d-flat",
        &[
            GRAVITY,
            FLOOR_RESTITUTION,
            (
                "mu",
                Rule::UnitInterval,
                "fraction of tangential velocity kept at impact",
            ),
        ],
    ),
    ("ball2d-bowl", &[GRAVITY, FLOOR_RESTITUTION]),
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
        &[
            GRAVITY,
            ("l", Rule::Positive, "spoke length"),
            ("alpha", Rule::AcuteAngle, "half the angle between spokes"),
        ],
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
    (
        "particle-chain",
        &[
            ("L", Rule::Positive, "distance between the walls"),
            ("r", Rule::NonNegative, "ball radius"),
            (
                "e",
                Rule::PositiveUnit,
                "coefficient of restitution; at e = 0 two balls that meet stay in contact, which this model does not represent",
            ),
            ("m*", Rule::Positive, "ball mass"),
        ],
    ),
];

/// The parameters a rule's name covers: the name itself, or, for a name
/// ending in `*` (`m*`), every parameter of that stem followed by a number
/// (`m0`, `m1`, ...), for the sized models.
fn covers(rule: &str, param: &str) -> bool {
    match rule.strip_suffix('*') {
        Some(stem) => param
            .strip_prefix(stem)
            .is_some_and(|rest| !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_digit())),
        None => rule == param,
    }
}

/// The rules of the model named `model` (empty for a model without any).
pub fn rules_for(model: &str) -> &'static [ParamRule] {
    PARAM_RULES
        .iter()
        .find(|(name, _)| *name == model)
        .map(|(_, rules)| *rules)
        .unwrap_or(&[])
}

/// Checks the parameter values `values` (named `names`) of `model` against
/// its rules and relations; the first violation is an
/// [`HybridError::InvalidOption`] that names the parameter, its value and
/// what is valid.
pub fn check_params(model: &str, names: &[String], values: &[f64]) -> Result<(), HybridError> {
    let value_of = |param: &str| {
        names
            .iter()
            .position(|n| n == param)
            .and_then(|i| values.get(i).copied())
    };
    let covered = rules_for(model).iter().flat_map(|&(pattern, rule, what)| {
        names
            .iter()
            .zip(values)
            .filter(move |(name, _)| covers(pattern, name))
            .map(move |(name, &value)| (name.as_str(), value, rule, what))
    });
    for (param, value, rule, what) in covered {
        if !rule.holds(value) {
            let mut valid = format!("{} for model '{model}' ({what})", rule.describe());
            if (param, rule, what) == FLOOR_RESTITUTION && value == 0.0 {
                valid.push_str(": ");
                valid.push_str(RESTING_CONTACT);
            }
            return Err(HybridError::invalid_num(
                format!("parameter '{param}'"),
                value,
                valid,
            ));
        }
    }
    for &(lower, upper, why) in relations_for(model) {
        let (Some(low), Some(high)) = (value_of(lower), value_of(upper)) else {
            continue;
        };
        if low >= high {
            return Err(HybridError::invalid_num(
                format!("parameter '{lower}'"),
                low,
                format!(
                    "must be less than parameter '{upper}' = {} for model '{model}': {why}",
                    short_num(high)
                ),
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
                    spec.param_names().iter().any(|p| covers(param, p)),
                    "{model} has no parameter {param}"
                );
            }
        }
    }

    #[test]
    fn a_stem_rule_covers_every_numbered_parameter_and_nothing_else() {
        assert!(covers("m*", "m0") && covers("m*", "m12"));
        assert!(!covers("m*", "m") && !covers("m*", "mu") && !covers("m", "m0"));
        let names: Vec<String> = ["L", "r", "e", "m0", "m1"].map(String::from).to_vec();
        let err = check_params("particle-chain", &names, &[1.0, 0.02, 0.9, 1.0, -2.0]).unwrap_err();
        assert!(err.to_string().contains("'m1'"), "{err}");
        let err = check_params("particle-chain", &names, &[1.0, 0.02, 0.0, 1.0, 1.0]).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("stay in contact") && !msg.contains("floor"),
            "{msg}"
        );
    }

    #[test]
    fn every_model_default_satisfies_its_rules() {
        for model in ia_models::catalog() {
            let spec = model.spec();
            check_params(model.name(), &spec.param_names(), &spec.default_params())
                .unwrap_or_else(|e| panic!("{}: {e}", model.name()));
        }
    }

    /// Every relation names two parameters of its model.
    #[test]
    fn every_relation_names_parameters_of_its_model() {
        for (model, relations) in RELATION_RULES {
            let spec = ia_models::by_name(model)
                .unwrap_or_else(|e| panic!("{e}"))
                .spec();
            for (lower, upper, _) in *relations {
                for p in [lower, upper] {
                    assert!(spec.param_names().iter().any(|n| n == p), "{model}: {p}");
                }
            }
        }
    }

    /// Issue 10: `lif` with `Vr = Vth` ran silently; the reset would land on
    /// the threshold.
    #[test]
    fn lif_reset_at_threshold_is_refused() {
        let names: Vec<String> = ["I", "tau", "Vth", "Vr"].map(String::from).to_vec();
        let msg = check_params("lif", &names, &[1.3, 0.01, 1.0, 1.0])
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains("'Vr' = 1") && msg.contains("'Vth' = 1"),
            "{msg}"
        );
        check_params("lif", &names, &[1.3, 0.01, 1.0, 0.999]).unwrap();
    }

    /// An inverted hysteresis band ended in a Zeno error that did not say
    /// which parameters were wrong.
    #[test]
    fn thermostat_switch_on_below_switch_off() {
        let names: Vec<String> = ["a", "b", "Tout", "Tlo", "Thi"].map(String::from).to_vec();
        for tlo in [23.0, 30.0] {
            let msg = check_params("thermostat", &names, &[0.2, 5.0, 10.0, tlo, 23.0])
                .unwrap_err()
                .to_string();
            assert!(msg.contains("'Tlo'") && msg.contains("'Thi' = 23"), "{msg}");
        }
        check_params("thermostat", &names, &[0.2, 5.0, 10.0, 22.9, 23.0]).unwrap();
    }

    /// Issue 10: `rimless-wheel` with `alpha = 0` ran silently.
    #[test]
    fn rimless_wheel_needs_an_acute_half_angle() {
        let names: Vec<String> = ["g", "l", "alpha", "gamma"].map(String::from).to_vec();
        for alpha in [0.0, -0.1, std::f64::consts::FRAC_PI_2] {
            let msg = check_params("rimless-wheel", &names, &[9.81, 1.0, alpha, 0.08])
                .unwrap_err()
                .to_string();
            assert!(
                msg.contains("'alpha'") && msg.contains("(0, pi/2)"),
                "{msg}"
            );
        }
    }

    /// Issue 10: `e = 0` (and `-0`) on a floor is refused with its reason.
    #[test]
    fn zero_restitution_on_a_floor_is_refused_with_a_reason() {
        let names: Vec<String> = ["g", "e", "floor"].map(String::from).to_vec();
        for e in [0.0, -0.0] {
            let msg = check_params("ball1d", &names, &[9.81, e, 0.0])
                .unwrap_err()
                .to_string();
            assert!(
                msg.contains("'e'") && msg.contains("resting contact") && msg.contains("(0, 1]"),
                "{msg}"
            );
        }
    }

    #[test]
    fn violation_names_parameter_and_rule() {
        let names = vec!["g".to_string(), "e".to_string()];
        let err = check_params("ball1d", &names, &[9.81, 1.5]).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("'e'") && msg.contains("(0, 1]"), "{msg}");
        let err = check_params("two-ball", &names, &[9.81, 1.5]).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("'e'") && msg.contains("[0, 1]"), "{msg}");
    }
}
