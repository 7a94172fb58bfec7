//! What the exact solver runs on: each mode's flow coefficients and each
//! transition's threshold, and the closed-form delay to a crossing.

use ia_core::{Direction, HybridError, HybridSystem, Threshold};

/// The coefficients and thresholds the exact solver runs on.
pub(super) struct Structure {
    /// `a` of each mode, `n` each.
    pub(super) a: Vec<Vec<f64>>,
    /// `b` of each mode.
    pub(super) b: Vec<Vec<f64>>,
    /// The threshold of each transition.
    pub(super) thresholds: Vec<Threshold>,
    /// Per mode and state entry, the transitions out of that mode whose
    /// guard reads that entry.
    pub(super) guards_on: Vec<Vec<Vec<usize>>>,
    /// Per mode, the transitions out of it.
    pub(super) leaving: Vec<Vec<usize>>,
}

impl Structure {
    pub(super) fn of(system: &HybridSystem, params: &[f64]) -> Result<Self, HybridError> {
        let n = system.state_dim();
        let modes = system.modes();
        let mut a = Vec::with_capacity(modes.len());
        let mut b = Vec::with_capacity(modes.len());
        for mode in modes {
            let (mut am, mut bm) = (vec![0.0; n], vec![0.0; n]);
            if !mode.flow.decoupled_linear(params, &mut am, &mut bm) {
                return Err(HybridError::Unsupported(format!(
                    "the exact solver needs a decoupled linear flow (x_i' = a_i x_i + b_i, Flow::decoupled_linear) in every mode; the flow of mode '{}' declares none: use a Runge-Kutta solver (dopri5, dop853)",
                    mode.name
                )));
            }
            if let Some(v) = am.iter().chain(&bm).find(|v| !v.is_finite()) {
                return Err(HybridError::invalid_num(
                    format!("coefficient of the flow of mode '{}'", mode.name),
                    *v,
                    "must be finite (the parameters give a flow x_i' = a_i x_i + b_i)",
                ));
            }
            a.push(am);
            b.push(bm);
        }
        let mut thresholds = Vec::with_capacity(system.transitions().len());
        let mut guards_on = vec![vec![Vec::new(); n]; modes.len()];
        let mut leaving = vec![Vec::new(); modes.len()];
        for (k, tr) in system.transitions().iter().enumerate() {
            let threshold = tr.guard.threshold(params).ok_or_else(|| {
                HybridError::Unsupported(format!(
                    "the exact solver needs every guard to be a threshold on one state entry (x_k - level, Guard::threshold); the guard of '{}' declares none: use a Runge-Kutta solver (dopri5, dop853)",
                    tr.name
                ))
            })?;
            if threshold.state >= n || !threshold.level.is_finite() {
                return Err(HybridError::invalid_num(
                    format!("threshold of the guard of '{}'", tr.name),
                    threshold.level,
                    format!(
                        "must be a finite level on a state entry below {n} (entry {})",
                        threshold.state
                    ),
                ));
            }
            guards_on[tr.from][threshold.state].push(k);
            leaving[tr.from].push(k);
            thresholds.push(threshold);
        }
        Ok(Self {
            a,
            b,
            thresholds,
            guards_on,
            leaving,
        })
    }
}

/// The delay after which `x' = a x + b` from `x` reaches `level` with a
/// rate that `direction` fires on, if it does.
pub(super) fn crossing_delay(
    x: f64,
    a: f64,
    b: f64,
    level: f64,
    direction: Direction,
) -> Option<f64> {
    let rate = a * x + b;
    let delay = if a == 0.0 {
        (level - x) / b
    } else {
        (a * (level - x) / rate).ln_1p() / a
    };
    let rate_there = a * level + b;
    let fires = match direction {
        Direction::Rising => rate_there > 0.0,
        Direction::Falling => rate_there < 0.0,
        Direction::Either => rate_there != 0.0,
    };
    (delay > 0.0 && delay.is_finite() && fires).then_some(delay)
}

/// Whether a guard of `direction` whose value was `before` (on the side it
/// crosses from, or on zero) is at or beyond zero in its direction at
/// `after`.
pub(super) fn pushed_over(direction: Direction, before: f64, after: f64) -> bool {
    match direction {
        Direction::Rising => after >= 0.0,
        Direction::Falling => after <= 0.0,
        Direction::Either => before != 0.0 && (after == 0.0 || (after > 0.0) != (before > 0.0)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reference: the closed form `x(s) = x_inf + (x - x_inf) e^{a s}`,
    /// `x_inf = -b / a`, solved for `x(s) = c` by hand.
    #[test]
    fn crossing_delays_match_the_closed_form() {
        // Relaxing up towards 1.2 from 0: reaches 1 after tau ln(1.2/0.2).
        let (a, b) = (-100.0, 120.0);
        let s = crossing_delay(0.0, a, b, 1.0, Direction::Rising).unwrap();
        assert!((s - 0.01 * (1.2f64 / 0.2).ln()).abs() < 1e-15);
        // Never reaches a level beyond its equilibrium, nor one behind it.
        assert_eq!(crossing_delay(0.0, a, b, 1.3, Direction::Rising), None);
        assert_eq!(crossing_delay(0.5, a, b, 0.2, Direction::Rising), None);
        // Falling through a level, and the direction check.
        let s = crossing_delay(1.0, -2.0, 0.0, 0.5, Direction::Falling).unwrap();
        assert!((s - 0.5 * 2f64.ln()).abs() < 1e-15);
        assert_eq!(crossing_delay(1.0, -2.0, 0.0, 0.5, Direction::Rising), None);
        // Growing away from its equilibrium, and a constant rate.
        let s = crossing_delay(1.0, 1.0, 0.0, std::f64::consts::E, Direction::Either).unwrap();
        assert!((s - 1.0).abs() < 1e-15);
        assert_eq!(
            crossing_delay(1.0, 0.0, 2.0, 3.0, Direction::Rising),
            Some(1.0)
        );
        assert_eq!(crossing_delay(1.0, 0.0, 0.0, 3.0, Direction::Rising), None);
    }
}
