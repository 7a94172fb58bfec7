//! Physical validity of parameter values, per model.
//!
//! A run accepts any finite parameter; some values make no physical sense
//! for a ready model (a negative mass, a restitution above one) and only
//! produce a confusing failure later, or a silently meaningless answer.
//! Each model declares its rules ([`Model::param_rules`](crate::Model::param_rules),
//! [`Model::relations`](crate::Model::relations)) and
//! [`Model::check_params`](crate::Model::check_params) checks values against
//! them, naming the parameter, its value and what is valid; the command line
//! and the Python package call it for every scenario. Parameters not listed
//! accept any finite value.
//!
//! The engines do not apply these rules themselves: a derivative is still
//! defined on the boundary (a finite difference of an elastic impact at
//! `e = 1` steps past it), so a Rust caller checks a ready model's values
//! once, where they come in:
//!
//! ```
//! use ia_models::{by_name, Model};
//!
//! let ball = by_name("ball1d").unwrap();
//! assert!(ball.check_params(&[9.81, 0.8, 0.0]).is_ok());
//! let err = ball.check_params(&[9.81, 1.5, 0.0]).unwrap_err();
//! assert!(err.to_string().contains("'e'"), "{err}");
//! ```
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
//! | `cuba-lif` | `tau_mem > 0`, `tau_syn > 0`, every `t_in<i>` inside the run, `(0, t_end)` |
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
    /// A time inside the run, in the open interval `(0, t_end)`: greater
    /// than 0 here, below the run's end where the run is known
    /// ([`Model::check_run`](crate::Model::check_run)).
    InRun,
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
            Rule::InRun => value > 0.0,
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
            Rule::InRun => "must lie inside the run, in (0, t_end)",
        }
    }
}

/// The rule of one parameter of a model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParamRule {
    /// The parameter's name, or a stem ending in `*` (`m*`) that covers
    /// every parameter of that stem followed by a number (`m0`, `m1`, ...),
    /// for the sized models.
    pub param: &'static str,
    /// What its value must satisfy.
    pub rule: Rule,
    /// What the parameter is, in words (printed in the error).
    pub what: &'static str,
}

impl ParamRule {
    /// Whether this rule applies to the parameter named `param`.
    pub fn covers(&self, param: &str) -> bool {
        match self.param.strip_suffix('*') {
            Some(stem) => param
                .strip_prefix(stem)
                .is_some_and(|rest| !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_digit())),
            None => self.param == param,
        }
    }

    /// Whether this is the restitution of a ball that gravity presses onto a
    /// floor (`e` in `(0, 1]`), whose bounces accumulate.
    pub fn is_floor_restitution(&self) -> bool {
        *self == FLOOR_RESTITUTION
    }
}

/// A rule between two parameters of a model, read `lower < upper`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Relation {
    /// The parameter that must be the smaller.
    pub lower: &'static str,
    /// The parameter that must be the larger.
    pub upper: &'static str,
    /// Why, in words (printed in the error).
    pub why: &'static str,
}

pub(crate) const GRAVITY: ParamRule = ParamRule {
    param: "g",
    rule: Rule::Positive,
    what: "gravitational acceleration",
};
pub(crate) const RESTITUTION: ParamRule = ParamRule {
    param: "e",
    rule: Rule::UnitInterval,
    what: "coefficient of restitution",
};
/// The restitution of a ball that gravity presses onto a floor.
pub(crate) const FLOOR_RESTITUTION: ParamRule = ParamRule {
    param: "e",
    rule: Rule::PositiveUnit,
    what: "coefficient of restitution",
};
pub(crate) const RESET_BELOW_THRESHOLD: Relation = Relation {
    lower: "Vr",
    upper: "Vth",
    why: "the reset potential must lie below the threshold, or the neuron is reset onto its threshold and spikes again at once",
};

/// Why `e = 0` is refused where [`Rule::PositiveUnit`] applies.
const RESTING_CONTACT: &str = "e = 0 stops the ball dead at its first impact and gravity then holds it on the floor, a resting contact this bouncing model cannot represent; use a small positive e (like 0.1) and end the run (t_end) before the bounces accumulate";

