//! `two-ball`: two balls on a line colliding.
//!
//! One mode, `flight`, and one transition, `impact` (flight -> flight).
//!
//! Two balls of radius `r` move freely on a line (no gravity along it):
//!
//! ```text
//! x1' = v1,   x2' = v2,   v1' = 0,   v2' = 0
//! ```
//!
//! Guard: the gap `x2 - x1 - 2 r`, firing when it falls through zero (ball 1
//! is to the left of ball 2).
//!
//! Reset: positions unchanged; the impact conserves momentum and has
//! coefficient of restitution `e` (relative velocity after = `-e` times
//! relative velocity before):
//!
//! ```text
//! v1+ = ((m1 - e m2) v1 + (1 + e) m2 v2) / (m1 + m2)
//! v2+ = ((m2 - e m1) v2 + (1 + e) m1 v1) / (m1 + m2)
//! ```
//!
//! With `e = 1` kinetic energy is conserved too.
//!
//! | state | unit | default | | parameter | unit | default |
//! |---|---|---|---|---|---|---|
//! | `x1` | m   | 0    | | `r`  | m  | 0.1 |
//! | `x2` | m   | 0.52 | | `m1` | kg | 1   |
//! | `v1` | m/s | 1    | | `m2` | kg | 1   |
//! | `v2` | m/s | 0    | | `e`  | 1  | 1   |
//!
//! Default run: `t_end = 1` s. The balls meet at `t = 0.32` s, where ball 1
//! stops and ball 2 moves off at 1 m/s; that single impact is the only event
//! (the balls then separate for good).
//!
//! Partials by [`ia_core::Autodiff`].

use crate::rules::{ParamRule, Rule, RESTITUTION};
use crate::table::Table;
use ia_core::{Autodiff, Direction, FlowFn, FromMode, GuardFn, ResetFn, Scalar, ToMode};

const TABLE: Table = Table {
    name: "two-ball",
    description: "Two balls of radius r on a line: x1' = v1, x2' = v2, v1' = v2' = 0; impact \
                  when the gap x2 - x1 - 2r falls through 0, then momentum-conserving velocity \
                  exchange with restitution e.",
    states: &[
        ("x1", 0.0, "m"),
        ("x2", 0.52, "m"),
        ("v1", 1.0, "m/s"),
        ("v2", 0.0, "m/s"),
    ],
    params: &[
        ("r", 0.1, "m"),
        ("m1", 1.0, "kg"),
        ("m2", 1.0, "kg"),
        ("e", 1.0, "1"),
    ],
    modes: &["flight"],
    initial_mode: "flight",
    t_end: 1.0,
    transitions: &[("impact", "flight", "flight", Direction::Falling)],
    rules: &[
        ParamRule {
            param: "r",
            rule: Rule::NonNegative,
            what: "ball radius",
        },
        ParamRule {
            param: "m1",
            rule: Rule::Positive,
            what: "mass",
        },
        ParamRule {
            param: "m2",
            rule: Rule::Positive,
            what: "mass",
        },
        RESTITUTION,
    ],
    relations: &[],
};

/// The `two-ball` model; see the [module documentation](self).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TwoBall;

catalogued_model!(TwoBall, |builder| builder
    .mode("flight", Autodiff(Drift))
    .transition(
        "impact",
        FromMode("flight"),
        ToMode("flight"),
        Autodiff(Gap),
        Autodiff(Collision),
    ));

/// Free motion: `x1' = v1, x2' = v2, v1' = v2' = 0`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Drift;

impl FlowFn for Drift {
    fn rate<S: Scalar>(&self, _t: S, x: &[S], _p: &[S], dxdt: &mut [S]) {
        dxdt[0] = x[2];
        dxdt[1] = x[3];
        dxdt[2] = S::from(0.0);
        dxdt[3] = S::from(0.0);
    }
}

/// The gap between the balls: `x2 - x1 - 2 r`, falling.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Gap;

impl GuardFn for Gap {
    fn direction(&self) -> Direction {
        Direction::Falling
    }

    fn value<S: Scalar>(&self, _t: S, x: &[S], p: &[S]) -> S {
        x[1] - x[0] - p[0] * 2.0
    }
}

/// The collision: momentum-conserving, restitution `e`, positions unchanged.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Collision;

impl ResetFn for Collision {
    fn apply<S: Scalar>(&self, _t: S, x: &[S], p: &[S], x_after: &mut [S]) {
        let (m1, m2, e) = (p[1], p[2], p[3]);
        let (v1, v2) = (x[2], x[3]);
        let total = m1 + m2;
        x_after[0] = x[0];
        x_after[1] = x[1];
        x_after[2] = ((m1 - e * m2) * v1 + (e + 1.0) * m2 * v2) / total;
        x_after[3] = ((m2 - e * m1) * v2 + (e + 1.0) * m1 * v1) / total;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case(1.0, 1.0, 1.0, 1.0, 0.0)]
    #[case(2.0, 0.5, 1.0, 1.5, -0.5)]
    #[case(0.3, 4.0, 1.0, -0.2, -2.0)]
    #[case(1.0, 3.0, 0.6, 2.0, 1.0)]
    #[case(1.0, 1.0, 0.0, 1.0, 0.0)]
    fn collision_conserves_momentum(
        #[case] m1: f64,
        #[case] m2: f64,
        #[case] e: f64,
        #[case] v1: f64,
        #[case] v2: f64,
    ) {
        let (x, p) = ([0.0, 0.2, v1, v2], [0.1, m1, m2, e]);
        let mut after = [0.0; 4];
        Collision.apply(0.0, &x, &p, &mut after);
        let (w1, w2) = (after[2], after[3]);
        assert!((m1 * w1 + m2 * w2 - (m1 * v1 + m2 * v2)).abs() < 1e-12);
        // Newton's law of restitution.
        assert!((w2 - w1 + e * (v2 - v1)).abs() < 1e-12);
        let energy = |a: f64, b: f64| 0.5 * (m1 * a * a + m2 * b * b);
        if e == 1.0 {
            assert!((energy(w1, w2) - energy(v1, v2)).abs() < 1e-12);
        } else {
            assert!(energy(w1, w2) < energy(v1, v2));
        }
        assert_eq!(&after[..2], &x[..2]);
    }

    #[test]
    fn equal_masses_elastic_exchange_velocities() {
        let mut after = [0.0; 4];
        Collision.apply(
            0.0,
            &[0.0, 0.2, 1.0, 0.0],
            &[0.1, 1.0, 1.0, 1.0],
            &mut after,
        );
        assert_eq!(after, [0.0, 0.2, 0.0, 1.0]);
    }
}