/// Checks the parameter values `values` (named `names`) of the model named
/// `model` against its `rules` and `relations`, and, for a run ending at
/// `t_end` (when given), the [`Rule::InRun`] times against it; the first
/// violation is an [`HybridError::InvalidOption`] that names the parameter,
/// its value and what is valid (a wrong count of values is an
/// [`HybridError::DimensionMismatch`]).
/// [`Model::check_params`](crate::Model::check_params) and
/// [`Model::check_run`](crate::Model::check_run) call it with a model's own
/// rules.
pub fn check_params(
    model: &str,
    rules: &[ParamRule],
    relations: &[Relation],
    names: &[String],
    values: &[f64],
    t_end: Option<f64>,
) -> Result<(), HybridError> {
    if names.len() != values.len() {
        return Err(HybridError::DimensionMismatch {
            what: "parameters".to_string(),
            expected: names.len(),
            found: values.len(),
        });
    }
    let value_of = |param: &str| {
        names
            .iter()
            .position(|n| n == param)
            .and_then(|i| values.get(i).copied())
    };
    let covered = rules.iter().flat_map(|rule| {
        names
            .iter()
            .zip(values)
            .filter(move |(name, _)| rule.covers(name))
            .map(move |(name, &value)| (name.as_str(), value, rule))
    });
    for (param, value, rule) in covered {
        if let (Rule::InRun, Some(t_end)) = (rule.rule, t_end) {
            if !(value > 0.0 && value < t_end) {
                return Err(HybridError::invalid_num(
                    format!("parameter '{param}'"),
                    value,
                    format!(
                        "must lie inside the run, in (0, t_end) = (0, {}), for model '{model}' ({})",
                        short_num(t_end),
                        rule.what
                    ),
                ));
            }
            continue;
        }
        if !rule.rule.holds(value) {
            let mut valid = format!(
                "{} for model '{model}' ({})",
                rule.rule.describe(),
                rule.what
            );
            if rule.is_floor_restitution() && value == 0.0 {
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
    for relation in relations {
        let (Some(low), Some(high)) = (value_of(relation.lower), value_of(relation.upper)) else {
            continue;
        };
        if low >= high {
            return Err(HybridError::invalid_num(
                format!("parameter '{}'", relation.lower),
                low,
                format!(
                    "must be less than parameter '{}' = {} for model '{model}': {}",
                    relation.upper,
                    short_num(high),
                    relation.why
                ),
            ));
        }
    }
    Ok(())
}

/// Whether a failed run ended the way accumulating events end (bounces or
/// steps too small to resolve), the failures a model's hint may explain.
pub(crate) fn events_accumulated(error: &HybridError) -> bool {
    matches!(
        error.kind(),
        "zeno" | "grazing" | "event_location" | "step_size_underflow"
    )
}

/// The hint of a ball on a floor whose bounces accumulate (each rebound `e`
/// times the last) until the run fails: when the ball comes to rest.
/// `e_index` is the restitution's parameter index.
pub(crate) fn accumulating_bounces(
    e_index: usize,
    params: &[f64],
    error: &HybridError,
) -> Option<String> {
    let e = params.get(e_index).copied()?;
    let events = error.trajectory().map_or(&[][..], |t| &t.events[..]);
    let last = events.last()?;
    if !events_accumulated(error) || e >= 1.0 {
        return None;
    }
    let rest = match events.len() {
        n if n >= 2 => last.time + (last.time - events[n - 2].time) * e / (1.0 - e),
        _ => last.time,
    };
    Some(format!(
        "the bounces accumulate: with restitution e = {} each rebound is e times the one before, so the ball comes to rest near t = {} ({} so far), a resting contact this bouncing model cannot represent; end the run before then (a shorter t_end) or raise e",
        short_num(e),
        short_num(rest),
        match events.len() {
            1 => "1 impact".to_string(),
            n => format!("{n} impacts"),
        }
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{by_name, catalog, sized};

    #[test]
    fn every_rule_names_a_parameter_of_its_model() {
        for model in catalog() {
            let spec = model.spec();
            for rule in model.param_rules() {
                assert!(
                    spec.param_names().iter().any(|p| rule.covers(p)),
                    "{} has no parameter {}",
                    model.name(),
                    rule.param
                );
            }
            for relation in model.relations() {
                for p in [relation.lower, relation.upper] {
                    assert!(
                        spec.param_names().iter().any(|n| n == p),
                        "{}: {p}",
                        model.name()
                    );
                }
            }
        }
    }

    #[test]
    fn a_stem_rule_covers_every_numbered_parameter_and_nothing_else() {
        let stem = ParamRule {
            param: "m*",
            rule: Rule::Positive,
            what: "mass",
        };
        let plain = ParamRule { param: "m", ..stem };
        assert!(stem.covers("m0") && stem.covers("m12"));
        assert!(!stem.covers("m") && !stem.covers("mu") && !plain.covers("m0"));
        let chain = sized("particle-chain", Some(crate::Size::Count(2))).unwrap();
        let err = chain
            .check_params(&[1.0, 0.02, 0.9, 1.0, -2.0])
            .unwrap_err();
        assert!(err.to_string().contains("'m1'"), "{err}");
        let msg = chain
            .check_params(&[1.0, 0.02, 0.0, 1.0, 1.0])
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains("stay in contact") && !msg.contains("floor"),
            "{msg}"
        );
    }

    #[test]
    fn every_model_default_satisfies_its_rules() {
        for model in catalog() {
            let spec = model.spec();
            model
                .check_params(&spec.default_params())
                .unwrap_or_else(|e| panic!("{}: {e}", model.name()));
        }
    }

    #[test]
    fn a_wrong_count_is_a_dimension_mismatch() {
        let err = by_name("ball1d")
            .unwrap()
            .check_params(&[9.81])
            .unwrap_err();
        assert_eq!(err.kind(), "dimension_mismatch", "{err}");
    }

    /// Issue 10: `lif` with `Vr = Vth` ran silently; the reset would land on
    /// the threshold.
    #[test]
    fn lif_reset_at_threshold_is_refused() {
        let lif = by_name("lif").unwrap();
        let msg = lif
            .check_params(&[1.3, 0.01, 1.0, 1.0])
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains("'Vr' = 1") && msg.contains("'Vth' = 1"),
            "{msg}"
        );
        lif.check_params(&[1.3, 0.01, 1.0, 0.999]).unwrap();
    }

    /// An inverted hysteresis band ended in a Zeno error that did not say
    /// which parameters were wrong.
    #[test]
    fn thermostat_switch_on_below_switch_off() {
        let thermostat = by_name("thermostat").unwrap();
        for tlo in [23.0, 30.0] {
            let msg = thermostat
                .check_params(&[0.2, 5.0, 10.0, tlo, 23.0])
                .unwrap_err()
                .to_string();
            assert!(msg.contains("'Tlo'") && msg.contains("'Thi' = 23"), "{msg}");
        }
        thermostat
            .check_params(&[0.2, 5.0, 10.0, 22.9, 23.0])
            .unwrap();
    }

    /// Issue 10: `rimless-wheel` with `alpha = 0` ran silently.
    #[test]
    fn rimless_wheel_needs_an_acute_half_angle() {
        let wheel = by_name("rimless-wheel").unwrap();
        for alpha in [0.0, -0.1, std::f64::consts::FRAC_PI_2] {
            let msg = wheel
                .check_params(&[9.81, 1.0, alpha, 0.08])
                .unwrap_err()
                .to_string();
            assert!(
                msg.contains("'alpha'") && msg.contains("(0, pi/2)"),
                "{msg}"
            );
        }
    }

    /// Issue 29: `cuba-lif`'s time constants are positive (`tau_syn = 0` is
    /// an error) and its input times lie inside the run.
    #[test]
    fn cuba_lif_time_constants_and_input_times() {
        let net = by_name("cuba-lif").unwrap();
        let p = net.spec().default_params();
        for (i, bad, name) in [
            (0, -20.0, "tau_mem"),
            (1, 0.0, "tau_syn"),
            (1, -1.0, "tau_syn"),
        ] {
            let mut q = p.clone();
            q[i] = bad;
            let msg = net.check_params(&q).unwrap_err().to_string();
            assert!(
                msg.contains(&format!("'{name}'")) && msg.contains("greater than 0"),
                "{msg}"
            );
        }
        net.check_run(&p, 50.0).unwrap();
        for (bad, t_end) in [(0.0, 50.0), (-1.0, 50.0), (50.0, 50.0), (70.0, 50.0)] {
            let mut q = p.clone();
            q[4] = bad;
            let msg = net.check_run(&q, t_end).unwrap_err().to_string();
            assert!(
                msg.contains("parameter 't_in1'") && msg.contains("(0, t_end) = (0, 50)"),
                "{msg}"
            );
        }
        // Without a run, only the lower end is known.
        let mut q = p.clone();
        q[4] = 70.0;
        net.check_params(&q).unwrap();
    }

    /// Issue 10: `e = 0` (and `-0`) on a floor is refused with its reason.
    #[test]
    fn zero_restitution_on_a_floor_is_refused_with_a_reason() {
        let ball = by_name("ball1d").unwrap();
        for e in [0.0, -0.0] {
            let msg = ball.check_params(&[9.81, e, 0.0]).unwrap_err().to_string();
            assert!(
                msg.contains("'e'") && msg.contains("resting contact") && msg.contains("(0, 1]"),
                "{msg}"
            );
        }
    }

    #[test]
    fn violation_names_parameter_and_rule() {
        let msg = by_name("ball1d")
            .unwrap()
            .check_params(&[9.81, 1.5, 0.0])
            .unwrap_err()
            .to_string();
        assert!(msg.contains("'e'") && msg.contains("(0, 1]"), "{msg}");
        let msg = by_name("two-ball")
            .unwrap()
            .check_params(&[0.1, 1.0, 1.0, 1.5])
            .unwrap_err()
            .to_string();
        assert!(msg.contains("'e'") && msg.contains("[0, 1]"), "{msg}");
    }
}
